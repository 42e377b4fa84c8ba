"""The BERT masked-LM tab's result figure and tables, shared by the Hub checkpoints' views (demo/mlm/handlers.py)
and the char-BERT's (demo/mlm/char_views.py): top-k candidates per blank or per masked character."""
from __future__ import annotations

import plotly.graph_objects as go

from demo.kit.figures import COLORWAY, HIGHLIGHT, bar, styled, subplot_grid
from demo.kit.i18n import t

Column = tuple[str, list[tuple[str, float]]]  # (subplot title, [(candidate, probability), …] best first)


def candidates_figure(columns: list[Column], title: str) -> go.Figure:
    """One horizontal bar chart of the top-k per column (a blank, or one character of a blank), three per row."""
    if len(columns) == 1:
        names, values = zip(*columns[0][1])
        return bar(list(names), list(values), title, value_title=t("mlm.axis_probability"),
                   highlight=[i == 0 for i in range(len(names))])
    cols = min(3, len(columns))
    rows = -(-len(columns) // cols)
    layout, axes = subplot_grid([name for name, _ in columns], cols, horizontal_spacing=0.12,
                                vertical_spacing=min(0.25, 0.5 / rows) if rows > 1 else 0.12,  # room for the ticks
                                yaxis=dict(autorange="reversed", type="category"))
    traces = [go.Bar(x=[p for _, p in candidates], y=[c for c, _ in candidates], xaxis=x_axis, yaxis=y_axis,
                     orientation="h", showlegend=False,
                     marker_color=[HIGHLIGHT] + [COLORWAY[0]] * (len(candidates) - 1),
                     text=[f"{p:.3f}" for _, p in candidates], textposition="auto",
                     hovertemplate="%{y}: %{x:.4f}<extra></extra>")
              for (_, candidates), (x_axis, y_axis) in zip(columns, axes)]
    return styled(go.Figure(traces, layout=dict(layout, title_text=title,
                                                height=max(360, rows * (120 + 30 * len(columns[0][1]))))))


def table(rows: list[list], *header_keys: str) -> dict:
    """Rows with their headers in the learner's language (the headers built into the layout are English). A
    gr.Dataframe takes {"headers", "data"} as its value, and API clients get the same dict back."""
    return {"headers": [t(key) for key in header_keys], "data": rows}
