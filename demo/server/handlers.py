"""What every event handler shares: clear UI messages instead of tracebacks, in the learner's language; a GPU per
call on a ZeroGPU Space; number-box checks; one-round-trip input preprocessing for events with many inputs; and the
training runs' budget and slot. The pieces a tab builds with (the checkpoint picker, number display, CSV buttons)
are demo/kit/widgets.py."""
from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import math
import os
import sys

import gradio as gr

from core.loading import jobs
from core.text.errors import LearnerError, UserInputError, as_sent, echo
from core.text.i18n import DEFAULT_LANGUAGE, current_language, language_of, table, text, using_language

log = logging.getLogger("plm_explorer")


def loaded_models() -> list[str]:
    """Badges of the models this process has loaded (core/loading/registry.py), for the status panel and the preset results'
    keys. Before the first model there is none, and asking does not import the registry (it imports torch)."""
    registry = sys.modules.get("core.loading.registry")
    return registry.loaded_models() if registry is not None else []


def _to_gradio_error(exc: Exception) -> gr.Error:
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, LearnerError):
        return gr.Error(exc.message(), title=text("common.error_title"), print_exception=False)
    log.exception("handler failed")
    return gr.Error(text("errors.internal", name=type(exc).__name__), title=text("common.error_title"),
                    print_exception=False)


def _space_gpu_decorator():
    """``spaces.GPU`` on a ZeroGPU Space (SPACE_ID set, SPACES_ZERO_GPU=true), else None (off a Space ``spaces`` is not
    imported). It attaches a GPU for each call, run in a worker process of its own: models load onto it inside the
    call, where every handler loads them (lazily, onto core.loading.device.get_device()). On CPU basic it would do nothing."""
    zero_gpu = os.environ.get("SPACES_ZERO_GPU", "").strip().lower() in ("1", "t", "true")
    if not os.environ.get("SPACE_ID") or not zero_gpu:
        return None
    try:
        import spaces
    except ImportError:
        return None
    return spaces.GPU


_SPACE_GPU = _space_gpu_decorator()


def on_zero_gpu() -> bool:
    """True on a ZeroGPU Space, where gpu_handler's calls run on a GPU and never download."""
    return _SPACE_GPU is not None


# ZeroGPU's default duration is 60 s (spaces.zero.client): what a call asks of the visitor's GPU quota before it starts
# (the seconds used are charged). A trainer asks for its budget (core.loading.jobs) plus ~20 s of setup: the 120 s it ends in.
TRAINER_GPU_SECONDS = int(jobs.TRAIN_SECONDS) + 20


def gpu_handler(fn=None, *, duration: int | None = None):
    """Mark a handler that runs a model (``@gpu_handler``; ``@gpu_handler(duration=seconds)`` past ZeroGPU's default
    60 s): on a ZeroGPU Space it runs with a GPU attached (spaces.GPU), elsewhere it is ``fn`` itself; ``runs_model``
    lets a test check every model handler. The GPU call keeps the learner's language and never downloads: the app
    fetched its checkpoints before (demo.server.downloads.model_event, demo.kit.presets.View.run): GPU time is for models."""
    if fn is None:
        return functools.partial(gpu_handler, duration=duration)
    wrapped = fn if _SPACE_GPU is None else _on_gpu(fn, duration)
    wrapped.runs_model, wrapped.gpu_duration = True, duration
    return wrapped


def _on_gpu(fn, duration: int | None):
    """``fn`` through spaces.GPU, the caller's language passed along (no context variable reaches its worker)."""
    from core.loading.resolve import downloads_elsewhere

    if inspect.isgeneratorfunction(fn):
        def inside(lang, *args, **kwargs):
            with using_language(lang), downloads_elsewhere():
                yield from fn(*args, **kwargs)
        on_gpu = _SPACE_GPU(functools.wraps(fn)(inside), duration=duration)

        @functools.wraps(fn)
        def steps(*args, **kwargs):
            yield from on_gpu(current_language(), *args, **kwargs)
        return steps

    def inside(lang, *args, **kwargs):
        with using_language(lang), downloads_elsewhere():
            return fn(*args, **kwargs)

    on_gpu = _SPACE_GPU(functools.wraps(fn)(inside), duration=duration)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        return on_gpu(current_language(), *args, **kwargs)
    return call


