"""Admission per client address: no address holds more than a bounded share of the queue.

The per-session cap (demo/serving.limit_sessions) stops a page that clicks too often, but a script that invents a
new ``session_hash`` per request is not a session: 1,100 raw ``POST /gradio_api/call/<api>`` joins from one address
filled the whole queue, and other learners were told "Queue is full". So ``limit_addresses`` wraps Gradio's
``Queue.push`` (gradio/queueing.py; both ``/queue/join`` and ``/call/<api>`` go through it) and counts, per client
address, the events waiting in the queue and running now, plus the joins being admitted at this moment (push awaits
before it enqueues, so a burst could otherwise pass the count together). Beyond ``limit`` the join is refused at
once with HTTP 429 and ADDRESS_BUSY, before it takes a place; nothing is stored per event, so an event that ends,
fails or is cancelled frees its place by leaving the queue.

Which address: the TCP peer, as uvicorn reports it. uvicorn rewrites the peer from ``X-Forwarded-For`` when the
peer is one of ``FORWARDED_ALLOW_IPS``, and its default trusts loopback, so any local process could pose as many
addresses; ``trust_proxies`` sets that list from the app's ``--trusted-proxy`` flag and to nothing without it. Behind
a reverse proxy on the same machine, name it (``--trusted-proxy 127.0.0.1``), or every learner is one address.
"""
from __future__ import annotations

import functools
import os
from collections import Counter

from fastapi import HTTPException

from core.text.i18n import text
from demo.kit.i18n import language_of

MAX_EVENTS_PER_ADDRESS = 16  # queued or running events one client address may hold (--max-events-per-address)
ADDRESS_BUSY = "common.address_busy"  # the refusal (assets/i18n/*.yaml)
RETRY_AFTER_SECONDS = 5


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
    waiting = sum(1 for events in queue.event_queue_per_concurrency_id.values() for event in events.queue
                  if client_address(event.request) == address)
    running = sum(1 for jobs in queue.active_jobs if jobs for event in jobs
                  if client_address(event.request) == address)
    return waiting + running


def limit_addresses(app, limit: int = MAX_EVENTS_PER_ADDRESS) -> None:
    """Refuse an address's joins beyond ``limit`` waiting or running with HTTP 429 (see module docstring)."""
    queue = app._queue
    push = queue.push
    admitting: Counter[str] = Counter()  # joins inside push now, not yet in the queue

    @functools.wraps(push)
    async def fair_push(body, request, username=None):
        address = client_address(request)
        if address is None:
            return await push(body, request, username)
        held = address_events(queue, address) + admitting[address]
        if held >= limit:
            raise HTTPException(status_code=429, detail=text(ADDRESS_BUSY, language_of(request), held=held),
                                headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        admitting[address] += 1
        try:
            return await push(body, request, username)
        finally:
            admitting[address] -= 1
            if admitting[address] <= 0:
                del admitting[address]

    queue.push = fair_push
