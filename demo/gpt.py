"""Transformer & GPT tab, GPT half (issue #16): next-token probabilities, generation token by token, causal
attention maps, and GPT vs BERT on one blank. ``build()`` adds the sub-tabs inside the tab's shell
(demo/transformer.py); events are named ``transformer_gpt_*``."""
from __future__ import annotations


import gradio as gr
import numpy as np

from core import gpt
from core.errors import UserInputError
from demo.common import friendly_errors, gpu_handler, number_in_range
from demo.downloads import model_event
from demo.figures import bar, empty_figure, heatmap

INTRO = r"""
### GPT: a Transformer decoder that reads left to right
GPT stacks Transformer blocks whose self-attention is **masked**: position t may look at positions ≤ t only
(softmax(QKᵀ/√d_k + M)V, with M = −∞ above the diagonal), so the network can be trained to predict every next token
of a text at once, and then write text one token at a time. The **char-GPT** (default) is a 4-layer model trained in
this project on the same Moby-Dick characters as the RNN and LSTM tab; `gpt2`, `distilgpt2` and the Chinese GPT-2
run the same code with OpenAI's / UER's weights when they are on this machine.
"""

NEXT_EXAMPLES = [
    [gpt.CHAR_GPT_ID, "Call me Ishmael. Some years ago, never mind how long precisely, having little or no mon",
     1.0, 0],
    [gpt.CHAR_GPT_ID, "The White Wha", 1.0, 0],
    [gpt.CHAR_GPT_ID, "Captain Ahab stood upon the quarter-deck", 0.5, 10],
    ["gpt2", "The weather today is very", 1.0, 20],
    [gpt.CHINESE_GPT2_ID, "今天天气很", 1.0, 20],
]
GENERATE_EXAMPLES = [
    [gpt.CHAR_GPT_ID, "Call me Ishmael. ", 200, 0.8, 0, 0],
    [gpt.CHAR_GPT_ID, "The whale ", 200, 0.5, 10, 1],
    [gpt.CHAR_GPT_ID, '"Hast seen the White Whale?" ', 300, 1.0, 0, 2],  # 300 > the context: the window slides
    ["gpt2", "The history of language models began", 60, 0.8, 40, 0],
]
ATTENTION_EXAMPLES = [
    [gpt.CHAR_GPT_ID, "Call me Ishmael.", 1, 1],
    [gpt.CHAR_GPT_ID, "the whale, the whale!", 2, 3],
    ["gpt2", "i have a dream", 1, 1],
]
VS_EXAMPLES = [
    [gpt.PRESETS["en"][0], gpt.PRESETS["en"][1], gpt.PRESETS["en"][2]],
    [gpt.PRESETS["zh"][0], gpt.PRESETS["zh"][1], gpt.PRESETS["zh"][2]],
    ["Call me Ishmael. Some years ago, never mind how long precisely, having little or no __ in my purse.",
     gpt.CHAR_GPT_ID, "bert-base-uncased"],
]


def _top_k(value) -> int | None:
    """0 or empty: no top-k cut."""
    if value in (None, ""):
        return None
    return int(number_in_range(value, "Top-k", 0, 100_000)) or None


