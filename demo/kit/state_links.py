"""Links that restore exactly what was on screen, and what a slide says about it (issue #54).

A view's state is the values of its inputs (demo/presets.View.inputs: the learner's text, sliders, choices, the
model id, the seed). A state link carries the ones that differ from the view's default preset, as JSON keyed by the
input's place in ``View.inputs``, and the page's language:

    ?tab=attention&view=steps&lang=zh&in={"0":"我 爱 你","4":false}

Nothing is stored on the server: the link is the state. Each value is checked against its component (a slider's
range, a choice among the choices, a text's length, a table's shape): a forged or broken parameter opens the view at
its defaults with one message saying so (``deck.link_broken``), never an error. A link stays under
:data:`LINK_LIMIT` characters; longer inputs are refused with a message that says how long the text may be.

The inputs are the app's own components, read when the app is built; nothing here lists a view's fields by hand. The
same reading makes a slide's caption (:func:`caption`: input text, model id and where it came from, the settings that
differ from the defaults, the seed) and its speaker notes (:func:`notes`: what the tour or the lesson says to look
at, and the seed §).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import replace
from urllib.parse import parse_qsl, quote

import gradio as gr

from core.text.errors import UserInputError
from core.text.i18n import table, text
from core.text.i18n import language_of
from demo.kit.preset_records import ASKED
from demo.server.gradio_inside import is_translation

LINK_LIMIT = 2000  # characters of a whole link, the address included: what every browser, chat and LMS keeps
ADDRESS_ALLOWANCE = 120  # what the app's own address may take of it (https://….hf.space/)
CAPTION_TEXT = 200  # characters of the input text a caption quotes, then "…"
MAX_TABLE_CELLS = 64 * 64
NOT_LINKED = (gr.State, gr.Markdown, gr.HTML, gr.File, gr.Image, gr.Plot)  # shown or kept, not typed by the learner


class BrokenLink(ValueError):
    """A link's parameter that cannot be used: "<parameter>: <why>" (the parameter goes into ``deck.link_broken``)."""


# -- values ---------------------------------------------------------------------------------------------------------

def linked(component) -> bool:
    return not isinstance(component, NOT_LINKED)


def plain(value):
    """A component's value as JSON holds it (a table as its rows)."""
    if type(value).__name__ == "DataFrame":  # pandas (not imported here for a check: gradio already has)
        value = value.values.tolist()
    if isinstance(value, dict) and "data" in value:  # a Dataframe's value as the front end sends it
        value = value["data"]
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value


def _choices(component) -> list:
    return [c[1] if isinstance(c, (tuple, list)) else c for c in (component.choices or [])]


