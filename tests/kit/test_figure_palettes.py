"""Colours every reader can tell apart, in every figure the app's presets draw (issue #37).

The app is built offline and every runnable preset of every view is computed, as a click on it would; every plotly
figure among the results is read as it is sent to the browser (``to_json``: after demo/kit/figures.py's last touches),
and the Overview's drawn SVG figures as they are in the page. Checked:

- colour scales are colour-blind-safe ones (viridis/cividis for magnitudes, RdBu/PuOr for signed values): compared
  with plotly's own definition of those scales, stop by stop;
- every colour a trace names is one of Okabe & Ito's eight, a tint or shade of one, or a grey;
- a bar in the highlight colour is also hatched, and two or more line series differ in dash as well as colour.
"""
from __future__ import annotations

import json
import re

import plotly.colors
import pytest

from core.loading import resolve
from core.text.i18n import using_language
from demo.kit import figures, static_html

SAFE_SCALES = [plotly.colors.get_colorscale(name) for name in figures.COLOR_SAFE_SCALES]
# Okabe & Ito's colours, and their tints and shades (figures.tint: mixed with white or black in steps of 5%).
ALLOWED = {figures.tint(c, round(step * 0.05, 2)).lower() for c in figures.OKABE_ITO.values() for step in range(-16, 19)}
ALLOWED |= {"white", "black"}


def is_grey(colour: str) -> bool:
    """A neutral or slate grey (chroma, max − min of r, g, b, under 12%) written as #rrggbb or rgb(a)()."""
    match = re.fullmatch(r"#([0-9a-f]{6})", colour.lower())
    if match:
        rgb = [int(match[1][i:i + 2], 16) / 255 for i in (0, 2, 4)]
    else:
        match = re.fullmatch(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*[\d.]+)?\)", colour.replace(" ", ""))
        if not match:
            return False
        rgb = [float(v) / 255 for v in match.groups()]
    return max(rgb) - min(rgb) < 0.12


def colours_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return []  # numbers (a colour scale's values) or nothing


def rgb(colour: str) -> tuple[float, ...]:
    colour = colour.strip().lower()
    if colour.startswith("#"):
        return tuple(float(v) for v in plotly.colors.hex_to_rgb(colour))
    return tuple(float(v) for v in plotly.colors.unlabel_rgb(colour))


def same_scale(scale, safe) -> bool:
    return len(scale) == len(safe) and all(abs(float(a[0]) - float(b[0])) < 1e-9 and rgb(a[1]) == rgb(b[1])
                                           for a, b in zip(scale, safe))


def is_safe_scale(scale) -> bool:
    backwards = [[1 - float(position), colour] for position, colour in reversed(scale)]
    return any(same_scale(scale, safe) or same_scale(backwards, safe) for safe in SAFE_SCALES)


def problems_of(figure: dict, where: str) -> list[str]:
    found = []
    layout = figure.get("layout", {})
    colorway = layout.get("template", {}).get("layout", {}).get("colorway")
    if colorway is not None and [c.lower() for c in colorway] != [c.lower() for c in figures.COLORWAY]:
        found.append(f"{where}: colorway {colorway}")
    scales = [trace["colorscale"] for trace in figure["data"] if trace.get("colorscale")]
    scales += [axis["colorscale"] for key, axis in layout.items()
               if key.startswith("coloraxis") and "colorscale" in axis]
    found += [f"{where}: colour scale {scale[:2]}…" for scale in scales if not is_safe_scale(scale)]
    lines = []
    for trace in figure["data"]:
        for part in ("marker", "line"):
            for colour in colours_in((trace.get(part) or {}).get("color")):
                if colour.lower() not in ALLOWED and not is_grey(colour):
                    found.append(f"{where}: {trace.get('type')} {part} colour {colour}")
        if trace.get("type") == "bar":
            marker = trace.get("marker") or {}
            colours = colours_in(marker.get("color"))
            shapes = (marker.get("pattern") or {}).get("shape", "")
            shapes = shapes if isinstance(shapes, list) else [shapes] * max(1, len(colours))
            for colour, shape in zip(colours, shapes):
                if colour.lower() == figures.HIGHLIGHT.lower() and not shape:
                    found.append(f"{where}: a highlighted bar without a hatch")
        if trace.get("type") in ("scatter", "scattergl") and "lines" in str(trace.get("mode", "lines")):
            lines.append((trace.get("line") or {}).get("dash", "solid"))
    if len(lines) > 1 and len(set(lines)) < min(len(lines), len(figures.SERIES_DASHES)):
        found.append(f"{where}: {len(lines)} line series share dashes {lines}")
    return found


