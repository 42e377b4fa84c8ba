"""QA tab (issue #9): BERT finds the answer span in a context (seed §14)."""
from __future__ import annotations

import math

import gradio as gr
import pandas as pd
import plotly.graph_objects as go

from core.text.corpora import load_corpus
from core.text.errors import ModelUnavailableError
from core.loading.lazy import lazy_import
from core.text.limits import (MAX_LONG_TEXT_CHARS, MAX_TEXT_CHARS, QA_DEFAULT_MAX_ANSWER_LEN, QA_DEFAULT_MAX_SEQ_LEN,
                         QA_MAX_TOP_K)
from core.loading.checkpoints import CHECKPOINTS, CHINESE_QA_ID, SQUAD2_ID, model_id_or_default
from core.text.seeds import PRECIPITATION, SEED_EN, SEED_ZH
from demo.kit import lessons, presets
from demo.why import encoders as why_encoders
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import TABLE_BUTTONS, model_picker
from demo.server.result_cache import BATCH, by_checkpoint
from demo.server.downloads import missing_model_card, model_event, needs_download, results_visible
from demo.kit.figures import COLORWAY, HIGHLIGHT, HIGHLIGHT_TINT, empty_figure, styled
from demo.kit.i18n import LANGUAGES, label, t
from demo.kit.i18n import table as table_of

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
qa = lazy_import("core.tasks.qa")

TITLE = "QA"

EXCERPT_CHARS = 600  # long contexts show this much text either side of the answer
LAYOUT_WINDOWS_SHOWN = 3
LAYOUT_TABLE_ROWS = 1200
CANDIDATE_COLUMNS = ["qa.col_rank", "qa.col_answer", "qa.col_score", "qa.col_chars", "qa.col_window",
                     "qa.col_positions"]
LAYOUT_COLUMNS = ["qa.col_window", "qa.col_position", "qa.col_token", "qa.col_segment", "qa.col_part"]
QA_ID = CHECKPOINTS["qa"][0]


# The answer's colour, under its name in every language: a colour map is fixed when the tab is built, before the
# learner's language is known. (The segment view has no colour map: its legend would list every language's names,
# so Gradio picks the two colours and the legend shows the learner's names only.)
ANSWER_COLORS = {t("qa.answer_category", lang): HIGHLIGHT for lang in LANGUAGES}


MOBY_QUESTION = t("qa.preset_moby_question", "en")  # the presets' English question about an English text


def moby_context(words: int = 1600) -> str:
    """The opening of Moby-Dick, long enough to need several windows."""
    text = load_corpus("moby_dick")
    start = text.index("Call me Ishmael")
    return " ".join(text[start:].split()[:words])


# (label key, checkpoint, question (a key when it starts with "qa."), context (None: Moby-Dick), key of what the
# seed / a real model gives, no-answer option)
PRESETS = [
    ("qa.preset_zh", CHINESE_QA_ID, *SEED_ZH, "qa.preset_zh_expected", False),
    ("qa.preset_fall", QA_ID, *SEED_EN[0], "qa.preset_fall_expected", False),
    ("qa.preset_cloud", QA_ID, *SEED_EN[1], "qa.preset_cloud_expected", False),
    ("qa.preset_moby", QA_ID, "qa.preset_moby_question", None, "qa.preset_moby_expected", False),
    ("qa.preset_none", SQUAD2_ID, "qa.preset_none_question", PRECIPITATION, "qa.preset_none_expected", True),
]


# ------------------------------------------------------------------------------------------------------------------
# Formatting core results


def _highlighted(result: qa.QAResult) -> list[tuple[str, str | None]]:
    """The context with the answer marked; a long context shows the stretch around the answer."""
    best, text = result.best, result.context
    if best.is_null:
        return [(text if len(text) <= 3 * EXCERPT_CHARS else text[:2 * EXCERPT_CHARS] + " …", None)]
    first, last = max(0, best.start - EXCERPT_CHARS), min(len(text), best.end + EXCERPT_CHARS)
    if first > 0:  # start and end on word boundaries
        first = text.find(" ", first, best.start) + 1 or first
    if last < len(text):
        space = text.rfind(" ", best.end, last)
        last = space if space > best.end else last
    return [(("… " if first else "") + text[first:best.start], None),
            (text[best.start:best.end], t("qa.answer_category")),
            (text[best.end:last] + (" …" if last < len(text) else ""), None)]


