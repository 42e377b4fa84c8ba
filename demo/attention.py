"""Attention tab (issue #6): from one dot product to the multi-head maps of a real pretrained BERT (seed §8–§11)."""
from __future__ import annotations

import math

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core import attention as att
from core.errors import ModelUnavailableError, UserInputError
from demo import presets
from demo.common import LATEX, TABLE_BUTTONS, friendly_errors, gpu_handler, model_picker, whole_number
from demo.downloads import model_event
from demo.figures import (COLORWAY, DIVERGING_SCALE, SEQUENTIAL_SCALE, empty_figure, heatmap, lines, styled,
                          subplot_grid, unique_labels)

TITLE = "Attention"

INTRO = r"""
### Attention: every token looks at every other token
Each token asks a **query** q, offers a **key** k and carries a **value** v. Query·key scores say how relevant each
token is; a softmax turns a row of scores into weights that sum to 1; the output is the weighted sum of the values:

$$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V$$

Dividing by $\sqrt{d_k}$ keeps large dot products (they grow with the dimension d_k) from pushing the softmax into a
one-hot corner where gradients vanish. Go left to right: the arithmetic, multi-head, positions, then a real model.
"""

PRESETS = {
    "Thinking Machines (seed §9, d_k = 64)": "thinking",
    "i have a dream: masked self-attention": "dream",
    "i have a dream: no mask (compare)": "dream_unmasked",
    "Tiny: x with W_Q, W_K, W_V (3 tokens, d = 3)": "tiny",
}
SCORES = {
    "scaled dot product  qᵀk / √d_k  (Transformer)": "scaled_dot",
    "dot  qᵀk": "dot",
    "general  qᵀ W k": "general",
    "concat  vᵀ tanh(W [q; k])": "concat",
    "additive  vᵀ tanh(W q + U k)": "additive",
}
MODES = ["Q, K, V given", "x with W_Q, W_K, W_V"]
THINKING_NOTE = (
    "**About this preset.** The seed post gives only the scores: q₁·k₁ = 112 and q₁·k₂ = 96 with d_k = 64. "
    "The 64-dimensional vectors here are *constructed* to produce exactly those numbers: q₁ alternates 1, 2; "
    "k₂ is all ones (32·1 + 32·2 = 96); k₁ adds 1 at eight places where q₁ is 2 (96 + 16 = 112). The second query "
    "(Machines) and the values are ours. Scroll the tables sideways to see all 64 columns, or edit any cell."
)
MODEL_EXAMPLES = [
    ["The animal didn't cross the street because it was too tired.", ""],
    ["The cat sat on the mat.", "It was very happy."],
    ["i have a dream", ""],
    ["The bank raised interest rates, so we walked along the river bank instead.", ""],
    ["我爱自然语言处理。", ""],
]
GRID_MAX_TOKENS = 48  # the layer × head grid stays readable (and light in the browser) up to about this many tokens


# ----------------------------------------------------------------------------------------------------------------
# Formatting helpers


def _num(x: float) -> str:
    if np.isneginf(x):
        return "−∞"
    return f"{x:.4f}".rstrip("0").rstrip(".").replace("-", "−")


def _frame(matrix: np.ndarray, prefix: str) -> pd.DataFrame:
    return pd.DataFrame(matrix, columns=[f"{prefix}{j + 1}" for j in range(matrix.shape[1])])


def _labels(tokens_text: str, count: int, fallback: str) -> list[str]:
    tokens = (tokens_text or "").split()
    return tokens if len(tokens) == count else [f"{fallback}{i + 1}" for i in range(count)]


def _matrix_figure(values: np.ndarray, x: list[str], y: list[str], title: str, **kwargs):
    """A heatmap that prints −∞ for masked cells (plotly cannot colour infinities, so they stay blank)."""
    shown = np.where(np.isneginf(values), np.nan, values)
    fig = heatmap(shown, x, y, title, x_title="key", y_title="query", annotate=values.size <= 144, **kwargs)
    if np.isneginf(values).any():
        fig.data[0].update(text=[[_num(v) for v in row] for row in values], texttemplate="%{text}")
    return fig


def _big_heatmap(values: np.ndarray, title: str, x_title: str, y_title: str, colorscale=DIVERGING_SCALE,
                 height: int = 420, **kwargs):
    """A heatmap with numeric axes, for matrices too wide to label every column (PE, concatenated heads)."""
    fig = go.Figure(go.Heatmap(z=np.asarray(values, dtype=np.float32), colorscale=colorscale,  # float32: lighter JSON
                               colorbar=dict(thickness=14), **kwargs,
                               hovertemplate=f"{y_title}: %{{y}}<br>{x_title}: %{{x}}<br>value: %{{z:.3f}}"
                                             "<extra></extra>"))
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title, autorange="reversed")
    return styled(fig, title, height)


# ----------------------------------------------------------------------------------------------------------------
# Step by step