def figures_in(value):
    if isinstance(value, figures.SlideFigure):
        yield json.loads(value.to_json())
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from figures_in(item)
    elif isinstance(value, dict) and "value" in value:
        yield from figures_in(value["value"])


@pytest.fixture(scope="module")
def preset_figures():
    import app

    resolve.set_offline(True)
    try:
        built = app.build_app()
        drawn = []
        for tab_id, entry in built.preset_registry.tabs.items():
            for view in entry.views:
                for slug, preset in view.presets.items():
                    if preset.values is None or slug in SLOW:
                        continue
                    with using_language("en"):
                        results = view.fn(*preset.resolved())
                    drawn += [(f"{tab_id}/{view.key}/{slug}", figure) for figure in figures_in(results)]
        return drawn
    finally:
        resolve.set_offline(False)


# Presets whose figures are the same kinds as their view's other presets, at several times the cost: a one-minute
# NNLM on Moby-Dick and the 200-step gradients.
SLOW = {"nnlm-moby", "long-gradients"}


def test_every_preset_figure_uses_colour_blind_safe_colours(preset_figures):
    assert len(preset_figures) > 150
    found = [problem for where, figure in preset_figures for problem in problems_of(figure, where)]
    assert not found, "\n".join(found[:40])


def test_the_checks_can_fail():
    bad = figures.heatmap([[0.0, 1.0]], ["a", "b"], ["r"], "t", colorscale="Jet")
    assert problems_of(json.loads(bad.to_json()), "jet")
    rainbow = figures.bar(["a"], [1.0], "t")
    rainbow.data[0].marker.color = "#ff00ff"
    assert problems_of(json.loads(rainbow.to_json()), "magenta")
    assert not problems_of(json.loads(figures.heatmap([[0.0, 1.0]], ["a", "b"], ["r"], "t").to_json()), "viridis")


def test_highlights_and_series_are_marked_without_colour():
    bars = json.loads(figures.bar(["a", "b", "c"], [1, 2, 3], "t", highlight=[False, True, False]).to_json())
    assert bars["data"][0]["marker"]["pattern"]["shape"] == ["", figures.HIGHLIGHT_PATTERN, ""]
    curves = json.loads(figures.lines([1, 2, 3], {"RNN": [1, 2, 3], "LSTM": [3, 2, 1]}, "t").to_json())
    assert [trace["line"]["dash"] for trace in curves["data"]] == figures.SERIES_DASHES[:2]
    assert [trace["marker"]["symbol"] for trace in curves["data"]] == figures.SERIES_SYMBOLS[:2]
    points = figures.scatter([[0, 0], [1, 1]], ["a", "b"], ["g1", "g2"], "t")
    assert [trace.marker.symbol for trace in points.data] == figures.SERIES_SYMBOLS[:2]


def test_the_drawn_figures_use_the_same_colours():
    import app
    from demo.ladder import overview

    for lang in ("en", "zh"):
        page = overview.path_html(lang, app.TABS)
        fills = set(re.findall(r'(?:fill|stroke)="(#[0-9a-fA-F]{6})"', page))
        assert fills and all(c.lower() in ALLOWED or is_grey(c) for c in fills), fills
        assert 'class="hatch"' in page  # the best rung is hatched as well as coloured
        assert 'role="group"' in page  # the timeline holds links: a group, not an image
    assert static_html.INK and figures.HIGHLIGHT.lower() in ALLOWED
