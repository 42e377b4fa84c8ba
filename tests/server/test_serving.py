"""Serving many users (issue 21 §2, §3, §7): readable API errors, a per-session queue cap, uploads cleaned up.

API calls go through the built app's own ``process_api`` (what Gradio's routes call), so the messages checked are
exactly what a client receives."""
from __future__ import annotations

import time
import types

import gradio as gr
import pytest
from gradio.state_holder import SessionState
from gradio.utils import error_payload

from demo.server import gradio_inside, serving
from tests.conftest import run_async
from core.loading import resolve


@pytest.fixture(scope="module")
def app():
    import app as app_module

    resolve.set_offline(True)
    return app_module.build_app()


def call(app, api_name: str, inputs: list):
    fn = next(f for f in app.fns.values() if f.api_name == api_name)
    if fn.batch:  # the queue hands a batch=True event one list per parameter (here a batch of one request)
        inputs = [[value] for value in inputs]
    return run_async(app.process_api(fn, inputs, state=SessionState(app)))


def client_message(app, api_name: str, inputs: list) -> str:
    """What the client is told when the call fails (Gradio's error_payload, with show_error as the app runs)."""
    with pytest.raises(Exception) as caught:
        call(app, api_name, inputs)
    payload = error_payload(caught.value, show_error=True)
    message = str(payload["error"])
    assert "object at 0x" not in message and "Original error" not in message and "Traceback" not in message
    assert len(message) < 400
    return message


QUESTION, CONTEXT = "Where is it?", "It is in Paris."


def test_too_few_or_too_many_values_name_the_parameters(app):
    message = client_message(app, "qa_layout", [None, QUESTION])
    assert "takes 5 values" in message and "sent 2" in message
    assert "question" in message and "doc_stride" in message
    message = client_message(app, "qa_layout", [None, QUESTION, CONTEXT, 32, 384, "extra"])
    assert "takes 5 values" in message and "sent 6" in message


@pytest.mark.parametrize("index,value,name,wants", [
    (3, "lots", "doc_stride", "a number from 0 to 128"),
    (4, {"a": 1}, "max_seq_len", "a number from 192 to 512"),
    (1, ["a", "list"], "question", "text"),
    (2, 12345, "context", "text"),
    (0, {"path": 1}, "model_id", ""),
])
def test_a_wrong_type_names_the_parameter(app, index, value, name, wants):
    inputs = [None, QUESTION, CONTEXT, 32, 384]
    inputs[index] = value
    message = client_message(app, "qa_layout", inputs)
    assert f"“{name}”" in message and wants in message


def test_a_choice_not_offered_names_the_parameter(app):
    message = client_message(app, "ner_tag", ["Angela Merkel visited Paris.", None, "no-such-strategy"])
    assert "“" in message and "no-such-strategy" in message and "one of" in message


def test_good_call_still_works(app):
    out = call(app, "qa_layout", [None, QUESTION, CONTEXT, 32, 384])
    assert out["data"]


def test_a_wrong_type_for_each_kind_of_box_says_what_the_box_takes():
    """The API guard (serve()) on a small app with one box of each kind: a value of the wrong type is refused with
    what that box takes, in the caller's language, before the handler runs."""
    from core.text.i18n import text

    ran = []
    with gr.Blocks() as small:
        boxes = [gr.Checkbox(), gr.Number(), gr.Textbox(), gr.Slider(0, 4)]
        gr.Button().click(lambda *values: ran.append(values), boxes, None, api_name="kinds")
    serving.serve(small)
    good = [True, 1.5, "words", 2]
    for index, (wrong, wants) in enumerate([("yes", "common.wants_bool"), ("1.5", "common.wants_number"),
                                            (["a"], "common.wants_text"), (True, None)]):
        values = [*good[:index], wrong, *good[index + 1:]]
        message = client_message(small, "kinds", values)
        expected = text(wants) if wants else text("common.wants_number_range", low="0", high="4")
        assert expected in message, (index, message)
    call(small, "kinds", good)
    assert ran == [tuple(good)]


def test_an_event_with_state_inputs_names_each_box_as_its_api_page_does(app):
    """gr.State inputs are not on an endpoint's API page; the boxes after them keep the names the page gives them."""
    from core.text.i18n import text

    fn, index = next((fn, index) for fn in app.fns.values() if fn.api_name and fn.api_visibility == "public"
                     and any(isinstance(block, gr.State) for block in fn.inputs)
                     for index, block in enumerate(fn.inputs) if type(block) is gr.Textbox
                     and any(isinstance(b, gr.State) for b in fn.inputs[:index]))
    page = app.get_api_info()["named_endpoints"][f"/{fn.api_name}"]["parameters"]
    listed = [block for block in fn.inputs if not block.skip_api]
    name = page[listed.index(fn.inputs[index])]["parameter_name"]
    values = [getattr(block, "value", None) for block in fn.inputs]
    values[index] = ["not", "text"]
    message = client_message(app, fn.api_name, values)
    assert f"“{name}”" in message and text("common.wants_text") in message, (fn.api_name, message)


