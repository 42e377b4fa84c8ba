"""Classification & fine-tuning tab (seed §14.1–§14.2): classify with a fine-tuned checkpoint; fine-tune MiniLM
yourself against baselines; see what fine-tuning changed."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.text import limits, seeds
from core.text.corpora import DEFAULT_LABELLED
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_LONG_TEXT_CHARS, MAX_SHORT_TEXT_CHARS, MAX_TEXT_CHARS
from core.loading.checkpoints import COLA_ID, DIANPING_ID, MRPC_ID, SIMILARITY_ZH_ID, SST2_ID
from demo.kit import lessons, presets
from demo.why import encoders as why_encoders
from demo.tasks.classify_finetune import (ACCURACY_COLUMNS, DATA_CHOICES, SAMPLE_COLUMNS, accuracy_table, baseline_rows,
                                    before_training, before_training_bundled, models_table, show_upload, split_data)
from demo.tasks.classify_finetune import PRESETS as FINETUNE_PRESETS
from demo.server.handlers import TRAINER_GPU_SECONDS, friendly_errors, gpu_handler
from demo.kit.widgets import TABLE_BUTTONS, model_picker, sig4
from demo.server.downloads import missing_model_card, model_event, needs_download, results_visible
from demo.kit.figures import COLORWAY, bar, empty_figure, heatmap, styled, subplot_grid
from demo.kit.i18n import label, t
from demo.kit.i18n import table as table_of

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
classify = lazy_import("core.tasks.classify")
finetune = lazy_import("core.tasks.finetune")
finetune_train = lazy_import("core.tasks.finetune_train")

TITLE = "Classification & fine-tuning"

TASK_SINGLE, TASK_PAIR = "single sentence", "sentence pair"  # the task radio's values (language-free)
TASKS = [(label("classify.task_single"), TASK_SINGLE), (label("classify.task_pair"), TASK_PAIR)]
LAYOUT_COLUMNS = ["classify.col_position", "classify.col_token", "classify.col_segment", "classify.col_part"]
LOGIT_COLUMNS = ["classify.col_label", "classify.col_wv", "classify.col_bias", "classify.col_logit",
                 "classify.col_probability"]


# (label key, slug, checkpoint, task, sentence A, sentence B, key of what the learner should know)
PRESETS = [
    ("classify.preset_pair_zh", "wo-hen-xihuan-ni", SIMILARITY_ZH_ID, TASK_PAIR, *seeds.SEED_PAIR_ZH,
     "classify.preset_pair_zh_expected"),
    ("classify.preset_pair_en", "mrpc-twin", MRPC_ID, TASK_PAIR, *seeds.SEED_PAIR_EN,
     "classify.preset_pair_en_expected"),
    ("classify.preset_sst2", "sst2-review", SST2_ID, TASK_SINGLE, "classify.preset_sst2_text", "",
     "classify.preset_sst2_expected"),
    ("classify.preset_dianping", "dianping", DIANPING_ID, TASK_SINGLE, seeds.DIANPING_REVIEW, "",
     "classify.preset_dianping_expected"),
    ("classify.preset_cola", "cola-twin", COLA_ID, TASK_SINGLE, seeds.SEED_SINGLE_EN, "",
     "classify.preset_cola_expected"),
]
DEFAULT_PRESET = 2  # the SST-2 review: its checkpoint is the tab's default


def table(rows: list[list], columns: list[str]) -> pd.DataFrame:
    """Rows under headers in the learner's language."""
    return pd.DataFrame(rows, columns=[t(key) for key in columns])


def _text(value: str, shown: bool = False) -> str:
    """A preset's text: a translation key, or the text itself. A note's sentence about the model's own numbers
    ("shown above", the ``<key>_shown`` entry) is added only when those numbers are shown."""
    if value not in table_of("en"):
        return value
    about_model = f"{value}_shown"
    return t(value) + (" " + t(about_model) if shown and about_model in table_of("en") else "")


# ------------------------------------------------------------------------------------------------------------------
# View 1: classify with a fine-tuned checkpoint


def _layout(encoding) -> tuple[list, pd.DataFrame]:
    entries, rows = [], []
    names = (t("classify.segment_a"), t("classify.segment_b"))
    for position, (token, segment, special) in enumerate(zip(encoding.tokens, encoding.segment_ids,
                                                              encoding.special_tokens_mask)):
        part = t("classify.segment_special") if special else names[segment]
        entries += [(token, part), (" ", None)]
        rows.append([position, token, segment, "[CLS]/[SEP]" if special else ("A" if segment == 0 else "B")])
    return entries, table(rows, LAYOUT_COLUMNS)


