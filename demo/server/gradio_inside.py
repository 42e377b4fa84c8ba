"""The kit's few reads of Gradio beyond its public API, in the server package with the rest (serving.py, admission.py,
first_page.py, handlers.py, downloads.py, result_cache.py). Each says why the public API does not do; each is checked
against the pinned Gradio by tests/server/test_gradio_internals.py, which names it when an upgrade changes it.
"""
from __future__ import annotations

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
