"""Training fairness (issue 21 §1): a work budget per run, one run per browser session, a bounded concurrency group.

Time is faked (core.loading.jobs reads time.monotonic): nothing here asserts on wall time. benchmarks/training_budget.py
measures real runs at the sliders' maxima."""
from __future__ import annotations

import types

import gradio as gr
import pytest

from core.embeddings import word2vec
from core.loading import jobs, resolve
from tests.conftest import run_async


class FakeClock:
    """time.monotonic for core.loading.jobs: each reading advances by ``tick`` seconds."""

    def __init__(self, tick: float):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


@pytest.fixture
def fast_clock(monkeypatch):
    clock = FakeClock(tick=1.0)
    monkeypatch.setattr(jobs.time, "monotonic", clock)
    return clock


def test_budget_and_one_run_per_owner():
    slots = jobs.TrainingSlots()
    first = slots.start("session-a")
    other = slots.start("session-b")
    assert first.stop_reason() is None
    second = slots.start("session-a")  # the same browser session starts again: the first run is told to stop
    assert first.stop_reason() == jobs.REPLACED and second.stop_reason() is None and other.stop_reason() is None
    slots.finish("session-a", first)  # the old run ending does not unregister the new one
    assert slots.cancel("session-a") and second.stop_reason() == jobs.REPLACED
    slots.finish("session-a", second)
    assert not slots.cancel("session-a") and slots.running() == 1


def test_budget_runs_out(fast_clock):
    budget = jobs.Budget(seconds=5)
    reasons = [budget.stop_reason() for _ in range(8)]
    assert reasons[:4] == [None] * 4 and reasons[-1] == jobs.BUDGET
    assert jobs.Budget(seconds=0.0).stop_reason() == jobs.BUDGET  # the first reading is already past a zero budget
    cancelled = jobs.Budget(seconds=60)
    cancelled.cancel()
    assert cancelled.stop_reason() == jobs.REPLACED and cancelled()  # before its time is up


def test_word2vec_stops_with_its_model_when_told():
    text = "the white whale swam in the deep sea while an old ship sailed on the grey sea " * 300
    config = word2vec.Word2VecConfig(dim=16, window=2, epochs=5, min_count=1, batch_size=64)
    calls = []

    def stop():
        calls.append(1)
        return jobs.BUDGET if len(calls) >= 3 else None

    model = word2vec.train_word2vec(text, config, stop=stop)
    assert model.stopped == jobs.BUDGET and model.loss_steps[-1] == 3 < model.steps_planned
    assert model.vectors.vector("whale").shape == (16,) and len(model.losses) >= 1
    full = word2vec.train_word2vec(text, config)
    assert full.stopped is None and full.loss_steps[-1] > 3


def test_word2vec_at_the_sliders_maxima_stops_within_its_budget_and_says_so(fast_clock, one_torch_thread):
    from demo.embeddings import embeddings

    fig, summary, model = embeddings.train(embeddings.MOBY, None, embeddings.SKIPGRAM, 200, 10, 10, 1,
                                           progress=lambda *a, **k: None)
    assert model.stopped == jobs.BUDGET and 0 < model.loss_steps[-1] < model.steps_planned
    assert "Stopped after" in summary and "is kept" in summary
    assert model.loss_steps[-1] <= jobs.TRAIN_SECONDS + 1  # a fake second per step: it stopped at the first step over


@pytest.mark.slow  # 15-130 s in the fast lane's run (issue 49)
def test_lstm_training_at_the_sliders_maxima_stops_within_its_budget_and_says_so(fast_clock, one_torch_thread):
    from demo.recurrent import lstm as lstm_demo

    with gr.Blocks() as blocks:
        lstm_demo.build()
    sliders = {getattr(c.label, "key", c.label): c for c in blocks.blocks.values() if isinstance(c, gr.Slider)}
    seconds = sliders["lstm.time_limit"]
    assert seconds.maximum <= jobs.TRAIN_SECONDS
    outputs = list(lstm_demo.train_models("char", 5000, seconds.maximum, progress=lambda *a, **k: None))
    figure, badge, models = outputs[-1]
    assert "Stopped after" in badge and models is not None and models.info["lstm"]["steps"] < 5000


