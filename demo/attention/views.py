"""Attention tab, the views past the arithmetic (seed §10–§11, §8 on a real model): multi-head attention, the
sinusoidal positional encoding and what word order means without it, and the maps of a pretrained encoder.
Their layout and presets are in demo/attention/attention.py."""
from __future__ import annotations

import math

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from demo.server.handlers import friendly_errors, gpu_handler, whole_number
from demo.kit.figures import (
    COLORWAY,
    DIVERGING_SCALE,
    SEQUENTIAL_SCALE,
    empty_figure,
    lines,
    styled,
    subplot_grid,
    unique_labels,
)
from demo.kit.i18n import t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
att = lazy_import("core.attention.attention")

MODEL_EXAMPLES = [
    ["The animal didn't cross the street because it was too tired.", ""],
    ["The cat sat on the mat.", "It was very happy."],
    ["i have a dream", ""],
    ["The bank raised interest rates, so we walked along the river bank instead.", ""],
    ["我爱自然语言处理。", ""],
]
SHAPE_HEADERS = ["step", "equation", "shape"]  # as first drawn; handlers return translated headers
PERMUTATION_HEADERS = ["slot", "word", "was at", "change without PE", "change with PE"]
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")  # head₈, as head₁ beside it
GRID_MAX_TOKENS = 48  # the layer × head grid stays readable (and light in the browser) up to about this many tokens
GRID_MAX_CELLS = 100_000  # and draws at most this many cells: 48 tokens × 144 heads (BERT-base) would be 2 MB
# The two large maps draw the first 256 tokens: 512 × 512 (BERT's longest input) made a 4.3 MB answer; a 620-px map
# has no pixel for more rows anyway.
MAP_MAX_TOKENS = 256


def _hover(weight_format: str = ".3f") -> str:
    """Hover text of an attention map, in the learner's language (plotly fills %{y}, %{x}, %{z})."""
    return t("attention.hover", fmt=weight_format)


MAX_PE_CELLS = 256 * 512  # the PE heatmap draws every step-th position beyond this many cells


def _big_heatmap(values: np.ndarray, title: str, x_title: str, y_title: str, colorscale=DIVERGING_SCALE,
                 height: int = 420, **kwargs):
    """A heatmap with numeric axes, for matrices too wide to label every column (PE, concatenated heads)."""
    value = t("attention.value")
    fig = go.Figure(go.Heatmap(z=np.asarray(values, dtype=np.float32), colorscale=colorscale,  # float32: lighter JSON
                               colorbar=dict(thickness=14), **kwargs,
                               hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>{value}: %{{z:.3f}}"
                                             "<extra></extra>"),
                    layout=dict(title_text=title, height=height, xaxis=dict(title_text=x_title),
                                yaxis=dict(title_text=y_title, autorange="reversed")))
    return styled(fig)



# ----------------------------------------------------------------------------------------------------------------
# Multi-head


@friendly_errors
def multi_head(sentence: str, d_model: float, heads: float, causal: bool):
    """Split d_model into heads, attend per head, concatenate, × W_O; every shape listed."""
    words = att.split_words(sentence)
    d_model, heads = int(d_model), int(heads)
    if not 8 <= d_model <= att.MAX_TOY_DIM:
        raise UserInputError("attention.d_model_range", limit=att.MAX_TOY_DIM)
    x = att.word_embeddings(words, d_model) + att.positional_encoding(len(words), d_model)  # (T, d_model)
    result = att.multi_head_attention(x, att.random_weights(d_model), heads, words, causal=bool(causal))
    rows = pd.DataFrame([[s.name, s.equation, " × ".join(map(str, s.shape))] for s in result.steps],
                        columns=[t("attention.col_step"), t("attention.col_equation"), t("attention.col_shape")])
    summary = t("attention.multihead_summary", d_model=d_model, heads=heads, d_head=result.d_head, T=len(words))
    return summary, rows, _heads_figure(result), _concat_figure(result)


def _heads_figure(result: att.MultiHeadResult):
    cols = min(result.heads, 4)
    rows = math.ceil(result.heads / cols)
    labels = unique_labels(result.tokens)
    slanted = len(labels) > 4  # slanted key labels need room below each row, above the next row's titles
    layout, axes = subplot_grid([t("attention.head_n", head=h + 1) for h in range(result.heads)], cols, horizontal_spacing=0.06,
                                vertical_spacing=0.2 if slanted else 0.12,
                                # every token labelled (plotly would thin them out), in a size that fits
                                xaxis=dict(type="category", tickangle=-45 if slanted else 0, dtick=1,
                                           tickfont=dict(size=12)),
                                yaxis=dict(type="category", autorange="reversed", dtick=1, tickfont=dict(size=12)))
    traces = [go.Heatmap(z=result.head_probs[h], x=labels, y=labels, xaxis=x, yaxis=y, coloraxis="coloraxis",
                         hovertemplate=t("attention.head_n", head=h + 1) + "<br>" + _hover() + "<extra></extra>")
              for h, (x, y) in enumerate(axes)]
    return styled(go.Figure(traces, layout=dict(
        layout, coloraxis=dict(colorscale=SEQUENTIAL_SCALE, cmin=0, cmax=1, colorbar=dict(thickness=14)),
        title_text=t("attention.fig_heads", heads=result.heads),
        height=max(380, 300 * rows))))