def _layout_note(encoding, source: str) -> str:
    lines = [f"{source}.", t("classify.layout_tokens_pair" if 1 in encoding.segment_ids else "classify.layout_tokens",
                             count=len(encoding))]
    if encoding.truncation:
        cut = encoding.truncation
        lines.append(t("classify.layout_truncated", length=cut.max_length, removed=cut.removed_tokens,
                       text=cut.removed_text[:200]))
    return "  \n".join(lines)


def vector_figure(result: classify.ClassifyResult) -> go.Figure:
    rows = np.vstack([result.vector[None], result.weight])  # (1 + C, H)
    names = ["v"] + [t("classify.vector_row", label=name) for name in result.labels]
    limit = float(np.abs(rows).max()) or 1.0
    return heatmap(rows, [str(i) for i in range(rows.shape[1])], names,
                   t("classify.vector_title", vector=result.vector_name), colorscale="RdBu_r",
                   zmin=-limit, zmax=limit, x_title=t("classify.axis_dimension"), y_title=t("classify.axis_row"),
                   annotate=False, height=200 + 40 * len(names))


def _summary(result: classify.ClassifyResult, expected: str = "") -> tuple[str, pd.DataFrame]:
    best = int(np.argmax(result.probs))
    lines = [t("classify.summary", label=result.labels[best], p=f"{result.probs[best]:.4f}",
               function=result.function, count=len(result.labels), note=result.label_note)]
    if expected:
        lines.append(t("classify.summary_preset", expected=_text(expected, shown=True)))
    lines.append(f"<span class='badge'>{result.badge}</span>")
    rows = [[name, sig4(float(result.weight[i] @ result.vector)), sig4(float(result.bias[i])),
             sig4(float(result.logits[i])), sig4(float(result.probs[i]))]
            for i, name in enumerate(result.labels)]
    return "  \n".join(lines), table(rows, LOGIT_COLUMNS)


@friendly_errors
@gpu_handler
def classify_text(model_id, task, text_a, text_b, max_length, expected=""):
    pair = task == TASK_PAIR
    model_id = str(model_id or "").strip() or SST2_ID
    encoding, source = classify.input_layout(text_a, text_b, model_id, int(max_length), pair)
    entries, rows = _layout(encoding)
    note = _layout_note(encoding, source)
    try:
        result = classify.classify(text_a, text_b, model_id, int(max_length), pair)
    except ModelUnavailableError as exc:  # the card (or the reason) in the summary; the model's outputs hidden
        message = (missing_model_card(model_id, "downloads.shows_classify", exc) if needs_download(exc)
                   else t("classify.no_model", error=exc))
        if expected:
            message += "\n\n" + t("classify.summary_preset", expected=_text(expected))
        return message, None, None, table([], LOGIT_COLUMNS), entries, note, rows, results_visible(False)
    summary, logits = _summary(result, expected)
    best = int(np.argmax(result.probs))
    probs = bar(result.labels, result.probs.tolist(), t("classify.probs_title", function=result.function),
                value_title=t("classify.col_probability"), highlight=[i == best for i in range(len(result.labels))])
    return summary, probs, vector_figure(result), logits, entries, note, rows, results_visible(True)


@friendly_errors
def run_example(index, model_id, task, text_a, text_b, max_length):
    """The checkpoint view with PRESETS[index]'s note on what the seed / the checkpoint gives."""
    index = int(index)
    if not 0 <= index < len(PRESETS):
        raise UserInputError("classify.error_preset", count=len(PRESETS))
    return classify_text(model_id, task, text_a, text_b, max_length, PRESETS[index][-1])


def _preset_values(index: int):
    """A preset's inputs, made when it runs (its sentences may be in the learner's language)."""
    _, _, model_id, task, text_a, text_b, _ = PRESETS[index]
    return lambda: (index, model_id, task, _text(text_a), text_b, DEFAULT_MAX_LENGTH)


DEFAULT_MAX_LENGTH = 128
# The tab opens on its default checkpoint's example; every other preset sets the checkpoint it needs.
VIEW_PRESETS = [presets.Preset(PRESETS[i][1], label(PRESETS[i][0]), _preset_values(i), "§14.1–§14.2")
                for i in (DEFAULT_PRESET, 0, 1, 3, 4)]
