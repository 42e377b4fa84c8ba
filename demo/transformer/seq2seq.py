"""Transformer & GPT tab, the encoder–decoder (issue #52, seed §10.3–§11.2): three sub-tabs built inside the tab's
gr.Tabs (demo/transformer/transformer.py), events named ``transformer_seq2seq*``.

- Translate, step by step (id "seq2seq"): the source and the growing output; for the step the learner picks, the
  decoder's masked self-attention (target × target), the cross-attention (target × source) for a layer and head (or
  their mean), the output Linear + softmax as the top-k words, "why this word" (gradient × input over the source
  tokens), and teacher forcing beside free decoding. The model trained here (zh/fr → en), or t5-small online
  (offline: the download card).
- §11.1, why the decoder masks (id "seq2seq-mask"): the measured mask experiment.
- §11.2, one vector C or attention (id "seq2seq-align"): accuracy against source length for the two LSTMs, and each
  target word's alignment to the source words.

core/seq2seq/view.py computes; this module formats. Strings: the ``seq2seq`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

import functools
import math

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.loading.checkpoints import CHECKPOINTS, SEQ2SEQ_HERE_ID
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_SHORT_TEXT_CHARS
from demo.kit import presets
from demo.kit import sampling
from demo.server.handlers import friendly_errors, gpu_handler, whole_number
from demo.kit.widgets import TABLE_BUTTONS, sig4
from demo.server.downloads import card_when_missing, model_event
from demo.kit.figures import COLORWAY, bar, heatmap, lines, styled
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
view = lazy_import("core.seq2seq.view")
seq2seq = lazy_import("core.seq2seq.seq2seq")

T5_ID = CHECKPOINTS["seq2seq"][0]
MODEL_CHOICES = (SEQ2SEQ_HERE_ID, T5_ID)
MAX_STEP = 41  # core.seq2seq.seq2seq.MAX_OUTPUT_WORDS + the final </s>
MAX_LAYER, MAX_HEAD = 6, 8  # t5-small: 6 decoder layers of 8 heads (the model trained here: 2 of 4)
TOP_K = 8
FORCED_COLUMNS = 7  # seq2seq.col_forced_*
MASK_COLUMNS = 4  # seq2seq.col_mask_*
LENGTH_COLUMNS = 6  # seq2seq.col_length_*


def _shown(token: str) -> str:
    return token.replace(" ", "␣") or "∅"


def _one_head(maps, layer: int, head: int) -> np.ndarray:
    """(nh, T, K) → (T, K): head ``head`` (1-based), or the mean of the heads for 0."""
    maps = maps[layer - 1].float().numpy()
    return maps.mean(0) if head == 0 else maps[head - 1]


def _head_name(head: int) -> str:
    return t("seq2seq.mean_of_heads") if head == 0 else t("seq2seq.head_n", head=head)


# ----------------------------------------------------------------------------------------------------------------
# Translate, step by step


def self_attention_figure(step, number: int, layer: int, head: int):
    """Row t: the query at target position t; column u: the position it reads. Above the diagonal, the mask's −∞:
    drawn blank (the decoder may not read a word it has not written)."""
    values = _one_head(step.self_attention, layer, head)
    values = np.where(np.triu(np.ones_like(values, dtype=bool), 1), np.nan, values)
    prefix = [_shown(p) for p in step.prefix]
    return heatmap(values, prefix, prefix, t("seq2seq.fig_self", step=number, layer=layer, head=_head_name(head)),
                   zmin=0, zmax=1, x_title=t("seq2seq.axis_read"), y_title=t("seq2seq.axis_query"))


def cross_attention_figure(step, source: list[str], number: int, layer: int, head: int):
    values = _one_head(step.cross_attention, layer, head)
    rows = [_shown(p) for p in step.prefix]
    return heatmap(values, [_shown(s) for s in source], rows,
                   t("seq2seq.fig_cross", step=number, layer=layer, head=_head_name(head), word=_shown(step.word)),
                   zmin=0, zmax=1, x_title=t("seq2seq.axis_source"), y_title=t("seq2seq.axis_query"))


def top_figure(step, number: int):
    words = [_shown(w) for w, _ in step.top]
    return bar(words, [p for _, p in step.top], t("seq2seq.fig_top", step=number, word=_shown(step.word)),
               highlight=[w == step.word for w, _ in step.top], value_format=".3f")


def why_figure(why, number: int):
    return bar([_shown(s) for s in why.source], why.scores,
               t("seq2seq.fig_why", step=number, word=why.word, p=f"{why.probability:.3f}"),
               value_title=t("seq2seq.axis_why"), horizontal=False, value_format=".4f",
               highlight=[s == max(why.scores) for s in why.scores])


@functools.lru_cache(maxsize=1)
def corpus_english() -> dict[str, str]:
    """The corpus's English by source, its tokens folded as the model reads them (19,200 pairs, read once)."""
    return {_folded(source): english for pairs in seq2seq.read_corpus().values() for _, source, english in pairs}


