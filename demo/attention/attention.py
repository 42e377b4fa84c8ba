"""Attention tab (issue #6): from one dot product to the multi-head maps of a real pretrained BERT (seed §8–§11)."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pandas as pd

from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_LIST_CHARS, MAX_TEXT_CHARS
from core.text.seeds import thinking_machines
from demo.kit import lessons, presets
from demo.server import result_cache
from demo.attention.views import (
    MODEL_EXAMPLES,
    PERMUTATION_HEADERS,
    SHAPE_HEADERS,
    explore,
    multi_head,
    permutation,
    positional_view,
    show_head,
)
from demo.server.handlers import friendly_errors
from demo.kit.widgets import LATEX, TABLE_BUTTONS, model_picker
from demo.server.downloads import model_event
from demo.kit.figures import DIVERGING_SCALE, heatmap
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
att = lazy_import("core.attention.attention")

TITLE = "Attention"
HISTORY = [(8, "2014–15", "attention", "attention", "thinking-machines")]  # the Overview's timeline

# Values are language-free identifiers (the API takes them); the labels the learner sees come from the tables.
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


# ----------------------------------------------------------------------------------------------------------------
# Formatting helpers


def _num(x: float) -> str:
    if np.isneginf(x):
        return "−∞"
    return f"{x:.4f}".rstrip("0").rstrip(".").replace("-", "−")


def _frame(matrix: np.ndarray, prefix: str) -> pd.DataFrame:
    return pd.DataFrame(matrix, columns=[f"{prefix}{j + 1}" for j in range(matrix.shape[1])])


def _labels(tokens_text: str, n: int, m: int) -> tuple[list[str], list[str]]:
    """Names of the n query rows and m key rows: the typed token names when there is one per row (of Q, or of K when
    their counts differ), q1…/k1… when the box is empty. Any other count is refused with how many are needed: names
    that silently fell back to numbers looked like a result about the tokens the learner typed."""
    tokens = (tokens_text or "").split()

    def numbered(count: int, prefix: str) -> list[str]:
        return [f"{prefix}{i + 1}" for i in range(count)]

    if not tokens:
        return numbered(n, "q"), numbered(m, "k")
    if len(tokens) == n:
        return tokens, tokens if n == m else numbered(m, "k")
    if len(tokens) == m:
        return numbered(n, "q"), tokens
    raise UserInputError("attention.token_count", given=len(tokens), n=n, m=m)


def _matrix_figure(values: np.ndarray, x: list[str], y: list[str], title: str, **kwargs):
    """A heatmap that prints −∞ for masked cells (plotly cannot colour infinities, so they stay blank)."""
    shown = np.where(np.isneginf(values), np.nan, values)
    fig = heatmap(shown, x, y, title, x_title=t("attention.axis_key"), y_title=t("attention.axis_query"),
                  annotate=values.size <= 144, **kwargs)
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
        raise UserInputError("attention.pick_preset", choices=", ".join(PRESETS))
    scaled = list(SCORES)[0]
    if kind == "thinking":
        p = thinking_machines()
        empty = _frame(np.zeros((1, 1)), "c")
        return ("Thinking Machines", MODES[0], _frame(p["Q"], "d"), _frame(p["K"], "d"), _frame(p["V"], "d"),
                empty, empty, empty, empty, scaled, False, t("attention.thinking_note"))
    if kind == "tiny":
        rng = np.random.default_rng(3)
        x = rng.integers(-1, 3, (3, 3)).astype(float)
        w = [rng.integers(-1, 2, (3, 3)).astype(float) for _ in range(3)]
        note = t("attention.tiny_note")
        return ("Thinking Machines rock", MODES[1], *_qkv_from(x, w), _frame(x, "c"), *(_frame(m, "c") for m in w),
                scaled, False, note)
    p = att.i_have_a_dream()
    masked = kind == "dream"
    note = t("attention.dream_masked_note" if masked else "attention.dream_unmasked_note")
    return ("i have a dream", MODES[1], *_qkv_from(p["x"], [p["W_Q"], p["W_K"], p["W_V"]]), _frame(p["x"], "c"),
            *(_frame(p[n], "c") for n in ("W_Q", "W_K", "W_V")), scaled, masked, note)


def steps_with_note(tokens_text, mode, Q, K, V, x, W_Q, W_K, W_V, score_name, causal, note=""):
    """step_through for a preset: the note is part of the preset's inputs, not of the computation."""
    arrays = [None if m is None else np.asarray(m, dtype=float) for m in (Q, K, V, x, W_Q, W_K, W_V)]
    return step_through(tokens_text, mode, *arrays, score_name, causal)


