"""Transformer & GPT tab (issue #16), view 1: one token through every step of a real encoder block, and the seed's
Transformer-base numbers computed from its config (seed §10–§11). The GPT views are further sub-tabs (demo/gpt.py)."""
from __future__ import annotations

import math

import gradio as gr
import numpy as np
import pandas as pd
from gradio.context import Context

from core import registry
from core import param_count as pc
from core import transformer as tr
from core.errors import ModelUnavailableError, UserInputError
from demo import gpt
from demo.common import friendly_errors, gpu_handler, model_picker, whole_number
from demo.downloads import model_event
from demo.figures import bar, empty_figure, heatmap, lines

TITLE = "Transformer & GPT"
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]

INTRO = r"""
### The Transformer: attention, then a feed-forward layer, each wrapped in Add & LayerNorm, stacked N times
A block reads one vector per token, of width $d_{model}$, and writes one of the same width, so blocks stack. Inside:

$$\mathrm{MultiHead}(x) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W_O, \qquad
\mathrm{head}_i = \mathrm{softmax}\!\left(\frac{xW_Q^i\,(xW_K^i)^\top}{\sqrt{d_k}}\right) xW_V^i$$

$$x' = \mathrm{LayerNorm}(x + \mathrm{MultiHead}(x)), \qquad
x'' = \mathrm{LayerNorm}(x' + \mathrm{FFN}(x')), \qquad \mathrm{FFN}(x) = \mathrm{GELU}(xW_1 + b_1)\,W_2 + b_2$$

The original Transformer uses $\max(0, \cdot)$ (ReLU) in the FFN; BERT uses GELU. The sum $x + \dots$ is the
**residual stream**: each sub-layer adds a correction to the vector instead of replacing it.
"""

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
PAPER_NOTE = "The paper (Vaswani et al. 2017, Table 3) gives {paper} for the {name}, rounded."
SHAPE_FIELDS = ("encoder_layers", "decoder_layers", "d_model", "heads", "d_ff", "vocab_size")

STEP_HEADERS = ["layer", "step", "equation", "shape", "axes", "‖vector‖", "first values"]
PARAM_HEADERS = ["where", "sub-layer", "formula", "parameters (one)", "× layers", "parameters (all)"]


# ----------------------------------------------------------------------------------------------------------------
# Inside a block


def _dims(step: tr.Step) -> str:
    return " × ".join(str(n) for n in step.shape)


def _first_values(vector: np.ndarray, count: int = 4) -> str:
    flat = vector.reshape(-1)
    text = ", ".join(f"{v:+.3f}".replace("-", "−") for v in flat[:count])
    return f"[{text}{', …' if flat.size > count else ''}]"


def steps_table(walk: tr.BlockWalk, layer: int) -> pd.DataFrame:
    rows = [[step.layer, step.name, step.equation, _dims(step), step.dims,
             "—" if step.norm is None else round(step.norm, 3), _first_values(step.vector)]
            for step in walk.layer_steps(layer)]
    return pd.DataFrame(rows, columns=STEP_HEADERS)


def step_strip(walk: tr.BlockWalk, layer: int):
    """‖vector‖ after each step of one layer: where the vector grows, where LayerNorm pulls it back."""
    steps = [s for s in walk.layer_steps(layer) if s.norm is not None]
    title = (f"Embeddings: ‖vector‖ of “{walk.token}” after each step" if layer == 0 else
             f"Layer {layer}: ‖vector‖ of “{walk.token}” after each step")
    return bar([s.name for s in steps], [s.norm for s in steps], title, horizontal=False,
               value_title="‖vector‖ (L2 norm)", highlight=[s.key in ("ln", "ln1", "ln2") for s in steps],
               value_format=".2f")


def residual_figure(walk: tr.BlockWalk):
    gap = [math.nan]
    return lines(range(walk.layers + 1), {
        "‖x_ℓ‖ residual stream (after the layer's last LayerNorm)": walk.residual_norm,
        "‖Attn(x) W_O‖ what attention adds": gap + list(walk.attention_update),
        "‖FFN(x')‖ what the FFN adds": gap + list(walk.ffn_update),
    }, f"“{walk.token}”: the residual stream and what each sub-layer adds", x_title="layer (0 = embeddings)",
        y_title="L2 norm", height=520, legend_below=True)