def _folded(text: str) -> str:
    return " ".join(seq2seq.fold(token) for token in seq2seq.split_source(text))


def known_reference(text: str) -> str:
    """The corpus's English for a source it holds (the seed's sentences among them), else ""."""
    return corpus_english().get(_folded(text), "")


def forced_table(translation, forced) -> pd.DataFrame:
    """One row per position: what free decoding wrote (its own previous words fed back) beside what teacher forcing
    predicts from the true previous words."""
    rows = []
    for i in range(max(len(translation.steps), len(forced or []))):
        free = translation.steps[i] if i < len(translation.steps) else None
        true = forced[i] if forced and i < len(forced) else None
        rows.append([i + 1,
                     " ".join(_shown(p) for p in free.prefix) if free else "—",
                     _shown(free.word) if free else "—",
                     sig4(dict(free.top).get(free.word, math.nan)) if free else "—",
                     " ".join(true.prefix) if true else "—",
                     f"{true.truth} ({sig4(true.p_truth)})" if true else "—",
                     true.predicted if true else "—"])
    return pd.DataFrame(rows, columns=[t(f"seq2seq.col_forced_{i}") for i in range(FORCED_COLUMNS)])


def _output_line(translation, number: int) -> str:
    """The output so far, the picked step's word in bold, the words after it struck through lightly (not yet written
    at that step)."""
    words = [_shown(s.word) for s in translation.steps]
    shown = [f"**{w}**" if i == number - 1 else (f"~~{w}~~" if i >= number else w) for i, w in enumerate(words)]
    return " ".join(shown)


def translate_note(model_id: str, translation, number: int, settings, reference: str, forced, asked: dict) -> str:
    here = view.is_here(model_id)
    if here:
        heldout = view.results()["heldout"]
        parts = [t("seq2seq.badge_here", parameters=f"{view.results()['parameters']:,}",
                   exact=f"{heldout['exact_match']:.1%}", tokens=f"{heldout['token_accuracy']:.1%}")]
    else:
        parts = [t("seq2seq.badge_t5", model=model_id)]
    parts.append(t("seq2seq.source_tokens", count=len(translation.source),
                   tokens=" · ".join(_shown(s) for s in translation.source)))
    if translation.unknown:
        parts.append("⚠️ " + t("seq2seq.unknown_words", words=", ".join(translation.unknown)))
    step = translation.steps[number - 1]
    parts.append(t("seq2seq.output_line", output=_output_line(translation, number), steps=len(translation.steps),
                   settings=sampling.describe(settings)))
    parts.append(t("seq2seq.step_line", step=number, prefix=" ".join(_shown(p) for p in step.prefix),
                   word=_shown(step.word), p=sig4(dict(step.top).get(step.word, math.nan))))
    if not here:
        parts.append(t("seq2seq.forced_here_only"))
    elif forced is None:
        parts.append(t("seq2seq.no_reference"))
    else:
        right = sum(f.predicted == f.truth for f in forced)
        parts.append(t("seq2seq.forced_summary", reference=reference, right=right, total=len(forced),
                       free=translation.text or "∅"))
    for name, (value, limit) in asked.items():
        parts.append(t("seq2seq.clamped", name=t(f"seq2seq.{name}_name"), asked=value, shown=limit))
    return "\n\n".join(parts)


