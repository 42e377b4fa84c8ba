"""Every place the app reaches inside Gradio (all in demo/server/, tests/test_import_graph.py checks that), checked
against the installed Gradio: when an upgrade renames, moves or reshapes one of them, the test that fails names it
and the module that relies on it. Pinned: requirements.txt. Issue #50.

Each entry: what is used, where, and a check that reads Gradio's own objects (nothing is patched here).
"""
from __future__ import annotations

import inspect
from pathlib import Path

import gradio
import gradio as gr
import pytest

PINNED = next(line.split("==")[1].split()[0] for line in
              (Path(__file__).resolve().parents[2] / "requirements.txt").read_text(encoding="utf-8").splitlines()
              if line.startswith("gradio=="))


def params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def _queue():
    with gr.Blocks() as app:
        gr.Button().click(lambda: None, api_name="probe")
    app.queue()
    return app._queue


def check_inspect_modules():
    import gradio.blocks
    import gradio.component_meta

    for module in (gradio.blocks, gradio.component_meta):
        assert hasattr(module, "inspect"), f"{module.__name__} no longer imports inspect as a module global"


def check_api_info():
    import gradio.components.base

    component = gradio.components.base.Component
    assert callable(getattr(component, "api_info", None)), "Component.api_info is gone"
    box = gr.Textbox(render=False)
    assert hasattr(box, "_api_info_cache") and hasattr(box, "data_model"), \
        "a component no longer has _api_info_cache / data_model"


def check_preprocess_and_process_api():
    assert params(gr.Blocks.preprocess_data)[:5] == ["self", "block_fn", "inputs", "state", "explicit_call"], \
        "Blocks.preprocess_data(block_fn, inputs, state, explicit_call) changed"
    assert "request" in params(gr.Blocks.process_api), "Blocks.process_api no longer takes request"


def check_queue():
    queue = _queue()
    assert params(queue.push)[:3] == ["body", "request", "username"], "Queue.push(body, request, username) changed"
    for name in ("event_queue_per_concurrency_id", "active_jobs"):
        assert hasattr(queue, name), f"Queue.{name} is gone"
    from gradio.queueing import Event

    source = inspect.getsource(Event.__init__)
    for name in ("self.session_hash", "self.request"):
        assert name in source, f"a queued Event no longer has {name.split('.')[1]}"
    from gradio.queueing import Queue

    assert 0 < queue.sleep_when_free <= 0.01, "Queue.sleep_when_free is gone or no longer a short pause in seconds"
    assert "await asyncio.sleep(self.sleep_when_free)" in inspect.getsource(Queue.start_processing), \
        "Queue.start_processing no longer pauses for self.sleep_when_free while it has no work"


def check_per_block_api_info():
    box = gr.Dropdown(choices=[1, 2], render=False)
    box.api_info = lambda: {"type": "integer"}
    assert box.api_info_as_input() == box.api_info_as_output() == {"type": "integer"}, \
        "Component.api_info_as_input/api_info_as_output no longer read the block's api_info"


def check_fns():
    with gr.Blocks() as app:
        gr.Button().click(lambda: None, api_name="probe", concurrency_id="probe")
    fn = app.fns.get(0)
    assert fn is not None and fn.concurrency_id == "probe", "Blocks.fns[fn_index].concurrency_id changed"


def check_one_language_per_page():
    import gradio.routes

    assert "translations_dict" in dir(gr.I18n), "gr.I18n.translations_dict is gone"
    source = inspect.getsource(gradio.routes.App.create_app)
    assert "safe_deepcopy(page_components)" in source and "safe_deepcopy(source_config)" in source, \
        "the page and /config routes no longer deep-copy the app's config for each request"
    words = {"en": "a", "zh": "b"}
    assert gr.HTML("", words=words, render=False).props["words"] is words, "a gr.HTML no longer keeps its props as given"


def check_plotly_chunk():
    from demo.server.gradio_inside import plotly_chunk

    assert plotly_chunk(), "Gradio's front end no longer ships one PlotlyPlot-*.js"


def check_plot_data():
    import plotly.graph_objects as go

    from demo.server.gradio_inside import plot_json

    held = gr.Plot().postprocess(go.Figure(go.Bar(x=["a"], y=[1])))
    assert isinstance(getattr(held, "plot", None), str), "gr.Plot's postprocessed output no longer holds .plot"
    assert plot_json(held) == held.plot and '"type":"bar"' in held.plot.replace(" ", "")
    assert plot_json(go.Figure()) is None and plot_json("text") is None