def _number(raw, name: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise BrokenLink(f"{name}: not a number")
    return raw


def decode(component, raw, default, name: str):
    """``raw`` (from a link's JSON) as a value of ``component``, or :class:`BrokenLink`."""
    if isinstance(component, gr.Checkbox):
        if not isinstance(raw, bool):
            raise BrokenLink(f"{name}: not true or false")
        return raw
    if isinstance(component, gr.Slider):
        value = _number(raw, name)
        if not component.minimum <= value <= component.maximum:
            raise BrokenLink(f"{name}: outside {component.minimum:g} to {component.maximum:g}")
        return int(value) if float(component.step or 1).is_integer() and float(value).is_integer() else value
    if isinstance(component, gr.Number):
        value = _number(raw, name)
        low, high = component.minimum, component.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            raise BrokenLink(f"{name}: out of range")
        return int(value) if component.precision == 0 else value
    if isinstance(component, (gr.Radio, gr.Dropdown)) and not getattr(component, "allow_custom_value", False):
        choices = _choices(component)
        if getattr(component, "multiselect", False):
            if not isinstance(raw, list) or any(v not in choices for v in raw):
                raise BrokenLink(f"{name}: not among the choices")
            return raw
        if raw not in choices:
            raise BrokenLink(f"{name}: not among the choices")
        return raw
    if isinstance(component, gr.Dataframe):
        if (not isinstance(raw, list) or not all(isinstance(r, list) for r in raw) or not raw
                or len(raw) * max(len(r) for r in raw) > MAX_TABLE_CELLS
                or any(not isinstance(v, (int, float, str)) or isinstance(v, bool)
                       or (isinstance(v, str) and len(v) > 60) or (isinstance(v, float) and not math.isfinite(v))
                       for r in raw for v in r)):
            raise BrokenLink(f"{name}: not a table")
        if len({len(r) for r in raw}) != 1:
            raise BrokenLink(f"{name}: not a rectangle")
        if type(default).__name__ == "DataFrame":  # the handler reads what the view's presets give it
            import pandas as pd

            width, columns = len(raw[0]), list(default.columns)
            prefix = re.sub(r"\d+$", "", str(columns[0])) if columns else ""
            names = columns if len(columns) == width else [f"{prefix}{j + 1}" for j in range(width)]
            return pd.DataFrame(raw, columns=names)
        return raw
    # a text: the learner's own, or a model id (a picker accepting any id checks it when it runs)
    if not isinstance(raw, str):
        raise BrokenLink(f"{name}: not a text")
    limit = getattr(component, "max_length", None) or LINK_LIMIT
    if len(raw) > limit or re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", raw):
        raise BrokenLink(f"{name}: too long or not plain text")
    return raw


# -- links ----------------------------------------------------------------------------------------------------------

def defaults(view) -> tuple:
    return view.presets[view.default].resolved()


def changed(view, values) -> dict[str, object]:
    """The linked inputs whose values differ from the view's default preset, by their place in ``view.inputs``."""
    out = {}
    for index, (component, value, default) in enumerate(zip(view.inputs, values, defaults(view))):
        if linked(component) and plain(value) != plain(default):
            out[str(index)] = plain(value)
    return out


def compact(value):
    """A value as the link writes it: 1.0 as 1 (a matrix of whole numbers is half as long); decode reads both."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, list):
        return [compact(v) for v in value]
    return value


def state_link(view, values, lang: str) -> str:
    """The relative link that reopens ``view`` with ``values`` in ``lang``; a clear UserInputError past
    :data:`LINK_LIMIT`, saying how many characters of text fit."""
    link = f"?tab={view.tab}&view={view.key}&lang={lang}"
    values = complete(view, values)
    state = {key: compact(value) for key, value in changed(view, values).items()}
    if state:
        link += "&in=" + quote(json.dumps(state, ensure_ascii=False, separators=(",", ":")), safe=":,{}[]\"",
                               errors="replace")  # a lone surrogate (no character) becomes "?"
    if len(link) + ADDRESS_ALLOWANCE > LINK_LIMIT:
        texts = [v for v in state.values() if isinstance(v, str)]
        encoded = sum(len(quote(v)) for v in texts) or 1
        room = max(0, LINK_LIMIT - ADDRESS_ALLOWANCE - (len(link) - encoded))
        chars = int(room * sum(len(v) for v in texts) / encoded) if texts else 0
        raise UserInputError("deck.link_too_long", length=len(link) + ADDRESS_ALLOWANCE, limit=LINK_LIMIT, chars=chars)
    return link


def restore(view, raw: str | None) -> tuple:
    """The values a link's ``in=`` JSON asks ``view`` for (its defaults where it says nothing), or BrokenLink."""
    values = list(defaults(view))
    if not raw:
        return tuple(values)
    try:
        state = json.loads(raw)
    except (ValueError, RecursionError):
        raise BrokenLink("in: not JSON") from None
    if not isinstance(state, dict):
        raise BrokenLink("in: not a set of inputs")
    for key, value in state.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) < len(view.inputs)):
            raise BrokenLink(f"in: no input {key[:12]!r}")
        component = view.inputs[int(key)]
        if not linked(component):
            raise BrokenLink(f"in: input {key} is not set by links")
        values[int(key)] = decode(component, value, values[int(key)], f"input {key}")
    return tuple(values)


# -- captions and notes ---------------------------------------------------------------------------------------------

def words(value, lang: str) -> str:
    """A component's label (a gr.I18n key or a plain string) in ``lang``."""
    if is_translation(value):
        return table(lang).get(value.key, value.key)
    return str(value or "")


def shorten(value: str, limit: int = CAPTION_TEXT) -> str:
    value = " ".join(str(value).split())
    return value if len(value) <= limit else value[:limit - 1] + "…"


