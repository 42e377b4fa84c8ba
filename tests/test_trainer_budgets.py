"""Every trainer stops within its budget plus 5 s, at its sliders' maxima, and says so (issue 33 §5).

The trainers: word2vec and the RNN/LSTM pair (tests/loading/test_training_jobs.py), the NNLM, fine-tuning MiniLM
(classify_train), the char-BERT retrain (mlm_train) and the tokenizer lab's BPE learner. ELMo does not train in the
app (scripts/train_elmo.py trained the shipped weights). Time is faked where a trainer checks a clock each step, as
tests/loading/test_training_jobs.py does: each reading of the clock advances it, so a run "takes" its whole budget in a few
real seconds and nothing asserts on wall time. The BPE learner has no clock: its bound is its input cap (core/transformer/bpe.py
takes at most OURS_MAX_BYTES, measured at 2 s of CPU in README's Issue 36 section; larger corpora go to
`tokenizers`, tests/transformer/test_tokenizer_lab.py).
"""
from __future__ import annotations

import re

import pytest

from core.tasks import finetune, finetune_train
from core.loading import jobs
from core.text import limits
from core.embeddings import nnlm
from core.text.corpora import DEFAULT_LABELLED

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SLACK = 5.0  # seconds past its budget a run may end (the step under way and the held-out pass)


class FakeClock:
    """A time function whose every reading advances by ``tick`` seconds."""

    def __init__(self, tick: float):
        self.now, self.tick = 1000.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def test_the_nnlm_at_its_sliders_maxima_stops_within_its_120_s_and_says_so(monkeypatch):
    from demo.embeddings import nnlm as embeddings_nnlm

    monkeypatch.setattr(nnlm.time, "perf_counter", FakeClock(tick=10.0))  # ~12 steps: the held-out pass is foreseen
    monkeypatch.setattr(nnlm, "_TRAINED", {})
    summary = embeddings_nnlm.train_and_predict("moby_dick", limits.NNLM_MAX_CONTEXT, 128, 256, 5000,
                                                limits.NNLM_MAX_SECONDS, "the white", progress=lambda *a, **k: None)[0]
    steps, seconds = re.search(r"([\d,]+) steps in ([\d.]+) s", summary).groups()
    assert 0 < int(steps.replace(",", "")) < 5000  # the budget, not the step count, ended it
    assert float(seconds) <= limits.NNLM_MAX_SECONDS + SLACK  # the whole run: preparation and held-out pass too


@pytest.mark.slow  # 15-130 s in the fast lane's run (issue 49)
def test_fine_tuning_at_its_sliders_maxima_stops_within_its_budget_and_says_so(monkeypatch):
    clock = FakeClock(tick=3.0)  # one reading per batch: the 110 s budget is spent after ~37 batches
    monkeypatch.setattr(finetune_train.time, "perf_counter", clock)
    examples = [e for e in finetune.load_bundled(DEFAULT_LABELLED) if e.group < 40]
    updates = list(finetune_train.train(finetune.split(examples, 0), head_steps=limits.MAX_HEAD_STEPS,
                                        unfrozen=limits.MAX_LAYERS, epochs=limits.MAX_EPOCHS, with_baselines=False))
    outcome = updates[-1]
    assert isinstance(outcome, finetune_train.Outcome)
    assert outcome.epochs_done < limits.MAX_EPOCHS
    assert outcome.seconds <= finetune_train.BUDGET_SECONDS + SLACK
    assert any(f"Stopped at the {finetune_train.BUDGET_SECONDS:.0f} s budget" in note for note in outcome.notes)


def test_the_char_bert_retrain_at_its_slider_maximum_stops_within_its_budget_and_says_so(monkeypatch):
    from demo.mlm import train as mlm_train

    monkeypatch.setattr(jobs.time, "monotonic", FakeClock(tick=2.0))  # a reading per step: ~50 steps of 3,000
    figure, note = list(mlm_train.train(mlm_train.MOBY, None, limits.MAX_CHAR_BERT_STEPS,
                                        progress=lambda *a, **k: None))[-1]
    done = int(re.search(r"after (\d+) of 3000 steps", note).group(1))
    assert 0 < done < limits.MAX_CHAR_BERT_STEPS
    assert f"training-time budget ({jobs.TRAIN_SECONDS:.0f} s)" in note
    seconds = int(re.search(r"\*\*After \d+ steps\*\* \((\d+) s\)", note).group(1))
    assert seconds <= jobs.TRAIN_SECONDS + SLACK
