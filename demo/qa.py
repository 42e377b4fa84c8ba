"""QA tab (issue #9): BERT finds the answer span in a context (seed §14)."""
from __future__ import annotations

import math

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core import qa, registry
from core.corpora import load_corpus
from core.errors import ModelUnavailableError
from demo import presets
from demo.common import TABLE_BUTTONS, friendly_errors, gpu_handler, model_picker
from demo.batching import BATCH, by_checkpoint
from demo.downloads import model_event
from demo.figures import COLORWAY, HIGHLIGHT, empty_figure, styled

TITLE = "QA"

INTRO = """
### Extractive question answering: the answer is a span of the context
BERT reads one sequence, **[CLS] question [SEP] context [SEP]**, with segment id 0 for the question part and 1 for the
context. The QA head is just two learned vectors **S** and **E**. Every context token's final vector hᵢ gets a start
score S·hᵢ and an end score E·hᵢ; a softmax over the context turns them into
**P_start(i)** and **P_end(j)**, and the answer is the span with the largest **P_start(i) · P_end(j)**,
with i ≤ j and at most *max answer length* tokens. SQuAD 2.0 models may instead point both at [CLS]: "no answer".
"""

NO_MODEL_HINT = ("The *input layout* view below still works: it needs only a tokenizer. To run the model, type a "
                 "local folder with a BertForQuestionAnswering / DistilBertForQuestionAnswering checkpoint "
                 "(config.json, weights, tokenizer files) into the checkpoint box.")
SEGMENT_COLORS = {"segment 0 · question": COLORWAY[0], "segment 1 · context": COLORWAY[2]}
EXCERPT_CHARS = 600  # long contexts show this much text either side of the answer
LAYOUT_WINDOWS_SHOWN = 3
LAYOUT_TABLE_ROWS = 1200
MOBY_QUESTION = "What name does the narrator ask to be called?"


def moby_context(words: int = 1600) -> str:
    """The opening of Moby-Dick, long enough to need several windows."""
    text = load_corpus("moby_dick")
    start = text.index("Call me Ishmael")
    return " ".join(text[start:].split()[:words])


