"""The kit's few reads of Gradio beyond its public API, in the server package with the rest (serving.py, admission.py,
first_page.py, handlers.py, downloads.py, result_cache.py). Each says why the public API does not do; each is checked
against the pinned Gradio by tests/server/test_gradio_internals.py, which names it when an upgrade changes it.
"""
from __future__ import annotations

import contextvars
import copy
from pathlib import Path

import gradio


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