@friendly_errors
def load_preset(name: str):
    """Fill the step-through inputs with a preset: tokens, mode, Q/K/V, x/W, score function, mask, note."""
    kind = PRESETS.get(name)
    if kind is None:
        raise UserInputError(f"Pick one of the presets: {', '.join(PRESETS)}.")
    scaled = list(SCORES)[0]
    if kind == "thinking":
        p = att.thinking_machines()
        empty = _frame(np.zeros((1, 1)), "c")
        return ("Thinking Machines", MODES[0], _frame(p["Q"], "d"), _frame(p["K"], "d"), _frame(p["V"], "d"),
                empty, empty, empty, empty, scaled, False, THINKING_NOTE)
    if kind == "tiny":
        rng = np.random.default_rng(3)
        x = rng.integers(-1, 3, (3, 3)).astype(float)
        w = [rng.integers(-1, 2, (3, 3)).astype(float) for _ in range(3)]
        note = "Three tokens with 3-dimensional embeddings x; Q, K and V are x times W_Q, W_K, W_V."
        return ("Thinking Machines rock", MODES[1], *_qkv_from(x, w), _frame(x, "c"), *(_frame(m, "c") for m in w),
                scaled, False, note)
    p = att.i_have_a_dream()
    masked = kind == "dream"
    note = ("A decoder may not look ahead: token t sees tokens 1…t only. The scores above the diagonal become −∞ "
            "before the softmax, so they get weight 0 and every row still sums to 1. Untick the mask to compare the "
            "same scores without it." if masked else
            "The same scores without a mask: every token sees the whole sentence, as in BERT's encoder.")
    return ("i have a dream", MODES[1], *_qkv_from(p["x"], [p["W_Q"], p["W_K"], p["W_V"]]), _frame(p["x"], "c"),
            *(_frame(p[n], "c") for n in ("W_Q", "W_K", "W_V")), scaled, masked, note)


def steps_with_note(tokens_text, mode, Q, K, V, x, W_Q, W_K, W_V, score_name, causal, note=""):
    """step_through for a preset: the note is part of the preset's inputs, not of the computation."""
    arrays = [None if m is None else np.asarray(m, dtype=float) for m in (Q, K, V, x, W_Q, W_K, W_V)]
    return step_through(tokens_text, mode, *arrays, score_name, causal)


def _step_values(name: str):
    return lambda: tuple(load_preset(name))


STEP_PRESETS = [
    presets.Preset("thinking-machines", "Thinking Machines: 112, 96 → 0.8808", _step_values(list(PRESETS)[0]), "§9"),
    presets.Preset("i-have-a-dream", "i have a dream: causal mask", _step_values(list(PRESETS)[1]), "§9"),
    presets.Preset("dream-no-mask", "i have a dream: no mask", _step_values(list(PRESETS)[2]), "§9"),
    presets.Preset("tiny-xw", "x · W_Q, W_K, W_V (3 × 3)", _step_values(list(PRESETS)[3]), "§8"),
]
MULTIHEAD_PRESETS = [
    presets.Preset("multi-head-512", "d_model = 512 = 8 heads × 64", ("i have a dream", 512, 8, False), "§10"),
    presets.Preset("thinking-8-heads", "Thinking Machines, 8 heads", ("Thinking Machines", 512, 8, False), "§10"),
    presets.Preset("masked-4-heads", "causal, 256 = 4 × 64", ("the cat sat on the mat", 256, 4, True), "§10"),
]
PE_PRESETS = [
    presets.Preset("positional-encoding-512", "sin/cos PE, d_model = 512", (100, 512, "0, 1, 10, 11, 60"), "§11"),
    presets.Preset("pe-short", "50 positions, d_model = 128", (50, 128, "0, 1, 2, 3, 126, 127"), "§11"),
]
PERMUTATION_PRESETS = [
    presets.Preset("word-order", "the dog bit the man (shuffled)", ("the dog bit the man", 0), "§11"),
    presets.Preset("dream-shuffled", "i have a dream (shuffled)", ("i have a dream", 1), "§11"),
]
MODEL_PRESETS = [
    presets.Preset("it-was-tired", "MiniLM: “it” in a long sentence",
                   ("sentence-transformers/all-MiniLM-L6-v2", MODEL_EXAMPLES[0][0], "", 1, 1, False), "§8"),
    presets.Preset("sentence-pair", "MiniLM: a sentence pair",
                   ("sentence-transformers/all-MiniLM-L6-v2", MODEL_EXAMPLES[1][0], MODEL_EXAMPLES[1][1], 3, 1, True),
                   "§13"),
    presets.Preset("two-banks", "MiniLM: two senses of “bank”",
                   ("sentence-transformers/all-MiniLM-L6-v2", MODEL_EXAMPLES[3][0], "", 6, 1, True), "§8"),
]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§9", "q₁·k₁ = 112 and q₁·k₂ = 96 with d_k = 64. How much weight does “Thinking” give to itself?",
     "Divide by √64 = 8: the scores become 14 and 12. The softmax of (14, 12) is 1 / (1 + e⁻²) = 0.8808 for "
     "itself and 0.1192 for “Machines”, so z₁ = 0.88·v₁ + 0.12·v₂.", "steps", "thinking-machines"),
    ("§9", "In masked self-attention on “i have a dream”, which words can “have” look at, and what do its weights "
     "sum to?", "Only “i” and itself: the scores above the diagonal are set to −∞ before the softmax, so they get "
     "weight 0, and every row still sums to 1. The map is lower-triangular.", "steps", "i-have-a-dream"),
    ("§10", "The Transformer base has d_model = 512 and 8 heads. How wide is each head, and what goes into W_O?",
     "512 / 8 = 64 dimensions per head. Each head returns n × 64; the 8 results are concatenated back to n × 512 "
     "and multiplied by W_O (512 × 512).", "multihead", "multi-head-512"),
]