# (button label, question, context, what the seed / a real model gives, no-answer option)
PRESETS = [
    ("Seed §14: 最高温度 (Chinese)", *qa.SEED_ZH,
     "The seed's table: P_start = 0.80 at “37” and P_end = 0.80 at “摄氏度”, so the answer is “37 摄氏度”. "
     "Reproducing it needs a Chinese QA checkpoint (BERT tokenises Chinese by character, so the end lands on “度”); "
     "the English default model cannot read this.", False),
    ("Seed 001: what makes it fall?", *qa.SEED_EN[0], "Seed 001: a SQuAD model answers “gravity”.", False),
    ("Seed 001: where do droplets collide?", *qa.SEED_EN[1], "Seed 001: a SQuAD model answers “within a cloud”.",
     False),
    ("Long context: Moby-Dick (several windows)", MOBY_QUESTION, None,
     "The answer (“Ishmael”) is in the first sentence; the context needs several windows.", False),
    ("No answer (SQuAD 2.0)", "What is the boiling point of mercury?", qa.PRECIPITATION,
     "The context does not say. With a SQuAD 2.0 model (deepset/bert-base-cased-squad2) and the no-answer option, "
     "the best candidate is “no answer”.", True),
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
    return [(("… " if first else "") + text[first:best.start], None), (text[best.start:best.end], "answer"),
            (text[best.end:last] + (" …" if last < len(text) else ""), None)]


def _score(value: float) -> float:
    return float(f"{value:.4g}")  # 4 significant digits: random test models give tiny scores


def _candidate_rows(result: qa.QAResult) -> list[list]:
    rows = []
    for rank, a in enumerate(result.answers, 1):
        if a.is_null:
            rows.append([rank, "(no answer: [CLS])", _score(a.score), "–", "–", "–"])
        else:
            rows.append([rank, a.text, _score(a.score), f"{a.start}–{a.end}", a.window + 1,
                         f"{a.token_start}–{a.token_end}"])
    return rows


def _summary(result: qa.QAResult, expected: str = "") -> str:
    best = result.best
    if best.is_null:
        head = (f"**No answer.** The model prefers [CLS]: P_start([CLS]) · P_end([CLS]) = {best.score:.4g} beats "
                f"every span.")
    else:
        head = f"**Answer:** “{best.text}” · **score** {best.score:.4g} · characters {best.start}–{best.end}"
    lines = [head]
    if len(result.windows) == 1:
        lines.append(f"No-answer score P_start([CLS]) · P_end([CLS]) = {result.windows[0].null_score:.4g}.")
    lines += result.notes
    lines.append("Scores of spans that give the same words (in one window or several) add up, as in the Hugging Face "
                 "pipeline; spans are widened to whole words.")
    if expected:
        lines.append(f"*Preset:* {expected}")
    lines.append(f"<span class='badge'>{result.badge}</span>")
    return "  \n".join(lines)


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


def probability_figure(chart: dict | None, window: int) -> go.Figure:
    """Two bar charts on a shared token axis: P_start and P_end over the window's context tokens."""
    if not chart:
        return empty_figure("Ask a question to see the start and end probabilities.")
    window = min(max(int(window), 0), len(chart["windows"]) - 1)
    data = chart["windows"][window]
    tokens, span = data["tokens"], data["span"]
    x = list(range(len(tokens)))
    inside = [span is not None and span[0] <= i <= span[1] for i in x]

    def colors(marked: int | None) -> list[str]:
        return [HIGHLIGHT if i == marked else ("#f4a78f" if inside[i] else COLORWAY[0]) for i in x]

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("P_start(i) = softmax(S·hᵢ)", "P_end(j) = softmax(E·hⱼ)"))
    for row, key, marked in ((1, "start", span[0] if span else None), (2, "end", span[1] if span else None)):
        fig.add_trace(go.Bar(x=x, y=data[key], marker_color=colors(marked), customdata=tokens, showlegend=False,
                             hovertemplate="%{customdata} (token %{x}): %{y:.3f}<extra>" + key + "</extra>"),
                      row=row, col=1)
        fig.update_yaxes(title_text=f"P_{key}", rangemode="tozero", row=row, col=1)
    if span is not None:
        fig.add_vrect(x0=span[0] - 0.5, x1=span[1] + 0.5, fillcolor=HIGHLIGHT, opacity=0.08, line_width=0,
                      row="all", col=1)
    every = max(1, math.ceil(len(tokens) / 60))  # at most ~60 token labels, so they stay readable
    fig.update_xaxes(tickmode="array", tickvals=x[::every], ticktext=tokens[::every],
                     tickangle=-45 if len(tokens) > 12 else 0, row=2, col=1)
    where = (f"window {window + 1} of {len(chart['windows'])}, characters {data['chars'][0]}–{data['chars'][1]} · "
             if len(chart["windows"]) > 1 else "")
    marked = "the answer span is marked" if span else "no answer span in this window"
    return styled(fig, f"Start and end probabilities over the context tokens ({where}{marked})", 600)


def _layout_views(windows: list[qa.Window], source: str, doc_stride: int) -> tuple[list, str, list[list]]:
    entries: list[tuple[str, str | None]] = []
    for w in windows[:LAYOUT_WINDOWS_SHOWN]:
        if len(windows) > 1:
            entries.append((f"{'' if w.index == 0 else chr(10)}window {w.index + 1}: ", None))
        for token, segment in zip(w.tokens, w.segment_ids):
            entries += [(token, "segment 0 · question" if segment == 0 else "segment 1 · context"), (" ", None)]
    rows = []
    for w in windows:
        for position, (token, segment) in enumerate(zip(w.tokens, w.segment_ids)):
            part = ("context" if position in w.context
                    else "question" if 0 < position < w.context.start - 1 else "special")
            rows.append([w.index + 1, position, token, segment, part])
    question_len = windows[0].context.start - 2  # minus [CLS] and the first [SEP]
    longest = max(len(w.tokens) for w in windows)
    note = [f"{source}.",
            f"The question has {question_len} tokens and sits in every window. " + (
                f"The context fits in one window of {longest} tokens." if len(windows) == 1 else
                f"The context needs {len(windows)} windows of up to {longest} tokens, {len(windows[0].context)} "
                f"context tokens each; neighbouring windows share {doc_stride} of them (the doc stride), so an "
                "answer cut by one window's edge is whole in the next.")]
    if len(windows) > LAYOUT_WINDOWS_SHOWN:
        capped = f" (first {LAYOUT_TABLE_ROWS:,} rows)" if len(rows) > LAYOUT_TABLE_ROWS else ""
        note.append(f"The coloured view shows the first {LAYOUT_WINDOWS_SHOWN} windows; the table has them "
                    f"all{capped}.")
    return entries, "  \n".join(note), rows[:LAYOUT_TABLE_ROWS]


