"""The one place that sets how figures look and export.

Every tab builds its plotly figures through these helpers, so all tabs share one theme, one font scale
and one colour scale, and every figure's camera button exports a slide-sized PNG (1600×900 at 2× scale).
"""
from __future__ import annotations

import json
import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from core.text.i18n import DEFAULT_LANGUAGE, table, text
from demo.kit.scripts import script
from demo.kit.text_size import label_positions, text_size, wrap_title
from demo.server.gradio_inside import plotly_chunk

# Latin fonts first, then CJK ones, so 中文 titles, tokens and axis labels render as glyphs (not boxes) on screen and
# in the PNG/SVG exports: the SVG keeps this stack in every text's font-family, so a slide tool picks whichever of
# these fonts it has. WenQuanYi Micro Hei is what CI installs (fonts-wqy-microhei, .ci/run); Noto/Source Han, PingFang
# and Microsoft YaHei cover Linux desktops, macOS and Windows. tests/e2e/test_cjk_export.py checks the rendering.
CJK_FONTS = ("'Noto Sans CJK SC'", "'Source Han Sans SC'", "'WenQuanYi Micro Hei'", "'PingFang SC'",
             "'Microsoft YaHei'")
FONT_FAMILY = ", ".join(("Inter", "'Noto Sans'", *CJK_FONTS, "Arial", "sans-serif"))
BASE_FONT_SIZE = 15
TITLE_FONT_SIZE = 19
# Colour scales and colours every reader can tell apart (issue #37): viridis for magnitudes (perceptually uniform,
# readable by the three common colour-vision deficiencies and in grey), ColorBrewer's RdBu for signed values (its
# red-blue pair stays distinct for deuteranopes and protanopes; 0 is white), and Okabe & Ito's eight categorical
# colours, ordered so the first two (blue, vermillion) are the pair most often shown together. Colour never carries
# meaning alone: SlideFigure.to_json gives highlighted bars a hatch, and line series their own dash and marker.
SEQUENTIAL_SCALE = "Viridis"  # attention, probabilities, counts
DIVERGING_SCALE = "RdBu_r"  # signed values (embeddings, gates before the nonlinearity, PE): 0 is white
COLOR_SAFE_SCALES = ("Viridis", "Cividis", "RdBu", "RdBu_r", "PuOr", "PuOr_r")
OKABE_ITO = {"blue": "#0072B2", "vermillion": "#D55E00", "bluish green": "#009E73", "orange": "#E69F00",
             "reddish purple": "#CC79A7", "sky blue": "#56B4E9", "black": "#000000", "yellow": "#F0E442"}
COLORWAY = list(OKABE_ITO.values())
HIGHLIGHT = OKABE_ITO["vermillion"]  # the chosen token, the argmax, the answer span


def tint(colour: str, white: float) -> str:
    """``colour`` (#rrggbb) mixed with ``white`` parts of white (negative: with black), as #RRGGBB."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    mixed = [c + (255 - c) * white if white >= 0 else c * (1 + white) for c in rgb]
    return "#" + "".join(f"{round(c):02X}" for c in mixed)


def diverging_colours(values: Sequence[float], limit: float) -> list[str]:
    """The DIVERGING_SCALE colour of each value on [−limit, limit] (0 white), as plotly's heatmaps would paint it.
    One call for all: plotly validates the scale once per call (and finds a named scale by listing every one), which
    at one call per token was most of the time of a Why view's strips of tokens."""
    from plotly.colors import sample_colorscale

    shares = [0.5 if limit <= 0 else min(max(0.5 + 0.5 * value / limit, 0.0), 1.0) for value in values]
    return sample_colorscale(DIVERGING_SCALE, shares, colortype="rgb") if shares else []


HIGHLIGHT_TINT = tint(HIGHLIGHT, 0.45)  # the inside of a highlighted span
HIGHLIGHT_PATTERN = "/"  # the hatch a highlighted bar gets besides its colour
SERIES_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
SERIES_SYMBOLS = ["circle", "square", "diamond", "x", "cross", "circle-open", "square-open", "diamond-open"]  # 2D and 3D
TITLE_TOP = 34  # px above a figure's title: the modebar's strip (its buttons are 28 px tall at 2 px from the top)
TITLE_WIDTH = 560  # px a title line may take: a plot sharing its row is 600 px wide at 1440 px
AXIS_TITLE_STANDOFF = 10  # px between an axis's tick labels and its title
SLIDE_EXPORT = {"format": "png", "width": 1600, "height": 900, "scale": 2, "filename": "plm-explorer-figure"}

