"""The shared strings in both languages (issue #19): number checks, the checkpoint picker, training notes, serving's
API and queue messages, uploads, figure defaults. Each comes out in 中文 under core.text.i18n.using_language("zh") (what
demo.server.handlers.friendly_errors sets per call, or serving per request) and in English otherwise."""
from __future__ import annotations

import types

import gradio as gr
import pytest
from gradio.state_holder import SessionState
from gradio.utils import error_payload
from starlette.requests import Request as StarletteRequest

from core.loading import jobs
from core.text.errors import UserInputError
from core.text.i18n import text, using_language
from core.text.textio import decode_text
from demo.kit import widgets
from demo.server import handlers as common, serving
from demo.kit import figure_head, figures
from tests.conftest import run_async


def message_of(call, lang: str) -> str:
    with using_language(lang), pytest.raises(UserInputError) as caught:
        call()
    with using_language(lang):
        return str(caught.value)


def test_number_checks_name_the_field_in_the_learners_language():
    out_of_range = lambda: common.number_in_range(7, "common.field_temperature", 0.05, 3)  # noqa: E731
    assert message_of(out_of_range, "en") == "The temperature must be a number between 0.05 and 3."
    assert message_of(out_of_range, "zh") == "温度必须是 0.05 到 3 之间的数。"
    not_whole = lambda: common.whole_number(None, "common.field_seed")  # noqa: E731
    assert message_of(not_whole, "en") == "Enter a whole number for the seed."
    assert message_of(not_whole, "zh") == "请为随机种子输入一个整数。"
    too_small = lambda: common.whole_number(0, "common.field_steps", 1)  # noqa: E731
    assert message_of(too_small, "en") == "The number of steps must be at least 1."
    assert message_of(too_small, "zh") == "训练步数至少为 1。"
    # A name that is not (yet) a key is used as given, as before.
    assert message_of(lambda: common.whole_number("x", "top-k"), "en") == "Enter a whole number for top-k."
    assert common.number_in_range("2.5", "common.field_temperature", 0.05, 3) == 2.5
    assert common.whole_number(3.0, "common.field_seed") == 3


def test_the_checkpoint_picker_is_labelled_through_the_tables():
    picker = widgets.model_picker("mlm")
    assert picker.label.key == "common.checkpoint" and picker.info.key == "common.checkpoint_info"
    assert widgets.model_picker("mlm", "common.field_layer").label.key == "common.field_layer"
    assert text("common.checkpoint", "zh").startswith("检查点")


def test_training_stopped_notes_in_both_languages():
    with using_language("zh"):
        note = common.stopped_note(jobs.BUDGET, 120.4, 1234, 5000)
        error = str(common.stopped_error(jobs.REPLACED, 3.0, 10, 400))
    assert note.startswith("训练在 120 秒后停止") and "1,234 / 5,000" in note
    assert error == "训练在第 10 / 400 步停止，因为你启动了一次新的训练；这一次的模型不予保留。"
    assert common.stopped_note(jobs.BUDGET, 120.4, 1234, 5000).startswith("Stopped after 120 s")
    assert common.stopped_note(None, 1, 1, 1) == ""


def test_upload_errors_in_both_languages():
    assert message_of(lambda: decode_text(b"\xff\xfe abc"), "zh") == \
        "这个文件不是有效的 UTF-8 编码（第 0 个字节处出错）。请另存为 UTF-8 文本后重新上传。"
    assert "not valid UTF-8 (bad byte at position 0)" in message_of(lambda: decode_text(b"\xff\xfe abc"), "en")
    assert message_of(lambda: decode_text(b"a\x00b"), "zh").startswith("这看起来是一个二进制文件")


def test_figure_defaults_and_empty_figures_follow_the_language():
    with using_language("zh"):
        bar = figures.bar(["今天"], [1.0], "标题")
        heat = figures.heatmap([[1.0]], ["a"], ["b"], "标题")
        empty = figures.empty_figure("common.wants_text")
    assert bar.layout.xaxis.title.text == "概率"
    assert heat.data[0].hovertemplate.startswith("行: %{y}<br>列: %{x}<br>数值: ")
    assert empty.layout.annotations[0].text == "文本"
    assert figures.bar(["x"], [1.0], "t").layout.xaxis.title.text == "probability"
    assert figures.empty_figure("Press Count.").layout.annotations[0].text == "Press Count."  # not a key: as given
    assert '"zh": "下载 SVG 矢量图（幻灯片尺寸）"' in figure_head.HEAD
    assert '"en": "Download plot as SVG (slide size, vector)"' in figure_head.HEAD


