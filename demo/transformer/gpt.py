"""Transformer & GPT tab, GPT half (issue #16): next-token probabilities, generation token by token, causal
attention maps, and GPT vs BERT on one blank. ``build()`` adds the sub-tabs inside the tab's shell
(demo/transformer/transformer.py); events are named ``transformer_gpt_*``. Each sub-tab is a demo/kit/presets.py view: it shows its
default preset's result when opened, and every preset (the seed's 今天天气很 included) is one click."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pandas as pd

from core.ladder import heldout as ladder_heldout
from core.loading.checkpoints import CHAR_BERT_ID, CHAR_GPT_ID, CHECKPOINTS, CHINESE_GPT2_ID
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_GENERATE, MAX_TEXT_CHARS
from core.text.seeds import GPT_VS_BERT
from demo.kit import presets, sampling
from demo.server.handlers import friendly_errors, gpu_handler, number_in_range
from demo.kit.widgets import TABLE_BUTTONS
from demo.server.downloads import card_when_missing, missing_model_card, model_event, needs_download, results_visible
from demo.kit.figures import bar, empty_figure, heatmap
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
gpt = lazy_import("core.transformer.gpt")
char_sides = lazy_import("core.mlm.char_compare")  # the char-BERT's side of GPT vs BERT

MODEL_CHOICES = (CHAR_GPT_ID, *CHECKPOINTS["causal-lm"])  # the bundled char-GPT first

# model, text, temperature, top-k, top-p, seed
NEXT_EXAMPLES = [
    [CHAR_GPT_ID, "Call me Ishmael. Some years ago, never mind how long precisely, having little or no mon", 1.0, 0, 1.0, 0],
    [CHAR_GPT_ID, "The White Wha", 1.0, 0, 1.0, 0],
    [CHAR_GPT_ID, "Captain Ahab stood upon the quarter-deck", 0.5, 10, 1.0, 0],
    [CHAR_GPT_ID, "Captain Ahab stood upon the quarter-deck", 1.0, 0, 0.9, 0],  # the nucleus: the cut moves with the text
    ["gpt2", "The weather today is very", 1.0, 20, 1.0, 0],
    [CHINESE_GPT2_ID, "今天天气很", 1.0, 20, 1.0, 0],
]
# model, prompt, tokens, temperature, top-k, top-p, seed
GENERATE_EXAMPLES = [
    [CHAR_GPT_ID, "Call me Ishmael. ", 200, 0.8, 0, 1.0, 0],
    [CHAR_GPT_ID, "The whale ", 200, 0.5, 10, 1.0, 1],
    [CHAR_GPT_ID, '"Hast seen the White Whale?" ', 300, 1.0, 0, 1.0, 2],  # 300 > the context: the window slides
    [CHAR_GPT_ID, "Call me Ishmael. ", 200, 1.0, 0, 0.9, 0],
    ["gpt2", "The history of language models began", 60, 0.8, 40, 1.0, 0],
    [CHINESE_GPT2_ID, "今天天气很", 40, 0.8, 20, 1.0, 0],
]
ATTENTION_EXAMPLES = [
    [CHAR_GPT_ID, "Call me Ishmael.", 1, 1],
    [CHAR_GPT_ID, "the whale, the whale!", 2, 3],
    ["gpt2", "i have a dream", 1, 1],
]
VS_EXAMPLES = [
    [GPT_VS_BERT["en"][0], GPT_VS_BERT["en"][1], GPT_VS_BERT["en"][2]],
    [GPT_VS_BERT["zh"][0], GPT_VS_BERT["zh"][1], GPT_VS_BERT["zh"][2]],
    ["Call me Ishmael. Some years ago, never mind how long precisely, having little or no __ in my purse.", CHAR_GPT_ID,
     "bert-base-uncased"],
    # the two models trained here, same size, same text; "___" is a blank of three characters for the char-BERT
    ["The weather today is very ___, so we had to cancel the outdoor game.", CHAR_GPT_ID, CHAR_BERT_ID],
    ["Call me Ishmael. Some years ago, never mind how long precisely, having little or no _____ in my purse.",
     CHAR_GPT_ID, CHAR_BERT_ID],
]


def _shown(piece: str) -> str:
    """Spaces and newlines made visible on an axis."""
    return piece.replace(" ", "␣").replace("\n", "↵") or "∅"


def _badge(model_id: str) -> str:
    loaded = gpt.load(model_id)
    text = t("gpt.model_badge", badge=loaded.badge)
    if loaded.model_id == CHAR_GPT_ID:
        losses = " · ".join(f"{name} {loss:.3f}" for name, loss in gpt.held_out_losses().items())
        scores = ladder_heldout.char_gpt_scores()  # the same figure under the Overview ladder's protocol, beside it
        text += "\n\n" + t("gpt.held_out", losses=losses, windows=scores.windows, length=scores.length,
                             nats=f"{scores.window_nats:.3f}", bits=f"{scores.window_bits:.3f}",
                             stream=f"{scores.stream_bits:.3f}")
    if loaded.model_id == CHINESE_GPT2_ID:
        text += "\n\n" + t("gpt.zh_numbers_differ")
    return text


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
@card_when_missing("downloads.shows_gpt_next", outputs=3)
def next_token(model_id: str, text: str, temperature: float, top_k: float, top_p: float, seed: float):
    """The next-token distribution after the text, the cut that temperature, top-k and top-p make, and a draw."""
    settings = sampling.settings(temperature, top_k, top_p, seed)
    result = gpt.next_token(model_id, text, settings)
    notes = [_badge(result.model_id),
             t("gpt.read_tokens", count=len(result.pieces), last=" | ".join(_shown(p) for p in result.pieces[-12:])),
             sampling.summary(result.cut),
             sampling.drawn(_shown(result.drawn), result.draw.probability, settings.seed)
             + sampling.result_link("transformer", NEXT_PRESETS, (model_id, text, temperature, top_k, top_p, seed), 5)]
    if result.note:
        notes.append("⚠️ " + result.note)
    return "\n\n".join(notes), sampling.figure(result.cut, _shown), sampling.table(result.cut, _shown)


@friendly_errors
@gpu_handler
@card_when_missing("downloads.shows_gpt_generate", outputs=4, card_at=2)
def generate(model_id: str, prompt: str, length: float, temperature: float, top_k: float, top_p: float, seed: float):
    """Sample token by token; the text and the table of steps grow as it goes. The figure is the first step's cut."""
    length = int(number_in_range(length, t("gpt.length_name"), 1, MAX_GENERATE))
    settings = sampling.settings(temperature, top_k, top_p, seed)
    text, rows, figure = "", [], None
    for n, step in enumerate(gpt.generate_steps(model_id, prompt, length, settings), start=1):
        text += step.token
        rows.append(sampling.step_row(n, _shown(step.token), step.draw, _shown))
        if n == 1:
            figure = sampling.figure(step.draw.cut, _shown, "sampling.fig_first_step")
        if n % 10 == 0 and n < length:  # the figure once, then only the growing text and table
            yield prompt + text, sampling.steps_table(rows[::-1]), t("gpt.generated_so_far", n=n, length=length), \
                gr.skip()
    link = sampling.result_link("transformer", GENERATE_PRESETS,
                                (model_id, prompt, length, temperature, top_k, top_p, seed), 6)
    yield (prompt + text, sampling.steps_table(rows[::-1]),
           t("gpt.generated", length=length, settings=sampling.describe(settings)) + link, figure)