@friendly_errors
@gpu_handler
@card_when_missing("seq2seq.shows_translate", outputs=6)
def translate(model_id: str, text: str, reference: str, step: float, layer: float, head: float, temperature: float,
              top_k: float, top_p: float, seed: float):
    """Decode one token at a time and show the picked step: note, masked self-attention, cross-attention, top-k
    words, why this word, and teacher forcing beside free decoding."""
    settings = sampling.settings(temperature, top_k, top_p, seed)
    asked_step = whole_number(step, t("seq2seq.step_name"), minimum=1)
    asked_layer = whole_number(layer, t("seq2seq.layer_name"), minimum=1)
    asked_head = whole_number(head, t("seq2seq.head_name"), minimum=0)
    text, reference = str(text or ""), str(reference or "").strip()
    if len(text) > MAX_SHORT_TEXT_CHARS:
        raise UserInputError("seq2seq.error_too_many_chars", chars=len(text), limit=MAX_SHORT_TEXT_CHARS)
    translation = view.decode(model_id, text, settings, top_k=TOP_K)  # a source it cannot read: a clear message
    here = view.is_here(model_id)
    number = min(asked_step, len(translation.steps))
    step = translation.steps[number - 1]
    layers, heads = len(step.cross_attention), step.cross_attention[0].shape[0]
    shown_layer, shown_head = min(asked_layer, layers), min(asked_head, heads)
    asked = {name: (value, limit) for name, value, limit in
             (("step", asked_step, number), ("layer", asked_layer, shown_layer), ("head", asked_head, shown_head))
             if value != limit}
    forced = None
    if here:
        reference = reference or known_reference(text)
        if reference:
            unknown = view.unknown_reference_words(reference)
            if unknown:
                raise UserInputError("seq2seq.error_reference_words", words=", ".join(unknown))
            forced = view.forced(text, reference)
    note = translate_note(model_id, translation, number, settings, reference, forced, asked)
    if here:
        why = view.why_word(text, translation.words, min(number - 1, len(translation.words)))
        why_update = gr.update(value=why_figure(why, number), visible=True)
    else:  # gradient × input is computed on the model trained here
        why_update = gr.update(value=None, visible=False)
    return (note, self_attention_figure(step, number, shown_layer, shown_head),
            cross_attention_figure(step, translation.source, number, shown_layer, shown_head),
            top_figure(step, number), why_update, forced_table(translation, forced))


# ----------------------------------------------------------------------------------------------------------------
# §11.1: why the decoder masks


def mask_figure(experiment: dict):
    names = [t("seq2seq.metric_loss"), t("seq2seq.metric_exact"), t("seq2seq.metric_tokens")]
    traces = []
    for colour, side in zip(COLORWAY, ("masked", "unmasked")):
        run = experiment[side]
        values = [run["training_loss"], run["heldout"]["exact_match"], run["heldout"]["token_accuracy"]]
        traces.append(go.Bar(x=names, y=values, name=t(f"seq2seq.side_{side}"), marker_color=colour,
                             text=[f"{v:.3f}" for v in values], textposition="outside",
                             hovertemplate="%{x}: %{y:.4f}<extra></extra>"))
    masked, unmasked = experiment["masked"], experiment["unmasked"]
    title = t("seq2seq.fig_mask", masked_loss=f"{masked['training_loss']:.2f}",
              unmasked_loss=f"{unmasked['training_loss']:.2f}",
              masked_exact=f"{masked['heldout']['exact_match']:.0%}",
              unmasked_exact=f"{unmasked['heldout']['exact_match']:.0%}")
    return styled(go.Figure(traces, layout=dict(title_text=title, barmode="group", height=460,
                                                yaxis=dict(title_text=t("seq2seq.axis_value"), range=[0, 1.1]))))