# (seed §, question, answer, preset)
LESSON = [
    ("§14.1", label("classify.lesson_1_question"), label("classify.lesson_1_answer"), "wo-hen-xihuan-ni"),
    ("§14.1", label("classify.lesson_2_question"), label("classify.lesson_2_answer"), "dianping"),
    ("§14.2", label("classify.lesson_3_question"), label("classify.lesson_3_answer"), "cola-twin"),
]


# ------------------------------------------------------------------------------------------------------------------
# View 2: fine-tune MiniLM yourself


def loss_figure(head_losses: list[float], layer_losses: list[float]) -> go.Figure:
    if not head_losses:
        return empty_figure(t("classify.loss_empty"))
    traces = [go.Scatter(x=list(range(1, len(head_losses) + 1)), y=head_losses, mode="lines",
                         name=t("classify.loss_head"), line=dict(color=COLORWAY[0]))]
    if layer_losses:
        traces.append(go.Scatter(x=list(range(len(head_losses) + 1, len(head_losses) + len(layer_losses) + 1)),
                                 y=layer_losses, mode="lines", name=t("classify.loss_layers"),
                                 line=dict(color=COLORWAY[1])))
    fig = go.Figure(traces, layout=dict(xaxis=dict(title_text=t("classify.loss_x")),
                                        yaxis=dict(title_text=t("classify.loss_y"), type="log")))
    return styled(fig, t("classify.loss_title"), 420)


def _accuracy_rows(outcome: finetune_train.Outcome) -> list[list]:
    rows = baseline_rows(outcome.baselines)
    rows.append([t("classify.model_frozen"), sig4(outcome.head_accuracy), t("classify.model_frozen_note")])
    rows.append([t("classify.model_tuned", layers=outcome.unfrozen), sig4(outcome.tuned_accuracy),
                 t("classify.model_tuned_note", epochs=outcome.epochs_done, seconds=f"{outcome.seconds:.1f}")])
    return accuracy_table(rows)