def _temperature(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise UserInputError("Temperature must be a number above 0 (0.05 to 3).") from None
    gpt.check_temperature(value, None)  # 0 and negatives get the explanation of why
    return value


def _shown(piece: str) -> str:
    """Spaces and newlines made visible on an axis."""
    return piece.replace(" ", "␣").replace("\n", "↵") or "∅"


def _badge(model_id: str) -> str:
    loaded = gpt.load(model_id)
    model_id = loaded.model_id
    text = f"**Model:** {loaded.badge}"
    if model_id == gpt.CHAR_GPT_ID:
        losses = " · ".join(f"{name} {loss:.3f}" for name, loss in gpt.held_out_losses().items())
        text += f"\n\n**Held-out Moby-Dick, nats/char** (same split, characters and windows): {losses}"
    return text


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def next_token(model_id: str, text: str, temperature: float, top_k: float):
    """The next-token distribution after the text, with temperature and top-k applied."""
    result = gpt.next_token(model_id, text, _temperature(temperature), _top_k(top_k))
    cut = f", top-{result.top_k}" if result.top_k else ""
    fig = bar([_shown(t) for t, _ in result.candidates], [p for _, p in result.candidates],
              f"p(next token | text) at temperature {result.temperature:g}{cut}",
              highlight=[i == 0 for i in range(len(result.candidates))])
    rows = [[_shown(t), round(p, 4), round(q, 4)] for (t, p), (_, q) in zip(result.candidates, result.raw_top)]
    notes = [_badge(result.model_id), f"The model read {len(result.pieces)} tokens; the last ones: "
             f"`{' | '.join(_shown(p) for p in result.pieces[-12:])}`"]
    if result.note:
        notes.append("⚠️ " + result.note)
    return "\n\n".join(notes), fig, rows


@friendly_errors
@gpu_handler
def generate(model_id: str, prompt: str, length: float, temperature: float, top_k: float, seed: float):
    """Sample token by token; the text and the table of steps grow as it goes."""
    length = int(number_in_range(length, "Length", 1, gpt.MAX_GENERATE))
    seed = int(number_in_range(seed, "The seed", 0, 2**32 - 1))
    temperature, top_k = _temperature(temperature), _top_k(top_k)
    steps = gpt.generate_steps(model_id, prompt, length, temperature, top_k, seed)
    text, rows = "", []
    for n, step in enumerate(steps, start=1):
        text += step.token
        rows.append([n, _shown(step.token), round(step.probability, 4),
                     " · ".join(f"{_shown(t)} {p:.2f}" for t, p in step.alternatives)])
        if n % 10 == 0 or n == length:
            yield prompt + text, rows[::-1], f"Generated {n} of {length} tokens."
    yield prompt + text, rows[::-1], (f"Generated {length} tokens, each drawn from softmax(z / {temperature:g})"
                                      f"{f' over the top {top_k}' if top_k else ''} (seed {seed}).")


@friendly_errors
@gpu_handler
def attention(model_id: str, text: str, layer: float, head: float):
    """One layer and head's causal attention map, and the mean over that layer's heads."""
    result = gpt.attention_maps(model_id, text)
    n_layer, n_head = result.maps.shape[:2]
    try:
        layer = int(number_in_range(layer, "Layer", 1, n_layer))
        head = int(number_in_range(head, "Head", 1, n_head))
    except UserInputError:
        raise UserInputError(f"{result.model_id} has {n_layer} layers of {n_head} heads: pick a layer from 1 to "
                             f"{n_layer} and a head from 1 to {n_head}.") from None
    labels = [_shown(p) for p in result.pieces]
    one = result.maps[layer - 1, head - 1].numpy()
    mean = result.maps[layer - 1].mean(0).numpy()
    kwargs = dict(x_title="key (attended to)", y_title="query (reading)", zmin=0, zmax=1)
    fig = heatmap(one, labels, labels, f"Layer {layer}, head {head}: causal self-attention", **kwargs)
    mean_fig = heatmap(mean, labels, labels, f"Layer {layer}, mean over its {n_head} heads", **kwargs)
    above = float(np.triu(result.maps.numpy(), 1).max())
    notes = [f"{len(labels)} tokens · {n_layer} layers × {n_head} heads. Every row sums to 1; above the diagonal "
             f"(the future) the largest weight in any head is {above:.0e}."]
    if result.note:
        notes.append("⚠️ " + result.note)
    return "\n\n".join(notes), fig, mean_fig


@friendly_errors
@gpu_handler
def gpt_vs_bert(text: str, gpt_id: str, bert_id: str):
    """The causal LM's next-token distribution from the left context, beside the masked LM's at the blank."""
    bert_id = str(bert_id or "").strip() or "bert-base-uncased"
    result = gpt.gpt_vs_bert(text, gpt_id, bert_id)
    if result.gpt:
        gpt_fig = bar([_shown(t) for t, _ in result.gpt.candidates], [p for _, p in result.gpt.candidates],
                      f"{result.gpt.model_id}: next token after the left context only",
                      highlight=[i == 0 for i in range(len(result.gpt.candidates))])
    else:
        gpt_fig = empty_figure(result.gpt_note or "No causal LM result.")
    if result.bert:
        bert_fig = bar([t for t, _ in result.bert], [p for _, p in result.bert],
                       f"{result.bert_model}: the blank, reading both sides",
                       highlight=[i == 0 for i in range(len(result.bert))])
    else:
        bert_fig = empty_figure(f"{result.bert_model} is not on this machine: hf download {result.bert_model}")
    notes = [f"**GPT reads:** {result.left}▮ (left context only)", f"**BERT reads:** {result.text} (both sides)"]
    notes += ["⚠️ " + note for note in (result.gpt_note, result.gpt and result.gpt.note, result.bert_note) if note]
    return "\n\n".join(notes), gpt_fig, bert_fig


# ----------------------------------------------------------------------------------------------------------------
# Layout


def _presets(examples: list[list], inputs: list, outputs: list, fn, name: str) -> None:
    """Examples that fill the inputs and then run the view, with our own event names."""
    presets = gr.Examples(examples, inputs=inputs, api_name=f"{name}_preset")
    presets.load_input_event.then(fn, inputs, outputs, api_name=f"{name}_preset_run")


def _model_picker() -> gr.Dropdown:
    return gr.Dropdown(list(gpt.MODEL_CHOICES), value=gpt.CHAR_GPT_ID, label="GPT model", allow_custom_value=True,
                       info="char-gpt is bundled; GPT-2 ids need a download once (hf download <id>) or a local "
                            "folder with config.json, weights and tokenizer files.")


def build() -> None:
    """The GPT sub-tabs, to be called inside the tab's gr.Tabs(); each view shows its first preset's result when
    its sub-tab is opened (its .select event), and computes nothing before."""
    with gr.Tab("GPT: next token") as next_tab:
        gr.Markdown(INTRO)
        model = _model_picker()
        with gr.Row():
            text = gr.Textbox(label="Text so far", value=NEXT_EXAMPLES[0][1], lines=2, scale=4)
            with gr.Column(scale=1):
                temperature = gr.Slider(0.05, 3, value=1.0, step=0.05, label="temperature τ")
                top_k = gr.Slider(0, 100, value=0, step=1, label="top-k (0: all tokens)")
        next_button = gr.Button("Predict the next token", variant="primary")
        next_note = gr.Markdown()
        with gr.Row():
            next_plot = gr.Plot(empty_figure("The next-token probabilities appear here."))
            next_table = gr.Dataframe(headers=["token", "p after τ and top-k", "p at τ = 1"], interactive=False)
        next_inputs, next_outputs = [model, text, temperature, top_k], [next_note, next_plot, next_table]
        _presets(NEXT_EXAMPLES, next_inputs, next_outputs, next_token, "transformer_gpt_next")
        model_event(next_button.click, {"causal-lm": model}, next_token, next_inputs, next_outputs,
                    api_name="transformer_gpt_next", queue={})
        model_event(text.submit, {"causal-lm": model}, next_token, next_inputs, next_outputs,
                    api_name="transformer_gpt_next_submit", queue={})
        model_event(next_tab.select, {"causal-lm": model}, next_token, next_inputs, next_outputs,
                    api_name="transformer_gpt_next_open", queue={})

    with gr.Tab("GPT: generate") as generate_tab:
        gen_model = _model_picker()
        with gr.Row():
            prompt = gr.Textbox(label="Prompt", value=GENERATE_EXAMPLES[0][1], scale=3)
            length = gr.Slider(1, gpt.MAX_GENERATE, value=200, step=1, label="tokens to generate")
            gen_temperature = gr.Slider(0.05, 3, value=0.8, step=0.05, label="temperature τ")
            gen_top_k = gr.Slider(0, 100, value=0, step=1, label="top-k (0: all)")
            seed = gr.Number(value=0, precision=0, minimum=0, maximum=2**32 - 1, label="seed")
        gen_button = gr.Button("Generate", variant="primary")
        gen_note = gr.Markdown()
        gen_text = gr.Textbox(label="Prompt + generated text", lines=6)
        gen_steps = gr.Dataframe(headers=["step", "token", "p(token)", "top 3 at this step"], interactive=False,
                                 max_height=360)
        gen_inputs = [gen_model, prompt, length, gen_temperature, gen_top_k, seed]
        gen_outputs = [gen_text, gen_steps, gen_note]
        _presets(GENERATE_EXAMPLES, gen_inputs, gen_outputs, generate, "transformer_gpt_generate")
        model_event(gen_button.click, {"causal-lm": gen_model}, generate, gen_inputs, gen_outputs,
                    api_name="transformer_gpt_generate", queue={})
        model_event(generate_tab.select, {"causal-lm": gen_model}, generate, gen_inputs, gen_outputs,
                    api_name="transformer_gpt_generate_open", queue={})

    with gr.Tab("GPT: causal attention") as attention_tab:
        att_model = _model_picker()
        with gr.Row():
            att_text = gr.Textbox(label=f"Text (up to {gpt.MAX_MAP_TOKENS} tokens)", value=ATTENTION_EXAMPLES[0][1],
                                  scale=3)
            layer = gr.Slider(1, 12, value=1, step=1, label="layer")
            head = gr.Slider(1, 12, value=1, step=1, label="head")
        att_button = gr.Button("Show attention", variant="primary")
        att_note = gr.Markdown()
        with gr.Row():
            att_plot = gr.Plot(empty_figure("The attention map appears here."))
            att_mean = gr.Plot(empty_figure("The mean over heads appears here."))
        att_inputs, att_outputs = [att_model, att_text, layer, head], [att_note, att_plot, att_mean]
        _presets(ATTENTION_EXAMPLES, att_inputs, att_outputs, attention, "transformer_gpt_attention")
        model_event(att_button.click, {"causal-lm": att_model}, attention, att_inputs, att_outputs,
                    api_name="transformer_gpt_attention", queue={})
        model_event(attention_tab.select, {"causal-lm": att_model}, attention, att_inputs, att_outputs,
                    api_name="transformer_gpt_attention_open", queue={})

    with gr.Tab("GPT vs BERT") as vs_tab:
        gr.Markdown("One blank (`__` or `[MASK]`), two kinds of model. A causal LM (GPT) predicts the blank from the "
                    "words **before** it only; a masked LM (BERT) reads the whole sentence. In the seed's example "
                    "the left context allows *good* as well as *bad*; only the right context (“we had to cancel”) "
                    "decides. The char-GPT predicts the blank's first character.")
        with gr.Row():
            vs_text = gr.Textbox(label="Sentence with one blank", value=VS_EXAMPLES[0][0], scale=3)
            gpt_id = gr.Dropdown(list(gpt.MODEL_CHOICES), value=VS_EXAMPLES[0][1], label="causal LM",
                                 allow_custom_value=True)
            bert_id = gr.Dropdown(["bert-base-uncased", "bert-base-chinese", "distilbert-base-uncased"],
                                  value=VS_EXAMPLES[0][2], label="masked LM", allow_custom_value=True)
        vs_button = gr.Button("Compare", variant="primary")
        vs_note = gr.Markdown()
        with gr.Row():
            gpt_plot = gr.Plot(empty_figure("The causal LM's distribution appears here."))
            bert_plot = gr.Plot(empty_figure("The masked LM's distribution appears here."))
        vs_inputs, vs_outputs = [vs_text, gpt_id, bert_id], [vs_note, gpt_plot, bert_plot]
        _presets(VS_EXAMPLES, vs_inputs, vs_outputs, gpt_vs_bert, "transformer_gpt_vs_bert")
        model_event(vs_button.click, {"causal-lm": gpt_id, "mlm": bert_id}, gpt_vs_bert, vs_inputs, vs_outputs,
                    api_name="transformer_gpt_vs_bert", queue={})
        model_event(vs_tab.select, {"causal-lm": gpt_id, "mlm": bert_id}, gpt_vs_bert, vs_inputs, vs_outputs,
                    api_name="transformer_gpt_vs_bert_open", queue={})