def mask_table(experiment: dict) -> pd.DataFrame:
    rows = [[t(f"seq2seq.side_{side}"), sig4(run["training_loss"]), f"{run['heldout']['exact_match']:.1%}",
             f"{run['heldout']['token_accuracy']:.1%}"] for side, run in
            ((side, experiment[side]) for side in ("masked", "unmasked"))]
    return pd.DataFrame(rows, columns=[t(f"seq2seq.col_mask_{i}") for i in range(MASK_COLUMNS)])


@friendly_errors
def mask_experiment():
    """§11.1 as measured: training loss and free-decoding held-out accuracy, with and without the decoder's mask."""
    experiment = view.mask_experiment()
    settings = experiment["settings"]
    note = t("seq2seq.mask_note", steps=settings["steps"], batch=settings["batch_size"], seed=settings["seed"],
             sentences=experiment["masked"]["heldout"]["sentences"],
             masked_loss=f"{experiment['masked']['training_loss']:.3f}",
             unmasked_loss=f"{experiment['unmasked']['training_loss']:.3f}",
             masked_exact=f"{experiment['masked']['heldout']['exact_match']:.1%}",
             unmasked_exact=f"{experiment['unmasked']['heldout']['exact_match']:.1%}")
    return note, mask_figure(experiment), mask_table(experiment)


# ----------------------------------------------------------------------------------------------------------------
# §11.2: one context vector C, or attention


def _bin(row: dict) -> str:
    lo, hi = row["bin"]
    return f"{lo}–{hi}"


def length_figure(experiment: dict):
    bins = [_bin(row) for row in experiment["attention"]["by_length"]]
    series = {}
    for context in ("vector", "attention"):
        by_bin = {_bin(row): row for row in experiment[context]["by_length"]}
        for metric, name in (("exact_match", "exact"), ("token_accuracy", "tokens")):
            series[t(f"seq2seq.series_{context}_{name}")] = [by_bin[b][metric] if b in by_bin else math.nan
                                                           for b in bins]
    return lines(bins, series, t("seq2seq.fig_length"), x_title=t("seq2seq.axis_length"),
                 y_title=t("seq2seq.axis_accuracy"), height=480, legend_below=True)


def length_table(experiment: dict) -> pd.DataFrame:
    rows = []
    for context in ("vector", "attention"):
        for row in experiment[context]["by_length"]:
            rows.append([t(f"seq2seq.context_{context}"), _bin(row), row["sentences"], f"{row['exact_match']:.1%}",
                         f"{row['token_accuracy']:.1%}", f"{experiment[context]['heldout']['exact_match']:.1%}"])
    return pd.DataFrame(rows, columns=[t(f"seq2seq.col_length_{i}") for i in range(LENGTH_COLUMNS)])


def alignment_figure(values, source: list[str], words: list[str], title_key: str):
    return heatmap(np.asarray(values, dtype=float), [_shown(s) for s in source], [_shown(w) for w in words],
                   t(title_key), zmin=0, zmax=1, x_title=t("seq2seq.axis_source"), y_title=t("seq2seq.axis_written"),
                   annotate=len(source) * len(words) <= 150)


@friendly_errors
@gpu_handler
def context_vs_attention(text: str):
    """§11.2: accuracy by source length for the two LSTMs (as measured), and the alignment of each target word to
    the source words for the text: the attention LSTM's α and the Transformer's cross-attention."""
    text = str(text or "")
    if len(text) > MAX_SHORT_TEXT_CHARS:
        raise UserInputError("seq2seq.error_too_many_chars", chars=len(text), limit=MAX_SHORT_TEXT_CHARS)
    found = view.alignments(text)
    experiment = view.context_experiment()
    note = t("seq2seq.context_note", source=" · ".join(found.source), count=len(found.source),
             vector=" ".join(found.vector_words) or "∅", attention=" ".join(found.lstm_words[:-1]) or "∅",
             transformer=" ".join(found.transformer_words[:-1]) or "∅",
             vector_exact=f"{experiment['vector']['heldout']['exact_match']:.1%}",
             attention_exact=f"{experiment['attention']['heldout']['exact_match']:.1%}")
    return (note, length_figure(experiment),
            alignment_figure(found.lstm_alpha, found.source, found.lstm_words, "seq2seq.fig_alpha"),
            alignment_figure(found.cross, found.source, found.transformer_words, "seq2seq.fig_alignment_cross"),
            length_table(experiment))


