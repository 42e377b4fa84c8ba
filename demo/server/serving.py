"""Every event's way in: who may enter the queue, readable API errors, the event's language, and cleaned-up uploads.

``serve(app)`` applies all of it to the built gr.Blocks; ``build_app`` in app.py calls it. Gradio's per-block work
done once (signatures, data schemas, a new session's configs on demand) is demo/server/gradio_inside.py; the light
first page (compression, one translation table per page, a HEAD of the page answered without building it) is
demo/server/first_page.py.

**API errors.** Gradio's own messages for a malformed API call name Python objects
(``<gradio.components.dropdown.Dropdown object at 0x…>``, ``Original error: TypeError``). ``guard_api`` checks the
number of values first and, when a value cannot be read, says which parameter (by its API name), what it wants and
what came (handlers.refusal: JSON's null and NaN, never a Python type name or Gradio's English). Text longer than its
box's cap is refused before any handler runs (``check_caps``); then null where the page always sends a value, and
NaN or Infinity anywhere. The same wrapper runs the event in the language of its request, with the request in
handlers.EVENT_REQUEST. A call to an endpoint the app does not have, or a read of a call it never started, is a 404
that says so (``KnownCalls``); a body that is not JSON with a list under "data", and an upload over the size cap,
are answered in the learner's words too (``REFUSALS``, FastAPI's exception handlers).

**Uploads.** DELETE_CACHE goes to gr.Blocks(delete_cache=...): Gradio deletes cached uploads once that old.

**Admission: no client address and no browser session holds more than a bounded share of the queue.** Gradio 6's
queue (gradio/queueing.py) has one global ``max_size`` and no per-client limit, so ``admit`` wraps its
``Queue.push`` (both ``/queue/join`` and ``/call/<api>`` go through it), once, with three rules in this order:

* **Per address** (first). A script that invents a new ``session_hash`` per request is not a session: 1,100 raw
  ``POST /gradio_api/call/<api>`` joins from one address filled the whole queue, and other learners were told "Queue
  is full". The events of a client address waiting in the queue and running now are counted, plus the joins being
  admitted at this moment (push awaits before it enqueues, so a burst could otherwise pass the count together).
  Beyond ``per_address`` the join is refused at once with HTTP 429 and ADDRESS_BUSY, before it takes a place.
* **Per session.** A page that clicks too often: beyond ``per_session`` events waiting or running, the request is
  refused with SESSION_BUSY, so one client cannot fill the shared queue and other users are always admitted. The
  queue's global max_size (set large, QUEUE_MAX_SIZE) is the backstop.
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
import json
import math
import os
import re
from collections import Counter
from typing import Any

import gradio as gr
from fastapi import HTTPException
from fastapi.exceptions import RequestValidationError
from starlette.middleware import Middleware
from starlette.responses import JSONResponse

from core.loading import jobs
from core.loading.cache import BoundedCache
from core.text.errors import UserInputError, echo
from core.text.limits import MAX_CUSTOM_CHOICE_CHARS, MAX_UPLOAD_BYTES
from core.text.i18n import language_of, text, using_language
from demo.server.first_page import scope_language
from demo.server.gradio_inside import lazy_session_configs
from demo.server.handlers import (EVENT_REQUEST, TRAIN_QUEUE, UnreadableValue, component_name,
                                  preprocess_payload, refusal)

QUEUE_MAX_SIZE = 1024  # the whole queue; one session fills at most MAX_EVENTS_PER_SESSION of it
# How often the queue looks for work while it has none. Gradio's loop (Queue.start_processing) looks every 1 ms off
# Windows: an idle app used 4.3% of a core on our machines, 1.3% at 10 ms; an event waits at most 10 ms more to start,
# against the 100 ms and more an event takes (benchmarks/README.md, "Gradio's insides").
QUEUE_IDLE_POLL_SECONDS = 0.01
# Gradio keeps the files it cached (uploads, generated files) until the server stops unless told otherwise;
# here: checked every 10 minutes, deleted once older than an hour.
DELETE_CACHE = (600, 3600)


# Messages (keys into assets/i18n/*.yaml, section common), in the language of the request that caused them.
WRONG_ARITY = "common.api_wrong_arity"
BAD_VALUE = "common.api_bad_value"


# ----------------------------------------------------------------------------------------------------------------
# Who may enter the queue (module docstring: Admission)

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


def quiet_queue(app) -> None:
    """The queue looks for work every QUEUE_IDLE_POLL_SECONDS while it has none (call after ``app.queue(...)``)."""
    app._queue.sleep_when_free = max(app._queue.sleep_when_free, QUEUE_IDLE_POLL_SECONDS)


def _is_training(app, body) -> bool:
    fn = app.fns.get(body.fn_index) if isinstance(getattr(body, "fn_index", None), int) else None
    return fn is not None and fn.concurrency_id == TRAIN_QUEUE["concurrency_id"]


def training_waits(queue, session: str) -> bool:
    """Whether a training run of ``session`` is waiting for the training slot (queued, not yet running)."""
    waiting = queue.event_queue_per_concurrency_id.get(TRAIN_QUEUE["concurrency_id"])
    return waiting is not None and any(event.session_hash == session for event in waiting.queue)


# ----------------------------------------------------------------------------------------------------------------
# Readable API errors


TOO_LONG = "common.too_long_input"


def cap_of(component) -> int | None:
    """The most characters a component takes as typed text, or None when it takes no free text. A gr.Textbox's
    ``max_length`` (one of the caps in core/text/limits.py) only stops typing in the browser; a script calling the API
    sends what it likes. A checkpoint picker takes a typed Hub id too (allow_custom_value), so it has a cap as well."""
    if isinstance(component, gr.Textbox):
        return component.max_length
    if isinstance(component, gr.Dropdown) and component.allow_custom_value and not component.multiselect:
        return MAX_CUSTOM_CHOICE_CHARS
    return None


def check_caps(components, payloads) -> None:
    """Raise UserInputError (TOO_LONG) for the first text payload longer than its component's cap: one message that
    names the box and the cap and repeats none of the text. ``guard_api`` calls it on every event's raw values."""
    for component, payload in zip(components, payloads):
        cap = cap_of(component)
        if cap is not None and isinstance(payload, str) and len(payload) > cap:
            raise UserInputError(TOO_LONG, name=component_name(component), limit=f"{cap:,}",
                                 chars=f"{len(payload):,}")


