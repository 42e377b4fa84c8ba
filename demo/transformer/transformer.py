"""Transformer & GPT tab (issue #16), view 1: one token through every step of a real encoder block, and the seed's
Transformer-base numbers computed from its config (seed §10–§11). The GPT views are further sub-tabs (demo/transformer/gpt.py)."""
from __future__ import annotations

import math

import gradio as gr
import numpy as np
import pandas as pd

from core.transformer import param_count as pc
from core.loading.checkpoints import MINILM_ID, model_id_or_default
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_TEXT_CHARS
from demo.transformer import gpt, seq2seq, tokenizer_lab
from demo.kit import lessons, presets
from demo.why import why
from demo.server.handlers import friendly_errors, gpu_handler, whole_number
from demo.kit.widgets import model_picker, sig4
from demo.server.downloads import model_event
from demo.kit.figures import bar, empty_figure, heatmap, lines
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
registry = lazy_import("core.loading.registry")
tr = lazy_import("core.transformer.transformer")

TITLE = "Transformer & GPT"
HISTORY = [(10, "2017", "Transformer", "transformer", "je-suis-etudiant"),  # the encoder–decoder translating (§11)
           (13, "2018", "GPT", "pretrain", None)]  # timeline
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]

BLOCK_PRESETS = {
    "bank in two contexts": ("The bank raised interest rates, so we walked along the river bank instead.", "bank", 6),
    # In MiniLM's layer 4, head 2 puts 0.68 of "it"'s attention on "animal".
    "it: what does the pronoun look at?": ("The animal didn't cross the street because it was too tired.", "it", 4),
    "Thinking Machines (seed §9)": ("Thinking Machines", "thinking", 1),
    "[CLS], the sentence vector": ("The cat sat on the mat.", "0 · [CLS]", 6),
}
BLOCK_DEFAULT = BLOCK_PRESETS["bank in two contexts"]

ENCODER_PRESET = "the loaded encoder's config (checkpoint picker)"
BASE_PRESETS = {"the seed's Transformer-base": pc.TRANSFORMER_BASE, "Transformer big": pc.TRANSFORMER_BIG,
                ENCODER_PRESET: None}
PAPER_COUNTS = {pc.TRANSFORMER_BASE["name"]: "65M", pc.TRANSFORMER_BIG["name"]: "213M"}  # Vaswani et al., Table 3
SHAPE_FIELDS = ("encoder_layers", "decoder_layers", "d_model", "heads", "d_ff", "vocab_size")

STEP_COLUMNS = 7  # layer, step, equation, shape, axes, ‖vector‖, first values (transformer.col_step_*)
PARAM_COLUMNS = 6  # where, sub-layer, formula, parameters (one), × layers, parameters (all) (transformer.col_param_*)
PER_HEAD = {"q", "k", "v", "heads"}  # steps whose equation carries words ("split into heads", "per head")


def _headers(key: str, count: int) -> list[str]:
    return [t(f"transformer.{key}_{i}") for i in range(count)]


def _step_name(step: tr.Step) -> str:
    """The step's name in the learner's language (the activation keeps its own name: GELU, ReLU)."""
    return step.name if step.key == "act" else t(f"transformer.step_{step.key}")


def _step_equation(step: tr.Step) -> str:
    return t(f"transformer.eq_{step.key}") if step.key in PER_HEAD else step.equation


# ----------------------------------------------------------------------------------------------------------------
# Inside a block


def _dims(step: tr.Step) -> str:
    return " × ".join(str(n) for n in step.shape)


def _first_values(vector: np.ndarray, count: int = 4) -> str:
    flat = vector.reshape(-1)
    text = ", ".join(f"{v:+.3f}".replace("-", "−") for v in flat[:count])
    return f"[{text}{', …' if flat.size > count else ''}]"


def steps_table(walk: tr.BlockWalk, layer: int) -> pd.DataFrame:
    rows = [[step.layer, _step_name(step), _step_equation(step), _dims(step), step.dims,
             "—" if step.norm is None else sig4(step.norm), _first_values(step.vector)]
            for step in walk.layer_steps(layer)]
    return pd.DataFrame(rows, columns=_headers("col_step", STEP_COLUMNS))


