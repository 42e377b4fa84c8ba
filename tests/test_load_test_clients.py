"""benchmarks/load_test.py's browser-like client (benchmarks/browser_client.py) against the app: it must get what
gradio_client gets for the same clicks, name a failed event, and run the classroom loop without errors."""
from __future__ import annotations

from collections import defaultdict

import httpx
import pytest

from benchmarks import load_test
from benchmarks.browser_client import Api, EventFailed, Page
from tests.conftest import run_async


@pytest.fixture(scope="module")
def served(offline_app):
    """The worker's offline app (tests/conftest.py)."""
    return offline_app


@pytest.fixture(scope="module")
def url(served):
    return served.url


def browser(url: str, clicks: list[tuple[str, tuple, dict]]) -> list:
    """Each click's answer (or the EventFailed) from one browser-like page."""
    async def run():
        async with httpx.AsyncClient(timeout=120) as http:
            page, answers = Page(http, await Api.fetch(http, url)), []
            for api_name, args, kwargs in clicks:
                try:
                    answers.append(await page.predict(api_name, *args, **kwargs))
                except EventFailed as failed:
                    answers.append(failed)
            return answers
    return run_async(run())


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_a_page_gets_what_gradio_client_gets_for_the_same_clicks(url):
    from gradio_client import Client

    ner = load_test.CALLS["ner_tag"]
    analogy = load_test.CALLS["embeddings_analogy"]
    step, tagged, solved = browser(url, [("ner_tag_download", (ner["model_id"],), {}), ("ner_tag", (), ner),
                                         ("embeddings_analogy", (), analogy)])
    client = Client(url, verbose=False)
    expected_tags = client.predict(**ner, api_name="/ner_tag")
    expected_analogy = client.predict(**analogy, api_name="/embeddings_analogy")
    assert step == []  # the download step has no outputs (its progress shows on the model step's)
    # gradio_client leaves out the outputs of components hidden from the API; every value it gets, the page gets,
    # in the same order: the card (offline), the token table with Wolfgang, the hidden panels
    shown = iter(tagged)
    assert all(any(value == page_value for page_value in shown) for value in expected_tags)
    assert len(tagged) > len(expected_tags) and "Wolfgang" in str(tagged)
    assert list(solved) == list(expected_analogy)  # the figure's JSON and the sentence
    assert "≈ queen" in solved[1]  # king − man + woman (GloVe 6B 50d)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_a_failed_event_is_named_not_hidden(url):
    [failed] = browser(url, [("embeddings_analogy", (), dict(a="king", b="man", c="woman", topn="many"))])
    assert isinstance(failed, EventFailed) and str(failed)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_the_classroom_loop_runs_with_browser_pages(url):
    latencies, errors = defaultdict(list), defaultdict(list)
    names = ["ngram_counts", "ner_tag", "mlm_fill"]
    elapsed = run_async(load_test.browser_users(url, 3, names, 4.0, latencies, errors, own_share=0.5))
    assert not errors and elapsed >= 4.0
    assert set(latencies) == set(names) and all(0 < t < 60 for times in latencies.values() for t in times)


def test_batching_is_off_unless_asked_and_then_bounded(monkeypatch):
    """One request per call unless PLM_MAX_BATCH asks for more (load_test --max-batch N sets it); never more than
    the event's own bound."""
    from demo.server import result_cache

    monkeypatch.delenv("PLM_MAX_BATCH", raising=False)
    assert result_cache.max_batch(16) == 1
    monkeypatch.setenv("PLM_MAX_BATCH", "8")
    assert result_cache.max_batch(16) == 8 and result_cache.max_batch(2) == 2
    monkeypatch.setenv("PLM_MAX_BATCH", "eight")
    assert result_cache.max_batch(16) == 1


def test_both_clients_make_each_learner_s_clicks_in_one_seeded_order():
    from itertools import islice

    names = ["ngram_counts", "ner_tag", "mlm_fill"]
    first = list(islice(load_test.clicks(4, names, 0.5), 9))
    assert first == list(islice(load_test.clicks(4, names, 0.5), 9))  # the same in every run and client
    assert [name for name, _ in first] == (names[1:] + names[:1]) * 3  # round-robin from learner 4 % 3
    own = [kwargs for name, kwargs in first if name == "ner_tag" and kwargs != load_test.CALLS["ner_tag"]]
    assert 0 < len(own) < 3 and all(kwargs["text"].startswith(load_test.CALLS["ner_tag"]["text"]) for kwargs in own)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_click_cost_reads_the_server_s_cpu_around_each_series(served):
    """benchmarks/click_cost.py: /proc's CPU time read as os.times reads it, and one series per endpoint and kind,
    each the server's CPU for clicks that reached the handler (own text: computed, tens of ms each)."""
    import os

    from benchmarks import click_cost

    mine = os.times()
    assert abs(click_cost.cpu_seconds(os.getpid()) - (mine.user + mine.system)) < 0.05
    costs = run_async(click_cost.measure(served.url, served.process.pid, ["attention_multihead"], clicks=4))
    assert set(costs) == {("attention_multihead", False), ("attention_multihead", True)}
    assert costs[("attention_multihead", True)] > 0 and costs[("attention_multihead", False)] >= 0


@pytest.mark.slow  # the app over HTTP; the fast lane keeps one such test per module
def test_the_queue_floor_has_the_classroom_s_events_and_answers_them(url):
    """benchmarks/queue_floor.py (load_test --floor, issue #38 §3): the app's events by name, taking the parameters
    the load test sets (each one the app's too), with the same download steps, each answered by an empty handler
    that saw every argument."""
    from benchmarks import queue_floor

    async def both_apis(floor_url: str):
        async with httpx.AsyncClient(timeout=120) as http:
            apis = await Api.fetch(http, url), await Api.fetch(http, floor_url)
            answer = await Page(http, apis[1]).predict("qa_answer", **load_test.CALLS["qa_answer"])
            return apis, answer

    floor = queue_floor.build()
    floor.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True)
    try:
        (ours, empty), answer = run_async(both_apis(floor.local_url))
    finally:
        floor.close()
    for name in load_test.CALLS:
        assert empty.parameters[name] == list(load_test.CALLS[name]), name
        assert set(load_test.CALLS[name]) <= set(ours.parameters[name]), name
        assert (f"{name}_download" in empty.events) == (name in load_test.DOWNLOAD_FIRST) == \
            (f"{name}_download" in ours.events), name
    assert answer == [f"{len(load_test.CALLS['qa_answer'])} inputs"]