def movement_figure(walk: tr.BlockWalk):
    gap = [math.nan]
    series = {
        "cos(x_ℓ, x₀): direction kept from the input embedding": walk.cosine_to_input,
        "attention sub-layer: ‖x' − x‖ / ‖x‖": gap + list(walk.attention_moved),
        "FFN sub-layer: ‖x'' − x'‖ / ‖x'‖": gap + list(walk.ffn_moved),
    }
    other = walk.same_token_elsewhere()
    if other is not None:
        series[f"cos with the other “{walk.token}” (token {other})"] = walk.cosine_with(other)
    return lines(range(walk.layers + 1), series, f"“{walk.token}”: how far each layer moves the vector",
                 x_title="layer (0 = embeddings)", y_title="cosine / relative change", height=520, legend_below=True)


def attention_figure(walk: tr.BlockWalk, layer: int):
    layer = max(layer, 1)  # the embeddings have no attention: show the first layer's
    labels = [f"{i}·{t}" for i, t in enumerate(walk.tokens)]
    return heatmap(walk.attention[layer - 1], labels, [f"head {h + 1}" for h in range(walk.heads)],
                   f"Layer {layer}: where “{walk.token}” looks, per head (each row sums to 1)", zmin=0, zmax=1,
                   x_title="key token", y_title="head", annotate=len(walk.tokens) <= 12)


def block_summary(walk: tr.BlockWalk, layer: int, asked_layer: int) -> str:
    parts = [f"**Model:** {walk.badge}",
             f"**Shapes:** T = {len(walk.tokens)} tokens · H = d_model = {walk.hidden_size} · "
             f"A = {walk.heads} heads × d_k = {walk.head_size} · FFN {walk.hidden_size} → {walk.intermediate_size} "
             f"→ {walk.hidden_size} ({walk.activation}) · {walk.layers} layers.",
             f"**Following** token {walk.index}, “{walk.token}”: after {walk.layers} layers its vector keeps "
             f"cos = {walk.cosine_to_input[-1]:.2f} of its input embedding's direction."]
    biggest = int(np.argmax(np.maximum(walk.attention_moved, walk.ffn_moved)))
    parts.append(f"The largest move is in layer {biggest + 1}: attention moves it by "
                 f"{walk.attention_moved[biggest]:.0%} and the FFN by {walk.ffn_moved[biggest]:.0%} of its length.")
    other = walk.same_token_elsewhere()
    if other is not None:
        cos = walk.cosine_with(other)
        parts.append(f"The same token also stands at position {other}: the two vectors have cos = {cos[0]:.2f} after "
                     f"the embeddings (only the position differs) and cos = {cos[-1]:.2f} after the last layer, "
                     "because each has read a different context.")
    if asked_layer != layer:
        parts.append(f"This model has {walk.layers} layers, so layer {asked_layer} is shown as layer {layer}.")
    if walk.truncation is not None:
        cut = walk.truncation.removed_text
        cut = cut[:300] + ("…" if len(cut) > 300 else "")
        parts.append(f"⚠️ **Truncated:** the text is longer than the model's {walk.truncation.max_length} tokens; "
                     f"the last {walk.truncation.removed_tokens} tokens were cut: “{cut}”")
    return "\n\n".join(parts)


def _layer(value: object, walk: tr.BlockWalk) -> int:
    return min(whole_number(value, "the layer", minimum=0), walk.layers)


def _unavailable(exc: ModelUnavailableError):
    message = (f"⚠️ **This checkpoint is not available here.** {exc}\n\nThe bundled MiniLM-L6 "
               "(sentence-transformers/all-MiniLM-L6-v2) always works offline: pick it in the list.")
    blank = empty_figure("No model loaded: see the message above.")
    return message, gr.update(), gr.update(), blank, blank, blank, blank, pd.DataFrame(columns=STEP_HEADERS)


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
    progress(0.1, desc="loading the model and reading the text")
    asked = whole_number(layer, "the layer", minimum=0)
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


@friendly_errors
def block_preset(model_id: str, preset: str, progress=gr.Progress()):
    """Load a preset sentence, token and layer, and run it."""
    if preset not in BLOCK_PRESETS:
        raise UserInputError(f"Pick one of the presets: {', '.join(BLOCK_PRESETS)}.")
    text, token, layer = BLOCK_PRESETS[preset]
    return (text, *block(model_id, text, token, layer, progress))