def step_strip(walk: tr.BlockWalk, layer: int):
    """‖vector‖ after each step of one layer: where the vector grows, where LayerNorm pulls it back."""
    steps = [s for s in walk.layer_steps(layer) if s.norm is not None]
    title = (t("transformer.fig_strip_embeddings", token=walk.token) if layer == 0 else
             t("transformer.fig_strip_layer", layer=layer, token=walk.token))
    return bar([_step_name(s) for s in steps], [s.norm for s in steps], title, horizontal=False,
               value_title=t("transformer.axis_norm"), highlight=[s.key in ("ln", "ln1", "ln2") for s in steps],
               value_format=".2f")


def residual_figure(walk: tr.BlockWalk):
    gap = [math.nan]
    return lines(range(walk.layers + 1), {
        t("transformer.series_residual"): walk.residual_norm,
        t("transformer.series_attention_adds"): gap + list(walk.attention_update),
        t("transformer.series_ffn_adds"): gap + list(walk.ffn_update),
    }, t("transformer.fig_residual", token=walk.token), x_title=t("transformer.axis_layer"),
        y_title=t("transformer.axis_l2"), height=520, legend_below=True)


def movement_figure(walk: tr.BlockWalk):
    gap = [math.nan]
    series = {
        t("transformer.series_cos_input"): walk.cosine_to_input,
        t("transformer.series_attention_moved"): gap + list(walk.attention_moved),
        t("transformer.series_ffn_moved"): gap + list(walk.ffn_moved),
    }
    other = walk.same_token_elsewhere()
    if other is not None:
        series[t("transformer.series_cos_other", token=walk.token, index=other)] = walk.cosine_with(other)
    return lines(range(walk.layers + 1), series, t("transformer.fig_movement", token=walk.token),
                 x_title=t("transformer.axis_layer"), y_title=t("transformer.axis_cos_change"), height=520,
                 legend_below=True)


def attention_figure(walk: tr.BlockWalk, layer: int):
    layer = max(layer, 1)  # the embeddings have no attention: show the first layer's
    labels = [f"{i}·{t}" for i, t in enumerate(walk.tokens)]
    return heatmap(walk.attention[layer - 1], labels, [t("transformer.head_n", head=h + 1) for h in range(walk.heads)],
                   t("transformer.fig_attention", layer=layer, token=walk.token), zmin=0, zmax=1,
                   x_title=t("transformer.axis_key_token"), y_title=t("transformer.axis_head"),
                   annotate=len(walk.tokens) <= 12)


def block_summary(walk: tr.BlockWalk, layer: int, asked_layer: int) -> str:
    parts = [t("transformer.model_badge", badge=walk.badge),
             t("transformer.shapes", T=len(walk.tokens), H=walk.hidden_size, A=walk.heads, d_k=walk.head_size,
               d_ff=walk.intermediate_size, activation=walk.activation, layers=walk.layers),
             t("transformer.following", index=walk.index, token=walk.token, layers=walk.layers,
               cos=f"{walk.cosine_to_input[-1]:.2f}")]
    biggest = int(np.argmax(np.maximum(walk.attention_moved, walk.ffn_moved)))
    parts.append(t("transformer.largest_move", layer=biggest + 1, attention=f"{walk.attention_moved[biggest]:.0%}",
                   ffn=f"{walk.ffn_moved[biggest]:.0%}"))
    other = walk.same_token_elsewhere()
    if other is not None:
        cos = walk.cosine_with(other)
        parts.append(t("transformer.same_token", position=other, first=f"{cos[0]:.2f}", last=f"{cos[-1]:.2f}"))
    if asked_layer != layer:
        parts.append(t("transformer.layer_clamped", layers=walk.layers, asked=asked_layer, layer=layer))
    if walk.truncation is not None:
        cut = walk.truncation.removed_text
        cut = cut[:300] + ("…" if len(cut) > 300 else "")
        parts.append(t("transformer.truncated", limit=walk.truncation.max_length,
                       removed=walk.truncation.removed_tokens, cut=cut))
    return "\n\n".join(parts)


def _layer(value: object, walk: tr.BlockWalk) -> int:
    return min(whole_number(value, t("transformer.layer_name"), minimum=0), walk.layers)


def _unavailable(exc: ModelUnavailableError):
    message = t("transformer.unavailable", reason=str(exc))
    blank = empty_figure(t("transformer.no_model"))
    return (message, gr.update(), gr.update(), blank, blank, blank, blank,
            pd.DataFrame(columns=_headers("col_step", STEP_COLUMNS)))


