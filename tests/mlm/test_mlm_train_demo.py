"""Issue #34 item 6: the BERT masked LM tab's "Retrain the char-BERT" sub-tab (demo/mlm/train.py,
core/mlm/char_retrain.py): before a run, the model it starts from; a run streams its loss curve, ends with the
held-out loss, stops at its budget, and bad input gets a clear message."""
from __future__ import annotations

import contextlib
import math
from collections import Counter

import gradio as gr
import pytest

from core.loading import jobs
from core.text.corpora import load_corpus
from core.recurrent.lstm import split_text
from demo.mlm import train as mlm_train

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TEXT = " ".join(f"the whale {i % 7} swam by the ship and the sea was calm." for i in range(400))  # ~24,000 chars


@pytest.fixture
def upload(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(TEXT, encoding="utf-8")
    return str(path)


def series(figure) -> dict[str, list]:
    return {trace.name: list(trace.y) for trace in figure.data}


def test_before_training_shows_the_untrained_model_near_a_uniform_guess():
    figure, note = mlm_train.before_training(mlm_train.MOBY, 300)
    train_text = split_text(load_corpus("moby_dick"))[0]
    vocab = sum(1 for n in Counter(train_text).values() if n >= 3)
    lines = series(figure)
    assert lines["uniform guess (ln V)"] == [pytest.approx(math.log(vocab))]
    held = lines["held-out loss"][0]
    assert abs(held - math.log(vocab)) < 0.5 and f"{held:.4g}" in note and f"{vocab} characters" in note
    assert mlm_train.before_training(mlm_train.MOBY, 300)[1] == note  # seeded: the same start every time


def test_a_run_streams_its_loss_and_scores_the_held_out_text(upload):
    steps = list(mlm_train.train(mlm_train.UPLOAD, upload, 40))
    assert len(steps) == 3  # steps 20 and 40, then the held-out result
    figure, note = steps[-1]
    lines = series(figure)
    train = lines["training loss"]
    assert len(train) == 40 and train[-1] < train[0] - 0.5  # it learns: from near ln V to well below
    held = lines["held-out loss"]
    assert held[:-1] == [None] * 39 and held[-1] < math.log(len(set(TEXT)))
    assert "After 40 steps" in note and f"{held[-1]:.4g} nats" in note


def test_a_run_stops_at_its_budget(upload, monkeypatch):
    @contextlib.contextmanager
    def short_slot(request, seconds=jobs.TRAIN_SECONDS):
        yield jobs.Budget(0.0)  # spent before the first step ends

    monkeypatch.setattr(mlm_train, "training_run", short_slot)
    figure, note = list(mlm_train.train(mlm_train.UPLOAD, upload, 500))[-1]
    assert len(series(figure)["training loss"]) == 1 and "After 1 steps" in note
    assert "training-time budget (0 s) after 1 of 500 steps" in note


@pytest.mark.parametrize("call, message", [
    (lambda: list(mlm_train.train(mlm_train.UPLOAD, None, 40)), "Choose a .txt file"),
    (lambda: list(mlm_train.train("elsewhere", None, 40)), "Pick Moby-Dick"),
    (lambda: list(mlm_train.train(mlm_train.MOBY, None, 0)), "between 10 and 3000"),
    (lambda: list(mlm_train.train(mlm_train.MOBY, None, float("nan"))), "number"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(gr.Error, match=message):
        call()


def test_a_short_upload_is_refused(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("Call me Ishmael. " * 10, encoding="utf-8")
    with pytest.raises(gr.Error, match="a run needs at least 2,000"):
        list(mlm_train.train(mlm_train.UPLOAD, str(path), 40))
