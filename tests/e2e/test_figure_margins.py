"""The margins demo/kit/figure_margins.py reserves, checked against what plotly.js needs, for every figure the presets draw.

Each figure is sent with margins estimated on the server, so that plotly.js's automargin finds its labels already
fit and draws the figure once instead of twice (first paint, issue #18). The estimate can miss both ways:

1. **Too small**: plotly grows the margin and draws the figure again: the old cost, nothing is clipped.
2. **Too large**: an empty gutter beside the plot, in every screenshot a teacher puts on a slide. Worse.

So the app is built offline, every view's presets (their first one is the view's default, what first paint draws)
are computed, and each plotly figure among the results is drawn in Chromium twice, in a div as wide as the app shows
it, worked out from the layout (rows share their width by scale) and checked in the app at 1440×900: a full-width
plot 1216 px, two side by side 600 px each, three 395 px (a plot beside a table can get less than its share: the
n-gram counts plot is 303 px there, 438 here). Its height is the layout's, or plotly's default 450 px.

(a) as sent (``fig.to_json()``): plotly "grew" a side when its final ``_fullLayout._size`` exceeds the declared
    margin by more than 1 px (its own tolerance for a redraw);
(b) with the margins the figure declares without the estimator (demo/kit/figures.py's TEMPLATE_MARGINS base, or the
    figure's own where it sets them): the ``_size`` plotly grows those to is what it needed. The reserved margin
    less that is the gutter the estimate adds.

Both draws follow Gradio's PlotlyPlot: ``Plotly.react`` with autosize, responsive, ``margin.autoexpand`` and, for a
plot that shows its label and a titled figure, a top margin of at least 100 px.

What is asserted: at most MAX_GROWN_SHARE of the figures are grown (each one is only a second draw, the behaviour
before the estimator), and no side of any figure is reserved more than MAX_GUTTER px beyond what plotly needed. A
summary (figures, grown, gutter per side, draw time as sent vs base margins) is printed: run with ``-s`` to see it.

plotly.js here is the one the python plotly package ships (4.1.1); Gradio's front end bundles 3.3.1. Their automargin
rules (pads, label standoffs, the redraw test) are the same; the fonts are the system's (WenQuanYi Micro Hei's Latin
and CJK here and on CI, where Inter and Noto Sans are missing), as in the app.

Run: python -m pytest tests/e2e/test_figure_margins.py -m e2e -n0 -s
"""
from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
import plotly
import plotly.graph_objects as go
import pytest
from core.loading import resolve

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]  # computing every preset: ~60 s idle, >300 s at load 12

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
VIEWPORT = {"width": 1440, "height": 900}  # tests/e2e/first_open.py's window
CONTENT_WIDTH = 1216  # px: a full-width gr.Plot in that window (Gradio's 1280 px container less its padding)
ROW_GAP = 16  # px between the components of a gr.Row
FIXED_WIDTH = 90  # px: a scale=0 component in a row (the ⬇ CSV buttons)
DEFAULT_HEIGHT = 450  # px: plotly's figure height when the layout sets none
GROWN_TOLERANCE = 1  # px: plotly redraws when a margin changes by more than this (plots.didMarginChange)
# Grown figures cost a second draw each (nothing worse), so a few may stay grown where the server cannot know the
# width: a colour bar on a plot wider than the assumed full width, a horizontal legend wrapping on a narrower one.
MAX_GROWN_SHARE = 0.05
# A gutter is visible in a screenshot once it is about a line of labels: 24 px is 1.6 lines of our 15 px font,
# and 2% of a full-width plot. Colour bars and vertical legends sit at x = 1.02 (paper), 2% of the plot's width
# beyond it: the server cannot tell a 600 px plot from a 1216 px one, and reserves for the wider (12 px more).
MAX_GUTTER = 24
SIDES = "lrtb"

DRAW_JS = """async ([figure, width, height, margin, showLabel]) => {
  const div = document.createElement("div");
  div.style.width = width + "px";
  div.style.height = height + "px";
  document.body.appendChild(div);
  const layout = {...figure.layout, autosize: true, margin: {...margin, autoexpand: true}};
  if (layout.title && showLabel) layout.margin.t = Math.max(100, layout.margin.t || 0);  // Gradio's PlotlyPlot
  const config = {...figure.config, responsive: true};
  const start = performance.now();
  await Plotly.react(div, figure.data, layout, config);
  const ms = performance.now() - start;
  const size = div._fullLayout._size;
  const result = {declared: {l: layout.margin.l, r: layout.margin.r, t: layout.margin.t, b: layout.margin.b},
                  size: {l: size.l, r: size.r, t: size.t, b: size.b}, ms,
                  redrawn: "_redrawFromAutoMarginCount" in div._fullLayout};
  Plotly.purge(div);
  div.remove();
  return result;
}"""


@dataclass
class Shown:
    """One figure as a view shows it: where, how wide, and how plotly drew it as sent and from the base."""
    name: str
    default: bool
    width: int
    show_label: bool
    figure: dict
    base: dict
    sent: dict = field(default_factory=dict)
    plain: dict = field(default_factory=dict)

    def draw(self, page, margin: dict) -> dict:
        height = self.figure["layout"].get("height") or DEFAULT_HEIGHT
        return page.evaluate(DRAW_JS, [self.figure, self.width, height, margin, self.show_label])

    def grown(self) -> list[str]:
        return [side for side in SIDES if self.sent["size"][side] > self.sent["declared"][side] + GROWN_TOLERANCE]

    def gutter(self, side: str) -> int:
        """px the reserved margin exceeds what plotly needed from the base margins."""
        return self.sent["declared"][side] - self.plain["size"][side]