def _step_values(name: str):
    return lambda: tuple(load_preset(name))


P = presets.Preset
STEP_PRESETS = [
    P("thinking-machines", label("attention.preset_thinking"), _step_values(list(PRESETS)[0]), "§9"),
    P("i-have-a-dream", label("attention.preset_dream"), _step_values(list(PRESETS)[1]), "§9"),
    P("dream-no-mask", label("attention.preset_dream_no_mask"), _step_values(list(PRESETS)[2]), "§9"),
    P("tiny-xw", label("attention.preset_tiny"), _step_values(list(PRESETS)[3]), "§8"),
]
MULTIHEAD_PRESETS = [
    P("multi-head-512", label("attention.preset_mh_512"), ("i have a dream", 512, 8, False), "§10"),
    P("thinking-8-heads", label("attention.preset_mh_thinking"), ("Thinking Machines", 512, 8, False), "§10"),
    P("masked-4-heads", label("attention.preset_mh_masked"), ("the cat sat on the mat", 256, 4, True), "§10"),
]
PE_PRESETS = [
    P("positional-encoding-512", label("attention.preset_pe_512"), (100, 512, "0, 1, 10, 11, 60"), "§11"),
    P("pe-short", label("attention.preset_pe_short"), (50, 128, "0, 1, 2, 3, 126, 127"), "§11"),
]
PERMUTATION_PRESETS = [
    P("word-order", label("attention.preset_word_order"), ("the dog bit the man", 0), "§11"),
    P("dream-shuffled", label("attention.preset_dream_shuffled"), ("i have a dream", 1), "§11"),
]
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PRESETS = [
    P("it-was-tired", label("attention.preset_it"), (MINILM, MODEL_EXAMPLES[0][0], "", 1, 1, False), "§8"),
    P("sentence-pair", label("attention.preset_pair"), (MINILM, MODEL_EXAMPLES[1][0], MODEL_EXAMPLES[1][1], 3, 1, True),
      "§13"),
    P("two-banks", label("attention.preset_banks"), (MINILM, MODEL_EXAMPLES[3][0], "", 6, 1, True), "§8"),
    P("chinese-characters", label("attention.preset_chinese"), (MINILM, MODEL_EXAMPLES[4][0], "", 1, 1, False), "§8"),
]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§9", label("attention.lesson_1_q"), label("attention.lesson_1_a"), "steps", "thinking-machines"),
    ("§9", label("attention.lesson_2_q"), label("attention.lesson_2_a"), "steps", "i-have-a-dream"),
    ("§10", label("attention.lesson_3_q"), label("attention.lesson_3_a"), "multihead", "multi-head-512"),
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
        raise UserInputError("attention.pick_score", choices=", ".join(SCORES))
    if mode == MODES[1]:
        Q, K, V = att.project(x, W_Q, W_K, W_V)
    steps = att.scaled_dot_product_attention(Q, K, V, causal=bool(causal), kind=kind)
    n, m = steps.scores.shape
    q_labels, k_labels = _labels(tokens_text, n, m)
    score_title = (t("attention.fig_qk") if kind in ("dot", "scaled_dot")
                   else t("attention.fig_scores", name=t(f"attention.score_{kind}")))
    figs = [_matrix_figure(steps.scores, k_labels, q_labels, score_title, colorscale=DIVERGING_SCALE, zmid=0)]
    if causal:
        figs.append(_matrix_figure(steps.masked, k_labels, q_labels,
                                   t("attention.fig_scaled_masked", scale=_num(steps.scale)), colorscale=DIVERGING_SCALE,
                                   zmid=0))
    else:
        figs.append(_matrix_figure(steps.scaled, k_labels, q_labels,
                                   t("attention.fig_scaled", scale=_num(steps.scale)) if steps.scale != 1 else t("attention.fig_unscaled"),
                                   colorscale=DIVERGING_SCALE, zmid=0))
    sums = [f"{lab} (Σ={s:.2f})" for lab, s in zip(q_labels, steps.row_sums)]
    figs.append(_matrix_figure(steps.probs, k_labels, sums,
                               t("attention.fig_softmax_masked" if causal else "attention.fig_softmax"),
                               zmin=0, zmax=1, value_format=".3f"))
    d_v = steps.output.shape[1]
    figs.append(heatmap(steps.output, [f"d{j + 1}" for j in range(d_v)], q_labels,
                        t("attention.fig_output", n=n, d_v=d_v), colorscale=DIVERGING_SCALE, zmid=0,
                        x_title=t("attention.axis_value_dim"), y_title=t("attention.axis_query"), annotate=d_v <= 12))
    return _arithmetic(steps, q_labels, k_labels, kind), *figs