@friendly_errors
@gpu_handler
@card_when_missing("downloads.shows_gpt_attention", outputs=3)
def attention(model_id: str, text: str, layer: float, head: float):
    """One layer and head's causal attention map, and the mean over that layer's heads."""
    result = gpt.attention_maps(model_id, text)
    n_layer, n_head = result.maps.shape[:2]
    try:
        layer = int(number_in_range(layer, t("gpt.layer_name"), 1, n_layer))
        head = int(number_in_range(head, t("gpt.head_name"), 1, n_head))
    except UserInputError:
        raise UserInputError("gpt.layer_head_range", model=result.model_id, layers=n_layer, heads=n_head) from None
    labels = [_shown(p) for p in result.pieces]
    one = result.maps[layer - 1, head - 1].numpy()
    mean = result.maps[layer - 1].mean(0).numpy()
    kwargs = dict(x_title=t("gpt.axis_key"), y_title=t("gpt.axis_query"), zmin=0, zmax=1)
    fig = heatmap(one, labels, labels, t("gpt.fig_head", layer=layer, head=head), **kwargs)
    mean_fig = heatmap(mean, labels, labels, t("gpt.fig_mean", layer=layer, heads=n_head), **kwargs)
    above = float(np.triu(result.maps.numpy(), 1).max())
    notes = [t("gpt.attention_note", count=len(labels), layers=n_layer, heads=n_head,
               above="0" if above == 0 else f"{above:.0e}")]  # exactly 0, not "0e+00"
    if result.note:
        notes.append("⚠️ " + result.note)
    return "\n\n".join(notes), fig, mean_fig