# ----------------------------------------------------------------------------------------------------------------
# Transformer-base numbers


def _shape_config(values: tuple, shared: bool) -> dict:
    """The typed numbers as a config, named after the preset they equal (if any)."""
    config = {"shared_embeddings": bool(shared)}
    for field, value in zip(SHAPE_FIELDS, values):
        config[field] = whole_number(value, field.replace("_", " "), minimum=0)
    same = [preset for preset in BASE_PRESETS.values()
            if preset and all(preset[key] == config[key] for key in (*SHAPE_FIELDS, "shared_embeddings"))]
    return dict(config, name=same[0]["name"] if same else "your Transformer")


def params_table(count: pc.ParamCount) -> pd.DataFrame:
    """One row per sub-layer kind; counts printed with thousands separators (the table is for reading)."""
    return pd.DataFrame([[row.group, row.part, row.formula, f"{row.each:,}", row.copies, f"{row.total:,}"]
                         for row in count.rows] + [["total", "", "", "", "", f"{count.total:,}"]],
                        columns=PARAM_HEADERS)


def params_figure(count: pc.ParamCount):
    rows = [row for row in count.rows if row.total]
    labels = [f"{row.group.removesuffix(' layer')} · {row.part}" for row in rows]
    return bar(labels, [row.total / 1e6 for row in rows],
               f"{count.shape.name}: parameters per sub-layer, all layers (total {count.total / 1e6:.1f}M)",
               value_title="parameters (millions)", value_format=".2f",
               highlight=[row.group == "embeddings" for row in rows])


def params_summary(count: pc.ParamCount) -> str:
    s = count.shape
    d = s.d_model
    lines_ = [f"**{s.name}:** N = {s.encoder_layers} encoder + {s.decoder_layers} decoder layers · d_model = {d} · "
              f"{s.heads} heads × d_k = {s.d_head} · d_ff = {s.d_ff} · vocabulary {s.vocab_size:,}"
              f"{' (shared)' if s.shared_embeddings and s.decoder_layers else ''}.",
              f"**Total: {count.total:,} parameters** (≈ {count.total / 1e6:.1f}M): embeddings "
              f"{count.group_total('embeddings'):,}, encoder {count.group_total('encoder layer'):,}, decoder "
              f"{count.group_total('decoder layer'):,}, output {count.group_total('output'):,}.",
              f"One attention sub-layer: W_Q, W_K, W_V, W_O are {d} × {d} each (the {s.heads} heads' "
              f"{d} × {s.d_head} slices side by side), 4·{d}² + 4·{d} = {4 * d * d + 4 * d:,}. One FFN: "
              f"2·{d}·{s.d_ff} + {s.d_ff} + {d} = {2 * d * s.d_ff + s.d_ff + d:,}."]
    if s.name in PAPER_COUNTS:
        lines_.append(PAPER_NOTE.format(name=s.name, paper=PAPER_COUNTS[s.name]))
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
        raise UserInputError(f"Pick one of the presets: {', '.join(BASE_PRESETS)}.")
    if preset == ENCODER_PRESET:
        loaded = registry.load("encoder", registry.model_id_or_default("encoder", model_id))
        has_pooler = getattr(loaded.model.base, "pooler", None) is not None  # as the checkpoint file has it
        shape = pc.encoder_shape(loaded.config, loaded.files.model_id, pooler=has_pooler)
    else:
        shape = pc.transformer_shape(BASE_PRESETS[preset])
    count = pc.parameter_count(shape)
    return (*[getattr(shape, field) for field in SHAPE_FIELDS], shape.shared_embeddings, *_params_outputs(count))


# ----------------------------------------------------------------------------------------------------------------
# Layout


def build() -> None:
    """The tab: the equations, then one sub-tab per view. Opening the tab draws the first view's default."""
    opened = Context.block if isinstance(Context.block, gr.Tab) else None  # app.py's tab for this module
    gr.Markdown(INTRO, latex_delimiters=LATEX)
    with gr.Tabs():
        block_tab, block_inputs, block_outputs = build_block_view()
        build_base_numbers_view(block_inputs[0])
        gpt.build()  # the GPT views: next token, generation, causal attention, GPT vs BERT
    for trigger, name in ((opened, "transformer_block_open"), (block_tab, "transformer_block_view")):
        if trigger is not None:
            model_event(trigger.select, {"encoder": block_inputs[0]}, block, block_inputs, block_outputs, api_name=name,
                        api_visibility="undocumented")