def check_session_state():
    import re

    from gradio import state_holder

    init = state_holder.SessionState.__init__
    original = getattr(init, "__wrapped__", init)  # gradio_inside.lazy_session_configs keeps Gradio's own here
    assert params(original) == ["self", "blocks"], "SessionState.__init__(blocks) changed"
    read = set(re.findall(r"(?<![\w.])blocks\.(\w+)", inspect.getsource(original)))
    assert read == {"default_config", "blocks"}, f"SessionState.__init__ reads other parts of the app: {read}"
    assert "config_values" in inspect.getsource(state_holder.SessionState.components.fget), \
        "SessionState.components no longer reads config_values"


USES = [  # (what, where in demo/server/, the check)
    ("gradio.blocks.inspect, gradio.component_meta.inspect (replaced)", "gradio_inside.remember_signatures",
     check_inspect_modules),
    ("gradio.components.base.Component.api_info (replaced), Component._api_info_cache", "gradio_inside.remember_data_schemas",
     check_api_info),
    ("gradio.state_holder.SessionState.__init__ (replaced), .config_values, .components",
     "gradio_inside.lazy_session_configs", check_session_state),
    ("Blocks.preprocess_data, Blocks.process_api (replaced per app)", "serving.guard_api", check_preprocess_and_process_api),
    ("Blocks._queue, Queue.push (replaced), event_queue_per_concurrency_id, active_jobs, Event.session_hash, "
     "Event.request, Queue.sleep_when_free (set)", "serving.admit, serving.quiet_queue", check_queue),
    ("Component.api_info (replaced per block)", "serving.typed_choices",
     check_per_block_api_info),
    ("Blocks.fns", "serving._is_training, serving.known_calls", check_fns),
    ("gr.I18n.translations_dict; the page and /config deep-copy the app's config per request; gr.HTML keeps its props",
     "first_page.OneLanguage, gradio_inside.PerLanguage", check_one_language_per_page),
    ("templates/frontend/assets/PlotlyPlot-*.js", "gradio_inside.plotly_chunk", check_plotly_chunk),
    ("gr.Plot().postprocess(figure).plot", "gradio_inside.plot_json", check_plot_data),
]


def test_the_pinned_gradio_is_installed():
    assert gradio.__version__ == PINNED, (f"Gradio {gradio.__version__} is installed, {PINNED} pinned: run this file "
                                          "and fix each use it names before changing the pin")


@pytest.mark.parametrize("what, where, check", USES, ids=[use[1] for use in USES])
def test_each_use_of_gradios_insides_still_holds(what, where, check):
    try:
        check()
    except (AssertionError, AttributeError, ImportError, TypeError, ValueError) as exc:
        pytest.fail(f"Gradio {gradio.__version__} changed {what}, which demo/server/{where} relies on: {exc}")


def test_every_use_in_the_server_package_is_listed():
    """The list above covers every Gradio submodule demo/server/ imports, and every name it imports from one (a new
    one must be added)."""
    import ast
    import pkgutil

    listed = " ".join(what for what, _, _ in USES)
    submodules = {module.name for module in pkgutil.iter_modules(gradio.__path__)}
    server = Path(__file__).resolve().parents[2] / "demo" / "server"
    imported, files = set(), 0
    for file in server.glob("*.py"):
        files += 1
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("gradio.")}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gradio."):
                imported |= {node.module} | {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module == "gradio":
                imported |= {f"gradio.{alias.name}" for alias in node.names if alias.name in submodules}
    assert files >= 7 and len(imported) >= 3, (files, imported)  # a scan that read nothing would pass vacuously
    assert [name for name in sorted(imported) if name not in listed] == []


def test_a_label_gr_i18n_translates_is_told_from_a_plain_string():
    """gradio_inside.is_translation reads the class of what the public gr.I18n(...)(key) returns: no import of it."""
    from demo.server import gradio_inside

    label = gr.I18n(en={"a": "b"})("a")
    assert gradio_inside.is_translation(label) and label.key == "a"
    assert not gradio_inside.is_translation("a") and not gradio_inside.is_translation(None)