@friendly_errors
@gpu_handler
def gpt_vs_bert(text: str, gpt_id: str, bert_id: str):
    """The causal LM's next-token distribution from the left context, beside the masked LM's at the blank."""
    bert_id = str(bert_id or "").strip() or "bert-base-uncased"
    char_bert = bert_id.lower() == CHAR_BERT_ID
    result = gpt.gpt_vs_bert(text, gpt_id, None if char_bert else bert_id)
    if result.bert_error is not None and needs_download(result.bert_error):  # offline: the char-BERT stands in
        try:
            return _with_char_bert(result, text, t("gpt.char_bert_stands_in", model=bert_id[:100]))
        except UserInputError:  # a text it cannot read (Chinese): the checkpoint's card, as before
            pass
    if char_bert:
        return _with_char_bert(result, text)
    if result.gpt:
        cut = result.gpt.cut  # τ = 1, no cut: the model's own distribution
        gpt_fig = bar([_shown(tok) for tok in cut.tokens], cut.original, t("gpt.fig_vs_gpt", model=result.gpt.model_id),
                      highlight=[i == 0 for i in range(len(cut.tokens))])
    else:  # hidden: the notes say why the causal side has no result
        gpt_fig = None
    # No masked LM: its figure is hidden; its card (when a download brings it) leads the notes, else its reason.
    card, bert_fig, bert_note = None, None, result.bert_note
    if result.bert:
        bert_fig = bar([tok for tok, _ in result.bert], [p for _, p in result.bert],
                       t("gpt.fig_vs_bert", model=result.bert_model),
                       highlight=[i == 0 for i in range(len(result.bert))])
    elif result.bert_error is not None and needs_download(result.bert_error):
        card, bert_note = missing_model_card(result.bert_model, "downloads.shows_gpt_bert", result.bert_error), None
    notes = ([card] if card else []) + [t("gpt.gpt_reads", left=result.left)]
    if result.bert:
        notes.append(t("gpt.bert_reads", text=result.text))
    notes += ["⚠️ " + note for note in (result.gpt_note, result.gpt and result.gpt.note, bert_note) if note]
    if any("\u4e00" <= ch <= "\u9fff" for ch in result.text):
        notes.append(t("gpt.zh_numbers_differ"))
    return ("\n\n".join(notes), gpt_fig, bert_fig, results_visible(bool(result.gpt)),
            results_visible(bool(result.bert)))