def _score(value: float) -> float:
    return float(f"{value:.4g}")  # 4 significant digits: random test models give tiny scores


def _candidate_rows(result: qa.QAResult) -> list[list]:
    rows = []
    for rank, a in enumerate(result.answers, 1):
        if a.is_null:
            rows.append([rank, t("qa.candidate_null"), _score(a.score), "–", "–", "–"])
        else:
            rows.append([rank, a.text, _score(a.score), f"{a.start}–{a.end}", a.window + 1,
                         f"{a.token_start}–{a.token_end}"])
    return rows


def _summary(result: qa.QAResult, expected: str = "") -> str:
    best = result.best
    if best.is_null:
        head = t("qa.summary_null", score=f"{best.score:.4g}")
    else:
        head = t("qa.summary_answer", text=best.text, score=f"{best.score:.4g}", start=best.start, end=best.end)
    lines = [head]
    if len(result.windows) == 1:
        lines.append(t("qa.summary_null_score", score=f"{result.windows[0].null_score:.4g}"))
    lines += result.notes
    lines.append(t("qa.summary_scores"))
    if expected:
        lines.append(t("qa.summary_preset", expected=_expected(expected, shown=True)))
    lines.append(f"<span class='badge'>{result.badge}</span>")
    return "  \n".join(lines)


def _expected(expected: str, shown: bool = False) -> str:
    """A preset's note: a translation key, or the text itself. Its sentence about the model's own numbers ("shown
    above", the ``<key>_shown`` entry) is added only when those numbers are shown."""
    if expected not in table_of("en"):
        return expected
    about_model = f"{expected}_shown"
    return t(expected) + (" " + t(about_model) if shown and about_model in table_of("en") else "")


def chart_data(result: qa.QAResult) -> dict:
    """What the probability charts need, as plain lists (kept in a gr.State)."""
    best = result.best
    windows = []
    for w in result.windows:
        span = None
        if not best.is_null and best.window == w.index:
            span = (best.token_start - w.context.start, best.token_end - w.context.start)
        windows.append({"tokens": w.context_tokens, "start": w.start_probs.tolist(), "end": w.end_probs.tolist(),
                        "span": span, "chars": w.char_span})
    return {"windows": windows, "best": 0 if best.is_null else best.window}


SUBPLOT_TITLES = ("P_start(i) = softmax(S·hᵢ)", "P_end(j) = softmax(E·hⱼ)")


def probability_figure(chart: dict | None, window: int) -> go.Figure:
    """Two bar charts on a shared token axis: P_start and P_end over the window's context tokens."""
    if not chart:
        return empty_figure(t("qa.figure_empty"))
    window = min(max(int(window), 0), len(chart["windows"]) - 1)
    data = chart["windows"][window]
    tokens, span = data["tokens"], data["span"]
    x = list(range(len(tokens)))
    inside = [span is not None and span[0] <= i <= span[1] for i in x]

    def colors(marked: int | None) -> list[str]:
        return [HIGHLIGHT if i == marked else (HIGHLIGHT_TINT if inside[i] else COLORWAY[0]) for i in x]

    # Two rows sharing the token axis, laid out as make_subplots(rows=2, shared_xaxes=True) would, but in one
    # constructor call: make_subplots, add_vrect and the per-row axis updates each re-validate the layout, and were
    # most of an answered question's server time under a class (issue #38).
    every = max(1, math.ceil(len(tokens) / 60))  # at most ~60 token labels, so they stay readable
    traces, layout = [], dict(xaxis=dict(anchor="y", domain=[0.0, 1.0], matches="x2", showticklabels=False),
                              xaxis2=dict(anchor="y2", domain=[0.0, 1.0], tickmode="array", tickvals=x[::every],
                                          ticktext=tokens[::every], tickangle=-45 if len(tokens) > 12 else 0),
                              annotations=[], shapes=[])
    for row, key, marked in ((1, "start", span[0] if span else None), (2, "end", span[1] if span else None)):
        axis = "" if row == 1 else str(row)
        traces.append(go.Bar(x=x, y=data[key], marker_color=colors(marked), customdata=tokens, showlegend=False,
                             hovertemplate="%{customdata} (" + t("qa.figure_token") + " %{x}): %{y:.3f}<extra>"
                             + key + "</extra>", xaxis=f"x{axis}", yaxis=f"y{axis}"))
        top = 1.0 if row == 1 else 0.44  # each row's share of the height, with a 0.12 gap between them
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", domain=[top - 0.44, top], title_text=f"P_{key}",
                                      rangemode="tozero")
        layout["annotations"].append(dict(text=SUBPLOT_TITLES[row - 1], x=0.5, xanchor="center", xref="paper",
                                          y=top, yanchor="bottom", yref="paper", showarrow=False,
                                          font=dict(size=16)))
        if span is not None:  # the answer's span, shaded in both rows
            layout["shapes"].append(dict(type="rect", x0=span[0] - 0.5, x1=span[1] + 0.5, xref=f"x{axis}", y0=0,
                                         y1=1, yref=f"y{axis} domain", fillcolor=HIGHLIGHT, opacity=0.08,
                                         line_width=0))
    where = (t("qa.figure_where", window=window + 1, windows=len(chart["windows"]), start=data["chars"][0],
               end=data["chars"][1]) if len(chart["windows"]) > 1 else "")
    marked = t("qa.figure_marked") if span else t("qa.figure_unmarked")
    return styled(go.Figure(traces, layout=dict(layout, title_text=t("qa.figure_title", where=where, marked=marked),
                                                height=600)))