# ----------------------------------------------------------------------------------------------------------------
# Queue fairness


def fake_queue(events_by_session: dict[str, int], running: dict[str, int]):
    event = lambda session: types.SimpleNamespace(session_hash=session)  # noqa: E731
    waiting = [event(s) for s, n in events_by_session.items() for _ in range(n)]
    jobs = [[event(s)] for s, n in running.items() for _ in range(n)] + [None, None]
    queue = types.SimpleNamespace(event_queue_per_concurrency_id={"x": types.SimpleNamespace(queue=waiting)},
                                  active_jobs=jobs)
    pushed = []

    async def push(body, request, username=None):
        pushed.append(body.session_hash)
        waiting.append(event(body.session_hash))
        return True, f"id{len(pushed)}", "success"

    queue.push = push
    return types.SimpleNamespace(_queue=queue), pushed


def test_one_session_cannot_hold_more_than_eight_events_and_others_are_admitted():
    blocks, pushed = fake_queue({"greedy": 0, "other": 1}, {"greedy": 1})
    serving.admit(blocks, per_session=8)
    push = blocks._queue.push
    body = lambda session: types.SimpleNamespace(session_hash=session)  # noqa: E731
    results = [run_async(push(body("greedy"), None)) for _ in range(20)]
    accepted = [r for r in results if r[0]]
    refused = [r for r in results if not r[0]]
    assert len(accepted) == 7  # 1 running + 7 waiting = 8
    assert refused[0] == (False, "You already have 8 requests waiting. Wait for them to finish (or reload the page) "
                                 "before sending more.", "error")
    assert run_async(push(body("other"), None))[0]  # another user is admitted
    assert run_async(push(body("newcomer"), None))[0]
    blocks._queue.active_jobs[0] = None  # greedy's running event ends: one more place
    assert run_async(push(body("greedy"), None))[0]
    assert not run_async(push(body("greedy"), None))[0]


def test_the_app_caps_sessions_through_its_real_queue(app):
    assert app._queue.push.__wrapped__ is not None and app._queue.max_size == serving.QUEUE_MAX_SIZE


def test_the_idle_queue_looks_for_work_every_10_ms_not_every_1_ms(app, monkeypatch):
    """Gradio's own loop, run on the built app's queue with nothing queued: each pause it takes is 10 ms (Gradio's
    default off Windows is 1 ms, a thousand wake-ups a second on an idle server)."""
    import asyncio
    import threading

    queue, pauses, sleep, here = app._queue, [], asyncio.sleep, {}
    assert len(queue) == 0

    async def pause(seconds, *args):
        if threading.get_ident() != here.get("thread"):  # another event loop of this process (an app a test launched)
            return await sleep(seconds, *args)
        pauses.append(seconds)
        queue.stopped = len(pauses) >= 5

    async def processing():
        here["thread"] = threading.get_ident()
        await queue.start_processing()

    monkeypatch.setattr(asyncio, "sleep", pause)
    try:
        run_async(processing())
    finally:
        queue.stopped = False
    assert pauses == [0.01] * 5


# ----------------------------------------------------------------------------------------------------------------
# Uploads cleaned


def test_the_app_deletes_cached_files(app):
    assert app.delete_cache == serving.DELETE_CACHE


def test_an_uploaded_file_is_gone_after_the_configured_age(tmp_path):
    import httpx

    with gr.Blocks(delete_cache=(1, 2)) as blocks:
        gr.File(label="upload")
    blocks.queue()
    serving.serve(blocks)
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        source = tmp_path / "corpus.txt"
        source.write_text("the cat sat on the mat\n" * 1000, encoding="utf-8")
        with open(source, "rb") as handle:
            response = httpx.post(f"{url}gradio_api/upload", files={"files": ("corpus.txt", handle)}, timeout=30)
        response.raise_for_status()
        [stored] = response.json()
        from pathlib import Path

        assert Path(stored).is_file() and Path(stored).read_text(encoding="utf-8") == source.read_text()
        deadline = time.monotonic() + 60  # a wait for the condition, not a timing assertion
        while Path(stored).exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not Path(stored).exists(), "the upload is still there well past its age of 2 s"
        assert stored not in blocks.upload_file_set
    finally:
        blocks.close()


def small_blocks() -> gr.Blocks:
    """Components of the kinds the app builds, with values, choices and extra HTML props."""
    with gr.Blocks() as blocks:
        with gr.Row():
            text = gr.Textbox("the cat", label="text", max_lines=3)
            layer = gr.Slider(1, 12, value=3, step=1, label="layer")
            gr.Dropdown([64, 128, 512], value=128, label="length")
        with gr.Tab("one"):
            plot, table = gr.Plot(), gr.Dataframe(headers=["a", "b"], value=[["x", 1]])
            gr.HTML("", html_template="<b>${stops.length}</b>", stops=[1, 2, 3])
            gr.Markdown("**bold**")
        gr.Button("go").click(lambda t, n: (None, [[t, n]]), [text, layer], [plot, table], api_name="go")
    return blocks


