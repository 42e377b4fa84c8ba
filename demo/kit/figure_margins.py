"""Reserve each figure's margins on the server, so that plotly.js draws it once (issue #18: first paint).

With ``automargin`` on (our template's default), plotly.js draws a figure, measures its tick labels, colour bars
and legends, and where they do not fit the margins the figure declared, it grows the margins and draws the whole
figure again. Of the 218 figures the app's presets draw, 101 were drawn twice with the template's margins; with the
margins reserved here, none is. Drawing all 218 in headless Chromium took 3.7 s of JavaScript with the template's
margins (2.4 s of it for those 101) and 2.3 s with reserved ones (1.1 s); on a first, cold pass 5.7 s and 3.2 s.

So before a figure is sent, :func:`reserved_margins` estimates what plotly would grow each margin to, from the
figure's own labels, and declares that. automargin stays on: where an estimate falls short (a wider font, a wider
window than assumed below), plotly grows the margin as before, at the old cost; nothing is ever clipped. An estimate
too large is worse: an empty gutter beside the plot in every screenshot. So the estimates follow plotly's layout
rules, with constants measured in Chromium (the names say which), and text widths from a per-character table in em.
tests/e2e/test_figure_margins.py draws every preset's figures in Chromium and checks both ways of missing.
"""
from __future__ import annotations

import html
import math
import re
import string
import unicodedata
from typing import Sequence

import numpy as np

FULL_PLOT_WIDTH = 1216  # px; a full-width gr.Plot in a 1280-1535 px window: colour bars and legends at x = 1.02
HALF_PLOT_WIDTH = 600  # px; a plot sharing its row: where horizontal legends wrap and crowded x tick labels turn
TAGS = re.compile(r"</?(?:b|i|em|sup|sub|s|span|a|br)(?:\s[^>]*)?/?>", re.IGNORECASE)  # plotly's pseudo-HTML
BREAKS = re.compile(r"<br\s*/?>", re.IGNORECASE)
# A character's advance in em, by the first class it is in. Measured in Chromium: WenQuanYi Micro Hei's Latin (what
# our font stack draws with on CI and on Linux machines without Inter) and Arial are within a few % of these.
EM_WIDTHS = [
    (set("ilj.,:;'!| "), 0.27),
    (set("frtI()[]{}-/\"`"), 0.36),
    (set("mwMW@%"), 0.88),
    (set("bdhnopqu"), 0.59),
    (set(string.ascii_lowercase), 0.53),
    (set(string.ascii_uppercase), 0.66),
    (set(string.digits), 0.56),
]
OTHER_EM_WIDTH = 0.6  # other symbols: − × = + ~ · Greek
FULL_WIDTH_PUNCTUATION = set("“”‘’…—")  # drawn by the CJK font of our stack when Inter is missing: 1 em

LINE_HEIGHT = 1.2  # em: the height of a one-line label (18 px at 15 px)
LINE_SPACING = 1.3  # em: each further <br> line
AUTOMARGIN_PAD = 12  # px plotly adds to every automargin push (min(12, the declared margins))
LABEL_STANDOFF = {"x": 2, "y": 1}  # px between an axis line (or a tick's end) and its tick labels
TICK_LABEL_GAP = 3  # px more between outside ticks and their labels
ROTATED_LABEL_SHIFT = 2  # px more below turned x tick labels
COLORBAR_FRAME = 33  # px of a colour bar besides its thickness and labels (x pads, outline, label gap, pad)
LEGEND_SYMBOL = 40  # px of a legend entry besides its name (line sample, gaps)
LEGEND_FRAME = 18  # px of a vertical legend's push besides its widest entry (border, pads)
LEGEND_ROW = 1.5  # em: a horizontal legend's row height
LEGEND_BOX = 10  # px: a horizontal legend's padding, top and bottom together
AXIS_TICKS = 7  # about how many ticks plotly puts on an axis of our figures' sizes (it picks 5 to 10)
COLORBAR_TICKS = 5  # and on a colour bar
DEFAULT_HEIGHT = 450  # px: plotly's figure height when the layout sets none
SI_PREFIXES = {-18: "a", -15: "f", -12: "p", -9: "n", -6: "μ", 3: "k", 6: "M", 9: "B", 12: "T"}  # 20k, 50μ