def _layout_views(windows: list[qa.Window], source: str, doc_stride: int) -> tuple[list, str, pd.DataFrame]:
    entries: list[tuple[str, str | None]] = []
    segment_names = (t("qa.segment_question"), t("qa.segment_context"))
    for w in windows[:LAYOUT_WINDOWS_SHOWN]:
        if len(windows) > 1:
            entries.append((("" if w.index == 0 else "\n") + t("qa.layout_window", number=w.index + 1), None))
        for token, segment in zip(w.tokens, w.segment_ids):
            entries += [(token, segment_names[segment]), (" ", None)]
    parts = {"context": t("qa.part_context"), "question": t("qa.part_question"), "special": t("qa.part_special")}
    rows = []
    for w in windows:
        for position, (token, segment) in enumerate(zip(w.tokens, w.segment_ids)):
            part = ("context" if position in w.context
                    else "question" if 0 < position < w.context.start - 1 else "special")
            rows.append([w.index + 1, position, token, segment, parts[part]])
    question_len = windows[0].context.start - 2  # minus [CLS] and the first [SEP]
    longest = max(len(w.tokens) for w in windows)
    note = [f"{source}.",
            t("qa.layout_question", count=question_len) + " " + (
                t("qa.layout_one_window", longest=longest) if len(windows) == 1 else
                t("qa.layout_windows", windows=len(windows), longest=longest, per_window=len(windows[0].context),
                  stride=doc_stride))]
    if len(windows) > LAYOUT_WINDOWS_SHOWN:
        capped = t("qa.layout_capped", rows=f"{LAYOUT_TABLE_ROWS:,}") if len(rows) > LAYOUT_TABLE_ROWS else ""
        note.append(t("qa.layout_shown", shown=LAYOUT_WINDOWS_SHOWN, capped=capped))
    return entries, "  \n".join(note), table(rows[:LAYOUT_TABLE_ROWS], LAYOUT_COLUMNS)


def table(rows: list[list], columns: list[str]) -> pd.DataFrame:
    """Rows under headers in the learner's language."""
    return pd.DataFrame(rows, columns=[t(key) for key in columns])


# ------------------------------------------------------------------------------------------------------------------
# Handlers


def _no_model(exc: ModelUnavailableError, model_id: str, expected: str = ""):
    """The card (or, when a download would not help, the reason) in the summary; the answer's outputs hidden."""
    if needs_download(exc):
        message = missing_model_card(model_id_or_default("qa", model_id), "downloads.shows_qa", exc)
    else:
        message = t("qa.no_model", error=exc, hint=t("qa.no_model_hint"))
    if expected:  # a preset still says what the seed gives
        message += "\n\n" + t("qa.summary_preset", expected=_expected(expected))
    return ([], message, table([], CANDIDATE_COLUMNS), None, gr.update(visible=False), None, results_visible(False))


@friendly_errors
@gpu_handler
def answer_question(model_id, question, context, max_answer_len, top_k, doc_stride, max_seq_len, no_answer,
                    expected="", progress=gr.Progress()):
    progress(0, desc=t("qa.progress_loading"))
    try:
        result = qa.answer(question, context, model_id, top_k=int(top_k), max_answer_len=int(max_answer_len),
                           doc_stride=int(doc_stride), max_seq_len=int(max_seq_len),
                           handle_impossible_answer=bool(no_answer),
                           progress=lambda fraction, desc: progress(fraction, desc=desc))
    except ModelUnavailableError as exc:
        return _no_model(exc, model_id, expected)
    return _answer_outputs(result, expected)