def shown_width(block) -> float:
    """The px width of a component in the app's window: rows share their width among their children by scale."""
    parent = block.parent
    if parent is None or isinstance(parent, gr.Tab):
        return CONTENT_WIDTH
    outer = shown_width(parent)
    if not isinstance(parent, gr.Row):
        return outer
    children = [child for child in parent.children if getattr(child, "visible", True) is not False]
    scales = [1 if getattr(child, "scale", None) is None else child.scale for child in children]
    free = outer - FIXED_WIDTH * scales.count(0) - ROW_GAP * (len(children) - 1)
    own = scales[next(i for i, child in enumerate(children) if child is block)]
    return free * own / sum(scales)


@pytest.fixture(scope="module")
def shown_figures() -> list[Shown]:
    """Every plotly figure of every runnable preset of every view, offline."""
    import app
    from demo.kit.figures import TEMPLATE_MARGINS

    resolve.set_offline(True)
    reg = app.build_app().preset_registry
    base = TEMPLATE_MARGINS["base_margin"]
    shown = []
    for tab_id, entry in reg.tabs.items():
        for view in entry.views:
            for slug, preset in view.presets.items():
                if preset.values is None:
                    continue
                plots = [(c, v) for c, v in view.run(slug).items() if c in view.outputs and isinstance(v, go.Figure)]
                for index, (component, fig) in enumerate(plots):
                    own = {k: v for k, v in fig.layout.margin.to_plotly_json().items() if k in base}
                    shown.append(Shown(f"{tab_id}/{view.key}/{slug} #{index} “{str(fig.layout.title.text)[:60]}”",
                                       slug == view.default, round(shown_width(component)),
                                       component.show_label is not False, json.loads(fig.to_json()),
                                       {**base, **own}))
    return shown


@pytest.fixture(scope="module")
def drawn(browser, shown_figures) -> list[Shown]:
    """Each figure drawn as sent and from its base margins, one after the other and in alternating order (so that
    drift in the machine's load, and caches the first draw of a figure fills, fall on both alike), after one
    warm-up draw."""
    page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
    try:
        page.set_content("<!doctype html><html><body style='margin:0'></body></html>")
        page.add_script_tag(path=str(PLOTLY_JS))
        shown_figures[0].draw(page, shown_figures[0].base)
        for index, shown in enumerate(shown_figures):
            margins = {"sent": shown.figure["layout"]["margin"], "plain": shown.base}
            for kind in ("sent", "plain") if index % 2 else ("plain", "sent"):
                setattr(shown, kind, shown.draw(page, margins[kind]))
    finally:
        page.close()
    print_summary(shown_figures)
    return shown_figures


def print_summary(shown: list[Shown]) -> None:
    grown = [s for s in shown if s.grown()]
    print(f"\n{len(shown)} figures drawn ({sum(s.default for s in shown)} of them views' defaults)")
    print(f"grown as sent: {len(grown)}; drawn twice as sent: {sum(s.sent['redrawn'] for s in shown)}, "
          f"from the base margins: {sum(s.plain['redrawn'] for s in shown)}")
    for s in grown:
        print(f"  grown {','.join(s.grown())}: {s.name} at {s.width} px")
    for side in SIDES:
        gutters = sorted(s.gutter(side) for s in shown)
        raised = sorted(s.gutter(side) for s in shown if s.sent["declared"][side] > s.plain["declared"][side])
        widest = max(shown, key=lambda s: s.gutter(side))
        ninetieth = (raised or [0])[int(0.9 * (len(raised) - 1))]
        print(f"gutter {side}: max {gutters[-1]} px ({widest.name} at {widest.width} px), "
              f"{sum(g > 12 for g in gutters)} figures over 12 px; of the {len(raised)} raised above the base: "
              f"median {statistics.median(raised or [0]):.0f}, 90th percentile {ninetieth}")
    twice = [s for s in shown if s.plain["redrawn"]]
    print(f"draw time (JS, one pass): as sent {sum(s.sent['ms'] for s in shown) / 1000:.2f} s, from the base "
          f"margins {sum(s.plain['ms'] for s in shown) / 1000:.2f} s; the {len(twice)} figures plotly draws twice "
          f"from the base: {sum(s.sent['ms'] for s in twice) / 1000:.2f} s as sent, "
          f"{sum(s.plain['ms'] for s in twice) / 1000:.2f} s from the base")


def test_every_tab_with_plots_has_figures_to_check(drawn):
    tabs = {s.name.split("/")[0] for s in drawn}
    assert len(drawn) > 100 and len(tabs) >= 8, (len(drawn), sorted(tabs))


def test_plotly_grows_no_margin_of_nearly_every_figure(drawn):
    grown = [s for s in drawn if s.grown()]
    assert len(grown) <= MAX_GROWN_SHARE * len(drawn), "\n".join(
        f"{s.name} at {s.width} px: {side} declared {s.sent['declared'][side]}, grown to {s.sent['size'][side]}"
        for s in grown for side in s.grown())


def test_no_margin_is_reserved_far_beyond_what_plotly_needs(drawn):
    gutters = [f"{s.name} at {s.width} px: {side} reserved {s.sent['declared'][side]}, plotly needed "
               f"{s.plain['size'][side]} (+{s.gutter(side)} px)"
               for s in drawn for side in SIDES if s.gutter(side) > MAX_GUTTER]
    assert not gutters, "\n".join(gutters)