TEMPLATE = go.layout.Template(
    layout=go.Layout(
        font=dict(family=FONT_FAMILY, size=BASE_FONT_SIZE, color="#1f2937"),
        # The title hangs TITLE_TOP px below the figure's top edge: the plotly toolbar (modebar) sits above it there
        # instead of over its words, on a phone too. Long titles are wrapped when the figure is sent (wrap_title).
        title=dict(font=dict(size=TITLE_FONT_SIZE), x=0.02, xanchor="left", yref="container", y=1, yanchor="top",
                   pad=dict(t=TITLE_TOP)),
        colorway=COLORWAY,
        paper_bgcolor="white",
        plot_bgcolor="white",
        margin=dict(l=70, r=30, t=70, b=60),
        # Axis titles keep AXIS_TITLE_STANDOFF px from the tick labels plotly measured (without a standoff plotly
        # guesses the labels' width and drew "unit" over "unit 74"). Linear axes print plain numbers, never SI
        # prefixes ("50μ" reads as a unit, not a probability); log axes print powers of ten (SlideFigure.to_json).
        xaxis=dict(showgrid=False, linecolor="#9ca3af", ticks="outside", automargin=True,
                   title=dict(standoff=AXIS_TITLE_STANDOFF), exponentformat="none", separatethousands=True),
        yaxis=dict(gridcolor="#e5e7eb", linecolor="#9ca3af", automargin=True, zeroline=False,
                   title=dict(standoff=AXIS_TITLE_STANDOFF), exponentformat="none", separatethousands=True),
        hoverlabel=dict(font=dict(family=FONT_FAMILY, size=BASE_FONT_SIZE - 1)),
        legend=dict(bgcolor="rgba(255,255,255,0.8)"),
    )
)
# Every go.Figure() copies the default template into its layout. Making ours the default means each figure, in every
# tab, starts with our look, and skips copying plotly's own (much larger) default template first.
pio.templates["plm_explorer"] = TEMPLATE
pio.templates.default = "plm_explorer"