def api_parameter_names(app: gr.Blocks):
    """``names(block_fn)``: an event's parameter names as its API page lists them (the app's own ``get_api_info``,
    read once, on the first refused call). An input the page does not list (a gr.State: ``skip_api``), or an event
    with no API page, is ``param_<index>``."""
    @functools.cache
    def endpoints() -> dict[str, list[str]]:
        return {name: [parameter["parameter_name"] for parameter in info["parameters"]]
                for name, info in app.get_api_info(all_endpoints=True)["named_endpoints"].items()}

    def names(block_fn) -> list[str]:
        listed = iter(endpoints().get(f"/{block_fn.api_name}", []))
        return [f"param_{index}" if getattr(block, "skip_api", False) else next(listed, f"param_{index}")
                for index, block in enumerate(block_fn.inputs)]

    return names


def _wrong_type(component, payload) -> bool:
    """Whether a payload is of a type the component can never take (Gradio lets some through to the handler): null
    where the page always sends a value (a slider, a checkbox, a text box, a choice that starts chosen), a number
    that is not finite (NaN, Infinity: JSON's tokens, which Python reads), a list for a text."""
    if payload is None:
        sends_a_value = isinstance(component, (gr.Slider, gr.Checkbox, gr.Textbox, gr.Radio)) or (
            numeric_choices(component) is not None)
        return sends_a_value and getattr(component, "value", None) is not None
    if isinstance(payload, float) and not math.isfinite(payload):
        return True
    if isinstance(component, (gr.Slider, gr.Number)):
        return isinstance(payload, bool) or not isinstance(payload, (int, float))
    if isinstance(component, gr.Checkbox):
        return not isinstance(payload, bool)
    if isinstance(component, gr.Textbox):
        return not isinstance(payload, str)
    if isinstance(component, gr.Radio) or isinstance(component, gr.Dropdown) and not component.multiselect:
        if numeric_choices(component):  # its schema says number (typed_choices): "512" is not 512
            return isinstance(payload, bool) or not isinstance(payload, (int, float))
        return not isinstance(payload, (str, int, float))  # choices may be numbers
    return False


def numeric_choices(component) -> list | None:
    """A single-choice Dropdown's or Radio's values when every one is a number, else None."""
    if not isinstance(component, (gr.Dropdown, gr.Radio)) or getattr(component, "multiselect", False):
        return None
    values = [value for _, value in component.choices]
    numbers = values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    return values if numbers else None