def _block_outputs(walk: tr.BlockWalk, asked_layer: int):
    layer = min(asked_layer, walk.layers)
    return (block_summary(walk, layer, asked_layer),
            gr.update(choices=tr.token_choices(walk.tokens), value=tr.token_choices(walk.tokens)[walk.index]),
            gr.update(maximum=walk.layers, value=layer),
            step_strip(walk, layer), residual_figure(walk), movement_figure(walk), attention_figure(walk, layer),
            steps_table(walk, layer))


@friendly_errors
@gpu_handler
def block(model_id: str, text: str, token: str, layer: float, progress=gr.Progress()):
    """Follow one token through every layer: summary, token list, layer range, 4 figures and the step table."""
    progress(0.1, desc=t("transformer.progress_loading"))
    asked = whole_number(layer, t("transformer.layer_name"), minimum=0)
    try:
        walk = tr.walk(text, model_id, token)
    except ModelUnavailableError as exc:
        return _unavailable(exc)
    return _block_outputs(walk, asked)


@friendly_errors
@gpu_handler
def block_layer(model_id: str, text: str, token: str, layer: float):
    """Redraw the layer-dependent views (the walk is cached: no new forward pass)."""
    walk = tr.walk(text, model_id, token)
    layer = _layer(layer, walk)
    return step_strip(walk, layer), attention_figure(walk, layer), steps_table(walk, layer)


# ----------------------------------------------------------------------------------------------------------------
# Transformer-base numbers


def _shape_config(values: tuple, shared: bool) -> dict:
    """The typed numbers as a config, named after the preset they equal (if any)."""
    config = {"shared_embeddings": bool(shared)}
    for field, value in zip(SHAPE_FIELDS, values):
        config[field] = whole_number(value, t(f"transformer.field_{field}"), minimum=0)
    same = [preset for preset in BASE_PRESETS.values()
            if preset and all(preset[key] == config[key] for key in (*SHAPE_FIELDS, "shared_embeddings"))]
    return dict(config, name=same[0]["name"] if same else t("transformer.your_transformer"))


# core/param_count's row names → their keys (transformer.term_*); a name not listed is shown as it is.
PARAM_TERMS = {
    "embeddings": "embeddings", "encoder layer": "encoder_layer", "decoder layer": "decoder_layer", "output": "output",
    "token embeddings (shared: encoder, decoder, output)": "token_shared", "token embeddings": "token",
    "source token embeddings": "source", "target token embeddings": "target",
    "position embeddings (learned)": "position_learned", "positional encoding (sin/cos, fixed)": "position_sincos",
    "segment embeddings": "segment", "embedding LayerNorm": "embedding_ln", "self-attention": "self_attention",
    "FFN": "ffn", "2 LayerNorms": "two_ln", "masked self-attention": "masked_self_attention",
    "cross-attention (encoder–decoder)": "cross_attention", "3 LayerNorms": "three_ln",
    "pre-softmax linear (tied to the embeddings)": "pre_softmax_tied", "pre-softmax linear (no bias)": "pre_softmax",
    "pooler tanh(W h_[CLS] + b)": "pooler",
}


def _term(name: str) -> str:
    return t(f"transformer.term_{PARAM_TERMS[name]}") if name in PARAM_TERMS else name


def params_table(count: pc.ParamCount) -> pd.DataFrame:
    """One row per sub-layer kind; counts printed with thousands separators (the table is for reading)."""
    return pd.DataFrame([[_term(row.group), _term(row.part), row.formula, f"{row.each:,}", row.copies, f"{row.total:,}"]
                         for row in count.rows] + [[t("transformer.total"), "", "", "", "", f"{count.total:,}"]],
                        columns=_headers("col_param", PARAM_COLUMNS))


def params_figure(count: pc.ParamCount):
    rows = [row for row in count.rows if row.total]
    labels = [f"{_term(row.group)} · {_term(row.part)}" for row in rows]
    return bar(labels, [row.total / 1e6 for row in rows],
               t("transformer.fig_params", name=count.shape.name, total=f"{count.total / 1e6:.1f}"),
               value_title=t("transformer.axis_params"), value_format=".2f",
               highlight=[row.group == "embeddings" for row in rows])