@friendly_errors
def toggle_mode(mode: str):
    """Show the Q/K/V tables or the x/W tables."""
    return gr.update(visible=mode == MODES[0]), gr.update(visible=mode == MODES[1])


def _qkv_from(x: np.ndarray, w: list[np.ndarray]) -> list[pd.DataFrame]:
    return [_frame(x @ m, "d") for m in w]


@friendly_errors
def step_through(tokens_text: str, mode: str, Q, K, V, x, W_Q, W_K, W_V, score_name: str, causal: bool):
    """QKᵀ → ÷√d_k → (mask) → softmax → ×V, each step as a figure, and the arithmetic of each query row."""
    kind = SCORES.get(score_name)
    if kind is None:
        raise UserInputError(f"Pick a score function: {', '.join(SCORES)}.")
    if mode == MODES[1]:
        Q, K, V = att.project(x, W_Q, W_K, W_V)
    steps = att.scaled_dot_product_attention(Q, K, V, causal=bool(causal), kind=kind)
    n, m = steps.scores.shape
    q_labels = _labels(tokens_text, n, "q")
    k_labels = q_labels if n == m and q_labels[0] != "q1" else _labels(tokens_text, m, "k")
    score_title = ("1 · QKᵀ: every query · every key" if kind in ("dot", "scaled_dot")
                   else f"1 · scores ({score_name.split('  ')[0]})")
    figs = [_matrix_figure(steps.scores, k_labels, q_labels, score_title, colorscale=DIVERGING_SCALE, zmid=0)]
    if causal:
        figs.append(_matrix_figure(steps.masked, k_labels, q_labels,
                                   f"2 · ÷ {_num(steps.scale)}, then mask: before softmax", colorscale=DIVERGING_SCALE,
                                   zmid=0))
    else:
        figs.append(_matrix_figure(steps.scaled, k_labels, q_labels,
                                   f"2 · ÷ √d_k = ÷ {_num(steps.scale)}" if steps.scale != 1 else "2 · no scaling",
                                   colorscale=DIVERGING_SCALE, zmid=0))
    sums = [f"{lab} (Σ={s:.2f})" for lab, s in zip(q_labels, steps.row_sums)]
    figs.append(_matrix_figure(steps.probs, k_labels, sums, "3 · softmax of each row" +
                               (": after the mask" if causal else ""), zmin=0, zmax=1, value_format=".3f"))
    d_v = steps.output.shape[1]
    figs.append(heatmap(steps.output, [f"d{j + 1}" for j in range(d_v)], q_labels,
                        f"4 · × V: outputs z (n × d_v = {n} × {d_v})", colorscale=DIVERGING_SCALE, zmid=0,
                        x_title="value dimension", y_title="query", annotate=d_v <= 12))
    return _arithmetic(steps, q_labels, k_labels, kind), *figs


def _arithmetic(steps: att.AttentionSteps, q_labels: list[str], k_labels: list[str], kind: str) -> str:
    n, m = steps.scores.shape
    lines_ = [f"**Shapes:** Q {n} × {steps.d_k} · K {m} × {steps.d_k} · scores {n} × {m} · "
              f"output {n} × {steps.output.shape[1]}."]
    def shown(row) -> str:
        return "[" + ", ".join(_num(v) for v in row[:6]) + (", …" if len(row) > 6 else "") + "]"

    scores = steps.masked if steps.masked is not None else steps.scaled
    for i in range(min(n, 4)):
        weights = " + ".join(f"{p:.4f}·v({k})" for p, k in zip(steps.probs[i][:4], k_labels))
        weights += " + …" if m > 4 else ""
        dot = "q·k" if kind in ("dot", "scaled_dot") else "score"
        scale = f" → ÷ {_num(steps.scale)} → {shown(steps.scaled[i])}" if steps.scale != 1 else ""
        mask = f" → mask → {shown(scores[i])}" if steps.masked is not None else ""
        lines_.append(f"- **{q_labels[i]}**: {dot} = {shown(steps.scores[i])}{scale}{mask} → softmax → "
                      f"{shown(np.round(steps.probs[i], 4))} → z = {weights}")
    if n > 4:
        lines_.append(f"- … and {n - 4} more rows.")
    if kind == "scaled_dot" and n >= 1 and m == 2:
        lines_.append(f"\nTwo keys: the first weight is exactly 1 / (1 + e^−(s₁ − s₂)) = "
                      f"1 / (1 + e^−{_num(steps.scaled[0, 0] - steps.scaled[0, 1])}) = {steps.probs[0, 0]:.4f}.")
    if kind in ("general", "concat", "additive"):
        lines_.append("\nW, U and v of this score function are random (seed 0) here; a real model learns them.")
    return "\n".join(lines_)