def em_width(ch: str) -> float:
    """A character's advance in em (see EM_WIDTHS)."""
    if unicodedata.category(ch) in ("Mn", "Cf"):  # combining marks, zero-width spaces and joiners
        return 0.0
    if unicodedata.east_asian_width(ch) in "WF" or ch in FULL_WIDTH_PUNCTUATION:
        return 1.0
    return next((em for chars, em in EM_WIDTHS if ch in chars), OTHER_EM_WIDTH)


def text_size(text, font_size: float) -> tuple[float, float]:
    """(width, height) in px of a label as plotly draws it: tags dropped, ``<br>`` breaking lines."""
    lines = html.unescape(TAGS.sub("", BREAKS.sub("\n", str(text)))).split("\n")
    width = max(sum(em_width(ch) for ch in line) for line in lines) * font_size
    return width, (LINE_HEIGHT + LINE_SPACING * (len(lines) - 1)) * font_size


def _numbers(values) -> list[float]:
    """[min, max] of the finite numbers among ``values`` ([] if none)."""
    array = np.asarray(values, dtype=float).ravel() if values is not None and len(values) else np.zeros(0)
    array = array[np.isfinite(array)]
    return [float(array.min()), float(array.max())] if array.size else []


def _number_labels(low_high: Sequence[float], log: bool = False, exponent_format: str = "B",
                   ticks: int = AXIS_TICKS) -> list[str]:
    """The widest labels plotly prints for a numeric range: on a linear axis the outermost ticks of a step of about
    ``1/ticks`` of the range; on a log axis each power of ten, as plotly writes it."""
    if not low_high:
        return ["0"]
    low, high = low_high
    if log:
        positive = [v for v in (low, high) if v > 0] or [1.0]
        powers = range(math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive))) + 1)
        if exponent_format == "power":
            return ["1" if p == 0 else "10" if p == 1 else f"10{p}".replace("-", "−") for p in powers]
        return [f"{10.0 ** p:.{max(0, -p)}f}" if -3 <= p <= 2 else
                "1" + "0" * (p % 3) + SI_PREFIXES.get(p - p % 3, f"e{p - p % 3}") for p in powers]
    rough = (high - low) / ticks or abs(high) or 1
    power = 10.0 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough * (1 - 1e-9))  # plotly's 1, 2, 5 steps
    ends = (math.ceil(low / step - 1e-9) * step, math.floor(high / step + 1e-9) * step)
    magnitude = math.floor(math.log10(max(abs(low), abs(high)) or 1) + 0.01)
    si = exponent_format == "B" and abs(magnitude) > 3
    exponent = 3 * round((magnitude - 1) / 3) if si else 0  # plotly writes 20k, 1.5M, 50μ; "none": 20,000
    suffix = SI_PREFIXES.get(exponent, f"e{exponent}") if exponent else ""
    decimals = max(0, -math.floor(math.log10(step / 10.0 ** exponent) + 1e-9))
    grouping = "," if exponent_format == "none" else ""
    return [("−" if v < -step / 2 else "") + f"{abs(v) / 10.0 ** exponent:{grouping}.{decimals}f}{suffix}"
            for v in ends]


def _axis_texts(axis: dict, values: list) -> list[str]:
    """The tick labels an axis shows for these trace values."""
    if axis.get("ticktext") is not None:
        return [str(text) for text in axis["ticktext"]]
    strings = [v for v in values if isinstance(v, str)]
    if axis.get("type") == "category" or strings:
        return strings or [str(v) for v in values]
    numbers = [v for v in values if isinstance(v, (int, float, np.number))]
    numbers = _numbers([v for v in numbers if v > 0] if axis.get("type") == "log" else numbers)
    if axis.get("range") is not None and len(axis["range"]) == 2 and None not in axis["range"]:
        numbers = [float(v) for v in axis["range"]]
        if axis.get("type") == "log":
            numbers = [10.0 ** v for v in numbers]
    return _number_labels(numbers, axis.get("type") == "log", axis.get("exponentformat") or "B")


