"""Who may enter the queue: no client address and no browser session holds more than a bounded share of it.

Gradio 6's queue (gradio/queueing.py) has one global ``max_size`` and no per-client limit, so ``admit`` wraps its
``Queue.push`` (both ``/queue/join`` and ``/call/<api>`` go through it), once, with three rules in this order:

* **Per address** (first). A script that invents a new ``session_hash`` per request is not a session: 1,100 raw
  ``POST /gradio_api/call/<api>`` joins from one address filled the whole queue, and other learners were told "Queue
  is full". The events of a client address waiting in the queue and running now are counted, plus the joins being
  admitted at this moment (push awaits before it enqueues, so a burst could otherwise pass the count together).
  Beyond ``per_address`` the join is refused at once with HTTP 429 and ADDRESS_BUSY, before it takes a place.
* **Per session.** A page that clicks too often: beyond ``per_session`` events waiting or running, the request is
  refused with SESSION_BUSY, so one client cannot fill the shared queue and other users are always admitted. The
  queue's global max_size (set large, serving.QUEUE_MAX_SIZE) is the backstop.
* **One training run per page** (all trainers share one slot, handlers.TRAIN_QUEUE): a new run replaces the page's
  running one, which stops at its next step and frees the slot; while the page's earlier run still waits for its
  turn, a new one is refused with TRAINING_WAITING (the earlier one runs first). A Train button sends nothing while
  its own run is pending (Gradio's trigger_mode "once"), so this is two trainers clicked from one page.

Nothing is stored per event, so an event that ends, fails or is cancelled frees its place by leaving the queue.

Which address: the TCP peer, as uvicorn reports it. uvicorn rewrites the peer from ``X-Forwarded-For`` when the
peer is one of ``FORWARDED_ALLOW_IPS``, and its default trusts loopback, so any local process could pose as many
addresses; ``trust_proxies`` sets that list from the app's ``--trusted-proxy`` flag and to nothing without it. Behind
a reverse proxy on the same machine, name it (``--trusted-proxy 127.0.0.1``), or every learner is one address.
"""
from __future__ import annotations

import functools
import os
from collections import Counter

import gradio as gr
from fastapi import HTTPException

from core.loading import jobs
from core.text.i18n import text
from demo.kit.i18n import language_of
from demo.server.handlers import TRAIN_QUEUE

MAX_EVENTS_PER_ADDRESS = 16  # queued or running events one client address may hold (--max-events-per-address)
MAX_EVENTS_PER_SESSION = 8  # queued or running events one browser session may hold
RETRY_AFTER_SECONDS = 5
# The refusals (keys into assets/i18n/*.yaml, section common), in the language of the request that caused them.
ADDRESS_BUSY = "common.address_busy"
SESSION_BUSY = "common.session_busy"
TRAINING_WAITING = "common.training_waiting"


def trust_proxies(proxies: str) -> None:
    """Honour X-Forwarded-For only from these comma-separated addresses or networks ("" trusts none).

    uvicorn reads FORWARDED_ALLOW_IPS when Gradio's launch() builds its server, so call this before launch()."""
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(part.strip() for part in proxies.split(",") if part.strip())


def client_address(request) -> str | None:
    """The address a request came from (the forwarded one when its peer is a trusted proxy)."""
    client = getattr(request, "client", None)
    return client.host if client is not None else None


def address_events(queue, address: str) -> int:
    """How many events from ``address`` are waiting in Gradio's queue or running now."""
    return _held(queue, lambda event: client_address(event.request) == address)


def session_events(queue, session: str) -> int:
    """How many events of one session are waiting in Gradio's queue or running now."""
    return _held(queue, lambda event: event.session_hash == session)


def _held(queue, mine) -> int:
    waiting = sum(1 for events in queue.event_queue_per_concurrency_id.values() for event in events.queue
                  if mine(event))
    running = sum(1 for jobs_ in queue.active_jobs if jobs_ for event in jobs_ if mine(event))
    return waiting + running


def client_error(message: str, lang: str | None = None) -> gr.Error:
    """An error for the client, titled in the learner's language (Gradio's default title is "Error")."""
    return gr.Error(message, title=text("common.error_title", lang), print_exception=False)


def admit(app, per_address: int = MAX_EVENTS_PER_ADDRESS, per_session: int = MAX_EVENTS_PER_SESSION) -> None:
    """Wrap the app's ``Queue.push`` with the rules of the module docstring (call after ``app.queue(...)``)."""
    queue = app._queue
    push = queue.push
    admitting: Counter[str] = Counter()  # joins inside push now, not yet in the queue

    @functools.wraps(push)
    async def fair_push(body, request, username=None):
        lang, address = language_of(request), client_address(request)
        if address is None:
            return await in_session(body, request, username, lang)
        held = address_events(queue, address) + admitting[address]
        if held >= per_address:
            raise HTTPException(status_code=429, detail=text(ADDRESS_BUSY, lang, held=held),
                                headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        admitting[address] += 1
        try:
            return await in_session(body, request, username, lang)
        finally:
            admitting[address] -= 1
            if admitting[address] <= 0:
                del admitting[address]

    async def in_session(body, request, username, lang):
        session = getattr(body, "session_hash", None)
        if session and (waiting := session_events(queue, session)) >= per_session:
            return False, text(SESSION_BUSY, lang, waiting=waiting), "error"
        if session and _is_training(app, body):
            if training_waits(queue, session):
                return False, text(TRAINING_WAITING, lang), "error"
            jobs.TRAINING.cancel(session)  # its running one stops at its next step, with a message
        return await push(body, request, username)

    queue.push = fair_push


def _is_training(app, body) -> bool:
    fn = app.fns.get(body.fn_index) if isinstance(getattr(body, "fn_index", None), int) else None
    return fn is not None and fn.concurrency_id == TRAIN_QUEUE["concurrency_id"]


def training_waits(queue, session: str) -> bool:
    """Whether a training run of ``session`` is waiting for the training slot (queued, not yet running)."""
    waiting = queue.event_queue_per_concurrency_id.get(TRAIN_QUEUE["concurrency_id"])
    return waiting is not None and any(event.session_hash == session for event in waiting.queue)