def test_a_new_session_makes_block_configs_on_demand_and_the_same_ones_as_gradio(app):
    """gradio_inside.lazy_session_configs (applied by serve()): a session builds no block's config until one is asked
    for; walking them all (Gradio's deep links: ``components``) gives exactly what Gradio's own __init__ made."""
    from gradio import state_holder

    init = state_holder.SessionState.__init__
    assert init.configs_on_demand
    fresh = SessionState(app)
    assert dict.__len__(fresh.config_values) == 0  # nothing made yet
    block = next(iter(app.blocks))
    fresh._update_value_in_config(block, "x")  # what Gradio does for a value changed in a session
    assert dict.__len__(fresh.config_values) == 1
    gradios = SessionState.__new__(SessionState)
    init.__wrapped__(gradios, app)  # Gradio's own, every config at once
    ours = list(SessionState(app).components)
    assert len(ours) == len(list(gradios.components)) > 900
    assert sorted(ours, key=lambda c: c["id"]) == sorted(gradios.components, key=lambda c: c["id"])


def test_remembered_signatures_build_the_same_config_and_read_each_class_once(monkeypatch):
    import inspect

    import gradio.blocks

    monkeypatch.setattr(gradio.blocks, "inspect", inspect)  # Gradio as shipped
    blocks = small_blocks()
    plain, plain_session = blocks.get_config_file(), dict(SessionState(blocks).config_values.items())  # every one
    remembered = gradio_inside._RememberedSignatures()
    monkeypatch.setattr(gradio.blocks, "inspect", remembered)
    assert blocks.get_config_file() == plain
    assert dict(SessionState(blocks).config_values.items()) == plain_session
    classes = {type(block) for block in blocks.blocks.values()}
    info = remembered.signature.cache_info()
    # each class's __init__ read once, though a config and a session copy read every block
    assert info.misses == len(classes)
    assert info.hits >= 2 * len(blocks.blocks) - len(classes)  # a config and a session, every block
    assert remembered.isclass(gr.Blocks) and remembered.Parameter is inspect.Parameter  # the rest is inspect's,
    assert remembered.iscoroutinefunction is inspect.iscoroutinefunction  # read as inspect's own names, not through us


def test_remembered_argument_specs_construct_the_same_components(monkeypatch):
    import inspect

    import gradio.component_meta

    monkeypatch.setattr(gradio.component_meta, "inspect", inspect)
    plain = small_blocks()
    remembered = gradio_inside._RememberedSignatures()
    monkeypatch.setattr(gradio.component_meta, "inspect", remembered)
    first = small_blocks()
    misses = remembered.getfullargspec.cache_info().misses
    second = small_blocks()
    assert remembered.getfullargspec.cache_info().misses == misses > 0  # the second build read no class again
    for built in (first, second):  # the same constructor arguments recorded for every component, in order
        assert [block.constructor_args for block in built.blocks.values()] == \
            [block.constructor_args for block in plain.blocks.values()]


def test_remembered_signatures_fall_back_for_unhashable_callables():
    class Unhashable:
        __hash__ = None

        def __call__(self, a, b=2):
            return a

    assert str(gradio_inside._RememberedSignatures().signature(Unhashable())) == "(a, b=2)"


def test_remembered_data_schemas_build_the_same_config_and_each_schema_once(monkeypatch):
    import gradio.components.base
    import pydantic

    component = gradio.components.base.Component
    shipped = getattr(component.api_info, "__wrapped__", component.api_info)  # Gradio's own, even after the app's

    def blocks() -> gr.Blocks:
        with gr.Blocks() as built:
            for _ in range(3):
                gr.Plot(), gr.Dataframe(headers=["a", "b"]), gr.File()
        return built

    def components(built: gr.Blocks) -> list[dict]:  # a config's components, less their ids
        return [{k: v for k, v in c.items() if k not in ("id", "key")} for c in built.get_config_file()["components"]]

    monkeypatch.setattr(component, "api_info", shipped)
    plain = components(blocks())
    made = []
    schema = pydantic.BaseModel.model_json_schema.__func__
    monkeypatch.setattr(pydantic.BaseModel, "model_json_schema",
                        classmethod(lambda cls, *a, **k: made.append(cls) or schema(cls, *a, **k)))
    gradio_inside.remember_data_schemas()
    gradio_inside.remember_data_schemas()  # a second call wraps nothing again
    assert component.api_info.__wrapped__ is shipped
    remembered = blocks()
    assert components(remembered) == plain and "api_info" in plain[0]
    assert sorted(model.__name__ for model in made) == ["DataframeData", "FileData", "PlotData"]  # 9 components
    tables = [block for block in remembered.blocks.values() if isinstance(block, gr.Dataframe)]
    assert tables[0].api_info() == tables[1].api_info() and tables[0].api_info() is not tables[1].api_info()


def test_the_app_reads_signatures_through_the_cache(app):
    import gradio.blocks
    import gradio.component_meta

    assert isinstance(gradio.blocks.inspect, gradio_inside._RememberedSignatures)
    assert isinstance(gradio.component_meta.inspect, gradio_inside._RememberedSignatures)
    assert gradio.components.base.Component.api_info.remembers_schemas