def _with_request_parameter(fn):
    """fn's signature, plus a trailing ``request: gr.Request`` when fn has none, and a function that takes the
    request out of a call's arguments (returning it and the arguments fn itself expects)."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    own = next((p.name for p in params if p.name == "request"), None)
    if own or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        def split(args, kwargs):
            try:
                request = signature.bind_partial(*args, **kwargs).arguments.get("request")
            except TypeError:
                request = None
            return request, args, kwargs
        return signature, split
    added = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                              annotation=gr.Request)
    positional = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)

    def split(args, kwargs):
        kwargs = dict(kwargs)
        request = kwargs.pop("request", None)
        if len(args) > positional:  # Gradio passes special arguments positionally, in signature order
            request, args = args[positional], args[:positional] + args[positional + 1:]
        return request, args, kwargs
    return signature.replace(parameters=[*params, added]), split


EVENT_REQUEST: contextvars.ContextVar = contextvars.ContextVar("event_request", default=None)
"""The request of the event being processed: serving.guard_api sets it around Gradio's processing of every event
(the worker threads that run handlers copy it). Read by handlers whose signature cannot take the request
(``def open_tab(*done, ...)``: Gradio inserts special arguments by position, which ``*args`` cannot place) and by
the download gate (demo/server/downloads.py)."""


def event_request():
    """The request of the event being processed now, or None outside an event."""
    return EVENT_REQUEST.get()


def friendly_errors(fn):
    """Wrap an event handler so the learner sees a clear message, in their language, instead of a traceback.

    - The call runs in the learner's language (core.text.i18n.using_language): ``text(key)`` in the handler and the
      messages of our errors need no language argument. The wrapper asks Gradio for the request to know it.
    - Our own UserInputError/ModelUnavailableError messages are shown as they are; anything unexpected is logged
      with its traceback on the server and shown as a short generic message.
    Works for generator handlers too.
    """
    signature, split = _with_request_parameter(fn)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            request, args, kwargs = split(args, kwargs)
            lang = language_of(request)
            steps = fn(*args, **kwargs)
            while True:  # each step may run in another worker thread: set the language around every one
                with using_language(lang):
                    try:
                        item = next(steps)
                    except StopIteration:
                        return
                    except Exception as exc:  # noqa: BLE001 - this is the UI's last line of defence
                        raise _to_gradio_error(exc) from None
                yield item

        wrapped = gen_wrapper
    else:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            request, args, kwargs = split(args, kwargs)
            with using_language(language_of(request)):
                try:
                    return fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001
                    raise _to_gradio_error(exc) from None

        wrapped = wrapper
    wrapped.__signature__ = signature
    wrapped.__annotations__ = {**_resolved_annotations(fn), "request": gr.Request}
    return wrapped


def _resolved_annotations(fn) -> dict:
    """fn's annotations that can be evaluated now, as objects, one by one.

    Gradio reads a handler's type hints (typing.get_type_hints) to find its gr.Request / gr.EventData parameters,
    and gets none at all when one hint fails. A hint naming a type of a torch-backed core module is imported for
    type checkers only (``if TYPE_CHECKING:``), so that building the app does not import torch (core/loading/lazy.py):
    that hint fails here and is left out, the others stay."""
    resolved, module = {}, getattr(inspect.unwrap(fn), "__globals__", {})  # a wrapper's (gpu_handler's) globals
    for name, hint in getattr(fn, "__annotations__", {}).items():  # are not the handler's: read its own module's
        if isinstance(hint, str):
            try:
                hint = eval(hint, module)  # the handler's own annotation, in its module
            except (NameError, AttributeError, TypeError):
                continue
        resolved[name] = hint
    return resolved


def preprocess_in_handler(fn, inputs: list[gr.components.Component]):
    """Wrap ``fn`` so that the input components' own ``preprocess`` runs inside the handler's worker thread.

    Wire the result with ``preprocess=False``. Gradio otherwise preprocesses each input in its own worker-thread
    round trip (``Blocks.preprocess_data``); under load (32 users on 2 cores) each round trip waited ~50 ms for the
    busy event loop, so the n-gram events, with 11 inputs, spent ~0.6 s there while their handler took 10 ms.
    Calling the same ``preprocess`` here gives the handler the same values and the same validation errors (a
    choice not offered, a number out of range) in one round trip. Components whose properties a handler changes per
    session (``gr.update(choices=...)``) must not use this: it checks against the components as built.
    """
    names = list(inspect.signature(fn).parameters)[:len(inputs)]  # the API page's names for these inputs
    names += [None] * (len(inputs) - len(names))

    @functools.wraps(fn)  # keeps fn's signature: Gradio reads it for gr.Progress and for the API's parameter names
    def handler(*payloads):
        values = [preprocess_payload(component, payload, name)
                  for component, payload, name in zip(inputs, payloads, names)]
        return fn(*values, *payloads[len(inputs):])  # extra arguments: Gradio's gr.Progress tracker

    return handler


class UnreadableValue(gr.Error):
    """A payload an input component refuses (preprocess_payload); serving names the parameter instead."""


def preprocess_payload(component: gr.components.Component, payload, name: str | None = None):
    """What Blocks.preprocess_data does for one input: validate the payload's data model, then preprocess.
    A payload the component refuses raises UnreadableValue (a gr.Error) in the learner's language, naming the input
    (``name``, else the component's label) and what it takes: never Gradio's English or a Python type name."""
    try:
        data_model = getattr(component, "data_model", None)
        value = payload
        if data_model is not None and payload is not None:
            value = data_model.model_validate(payload, context={"validate_meta": True})
        return component.preprocess(value)
    except Exception:  # noqa: BLE001 - a malformed payload from an API client, or one the component refuses
        raise refusal(component, payload, name or component_name(component)) from None


def refusal(component: gr.components.Component, payload, name: str) -> UnreadableValue:
    """The error for a value ``component`` cannot take: which input, what it takes, what was sent."""
    reason = text("common.api_expected", wants=wants(component), given=given(payload))
    return UnreadableValue(text("common.api_bad_value", name=name, reason=reason), title=text("common.error_title"),
                           print_exception=False)


def wants(component: gr.components.Component) -> str:
    """What a component accepts, in words (in the current language)."""
    if isinstance(component, gr.Slider):
        return text("common.wants_number_range", low=f"{component.minimum:g}", high=f"{component.maximum:g}")
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        values = [value for _, value in component.choices]
        shown = ", ".join(given(v) for v in values[:8]) + (", …" if len(values) > 8 else "")
        return text("common.wants_one_of", values=shown) if values else text("common.wants_text_value")
    if isinstance(component, gr.Checkbox):
        return text("common.wants_bool")
    if isinstance(component, gr.Number):
        return text("common.wants_number")
    if isinstance(component, (gr.File, gr.UploadButton)):
        types = ", ".join(getattr(component, "file_types", None) or [])
        return text("common.wants_file_types", types=types) if types else text("common.wants_file")
    if isinstance(component, gr.Dataframe):
        return text("common.wants_table")
    if isinstance(component, gr.Textbox):
        return text("common.wants_text")
    return text("common.wants_other", kind=type(component).__name__)


def given(payload) -> str:
    """A value as a message repeats it: JSON's words (null, true, NaN), a number, text in quotes and cut, an uploaded
    file by its name, a list or an object by its size; never a Python repr or type name."""
    if payload is None or isinstance(payload, bool) or isinstance(payload, float) and not math.isfinite(payload):
        return as_sent(payload)  # JSON's words: null, true, NaN, -Infinity
    if isinstance(payload, (int, float)):
        return f"{payload:g}" if isinstance(payload, float) else str(payload)
    if isinstance(payload, str):
        return f"“{echo(payload)}”"
    if isinstance(payload, dict) and isinstance(payload.get("orig_name") or payload.get("path"), str):
        return f"“{echo(os.path.basename(payload.get('orig_name') or payload['path']))}”"  # a file: never its path
    if isinstance(payload, (list, tuple)):
        return text("common.given_list", count=len(payload))
    return text("common.given_object")


def component_name(component: gr.components.Component) -> str:
    """A component's label in the current language (a gr.I18n label is looked up), else its class name."""
    name = component.label
    key = getattr(name, "key", None)  # gr.I18n's I18nData
    if key is not None:
        name = text(key) if key in table(DEFAULT_LANGUAGE) else key
    return str(name) if name else type(component).__name__


def field_name(name: str) -> str:
    """The name of a number a message refers to: a table key ("common.field_seed", "lstm.units") in the current
    language, or (until every caller passes a key) the words given."""
    return text(name) if name in table(DEFAULT_LANGUAGE) else name


def _sentence_start(words: str) -> str:
    return words[:1].upper() + words[1:]  # "the seed …" → "The seed …"; 中文 is unchanged


def number_in_range(value: object, name: str, low: float, high: float) -> float:
    """A slider/number value checked for range (API callers can send anything, NaN included). ``name`` is a key
    (see field_name)."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if not low <= number <= high:  # also refuses NaN
        raise UserInputError("common.number_between", name=_sentence_start(field_name(name)), low=f"{low:g}",
                             high=f"{high:g}")
    return number


def whole_number(value: object, name: str, minimum: int = 0) -> int:
    """A number box's value as an int; an emptied box (None), NaN or a value below ``minimum`` gets a clear message.
    ``name`` is a key (see field_name)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError("common.whole_number", name=field_name(name)) from None
    if number < minimum:
        raise UserInputError("common.at_least", name=_sentence_start(field_name(name)), minimum=minimum)
    return number


# ----------------------------------------------------------------------------------------------------------------
# Training runs (core/loading/jobs.py): a work budget each, one at a time per browser session, on the "train" concurrency
# group (at most TRAIN_CONCURRENCY runs at once across all users, so light tabs keep the other core).

TRAIN_QUEUE = dict(concurrency_id="train", concurrency_limit=1)  # pass to .click(**TRAIN_QUEUE) for every trainer
TRAINING_STOPPED = {jobs.BUDGET: "common.stopped_budget", jobs.REPLACED: "common.stopped_replaced"}  # keys


@contextlib.contextmanager
def training_run(request: gr.Request | None, seconds: float = jobs.TRAIN_SECONDS):
    """The run's jobs.Budget for a trainer: starting cancels this browser session's previous run."""
    owner = getattr(request, "session_hash", None)
    budget = jobs.TRAINING.start(owner, seconds)
    try:
        yield budget
    finally:
        jobs.TRAINING.finish(owner, budget)


def stopped_note(reason: str | None, seconds: float, done: int, planned: int) -> str:
    """Why a training run ended early, for the learner, in their language ("" if it ran to the end)."""
    if not reason:
        return ""
    return text(TRAINING_STOPPED[reason], seconds=seconds, done=done, planned=planned)


def stopped_error(reason: str, seconds: float, done: int, planned: int) -> UserInputError:
    """The same note as an error to raise (a run stopped before it had a model to show)."""
    return UserInputError(TRAINING_STOPPED[reason], seconds=seconds, done=done, planned=planned)
