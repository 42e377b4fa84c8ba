"""What an API client that sends values the app cannot use is told: which parameter, what it takes and what came, in
the request's language, never Gradio's English, a Python type name or repr, a traceback's exception name, or a 500.

Each case is one a hostile-input sweep of every endpoint found on 2026-11-30 (3,230 calls; the messages before the
change are quoted). Calls go through the built app's own ``process_api``, as Gradio's routes call it for the page and
for API clients alike (demo/server/serving.py guard_api).
"""
from __future__ import annotations

import re

import gradio as gr
import pytest
from gradio.state_holder import SessionState
from gradio.utils import error_payload

from core.loading import resolve
from core.tasks.finetune import load_bundled
from core.text.errors import UserInputError, as_sent, echo
from tests import app_events
from tests.conftest import run_async

# What the messages said before: Gradio's own English, Python's names, an exception's name.
FOREIGN = re.compile(r"Value|minimum|maximum|list of choices|<class|NoneType|\bstr\b|\blist\b|Error\b|index out of "
                     r"range|\bNone\b|\bnan\b")


@pytest.fixture(scope="module")
def app():
    resolve.set_offline(True)
    return app_events.built_app()


def event(app, api_name: str):
    return next(dep for dep in app.fns.values() if dep.api_name == api_name)


def told(app, api_name: str, inputs: list, lang: str = "zh", columns: bool = False) -> str:
    """The message a client in ``lang`` gets for ``inputs`` (``columns``: as Gradio's queue hands a batch event)."""
    dep = event(app, api_name)
    request = gr.Request(headers={"accept-language": "zh-CN,zh" if lang == "zh" else "en-US,en"})
    with pytest.raises(Exception) as caught:
        run_async(app.process_api(block_fn=dep, inputs=inputs, state=SessionState(app), request=[request] if columns
                                  else request))
    return str(error_payload(caught.value, show_error=True)["error"])


def test_every_batched_event_sent_no_values_is_told_how_many_it_takes(app):
    """Before: "list index out of range", in English, with no title (Gradio's batch code read the first column)."""
    batched = [dep for dep in app.fns.values() if dep.batch]
    assert len(batched) >= 3  # the masked LM's fill, NER and QA
    for dep in batched:
        listed = [block for block in dep.inputs if not getattr(block, "skip_api", False)]
        message = told(app, dep.api_name, [], columns=True)
        assert message.startswith(f"这个接口需要 {len(listed)} 个值（") and message.endswith("而请求发送了 0 个。"), message


@pytest.mark.parametrize("api_name, inputs, name, shown", [
    # before: "Value -1 is less than minimum value 1." inside the Chinese sentence
    ("embeddings_lookup", [-1], "word_number", "-1"),
    # before: "计算时出了问题（ValueError）…" (int(nan) in the handler)
    ("embeddings_lookup", [float("nan")], "word_number", "NaN"),
    ("embeddings_lookup", [float("inf")], "word_number", "Infinity"),
    # before: "…收到的是 NoneType"
    ("embeddings_lookup", [None], "word_number", "null"),
    # before: "Value: nan is not in the list of choices: [64, 128, 256, 512]"
    ("attention_multihead", ["i have a dream", float("nan"), 8, False], "d_model", "NaN"),
    # before: "计算时出了问题（AttributeError）" (a null word reached the handler)
    ("embeddings_static", [None, "a", "b"], "word", "null"),
])
def test_a_refused_value_is_named_in_the_requests_language(app, api_name, inputs, name, shown):
    message = told(app, api_name, inputs)
    assert message.startswith(f"为“{name}”提供的值无法使用：需要") and message.endswith(f"收到的是 {shown}"), message
    assert not FOREIGN.search(message), message
    english = told(app, api_name, inputs, lang="en")
    assert english.startswith(f"The value given for “{name}” could not be used: expected ") and \
        english.endswith(f", got {shown}"), english