def _answer_outputs(result: qa.QAResult, expected: str = "") -> tuple:
    chart = chart_data(result)
    slider = gr.update(visible=len(result.windows) > 1, maximum=max(2, len(result.windows)),  # a slider needs min < max
                       value=chart["best"] + 1)
    return (_highlighted(result), _summary(result, expected), table(_candidate_rows(result), CANDIDATE_COLUMNS),
            probability_figure(chart, chart["best"]), slider, chart, results_visible(True))


@gpu_handler
def answer_batch(model_id: list, question: list, context: list, max_answer_len: list, top_k: list, doc_stride: list,
                 max_seq_len: list, no_answer: list, request: gr.Request = None) -> tuple[list, ...]:
    """``answer_question`` for a batch of requests (batch=True): requests for one checkpoint share forward passes
    (core.tasks.qa.answer_many). A request's own problem is shown in its summary; the others answer. The parameters keep
    answer_question's names (each a list here): they are the endpoint's parameter names for API clients."""
    def one_checkpoint(checkpoint: str, indices: list[int]) -> list:
        asked: list = []
        for i in indices:
            try:
                asked.append(dict(question=question[i], context=context[i], top_k=int(top_k[i]),
                                  max_answer_len=int(max_answer_len[i]), doc_stride=int(doc_stride[i]),
                                  max_seq_len=int(max_seq_len[i]), handle_impossible_answer=bool(no_answer[i])))
            except (TypeError, ValueError, OverflowError) as exc:
                asked.append(exc)
        usable = [request for request in asked if isinstance(request, dict)]
        try:
            answered = iter(qa.answer_many(usable, checkpoint))
        except ModelUnavailableError as exc:
            return [_no_model(exc, checkpoint)] * len(indices)
        results = [next(answered) if isinstance(request, dict) else request for request in asked]
        return [result if isinstance(result, Exception) else _answer_outputs(result) for result in results]

    return by_checkpoint("qa", model_id, one_checkpoint, outputs=7, notice=1, request=request)


@friendly_errors
def show_window(chart, window):
    return probability_figure(chart, int(window) - 1)


@friendly_errors
def show_layout(model_id, question, context, doc_stride, max_seq_len):
    windows, source = qa.input_layout(question, context, model_id, max_seq_len=int(max_seq_len),
                                      doc_stride=int(doc_stride))
    return _layout_views(windows, source, int(doc_stride))


def _preset_handler(index: int):
    _, _, question_key, context, expected, no_answer = PRESETS[index]

    @friendly_errors
    def run(model_id, max_answer_len, top_k, doc_stride, max_seq_len, current_no_answer, progress=gr.Progress()):
        question = t(question_key) if question_key in table_of("en") else question_key
        text = context if context is not None else moby_context()
        flag = True if no_answer else current_no_answer
        answered = answer_question(model_id, question, text, max_answer_len, top_k, doc_stride, max_seq_len, flag,
                                   expected, progress)
        return (question, text, flag, *answered, *show_layout(model_id, question, text, doc_stride, max_seq_len))

    return run


@friendly_errors
def run_example(index: int, model_id, max_answer_len, top_k, doc_stride, max_seq_len, no_answer):
    """PRESETS[index] (question, context, expected answer) through both views, on ``model_id``."""
    return _preset_handler(int(index))(model_id, max_answer_len, top_k, doc_stride, max_seq_len, no_answer)


PRESET_SLUGS = ["zuigao-wendu", "what-makes-it-fall", "within-a-cloud", "moby-dick-long", "no-answer"]
OPTION_DEFAULTS = (QA_DEFAULT_MAX_ANSWER_LEN, 5, 128, QA_DEFAULT_MAX_SEQ_LEN)
# The default (first) is seed 001's English example on the default model; the seed's Chinese example runs on the
# Chinese QA checkpoint, the no-answer one on the SQuAD 2.0 model. Each preset sets the checkpoint it needs.
VIEW_PRESETS = [presets.Preset(PRESET_SLUGS[i], label(PRESETS[i][0]),
                               (i, PRESETS[i][1], *OPTION_DEFAULTS, PRESETS[i][5]), "§14.3") for i in (1, 2, 0, 3, 4)]