def typed_choices(app: gr.Blocks) -> None:
    """Make the API schema of a choice of numbers say numbers.

    Gradio's Dropdown and Radio advertise {"type": "string", "enum": [64, 128, …]} whatever the choices are, and then
    refuse "512" because the choice is 512. A choice of numbers says {"type": "integer", "oneOf": [{"const": 64}, …]}
    instead (gradio_client reads that as ``int``; an "enum" would read as the strings '64', '128')."""
    for block in app.blocks.values():
        values = numeric_choices(block)
        if values:
            kind = "integer" if all(isinstance(v, int) for v in values) else "number"
            schema = {"type": kind, "oneOf": [{"const": v} for v in values]}
            block.api_info = lambda schema=schema: dict(schema)  # api_info_as_input/_output read it


def _bad_value(names: list[str], block_fn, inputs: list) -> gr.Error:
    """Find the first input the components refuse and name it; Gradio's text never reaches the client."""
    for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
        if getattr(component, "stateful", False) or isinstance(component, gr.State):
            continue
        try:
            preprocess_payload(component, payload, names[index])
        except UnreadableValue as refused:
            return client_error(refused.message)
    return client_error(text(BAD_VALUE, name=", ".join(names) or text("common.api_the_input"),
                             reason=text("common.api_unreadable")))


def guard_api(app: gr.Blocks) -> gr.Blocks:
    """Make malformed API calls get a short message naming the parameter (see module docstring)."""
    preprocess_data = app.preprocess_data
    parameter_names = api_parameter_names(app)

    @functools.wraps(preprocess_data)
    async def checked(block_fn, inputs: list[Any], state, explicit_call: bool = False):
        if not isinstance(inputs, list) or len(inputs) != len(block_fn.inputs):
            raise wrong_arity(block_fn, inputs)
        try:  # text over its box's cap never reaches a handler, whoever sent it (check_caps); checked first
            check_caps(block_fn.inputs, inputs)
        except UserInputError as too_long:
            raise client_error(too_long.message()) from None
        for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
            if not getattr(component, "stateful", False) and _wrong_type(component, payload):
                raise client_error(refusal(component, payload, parameter_names(block_fn)[index]).message)
        try:
            return await preprocess_data(block_fn, inputs, state, explicit_call)
        except Exception:  # noqa: BLE001 - gr.Error from a component included: it does not say which input
            raise _bad_value(parameter_names(block_fn), block_fn, inputs) from None

    def wrong_arity(block_fn, inputs) -> gr.Error:
        """The values an API client must send: the ones its API page lists (Gradio fills in the page's states)."""
        listed = [name for name, block in zip(parameter_names(block_fn), block_fn.inputs)
                  if not getattr(block, "skip_api", False)]
        names = ", ".join(listed) or text("common.api_no_parameters")
        if isinstance(inputs, list):
            return client_error(text(WRONG_ARITY, expected=len(listed), names=names, got=len(inputs)))
        return client_error(text("common.api_not_a_list", expected=len(listed), names=names))

    app.preprocess_data = checked
    process_api = app.process_api

    @functools.wraps(process_api)
    async def in_language(*args, **kwargs):
        """Run the event's API processing (and so ``checked`` above) in the language of its request, with the
        request in handlers.EVENT_REQUEST."""
        request = kwargs.get("request")
        if isinstance(request, list):  # a batch: result_cache.by_checkpoint answers each in its own language
            request = request[0] if request else None
        token = EVENT_REQUEST.set(request)
        try:
            with using_language(language_of(request)):
                block_fn = kwargs.get("block_fn", args[0] if args else None)
                columns = kwargs.get("inputs", args[1] if len(args) > 1 else None)
                if getattr(block_fn, "batch", False) and (not isinstance(columns, list)
                                                           or len(columns) != len(block_fn.inputs)):
                    raise wrong_arity(block_fn, columns)  # a batch: one list of values per input (Gradio's queue)
                return await process_api(*args, **kwargs)
        finally:
            EVENT_REQUEST.reset(token)

    app.process_api = in_language
    return app