def test_a_new_run_from_the_same_session_replaces_the_running_one(one_torch_thread):
    from demo.embeddings import embeddings

    old = jobs.TRAINING.start("browser-1")
    request = types.SimpleNamespace(session_hash="browser-1")
    config = dict(source=embeddings.MOBY, upload=None, architecture=embeddings.CBOW, dim=10, window=1, epochs=1,
                  min_count=50)
    fig, summary, model = embeddings.train(**config, progress=lambda *a, **k: None, request=request)
    assert old.stop_reason() == jobs.REPLACED and model.stopped is None
    # and the replaced run, when it next checks, ends with a message instead of a model
    jobs.TRAINING.start("browser-2")

    def stop_soon():
        return jobs.TRAINING.start("browser-2") and None  # every step starts a newer run: this one is replaced

    with pytest.raises(gr.Error, match="newer run"):
        original = word2vec.train_word2vec

        def replaced(text, cfg, progress=None, stop=None):
            return original(text, cfg, progress, stop=lambda: (stop_soon(), stop())[1])

        word2vec.train_word2vec = replaced
        try:
            embeddings.train(**config, progress=lambda *a, **k: None,
                             request=types.SimpleNamespace(session_hash="browser-2"))
        finally:
            word2vec.train_word2vec = original


def test_trainers_share_one_bounded_concurrency_group():
    import app

    resolve.set_offline(True)
    blocks = app.build_app()
    # word2vec, the NNLM, the RNN & LSTM trainer and the char-BERT's retraining (issue #34); fine-tuning MiniLM
    # bounds its runs in core instead (finetune_train.RUNS), so a second click can cancel the first at once.
    names = ("embeddings_train", "embeddings_nnlm", "lstm_train", "mlm_train")
    trainers = {fn.api_name: fn for fn in blocks.fns.values() if fn.api_name in names}
    assert sorted(trainers) == sorted(names)
    assert {(fn.concurrency_id, fn.concurrency_limit) for fn in trainers.values()} == {("train", 1)}


def test_a_new_training_run_replaces_the_running_one_and_is_refused_while_an_earlier_one_waits():
    """The admission's training rule (demo/server/serving.py), through the queue's own push as admit wraps it: a
    training join stops the page's running run; while the page's earlier run waits in the training queue, a new one
    is refused (in the request's language) and nothing is stopped; other pages and other events are not affected."""
    from starlette.requests import Request as StarletteRequest

    from demo.server import serving

    waiting = []  # the training queue's waiting events
    queue = types.SimpleNamespace(event_queue_per_concurrency_id={"train": types.SimpleNamespace(queue=waiting)},
                                  active_jobs=[])

    async def push(body, request, username=None):
        if body.fn_index == 0:
            waiting.append(types.SimpleNamespace(session_hash=body.session_hash, request=request))
        return True, None, None

    queue.push = push
    blocks = types.SimpleNamespace(_queue=queue, fns={0: types.SimpleNamespace(concurrency_id="train"),
                                                      1: types.SimpleNamespace(concurrency_id=None)})
    serving.admit(blocks)

    def join(session, fn_index=0, lang="en"):
        scope = {"type": "http", "method": "POST", "path": "/", "query_string": b"", "client": ("10.0.0.1", 1),
                 "headers": [(b"accept-language", b"zh-CN" if lang == "zh" else b"en-US")]}
        body = types.SimpleNamespace(session_hash=session, fn_index=fn_index)
        return run_async(blocks._queue.push(body, StarletteRequest(scope)))

    running = jobs.TRAINING.start("s1")
    assert join("s1")[0] is True and running.stop_reason() == jobs.REPLACED  # the slot is freed at once
    assert [e.session_hash for e in waiting] == ["s1"]
    other = jobs.TRAINING.start("s1")  # say its earlier run started meanwhile, while a newer one waits
    refused = join("s1")
    assert refused[0] is False and refused[2] == "error" and "still waiting for its turn" in refused[1]
    assert other.stop_reason() is None and len(waiting) == 1  # nothing stopped, nothing queued
    assert join("s1", lang="zh")[1].startswith("你在本页面发起的上一次训练还在排队")
    assert join("s2")[0] is True and [e.session_hash for e in waiting] == ["s1", "s2"]  # another page
    assert join("s1", fn_index=1)[0] is True  # not a training event
    waiting.clear()
    assert join("s1")[0] is True and other.stop_reason() == jobs.REPLACED  # its turn came: now it is replaced
    jobs.TRAINING.finish("s1", other)
