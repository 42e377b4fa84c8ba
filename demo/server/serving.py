"""How the app serves many users at once: readable API errors, a fair queue, and cleaned-up uploads.

``serve(app)`` applies all of it to the built gr.Blocks; ``build_app`` in app.py calls it.

* **API errors.** Gradio's own messages for a malformed API call name Python objects
  (``<gradio.components.dropdown.Dropdown object at 0x…>``, ``Original error: TypeError``). ``guard_api`` checks the
  number of values first and, when a value cannot be read, says which parameter (by its API name) and what it wants.
  Text longer than its box's cap is refused before any handler runs (``check_caps``).
* **Queue fairness:** demo/server/admission.py (per address and per session; one training run per page).
* **Uploads.** DELETE_CACHE goes to gr.Blocks(delete_cache=...): Gradio deletes cached uploads once that old.
* **Per-block work.** Gradio inspects a component class's ``__init__`` for every component it constructs and for
  every block each time it builds a config: three times at start, and once per new browser session (its copy of
  the ~1,000 blocks' config). ``remember_signatures`` reads each class's signature once, and
  ``remember_data_schemas`` builds each data model's JSON schema once instead of once per component.
* **A new session's configs on demand.** Gradio's ``SessionState`` builds every block's config for each new
  browser session (a copy Gradio's own deep links read, ``SessionState.components``): about 0.1 s of CPU per page
  load with the ~1,000 blocks, the largest part of a page's load event for a class arriving at once.
  ``lazy_session_configs`` builds each only when Gradio asks for it (all of them when ``components`` is read).
* **A light first page:** demo/server/first_page.py (compression, one translation table per page, and a HEAD of
  the page answered without building it, which keeps launch()'s 3 s check of its own server met on busy cores).
"""
from __future__ import annotations

import copy
import functools
import inspect
import re
from typing import Any

import gradio as gr
import gradio.blocks
import gradio.component_meta
import gradio.components.base

from core.text.errors import UserInputError, echo
from core.text.limits import MAX_CUSTOM_CHOICE_CHARS
from core.text.i18n import text, using_language
from demo.server import admission
from demo.server.admission import client_error
from demo.server.handlers import EVENT_REQUEST, UnreadableValue, component_name

QUEUE_MAX_SIZE = 1024  # the whole queue; one session fills at most admission.MAX_EVENTS_PER_SESSION of it
# Gradio keeps the files it cached (uploads, generated files) until the server stops unless told otherwise;
# here: checked every 10 minutes, deleted once older than an hour.
DELETE_CACHE = (600, 3600)


# Messages (keys into assets/i18n/*.yaml, section common), in the language of the request that caused them.
WRONG_ARITY = "common.api_wrong_arity"
BAD_VALUE = "common.api_bad_value"
_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>")


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


def _wants(component) -> str:
    """What a component accepts, in words (in the current language)."""
    if isinstance(component, gr.Slider):
        return text("common.wants_number_range", low=f"{component.minimum:g}", high=f"{component.maximum:g}")
    if isinstance(component, (gr.Dropdown, gr.Radio)):
        values = [value for _, value in component.choices]
        shown = ", ".join(repr(v) for v in values[:8]) + (", …" if len(values) > 8 else "")
        return text("common.wants_one_of", values=shown) if values else text("common.wants_text_value")
    if isinstance(component, gr.Checkbox):
        return text("common.wants_bool")
    if isinstance(component, gr.Number):
        return text("common.wants_number")
    if isinstance(component, (gr.File, gr.UploadButton)):
        return text("common.wants_file")
    if isinstance(component, gr.Dataframe):
        return text("common.wants_table")
    if isinstance(component, gr.Textbox):
        return text("common.wants_text")
    return text("common.wants_other", kind=type(component).__name__)


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


def _readable(message: str, payload: object = None) -> str:
    """Gradio's refusal without object reprs; the refused value, which it repeats, cut as our own messages cut it."""
    message = _REPR.sub("a component", message)
    if isinstance(payload, str) and payload and payload != echo(payload):
        message = message.replace(payload, echo(payload))
    return message if len(message) <= 300 else message[:300] + "…"