def _shown(value) -> str:
    value = plain(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return shorten(json.dumps(value, ensure_ascii=False), 60)
    return shorten(str(value), 60)


def model_origin(model_id: str, lang: str) -> str:
    """Where a checkpoint comes from, as the model badge says it once loaded; else the id alone."""
    from demo.server.handlers import loaded_models

    badge = next((b for b in loaded_models() if model_id and model_id in b), "")
    return badge or model_id


def complete(view, values) -> tuple:
    """``values`` for every input of ``view``: an API call may send fewer (the rest are the defaults) or more."""
    return tuple(values[:len(view.inputs)]) + tuple(defaults(view)[len(values):])


def caption(view, values, lang: str) -> str:
    """What made the view's result: input text, model, settings that differ from the defaults, seed."""
    values = complete(view, values)
    parts, settings = [], []
    texts, models = [], []
    for index, (component, value, default) in enumerate(zip(view.inputs, values, defaults(view))):
        if not linked(component) or value is None or (isinstance(value, str) and not value.strip()):
            continue
        if hasattr(component, "checkpoint_task"):
            models.append(model_origin(str(value), lang))
        elif index == view.seed_index:
            continue
        elif isinstance(component, gr.Textbox) and isinstance(value, str):
            texts.append(value)
        elif plain(value) != plain(default):
            settings.append(f"{words(component.label, lang) or index} = {_shown(value)}")
    if texts:
        parts.append(text("deck.caption_input", lang, value=shorten(" · ".join(texts))))
    if models:
        parts.append(text("deck.caption_model", lang, value=", ".join(models)))
    parts.append(text("deck.caption_settings", lang, value="; ".join(settings)) if settings
                 else text("deck.caption_defaults", lang))
    if view.seed_index is not None:
        parts.append(text("deck.caption_seed", lang, value=values[view.seed_index]))
    return "  ·  ".join(parts)


def markdown_to_text(value: str) -> str:
    value = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", value)  # [words](link) → words
    return re.sub(r"[*_`]{1,2}", "", value).replace("$", "")


def notes(view, lang: str, slug: str = "", guide: dict | None = None) -> str:
    """Speaker notes: what the tour (or else the lesson) says to look at in this view, and its seed §."""
    guide = guide or {}
    said = guide.get((view.tab, view.key, slug)) or guide.get((view.tab, view.key, None))
    section = (view.presets.get(slug) or view.presets[view.default]).section
    lines = [markdown_to_text(said(lang))] if said else []
    if section:
        lines.append(text("deck.notes_section", lang, section=section.lstrip("§")))
    return "\n".join(lines)


def title(view, lang: str) -> str:
    """A slide's title: the tab's name, and the sub-tab's when the view has one."""
    name = text(f"tabs.{view.tab}", lang)
    if view.where is not None:
        name += " · " + words(view.where.label, lang)
    return name


# -- opening a link (demo/presets.Registry: its deep-link events) ----------------------------------------------------

def where_to(registry, tabs, search: str, request: gr.Request = None) -> dict:
    """A link's first answer, at once: its tab and sub-tab, selected before its view computes (a minute, for a
    trainer: ``?tab=embeddings&preset=nnlm-moby`` left the learner on the Overview while the NNLM trained)."""
    query = dict(parse_qsl(str(search or "").lstrip("?")[:LINK_LIMIT]))
    tab_id = query.get("tab")
    if tab_id not in registry.tabs:
        return {tabs: gr.skip()}
    updates: dict = {tabs: gr.Tabs(selected=tab_id)}
    view = registry.find(tab_id, query.get("preset")) if query.get("preset") else None
    if view is None and query.get("view") is not None:
        view = next((v for v in registry.tabs[tab_id].views if v.key == query.get("view")), None)
    if view is not None and view.switcher is not None:
        preset = view.presets.get(query.get("preset") or "")
        updates[view.switcher] = gr.Tabs(selected=(preset.shows if preset else "") or view.where.id)
        ASKED.mark(view, request)  # an open event the selection fires leaves the view to the link
    return updates


def open_link(registry, tab_id: str, query: dict, request=None) -> dict:
    """The updates for ``?tab=…&view=…&in=…``: the view with the link's inputs, computed. A link that cannot be used
    opens the view (or, naming no view of the tab, the tab) at its defaults, with one message."""
    view = next((v for v in registry.tabs[tab_id].views if v.key == query.get("view")), None)
    try:
        if view is None:
            raise BrokenLink("view: no such view in this tab")
        values = restore(view, query.get("in"))
    except BrokenLink as broken:
        # the parameter that failed ("view", "in", "input 3"), not the English reason: the message is the learner's
        gr.Warning(text("deck.link_broken", language_of(request), detail=str(broken).split(":")[0][:40]))
        if view is None:
            return {u: v for opened in registry.opening(tab_id) for u, v in opened.run_default(request).items()}
        values = defaults(view)
    ASKED.mark(view, request)
    key = hashlib.sha256(json.dumps(plain(list(values)), default=str).encode()).hexdigest()[:16]
    return view.run_preset(replace(view.presets[view.default], slug=f"link:{key}", values=tuple(values)),
                           select=True)
