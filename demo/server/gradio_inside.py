"""Gradio's insides that the kit reads, and the patches that make Gradio's per-block work cheaper; in the server
package with the other reaches inside (serving.py, first_page.py, handlers.py, downloads.py, result_cache.py). Each
says why the public API does not do; each is checked against the pinned Gradio by
tests/server/test_gradio_internals.py, which names it when an upgrade changes it.

* **Per-block work.** Gradio inspects a component class's ``__init__`` for every component it constructs and for
  every block each time it builds a config: three times at start, and once per new browser session (its copy of
  the ~1,000 blocks' config). ``remember_signatures`` reads each class's signature once, and
  ``remember_data_schemas`` builds each data model's JSON schema once instead of once per component.
* **A new session's configs on demand.** Gradio's ``SessionState`` builds every block's config for each new
  browser session (a copy Gradio's own deep links read, ``SessionState.components``): about 0.1 s of CPU per page
  load with the ~1,000 blocks, the largest part of a page's load event for a class arriving at once.
  ``lazy_session_configs`` builds each only when Gradio asks for it (all of them when ``components`` is read).
"""
from __future__ import annotations

import contextvars
import copy
import functools
import inspect
import types
from pathlib import Path
from typing import Any

import gradio
import gradio.blocks
import gradio.component_meta
import gradio.components.base


_TRANSLATION = type(gradio.I18n()("key"))  # what gr.I18n(...)(key) returns: a class Gradio does not export


def is_translation(value) -> bool:
    """Whether ``value`` is what ``gr.I18n(...)(key)`` returns (a label the page translates), not a plain string."""
    return isinstance(value, _TRANSLATION)


def plotly_chunk() -> str | None:
    """The file name of Gradio's plotly.js chunk (``PlotlyPlot-<hash>.js``, 4.6 MB) in its built front end, which its
    Plot component imports the first time a page draws a plotly figure; None if this Gradio ships no single such file.
    Read from Gradio's package folder: the front end's file names are not an API."""
    found = sorted((Path(gradio.__file__).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    return found[0].name if len(found) == 1 else None


_PLOT_DATA = None  # what gr.Plot().postprocess(figure) returns: a class Gradio does not export, read on first use


def plot_json(value) -> str | None:
    """A plotly figure's JSON as a Plot output holds it after postprocessing (its ``plot``), for the teacher's
    one-click decks (demo/kit/teacher.py); None for any other value."""
    global _PLOT_DATA
    if _PLOT_DATA is None:
        import plotly.graph_objects as go

        _PLOT_DATA = type(gradio.Plot().postprocess(go.Figure()))
    return value.plot if isinstance(value, _PLOT_DATA) else None


# The learner's language while Gradio makes the page or /config for them (first_page.PageLanguage sets it); None
# elsewhere.
PAGE_LANGUAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("plm_page_language", default=None)


class PerLanguage(dict):
    """``{language: value}`` in every language, for what the browser renders itself (a gr.HTML's props: the preset
    bars, lessons, the tour, the Overview's figures); a page or /config made for one learner carries only their
    language's value. The page's script picks the same language (``navigator.language``, which PageWords sets from
    the same choice), and the language toggle reloads the page.

    Gradio keeps a gr.HTML's props as they were given and deep-copies the app's config for each page and /config
    (``get_page_config``; tests/server/test_gradio_internals.py checks it): that copy is where the other languages are
    left out. Anywhere else (the config stored at launch, a handler's update) it is every language."""

    def __deepcopy__(self, memo):
        lang = PAGE_LANGUAGE.get()
        if lang is None or lang not in self:
            return PerLanguage({code: copy.deepcopy(value, memo) for code, value in self.items()})
        return {lang: copy.deepcopy(self[lang], memo)}


# ----------------------------------------------------------------------------------------------------------------
# Gradio's per-block work, done once (serving.serve and app.build_app apply these)


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


class _RememberedSignatures(types.ModuleType):
    """The ``inspect`` module as Gradio's blocks and component modules see it, with ``signature()`` and
    ``getfullargspec()`` remembered per callable. Gradio reads a component class's ``__init__`` signature for every
    block in every config it builds, and its argument spec for every component it constructs; a class's signature
    never changes. Bounded: Gradio asks about component classes and, in error messages, bound methods. Callers only
    read what is returned (a FullArgSpec holds lists: they must not be changed). Every other name is inspect's own,
    copied in, so reading one (``inspect.iscoroutinefunction`` on every event) runs none of our code."""

    def __init__(self):
        super().__init__(inspect.__name__, inspect.__doc__)
        self.__dict__.update(vars(inspect))
        self.signature = _remembered(inspect.signature)
        self.getfullargspec = _remembered(inspect.getfullargspec)


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
