"""Attention tab (issue #6): from one dot product to the multi-head maps of a real pretrained BERT (seed §8–§11)."""
from __future__ import annotations


import gradio as gr
import numpy as np
import pandas as pd

from core import attention as att
from core.errors import UserInputError
from demo import presets
from demo.common import LATEX, TABLE_BUTTONS, friendly_errors, model_picker
from demo.attention_views import (MODEL_EXAMPLES, explore, multi_head, permutation, positional,  # noqa: F401
                                  positional_view, show_head)
from demo.figures import DIVERGING_SCALE, empty_figure, heatmap

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
        run_button.click(explore, model_inputs, model_outputs, api_name="attention_model", concurrency_id="bert", concurrency_limit=4)
        hide.input(explore, model_inputs, model_outputs, api_name="attention_model_hide", concurrency_id="bert", concurrency_limit=4, api_visibility="undocumented")
        layer.release(show_head, model_inputs, [head_plot, mean_plot], api_name="attention_layer", concurrency_id="bert", concurrency_limit=4)
        head.release(show_head, model_inputs, [head_plot, mean_plot], api_name="attention_head", concurrency_id="bert", concurrency_limit=4)
        model_view = presets.View("attention", "model", model_inputs, model_outputs, explore, MODEL_PRESETS,
                                  where=model_tab)
        with model_bar:
            model_view.buttons()

    views = {"steps": steps_view, "multihead": multihead_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