def _arithmetic(steps: att.AttentionSteps, q_labels: list[str], k_labels: list[str], kind: str) -> str:
    n, m = steps.scores.shape
    lines_ = [t("attention.shapes", n=n, m=m, d_k=steps.d_k, d_v=steps.output.shape[1])]
    def shown(row) -> str:
        return "[" + ", ".join(_num(v) for v in row[:6]) + (", …" if len(row) > 6 else "") + "]"

    scores = steps.masked if steps.masked is not None else steps.scaled
    for i in range(min(n, 4)):
        weights = " + ".join(f"{p:.4f}·v({k})" for p, k in zip(steps.probs[i][:4], k_labels))
        weights += " + …" if m > 4 else ""
        dot = "q·k" if kind in ("dot", "scaled_dot") else t("attention.score_word")
        scale = f" → ÷ {_num(steps.scale)} → {shown(steps.scaled[i])}" if steps.scale != 1 else ""
        mask = f" → mask → {shown(scores[i])}" if steps.masked is not None else ""
        lines_.append(f"- **{q_labels[i]}**: {dot} = {shown(steps.scores[i])}{scale}{mask} → softmax → "
                      f"{shown(np.round(steps.probs[i], 4))} → z = {weights}")
    if n > 4:
        lines_.append(t("attention.more_rows", count=n - 4))
    if kind == "scaled_dot" and n >= 1 and m == 2:
        lines_.append("\n" + t("attention.two_keys", gap=_num(steps.scaled[0, 0] - steps.scaled[0, 1]),
                                    weight=f"{steps.probs[0, 0]:.4f}"))
    if kind in ("general", "concat", "additive"):
        lines_.append("\n" + t("attention.random_params"))
    return "\n".join(lines_)


# ----------------------------------------------------------------------------------------------------------------
# Layout


def _matrix_input(name: str, value: np.ndarray | None = None) -> gr.Dataframe:
    return gr.Dataframe(None if value is None else _frame(value, "d"), label=name, type="array", datatype="number",
                        interactive=True, max_height=220, wrap=False, buttons=TABLE_BUTTONS)


def _choices(names, key: str) -> list[tuple]:
    """Dropdown choices: the learner sees the translated label, the handler gets the language-free value."""
    return [(label(f"{key}_{i}"), name) for i, name in enumerate(names)]