def params_summary(count: pc.ParamCount) -> str:
    s = count.shape
    d = s.d_model
    lines_ = [t("transformer.params_shape", name=s.name, encoder=s.encoder_layers, decoder=s.decoder_layers, d=d,
                heads=s.heads, d_head=s.d_head, d_ff=s.d_ff, vocab=f"{s.vocab_size:,}",
                shared=t("transformer.shared") if s.shared_embeddings and s.decoder_layers else ""),
              t("transformer.params_total", total=f"{count.total:,}", millions=f"{count.total / 1e6:.1f}",
                embeddings=f"{count.group_total('embeddings'):,}", encoder=f"{count.group_total('encoder layer'):,}",
                decoder=f"{count.group_total('decoder layer'):,}", output=f"{count.group_total('output'):,}"),
              t("transformer.params_sublayers", d=d, heads=s.heads, d_head=s.d_head, attention=f"{4 * d * d + 4 * d:,}",
                d_ff=s.d_ff, ffn=f"{2 * d * s.d_ff + s.d_ff + d:,}")]
    if s.name in PAPER_COUNTS:
        lines_.append(t("transformer.paper_note", name=s.name, paper=PAPER_COUNTS[s.name]))
    return "\n\n".join(lines_)


def _params_outputs(count: pc.ParamCount):
    return params_summary(count), params_table(count), params_figure(count)


@friendly_errors
def base_params(encoder_layers, decoder_layers, d_model, heads, d_ff, vocab_size, shared: bool):
    """Count the parameters of the Transformer these numbers describe."""
    values = (encoder_layers, decoder_layers, d_model, heads, d_ff, vocab_size)
    return _params_outputs(pc.parameter_count(pc.transformer_shape(_shape_config(values, shared))))


@friendly_errors
@gpu_handler
def base_preset(preset: str, model_id: str):
    """Fill the numbers from a preset config (the seed's Transformer-base, or the picked checkpoint's) and count."""
    if preset not in BASE_PRESETS:
        raise UserInputError("transformer.pick_preset", choices=", ".join(BASE_PRESETS))
    if preset == ENCODER_PRESET:
        loaded = registry.load("encoder", model_id_or_default("encoder", model_id))
        has_pooler = loaded.model.base.pooler is not None  # as the checkpoint file has it
        shape = pc.encoder_shape(loaded.config, loaded.files.model_id, pooler=has_pooler)
    else:
        shape = pc.transformer_shape(BASE_PRESETS[preset])
    count = pc.parameter_count(shape)
    return (*[getattr(shape, field) for field in SHAPE_FIELDS], shape.shared_embeddings, *_params_outputs(count))


# ----------------------------------------------------------------------------------------------------------------
# Presets and lessons (demo/kit/presets.py: each view shows its first preset when opened; deep links ?tab=transformer&…)

P = presets.Preset
BLOCK_SLUGS = {"bank in two contexts": ("bank-two-contexts", "§10"), "it: what does the pronoun look at?":
               ("it-pronoun", "§10"), "Thinking Machines (seed §9)": ("thinking-machines-block", "§9"),
               "[CLS], the sentence vector": ("cls-vector", "§13")}
BLOCK_VIEW_PRESETS = [P(slug, label(f"transformer.preset_{slug.replace('-', '_')}"), (MINILM_ID, *BLOCK_PRESETS[name]),
                        section) for name, (slug, section) in BLOCK_SLUGS.items()]
BIG = pc.TRANSFORMER_BIG
BASE_VIEW_PRESETS = [
    P("transformer-base", label("transformer.preset_transformer_base"),
      tuple(pc.TRANSFORMER_BASE[f] for f in SHAPE_FIELDS) + (True,), "§10"),
    P("transformer-big", label("transformer.preset_transformer_big"), tuple(BIG[f] for f in SHAPE_FIELDS) + (True,),
      "§10"),
]
LESSON = [
    ("§10", label("transformer.lesson_1_q"), label("transformer.lesson_1_a"), "base", "transformer-base"),
    ("§10", label("transformer.lesson_2_q"), label("transformer.lesson_2_a"), "block", "it-pronoun"),
    *seq2seq.LESSON,  # the encoder–decoder, §10.3–§11.2 (issue #52)
    ("§13.1", label("transformer.lesson_3_q"), label("transformer.lesson_3_a"), "gpt_vs_bert", "jintian-tianqi-hen"),
]


def _block_for_preset(model_id: str, text: str, token: str, layer: float):
    return block(model_id, text, token, layer)


@friendly_errors
def encoder_config(model_id: str):
    """The numbers of the encoder in the checkpoint picker, counted."""
    return base_preset(ENCODER_PRESET, model_id)


# ----------------------------------------------------------------------------------------------------------------
# Layout


