"""Admission per client address (issue 33 §3), over real HTTP against `python app.py --offline --trusted-proxy
127.0.0.1`.

Addresses are real: on Linux all of 127.0.0.0/8 is loopback, so a client bound to 127.0.0.3 is a second machine as
far as the server can tell, and one bound to 127.0.0.1 (the trusted proxy) may speak for others in X-Forwarded-For.
The flood is hundreds of raw `POST /gradio_api/call/embeddings_nnlm` joins, each with its own session (a script that
invents sessions is not stopped by the per-session cap), on the trainers' queue (one at a time, 5 s budget each), so
what the flood got admitted is still there when the burst ends.
"""
from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from demo.server.serving import MAX_EVENTS_PER_ADDRESS
from tests.live_app import app_env, running_app
from tests.conftest import run_async

FLOOD = 300
NGRAM = ["toy_zh", "", None, "words", False, 2, False, "mle", 1, "判断 单词 的 词性", "判断 单词 的 磁性"]


@pytest.fixture(scope="module")
def served():
    env = app_env(HF_HUB_OFFLINE="1", PLM_MAX_EVENTS_PER_ADDRESS=None, PLM_TRUSTED_PROXY=None)
    with running_app("--offline", "--device", "cpu", "--trusted-proxy", "127.0.0.1", env=env) as app:
        yield app


def nnlm_body(i: int) -> dict:
    # a distinct step count per request, so no two share a trained model (core/nnlm.trained caches per setting);
    # 2,010-5,000 steps of the widest model: each run ends at its 5 s budget, not before
    return {"data": ["moby_dick", 4, 128, 256, 5000 - 10 * i, 5, "the white"]}