def _bad_value(names: list[str], block_fn, inputs: list, exc: Exception) -> gr.Error:
    """Find the first input the components refuse and name it; Gradio's text never reaches the client."""
    from demo.server.handlers import preprocess_payload

    for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
        if getattr(component, "stateful", False) or isinstance(component, (gr.State, gr.File, gr.UploadButton)):
            continue
        try:
            preprocess_payload(component, payload)
        except Exception as refused:  # noqa: BLE001
            if isinstance(refused, gr.Error) and not isinstance(refused, UnreadableValue):  # says why: keep it
                reason = text("common.api_refused", message=_readable(str(refused.message), payload),
                              wants=_wants(component))
            else:
                reason = text("common.api_expected", wants=_wants(component), given=type(payload).__name__)
            return client_error(text(BAD_VALUE, name=names[index], reason=reason))
    return client_error(text(BAD_VALUE, name=", ".join(names) or text("common.api_the_input"),
                       reason=text("common.api_unreadable", error=type(exc).__name__)))


def guard_api(app: gr.Blocks) -> gr.Blocks:
    """Make malformed API calls get a short message naming the parameter (see module docstring)."""
    preprocess_data = app.preprocess_data
    parameter_names = api_parameter_names(app)

    @functools.wraps(preprocess_data)
    async def checked(block_fn, inputs: list[Any], state, explicit_call: bool = False):
        if not isinstance(inputs, list) or len(inputs) != len(block_fn.inputs):
            names = ", ".join(parameter_names(block_fn)) or text("common.api_no_parameters")
            if isinstance(inputs, list):
                message = text(WRONG_ARITY, expected=len(block_fn.inputs), names=names, got=len(inputs))
            else:
                message = text("common.api_not_a_list", expected=len(block_fn.inputs), names=names)
            raise client_error(message)
        names = None
        for index, (component, payload) in enumerate(zip(block_fn.inputs, inputs)):
            if not getattr(component, "stateful", False) and _wrong_type(component, payload):
                names = names or parameter_names(block_fn)
                reason = text("common.api_expected", wants=_wants(component), given=type(payload).__name__)
                raise client_error(text(BAD_VALUE, name=names[index], reason=reason))
        try:  # text over its box's cap never reaches a handler, whoever sent it (check_caps)
            check_caps(block_fn.inputs, inputs)
        except UserInputError as too_long:
            raise client_error(too_long.message()) from None
        try:
            return await preprocess_data(block_fn, inputs, state, explicit_call)
        except Exception as exc:  # noqa: BLE001 - gr.Error from a component included: it does not say which input
            raise _bad_value(parameter_names(block_fn), block_fn, inputs, exc) from None

    app.preprocess_data = checked
    process_api = app.process_api

    @functools.wraps(process_api)
    async def in_language(*args, **kwargs):
        """Run the event's API processing (and so ``checked`` above) in the language of its request, with the
        request in handlers.EVENT_REQUEST."""
        from demo.kit.i18n import language_of

        request = kwargs.get("request")
        if isinstance(request, list):  # a batch: its requests come from one page
            request = request[0] if request else None
        token = EVENT_REQUEST.set(request)
        try:
            with using_language(language_of(request)):
                return await process_api(*args, **kwargs)
        finally:
            EVENT_REQUEST.reset(token)

    app.process_api = in_language
    return app


def _remembered(read):
    """``read`` (an inspect function of one callable) answered from an LRU of 4,096 callables; an unhashable
    callable is read each time (and a non-callable gets inspect's own TypeError)."""
    cached = functools.lru_cache(maxsize=4096)(read)

    @functools.wraps(read)
    def remembered(obj, *args, **kwargs):
        try:
            return cached(obj, *args, **kwargs)
        except TypeError:
            return read(obj, *args, **kwargs)

    remembered.cache_info = cached.cache_info
    return remembered