def _trace_values(trace: dict, letter: str) -> list:
    """A trace's x or y values, or for a numeric array the ones that decide its labels: the extremes and the
    smallest positive value (where a log axis starts)."""
    values = trace.get(letter)
    if values is None:
        return []
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in "fiub":
            return [str(v) for v in values.ravel()]
        return _numbers(values) + _numbers(values[values > 0])
    return list(values)


def _axis_name(ref: str) -> str:
    """Trace axis reference ("x2") → layout key ("xaxis2")."""
    return ref[0] + "axis" + ref[1:]


def _auto_angle(texts: Sequence[str], font_size: float) -> float:
    """Plotly's automatic x tick angle on a half-width plot: 0 while the labels fit side by side, else 30°, or 90°
    where the labels are closer than ~1.7 line heights."""
    if not texts:
        return 0.0
    spacing = (HALF_PLOT_WIDTH - 100) / len(texts)  # the plot area less the template's side margins
    if max(text_size(text, font_size)[0] for text in texts) + font_size / 2 <= spacing:
        return 0.0
    return 30.0 if spacing >= 1.25 * font_size / math.tan(math.radians(30)) else 90.0


def _axis_extent(axis: dict, texts: Sequence[str], font_size: float, letter: str, heatmap: bool) -> float:
    """How far an axis's tick labels and title push their margin (``letter``: "x" axes push down, "y" left)."""
    size = (axis.get("tickfont") or {}).get("size") or font_size
    ticks = axis.get("ticks", "outside" if heatmap else "")  # plotly gives heatmaps' axes outside ticks
    extent = LABEL_STANDOFF[letter] + ((axis.get("ticklen") or 5) + TICK_LABEL_GAP if ticks == "outside" else 0)
    if axis.get("showticklabels") is not False and texts:
        angle = axis.get("tickangle")
        angle = (_auto_angle(texts, size) if letter == "x" else 0.0) if angle in (None, "auto") else float(angle)
        sin, cos = abs(math.sin(math.radians(angle))), abs(math.cos(math.radians(angle)))  # a turned label's box:
        boxes = [text_size(text, size) for text in texts]  # its height reaches below an x axis, its width beside a y
        extent += max(w * sin + h * cos if letter == "x" else w * cos + h * sin for w, h in boxes)
        extent += ROTATED_LABEL_SHIFT if letter == "x" and angle % 180 else 0
    title = axis.get("title") or {}
    title_text = title.get("text") if isinstance(title, dict) else title
    if title_text:  # its height, and the standoff it keeps from the tick labels (demo/kit/figures.py's template)
        extent += text_size(title_text, (title.get("font") or {}).get("size") or font_size)[1]
        extent += title.get("standoff") or 0
    return extent + AUTOMARGIN_PAD


def _beyond_right(push: float, x: float, left: float) -> float:
    """The right margin that fits something ``push`` px wide placed at paper ``x`` > 1 (plotly's rule: the plot
    area shrinks until both fit), on a full-width plot whose left margin is ``left``."""
    return (push + (x - 1) * (FULL_PLOT_WIDTH - left)) / x


def _colorbar_push(trace: dict, layout: dict, font_size: float) -> tuple[float, float]:
    """(px, paper x) of a heatmap's colour bar: thickness, labels and frame; (0, 1) when it shows none."""
    axis = layout.get(trace["coloraxis"]) if trace.get("coloraxis") else None
    source = axis if axis is not None else trace
    if source.get("showscale") is False:
        return 0.0, 1.0
    bar = source.get("colorbar") or {}
    prefix = "z" if axis is None else "c"
    low_high = [source.get(prefix + "min"), source.get(prefix + "max")]
    if None in low_high:
        low_high, mid = _numbers(trace.get("z")), source.get(prefix + "mid")
        if low_high and mid is not None:  # plotly centres the scale on the mid value
            half = max(abs(v - mid) for v in low_high)
            low_high = [mid - half, mid + half]
    size = (bar.get("tickfont") or {}).get("size") or font_size
    widest = max(text_size(text, size)[0] for text in _number_labels(low_high, ticks=COLORBAR_TICKS))
    return (bar.get("thickness") or 30) + widest + COLORBAR_FRAME, float(bar.get("x", 1.02))


