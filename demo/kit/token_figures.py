"""The figures of how text becomes tokens and how a next token is drawn: the sampling cut (core/text/sampling.py) and
the tokenizer lab's strips (core/transformer/tokenizer_lab.py). Built on demo/kit/figures.py's theme like every other figure."""
from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

from demo.kit.figures import BASE_FONT_SIZE, COLORWAY, HIGHLIGHT, SlideFigure, styled, tint, unique_labels
from core.text.i18n import text

KEPT_FILL, CUT_FILL = tint(COLORWAY[0], 0.6), "#eef0f3"  # before the cut: kept tokens solid, cut ones pale, hatched
PALE_FILL = tint(COLORWAY[0], 0.8)  # every other token of a strip, beside KEPT_FILL
FRAGMENT_FILL, FRAGMENT_LINE = tint(HIGHLIGHT, 0.8), tint(HIGHLIGHT, -0.2)  # a byte-level piece of a character
ON_PALE = "#1f2937"  # the template's ink: text on the pale fills above
LEGEND_DROP_PX = 72  # the tick labels and the axis title under a plot (figures.AXIS_TITLE_STANDOFF included)


def next_token_figure(tokens: Sequence[str], tempered: Sequence[float], renormalised: Sequence[float],
                      kept: Sequence[bool], title: str, *, original: Sequence[float] | None = None,
                      rest: tuple[str, float, float] | None = None) -> SlideFigure:
    """The next-token distribution and the cut sampling makes (core/text/sampling.py), the same in every tab that
    generates. Per token, most probable first: its probability before the cut (softmax(z/τ)), after it (renormalised
    over the kept set) and, if given, the model's own (τ = 1) as a diamond. The kept set is not told by colour
    alone: kept bars are solid with a dark outline and read "✓ q"; cut ones are pale, hatched and read "✗".
    ``rest`` = (label, mass before, mass after): every other token in one dotted row, so the whole distribution is
    there."""
    kept = [bool(k) for k in kept] + ([None] if rest else [])
    labels = unique_labels([*tokens, *([rest[0]] if rest else [])])
    before = [*map(float, tempered), *([rest[1]] if rest else [])]
    after = [*map(float, renormalised), *([rest[2]] if rest else [])]
    fill = {True: KEPT_FILL, False: CUT_FILL, None: "#d1d5db"}
    marks = dict(line=dict(color=["#1f2937" if k else "#9ca3af" for k in kept], width=1.5))
    texts = [f"✓ {q:.3f}" if k else "✗" if k is False else f"Σ {q:.3f}" for k, q in zip(kept, after)]
    bars = [(before, text("sampling.legend_before"), [format(p, ".3f") for p in before],
             dict(marks, color=[fill[k] for k in kept], pattern=dict(
                 shape=[{True: "", False: "/", None: "."}[k] for k in kept], fgcolor="#6b7280", size=7))),
            (after, text("sampling.legend_after"), texts, dict(marks, color=[HIGHLIGHT if k else "#f3f4f6"
                                                                             for k in kept]))]
    traces = [go.Bar(y=labels, x=x, orientation="h", name=name, text=labels_, textposition="outside",
                     cliponaxis=False, marker=marker, hovertemplate=f"%{{y}}: %{{x:.4f}}<extra>{name}</extra>")
              for x, name, labels_, marker in bars]
    if original is not None:
        traces.append(go.Scatter(y=labels[:len(original)], x=list(map(float, original)), mode="markers",
                                 marker=dict(symbol="diamond", size=10, color="#1f2937"),
                                 name=text("sampling.legend_original"),
                                 hovertemplate="%{y}: %{x:.4f}<extra>τ = 1</extra>"))
    widest = max([*before, *after, *map(float, original if original is not None else []), 1e-9])
    height = max(360, min(1000, 150 + 46 * len(labels)))
    # The legend starts LEGEND_DROP_PX below the plot, under the tick labels and the axis title (at y = -0.12 of a
    # short plot it sat on the axis title: "概率" under "截断后"); the plot is at most ``height`` less the title's and
    # the legend's margins.
    below = -LEGEND_DROP_PX / max(height - 190, 120)
    return styled(go.Figure(traces, layout=dict(
        title_text=title, barmode="group", bargap=0.25, height=height,
        yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(title_text=text("common.figure_probability"), range=[0, widest * 1.3]),
        legend=dict(orientation="h", yanchor="top", y=below, xanchor="left", x=0))))


def token_strips(rows: Sequence[tuple[str, Sequence[tuple[int, int, str, str]]]], title: str, *, x_title: str,
                 height: int | None = None) -> SlideFigure:
    """One text cut by several tokenizers, one row each: every token is a box over the UTF-8 bytes it covers (so a
    Chinese character is 3 wide, and a byte-level token that splits it shows where). Each token is (start, end,
    label, kind): kind "" alternates two tones so neighbours part; "fragment" (bytes that are not a whole character:
    "�") is hatched with a dark red outline, "unknown" ([UNK]) dotted: never colour alone."""
    traces = []
    for name, tokens in rows:
        kinds = [kind for *_, kind in tokens]
        traces.append(go.Bar(
            y=[name] * len(tokens), x=[end - start for start, end, *_ in tokens], base=[start for start, *_ in tokens],
            orientation="h", text=[label for _, _, label, _ in tokens], textposition="inside",
            insidetextanchor="middle", textangle=0, showlegend=False,  # dark ink on the pale boxes, in dark mode too
            textfont=dict(size=BASE_FONT_SIZE - 3, color=ON_PALE),
            marker=dict(color=[FRAGMENT_FILL if k == "fragment" else (KEPT_FILL, PALE_FILL)[i % 2]
                               for i, k in enumerate(kinds)],
                        pattern=dict(shape=[{"fragment": "/", "unknown": "."}.get(k, "") for k in kinds],
                                     fgcolor=FRAGMENT_LINE, size=6),
                        line=dict(color=[FRAGMENT_LINE if k else "white" for k in kinds], width=2)),
            customdata=[end - 1 for _, end, *_ in tokens],
            hovertemplate=f"%{{text}} · %{{base}}–%{{customdata}}<extra>{unique_labels([name])[0]}</extra>"))
    layout = dict(title_text=title, barmode="overlay", bargap=0.3, height=height or 130 + 62 * len(rows),
                  yaxis=dict(autorange="reversed", type="category"), xaxis=dict(title_text=x_title, rangemode="tozero"))
    return styled(go.Figure(traces, layout=layout))