def test_an_event_that_reads_its_own_inputs_refuses_in_the_same_words(app):
    """The n-gram events preprocess their 11 inputs inside the handler (handlers.preprocess_in_handler). Before, a
    value a component refused came back as Gradio's English alone, titled "Error": "Value: 'the cat sat' (type:
    <class 'str'>) is not in the list of choices: ['toy_zh', …]", "Value -1 is less than minimum value 1."."""
    dep = event(app, "ngram_counts")
    good = [component.value for component in dep.inputs]
    corpus, n = (next(i for i, block in enumerate(dep.inputs) if isinstance(block, kind)) for kind in (gr.Radio,
                                                                                                         gr.Slider))
    for index, value, shown in ((corpus, "the cat sat", "“the cat sat”"), (n, -1, "-1"), (n, None, "null")):
        inputs = list(good)
        inputs[index] = value
        message = told(app, "ngram_counts", inputs)
        assert re.fullmatch(f"为“[^”]+”提供的值无法使用：需要.+，收到的是 {re.escape(shown)}", message), message
        assert not FOREIGN.search(message), message


def test_a_call_to_no_endpoint_or_a_read_of_no_call_is_a_404_that_says_so(app):
    """Before: HTTP 500 "Internal Server Error" for an unknown name (Gradio's route could not find the event); for an
    unknown event id, Gradio's stream raised after its headers and the connection was cut mid-answer. An upload over
    the cap was Gradio's 413 in English plain text ("File size exceeded maximum allowed size of 5242880 bytes.")."""
    from starlette.testclient import TestClient

    from demo.server.serving import known_calls

    async def inner(scope, receive, send):  # Gradio's routes, as far as the middleware sees them
        status, body = 200, b"stream"
        if scope["method"] == "POST":
            upload = scope["path"].endswith("upload")
            status, body = (413, b"File size exceeded") if upload else (200, b'{"event_id":"e1"}')
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    middleware = known_calls(app)
    client = TestClient(middleware.cls(inner, *middleware.args, **middleware.kwargs))
    for path in ("/gradio_api/call/nope", "/plm/gradio_api/call/nope"):  # also behind a proxy's sub-path
        answer = client.post(path, json={"data": []}, headers={"accept-language": "zh-CN"})
        assert answer.status_code == 404 and answer.json()["error"].startswith("这个应用没有名为“nope”的接口。")
    answer = client.post("/gradio_api/call/" + "\u202ex" * 3, json={"data": []})
    assert answer.status_code == 404 and "“\ufffdx\ufffdx\ufffdx”" in answer.json()["error"]
    assert client.get("/gradio_api/call/nope/e1").json()["error"].startswith("This app has no endpoint named “nope”.")
    answer = client.get("/gradio_api/call/ngram_counts/e1", headers={"accept-language": "zh-CN"})
    assert answer.status_code == 404 and answer.json()["error"].startswith("这里没有在等待的“ngram_counts”调用“e1”。")
    assert client.post("/gradio_api/call/ngram_counts", json={"data": []}).json() == {"event_id": "e1"}
    assert client.get("/gradio_api/call/ngram_counts/e1").text == "stream"  # a call it answered: Gradio's stream
    assert client.get("/gradio_api/call/v2/ngram_counts/e2").status_code == 404
    assert client.post("/gradio_api/call/v2/nope", json={}).status_code == 404
    client.post("/gradio_api/call/v2/ngram_counts", json={})  # the API page's curl: named values, answered "e1"
    assert client.get("/gradio_api/call/v2/ngram_counts/e1").text == "stream"
    answer = client.post("/gradio_api/upload", headers={"accept-language": "zh-CN"})
    assert answer.status_code == 413 and answer.json() == {"detail": "文件超过了这个应用 5 MB 的上限。请上传更小的文件。"}


def test_a_message_repeats_values_as_sent_and_no_character_that_turns_it_around():
    """Before: "这里没有名为“None”的示例", "“['a']”", "“nan”"; and U+202E (right-to-left override) or NUL echoed raw,
    which reverse or cut the rest of the message on screen."""
    assert [as_sent(value) for value in (None, ["a"], float("nan"), True, 2, "bank")] == \
        ["null", '["a"]', "NaN", "true", "2", "bank"]
    assert echo("a\u202eb\x00c\u2066d\n👩\u200d👩\u200d👧") == "a\ufffdb\ufffdc\ufffdd\n👩\u200d👩\u200d👧"
    with pytest.raises(UserInputError) as caught:  # a data set named null: "未知的数据集“None”" before
        load_bundled(None)
    assert caught.value.message("zh").startswith("未知的数据集“null”。")