def build() -> None:
    """The tab: the equations, then one sub-tab per view; each view shows its default when its sub-tab is opened."""
    gr.Markdown(label("transformer.intro"), latex_delimiters=LATEX)
    lesson_slot = gr.Column()
    with gr.Tabs(overflow_behavior="wrap"):
        block_view, picker = build_block_view()
        base_view = build_base_numbers_view(picker)
        views = {"block": block_view, "base": base_view,
                 **seq2seq.build(),  # the encoder–decoder: translate step by step, §11.1's mask, §11.2's C vs attention
                 **gpt.build(),  # GPT: next token, generation, maps, vs BERT
                 **why.build_gpt(),  # why this next token: attributions and the logit lens (issue #35)
                 "tokenizer_lab": tokenizer_lab.build_tab()}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)


def build_block_view():
    with gr.Tab(label("transformer.tab_block"), id="block") as tab:
        gr.Markdown(label("transformer.block_intro"))
        with gr.Row():
            picker = model_picker("encoder")
            text = gr.Textbox(label=label("transformer.sentence"), value=BLOCK_DEFAULT[0], scale=3,
                              max_length=MAX_TEXT_CHARS)
        with gr.Row():
            token = gr.Dropdown([], value=BLOCK_DEFAULT[1], label=label("transformer.token_to_follow"),
                                allow_custom_value=True, info=label("transformer.token_info"))
            layer = gr.Slider(0, 6, value=BLOCK_DEFAULT[2], step=1, label=label("transformer.layer_label"))
        run_button = gr.Button(label("transformer.follow"), variant="primary")
        bar_slot = gr.Column()
        summary = gr.Markdown()
        with gr.Row():
            strip = gr.Plot(show_label=False)
            attn = gr.Plot(show_label=False)
        with gr.Row():
            residual = gr.Plot(show_label=False)
            movement = gr.Plot(show_label=False)
        table = gr.Dataframe(headers=[""] * STEP_COLUMNS, interactive=False, wrap=True, max_height=520,
                             label=label("transformer.steps_table"))
    inputs = [picker, text, token, layer]
    outputs = [summary, token, layer, strip, residual, movement, attn, table]
    encoder = {"encoder": picker}
    model_event(run_button.click, encoder, block, inputs, outputs, api_name="transformer_block", cache_results=True)
    model_event(text.submit, encoder, block, inputs, outputs, api_name="transformer_block_submit",
                api_visibility="undocumented", cache_results=True)
    model_event(token.input, encoder, block, inputs, outputs, api_name="transformer_block_token",
                api_visibility="undocumented", cache_results=True)
    model_event(layer.release, encoder, block_layer, inputs, [strip, attn, table], api_name="transformer_block_layer",
                cache_results=True)
    view = presets.View("transformer", "block", inputs, outputs, _block_for_preset, BLOCK_VIEW_PRESETS, where=tab)
    with bar_slot:
        view.buttons()
    return view, picker


def build_base_numbers_view(picker: gr.Dropdown) -> presets.View:
    base = pc.TRANSFORMER_BASE
    with gr.Tab(label("transformer.tab_base"), id="base") as tab:
        gr.Markdown(label("transformer.base_intro"), latex_delimiters=LATEX)
        bar_slot = gr.Column()
        with gr.Row():
            numbers = [gr.Number(base[field], precision=0, label=label(f"transformer.field_{field}"), minimum=0)
                       for field in SHAPE_FIELDS]
            shared = gr.Checkbox(True, label=label("transformer.shared_embeddings"))
        with gr.Row():
            count_button = gr.Button(label("transformer.count"), variant="primary")
            encoder_button = gr.Button(label("transformer.use_encoder_config"))
        summary = gr.Markdown()
        figure = gr.Plot(show_label=False)
        table = gr.Dataframe(headers=[""] * PARAM_COLUMNS, interactive=False, wrap=True, max_height=560,
                             label=label("transformer.params_per_sublayer"))
    outputs = [summary, table, figure]  # the order _params_outputs returns them in
    count_button.click(base_params, [*numbers, shared], outputs, api_name="transformer_base_params")
    encoder_button.click(encoder_config, [picker],
                         [*numbers, shared, *outputs], api_name="transformer_base_from_encoder")
    view = presets.View("transformer", "base", [*numbers, shared], outputs, base_params, BASE_VIEW_PRESETS, where=tab)
    with bar_slot:
        view.buttons()
    return view
