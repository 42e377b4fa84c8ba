"""demo.tasks.qa handlers, called directly: highlighted answer, candidates table, probability charts, layout, errors."""
import json
from types import SimpleNamespace

import gradio as gr
import pytest

from benchmarks.bench_qa import TransformersQA
from core.tasks import qa as core_qa
from core.text.i18n import using_language
from demo.tasks import qa
from core.loading import checkpoints
from core.text import seeds

OPTIONS = dict(max_answer_len=15, top_k=5, doc_stride=128, max_seq_len=384)


@pytest.fixture(scope="module")
def folder(tiny_checkpoint):
    return str(tiny_checkpoint("BertForQuestionAnswering", num_labels=2))


def rows_of(frame):
    """A result table's rows as lists (handlers return pandas frames with headers in the learner's language)."""
    return frame.values.tolist()


def run(folder, question, context, no_answer=False, **options):
    values = {**OPTIONS, **options}
    highlighted, summary, frame, *rest = qa.answer_question(folder, question, context, values["max_answer_len"],
                                                            values["top_k"], values["doc_stride"],
                                                            values["max_seq_len"], no_answer)
    return (highlighted, summary, rows_of(frame), *rest)


def test_answer_is_highlighted_tabled_and_charted(folder):
    highlighted, summary, rows, figure, slider, chart, shown = run(folder, *seeds.SEED_EN[0])
    assert shown == {"__type__": "update", "visible": True}  # the answer's column, shown with a real answer
    expected = TransformersQA(folder)(*seeds.SEED_EN[0], top_k=5)
    marked = [text for text, label in highlighted if label == "answer"]
    assert marked == [expected[0]["answer"]]
    assert "".join(text for text, _ in highlighted) == seeds.PRECIPITATION
    assert [row[1] for row in rows] == [e["answer"] for e in expected]
    assert expected[0]["answer"] in summary and "score" in summary
    start, end = figure.data  # P_start and P_end over the same context tokens
    tokens = chart["windows"][0]["tokens"]
    assert len(start.y) == len(end.y) == len(tokens) > 50
    i, j = chart["windows"][0]["span"]
    assert start.marker.color[i] == qa.HIGHLIGHT and end.marker.color[j] == qa.HIGHLIGHT
    assert slider["visible"] is False


def test_long_context_shows_window_picker_and_other_windows(folder):
    context = qa.moby_context(700)
    *_, figure, slider, chart, _ = run(folder, qa.MOBY_QUESTION, context, max_seq_len=128, doc_stride=32)
    assert slider["visible"] and slider["maximum"] == len(chart["windows"]) > 3
    other = qa.show_window(chart, 1 if chart["best"] != 0 else 2)
    assert len(other.data[0].y) == len(chart["windows"][0 if chart["best"] != 0 else 1]["tokens"])
    assert "window" in other.layout.title.text


def test_no_answer_option_reaches_the_pipeline(folder, monkeypatch):
    _, summary, rows, *_ = run(folder, *seeds.SEED_ZH, no_answer=True, top_k=6)
    expected = TransformersQA(folder)(*seeds.SEED_ZH, top_k=6, handle_impossible_answer=True)
    assert [row[1] for row in rows] == [e["answer"] or "(no answer: [CLS])" for e in expected]
    assert "No-answer score" in summary
    seen = {}
    real = core_qa.answer
    monkeypatch.setattr(core_qa, "answer", lambda *a, **k: seen.update(k) or real(*a, **k))
    run(folder, *seeds.SEED_ZH, no_answer=True)
    assert seen["handle_impossible_answer"] is True


def test_null_best_is_explained():
    result = core_qa.QAResult("q", "some context", [core_qa.Answer("", 0.9, 0, 0)], [], 384, 128, 15, [])
    assert "No answer" in qa._summary(result)
    assert qa._highlighted(result) == [("some context", None)]
    assert qa._candidate_rows(result)[0][1].startswith("(no answer")


def test_bad_input_raises_a_clear_gradio_error(folder):
    with pytest.raises(gr.Error, match="question is empty"):
        run(folder, "", seeds.PRECIPITATION)
    with pytest.raises(gr.Error, match="context is empty"):
        run(folder, "Why?", "   ")
    with pytest.raises(gr.Error, match="question has"):
        run(folder, "why " * 200, seeds.PRECIPITATION, max_seq_len=128, doc_stride=32)


