"""demo.server.handlers.gpu_handler: spaces.GPU on the handlers that run a model, and nothing at all off a Space."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from core.loading import jobs
from demo.kit import widgets
from demo.server import handlers as common
from demo.recurrent import lstm
from tests import app_events
from tests.live_app import ROOT


@pytest.fixture(scope="module")
def handlers():
    """name -> wrapping layers of every handler the built app's events call (tests/app_events.py)."""
    return app_events.handlers()


def carries_gpu(layers) -> bool:
    return any(getattr(layer, "runs_model", False) for layer in layers)


def test_every_handler_that_builds_a_model_carries_the_gpu_decorator(handlers):
    """The list is derived, not kept by hand: every handler an event of the built app calls (and every view's
    handler, which its open and preset events call) whose code reaches one of our torch modules, or the registry's
    core.loading.registry.build, without passing through another gpu_handler. Each must go through gpu_handler."""
    runs_model = {name: path for name, layers in handlers.items() if (path := app_events.builds_a_model(layers[-1]))}
    missing = {name: " -> ".join(path) for name, path in runs_model.items() if not carries_gpu(handlers[name])}
    print(f"\n{len(handlers)} handlers, {len(runs_model)} build a model: {sorted(runs_model)}")
    assert not missing, missing
    # the derivation sees what it must: the BERT tabs' batched buttons, a Why view, a trainer
    assert {"demo.mlm.handlers.fill_batch", "demo.tasks.ner.tag_batch", "demo.tasks.qa.answer_batch",
            "demo.why.encoders.stream_ner", "demo.tasks.classify.train"} <= set(runs_model)
    assert len(runs_model) >= 20


def test_handlers_that_build_no_model_ask_for_no_gpu(handlers):
    """A GPU call costs the learner's ZeroGPU quota and a wait: the n-gram counts, the BIO → IOBES conversion, the
    Transformer's parameter count from a config, the page's language ask for none."""
    for name in ("demo.ngram.ngram.show_counts", "demo.tasks.ner.convert_tags", "demo.transformer.transformer.base_params",
                 "demo.tasks.qa.show_layout", "app.page_language"):
        assert not app_events.builds_a_model(handlers[name][-1]), name
        assert not carries_gpu(handlers[name]), name


def test_trainers_ask_for_their_budget_and_the_rest_for_the_default(handlers):
    """A trainer (an event on the "train" concurrency group) asks ZeroGPU for its work budget plus its setup; every
    other model handler keeps ZeroGPU's default of 60 s, which its work fits on a GPU."""
    blocks = app_events.built_app()
    trainers = {app_events.layers(fn.fn)[-1].__qualname__ for fn in blocks.fns.values()
                if fn.fn is not None and fn.concurrency_id == "train"}
    assert {"train", "train_models"} <= trainers, trainers
    for block_fn in blocks.fns.values():
        if block_fn.fn is None or block_fn.concurrency_id != "train":
            continue
        durations = [layer.gpu_duration for layer in app_events.layers(block_fn.fn) if getattr(layer, "runs_model", 0)]
        assert durations and durations[0] >= jobs.TRAIN_SECONDS, (block_fn.api_name, durations)
    assert common.TRAINER_GPU_SECONDS == jobs.TRAIN_SECONDS + 20
    others = [layer.gpu_duration for layers in handlers.values() for layer in layers
              if getattr(layer, "runs_model", False) and layer.gpu_duration is not None]
    assert all(seconds <= 140 for seconds in others), others  # the NNLM: its own 120 s budget plus setup


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
import demo.server.handlers as common
from core.loading import resolve
from core.text.i18n import current_language, using_language

def answer(x):
    return {"lang": current_language(), "downloads": resolve._downloads_here.get(), "x": 2 * x}

wrapped = common.gpu_handler(answer)
with using_language("zh"):
    called = wrapped(21)
print(json.dumps({"wrapped": wrapped is not answer, "called": called, "runs_model": wrapped.runs_model,
                  "spaces_imported": "spaces" in sys.modules}))