# ------------------------------------------------------------------------------------------------------------------
# Handlers


def _no_model(exc: ModelUnavailableError):
    message = f"**Model not available.** {exc}  \n{NO_MODEL_HINT}"
    return [], message, [], empty_figure("No model to run: see the message above."), gr.update(visible=False), None


@friendly_errors
@gpu_handler
def answer_question(model_id, question, context, max_answer_len, top_k, doc_stride, max_seq_len, no_answer,
                    expected="", progress=gr.Progress()):
    progress(0, desc="loading the model (first use) and reading the context")
    try:
        result = qa.answer(question, context, model_id, top_k=int(top_k), max_answer_len=int(max_answer_len),
                           doc_stride=int(doc_stride), max_seq_len=int(max_seq_len),
                           handle_impossible_answer=bool(no_answer),
                           progress=lambda fraction, desc: progress(fraction, desc=desc))
    except ModelUnavailableError as exc:
        return _no_model(exc)
    return _answer_outputs(result, expected)


def _answer_outputs(result: qa.QAResult, expected: str = "") -> tuple:
    chart = chart_data(result)
    slider = gr.update(visible=len(result.windows) > 1, maximum=max(2, len(result.windows)),  # a slider needs min < max
                       value=chart["best"] + 1)
    return (_highlighted(result), _summary(result, expected), _candidate_rows(result),
            probability_figure(chart, chart["best"]), slider, chart)