def _legend_push(data: list[dict], layout: dict, font_size: float, declared: dict) -> tuple[float, float]:
    """(right, bottom) margins a legend needs: a vertical one sits right of the plot, ``orientation="h"`` with
    y < 0 below it (in rows that wrap on a half-width plot); 0 for a side it leaves alone."""
    shown = [trace.get("name") or f"trace {i}" for i, trace in enumerate(data)
             if trace.get("type", "scatter") != "heatmap" and trace.get("showlegend") is not False]
    if not shown or layout.get("showlegend") is False or (layout.get("showlegend") is None and len(shown) < 2):
        return 0.0, 0.0
    legend = layout.get("legend") or {}
    size = (legend.get("font") or {}).get("size") or font_size
    entries = [text_size(name, size)[0] + LEGEND_SYMBOL for name in shown]
    if legend.get("orientation") != "h":
        return LEGEND_FRAME + max(entries), 0.0
    y = float(legend.get("y", 1.0))
    if y >= 0:
        return 0.0, 0.0
    area = HALF_PLOT_WIDTH - declared["l"] - declared["r"]
    rows = 1 if sum(entries) <= area else math.ceil(len(entries) / max(1, area // max(entries)))
    push = rows * LEGEND_ROW * size + LEGEND_BOX + AUTOMARGIN_PAD
    height = layout.get("height") or DEFAULT_HEIGHT
    return 0.0, (push - y * (height - declared["t"])) / (1 - y)  # plotly's rule for a push at paper y < 0


def reserved_margins(data: list[dict], layout: dict, *, font_size: float, base_margin: dict,
                     axis_defaults: dict[str, dict]) -> dict[str, int]:
    """The margins to declare for a figure, given its raw trace and layout props and its template's font size,
    margins and x/y axis settings: what plotly's automargin would grow them to, never less than it declares."""
    declared = {**base_margin, **{k: v for k, v in (layout.get("margin") or {}).items() if k in base_margin}}
    need = dict(declared)
    values: dict[str, list] = {}
    heatmap_axes: set[str] = set()
    colorbars = []
    for trace in data:
        if trace.get("type", "scatter") not in ("scatter", "bar", "heatmap", "histogram", "box", "scattergl"):
            continue
        names = [_axis_name(trace.get(f"{letter}axis") or letter) for letter in "xy"]
        for name, letter in zip(names, "xy"):
            matched = (layout.get(name) or {}).get("matches")  # an axis sharing another's range widens its labels
            for labelled in {name, _axis_name(matched) if matched else name}:
                values.setdefault(labelled, []).extend(_trace_values(trace, letter))
        if trace.get("type") == "heatmap":
            heatmap_axes.update(names)
            colorbars.append(_colorbar_push(trace, layout, font_size))
    for name, axis_values in values.items():
        own, default = layout.get(name) or {}, axis_defaults.get(name[0], {})
        axis = {**default, **own}
        if isinstance(own.get("title"), dict) and isinstance(default.get("title"), dict):  # its text, our standoff
            axis["title"] = {**default["title"], **own["title"]}
        if axis.get("visible") is False or axis.get("automargin") is False:
            continue
        anchor = layout.get(_axis_name(axis.get("anchor") or ("y" if name[0] == "x" else "x"))) or {}
        if (anchor.get("domain") or [0, 1])[0] > 0.01:  # an inner panel of a grid: its labels push no margin
            continue
        side = {"x": "t" if axis.get("side") == "top" else "b", "y": "r" if axis.get("side") == "right" else "l"}
        extent = _axis_extent(axis, _axis_texts(axis, axis_values), font_size, name[0], name in heatmap_axes)
        need[side[name[0]]] = max(need[side[name[0]]], extent)
    legend_right, legend_below = _legend_push(data, layout, font_size, declared)
    for push, x in [*colorbars, (legend_right, float((layout.get("legend") or {}).get("x", 1.02)))]:
        if push and x > 1:
            need["r"] = max(need["r"], _beyond_right(push, x, need["l"]))
    need["b"] = max(need["b"], legend_below)
    return {side: int(math.ceil(need[side])) for side in ("l", "r", "t", "b")}