# ----------------------------------------------------------------------------------------------------------------
# serving: API argument errors and the queue cap, in the language of the request


def request(lang: str) -> gr.Request:
    scope = {"type": "http", "method": "POST", "path": "/", "query_string": b"",
             "headers": [(b"accept-language", b"zh-CN,zh;q=0.9" if lang == "zh" else b"en-US")]}
    return gr.Request(request=StarletteRequest(scope))


@pytest.fixture(scope="module")
def small_app():
    with gr.Blocks() as blocks:
        number = gr.Slider(0, 10, label="n")
        words = gr.Textbox("some words", label="words")
        out = gr.Textbox()
        gr.Button("go").click(lambda n, w: f"{n} {w}", [number, words], out, api_name="echo")
    blocks.queue()
    return serving.serve(blocks)


def api_error(app, inputs, lang: str) -> str:
    fn = next(f for f in app.fns.values() if f.api_name == "echo")
    with pytest.raises(Exception) as caught:
        run_async(app.process_api(fn, inputs, state=SessionState(app), request=request(lang)))
    return str(error_payload(caught.value, show_error=True)["error"])


def test_api_argument_errors_in_the_requests_language(small_app):
    assert api_error(small_app, [1], "en") == "This endpoint takes 2 values (n, w); the request sent 1."
    assert api_error(small_app, [1], "zh") == "这个接口需要 2 个值（n, w），而请求发送了 1 个。"
    assert api_error(small_app, ["lots", "a"], "en") == \
        "The value given for “n” could not be used: expected a number from 0 to 10, got “lots”"
    assert api_error(small_app, ["lots", "a"], "zh") == "为“n”提供的值无法使用：需要0 到 10 之间的数，收到的是 “lots”"
    assert api_error(small_app, [1, ["a"]], "zh") == "为“w”提供的值无法使用：需要文本，收到的是 一个含 1 个值的列表"
    # the values Gradio itself refuses, in our words, never its English ("Value 11 is greater than maximum value")
    assert api_error(small_app, [11, "a"], "zh") == "为“n”提供的值无法使用：需要0 到 10 之间的数，收到的是 11"
    # JSON's NaN and null reached the handler (int(nan): "Something went wrong (ValueError)"), or named NoneType
    assert api_error(small_app, [float("nan"), "a"], "en") == \
        "The value given for “n” could not be used: expected a number from 0 to 10, got NaN"
    assert api_error(small_app, [None, "a"], "en") == \
        "The value given for “n” could not be used: expected a number from 0 to 10, got null"
    # null is refused where the page always sends a value: a box that starts with text ("words"), not an empty one
    assert api_error(small_app, [1, None], "en") == "The value given for “w” could not be used: expected text, got null"
    fn = next(f for f in small_app.fns.values() if f.api_name == "echo")
    assert run_async(small_app.process_api(fn, [2, "ok"], state=SessionState(small_app),
                                           request=request("zh")))["data"] == ["2 ok"]


def test_preprocess_payload_says_which_input_in_the_language():
    from demo.kit.i18n import label

    box = gr.File(label=label("common.checkpoint"))  # an input labelled through the tables
    with using_language("zh"), pytest.raises(common.UnreadableValue) as caught:
        common.preprocess_payload(box, {"path": 1})
    assert caught.value.message == "为“检查点（checkpoint）”提供的值无法使用：需要一个上传的文件（在 gradio_client 中用 handle_file），收到的是 一个对象"
    box = gr.File(label="f", file_types=[".txt"])
    with using_language("en"), pytest.raises(common.UnreadableValue) as caught:
        common.preprocess_payload(box, {"path": "/etc/passwd", "meta": {"_type": "gradio.FileData"}}, "upload")
    assert caught.value.message == ("The value given for “upload” could not be used: expected an uploaded file of "
                                    "type .txt (use handle_file in gradio_client), got “passwd”")  # no server path