# ----------------------------------------------------------------------------------------------------------------
# Multi-head


@friendly_errors
def multi_head(sentence: str, d_model: float, heads: float, causal: bool):
    """Split d_model into heads, attend per head, concatenate, × W_O; every shape listed."""
    words = att.split_words(sentence)
    d_model, heads = int(d_model), int(heads)
    if not 8 <= d_model <= att.MAX_TOY_DIM:
        raise UserInputError(f"d_model must be between 8 and {att.MAX_TOY_DIM}.")
    x = att.word_embeddings(words, d_model) + att.positional_encoding(len(words), d_model)  # (T, d_model)
    result = att.multi_head_attention(x, att.random_weights(d_model), heads, words, causal=bool(causal))
    rows = [[s.name, s.equation, " × ".join(map(str, s.shape))] for s in result.steps]
    summary = (f"**d_model = {d_model} = {heads} heads × {result.d_head}.** Each head gets its own {d_model} × "
               f"{result.d_head} slice of W_Q, W_K and W_V, attends in its own {result.d_head}-dimensional subspace, "
               f"and returns {len(words)} × {result.d_head}; the {heads} results are concatenated back to "
               f"{len(words)} × {d_model} and mixed by W_O ({d_model} × {d_model}). Embeddings and weights are "
               "random (fixed seeds): this shows the plumbing, not learned behaviour.")
    return summary, rows, _heads_figure(result), _concat_figure(result)


def _heads_figure(result: att.MultiHeadResult):
    cols = min(result.heads, 4)
    rows = math.ceil(result.heads / cols)
    labels = unique_labels(result.tokens)
    slanted = len(labels) > 4  # slanted key labels need room below each row, above the next row's titles
    layout, axes = subplot_grid([f"head {h + 1}" for h in range(result.heads)], cols, horizontal_spacing=0.06,
                                vertical_spacing=0.2 if slanted else 0.12,
                                # every token labelled (plotly would thin them out), in a size that fits
                                xaxis=dict(type="category", tickangle=-45 if slanted else 0, dtick=1,
                                           tickfont=dict(size=12)),
                                yaxis=dict(type="category", autorange="reversed", dtick=1, tickfont=dict(size=12)))
    traces = [go.Heatmap(z=result.head_probs[h], x=labels, y=labels, xaxis=x, yaxis=y, coloraxis="coloraxis",
                         hovertemplate=f"head {h + 1}<br>query: %{{y}}<br>key: %{{x}}<br>weight: %{{z:.3f}}"
                                       "<extra></extra>")
              for h, (x, y) in enumerate(axes)]
    return styled(go.Figure(traces, layout=dict(
        layout, coloraxis=dict(colorscale=SEQUENTIAL_SCALE, cmin=0, cmax=1, colorbar=dict(thickness=14)),
        title_text=f"Attention weights of each of the {result.heads} heads (rows: queries, columns: keys)",
        height=max(380, 300 * rows))))