def test_offline_model_shows_a_message_and_layout_still_works():
    highlighted, summary, rows, figure, slider, chart, shown = run("distilbert-base-cased-distilled-squad",
                                                                   *seeds.SEED_EN[1])
    assert "is not on this machine" in summary and "input layout" in summary
    assert "hf download distilbert-base-cased-distilled-squad\n" in summary
    assert rows == [] and chart is None and figure is None and shown == {"__type__": "update", "visible": False}
    entries, note, table = qa.show_layout("distilbert-base-cased-distilled-squad", *seeds.SEED_EN[1], 128, 384)
    table = rows_of(table)
    assert "MiniLM" in note
    assert table[0][2:] == ["[CLS]", 0, "special"] and table[-1][2:] == ["[SEP]", 1, "special"]
    assert {row[4] for row in table} == {"special", "question", "context"}
    assert {row[3] for row in table if row[4] == "context"} == {1}
    assert any(label == "segment 1 · context" for _, label in entries)


def test_presets_fill_the_inputs_and_run_both_views(folder):
    outputs = qa._preset_handler(1)(folder, *OPTIONS.values(), False)
    question, context, no_answer = outputs[:3]
    assert (question, context) == seeds.SEED_EN[0] and no_answer is False
    assert "gravity" in outputs[4]  # the summary says what seed 001 expects
    assert len(outputs[-1]) > 10  # the layout table
    outputs = qa._preset_handler(4)(folder, *OPTIONS.values(), False)
    assert outputs[2] is True  # the no-answer preset switches the option on


def test_tab_builds_with_its_api_names():
    with gr.Blocks() as blocks:
        qa.build()
    names = {fn.api_name for fn in blocks.fns.values()}
    assert {"qa_answer", "qa_layout", "qa_window", "qa_answer_preset", "qa_lesson"} <= names


# ----------------------------------------------------------------------------------------------------------------
# 中文 (issue #19)



ZH = SimpleNamespace(headers={"cookie": "plm_lang=zh"})  # what the 中文 toggle sends


def test_the_answer_and_an_error_come_out_in_chinese(folder):
    with using_language("zh"):
        highlighted, summary, frame, figure, *_ = qa.answer_question(folder, *seeds.SEED_EN[0], 15, 5, 128, 384,
                                                                     False)
    assert summary.startswith("**答案**：") and "“无答案”得分" in summary
    assert list(frame.columns) == ["名次", "答案", "得分", "字符位置", "窗口", "词元位置"]
    assert "起点与终点概率" in figure.layout.title.text
    assert any(label == "答案" for _, label in highlighted)
    with pytest.raises(gr.Error, match="问题为空"):
        qa.answer_question(folder, "", seeds.PRECIPITATION, 15, 5, 128, 384, False, request=ZH)
    with using_language("zh"):  # a preset runs its view inside the caller's language
        outputs = qa.run_example(1, folder, *OPTIONS.values(), False)
    assert outputs[4].startswith("**答案**：") and "原文 001" in outputs[4]  # the summary, with the preset's note


def test_chinese_preset_on_the_chinese_checkpoint_marks_a_span_of_the_typed_context(monkeypatch, tmp_path):
    """The seed's 最高温度 preset runs on uer/roberta-base-chinese-extractive-qa (tiny, served by a local Hub): the
    marked answer is the context's own text at the offsets the table gives, and the note says the seed's 0.80 is an
    illustration and how to fetch the model."""
    from tests import chinese_checkpoints

    folder = chinese_checkpoints.write(tmp_path / "zh-qa", "BertForQuestionAnswering", safetensors=False,
                                       tokenizer_config=True)
    server = chinese_checkpoints.serve(monkeypatch, tmp_path, {checkpoints.CHINESE_QA_ID: folder})
    try:
        preset = next(p for p in qa.VIEW_PRESETS if p.slug == "zuigao-wendu")
        index, model_id, *options, no_answer = preset.resolved()
        assert model_id == checkpoints.CHINESE_QA_ID
        with using_language("zh"):
            question, context, _, highlighted, summary, frame, *_ = qa.run_example(index, model_id, *options,
                                                                                    no_answer)
    finally:
        chinese_checkpoints.stop(server)
    assert (question, context) == seeds.SEED_ZH
    best = rows_of(frame)[0]
    start, end = map(int, best[3].split("–"))
    assert context[start:end] == best[1] == next(text for text, label in highlighted if label == "答案")
    assert "".join(text for text, _ in highlighted) == context
    assert "0.80" in summary and "说明原理" in summary and "见上图" in summary  # the model's own numbers: shown


