"""How the app serves many users at once: readable API errors, a fair queue, and cleaned-up uploads.

``serve(app)`` applies all of it to the built gr.Blocks; ``build_app`` in app.py calls it.

* **API errors.** Gradio's own messages for a malformed API call name Python objects
  (``<gradio.components.dropdown.Dropdown object at 0x…>``, ``Original error: TypeError``). ``guard_api`` checks the
  number of values first and, when a value cannot be read, says which parameter (by its API name) and what it wants.
* **Queue fairness.** ``limit_sessions`` caps the events one browser session (``session_hash``) may have waiting or
  running at MAX_EVENTS_PER_SESSION; beyond it the request is refused at once with SESSION_BUSY, so one client cannot
  fill the shared queue and other users are always admitted (Gradio's queue itself only has a global ``max_size``).
  A new training run from a session replaces that session's queued and running ones (``replace_training``).
* **Uploads.** DELETE_CACHE goes to gr.Blocks(delete_cache=...): Gradio deletes cached uploads once that old.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import gradio as gr
from gradio.blocks import _get_api_parameter_name
from gradio.utils import get_function_params

from core import jobs
from demo.common import TRAIN_QUEUE

MAX_EVENTS_PER_SESSION = 8  # queued or running events one browser session may hold
QUEUE_MAX_SIZE = 1024  # the whole queue; one session fills at most MAX_EVENTS_PER_SESSION of it
# Gradio keeps the files it cached (uploads, generated files) until the server stops unless told otherwise;
# here: checked every 10 minutes, deleted once older than an hour.
DELETE_CACHE = (600, 3600)

SESSION_BUSY = ("You already have {waiting} requests waiting. Wait for them to finish (or reload the page) before "
                "sending more.")
WRONG_ARITY = "This endpoint takes {expected} values ({names}); the request sent {got}."
BAD_VALUE = "The value given for “{name}” could not be used: {reason}"
REPLACED_IN_QUEUE = "This training run was replaced by a newer one from the same page before it started."
_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>")


# ----------------------------------------------------------------------------------------------------------------
# Readable API errors


def _parameter_names(block_fn) -> list[str]:
    params = get_function_params(block_fn.fn) if block_fn.fn else []
    return [_get_api_parameter_name(block_fn, params, i) for i in range(len(block_fn.inputs))]


def _wants(component) -> str:
    """What a component accepts, in words."""
    if isinstance(component, gr.Slider):
        return f"a number from {component.minimum:g} to {component.maximum:g}"
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        values = [value for _, value in component.choices]
        shown = ", ".join(repr(v) for v in values[:8]) + (", …" if len(values) > 8 else "")
        return f"one of {shown}" if values else "a text value"
    if isinstance(component, gr.Checkbox):
        return "true or false"
    if isinstance(component, gr.Number):
        return "a number"
    if isinstance(component, (gr.File, gr.UploadButton)):
        return "an uploaded file (use handle_file in gradio_client)"
    if isinstance(component, gr.Dataframe):
        return 'a table: {"headers": [...], "data": [[...], ...]}'
    if isinstance(component, gr.Textbox):
        return "text"
    return f"a {type(component).__name__} value"


def _wrong_type(component, payload) -> bool:
    """Whether a payload is of a type the component can never take (Gradio lets some through to the handler)."""
    if payload is None:
        return False
    if isinstance(component, (gr.Slider, gr.Number)):
        return isinstance(payload, bool) or not isinstance(payload, (int, float))
    if isinstance(component, gr.Checkbox):
        return not isinstance(payload, bool)
    if isinstance(component, gr.Textbox):
        return not isinstance(payload, str)
    if isinstance(component, gr.Radio) or isinstance(component, gr.Dropdown) and not component.multiselect:
        return not isinstance(payload, (str, int, float))  # choices may be numbers
    return False


def _readable(message: str) -> str:
    message = _REPR.sub("a component", message)
    return message if len(message) <= 300 else message[:300] + "…"


def _bad_value(block_fn, inputs: list, exc: Exception) -> gr.Error:
    """Find the first input the components refuse and name it; Gradio's text never reaches the client."""
    from demo.common import preprocess_payload

    names = _parameter_names(block_fn)
    for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
        if getattr(component, "stateful", False) or isinstance(component, (gr.State, gr.File, gr.UploadButton)):
            continue
        try:
            preprocess_payload(component, payload)
        except Exception as refused:  # noqa: BLE001
            given = type(payload).__name__
            reason = (f"expected {_wants(component)}, got {given}" if not isinstance(refused, gr.Error)
                      or "Could not read" in str(refused.message)
                      else f"{_readable(str(refused.message))} (expected {_wants(component)})")
            return gr.Error(BAD_VALUE.format(name=names[index], reason=reason), print_exception=False)
    return gr.Error(BAD_VALUE.format(name=", ".join(names) or "the input",
                                     reason=f"the values could not be read ({type(exc).__name__})"),
                    print_exception=False)