# ----------------------------------------------------------------------------------------------------------------
# Presets and the lesson's steps (demo/transformer/transformer.py adds them to the tab's lesson)

P = presets.Preset
GREEDY = (0.0, 0, 1.0, 0)  # temperature, top-k, top-p, seed
# model, source, reference, step, layer, head, temperature, top-k, top-p, seed
TRANSLATE_PRESETS = [
    P("wo-ai-zhongguo", label("seq2seq.preset_wo_ai_zhongguo"),
      (SEQ2SEQ_HERE_ID, "我爱中国", "I love China", 3, 2, 0, *GREEDY), "§11.2"),
    P("jiqi-xuexi", label("seq2seq.preset_jiqi_xuexi"),
      (SEQ2SEQ_HERE_ID, "机器学习", "machine learning", 1, 2, 0, *GREEDY), "§11"),
    P("je-suis-etudiant", label("seq2seq.preset_je_suis_etudiant"),
      (SEQ2SEQ_HERE_ID, "je suis étudiant", "I am a student", 4, 2, 0, *GREEDY), "§11"),
    P("long-sentence-sampled", label("seq2seq.preset_long_sampled"),
      (SEQ2SEQ_HERE_ID, "我今天也爱巴黎，你每天在学校读新闻，他们也在巴黎看新闻", "", 6, 2, 0, 1.5, 0, 1.0, 3), "§10.4"),
    P("t5-small-je-suis", label("seq2seq.preset_t5_small"),
      (T5_ID, "translate English to French: I am a student", "", 1, 6, 0, *GREEDY), "§11"),
]
MASK_PRESETS = [P("mask-experiment", label("seq2seq.preset_mask_experiment"), (), "§11.1")]
ALIGN_PRESETS = [
    P("c-vs-attention", label("seq2seq.preset_c_vs_attention"),
      ("他每天学习英语，他们也在北京爱机器学习，我在北京学习历史",), "§11.2"),
    P("wo-ai-zhongguo-alignment", label("seq2seq.preset_wo_ai_zhongguo_alignment"), ("我爱中国",), "§11.2"),
    P("je-suis-etudiant-alignment", label("seq2seq.preset_je_suis_etudiant_alignment"), ("je suis étudiant",),
      "§11.2"),
]
LESSON = [
    ("§10.3", label("seq2seq.lesson_1_q"), label("seq2seq.lesson_1_a"), "seq2seq", "je-suis-etudiant"),
    ("§11.1", label("seq2seq.lesson_2_q"), label("seq2seq.lesson_2_a"), "seq2seq_mask", "mask-experiment"),
    ("§11.2", label("seq2seq.lesson_3_q"), label("seq2seq.lesson_3_a"), "seq2seq_align", "c-vs-attention"),
]


# ----------------------------------------------------------------------------------------------------------------
# Layout


def build() -> dict[str, presets.View]:
    """The three sub-tabs, inside the tab's gr.Tabs(); each shows its first preset's result when opened."""
    return {"seq2seq": build_translate_view(), "seq2seq_mask": build_mask_view(),
            "seq2seq_align": build_align_view()}