def test_chinese_preset_offline_says_which_checkpoint_to_fetch():
    preset = next(p for p in qa.VIEW_PRESETS if p.slug == "zuigao-wendu")
    outputs = qa.run_example(*preset.resolved())
    summary = outputs[4]
    assert "is not on this machine" in summary and "hf download uer/roberta-base-chinese-extractive-qa\n" in summary
    assert "shown above" not in summary  # nothing is
    assert "0.80" in summary and "illustrate" in summary
    assert len(rows_of(outputs[-1])) > 10  # the input layout still works (MiniLM's tokenizer)


def test_qa_sliders_cannot_make_a_refused_combination_for_ordinary_questions():
    with gr.Blocks() as blocks:
        qa.build()
    sliders = {getattr(c.label, "key", c.label): c for c in blocks.blocks.values() if isinstance(c, gr.Slider)}
    stride = sliders["qa.doc_stride"]  # labels are translation keys (gr.I18n)
    window = sliders["qa.max_seq_len"]
    # the largest stride beside the shortest window still leaves room for a 40-token question and a step of 20
    assert window.minimum - 3 - 40 - stride.maximum >= 20
    core_qa.default_lengths(SimpleNamespace(model_max_length=512), int(window.minimum), int(stride.maximum))  # no error


def _make_subplots_reference(chart: dict, window: int, title: str) -> dict:
    """The probability figure as plotly's own subplot helpers build it (make_subplots, add_vrect, per-row axis
    updates): demo.tasks.qa lays it out by hand in one constructor call, which is 3-4x cheaper (issue #38)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from demo.kit.figures import COLORWAY, HIGHLIGHT, HIGHLIGHT_TINT, styled
    from demo.kit.i18n import t

    data = chart["windows"][window]
    tokens, span = data["tokens"], data["span"]
    x = list(range(len(tokens)))
    inside = [span is not None and span[0] <= i <= span[1] for i in x]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=qa.SUBPLOT_TITLES)
    for row, key, marked in ((1, "start", span[0] if span else None), (2, "end", span[1] if span else None)):
        colors = [HIGHLIGHT if i == marked else (HIGHLIGHT_TINT if inside[i] else COLORWAY[0]) for i in x]
        fig.add_trace(go.Bar(x=x, y=data[key], marker_color=colors, customdata=tokens, showlegend=False,
                             hovertemplate="%{customdata} (" + t("qa.figure_token") + " %{x}): %{y:.3f}<extra>"
                             + key + "</extra>"), row=row, col=1)
        fig.update_yaxes(title_text=f"P_{key}", rangemode="tozero", row=row, col=1)
    if span is not None:
        fig.add_vrect(x0=span[0] - 0.5, x1=span[1] + 0.5, fillcolor=HIGHLIGHT, opacity=0.08, line_width=0,
                      row="all", col=1)
    every = max(1, -(-len(tokens) // 60))
    fig.update_xaxes(tickmode="array", tickvals=x[::every], ticktext=tokens[::every],
                     tickangle=-45 if len(tokens) > 12 else 0, row=2, col=1)
    fig.update_layout(title_text=title, height=600)
    return json.loads(styled(fig).to_json())


@pytest.mark.parametrize("length, span", [(9, (2, 4)), (40, None), (130, (100, 101))])
def test_the_probability_figure_is_the_one_plotly_s_subplot_helpers_build(length, span):
    import random

    draw = random.Random(length)
    tokens = [f"tok{i}" for i in range(length)]
    chart = {"best": 0, "windows": [{"tokens": tokens, "span": span, "chars": (0, 99),
                                     "start": [draw.random() for _ in tokens], "end": [draw.random() for _ in tokens]}]}
    figure = qa.probability_figure(chart, 0)
    ours = json.loads(figure.to_json())
    assert ours == _make_subplots_reference(chart, 0, figure.layout.title.text)
    assert len(ours["layout"].get("shapes", [])) == (2 if span else 0) and ours["data"][1]["yaxis"] == "y2"