PLOTLY_CONFIG = {
    "toImageButtonOptions": SLIDE_EXPORT,
    "displaylogo": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


class SlideFigure(go.Figure):
    """A plotly figure whose JSON carries a plotly.js ``config`` and a title that fits.

    Gradio hands ``fig.to_json()`` straight to ``Plotly.react(div, data, layout, config)``, so putting the export
    settings into the JSON makes the camera button download a slide-resolution PNG instead of a screen-sized one.
    A long title is wrapped and given room below the toolbar when the figure is sent, after every change a tab made
    to it. The other margins are plotly's automargin (the template's axes): it grows them to fit the tick labels,
    colour bars and legends, so no label is clipped (tests/kit/test_layout_numbers.py checks every default figure
    keeps it on).
    """

    def to_json(self, pretty: bool = False, engine: str | None = None, **_) -> str:
        figure = self.to_dict()  # what plotly.io.to_json sends, without trace uids
        for trace in figure["data"]:
            trace.pop("uid", None)
        layout = figure["layout"]
        for key, axis in layout.items():  # log axes: 10⁻¹⁵ … 10⁰, not plotly's "1f, 1p, 1n, 1μ"
            if key[:1] in "xy" and key[1:5] == "axis" and isinstance(axis, dict) and axis.get("type") == "log":
                axis.setdefault("exponentformat", "power")
        title_lines = wrap_title(layout, TITLE_WIDTH, TITLE_FONT_SIZE)
        if title_lines:  # the title hangs in the container's top margin, which automargin does not grow for it
            title_height = TITLE_TOP + text_size("<br>".join(title_lines), TITLE_FONT_SIZE)[1] + 12
            margin = layout["margin"] = dict(layout.get("margin") or {})
            margin["t"] = max(margin.get("t", TEMPLATE.layout.margin.t), math.ceil(title_height))
        figure["config"] = PLOTLY_CONFIG
        distinguish_without_colour(figure["data"])
        return pio.json.to_json_plotly(figure, pretty=pretty, engine=engine)


def distinguish_without_colour(traces: list[dict]) -> None:
    """Make what colour says visible without colour, in the sent traces (issue #37): a highlighted bar (the accent
    colour) gets a hatch; of several bar series, each after the first gets its own fill pattern; of several line
    series, each its own dash and marker symbol. Settings a figure made itself are kept."""
    bars = [trace for trace in traces if trace.get("type") == "bar"]
    for number, trace in enumerate(bars):
        marker = trace.setdefault("marker", {})
        pattern = marker.setdefault("pattern", {})
        if "shape" in pattern:
            continue
        colour = marker.get("color")
        if isinstance(colour, (list, tuple)) and HIGHLIGHT in colour:
            pattern["shape"] = [HIGHLIGHT_PATTERN if c == HIGHLIGHT else "" for c in colour]
        elif colour == HIGHLIGHT:
            pattern["shape"] = HIGHLIGHT_PATTERN
        elif len(bars) > 1 and number:
            pattern["shape"] = ["", ".", "x", "-", "+"][number % 5]
        if not pattern.get("shape"):
            marker.pop("pattern")
        else:  # thin dark stripes: a white value label printed on the bar stays readable over them
            pattern.update({"fillmode": "overlay", "fgcolor": "#000000", "fgopacity": 0.35, "size": 10,
                            "solidity": 0.25})
    lines = [trace for trace in traces if trace.get("type") in ("scatter", "scattergl")
             and "lines" in str(trace.get("mode", "lines"))]
    if len(lines) > 1:
        for number, trace in enumerate(lines):
            trace.setdefault("line", {}).setdefault("dash", SERIES_DASHES[number % len(SERIES_DASHES)])
            if "markers" in str(trace.get("mode", "")):
                trace.setdefault("marker", {}).setdefault("symbol", SERIES_SYMBOLS[number % len(SERIES_SYMBOLS)])


def styled(fig: go.Figure, title: str | None = None, height: int | None = None) -> SlideFigure:
    """Set an optional title/height and make the figure export at slide size (the theme is plotly's default
    template from this module, so every figure already has it)."""
    if not isinstance(fig, SlideFigure):
        # Re-class instead of SlideFigure(fig): the constructor deep-copies and re-validates every trace, which was
        # the largest single cost of serving a request under load (py-spy). The two classes differ only in to_json.
        fig.__class__ = SlideFigure
    layout = {key: value for key, value in (("title_text", title), ("height", height)) if value is not None}
    if layout:
        fig.update_layout(**layout)
    return fig


def heatmap(
    values: np.ndarray,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str,
    *,
    colorscale: str = SEQUENTIAL_SCALE,
    zmin: float | None = None,
    zmax: float | None = None,
    zmid: float | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    annotate: bool | None = None,
    value_format: str = ".2f",
    height: int | None = None,
) -> SlideFigure:
    """A labelled heatmap with hover values; small matrices also print their values in the cells."""
    values = np.asarray(values, dtype=float)
    rows, cols = values.shape
    if annotate is None:
        annotate = rows * cols <= 144
    # Plotly merges repeated category labels, so repeated tokens ("the ... the") get invisible position suffixes.
    x = unique_labels(x_labels)
    y = unique_labels(y_labels)
    trace = go.Heatmap(
        z=values,
        x=x,
        y=y,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        hovertemplate=(f"{y_title or text('common.figure_row')}: %{{y}}<br>{x_title or text('common.figure_column')}: "
                       f"%{{x}}<br>{text('common.figure_value')}: %{{z:{value_format}}}<extra></extra>"),
        colorbar=dict(thickness=14),
    )
    if annotate:
        trace.update(texttemplate=f"%{{z:{value_format}}}", textfont=dict(size=BASE_FONT_SIZE - 2))
    # Title, height and axes go to the constructor: one validation pass instead of one per update call (py-spy:
    # the update calls were most of a light handler's time under load).
    fig = go.Figure(trace, layout=dict(
        title_text=title, height=height or max(320, min(900, 110 + 34 * rows)),
        yaxis=dict(autorange="reversed", title_text=y_title, type="category"),
        xaxis=dict(title_text=x_title, type="category", tickangle=-45 if cols > 8 else 0)))
    return styled(fig)


def bar(
    labels: Sequence[str],
    values: Sequence[float],
    title: str,
    *,
    horizontal: bool = True,
    value_title: str | None = None,
    highlight: Sequence[bool] | None = None,
    value_format: str = ".3f",
    height: int | None = None,
) -> SlideFigure:
    """A bar chart of values (top-k predictions, counts); highlighted bars use the accent colour. The value axis is
    "probability" in the learner's language unless ``value_title`` says otherwise."""
    value_title = text("common.figure_probability") if value_title is None else value_title
    labels = unique_labels(labels)
    colors = [HIGHLIGHT if flag else COLORWAY[0] for flag in (highlight or [False] * len(labels))]
    if horizontal:
        trace = go.Bar(x=list(values), y=labels, orientation="h", marker_color=colors,
                       text=[format(v, value_format) for v in values], textposition="auto",
                       hovertemplate=f"%{{y}}: %{{x:{value_format}}}<extra></extra>")
    else:
        trace = go.Bar(x=labels, y=list(values), marker_color=colors,
                       hovertemplate=f"%{{x}}: %{{y:{value_format}}}<extra></extra>")
    if horizontal:
        layout = dict(yaxis=dict(autorange="reversed", type="category"), xaxis=dict(title_text=value_title),
                      height=height or max(300, min(800, 100 + 32 * len(labels))))
    else:
        layout = dict(xaxis=dict(type="category", tickangle=-45 if len(labels) > 10 else 0),
                      yaxis=dict(title_text=value_title), height=height or 420)
    return styled(go.Figure(trace, layout=dict(layout, title_text=title)))


def lines(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    title: str,
    *,
    x_title: str = "",
    y_title: str = "",
    log_y: bool = False,
    height: int = 420,
    legend_below: bool = False,
) -> SlideFigure:
    """One line per named series over a shared x axis (loss curves, gradient norms, PE dimensions).
    ``legend_below`` puts long series names under the plot instead of beside it, where they would squeeze it."""
    traces = [go.Scatter(x=list(x), y=list(y), mode="lines+markers" if len(x) <= 60 else "lines", name=name)
              for name, y in series.items()]
    layout = dict(title_text=title, height=height, xaxis=dict(title_text=x_title),
                  yaxis=dict(title_text=y_title, type="log" if log_y else "linear"))
    if legend_below:
        layout["legend"] = dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0)
    return styled(go.Figure(traces, layout=layout))