def _session(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "local"


@friendly_errors
@gpu_handler(duration=TRAINER_GPU_SECONDS)
def train(dataset, pasted, upload, seed, head_steps, unfrozen, epochs, request: gr.Request = None,
          progress=gr.Progress()):
    data, name = split_data(dataset, pasted, upload, seed)
    settings = dict(head_steps=int(head_steps), unfrozen=int(unfrozen), epochs=int(epochs))
    finetune_train.check_settings(**settings)
    session = _session(request)
    yield (t("classify.training_on", name=name), loss_figure([], []), gr.skip())
    shown = 0
    try:
        for update in finetune_train.run_for_session(session, data, **settings):
            if isinstance(update, finetune_train.Outcome):
                notes = "  \n".join(update.notes)
                status = t("classify.training_done", seconds=f"{update.seconds:.1f}",
                           head=f"{update.head_accuracy:.3f}", tuned=f"{update.tuned_accuracy:.3f}", notes=notes)
                yield status, loss_figure(update.head_losses, update.layer_losses), _accuracy_rows(update)
                return
            progress(update.fraction, desc=update.message)
            steps = len(update.head_losses) + len(update.layer_losses)
            if steps - shown >= 10 or update.stage in ("waiting", "baselines", "encode"):
                shown = steps
                yield update.message, loss_figure(update.head_losses, update.layer_losses), gr.skip()
    except finetune_train.Cancelled:
        yield t("classify.training_replaced"), gr.skip(), gr.skip()


@friendly_errors
@gpu_handler
def predict(sentence, request: gr.Request = None, dataset=DEFAULT_LABELLED, pasted="", upload=None,
            seed=limits.DEFAULT_SEED):
    """Every model on the sentence: this session's trained ones; before training, the baselines and head (a) with
    its random initial weights, labelled so (the request comes second: Gradio inserts it by its annotation)."""
    text = finetune.check_sentence(sentence)
    outcome = finetune_train.RUNS.result(_session(request))
    if outcome is None:
        data = split_data(dataset, pasted, upload, seed)[0]
        return models_table(finetune_train.untrained(data).predict(text), data.labels)
    return models_table(outcome.predict(text), outcome.data.labels)


# ------------------------------------------------------------------------------------------------------------------
# View 3: what fine-tuning changed


def projection_figure(labels: list[str], y: np.ndarray, panels: list[tuple[str, np.ndarray]]) -> go.Figure:
    layout, refs = subplot_grid([title for title, _ in panels], len(panels), horizontal_spacing=0.08,
                                vertical_spacing=0.1)
    traces = []
    for panel, ((_, coords), (xref, yref)) in enumerate(zip(panels, refs)):
        for c, name in enumerate(labels):
            rows = y == c
            traces.append(go.Scatter(x=coords[rows, 0], y=coords[rows, 1], mode="markers", name=name,
                                     legendgroup=name, showlegend=panel == 0, xaxis=xref, yaxis=yref,
                                     marker=dict(size=9, color=COLORWAY[c % len(COLORWAY)])))
    fig = go.Figure(traces, layout=dict(layout, height=520))
    return styled(fig, t("classify.projection_title"))


@friendly_errors
@gpu_handler
def show_changes(dataset, pasted, upload, seed, request: gr.Request = None):
    outcome = finetune_train.RUNS.result(_session(request))
    if outcome is None:
        data, name = split_data(dataset, pasted, upload, seed)
        before, variance = finetune_train.before_projection(data)
        title = t("classify.projection_before", share=f"{variance.sum():.0%}")
        note = t("classify.changes_before_note", name=name)
        # No run, no weight changes: the figure is hidden (the note says to train), not drawn empty.
        return note, projection_figure(data.labels, data.y_test, [(title, before)]), gr.Plot(None, visible=False)
    data = outcome.data
    before_var, after_var = outcome.variance
    panels = [(t("classify.projection_before_short", share=f"{before_var.sum():.0%}"), outcome.before),
              (t("classify.projection_after", layers=outcome.unfrozen, share=f"{after_var.sum():.0%}"), outcome.after)]
    names, values = zip(*outcome.weight_change)
    changes = bar(list(names), list(values), t("classify.changes_title"), value_title=t("classify.changes_axis"),
                  value_format=".4f")
    note = t("classify.changes_note", count=len(data.test))
    return note, projection_figure(data.labels, data.y_test, panels), gr.Plot(changes, visible=True)


# ------------------------------------------------------------------------------------------------------------------
# Layout


def build() -> None:
    gr.Markdown(label("classify.intro"))
    lesson_slot = gr.Column()
    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("classify.tab_checkpoint"), id="classify-checkpoint") as checkpoint_tab:
            gr.Markdown(label("classify.checkpoints"))
            with gr.Row():
                model_id = model_picker("classify")
                task = gr.Radio(TASKS, value=TASK_SINGLE, label=label("classify.task_label"))
            text_a = gr.Textbox(label=label("classify.text_a_label"), lines=2, max_length=MAX_TEXT_CHARS)
            text_b = gr.Textbox(label=label("classify.text_b_label"), lines=2, max_length=MAX_TEXT_CHARS)
            max_length = gr.Slider(16, 512, value=DEFAULT_MAX_LENGTH, step=1, label=label("classify.max_length_label"))
            run_button = gr.Button(label("classify.run"), variant="primary")
            preset_index = gr.State(DEFAULT_PRESET)  # which PRESETS row's note a preset shows (set by the preset)
            preset_bar = gr.Column()
            summary = gr.Markdown()
            gr.Markdown(label("classify.step_input"))
            layout_note = gr.Markdown()
            # No colour map: one fixed at build time would put every language's segment names in the legend.
            layout = gr.HighlightedText(label=label("classify.layout_label"), show_legend=True,
                                        show_inline_category=False)
            with gr.Accordion(label("classify.token_table"), open=False):
                layout_table = gr.Dataframe(headers=[label(key) for key in LAYOUT_COLUMNS],
                                            label=label("classify.tokens_label"), interactive=False, max_height=320,
                                            buttons=TABLE_BUTTONS)
            with gr.Column() as classify_results:  # hidden while the checkpoint is missing (summary: its card)
                gr.Markdown(label("classify.step_probs"))
                with gr.Row():
                    probs = gr.Plot(label=label("classify.probs_label"), show_label=False)
                    logits = gr.Dataframe(headers=[label(key) for key in LOGIT_COLUMNS],
                                          label=label("classify.logits_label"), interactive=False,
                                          buttons=TABLE_BUTTONS)
                gr.Markdown(label("classify.step_vector"))
                vector = gr.Plot(label=label("classify.vector_label"), show_label=False)
        with gr.Tab(label("classify.tab_finetune"), id="classify-finetune") as tune_tab:
            gr.Markdown(label("classify.finetune_intro"))
            tune_bar = gr.Column()
            with gr.Row():
                dataset = gr.Radio(DATA_CHOICES, value=DEFAULT_LABELLED, label=label("classify.data_label"))
                seed = gr.Number(limits.DEFAULT_SEED, precision=0, label=label("classify.seed_label"))
            with gr.Accordion(label("classify.my_data_accordion"), open=False):
                pasted = gr.Textbox(lines=6, label=label("classify.pasted_label"),
                                    placeholder=label("classify.pasted_placeholder"), max_length=MAX_LONG_TEXT_CHARS)
                upload = gr.File(label=label("classify.upload_label"), file_types=[".tsv", ".csv", ".txt"],
                                 type="filepath")
            with gr.Row():
                head_steps = gr.Slider(1, limits.MAX_HEAD_STEPS, value=limits.DEFAULT_HEAD_STEPS,
                                       step=1, label=label("classify.head_steps_label"))
                unfrozen = gr.Slider(1, limits.MAX_LAYERS, value=limits.DEFAULT_LAYERS, step=1,
                                     label=label("classify.unfrozen_label"))
                epochs = gr.Slider(1, limits.MAX_EPOCHS, value=limits.DEFAULT_EPOCHS, step=1,
                                   label=label("classify.epochs_label"))
            train_button = gr.Button(label("classify.train"), variant="primary")
            gr.Markdown(label("classify.finetune_time"))
            data_note = gr.Markdown()
            accuracy = gr.Dataframe(headers=[label(key) for key in ACCURACY_COLUMNS],
                                    label=label("classify.accuracy_label"), interactive=False, wrap=True,
                                    buttons=TABLE_BUTTONS)
            status = gr.Markdown()
            loss = gr.Plot(label=label("classify.loss_label"), show_label=False)
            sample = gr.Dataframe(headers=[label(key) for key in SAMPLE_COLUMNS], label=label("classify.sample_label"),
                                  interactive=False, wrap=True, max_height=260)
            # MiniLM reads English, so the sentence to classify is an English one in both languages.
            sentence = gr.Textbox(label=label("classify.sentence_label"), value=t("classify.sentence_value", "en"),
                                  max_length=MAX_SHORT_TEXT_CHARS)
            predict_button = gr.Button(label("classify.predict"))
            side_by_side = gr.Dataframe(label=label("classify.side_by_side_label"), interactive=False,
                                        buttons=TABLE_BUTTONS)
        with gr.Tab(label("classify.tab_changes"), id="classify-changes") as change_tab:
            change_note = gr.Markdown()
            projection = gr.Plot(label=label("classify.projection_label"), show_label=False)
            weights = gr.Plot(label=label("classify.weights_label"), show_label=False)
        why_encoders.build_classify()  # why this class, offline on the MiniLM fine-tuned here (issue #35)

    view1_outputs = [summary, probs, vector, logits, layout, layout_note, layout_table, classify_results]
    view1_inputs = [model_id, task, text_a, text_b, max_length]
    model_event(run_button.click, {"classify": model_id}, classify_text, view1_inputs, view1_outputs,
                api_name="classify_run", cache_results=True)
    # Presets, content on first open (the tab or this sub-tab), deep links and the lesson: demo/kit/presets.py.
    view = presets.View("classify", "checkpoint", [preset_index, *view1_inputs], view1_outputs, run_example,
                        VIEW_PRESETS, where=checkpoint_tab)
    with preset_bar:
        view.buttons()
    with lesson_slot:
        lessons.lesson_table(LESSON, view)

    data_inputs = [dataset, pasted, upload, seed]
    # Before training (first open, a preset, new data): the data, the baselines and head (a) with random weights.
    before_outputs = [data_note, accuracy, sample, loss, status, side_by_side]
    tune_view = presets.View("classify", "finetune", [dataset, seed, sentence], before_outputs,
                             before_training_bundled, FINETUNE_PRESETS, where=tune_tab)
    with tune_bar:
        tune_view.buttons()
    dataset.input(before_training, [*data_inputs, sentence], before_outputs, api_name="classify_data_change")
    upload.upload(show_upload, [pasted, upload, seed, sentence], [dataset, *before_outputs],
                  api_name="classify_upload")
    # A second click starts a new run at once (trigger_mode="multiple", no queue limit), which cancels this
    # session's first one; core bounds how many runs train at a time (finetune_train.RUNS.slots).
    trained = train_button.click(train, [*data_inputs, head_steps, unfrozen, epochs], [status, loss, accuracy],
                                 api_name="classify_train", concurrency_limit=None, trigger_mode="multiple")
    predict_button.click(predict, [sentence, *data_inputs], [side_by_side], api_name="classify_predict")
    trained.success(predict, [sentence, *data_inputs], [side_by_side], api_name="classify_predict_trained",
                    api_visibility="undocumented")  # the trained models' answers replace the untrained head's
    change_tab.select(show_changes, data_inputs, [change_note, projection, weights], api_name="classify_changed")