def build() -> None:
    gr.Markdown(label("attention.intro"), latex_delimiters=LATEX)
    lesson_slot = gr.Column()

    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("attention.tab_steps"), id="steps") as steps_tab:
            gr.Markdown(label("attention.steps_intro"))
            preset_bar = gr.Column()
            preset_note = gr.Markdown(label("attention.thinking_note"))
            with gr.Row():
                tokens = gr.Textbox(label=label("attention.token_names"), value="Thinking Machines", scale=2,
                                    max_length=MAX_LIST_CHARS)
                mode = gr.Radio(_choices(MODES, "attention.choice_mode"), value=MODES[0], label=label("attention.inputs"),
                                scale=2)
                score = gr.Dropdown(_choices(SCORES, "attention.choice_score"), value=list(SCORES)[0],
                                    label=label("attention.score_function"), scale=2)
                causal = gr.Checkbox(False, label=label("attention.causal_decoder"), scale=1)
            p = thinking_machines()
            with gr.Group(visible=True) as qkv_group:
                Q = _matrix_input("Q (n × d_k)", p["Q"])
                K = _matrix_input("K (m × d_k)", p["K"])
                V = _matrix_input("V (m × d_v)", p["V"])
            with gr.Group(visible=False) as x_group:
                x = _matrix_input(label("attention.x_matrix"))
                with gr.Row():
                    W_Q, W_K, W_V = (_matrix_input(f"{n} (d_model × d_k)") for n in ("W_Q", "W_K", "W_V"))
            compute_button = gr.Button(label("attention.compute"), variant="primary")
            arithmetic = gr.Markdown()
            with gr.Row():
                fig_scores = gr.Plot(show_label=False)
                fig_scaled = gr.Plot(show_label=False)
            with gr.Row():
                fig_probs = gr.Plot(show_label=False)
                fig_out = gr.Plot(show_label=False)
            step_inputs = [tokens, mode, Q, K, V, x, W_Q, W_K, W_V, score, causal]
            step_outputs = [arithmetic, fig_scores, fig_scaled, fig_probs, fig_out]
            mode.change(toggle_mode, mode, [qkv_group, x_group], api_name="attention_mode", api_visibility="undocumented",
                        show_progress="hidden", show_progress_on=mode)  # not the groups: see presets.View.progress_on
            compute_button.click(step_through, step_inputs, step_outputs, api_name="attention_steps")
            steps_view = presets.View("attention", "steps", step_inputs + [preset_note], step_outputs, steps_with_note,
                                      STEP_PRESETS, where=steps_tab)
            with preset_bar:
                steps_view.buttons()

        with gr.Tab(label("attention.tab_multihead"), id="multihead") as multihead_tab:
            gr.Markdown(label("attention.multihead_intro"), latex_delimiters=LATEX)
            with gr.Row():
                mh_sentence = gr.Textbox(label=label("attention.sentence_16"), value="i have a dream", scale=3,
                                         max_length=MAX_LIST_CHARS)
                d_model = gr.Dropdown([64, 128, 256, 512], value=512, label="d_model", scale=1)
                heads = gr.Dropdown([1, 2, 4, 8, 16], value=8, label=label("attention.heads_h"), scale=1)
                mh_causal = gr.Checkbox(False, label=label("attention.causal_mask"), scale=1)
            mh_button = gr.Button(label("attention.multihead_button"), variant="primary")
            mh_bar = gr.Column()
            mh_summary = gr.Markdown()
            shapes = gr.Dataframe(headers=SHAPE_HEADERS, interactive=False, label=label("attention.every_shape"),
                                  buttons=TABLE_BUTTONS)
            heads_plot = gr.Plot(show_label=False)
            concat_plot = gr.Plot(show_label=False)
            mh_button.click(result_cache.cached(multi_head, "attention_multihead", {}),  # seeded weights: one answer
                            [mh_sentence, d_model, heads, mh_causal],
                            [mh_summary, shapes, heads_plot, concat_plot], api_name="attention_multihead")
            multihead_view = presets.View("attention", "multihead", [mh_sentence, d_model, heads, mh_causal],
                                          [mh_summary, shapes, heads_plot, concat_plot], multi_head, MULTIHEAD_PRESETS,
                                          where=multihead_tab)
            with mh_bar:
                multihead_view.buttons()

        with gr.Tab(label("attention.tab_positions"), id="positions") as positions_tab:
            gr.Markdown(label("attention.positions_intro"), latex_delimiters=LATEX)
            with gr.Row():
                positions = gr.Slider(2, 512, value=100, step=1, label=label("attention.positions"))
                pe_dim = gr.Slider(4, 512, value=512, step=2, label="d_model")  # PE_PRESETS[0], the default
                dims = gr.Textbox(value="0, 1, 10, 11, 60", label=label("attention.dims_to_plot"),
                                  max_length=MAX_LIST_CHARS)
            pe_button = gr.Button(label("attention.pe_button"), variant="primary")
            pe_bar = gr.Column()
            pe_worked = gr.Markdown()
            pe_heat = gr.Plot(show_label=False)
            pe_lines = gr.Plot(show_label=False)
            pe_button.click(positional_view, [positions, pe_dim, dims], [pe_worked, pe_heat, pe_lines],
                            api_name="attention_pe")
            pe_view = presets.View("attention", "positions", [positions, pe_dim, dims], [pe_worked, pe_heat, pe_lines],
                                   positional_view, PE_PRESETS, where=positions_tab)
            with pe_bar:
                pe_view.buttons()

            gr.Markdown(label("attention.order_intro"))
            with gr.Row():
                perm_sentence = gr.Textbox(label=label("attention.sentence"), value="the dog bit the man", scale=3,
                                           max_length=MAX_LIST_CHARS)
                perm_seed = gr.Number(value=0, precision=0, label=label("attention.shuffle_seed"), scale=1)
            perm_button = gr.Button(label("attention.shuffle_button"), variant="primary")
            perm_bar = gr.Column()
            perm_summary = gr.Markdown()
            perm_table = gr.Dataframe(headers=PERMUTATION_HEADERS, interactive=False, buttons=TABLE_BUTTONS)
            perm_plot = gr.Plot(show_label=False)
            perm_button.click(permutation, [perm_sentence, perm_seed], [perm_summary, perm_table, perm_plot],
                              api_name="attention_permutation")
            perm_view = presets.View("attention", "permutation", [perm_sentence, perm_seed],
                                     [perm_summary, perm_table, perm_plot], permutation, PERMUTATION_PRESETS,
                                     where=positions_tab)
            with perm_bar:
                perm_view.buttons()

        with gr.Tab(label("attention.tab_model"), id="model") as model_tab:
            gr.Markdown(label("attention.model_intro"))
            with gr.Row():
                picker = model_picker("encoder")
                text = gr.Textbox(label=label("attention.sentence"), value=MODEL_EXAMPLES[0][0], scale=3,
                                  max_length=MAX_TEXT_CHARS)
                pair = gr.Textbox(label=label("attention.second_sentence"), scale=2, max_length=MAX_TEXT_CHARS)
            with gr.Row():
                layer = gr.Slider(1, 6, value=1, step=1, label=label("attention.layer"))
                head = gr.Slider(1, 12, value=1, step=1, label=label("attention.head"))
                hide = gr.Checkbox(False, label=label("attention.hide_special"))
            run_button = gr.Button(label("attention.show_attention"), variant="primary")
            model_bar = gr.Column()
            notice = gr.Markdown()
            with gr.Row():
                head_plot = gr.Plot(show_label=False)
                mean_plot = gr.Plot(show_label=False)
            grid_plot = gr.Plot(show_label=False)
            model_inputs = [picker, text, pair, layer, head, hide]
            model_outputs = [notice, head_plot, mean_plot, grid_plot, layer, head]
            encoder = {"encoder": picker}
            model_event(run_button.click, encoder, explore, model_inputs, model_outputs, api_name="attention_model",
                        cache_results=True)
            model_event(hide.input, encoder, explore, model_inputs, model_outputs, api_name="attention_model_hide",
                        api_visibility="undocumented", cache_results=True)
            model_event(layer.release, encoder, show_head, model_inputs, [head_plot, mean_plot],
                        api_name="attention_layer", cache_results=True)
            model_event(head.release, encoder, show_head, model_inputs, [head_plot, mean_plot],
                        api_name="attention_head", cache_results=True)
            model_view = presets.View("attention", "model", model_inputs, model_outputs, explore, MODEL_PRESETS,
                                      where=model_tab)
            with model_bar:
                model_view.buttons()

    views = {"steps": steps_view, "multihead": multihead_view}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)