def _with_char_bert(result, text: str, stands_in: str | None = None) -> tuple:
    """GPT vs BERT with the char-BERT on the masked side: its first character at the blank (both sides read) beside
    the causal LM's next token, and the word each of the two models trained here fills in."""
    sides = char_sides.compare_as_written(text, 10)
    first = sides.both.masked[0].candidates
    bert_fig = bar([_shown(c.char) for c in first], [c.probability for c in first],
                   t("gpt.fig_vs_bert", model=CHAR_BERT_ID), highlight=[i == 0 for i in range(len(first))])
    gpt_fig = None
    if result.gpt:
        cut = result.gpt.cut
        gpt_fig = bar([_shown(tok) for tok in cut.tokens], cut.original, t("gpt.fig_vs_gpt", model=result.gpt.model_id),
                      highlight=[i == 0 for i in range(len(cut.tokens))])
    notes = [t("gpt.gpt_reads", left=result.left), t("gpt.bert_reads", text=sides.text),
             t("gpt.char_words", chars=sides.blank_chars, gpt=sides.gpt.word, bert=sides.both.blanks[0].iterative)]
    notes += ["⚠️ " + note for note in (stands_in, result.gpt_note, result.gpt and result.gpt.note, sides.note) if note]
    return "\n\n".join(notes), gpt_fig, bert_fig, results_visible(bool(result.gpt)), results_visible(True)


# ----------------------------------------------------------------------------------------------------------------
# Presets: a checkpoint that is not on this machine gives its `hf download` message in the view, not a dead click


def _or_message(fn, figures: int, table: str | None = None, results: int = 0):
    """fn for a preset: its result, or (the message, blank figures[, an empty table], ``results`` hidden result
    columns) when it cannot run here."""
    def run(*values):
        try:
            return fn(*values)
        except gr.Error as exc:
            blank = [empty_figure(t("gpt.see_message")) for _ in range(figures)]
            return ("⚠️ " + str(exc.message), *blank, *([pd.DataFrame()] if table else []),
                    *[results_visible(False)] * results)
    return run


def _generate_all(*values):
    """generate() run to its end (a preset shows the finished text, not the stream)."""
    outputs = None
    for outputs in generate(*values):
        pass
    return outputs


def _generate_or_message(*values):
    try:
        return _generate_all(*values)
    except gr.Error as exc:
        return values[1], pd.DataFrame(), "⚠️ " + str(exc.message), None, results_visible(False)


P = presets.Preset
NEXT_PRESETS = [
    P("char-gpt-ishmael", label("gpt.preset_ishmael"), tuple(NEXT_EXAMPLES[0]), "§12"),
    P("char-gpt-white-wha", label("gpt.preset_white_wha"), tuple(NEXT_EXAMPLES[1]), "§12"),
    P("char-gpt-ahab", label("gpt.preset_ahab"), tuple(NEXT_EXAMPLES[2]), "§12"),
    P("char-gpt-nucleus", label("gpt.preset_nucleus"), tuple(NEXT_EXAMPLES[3]), "§12"),
    P("gpt2-weather", label("gpt.preset_gpt2_weather"), tuple(NEXT_EXAMPLES[4]), "§12"),
    P("chinese-gpt2-weather", label("gpt.preset_zh_weather"), tuple(NEXT_EXAMPLES[5]), "§13.1"),
]
GENERATE_PRESETS = [
    P("generate-ishmael", label("gpt.preset_gen_ishmael"), tuple(GENERATE_EXAMPLES[0]), "§12"),
    P("generate-whale", label("gpt.preset_gen_whale"), tuple(GENERATE_EXAMPLES[1]), "§12"),
    P("generate-sliding", label("gpt.preset_gen_sliding"), tuple(GENERATE_EXAMPLES[2]), "§12"),
    P("generate-nucleus", label("gpt.preset_gen_nucleus"), tuple(GENERATE_EXAMPLES[3]), "§12"),
    P("generate-gpt2", label("gpt.preset_gen_gpt2"), tuple(GENERATE_EXAMPLES[4]), "§12"),
    P("generate-chinese", label("gpt.preset_gen_zh"), tuple(GENERATE_EXAMPLES[5]), "§12"),
]
ATTENTION_PRESETS = [
    P("causal-ishmael", label("gpt.preset_att_ishmael"), tuple(ATTENTION_EXAMPLES[0]), "§12"),
    P("causal-whale", label("gpt.preset_att_whale"), tuple(ATTENTION_EXAMPLES[1]), "§12"),
    P("causal-gpt2-dream", label("gpt.preset_att_gpt2"), tuple(ATTENTION_EXAMPLES[2]), "§9"),
]
VS_PRESETS = [
    P("gpt-vs-bert-weather", label("gpt.preset_vs_en"), tuple(VS_EXAMPLES[0]), "§13.1"),
    P("jintian-tianqi-hen", label("gpt.preset_vs_zh"), tuple(VS_EXAMPLES[1]), "§13.1"),
    P("gpt-vs-bert-ishmael", label("gpt.preset_vs_char"), tuple(VS_EXAMPLES[2]), "§13.1"),
    P("char-gpt-vs-char-bert", label("gpt.preset_vs_char_bert"), tuple(VS_EXAMPLES[3]), "§13.1"),
    P("char-gpt-vs-char-bert-ishmael", label("gpt.preset_vs_char_bert_ishmael"), tuple(VS_EXAMPLES[4]), "§13.1"),
]