def subplot_grid(
    titles: Sequence[str],
    cols: int,
    *,
    horizontal_spacing: float,
    vertical_spacing: float,
    xaxis: dict | None = None,
    yaxis: dict | None = None,
) -> tuple[dict, list[tuple[str, str]]]:
    """The layout of a grid of titled panels, one per title (row-major), and each panel's (xaxis, yaxis) ids.

    Pass the layout to ``go.Figure`` with traces that name their panel's axes; give it a ``height``, which a phone's
    page grows when it stacks the panels in fewer columns. ``make_subplots`` builds the same
    grid through one validated update per panel; for the 8 attention heads that was ~25 ms of a 40 ms handler and
    the largest cost of serving the attention tab under load (py-spy). A plain layout dict is validated once.
    """
    rows = -(-len(titles) // cols)
    width = (1 - horizontal_spacing * (cols - 1)) / cols
    height = (1 - vertical_spacing * (rows - 1)) / rows
    layout: dict = {}
    annotations, refs = [], []
    for i, title in enumerate(titles):
        row, col = divmod(i, cols)
        suffix = str(i + 1) if i else ""  # plotly names the axes x, x2, x3, … (layout keys xaxis, xaxis2, …)
        left, top = col * (width + horizontal_spacing), 1 - row * (height + vertical_spacing)
        layout[f"xaxis{suffix}"] = dict(xaxis or {}, domain=[_fraction(left), _fraction(left + width)],
                                        anchor=f"y{suffix}")
        layout[f"yaxis{suffix}"] = dict(yaxis or {}, domain=[_fraction(top - height), _fraction(top)],
                                        anchor=f"x{suffix}")
        annotations.append(dict(text=title, x=left + width / 2, y=top, xref="paper", yref="paper", xanchor="center",
                                yanchor="bottom", showarrow=False, font=dict(size=BASE_FONT_SIZE + 1)))
        refs.append((f"x{suffix}", f"y{suffix}"))
    layout["annotations"] = annotations
    # for a narrow screen, where assets/figure_head.js gives the grid fewer columns (the panel titles are the first
    # annotations)
    layout["meta"] = {"grid": {"cols": cols, "panels": len(titles), "hs": horizontal_spacing, "vs": vertical_spacing}}
    return layout, refs


def _fraction(value: float) -> float:
    """A domain bound in [0, 1] (the spacing arithmetic can land a hair outside, which plotly rejects)."""
    return min(1.0, max(0.0, round(value, 6)))


def empty_figure(message: str, **fields) -> SlideFigure:
    """A blank figure that says why it is blank (shown before the first run, or when there is nothing to plot).
    ``message`` is a table key, rendered in the current language with ``fields`` (or, until every caller passes a
    key, the words given)."""
    if message in table(DEFAULT_LANGUAGE):
        message = text(message, **fields)
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, font=dict(size=BASE_FONT_SIZE + 1, color="#6b7280"),
                       x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return styled(fig, None, 300)


def unique_labels(labels: Sequence[str]) -> list[str]:
    """Category labels as plotly should show them: made unique with zero-width spaces, which render invisibly, and
    with <, > and & escaped, since plotly reads labels as pseudo-HTML (the NNLM's "</s>" drew as nothing)."""
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        label = str(label).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        count = seen.get(label, 0)
        seen[label] = count + 1
        out.append(label + "\u200b" * count)
    return out


def scatter(
    coords: np.ndarray,
    labels: Sequence[str],
    groups: Sequence[str],
    title: str,
    *,
    highlight: Sequence[bool] | None = None,
    axis_titles: Sequence[str] = ("x", "y", "z"),
    height: int = 620,
) -> SlideFigure:
    """Labelled points in 2D or 3D (embedding projections): one colour and legend entry per group, highlighted
    points drawn larger and in bold; in 2D each label where it covers least of the others (text_size)."""
    coords = np.asarray(coords, dtype=float)
    highlight = list(highlight) if highlight is not None else [False] * len(labels)
    three_d = coords.shape[1] == 3
    sizes = [13 if bold else 8 for bold in highlight]
    positions = None if three_d else label_positions(coords, labels, sizes, BASE_FONT_SIZE)  # no label on another
    traces = []
    for number, group in enumerate(dict.fromkeys(groups)):
        rows = [i for i, g in enumerate(groups) if g == group]
        text = [f"<b>{labels[i]}</b>" if highlight[i] else labels[i] for i in rows]
        marker = dict(size=[sizes[i] for i in rows], color=COLORWAY[number % len(COLORWAY)],
                      symbol=SERIES_SYMBOLS[number % len(SERIES_SYMBOLS)])  # groups differ in shape, not only colour
        common = dict(mode="markers+text", name=group, text=text, marker=marker,
                      textposition="top center" if three_d else [positions[i] for i in rows],
                      hovertemplate="%{text}<extra>" + group + "</extra>")
        xyz = dict(x=coords[rows, 0], y=coords[rows, 1])
        traces.append(go.Scatter3d(**xyz, z=coords[rows, 2], **common) if three_d else go.Scatter(**xyz, **common))
    fig = go.Figure(traces)
    if three_d:
        fig.update_layout(scene=dict(xaxis_title=axis_titles[0], yaxis_title=axis_titles[1],
                                     zaxis_title=axis_titles[2]))
    else:
        fig.update_xaxes(title_text=axis_titles[0], zeroline=False)
        fig.update_yaxes(title_text=axis_titles[1])
    return styled(fig, title, height)


# Evaluating plotly.js is the largest single cost of a page: 1-2.5 s of the browser's main thread on 2 cores. A view
# drawn without plotly (the Overview's path, demo/kit/static_html.py) starts that import once it is on screen and the
# browser is idle, so the learner's first plotted view does not pay it. The module is imported by the same address
# as Gradio's own import (beside Gradio's main script), so the browser evaluates it once and Gradio's import reuses it.
PLOTLY_CHUNK = plotly_chunk()
PLOTLY_PRELOAD_JS = script("plotly_preload", CHUNK=json.dumps(PLOTLY_CHUNK)) if PLOTLY_CHUNK else ""
