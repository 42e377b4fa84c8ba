"""demo.common.gpu_handler: spaces.GPU on the handlers that run a model, and nothing at all off a Space."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from demo import (attention, classify, common, embeddings, gpt, lstm, lstm_generate, mlm, ner, ngram, overview, qa,
                  transformer)
from tests.live_app import ROOT
from demo import classify_finetune

MODEL_HANDLERS = [attention.explore, attention.show_head, embeddings.train, lstm.inspect_text,
                  lstm.measure_gradients, lstm_generate.generate_both, lstm.compare_contexts, lstm.train_models, mlm.fill,
                  mlm.compare, mlm.inputs, mlm.nsp, mlm.bank, ner.tag_text, qa.answer_question, transformer.block,
                  transformer.block_layer, transformer.base_preset, overview.score_text, overview.run_ladder,
                  classify.classify_text, classify.train, classify.predict, gpt.next_token, gpt.generate,
                  gpt.attention, gpt.gpt_vs_bert]
NO_MODEL_HANDLERS = [ngram.show_counts, embeddings.neighbours, embeddings.one_hot_lookup, attention.multi_head,
                     mlm.card, ner.convert_tags, qa.show_layout, transformer.base_params,
                     classify_finetune.show_data]


@pytest.mark.parametrize("handler", MODEL_HANDLERS, ids=lambda h: f"{h.__module__}.{h.__name__}")
def test_every_model_handler_carries_the_gpu_decorator(handler):
    assert getattr(handler, "runs_model", False) is True


@pytest.mark.parametrize("handler", NO_MODEL_HANDLERS, ids=lambda h: f"{h.__module__}.{h.__name__}")
def test_handlers_without_a_model_ask_for_no_gpu(handler):
    assert not getattr(handler, "runs_model", False)


def test_off_a_space_the_decorator_is_the_function_itself():
    assert "SPACE_ID" not in os.environ and common._SPACE_GPU is None

    def double(x):
        return 2 * x

    assert common.gpu_handler(double) is double and double(21) == 42


def test_a_model_handler_still_answers_without_a_gpu():
    """The decorated LSTM handler runs the shipped models on the CPU and returns its figures, no error."""
    note, lstm_fig, rnn_fig, prob_fig, rows = lstm.inspect_text("Call me Ishmael.", "cell state C", 4)
    assert len(rows) == len("Call me Ishmael.") and lstm_fig.data and rnn_fig.data and prob_fig.data


SNIPPET = """
import json, sys
import demo.common as common
import spaces
def double(x):
    return 2 * x
wrapped = common.gpu_handler(double)
print(json.dumps({"decorator_is_spaces_gpu": common._SPACE_GPU is spaces.GPU, "answer": wrapped(21),
                  "runs_model": wrapped.runs_model, "cuda_initialised": "torch" in sys.modules
                  and sys.modules["torch"].cuda.is_initialized()}))
"""


@pytest.mark.slow  # 15-130 s in the fast lane's run (issue 49)
def test_on_a_space_without_zerogpu_spaces_gpu_is_applied_and_harmless():
    pytest.importorskip("spaces")
    env = dict(os.environ, SPACE_ID="someone/plm-explorer", PYTHONPATH=str(ROOT))
    env.pop("SPACES_ZERO_GPU", None)
    out = subprocess.run([sys.executable, "-c", SNIPPET], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"decorator_is_spaces_gpu": True, "answer": 42, "runs_model": True, "cuda_initialised": False}