def build_block_view():
    with gr.Tab("Inside a block") as tab:
        gr.Markdown("Type a sentence, pick a token, and follow its vector through the embeddings and every layer "
                    "of a real pretrained encoder. MiniLM-L6 (6 layers, d_model = 384, 12 heads) works offline; "
                    "any BERT or DistilBERT checkpoint works online or from a local folder. The LayerNorm outputs "
                    "(orange) are what the next step reads.")
        with gr.Row():
            picker = model_picker("encoder")
            text = gr.Textbox(label="Sentence", value=BLOCK_DEFAULT[0], scale=3)
        with gr.Row():
            token = gr.Dropdown([], value=BLOCK_DEFAULT[1], label="Token to follow", allow_custom_value=True,
                                info="Pick from the list, or type a token or its number.")
            layer = gr.Slider(0, 6, value=BLOCK_DEFAULT[2], step=1, label="Layer (0 = embeddings)")
        with gr.Row():
            run_button = gr.Button("Follow the token", variant="primary", scale=1)
            preset = gr.Radio(list(BLOCK_PRESETS), label="Presets (run on click)", scale=3)
        summary = gr.Markdown()
        with gr.Row():
            strip = gr.Plot(empty_figure("Press “Follow the token”."))
            attn = gr.Plot(empty_figure("The token's attention weights appear here."))
        with gr.Row():
            residual = gr.Plot(empty_figure("The residual stream appears here."))
            movement = gr.Plot(empty_figure("How far each layer moves the vector appears here."))
        table = gr.Dataframe(headers=STEP_HEADERS, interactive=False, wrap=True, max_height=520,
                             label="Every step of the chosen layer, with its shape (the chosen token's values)")
    inputs = [picker, text, token, layer]
    outputs = [summary, token, layer, strip, residual, movement, attn, table]
    encoder = {"encoder": picker}
    model_event(run_button.click, encoder, block, inputs, outputs, api_name="transformer_block")
    model_event(text.submit, encoder, block, inputs, outputs, api_name="transformer_block_submit",
                api_visibility="undocumented")
    model_event(token.input, encoder, block, inputs, outputs, api_name="transformer_block_token",
                api_visibility="undocumented")
    model_event(layer.release, encoder, block_layer, inputs, [strip, attn, table], api_name="transformer_block_layer")
    model_event(preset.input, encoder, block_preset, [picker, preset], [text, *outputs],
                api_name="transformer_block_preset")
    return tab, inputs, outputs


def build_base_numbers_view(picker: gr.Dropdown) -> None:
    base = pc.TRANSFORMER_BASE
    with gr.Tab("Transformer-base numbers") as tab:
        gr.Markdown(r"Every count is computed from the shape. A linear map from $a$ to $b$ numbers has $a \cdot b$ "
                    r"weights and $b$ biases; a LayerNorm of width $d$ has $2d$ (gain and bias). So one attention "
                    r"sub-layer has $4d^2 + 4d$ parameters however many heads it has, and one FFN "
                    r"$2\,d\,d_{ff} + d_{ff} + d$. The sin/cos positional encoding has none.",
                    latex_delimiters=LATEX)
        preset = gr.Radio(list(BASE_PRESETS), label="Presets (run on click)")
        with gr.Row():
            numbers = [gr.Number(base[field], precision=0, label=field.replace("_", " "), minimum=0)
                       for field in SHAPE_FIELDS]
            shared = gr.Checkbox(True, label="shared embeddings (source = target = output)")
        count_button = gr.Button("Count the parameters", variant="primary")
        summary = gr.Markdown()
        figure = gr.Plot(empty_figure("Press “Count the parameters”."))
        table = gr.Dataframe(headers=PARAM_HEADERS, interactive=False, wrap=True, max_height=560,
                             label="Parameters per sub-layer")
    outputs = [summary, table, figure]  # the order _params_outputs returns them in
    count_button.click(base_params, [*numbers, shared], outputs, api_name="transformer_base_params")
    tab.select(base_params, [*numbers, shared], outputs, api_name="transformer_base_open",
               api_visibility="undocumented")
    preset.input(base_preset, [preset, picker], [*numbers, shared, *outputs], api_name="transformer_base_preset")