def flood(url: str, local_address: str, forwarded_for=None) -> tuple[list[httpx.Response], int]:
    """FLOOD joins at once from one client address (forwarded_for(i): the X-Forwarded-For header it sends); the
    answers, and how many admitted runs may have ended while the burst lasted (one at a time, 5 s each, plus the
    one running when it began): on a loaded machine the burst itself can take tens of seconds."""
    started = time.monotonic()
    answers = run_async(_flood(url, local_address, forwarded_for))
    return answers, 1 + int((time.monotonic() - started) // 5)


async def _flood(url: str, local_address: str, forwarded_for=None) -> list[httpx.Response]:
    transport = httpx.AsyncHTTPTransport(local_address=local_address)
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(transport=transport, limits=limits, timeout=120) as client:
        async def join(i: int) -> httpx.Response:
            headers = {"X-Forwarded-For": forwarded_for(i)} if forwarded_for else {}
            return await client.post(url + "gradio_api/call/embeddings_nnlm", json=nnlm_body(i), headers=headers)

        return await asyncio.gather(*(join(i) for i in range(FLOOD)))


def call(url: str, api: str, data: list, local_address: str = "127.0.0.1", headers: dict | None = None):
    """One API call the way a learner's script makes it: join, then read the result stream; (status, last event)."""
    with httpx.Client(transport=httpx.HTTPTransport(local_address=local_address), timeout=300) as client:
        joined = client.post(url + f"gradio_api/call/{api}", json={"data": data}, headers=headers or {})
        if joined.status_code != 200:
            return joined.status_code, joined.json()
        stream = client.get(url + f"gradio_api/call/{api}/{joined.json()['event_id']}", headers=headers or {})
        events = [line for line in stream.text.splitlines() if line.startswith(("event:", "data:"))]
        return events[-2].split(": ", 1)[1], json.loads(events[-1].split(": ", 1)[1])


def test_one_address_flooding_the_queue_is_refused_while_other_learners_are_answered(served):
    # A script on 127.0.0.3, each join claiming another address: the header is not believed (127.0.0.3 is no proxy).
    answers, ended = flood(served.url, "127.0.0.3", forwarded_for=lambda i: f"10.1.{i // 250}.{i % 250 + 1}")
    statuses = [answer.status_code for answer in answers]
    admitted, refused = statuses.count(200), statuses.count(429)
    assert admitted + refused == FLOOD, set(statuses)
    # at most the cap is held at once; one run takes its 5 s budget, so a few may have ended during the burst
    assert 1 <= admitted <= MAX_EVENTS_PER_ADDRESS + ended, (admitted, ended)
    assert refused >= FLOOD - MAX_EVENTS_PER_ADDRESS - ended
    message = next(answer for answer in answers if answer.status_code == 429).json()["detail"]
    assert message.startswith("Too many requests from your address:") and "waiting or running" in message
    assert next(a for a in answers if a.status_code == 429).headers["Retry-After"] == "5"

    # The flooding address is refused again, in the language its request asks for. Its runs end one at a time (5 s
    # each), so on a loaded machine one may have ended since the burst (CI saw it): it joins until one is refused,
    # which takes at most the cap's worth of joins.
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3"), timeout=120) as client:
        for i in range(MAX_EVENTS_PER_ADDRESS + 1):
            again = client.post(served.url + "gradio_api/call/embeddings_nnlm", json=nnlm_body(FLOOD + i),
                                headers={"Accept-Language": "zh-CN,zh;q=0.9"})
            if again.status_code != 200:
                break
    assert again.status_code == 429 and again.json()["detail"].startswith("来自你的地址的请求太多")

    # Meanwhile another learner (127.0.0.2) is admitted and answered: the N-gram score of the seed's sentences.
    kind, data = call(served.url, "ngram_score", NGRAM, local_address="127.0.0.2")
    assert kind == "complete", data
    assert "A" in data[0] and data[1]["data"]  # the summary and sentence A's factor table


def test_behind_the_trusted_proxy_each_forwarded_address_has_its_own_share(served):
    # Through the proxy (127.0.0.1), one learner floods as 10.0.0.66 ...
    answers, ended = flood(served.url, "127.0.0.1", forwarded_for=lambda i: "10.0.0.66")
    statuses = [answer.status_code for answer in answers]
    assert statuses.count(429) >= FLOOD - MAX_EVENTS_PER_ADDRESS - ended and statuses.count(200) >= 1
    # ... while a classmate behind the same proxy (10.0.0.7) is answered, and so is the proxy's own address.
    kind, data = call(served.url, "ngram_score", NGRAM, headers={"X-Forwarded-For": "10.0.0.7"})
    assert kind == "complete", data
    kind, data = call(served.url, "ngram_score", NGRAM)
    assert kind == "complete", data
    # the flooder is refused even on an endpoint it has not used
    status, body = call(served.url, "ngram_score", NGRAM, headers={"X-Forwarded-For": "10.0.0.66"})
    assert status == 429 and "Too many requests" in body["detail"]


def test_in_process_the_cap_counts_an_address_s_waiting_and_running_events_and_refuses_beyond_it():
    """admit() on a stand-in for Gradio's queue, without a server (the fast lane's check of this module):
    an address's events are counted waiting and running; at the cap its join is refused with 429, Retry-After and
    the message in the request's language; another address, and a request without a client, pass to the queue."""
    from types import SimpleNamespace

    from fastapi import HTTPException

    from demo.server import serving

    def request(host, language="en-US"):
        return SimpleNamespace(client=SimpleNamespace(host=host) if host else None,
                               headers={"accept-language": language})

    pushed = []

    async def push(body, request, username=None):
        pushed.append(body)
        return body

    def event(host):
        return SimpleNamespace(request=request(host))

    queue = SimpleNamespace(push=push, active_jobs=[None, [event("10.0.0.1")]],
                            event_queue_per_concurrency_id={"trainers": SimpleNamespace(
                                queue=[event("10.0.0.1"), event("10.0.0.2"), event(None)])})
    serving.admit(SimpleNamespace(_queue=queue), per_address=2)
    assert [serving.address_events(queue, a) for a in ("10.0.0.1", "10.0.0.2", "10.0.0.3")] == [2, 1, 0]
    for language, start in [("zh-CN,zh;q=0.9", "来自你的地址的请求太多"), ("en-US", "Too many requests from your address:")]:
        with pytest.raises(HTTPException) as refused:
            run_async(queue.push("flood", request("10.0.0.1", language)))
        assert refused.value.status_code == 429 and refused.value.headers == {"Retry-After": "5"}
        assert refused.value.detail.startswith(start) and "2" in refused.value.detail
    assert run_async(queue.push("classmate", request("10.0.0.2"))) == "classmate"
    assert run_async(queue.push("no client", request(None))) == "no client"
    assert pushed == ["classmate", "no client"]