def _concat_figure(result: att.MultiHeadResult):
    fig = _big_heatmap(result.concat, t("attention.fig_concat", heads=str(result.heads).translate(SUBSCRIPT), T=len(result.tokens),
                                         d_model=result.d_model, d_head=result.d_head),
                       t("attention.axis_concat_column"), t("attention.axis_token"),
                       zmid=0, y=unique_labels(result.tokens), height=max(300, 140 + 40 * len(result.tokens)))
    # One layout update with all boundaries: add_vline validates the whole layout once per line.
    fig.update_layout(shapes=[dict(type="line", xref="x", yref="paper", x0=h * result.d_head - 0.5,
                                   x1=h * result.d_head - 0.5, y0=0, y1=1, line=dict(color="#111827", width=1))
                              for h in range(1, result.heads)])
    return fig


# ----------------------------------------------------------------------------------------------------------------
# Positional encoding and permutation


@friendly_errors
def positional(positions: float, d_model: float, dims_text: str):
    """The sinusoidal PE table as a heatmap, and chosen dimensions as curves over position."""
    positions, d_model = int(positions), int(d_model)
    pe = att.positional_encoding(positions, d_model)  # (P, d)
    try:
        dims = [int(tok) for tok in (dims_text or "").replace(",", " ").split()]
    except ValueError:
        raise UserInputError("attention.dims_not_numbers") from None
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad or not dims:
        if bad:
            raise UserInputError("attention.dims_out_of_range", last=d_model - 1, bad=", ".join(map(str, bad)))
        raise UserInputError("attention.dims_missing", last=d_model - 1)
    # 512 × 512 values made a 2.0 MB answer; a 460-px-tall heatmap cannot show more than 256 rows anyway.
    step = -(-positions * d_model // MAX_PE_CELLS)
    title = t("attention.fig_pe", positions=positions, d_model=d_model) + (
        t("attention.fig_pe_every", step=step) if step > 1 else "")
    heat = _big_heatmap(pe[::step], title, t("attention.axis_dimension"), t("attention.axis_position"),
                        y=list(range(0, positions, step)), zmin=-1, zmax=1, height=460)

    def name(d: int) -> str:
        wavelength = 2 * math.pi * 10000 ** ((d - d % 2) / d_model)
        return t("attention.pe_curve", dim=d, fn="sin" if d % 2 == 0 else "cos", wavelength=f"{wavelength:,.1f}")

    curves = lines(list(range(positions)), {name(d): pe[:, d].tolist() for d in dims[:8]},
                   t("attention.fig_pe_curves"), x_title=t("attention.axis_position"), y_title=t("attention.axis_pe_value"))
    return heat, curves


@friendly_errors
def positional_view(positions: float, d_model: float, dims_text: str):
    """The formula evaluated at position 1 (the seed's equations with numbers), the PE heatmap and curves."""
    heat, curves = positional(positions, d_model, dims_text)
    d_model = int(d_model)
    pe = att.positional_encoding(2, d_model)  # (2, d): row 1 is position 1
    values = "; ".join(f"PE(1, {d}) = {'sin' if d % 2 == 0 else 'cos'}(1 / 10000<sup>{d - d % 2}/{d_model}</sup>) = "
                       f"{pe[1, d]:.4f}" for d in range(4))
    last = d_model // 2 - 1
    text = t("attention.pe_worked", d_model=d_model, pos=1, values=values, last=last,
             longest=f"{2 * math.pi * 10000 ** (2 * last / d_model):,.0f}")
    return text, heat, curves


@friendly_errors
def permutation(sentence: str, seed: float):
    """Shuffle the words: without PE the outputs shuffle the same way (equal up to rounding); with PE they change."""
    result = att.permutation_demo(sentence, whole_number(seed, t("attention.shuffle_seed")))
    plain, with_pe = result.word_change(False), result.word_change(True)
    rows = pd.DataFrame([[j + 1, word, result.order[j] + 1, f"{a:.1e}", f"{b:.3f}"]
                         for j, (word, a, b) in enumerate(zip(result.shuffled, plain, with_pe))],
                        columns=[t(f"attention.col_perm_{i}") for i in range(5)])
    verdict = t("attention.verdict_equal" if plain.max() < 1e-9 else "attention.verdict_unequal")
    summary = t("attention.permutation_summary", shuffled=" ".join(result.shuffled), verdict=verdict,
                largest=f"{plain.max():.1e}", mean=f"{with_pe.mean():.2f}")
    labels = [t("attention.word_slot", word=w, slot=j + 1) for j, w in enumerate(result.shuffled)]
    fig = go.Figure([go.Bar(x=labels, y=np.maximum(plain, 1e-18), name=t("attention.without_pe"),
                            marker_color=COLORWAY[0]),
                     go.Bar(x=labels, y=with_pe, name=t("attention.with_pe"), marker_color=COLORWAY[1])])
    fig.update_yaxes(type="log", title_text=t("attention.axis_change"))
    fig.update_xaxes(type="category", tickangle=-30)
    fig.update_layout(barmode="group")
    return summary, rows, styled(fig, t("attention.fig_permutation"), 420)


# ----------------------------------------------------------------------------------------------------------------
# Real model


def _token_labels(maps: att.AttentionMaps, keep: np.ndarray) -> list[str]:
    return unique_labels([t for t, k in zip(maps.tokens, keep) if k])


def _views(maps: att.AttentionMaps, hide_special: bool):
    """The maps to draw, their token labels, and (when hiding) the share that had gone to [CLS]/[SEP]."""
    if hide_special:
        probs, share = att.drop_special(maps.probs, maps.special)
        return probs, _token_labels(maps, ~maps.special), share
    return maps.probs, unique_labels(maps.tokens), None


def _notice(maps: att.AttentionMaps, hide_special: bool) -> str:
    parts = [t("attention.model_badge", badge=maps.badge, layers=maps.layers, heads=maps.heads, T=len(maps.tokens))]
    if maps.truncation is not None:
        cut = maps.truncation.removed_text
        cut = cut[:300] + ("…" if len(cut) > 300 else "")
        parts.append(t("attention.truncated", limit=maps.truncation.max_length,
                       removed=maps.truncation.removed_tokens, cut=cut))
    if (~maps.special).sum() == 1:
        parts.append(t("attention.one_piece"))
    if hide_special:
        parts.append(t("attention.hidden_note"))
    if len(maps.tokens) > MAP_MAX_TOKENS:
        parts.append(t("attention.maps_first", count=_grid_tokens(maps), maps=MAP_MAX_TOKENS))
    elif len(maps.tokens) > _grid_tokens(maps):
        parts.append(t("attention.grid_first", count=_grid_tokens(maps)))
    return "\n\n".join(parts)


def _head_figures(maps: att.AttentionMaps, layer: int, head: int, hide_special: bool):
    probs, labels, share = _views(maps, hide_special)
    n = min(len(labels), MAP_MAX_TOKENS)
    probs, labels, share = probs[..., :n, :n], labels[:n], None if share is None else share[..., :n].astype(np.float32)
    layer, head = min(max(layer, 1), maps.layers), min(max(head, 1), maps.heads)
    extra = {} if share is None else {"customdata": np.repeat(share[layer - 1, head - 1][:, None], len(labels), 1)}
    head_fig = _model_heatmap(probs[layer - 1, head - 1], labels, t("attention.fig_layer_head", layer=layer, head=head),
                              **extra)
    mean = probs[layer - 1].mean(axis=0)  # (t, t): still rows of weights summing to 1
    extra = {} if share is None else {"customdata": np.repeat(share[layer - 1].mean(0)[:, None], len(labels), 1)}
    mean_fig = _model_heatmap(mean, labels, t("attention.fig_layer_mean", layer=layer, heads=maps.heads), **extra)
    return head_fig, mean_fig


def _model_heatmap(values: np.ndarray, labels: list[str], title: str, customdata=None):
    hover = _hover(".4f")
    if customdata is not None:
        hover += "<br>" + t("attention.hover_special_share", fmt=".1%")
    labelled = len(labels) <= 40  # more are too many to label every one
    size = min(620, max(360, 150 + 18 * len(labels)))
    # The axes and title go to the constructor: each update_xaxes/update_yaxes call re-parses and re-dispatches the
    # layout (py-spy: a tenth of the server's time under a class, issue #38).
    fig = go.Figure(go.Heatmap(z=values, x=labels, y=labels, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1,
                               customdata=customdata, hovertemplate=hover + "<extra></extra>",
                               colorbar=dict(thickness=14)),
                    layout=dict(title_text=title, height=size + 60,
                                yaxis=dict(autorange="reversed", type="category", showticklabels=labelled,
                                           title_text=t("attention.axis_query_from")),
                                xaxis=dict(type="category", tickangle=-60, showticklabels=labelled,
                                           title_text=t("attention.axis_key_to"))))
    return styled(fig)


def _grid_tokens(maps: att.AttentionMaps) -> int:
    """Tokens per tile of the layer × head grid: up to GRID_MAX_TOKENS, fewer for models with many heads."""
    return min(GRID_MAX_TOKENS, math.isqrt(GRID_MAX_CELLS // (maps.layers * maps.heads)))


def _grid_figure(maps: att.AttentionMaps, hide_special: bool):
    """bertviz's model view: one small map per (layer, head), layers down, heads across, one colour scale.

    Drawn as ONE heatmap of tiles separated by blank (NaN) gaps: 72–144 separate subplots take plotly seconds to
    build, one tiled trace takes milliseconds and looks the same. Hover names the layer, head and both tokens."""
    probs, labels, _ = _views(maps, hide_special)
    n = min(len(labels), _grid_tokens(maps))
    probs, labels = probs[..., :n, :n], labels[:n]
    L, A = maps.layers, maps.heads
    step = n + 1  # one blank row/column between tiles
    tiled = np.full((L * step - 1, A * step - 1), np.nan, dtype=np.float32)
    for l in range(L):
        for h in range(A):
            tiled[l * step:l * step + n, h * step:h * step + n] = probs[l, h]
    # Category labels must be unique: the gap rows/columns get distinct runs of zero-width spaces.
    head_word, layer_word = t("attention.head"), t("attention.layer")
    x = [f"{head_word} {h + 1} · {labels[j]}" if j < n else "\u200b" * (h + 1) for h in range(A) for j in range(step)][:-1]
    y = [f"{layer_word} {l + 1} · {labels[i]}" if i < n else "\u200b" * (l + 1) for l in range(L) for i in range(step)][:-1]
    # The whole layout in the constructor, head labels included: each update call (and each add_annotation)
    # re-validates the layout.
    head_labels = [dict(x=x[h * step + n // 2], y=1, yref="paper", yanchor="bottom", text=f"H{h + 1}",
                        showarrow=False, font=dict(size=13)) for h in range(A)]
    fig = go.Figure(go.Heatmap(z=tiled, x=x, y=y, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1, hoverongaps=False,
                               colorbar=dict(thickness=12),
                               hovertemplate=_hover() + "<extra></extra>"),
                    layout=dict(
                        title_text=t("attention.fig_grid", layers=L, heads=A), height=min(1500, 120 + 95 * L),
                        xaxis=dict(type="category", showticklabels=False, ticks="", showline=False),
                        yaxis=dict(type="category", autorange="reversed", ticks="", showline=False, showgrid=False,
                                   tickvals=[y[l * step + n // 2] for l in range(L)],
                                   ticktext=[f"L{l + 1}" for l in range(L)]),
                        annotations=head_labels, margin=dict(l=50, r=60, t=70, b=40), plot_bgcolor="white",
                        meta=dict(column_labels=A)))  # a narrow screen shows every k-th head label (figure_head.js)
    return styled(fig)


def _model_unavailable(exc: ModelUnavailableError):
    message = t("attention.unavailable", reason=str(exc))
    blank = empty_figure(t("attention.no_model"))
    return message, blank, blank, blank, gr.update(), gr.update()


@friendly_errors
@gpu_handler
def explore(model_id: str, text: str, pair: str, layer: float, head: float, hide_special: bool,
            progress=gr.Progress()):
    """Run the encoder once; draw the chosen layer/head, the head average and the full layer × head grid."""
    progress(0.1, desc=t("attention.progress_loading"))
    try:
        maps = att.extract_attention(text, pair, model_id)
    except ModelUnavailableError as exc:
        return _model_unavailable(exc)
    layer, head = min(int(layer), maps.layers), min(int(head), maps.heads)
    head_fig, mean_fig = _head_figures(maps, layer, head, bool(hide_special))
    return (_notice(maps, bool(hide_special)), head_fig, mean_fig, _grid_figure(maps, bool(hide_special)),
            gr.update(maximum=maps.layers, value=layer), gr.update(maximum=maps.heads, value=head))


@friendly_errors
@gpu_handler
def show_head(model_id: str, text: str, pair: str, layer: float, head: float, hide_special: bool):
    """Redraw the chosen layer/head and the head average (the maps are cached: no new forward pass)."""
    maps = att.extract_attention(text, pair, model_id)
    return _head_figures(maps, int(layer), int(head), bool(hide_special))