def answer_batch(model_id: list, question: list, context: list, max_answer_len: list, top_k: list, doc_stride: list,
                 max_seq_len: list, no_answer: list, request: gr.Request = None) -> tuple[list, ...]:
    """``answer_question`` for a batch of requests (batch=True): requests for one checkpoint share forward passes
    (core.qa.answer_many). A request's own problem is shown in its summary; the others answer. The parameters keep
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
            return [_no_model(exc)] * len(indices)
        results = [next(answered) if isinstance(request, dict) else request for request in asked]
        return [result if isinstance(result, Exception) else _answer_outputs(result) for result in results]

    return by_checkpoint("qa", model_id, one_checkpoint, outputs=6, notice=1, request=request)


@friendly_errors
def show_window(chart, window):
    return probability_figure(chart, int(window) - 1)


@friendly_errors
def show_layout(model_id, question, context, doc_stride, max_seq_len):
    windows, source = qa.input_layout(question, context, model_id, max_seq_len=int(max_seq_len),
                                      doc_stride=int(doc_stride))
    return _layout_views(windows, source, int(doc_stride))


def _preset_handler(index: int):
    _, question, context, expected, no_answer = PRESETS[index]

    @friendly_errors
    def run(model_id, max_answer_len, top_k, doc_stride, max_seq_len, current_no_answer, progress=gr.Progress()):
        text = context if context is not None else moby_context()
        flag = True if no_answer else current_no_answer
        answered = answer_question(model_id, question, text, max_answer_len, top_k, doc_stride, max_seq_len, flag,
                                   expected, progress)
        return (question, text, flag, *answered, *show_layout(model_id, question, text, doc_stride, max_seq_len))

    return run


@friendly_errors
def run_example(index: int, model_id, max_answer_len, top_k, doc_stride, max_seq_len, no_answer):
    """PRESETS[index] (question, context, expected answer) through both views."""
    return _preset_handler(int(index))(model_id, max_answer_len, top_k, doc_stride, max_seq_len, no_answer)


PRESET_SLUGS = ["zuigao-wendu", "what-makes-it-fall", "within-a-cloud", "moby-dick-long", "no-answer"]
OPTION_DEFAULTS = (qa.DEFAULT_MAX_ANSWER_LEN, 5, 128, qa.DEFAULT_MAX_SEQ_LEN)
QA_ID = registry.CHECKPOINTS["qa"][0]
# The default (first) is seed 001's English example: the Chinese one needs a Chinese QA checkpoint (its own issue).
VIEW_PRESETS = [presets.Preset(PRESET_SLUGS[i], PRESETS[i][0], (i, QA_ID, *OPTION_DEFAULTS, PRESETS[i][4]),
                               "§14.3") for i in (1, 2, 0, 3, 4)]
# (seed §, question, answer, preset)
LESSON = [
    ("§14.3", "“What causes precipitation to fall?” Which span should a SQuAD model pick, and how is it scored?",
     "“gravity”. Every context token gets a start score S·hᵢ and an end score E·hᵢ; after a softmax the best span "
     "maximises P_start(i)·P_end(j) with i ≤ j. Offline, the input layout below still shows the segment ids.",
     "what-makes-it-fall"),
    ("§14.3", "The context is longer than one window. How does the model still find the answer?",
     "The context is cut into overlapping windows (doc stride tokens shared); each window is read with the "
     "question, and the best span over all windows wins. The input layout lists every window.", "moby-dick-long"),
    ("§14.3", "The context does not contain the answer. What can a SQuAD 2.0 model say?",
     "“No answer”: it can point start and end at [CLS], and with the option on, that candidate is scored "
     "P_start([CLS])·P_end([CLS]) against the best real span.", "no-answer"),
]


def build() -> None:
    gr.Markdown(INTRO)
    lesson_slot = gr.Column()
    with gr.Row():
        model_id = model_picker("qa")
        no_answer = gr.Checkbox(False, label="Allow “no answer” (SQuAD 2.0 models)",
                                info="Adds the [CLS] candidate, scored P_start([CLS]) · P_end([CLS]).")
    question = gr.Textbox(label="Question", lines=1, placeholder="What causes precipitation to fall?")
    context = gr.Textbox(label="Context", lines=6, max_lines=14,
                         placeholder="The passage that holds the answer (long texts are read in windows).")
    with gr.Accordion("Options", open=False):
        with gr.Row():
            max_answer_len = gr.Slider(1, 30, value=qa.DEFAULT_MAX_ANSWER_LEN, step=1,
                                       label="Max answer length (tokens)")
            top_k = gr.Slider(1, qa.MAX_TOP_K, value=5, step=1, label="Top-k candidate spans")
            doc_stride = gr.Slider(0, 128, value=128, step=1, label="Doc stride (tokens shared by windows)",
                                   info="At most 128, so that even the shortest window moves on by a fair step.")
            max_seq_len = gr.Slider(192, 512, value=qa.DEFAULT_MAX_SEQ_LEN, step=1,
                                    label="Window length (max_seq_len)")
    with gr.Row():
        run_button = gr.Button("Find the answer", variant="primary", scale=3)
        layout_button = gr.Button("Show the input layout only", scale=1)
    preset_index = gr.State(1)  # which PRESETS row a preset runs (set by the preset itself)
    preset_bar = gr.Column()

    summary = gr.Markdown()
    highlight = gr.HighlightedText(label="The answer in the context", color_map={"answer": HIGHLIGHT},
                                   show_legend=False)
    candidates = gr.Dataframe(headers=["rank", "answer", "score", "characters", "window", "token positions"],
                              label="Top-k candidate spans", interactive=False, wrap=True, max_height=320,
                                  buttons=TABLE_BUTTONS)
    window = gr.Slider(1, 2, value=1, step=1, label="Window shown in the charts", visible=False)
    chart_state = gr.State(None)
    probs = gr.Plot(probability_figure(None, 0), label="Start and end probabilities", show_label=False)

    gr.Markdown("### Input layout: [CLS] question [SEP] context [SEP], with segment ids")
    layout_note = gr.Markdown()
    layout = gr.HighlightedText(label="What the model reads (colour = segment id)", color_map=SEGMENT_COLORS,
                                show_legend=True, show_inline_category=False)
    layout_table = gr.Dataframe(headers=["window", "position", "token", "segment id", "part"], label="Tokens",
                                interactive=False, max_height=320, buttons=TABLE_BUTTONS)

    options = [max_answer_len, top_k, doc_stride, max_seq_len]
    answer_outputs = [highlight, summary, candidates, probs, window, chart_state]
    layout_outputs = [layout, layout_note, layout_table]
    answer_inputs = [model_id, question, context, *options, no_answer]
    model_event(run_button.click, {"qa": model_id}, answer_batch, answer_inputs, answer_outputs, api_name="qa_answer",
                **BATCH)
    layout_button.click(show_layout, [model_id, question, context, doc_stride, max_seq_len], layout_outputs,
                        api_name="qa_layout")
    window.release(show_window, [chart_state, window], [probs], api_name="qa_window")
    view = presets.View("qa", "answer", [preset_index, model_id, *options, no_answer],
                        [question, context, no_answer, *answer_outputs, *layout_outputs], run_example, VIEW_PRESETS)
    with preset_bar:
        view.buttons()
    with lesson_slot:
        presets.lesson_table(LESSON, view)