class KnownCalls:
    """ASGI middleware for the API's call routes, answering in the learner's language where Gradio's routes fail:
    ``POST …/gradio_api/call/[v2/]<name>`` for a name the app has no event for is a 404 that says so (Gradio: 500,
    "Internal Server Error"), and so is ``GET …/gradio_api/call/[v2/]<name>/<event_id>`` for an id no call here returned
    (Gradio's stream raises after its headers, so the client saw its connection cut). The ids are the ``event_id``s
    the POSTs answered, the latest ``KEPT_IDS`` of them. An upload over the size cap, which Gradio's route answers 413
    in English plain text, is answered in the learner's words (the page checks the size before it uploads)."""

    CALL = re.compile(r"/gradio_api/call/(?:v2/)?([^/]+)/?$")  # v2: named values (the API page's curl snippet)
    STREAM = re.compile(r"/gradio_api/call/(?:v2/)?([^/]+)/([^/]+)/?$")
    KEPT_IDS = 4_096  # API calls only (the page joins the queue at /queue/join): ~0.5 MB

    def __init__(self, app, names: frozenset[str]):
        self.app, self.names, self.calls = app, names, BoundedCache(self.KEPT_IDS)

    async def __call__(self, scope, receive, send):
        path, method = scope.get("path", ""), scope.get("method")
        called = self.CALL.search(path) if scope["type"] == "http" and method == "POST" else None
        streamed = self.STREAM.search(path) if scope["type"] == "http" and method == "GET" else None
        if method == "POST" and path.endswith("/gradio_api/upload"):
            return await self.app(scope, receive, self._worded_413(scope, send))
        if called is not None and called.group(1) in self.names:
            return await self.app(scope, receive, self._remembering(send))
        if called is not None:
            return await self._refuse(scope, receive, send, "common.api_no_such_endpoint", name=called.group(1))
        if streamed is not None and (streamed.group(1) not in self.names or self.calls.get(streamed.group(2)) is None):
            name, event = streamed.groups()
            key = "common.api_no_such_call" if name in self.names else "common.api_no_such_endpoint"
            return await self._refuse(scope, receive, send, key, name=name, event=event)
        return await self.app(scope, receive, send)

    def _remembering(self, send):
        """``send``, noting the event id of a 200 answer (a few dozen bytes of JSON)."""
        answer = {"status": 0, "body": b""}

        async def noting(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
            elif message["type"] == "http.response.body" and answer["status"] == 200:
                answer["body"] += message.get("body", b"")
                if not message.get("more_body"):
                    self._note(answer["body"])
            await send(message)
        return noting

    @staticmethod
    def _worded_413(scope, send):
        """``send``, with a 413's body replaced by the learner's sentence (JSON, as FastAPI's errors are)."""
        too_big = []

        async def wording(message):
            if message["type"] == "http.response.start" and message["status"] == 413:
                too_big.append(message)
            elif not too_big:
                await send(message)
            elif not message.get("more_body"):
                lang = scope_language(scope)
                said = text("common.api_upload_too_big", lang, limit=round(MAX_UPLOAD_BYTES / 2**20))
                body = json.dumps({"detail": said}, ensure_ascii=False).encode()
                await send({"type": "http.response.start", "status": 413, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
        return wording

    def _note(self, body: bytes) -> None:
        try:
            event = json.loads(body)["event_id"]
        except (ValueError, KeyError, TypeError):
            return
        self.calls.put(str(event), True)

    @staticmethod
    async def _refuse(scope, receive, send, key: str, **names):
        lang = scope_language(scope)
        shown = {name: echo(value) for name, value in names.items()}
        await JSONResponse({"error": text(key, lang, **shown)}, status_code=404)(scope, receive, send)


def known_calls(app: gr.Blocks) -> Middleware:
    """KnownCalls for ``app``: the API names of its events (for ``launch(app_kwargs={"middleware": [...]})``)."""
    return Middleware(KnownCalls, names=frozenset(fn.api_name for fn in app.fns.values() if fn.api_name))


async def _malformed_body(request, exc) -> JSONResponse:
    """FastAPI's 422 for a body its route cannot read: one sentence, not pydantic's English list echoing the body."""
    return JSONResponse({"detail": text("common.api_malformed_body", language_of(request))}, status_code=422)


# For ``launch(app_kwargs={"exception_handlers": ...})``: FastAPI's own hook, no Gradio name.
REFUSALS = {RequestValidationError: _malformed_body}


def serve(app: gr.Blocks, per_address: int = MAX_EVENTS_PER_ADDRESS) -> gr.Blocks:
    """Everything above, applied to the built app (call after ``app.queue(...)``): the API guard, numeric choices,
    the queue's admission (per address, then per session) and its idle loop, and a new session's configs on demand."""
    guard_api(app)
    typed_choices(app)
    admit(app, per_address)
    quiet_queue(app)
    lazy_session_configs()
    return app