def build_translate_view() -> presets.View:
    first = TRANSLATE_PRESETS[0].values
    with gr.Tab(label("seq2seq.tab_translate"), id="seq2seq") as tab:
        gr.Markdown(label("seq2seq.intro"))
        with gr.Row():
            model = gr.Dropdown(list(MODEL_CHOICES), value=first[0], label=label("seq2seq.model"),
                                allow_custom_value=True, info=label("seq2seq.model_info"), min_width=300)
            model.checkpoint_task = "seq2seq"  # what a preset fetches before a GPU call (demo.kit.presets.View.run)
            source = gr.Textbox(label=label("seq2seq.source"), value=first[1], scale=2,
                                max_length=MAX_SHORT_TEXT_CHARS)
            reference = gr.Textbox(label=label("seq2seq.reference"), value=first[2], scale=2,
                                   info=label("seq2seq.reference_info"), max_length=MAX_SHORT_TEXT_CHARS)
        with gr.Row():
            step = gr.Slider(1, MAX_STEP, value=first[3], step=1, label=label("seq2seq.step"))
            layer = gr.Slider(1, MAX_LAYER, value=first[4], step=1, label=label("seq2seq.layer"))
            head = gr.Slider(0, MAX_HEAD, value=first[5], step=1, label=label("seq2seq.head"),
                             info=label("seq2seq.head_info"))
        temperature, top_k, top_p, seed = sampling.controls(*first[6:])
        button = gr.Button(label("seq2seq.decode"), variant="primary")
        bar_slot = gr.Column()
        note = gr.Markdown()
        with gr.Column() as results:  # hidden while a T5 checkpoint is missing: the note shows its card
            with gr.Row():
                self_plot = gr.Plot(show_label=False)
                cross_plot = gr.Plot(show_label=False)
            with gr.Row():
                top_plot = gr.Plot(show_label=False)
                why_plot = gr.Plot(show_label=False)
            table = gr.Dataframe(headers=[""] * FORCED_COLUMNS, interactive=False, wrap=True, max_height=480,
                                 buttons=TABLE_BUTTONS, label=label("seq2seq.forced_table"))
    inputs = [model, source, reference, step, layer, head, temperature, top_k, top_p, seed]
    outputs = [note, self_plot, cross_plot, top_plot, why_plot, table, results]
    models = {"seq2seq": model}
    # One trigger, the button: each further one would cost the page two events (tests/test_app.py's budget). A step,
    # layer or head picked after a run is shown by pressing it again (a decoding takes a fraction of a second).
    model_event(button.click, models, translate, inputs, outputs, api_name="transformer_seq2seq", cache_results=True)
    translate_view = presets.View("transformer", "seq2seq", inputs, outputs, translate, TRANSLATE_PRESETS, where=tab,
                                  seed=seed)
    with bar_slot:
        translate_view.buttons()
    return translate_view


def build_mask_view() -> presets.View:
    with gr.Tab(label("seq2seq.tab_mask"), id="seq2seq-mask") as tab:
        gr.Markdown(label("seq2seq.mask_intro"))
        bar_slot = gr.Column()
        note = gr.Markdown()
        figure = gr.Plot(show_label=False)
        table = gr.Dataframe(headers=[""] * MASK_COLUMNS, interactive=False, buttons=TABLE_BUTTONS,
                             label=label("seq2seq.mask_table"))
    outputs = [note, figure, table]
    mask_view = presets.View("transformer", "seq2seq_mask", [], outputs, mask_experiment, MASK_PRESETS, where=tab)
    with bar_slot:
        mask_view.buttons()
    return mask_view


def build_align_view() -> presets.View:
    with gr.Tab(label("seq2seq.tab_align"), id="seq2seq-align") as tab:
        gr.Markdown(label("seq2seq.align_intro"))
        with gr.Row():
            source = gr.Textbox(label=label("seq2seq.source"), value=ALIGN_PRESETS[0].values[0], scale=3,
                                max_length=MAX_SHORT_TEXT_CHARS)
            button = gr.Button(label("seq2seq.align"), variant="primary", scale=1)
        bar_slot = gr.Column()
        note = gr.Markdown()
        length_plot = gr.Plot(show_label=False)
        with gr.Row():
            alpha_plot = gr.Plot(show_label=False)
            cross_plot = gr.Plot(show_label=False)
        table = gr.Dataframe(headers=[""] * LENGTH_COLUMNS, interactive=False, buttons=TABLE_BUTTONS,
                             label=label("seq2seq.length_table"))
    outputs = [note, length_plot, alpha_plot, cross_plot, table]
    button.click(context_vs_attention, [source], outputs, api_name="transformer_seq2seq_align")
    align_view = presets.View("transformer", "seq2seq_align", [source], outputs, context_vs_attention, ALIGN_PRESETS,
                              where=tab)
    with bar_slot:
        align_view.buttons()
    return align_view