# (seed §, question, answer, preset)
LESSON = [
    ("§14.3", label("qa.lesson_1_question"), label("qa.lesson_1_answer"), "zuigao-wendu"),
    ("§14.3", label("qa.lesson_2_question"), label("qa.lesson_2_answer"), "moby-dick-long"),
    ("§14.3", label("qa.lesson_3_question"), label("qa.lesson_3_answer"), "no-answer"),
]


def build() -> None:
    gr.Markdown(label("qa.intro"))
    gr.Markdown(label("qa.checkpoints"))
    lesson_slot = gr.Column()
    with gr.Row():
        model_id = model_picker("qa")
        no_answer = gr.Checkbox(False, label=label("qa.no_answer_label"), info=label("qa.no_answer_info"))
    question = gr.Textbox(label=label("qa.question_label"), lines=1, placeholder=label("qa.question_placeholder"),
                          max_length=MAX_TEXT_CHARS)
    context = gr.Textbox(label=label("qa.context_label"), lines=6, max_lines=14,
                         placeholder=label("qa.context_placeholder"), max_length=MAX_LONG_TEXT_CHARS)
    with gr.Accordion(label("qa.options"), open=False):
        with gr.Row():
            max_answer_len = gr.Slider(1, 30, value=QA_DEFAULT_MAX_ANSWER_LEN, step=1,
                                       label=label("qa.max_answer_len"))
            top_k = gr.Slider(1, QA_MAX_TOP_K, value=5, step=1, label=label("qa.top_k"))
            doc_stride = gr.Slider(0, 128, value=128, step=1, label=label("qa.doc_stride"),
                                   info=label("qa.doc_stride_info"))
            max_seq_len = gr.Slider(192, 512, value=QA_DEFAULT_MAX_SEQ_LEN, step=1, label=label("qa.max_seq_len"))
    with gr.Row():
        run_button = gr.Button(label("qa.run"), variant="primary", scale=3)
        layout_button = gr.Button(label("qa.layout_button"), scale=1)
    preset_index = gr.State(1)  # which PRESETS row a preset runs (set by the preset itself)
    preset_bar = gr.Column()

    summary = gr.Markdown()
    chart_state = gr.State(None)
    with gr.Column() as answer_results:  # hidden while the checkpoint is missing: the summary shows its card
        highlight = gr.HighlightedText(label=label("qa.highlight_label"), color_map=ANSWER_COLORS, show_legend=False)
        candidates = gr.Dataframe(headers=[label(key) for key in CANDIDATE_COLUMNS],
                                  label=label("qa.candidates_label"), interactive=False, wrap=True, max_height=320,
                                  buttons=TABLE_BUTTONS)
        window = gr.Slider(1, 2, value=1, step=1, label=label("qa.window_label"), visible=False)
        probs = gr.Plot(label=label("qa.probs_label"), show_label=False)

    gr.Markdown(label("qa.layout_heading"))
    layout_note = gr.Markdown()
    layout = gr.HighlightedText(label=label("qa.layout_label"), show_legend=True, show_inline_category=False)
    layout_table = gr.Dataframe(headers=[label(key) for key in LAYOUT_COLUMNS], label=label("qa.layout_table_label"),
                                interactive=False, max_height=320, buttons=TABLE_BUTTONS)
    with gr.Tabs(overflow_behavior="wrap"):  # one sub-tab: its view's default shows when the tab opens (a short sentence, cached per process)
        why_encoders.build_qa()  # why the answer starts and ends where it does (issue #35)

    options = [max_answer_len, top_k, doc_stride, max_seq_len]
    answer_outputs = [highlight, summary, candidates, probs, window, chart_state, answer_results]
    layout_outputs = [layout, layout_note, layout_table]
    answer_inputs = [model_id, question, context, *options, no_answer]
    model_event(run_button.click, {"qa": model_id}, answer_batch, answer_inputs, answer_outputs, api_name="qa_answer",
                **BATCH, cache_results=True)
    layout_button.click(show_layout, [model_id, question, context, doc_stride, max_seq_len], layout_outputs,
                        api_name="qa_layout")
    window.release(show_window, [chart_state, window], [probs], api_name="qa_window")
    view = presets.View("qa", "answer", [preset_index, model_id, *options, no_answer],
                        [question, context, no_answer, *answer_outputs, *layout_outputs], run_example, VIEW_PRESETS)
    with preset_bar:
        view.buttons()
    with lesson_slot:
        lessons.lesson_table(LESSON, view)