"""


def run_snippet(**env_changes) -> dict:
    env = dict(os.environ, SPACE_ID="someone/plm-explorer", **env_changes)
    out = subprocess.run([sys.executable, "-c", SNIPPET], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a fresh interpreter importing the app (issue 49: out of the fast lane)
def test_on_a_space_without_zerogpu_the_handler_is_the_function_itself():
    result = run_snippet(PYTHONPATH=str(ROOT), SPACES_ZERO_GPU="")
    assert result == {"wrapped": False, "called": {"lang": "zh", "downloads": True, "x": 42}, "runs_model": True,
                      "spaces_imported": False}


@pytest.mark.slow  # a fresh interpreter importing the app (issue 49: out of the fast lane)
def test_on_zerogpu_the_call_keeps_the_language_and_never_downloads(tmp_path):
    """The stand-in spaces.GPU runs the call in another thread with none of the caller's context variables, as the
    real one runs it in another process: the language still arrives (it is passed along), and inside the call a
    checkpoint that is not here is never downloaded (the app fetched it before)."""
    result = run_snippet(PYTHONPATH=f"{ROOT / 'tests' / 'space_stand_in'}:{ROOT}", SPACES_ZERO_GPU="true",
                         PLM_TEST_GPU_LOG=str(tmp_path / "gpu.jsonl"))
    assert result == {"wrapped": True, "called": {"lang": "zh", "downloads": False, "x": 42}, "runs_model": True,
                      "spaces_imported": True}
    calls = [json.loads(line) for line in (tmp_path / "gpu.jsonl").read_text().splitlines()]
    assert [(c["kind"], c["fn"].rsplit(".", 1)[-1]) for c in calls] == [("start", "answer"), ("end", "answer")]


def test_on_zerogpu_a_preset_fetches_its_checkpoint_before_the_gpu_call(monkeypatch, server, tiny_checkpoint):
    """A preset's handler runs in a GPU call that never downloads; the view fetched the checkpoint its picker is set
    to first (demo.kit.presets.View.run). Off ZeroGPU the handler downloads it itself, as before."""
    import gradio as gr

    from core.loading import resolve
    from demo.kit import presets

    server.add_repo("someone/tiny-mlm", tiny_checkpoint("BertForMaskedLM"))

    def handler(model_id, text):  # what the GPU call sees: no downloads (demo.server.handlers.gpu_handler)
        with resolve.downloads_elsewhere():
            return resolve.resolve(model_id, "model", task="mlm").source

    with gr.Blocks():
        picker, text, out = widgets.model_picker("mlm"), gr.Textbox(), gr.Markdown()
        view = presets.View("test", "fetch", [picker, text], [out], handler,
                            [presets.Preset("tiny", "tiny", ("someone/tiny-mlm", "a [MASK]"))])
    assert picker.checkpoint_task == "mlm"
    with pytest.raises(resolve.ModelUnavailableError) as not_here:  # off ZeroGPU: no fetch before the handler
        view.run("tiny")
    assert not_here.value.key == "registry.not_downloaded"
    monkeypatch.setattr(presets, "on_zero_gpu", lambda: True)
    assert view.run("tiny")[out] == "Hub download"
    assert server.count("model.safetensors") == 1


def test_in_process_a_gpu_call_carries_the_language_and_never_downloads(monkeypatch):
    """handlers._on_gpu in pytest's own process, through a stand-in for spaces.GPU that runs each call in a thread
    with an empty context (ZeroGPU runs it in another process): the stand-in alone loses the caller's language, the
    wrapper passes it along, for a function and for a generator's steps; inside, downloads are off."""
    import contextvars
    import inspect
    from concurrent.futures import ThreadPoolExecutor

    from core.loading import resolve
    from core.text.i18n import current_language, using_language

    def stand_in(fn, duration=None):  # not tests/space_stand_in: importing it hooks every torch forward in this process
        def run(*args, **kwargs):
            call = (lambda: list(fn(*args, **kwargs))) if inspect.isgeneratorfunction(fn) else (
                lambda: fn(*args, **kwargs))
            with ThreadPoolExecutor(1) as pool:
                return pool.submit(contextvars.Context().run, call).result()
        return run

    def answer(x):
        return current_language(), resolve._downloads_here.get(), 2 * x

    def steps(n):
        for i in range(n):
            yield current_language(), resolve._downloads_here.get(), i

    monkeypatch.setattr(common, "_SPACE_GPU", stand_in)
    with using_language("zh"):
        assert stand_in(answer)(21) == ("en", True, 42)  # what the wrapper must make up for
        assert common._on_gpu(answer, None)(21) == ("zh", False, 42)
        assert list(common._on_gpu(steps, 120)(2)) == [("zh", False, 0), ("zh", False, 1)]


def test_an_unexpected_failure_is_named_by_its_kind_and_nothing_else():
    from core.text.i18n import text

    error = common._to_gradio_error(KeyError("/srv/secret/path.safetensors"))
    assert error.message == text("errors.internal", name="KeyError") and "/srv" not in error.message