def guard_api(app: gr.Blocks) -> gr.Blocks:
    """Make malformed API calls get a short message naming the parameter (see module docstring)."""
    preprocess_data = app.preprocess_data

    @functools.wraps(preprocess_data)
    async def checked(block_fn, inputs: list[Any], state, explicit_call: bool = False):
        if not isinstance(inputs, list) or len(inputs) != len(block_fn.inputs):
            names = _parameter_names(block_fn)
            got = len(inputs) if isinstance(inputs, list) else "no list of"
            raise gr.Error(WRONG_ARITY.format(expected=len(block_fn.inputs), names=", ".join(names) or "none",
                                              got=got), print_exception=False)
        names = None
        for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
            if not getattr(component, "stateful", False) and _wrong_type(component, payload):
                names = names or _parameter_names(block_fn)
                reason = f"expected {_wants(component)}, got {type(payload).__name__}"
                raise gr.Error(BAD_VALUE.format(name=names[index], reason=reason), print_exception=False)
        try:
            return await preprocess_data(block_fn, inputs, state, explicit_call)
        except Exception as exc:  # noqa: BLE001 - gr.Error from a component included: it does not say which input
            raise _bad_value(block_fn, inputs, exc) from None

    app.preprocess_data = checked
    return app


# ----------------------------------------------------------------------------------------------------------------
# Queue fairness


def session_events(queue, session: str) -> int:
    """How many events of one session are waiting in Gradio's queue or running now."""
    waiting = sum(1 for events in queue.event_queue_per_concurrency_id.values() for event in events.queue
                  if event.session_hash == session)
    running = sum(1 for jobs in queue.active_jobs if jobs for event in jobs if event.session_hash == session)
    return waiting + running


def limit_sessions(app: gr.Blocks, limit: int = MAX_EVENTS_PER_SESSION) -> None:
    """Refuse a session's events beyond ``limit`` waiting or running, before they take a place in the queue.

    Gradio 6's queue (gradio/queueing.py) has one global ``max_size`` and no per-session limit, so ``Queue.push``
    is wrapped: it counts the session's events in the queue and among the active jobs (nothing is stored, so
    nothing can leak when events end, fail or are cancelled) and answers HTTP 400 with SESSION_BUSY beyond the
    cap. A client that invents a new session id per request is not stopped by this; the queue's global max_size
    (set large, QUEUE_MAX_SIZE) is the backstop."""
    queue = app._queue
    push = queue.push

    @functools.wraps(push)
    async def fair_push(body, request, username=None):
        session = getattr(body, "session_hash", None)
        if session and _is_training(app, body):
            await replace_training(queue, session)
        if session:
            waiting = session_events(queue, session)
            if waiting >= limit:
                return False, SESSION_BUSY.format(waiting=waiting), "error"
        return await push(body, request, username)

    queue.push = fair_push


def _is_training(app: gr.Blocks, body) -> bool:
    fn = app.fns.get(body.fn_index) if isinstance(getattr(body, "fn_index", None), int) else None
    return fn is not None and fn.concurrency_id == TRAIN_QUEUE["concurrency_id"]


async def replace_training(queue, session: str) -> int:
    """A new training run from ``session`` replaces its older ones: the running one is told to stop (it ends at its
    next step with a message), queued ones leave the queue with the same message. Returns how many were replaced."""
    from gradio.server_messages import ProcessCompletedMessage
    from gradio.utils import error_payload

    stale = [event for event in queue.event_queue_per_concurrency_id.get(TRAIN_QUEUE["concurrency_id"],
                                                                          _NO_EVENTS).queue
             if event.session_hash == session]
    for event in stale:
        await queue.remove_from_queue(event._id)
        refused = gr.Error(REPLACED_IN_QUEUE, print_exception=False)
        queue.send_message(event, ProcessCompletedMessage(output=error_payload(refused, True), success=False))
    return len(stale) + int(jobs.TRAINING.cancel(session))


_NO_EVENTS = type("NoEvents", (), {"queue": ()})()


def serve(app: gr.Blocks) -> gr.Blocks:
    """Everything above, applied to the built app (call after ``app.queue(...)``)."""
    guard_api(app)
    limit_sessions(app)
    return app