class _RememberedSignatures:
    """The ``inspect`` module as Gradio's blocks and component modules see it, with ``signature()`` and
    ``getfullargspec()`` remembered per callable. Gradio reads a component class's ``__init__`` signature for every
    block in every config it builds, and its argument spec for every component it constructs; a class's signature
    never changes. Bounded: Gradio asks about component classes and, in error messages, bound methods. Callers only
    read what is returned (a FullArgSpec holds lists: they must not be changed)."""

    def __init__(self):
        self.signature = _remembered(inspect.signature)
        self.getfullargspec = _remembered(inspect.getfullargspec)

    def __getattr__(self, name: str):
        return getattr(inspect, name)


def remember_signatures() -> None:
    """Call before building the app: from then on Gradio reads each class's signature once. Building the app took
    0.93–0.95 CPU s instead of 1.23–1.29; a config build, or a new browser session's copy of it, 0.06 s instead of
    0.11 (benchmarks/README.md, issue #38's fifth round)."""
    remembered = _RememberedSignatures()  # one cache for both modules
    for module in (gradio.blocks, gradio.component_meta):
        if module.inspect is inspect:
            module.inspect = remembered


def remember_data_schemas() -> None:
    """Call before building the app: from then on Gradio builds each data model's JSON schema once.

    ``Component.api_info`` builds the (pydantic) schema of the component's data model once per component, for the
    first config. The app's 75 plots, 44 tables, 6 highlighted texts and 5 file boxes share 4 models; each
    component still gets its own copy, as before. Building the app took 0.2 CPU s less (benchmarks/README.md, issue
    #38, seventh round)."""
    component = gradio.components.base.Component
    if getattr(component.api_info, "remembers_schemas", False):
        return
    build = component.api_info
    schemas: dict[type, dict[str, Any]] = {}  # bounded by the data model classes Gradio defines

    @functools.wraps(build)
    def api_info(self) -> dict[str, Any]:
        if self._api_info_cache is None and self.data_model is not None:
            if self.data_model in schemas:
                self._api_info_cache = copy.deepcopy(schemas[self.data_model])
            else:  # the first of its model: Gradio builds it, and a copy is kept for the others
                schemas[self.data_model] = copy.deepcopy(build(self))
        return build(self)

    api_info.remembers_schemas = True
    component.api_info = api_info


class ConfigsOnDemand(dict):
    """``SessionState.config_values``, filled as Gradio asks: a key it reads or writes by itself (``in``, ``[]``) as
    Gradio does it; anything that walks the whole dict (``components``) first gets every block's config, as Gradio
    made them in ``__init__``."""

    def __init__(self, blocks_config, ids):
        super().__init__()
        self._config, self._ids = blocks_config, ids

    def _fill(self) -> None:
        for key, block in self._config.blocks.items():
            if key in self._ids and not dict.__contains__(self, key):
                dict.__setitem__(self, key, self._config.config_for_block(key, [], block))

    def items(self):
        self._fill()
        return super().items()

    def values(self):
        self._fill()
        return super().values()

    def keys(self):
        self._fill()
        return super().keys()

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self) -> int:
        self._fill()
        return super().__len__()


class _NoBlocks:
    """What ``SessionState.__init__`` reads of the app (its default config, its blocks), with no blocks: its loop
    over every block's config then makes none."""
    blocks: dict = {}

    def __init__(self, app):
        self.default_config = app.default_config


def lazy_session_configs() -> None:
    """Reaches inside Gradio: ``gradio.state_holder.SessionState.__init__(blocks)``
    (tests/server/test_gradio_internals.py names it). Gradio's own ``__init__`` runs, on an app of no blocks; its
    configs are then made on demand."""
    from gradio import state_holder

    init = state_holder.SessionState.__init__
    if getattr(init, "configs_on_demand", False):
        return

    @functools.wraps(init)
    def __init__(self, blocks):
        init(self, _NoBlocks(blocks))
        self.config_values = ConfigsOnDemand(self.blocks_config, blocks.blocks)

    __init__.configs_on_demand = True
    state_holder.SessionState.__init__ = __init__


def serve(app: gr.Blocks, per_address: int = admission.MAX_EVENTS_PER_ADDRESS) -> gr.Blocks:
    """Everything above, applied to the built app (call after ``app.queue(...)``), and the queue's admission
    (demo/server/admission.py: per address, then per session)."""
    guard_api(app)
    typed_choices(app)
    admission.admit(app, per_address)
    lazy_session_configs()
    return app