def _concat_figure(result: att.MultiHeadResult):
    fig = _big_heatmap(result.concat, f"Concat(head₁ … head_{result.heads}): {len(result.tokens)} × {result.d_model}, "
                       f"one block of {result.d_head} columns per head", "column of the concatenation", "token",
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
        raise UserInputError("Dimensions must be whole numbers separated by commas, e.g. 0, 1, 10, 11.") from None
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad or not dims:
        raise UserInputError(f"Give one to eight dimensions between 0 and {d_model - 1}"
                             + (f"; {bad} are out of range." if bad else "."))
    heat = _big_heatmap(pe, f"PE matrix: {positions} positions × d_model = {d_model}", "dimension", "position",
                        zmin=-1, zmax=1, height=460)

    def name(d: int) -> str:
        wavelength = 2 * math.pi * 10000 ** ((d - d % 2) / d_model)
        return f"dim {d} ({'sin' if d % 2 == 0 else 'cos'}, wavelength {wavelength:,.1f})"

    curves = lines(list(range(positions)), {name(d): pe[:, d].tolist() for d in dims[:8]},
                   "A few PE dimensions over position: low dimensions wiggle fast, high ones slowly",
                   x_title="position", y_title="PE value")
    return heat, curves


PE_WORKED = ("**The formula with d_model = {d_model}:** PE(pos, 2i) = sin(pos / 10000^(2i/{d_model})), "
             "PE(pos, 2i+1) = cos(pos / 10000^(2i/{d_model})). At pos = {pos}: {values}. Dimension pairs "
             "(2i, 2i+1) share one frequency; the wavelengths grow from 2π ≈ 6.28 (i = 0) to {longest:,.0f} "
             "(i = {last}) positions, so every position gets a distinct pattern.")


@friendly_errors
def positional_view(positions: float, d_model: float, dims_text: str):
    """The formula evaluated at position 1 (the seed's equations with numbers), the PE heatmap and curves."""
    heat, curves = positional(positions, d_model, dims_text)
    d_model = int(d_model)
    pe = att.positional_encoding(2, d_model)  # (2, d): row 1 is position 1
    values = "; ".join(f"PE(1, {d}) = {'sin' if d % 2 == 0 else 'cos'}(1 / 10000^({d - d % 2}/{d_model})) = "
                       f"{pe[1, d]:.4f}" for d in range(4))
    last = d_model // 2 - 1
    text = PE_WORKED.format(d_model=d_model, pos=1, values=values, last=last,
                            longest=2 * math.pi * 10000 ** (2 * last / d_model))
    return text, heat, curves


@friendly_errors
def permutation(sentence: str, seed: float):
    """Shuffle the words: without PE the outputs shuffle the same way (equal up to rounding); with PE they change."""
    result = att.permutation_demo(sentence, whole_number(seed, "the seed"))
    plain, with_pe = result.word_change(False), result.word_change(True)
    rows = [[j + 1, word, result.order[j] + 1, f"{a:.1e}", f"{b:.3f}"]
            for j, (word, a, b) in enumerate(zip(result.shuffled, plain, with_pe))]
    verdict = ("equal up to floating-point rounding" if plain.max() < 1e-9 else "NOT equal (unexpected)")
    summary = (f"**Shuffled:** {' '.join(result.shuffled)}\n\n"
               f"Without positional encoding, each word's output after shuffling is {verdict}: largest difference "
               f"{plain.max():.1e}. Self-attention only sees a *set* of vectors, so word order is invisible to it. "
               f"With PE added to the embeddings, the same words get different outputs (mean difference "
               f"{with_pe.mean():.2f}), so order now matters.")
    labels = [f"{w} (slot {j + 1})" for j, w in enumerate(result.shuffled)]
    fig = go.Figure([go.Bar(x=labels, y=np.maximum(plain, 1e-18), name="without PE", marker_color=COLORWAY[0]),
                     go.Bar(x=labels, y=with_pe, name="with PE", marker_color=COLORWAY[1])])
    fig.update_yaxes(type="log", title_text="‖z_after − z_before‖ (log scale)")
    fig.update_xaxes(type="category", tickangle=-30)
    fig.update_layout(barmode="group")
    return summary, rows, styled(fig, "How much each word's output changed when the sentence was shuffled", 420)


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
    parts = [f"**Model:** {maps.badge} · {maps.layers} layers × {maps.heads} heads · {len(maps.tokens)} tokens."]
    if maps.truncation is not None:
        cut = maps.truncation.removed_text
        cut = cut[:300] + ("…" if len(cut) > 300 else "")
        parts.append(f"⚠️ **Truncated:** the input is longer than the model's {maps.truncation.max_length} tokens; "
                     f"the last {maps.truncation.removed_tokens} tokens were cut: “{cut}”")
    if (~maps.special).sum() == 1:
        parts.append("Only one word-piece: every attention row has a single real token to look at (and [CLS], "
                     "[SEP]). With them hidden, the map is 1 × 1 and trivially 1. Type a longer sentence.")
    if hide_special:
        parts.append("[CLS]/[SEP] rows and columns are hidden and each row is **renormalised** to sum to 1 over "
                     "the remaining tokens; hover shows the share of the row that had gone to [CLS]/[SEP].")
    if len(maps.tokens) > GRID_MAX_TOKENS:
        parts.append(f"The layer × head grid shows the first {GRID_MAX_TOKENS} tokens; the two large maps show all.")
    return "\n\n".join(parts)


def _head_figures(maps: att.AttentionMaps, layer: int, head: int, hide_special: bool):
    probs, labels, share = _views(maps, hide_special)
    layer, head = min(max(layer, 1), maps.layers), min(max(head, 1), maps.heads)
    extra = {} if share is None else {"customdata": np.repeat(share[layer - 1, head - 1][:, None], len(labels), 1)}
    head_fig = _model_heatmap(probs[layer - 1, head - 1], labels, f"Layer {layer}, head {head}", **extra)
    mean = probs[layer - 1].mean(axis=0)  # (t, t): still rows of weights summing to 1
    extra = {} if share is None else {"customdata": np.repeat(share[layer - 1].mean(0)[:, None], len(labels), 1)}
    mean_fig = _model_heatmap(mean, labels, f"Layer {layer}, average of its {maps.heads} heads", **extra)
    return head_fig, mean_fig


def _model_heatmap(values: np.ndarray, labels: list[str], title: str, customdata=None):
    hover = "query: %{y}<br>key: %{x}<br>weight: %{z:.4f}"
    if customdata is not None:
        hover += "<br>share that went to [CLS]/[SEP]: %{customdata:.1%}"
    fig = go.Figure(go.Heatmap(z=values, x=labels, y=labels, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1,
                               customdata=customdata, hovertemplate=hover + "<extra></extra>",
                               colorbar=dict(thickness=14)))
    fig.update_yaxes(autorange="reversed", type="category", title_text="query (attends from)")
    fig.update_xaxes(type="category", tickangle=-60, title_text="key (attends to)")
    if len(labels) > 40:  # too many to label every one
        fig.update_xaxes(showticklabels=False)
        fig.update_yaxes(showticklabels=False)
    size = min(620, max(360, 150 + 18 * len(labels)))
    return styled(fig, title, size + 60)


def _grid_figure(maps: att.AttentionMaps, hide_special: bool):
    """bertviz's model view: one small map per (layer, head), layers down, heads across, one colour scale.

    Drawn as ONE heatmap of tiles separated by blank (NaN) gaps: 72–144 separate subplots take plotly seconds to
    build, one tiled trace takes milliseconds and looks the same. Hover names the layer, head and both tokens."""
    probs, labels, _ = _views(maps, hide_special)
    t = min(len(labels), GRID_MAX_TOKENS)
    probs, labels = probs[..., :t, :t], labels[:t]
    L, A = maps.layers, maps.heads
    step = t + 1  # one blank row/column between tiles
    tiled = np.full((L * step - 1, A * step - 1), np.nan, dtype=np.float32)
    for l in range(L):
        for h in range(A):
            tiled[l * step:l * step + t, h * step:h * step + t] = probs[l, h]
    # Category labels must be unique: the gap rows/columns get distinct runs of zero-width spaces.
    x = [f"head {h + 1} · {labels[j]}" if j < t else "\u200b" * (h + 1) for h in range(A) for j in range(step)][:-1]
    y = [f"layer {l + 1} · {labels[i]}" if i < t else "\u200b" * (l + 1) for l in range(L) for i in range(step)][:-1]
    fig = go.Figure(go.Heatmap(z=tiled, x=x, y=y, colorscale=SEQUENTIAL_SCALE, zmin=0, zmax=1, hoverongaps=False,
                               colorbar=dict(thickness=12),
                               hovertemplate="query: %{y}<br>key: %{x}<br>weight: %{z:.3f}<extra></extra>"))
    fig.update_xaxes(type="category", showticklabels=False, ticks="", showline=False)
    fig.update_yaxes(type="category", autorange="reversed", ticks="", showline=False, showgrid=False,
                     tickvals=[y[l * step + t // 2] for l in range(L)], ticktext=[f"L{l + 1}" for l in range(L)])
    # All head labels in one layout update: add_annotation re-validates every earlier annotation each call.
    head_labels = [dict(x=x[h * step + t // 2], y=1, yref="paper", yanchor="bottom", text=f"H{h + 1}",
                        showarrow=False, font=dict(size=13)) for h in range(A)]
    fig.update_layout(annotations=head_labels, margin=dict(l=50, r=60, t=70, b=40), plot_bgcolor="white")
    return styled(fig, f"Every layer × head ({L} × {A}): rows are layers, columns heads; hover a cell for its "
                       "tokens and weight", min(1500, 120 + 95 * L))


def _model_unavailable(exc: ModelUnavailableError):
    message = (f"⚠️ **This checkpoint is not available here.** {exc}\n\nThe bundled MiniLM-L6 "
               "(sentence-transformers/all-MiniLM-L6-v2) always works offline: pick it in the list.")
    blank = empty_figure("No model loaded: see the message above.")
    return message, blank, blank, blank, gr.update(), gr.update()


@friendly_errors
@gpu_handler
def explore(model_id: str, text: str, pair: str, layer: float, head: float, hide_special: bool,
            progress=gr.Progress()):
    """Run the encoder once; draw the chosen layer/head, the head average and the full layer × head grid."""
    progress(0.1, desc="loading the model and reading the text")
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


# ----------------------------------------------------------------------------------------------------------------
# Layout


def _matrix_input(label: str, value: np.ndarray | None = None) -> gr.Dataframe:
    return gr.Dataframe(None if value is None else _frame(value, "d"), label=label, type="array", datatype="number",
                        interactive=True, max_height=220, wrap=False, buttons=TABLE_BUTTONS)


def build() -> None:
    gr.Markdown(INTRO, latex_delimiters=LATEX)
    lesson_slot = gr.Column()

    with gr.Tab("Step by step", id="steps") as steps_tab:
        gr.Markdown("Load a preset or edit the numbers, then press **Compute**. Rows are tokens. With the mask ticked "
                    "(a decoder), each token may attend only to itself and the tokens before it.")
        with gr.Row():
            preset = gr.Dropdown(list(PRESETS), value=list(PRESETS)[0], label="Preset", scale=2)
            load_button = gr.Button("Load preset", scale=1)
        preset_bar = gr.Column()
        preset_note = gr.Markdown(THINKING_NOTE)
        with gr.Row():
            tokens = gr.Textbox(label="Token names (one per row, separated by spaces)", value="Thinking Machines",
                                scale=2)
            mode = gr.Radio(MODES, value=MODES[0], label="Inputs", scale=2)
            score = gr.Dropdown(list(SCORES), value=list(SCORES)[0], label="Score function", scale=2)
            causal = gr.Checkbox(False, label="causal mask (decoder)", scale=1)
        p = att.thinking_machines()
        with gr.Group(visible=True) as qkv_group:
            Q = _matrix_input("Q (n × d_k)", p["Q"])
            K = _matrix_input("K (m × d_k)", p["K"])
            V = _matrix_input("V (m × d_v)", p["V"])
        with gr.Group(visible=False) as x_group:
            x = _matrix_input("x (n × d_model): one embedding per token")
            with gr.Row():
                W_Q, W_K, W_V = (_matrix_input(f"{n} (d_model × d_k)") for n in ("W_Q", "W_K", "W_V"))
        compute_button = gr.Button("Compute", variant="primary")
        arithmetic = gr.Markdown()
        with gr.Row():
            fig_scores = gr.Plot(empty_figure("Press “Compute”."), show_label=False)
            fig_scaled = gr.Plot(empty_figure("Scaled scores appear here."), show_label=False)
        with gr.Row():
            fig_probs = gr.Plot(empty_figure("Softmax weights appear here."), show_label=False)
            fig_out = gr.Plot(empty_figure("Outputs appear here."), show_label=False)
        step_inputs = [tokens, mode, Q, K, V, x, W_Q, W_K, W_V, score, causal]
        step_outputs = [arithmetic, fig_scores, fig_scaled, fig_probs, fig_out]
        mode.change(toggle_mode, mode, [qkv_group, x_group], api_name="attention_mode", api_visibility="undocumented")
        load_button.click(load_preset, preset, [tokens, mode, Q, K, V, x, W_Q, W_K, W_V, score, causal, preset_note],
                          api_name="attention_preset").then(step_through, step_inputs, step_outputs,
                                                            api_name="attention_preset_steps",
                                                            api_visibility="undocumented")
        compute_button.click(step_through, step_inputs, step_outputs, api_name="attention_steps")
        steps_view = presets.View("attention", "steps", step_inputs + [preset_note], step_outputs, steps_with_note,
                                  STEP_PRESETS, where=steps_tab)
        with preset_bar:
            steps_view.buttons()

    with gr.Tab("Multi-head", id="multihead") as multihead_tab:
        gr.Markdown(latex_delimiters=LATEX, value=r"Multi-head attention (§10) runs h attentions side by side on slices of the model dimension: "
                    r"$\mathrm{head}_i = \mathrm{Attention}(xW_Q^i, xW_K^i, xW_V^i)$, "
                    r"$\mathrm{MultiHead}(x) = \mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W_O$. "
                    "The Transformer base uses d_model = 512 and 8 heads of 64.")
        with gr.Row():
            mh_sentence = gr.Textbox(label="Sentence (up to 16 words)", value="i have a dream", scale=3)
            d_model = gr.Dropdown([64, 128, 256, 512], value=512, label="d_model", scale=1)
            heads = gr.Dropdown([1, 2, 4, 8, 16], value=8, label="heads h", scale=1)
            mh_causal = gr.Checkbox(False, label="causal mask", scale=1)
        mh_button = gr.Button("Split, attend, concatenate", variant="primary")
        mh_bar = gr.Column()
        mh_summary = gr.Markdown()
        shapes = gr.Dataframe(headers=["step", "equation", "shape"], interactive=False, label="Every shape on the way",
            buttons=TABLE_BUTTONS)
        heads_plot = gr.Plot(empty_figure("Press the button to see each head's attention."), show_label=False)
        concat_plot = gr.Plot(empty_figure("The concatenated heads appear here."), show_label=False)
        mh_button.click(multi_head, [mh_sentence, d_model, heads, mh_causal],
                        [mh_summary, shapes, heads_plot, concat_plot], api_name="attention_multihead")
        multihead_view = presets.View("attention", "multihead", [mh_sentence, d_model, heads, mh_causal],
                                      [mh_summary, shapes, heads_plot, concat_plot], multi_head, MULTIHEAD_PRESETS,
                                      where=multihead_tab)
        with mh_bar:
            multihead_view.buttons()

    with gr.Tab("Positions", id="positions") as positions_tab:
        gr.Markdown(latex_delimiters=LATEX, value=r"Attention treats its input as a set. The Transformer adds a positional encoding to each "
                    r"embedding (§11): $PE_{(pos,2i)} = \sin(pos/10000^{2i/d_{model}})$, "
                    r"$PE_{(pos,2i+1)} = \cos(pos/10000^{2i/d_{model}})$.")
        with gr.Row():
            positions = gr.Slider(2, 512, value=100, step=1, label="positions")
            pe_dim = gr.Slider(4, 512, value=128, step=2, label="d_model")
            dims = gr.Textbox(value="0, 1, 10, 11, 60", label="dimensions to plot (up to 8)")
        pe_button = gr.Button("Draw the positional encoding", variant="primary")
        pe_bar = gr.Column()
        pe_worked = gr.Markdown()
        pe_heat = gr.Plot(empty_figure("Press the button."), show_label=False)
        pe_lines = gr.Plot(empty_figure("Curves appear here."), show_label=False)
        pe_button.click(positional_view, [positions, pe_dim, dims], [pe_worked, pe_heat, pe_lines],
                        api_name="attention_pe")
        pe_view = presets.View("attention", "positions", [positions, pe_dim, dims], [pe_worked, pe_heat, pe_lines],
                               positional_view, PE_PRESETS, where=positions_tab)
        with pe_bar:
            pe_view.buttons()

        gr.Markdown("#### Without positions, word order is invisible\nOne attention layer with random weights reads "
                    "a sentence and a shuffle of it. Each word has a fixed embedding wherever it stands.")
        with gr.Row():
            perm_sentence = gr.Textbox(label="Sentence", value="the dog bit the man", scale=3)
            perm_seed = gr.Number(value=0, precision=0, label="shuffle seed", scale=1)
        perm_button = gr.Button("Shuffle and compare", variant="primary")
        perm_bar = gr.Column()
        perm_summary = gr.Markdown()
        perm_table = gr.Dataframe(headers=["slot", "word", "was at", "change without PE", "change with PE"],
                                  interactive=False, buttons=TABLE_BUTTONS)
        perm_plot = gr.Plot(empty_figure("Press the button."), show_label=False)
        perm_button.click(permutation, [perm_sentence, perm_seed], [perm_summary, perm_table, perm_plot],
                          api_name="attention_permutation")
        perm_view = presets.View("attention", "permutation", [perm_sentence, perm_seed],
                                 [perm_summary, perm_table, perm_plot], permutation, PERMUTATION_PRESETS,
                                 where=positions_tab)
        with perm_bar:
            perm_view.buttons()

    with gr.Tab("Real model", id="model") as model_tab:
        gr.Markdown("Self-attention inside a pretrained BERT-family encoder, on your text. The bundled model is "
                    "MiniLM-L6 (6 layers × 12 heads, bert-base-uncased's WordPiece vocabulary) and works offline; "
                    "any BERT or DistilBERT checkpoint works when you are online or have it in a local folder. "
                    "Rows are the tokens attending, columns the tokens attended to; each row sums to 1. Things to "
                    "look for: heads that look at the previous or next token, heads that park on [SEP] (hide it to "
                    "see the rest), and in the pair example, heads that link the two sentences.")
        with gr.Row():
            picker = model_picker("encoder")
            text = gr.Textbox(label="Sentence", value=MODEL_EXAMPLES[0][0], scale=3)
            pair = gr.Textbox(label="Second sentence (optional: makes a pair)", scale=2)
        with gr.Row():
            layer = gr.Slider(1, 6, value=1, step=1, label="layer")
            head = gr.Slider(1, 12, value=1, step=1, label="head")
            hide = gr.Checkbox(False, label="hide [CLS]/[SEP] (renormalise rows)")
        run_button = gr.Button("Show attention", variant="primary")
        gr.Examples(MODEL_EXAMPLES, inputs=[text, pair])
        model_bar = gr.Column()
        notice = gr.Markdown()
        with gr.Row():
            head_plot = gr.Plot(empty_figure("Press “Show attention”."), show_label=False)
            mean_plot = gr.Plot(empty_figure("The head average appears here."), show_label=False)
        grid_plot = gr.Plot(empty_figure("The layer × head grid appears here."), show_label=False)
        model_inputs = [picker, text, pair, layer, head, hide]
        model_outputs = [notice, head_plot, mean_plot, grid_plot, layer, head]
        encoder = {"encoder": picker}
        model_event(run_button.click, encoder, explore, model_inputs, model_outputs, api_name="attention_model")
        model_event(hide.input, encoder, explore, model_inputs, model_outputs, api_name="attention_model_hide",
                    api_visibility="undocumented")
        model_event(layer.release, encoder, show_head, model_inputs, [head_plot, mean_plot], api_name="attention_layer")
        model_event(head.release, encoder, show_head, model_inputs, [head_plot, mean_plot], api_name="attention_head")
        model_view = presets.View("attention", "model", model_inputs, model_outputs, explore, MODEL_PRESETS,
                                  where=model_tab)
        with model_bar:
            model_view.buttons()

    views = {"steps": steps_view, "multihead": multihead_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