def test_the_session_cap_answers_in_the_requests_language():
    queue = types.SimpleNamespace(event_queue_per_concurrency_id={}, active_jobs=[])
    pushed = []

    async def push(body, request, username=None):
        pushed.append(body)
        queue.event_queue_per_concurrency_id.setdefault("x", types.SimpleNamespace(queue=[])).queue.append(
            types.SimpleNamespace(session_hash=body.session_hash))
        return True, None, None

    queue.push = push
    blocks = types.SimpleNamespace(_queue=queue, fns={})
    serving.admit(blocks, per_session=2)
    body = types.SimpleNamespace(session_hash="s", fn_index=None)
    results = [run_async(blocks._queue.push(body, request("zh"))) for _ in range(3)]
    assert [ok for ok, *_ in results] == [True, True, False]
    assert results[2][1] == "你已有 2 个请求在排队。请等它们完成（或刷新页面）后再发送新的请求。"
    assert run_async(blocks._queue.push(body, request("en")))[1].startswith("You already have 2 requests waiting.")


def test_errors_are_titled_in_the_language_and_star_args_handlers_find_the_request():
    """A handler with a ``*args`` signature (presets' tab-open event) cannot be given the request by position:
    friendly_errors then reads the request serving.guard_api puts in handlers.EVENT_REQUEST around Gradio's
    processing of the event, in Gradio's worker thread (the download gate reads it too). The error's toast title follows
    the language too."""
    seen = []

    def open_tab(*done, tab_id="ngram"):
        seen.append(common.event_request())
        raise UserInputError("common.whole_number", name=text("common.field_seed"))

    with gr.Blocks() as blocks:
        first, second = gr.Checkbox(), gr.Checkbox()
        gr.Button().click(common.friendly_errors(open_tab), [first, second], None, api_name="open_tab")
    blocks.queue()
    serving.serve(blocks)
    fn = next(f for f in blocks.fns.values() if f.api_name == "open_tab")
    asked = request("zh")
    with pytest.raises(gr.Error) as zh:
        run_async(blocks.process_api(fn, [True, False], state=SessionState(blocks), request=asked))
    assert zh.value.message == "请为随机种子输入一个整数。" and zh.value.title == "出错了"
    assert seen[0] is asked and common.event_request() is None  # set for the event only
    with pytest.raises(gr.Error) as en:
        common.friendly_errors(open_tab)(True, False)  # outside any event: the caller's language
    assert en.value.message == "Enter a whole number for the seed." and en.value.title == "Error"
    assert seen[1] is None


def test_an_examples_table_puts_its_row_into_the_inputs_and_titles_no_column_with_a_key():
    """demo.kit.i18n.examples_table: the public gr.Dataset and a click event. A click (the row's index, as the page
    sends it) answers the row's values for the inputs; the columns have no headers (a header that is a gr.I18n key
    shows as the raw key); the click is not an API endpoint, and a forged index gets a readable refusal."""
    from demo.kit.i18n import examples_table, label

    with gr.Blocks() as blocks:
        kind = gr.Radio(["skip-gram", "CBOW"], label=label("embeddings.architecture"))
        size = gr.Slider(1, 10, step=1, label=label("embeddings.window"))
        word = gr.Textbox(label=label("embeddings.word"))
        pair = examples_table([["skip-gram", 3], ["CBOW", 7]], [kind, size], label("embeddings.train_examples"),
                              api_name="pair_example")
        single = examples_table([["whale"], ["ship"]], [word], label("embeddings.compare_examples"),
                                api_name="word_example")
    blocks.queue()
    serving.serve(blocks)
    click = {table: next(f for f in blocks.fns.values() if f.inputs == [table]) for table in (pair, single)}
    answer = lambda table, index: run_async(blocks.process_api(  # noqa: E731
        click[table], [index], state=SessionState(blocks), request=request("en")))["data"]
    assert answer(pair, 1) == ["CBOW", 7] and answer(pair, 0) == ["skip-gram", 3] and answer(single, 1) == ["ship"]
    assert pair.headers == [] and single.headers == [] and str(pair.label) != "Examples"
    assert not blocks.get_api_info()["named_endpoints"] and all(
        f.api_visibility == "private" for f in click.values())
    with pytest.raises(Exception) as forged:
        run_async(blocks.process_api(click[pair], [99], state=SessionState(blocks), request=request("zh")))
    message = str(error_payload(forged.value, show_error=True)["error"])
    assert message.startswith("为") and "object at 0x" not in message and "Traceback" not in message