# ----------------------------------------------------------------------------------------------------------------
# Layout


def _model_picker() -> gr.Dropdown:
    return gr.Dropdown(list(MODEL_CHOICES), value=CHAR_GPT_ID, label=label("gpt.model"), allow_custom_value=True,
                       info=label("gpt.model_info"))


def build() -> dict[str, presets.View]:
    """The GPT sub-tabs, to be called inside the tab's gr.Tabs(); each view shows its first preset's result when
    its sub-tab is opened, and computes nothing before. Returns the views by key (for the tab's lesson)."""
    with gr.Tab(label("gpt.tab_next"), id="gpt-next") as next_tab:
        gr.Markdown(label("gpt.intro"))
        model = _model_picker()
        text = gr.Textbox(label=label("gpt.text_so_far"), value=NEXT_EXAMPLES[0][1], lines=2, max_length=MAX_TEXT_CHARS)
        temperature, top_k, top_p, next_seed = sampling.controls(*NEXT_EXAMPLES[0][2:])
        next_button = gr.Button(label("gpt.predict_next"), variant="primary")
        next_bar = gr.Column()
        next_note = gr.Markdown()
        with gr.Row() as next_results:  # hidden while the checkpoint is missing: next_note shows its card
            next_plot = gr.Plot(show_label=False)
            next_table = sampling.table_component()
        next_inputs = [model, text, temperature, top_k, top_p, next_seed]
        next_outputs = [next_note, next_plot, next_table, next_results]
        # cache_results: the draw is seeded (the seed is an input and shown), so a question has one answer
        model_event(next_button.click, {"causal-lm": model}, next_token, next_inputs, next_outputs,
                    api_name="transformer_gpt_next", queue={}, cache_results=True)
        model_event(text.submit, {"causal-lm": model}, next_token, next_inputs, next_outputs,
                    api_name="transformer_gpt_next_submit", queue={}, cache_results=True)
        next_view = presets.View("transformer", "gpt_next", next_inputs, next_outputs,
                                 _or_message(next_token, 1, table="next", results=1), NEXT_PRESETS, where=next_tab,
                                 seed=next_seed)
        with next_bar:
            next_view.buttons()

    with gr.Tab(label("gpt.tab_generate"), id="gpt-generate") as generate_tab:
        gen_model = _model_picker()
        with gr.Row():
            prompt = gr.Textbox(label=label("gpt.prompt"), value=GENERATE_EXAMPLES[0][1], scale=3,
                                max_length=MAX_TEXT_CHARS)
            length = gr.Slider(1, MAX_GENERATE, value=200, step=1, label=label("gpt.tokens_to_generate"))
        gen_temperature, gen_top_k, gen_top_p, seed = sampling.controls(*GENERATE_EXAMPLES[0][3:])
        gen_button = gr.Button(label("gpt.generate"), variant="primary")
        gen_bar = gr.Column()
        gen_note = gr.Markdown()
        with gr.Column() as gen_results:  # hidden while the checkpoint is missing: gen_note shows its card
            gen_text = gr.Textbox(label=label("gpt.prompt_and_generated"), lines=6)
            with gr.Row():
                gen_plot = gr.Plot(show_label=False)
                gen_steps = gr.Dataframe(headers=[""] * sampling.STEP_COLUMNS, interactive=False, max_height=420,
                                         buttons=TABLE_BUTTONS)
        gen_inputs = [gen_model, prompt, length, gen_temperature, gen_top_k, gen_top_p, seed]
        gen_outputs = [gen_text, gen_steps, gen_note, gen_plot, gen_results]
        model_event(gen_button.click, {"causal-lm": gen_model}, generate, gen_inputs, gen_outputs,
                    api_name="transformer_gpt_generate", queue={})
        generate_view = presets.View("transformer", "gpt_generate", gen_inputs, gen_outputs, _generate_or_message,
                                     GENERATE_PRESETS, where=generate_tab, seed=seed)
        with gen_bar:
            generate_view.buttons()

    with gr.Tab(label("gpt.tab_attention"), id="gpt-attention") as attention_tab:
        att_model = _model_picker()
        with gr.Row():
            att_text = gr.Textbox(label=label("gpt.text_map"), value=ATTENTION_EXAMPLES[0][1], scale=3,
                                  max_length=MAX_TEXT_CHARS)
            layer = gr.Slider(1, 12, value=1, step=1, label=label("gpt.layer"))
            head = gr.Slider(1, 12, value=1, step=1, label=label("gpt.head"))
        att_button = gr.Button(label("gpt.show_attention"), variant="primary")
        att_bar = gr.Column()
        att_note = gr.Markdown()
        with gr.Row() as att_results:  # hidden while the checkpoint is missing: att_note shows its card
            att_plot = gr.Plot(show_label=False)
            att_mean = gr.Plot(show_label=False)
        att_inputs, att_outputs = [att_model, att_text, layer, head], [att_note, att_plot, att_mean, att_results]
        model_event(att_button.click, {"causal-lm": att_model}, attention, att_inputs, att_outputs,
                    api_name="transformer_gpt_attention", queue={})
        attention_view = presets.View("transformer", "gpt_attention", att_inputs, att_outputs,
                                      _or_message(attention, 2, results=1), ATTENTION_PRESETS, where=attention_tab)
        with att_bar:
            attention_view.buttons()

    with gr.Tab(label("gpt.tab_vs"), id="gpt-vs-bert") as vs_tab:
        gr.Markdown(label("gpt.vs_intro"))
        with gr.Row():
            vs_text = gr.Textbox(label=label("gpt.sentence_blank"), value=VS_EXAMPLES[0][0], scale=3,
                                 max_length=MAX_TEXT_CHARS)
            gpt_id = gr.Dropdown(list(MODEL_CHOICES), value=VS_EXAMPLES[0][1], label=label("gpt.causal_lm"),
                                 allow_custom_value=True)
            bert_id = gr.Dropdown([CHAR_BERT_ID, "bert-base-uncased", "bert-base-chinese", "distilbert-base-uncased"],
                                  value=VS_EXAMPLES[0][2], label=label("gpt.masked_lm"), allow_custom_value=True)
        vs_button = gr.Button(label("gpt.compare"), variant="primary")
        vs_bar = gr.Column()
        vs_note = gr.Markdown()
        with gr.Row():  # each side hidden while it has no result: vs_note shows the card or the reason
            with gr.Column() as gpt_results:
                gpt_plot = gr.Plot(show_label=False)
            with gr.Column() as bert_results:
                bert_plot = gr.Plot(show_label=False)
        vs_inputs = [vs_text, gpt_id, bert_id]
        vs_outputs = [vs_note, gpt_plot, bert_plot, gpt_results, bert_results]
        model_event(vs_button.click, {"causal-lm": gpt_id, "mlm": bert_id}, gpt_vs_bert, vs_inputs, vs_outputs,
                    api_name="transformer_gpt_vs_bert", queue={})
        vs_view = presets.View("transformer", "gpt_vs_bert", vs_inputs, vs_outputs, _or_message(gpt_vs_bert, 2, results=2),
                               VS_PRESETS, where=vs_tab)
        with vs_bar:
            vs_view.buttons()
    return {"gpt_next": next_view, "gpt_generate": generate_view, "gpt_attention": attention_view,
            "gpt_vs_bert": vs_view}
