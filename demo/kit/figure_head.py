"""The script every page loads for its plotly figures (app.py passes :data:`HEAD` to ``launch(head=...)``).

Gradio draws each figure with ``Plotly.react(div, data, layout, config)``, where ``config`` comes from the figure's
JSON (demo/kit/figures.py's SlideFigure). What the JSON cannot carry (JavaScript functions, the page's theme and language)
this script adds in the browser, by wrapping ``Plotly.react``:

- **PNG and SVG export**: for every figure with our slide-size ``toImageButtonOptions``, the camera button
  (plotly's own, replaced) and an SVG button beside it download the figure at slide size, as the server laid it
  out: a phone's re-layout (below) is not exported, so a phone saves the PNG a laptop saves;
- **中文 modebar**: plotly's own button texts in the page's language (``common.plotly_*``);
- **a text alternative** (issue #37): the figure gets ``role="figure"`` and an ``aria-label`` naming its title and
  summing up its numbers (a heatmap's size and range, a bar chart's bars, a line chart's series), and a "Data"
  modebar button shows every number of the figure as a table below it, one click away (and hides it again);
- **keyboard**: the modebar's buttons are reached with Tab and pressed with Enter or Space, and the modebar shows
  while one of them has the focus (assets/style.css);
- **dark mode** (``?__theme=dark``): the figure is drawn on the page's dark block colour with light text, axes and
  grid (a dark plotly template); the heatmap scales and the Okabe–Ito colours read on both;
- **narrow plots** (a phone, a tablet's column): text_size.wrap_title wraps a title for a laptop's plot (560 px a
  line); each line wider than the plot is wrapped again when the figure is drawn. A grid of small panels
  (figures.subplot_grid) takes fewer columns, one on a phone. A row of column labels (``layout.meta.column_labels``,
  the attention map's H1…H12) shows every k-th label where they would overlap. A legend beside a plot it would
  squeeze under 260 px goes under it, in rows; so does a heatmap's one colour bar, laid across the plot's width.
  The figure grows by what it adds. At any width, point labels that plotly would cut off at the plot's edge (its
  autorange makes room for markers, not text) widen the axes until they are inside; the export keeps plotly's own
  ranges.
  A figure whose width changes (a tablet turned upright, a window narrowed, a tab first opened) is drawn again from
  the layout it was sent with when its narrow layout changes (tests/e2e/test_layout.py).
"""
from __future__ import annotations


from core.text.i18n import LANGUAGES, table, text
from core.loading.paths import ASSETS_DIR
from demo.kit.scripts import compact, inline_json

# Dark template colours: text slate-200 on the block's own background, axes slate-500, grid slate-700.
DARK = {"ink": "#e2e8f0", "axis": "#64748b", "grid": "#334155", "paper": "#1e293b"}
ACCESS_KEYS = ["data_button", "data_caption", "data_first", "data_row", "data_label", "summary_heatmap", "summary_bars", "summary_lines",
               "summary_points"]

SCRIPT = ASSETS_DIR / "figure_head.js"


def _config() -> dict:
    """What the script reads from ``window.plmFigureConfig``: its words in both languages and the dark colours."""
    return {"titles": {lang: text("common.svg_button", lang) for lang in LANGUAGES},
            "plotlyZh": {text(key, "en"): text(key, "zh") for key in table("en") if key.startswith("common.plotly_")},
            "access": {lang: {key: text(f"common.figure_access.{key}", lang) for key in ACCESS_KEYS}
                       for lang in LANGUAGES},
            "dark": DARK}


def head() -> str:
    """The <head> script: the config, then assets/figure_head.js without its comments and indentation (inline: it
    must wrap ``Plotly.react`` before Gradio loads plotly.js)."""
    data = inline_json(_config())
    return "<script>\nwindow.plmFigureConfig = " + data + ";\n" + compact(SCRIPT) + "\n</script>"


HEAD = head()
