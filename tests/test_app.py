"""The app shell: CLI flags, tab order, and a live launch driven through gradio_client."""
import re
import sys

import pytest

import app


def test_tabs_are_in_the_historical_order():
    """The Overview first; then the tabs in the order of the history they teach (each one's first step on the
    timeline, its demo module's HISTORY); the tasks built on BERT, which add no step of their own, come last."""
    from demo.ladder import overview

    assert app.TABS[0] is overview
    with_steps = [i for i, module in enumerate(app.TABS) if getattr(module, "HISTORY", None)]
    firsts = [min(place for place, *_ in app.TABS[i].HISTORY) for i in with_steps]
    assert len(firsts) >= 6 and firsts == sorted(firsts)
    assert with_steps == list(range(1, len(with_steps) + 1))  # no stepless tab between two steps of the history
    assert len({module.TITLE for module in app.TABS}) == len(app.TABS)


def test_cli_defaults_are_safe():
    args = app.parse_args([])
    assert args.share is False and args.offline is False and args.device == "auto"
    assert args.host == "127.0.0.1"
    args = app.parse_args(["--offline", "--device", "cpu", "--port", "9000", "--host", "0.0.0.0", "--share"])
    assert (args.offline, args.device, args.port, args.host, args.share) == (True, "cpu", 9000, "0.0.0.0", True)
    with pytest.raises(SystemExit):
        app.parse_args(["--device", "tpu"])


EVENT_METHODS = {"click", "change", "submit", "input", "select", "upload", "release", "then", "success",
                 "blur", "focus", "clear", "tab_select"}


def test_every_event_is_wired_with_an_explicit_api_name():
    """Gradio would silently name an endpoint after its function; we want every name chosen on purpose."""
    import ast
    import pathlib

    missing = []
    paths = [pathlib.Path(app.__file__), *sorted(pathlib.Path(app.__file__).parent.joinpath("demo").rglob("*.py"))]
    assert len(paths) >= 55, f"the scan read {len(paths)} files: demo/'s packages were not walked"
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in EVENT_METHODS and node.args
                    and not any(k.arg == "api_name" for k in node.keywords)):
                missing.append(f"{path.name}:{node.lineno} .{node.func.attr}(")
    assert not missing, f"events without api_name: {missing}"
    deps = [dep for dep in app.build_app().fns.values() if dep.api_name]
    names = [dep.api_name for dep in deps]
    assert len(names) == len(set(names)), "api names must be unique across tabs"
    # Gradio makes a repeated api_name unique by appending _1, _2…: a name of ours must never be renamed that way
    # (the Transformer tab's "use the encoder's config" once took the name of its view's preset bar).
    ours = {dep.api_name for dep in deps if dep.fn is not None and dep.fn.__module__.split(".")[0] in ("demo", "app")}
    renamed = [name for name in ours if re.fullmatch(r".+_\d+", name) and name.rsplit("_", 1)[0] in names]
    assert not renamed, renamed


def test_the_page_stays_light_for_the_browser():
    """Gradio's front end pays for every component and event when the page opens: it matches each component
    against each event (find_attached_events) and mounts every component. One Gradio button and event per preset
    made it 1,360 components and 336 events (page open to the Overview's content: 5.5 s); a preset bar and a lesson
    are one gr.HTML and one event each (demo/kit/presets.py, demo/kit/lessons.py). The BERT tab's "Retrain the char-BERT"
    sub-tab (issue #34) added 14 components and 3 events."""
    config = app.build_app().get_config_file()
    # +37: issue #35's three "Why" views; +45: issue #35's encoder views (masked LM model picker, NER, QA, classify);
    # +8: issue #36's char-BERT sampling; +19: issue #51's "Your turn" (one gr.HTML per tab, drawn by its script,
    # and the 9 parameters and results of its three gr.api endpoints, which are in no layout); +57: issue #52's
    # encoder–decoder (three sub-tabs; the step-by-step view has 10 inputs and 5 results); +9: one deep-link box per
    # tab (a link's event fills its own tab's views, not the whole app's: demo/kit/presets.py); +10: issue #54's kit
    # desk per tab (one hidden gr.HTML that takes every view's "Add to slides" and "Link to this view")
    assert len(config["components"]) < 1100, len(config["components"])
    # +10: the same; +1: Masking's download step (#33); +13: issue #35's encoder views (download steps, opens, presets)
    # +3: issue #51's endpoints (checks_list, check_setup, check_answer: no trigger in the page); +12: issue #52's
    # three views (open and preset each, a button each: the translation's two steps, download and decode); +9: a
    # deep-link event per tab; +20: issue #54's snapshot (one per tab, not one per view: 50) and a deep link's first
    # answer (its tab and sub-tab, selected before its view computes), per tab
    assert len(config["dependencies"]) < 312, len(config["dependencies"])


def test_every_tab_bar_holds_only_tabs():
    """Gradio's front end numbers a gr.Tabs' tabs by their place among all its children: a component left directly
    in a gr.Tabs (a view's gr.State, built just after its `with gr.Tab`) shifted every later tab by one, and
    selecting a tab then wrote its label over a neighbour's (seen in Chromium: two "Transformer-base numbers")."""
    import gradio as gr

    blocks = app.build_app()
    strays = [f"{type(child).__name__} in the tab bar holding {[str(t.label) for t in tabs.children][:2]}"
              for tabs in blocks.blocks.values() if isinstance(tabs, gr.Tabs)
              for child in tabs.children if not isinstance(child, gr.Tab)]
    assert sum(isinstance(b, gr.Tabs) for b in blocks.blocks.values()) >= 9
    assert not strays, strays
    # and each tab bar wraps onto a second line instead of folding tabs into a "⋯" menu: on a phone each tab and
    # sub-tab is one tap (issue #31)
    folded = [[str(t.label) for t in tabs.children][:2] for tabs in blocks.blocks.values()
              if isinstance(tabs, gr.Tabs) and tabs.overflow_behavior != "wrap"]
    assert not folded, folded


def test_events_keep_the_browsers_loading_statuses_small():
    """Gradio's front end keeps a loading status for every progress target (an event's outputs unless
    ``show_progress_on`` says otherwise) of every event that has run, and updates them all, each by a walk of the
    layout, on every status message of any event. The page-load event used to target all 344 components of the
    views it can fill, including the gr.Tabs (whose every value is copied on each update): a tab switch then took
    0.5-1 s of the browser's main thread. Each view's events now target its first result; no event a layout."""
    import gradio as gr

    blocks = app.build_app()

    def targets(fn) -> list:
        chosen = fn.show_progress_on or fn.outputs
        return list(chosen) if isinstance(chosen, (list, tuple)) else [chosen]

    backend = [fn for fn in blocks.fns.values() if fn.fn is not None]
    on_layout = [fn.api_name for fn in backend  # a gr.HTML may hold children, but is one value, not a layout
                 if any(isinstance(b, gr.blocks.BlockContext) and not isinstance(b, gr.HTML) for b in targets(fn))]
    assert not on_layout, on_layout
    registry = blocks.preset_registry
    views = [view for entry in registry.tabs.values() for view in entry.views]
    by_name = {fn.api_name: fn for fn in backend}
    assert "app_open" not in by_name and registry.opening(next(iter(registry.tabs))) == []  # the path is drawn
    firsts = {id(view.outputs[0]) for view in views}
    for tab_id, entry in registry.tabs.items():  # a link fills its own tab's views, and only those
        if not entry.views:
            continue
        link = by_name[f"{tab_id}_deep_link"]
        mine = {id(c) for view in entry.views for c in view.components()}
        extra = [c for c in link.outputs if id(c) not in mine]  # and the app's tab bar, to select the tab
        assert mine <= {id(c) for c in link.outputs} and len(extra) == 1 and isinstance(extra[0], gr.Tabs), tab_id
        assert {id(block) for block in targets(link)} <= firsts  # no new loading status
    bars = []
    for view in views:
        if view.where is not None:
            assert targets(by_name[f"{view.api_prefix}_open"]) == [view.outputs[0]]
        bar = by_name.get(f"{view.api_prefix}_preset")  # a view may show its presets only as lesson steps
        if bar is not None:
            bars.append(bar)
            assert targets(bar) == [view.outputs[0]], view.key
    assert len(bars) > 35  # one preset bar per view, not one event per preset
    for tab_id, entry in registry.tabs.items():  # a lesson shows progress on the first result of each view it runs
        lesson = by_name[f"{tab_id}_lesson"]
        assert set(map(id, targets(lesson))) <= {id(view.outputs[0]) for view in entry.views}, tab_id
    union = {id(block) for fn in backend for block in targets(fn)}
    assert len(union) < 300  # at most this many statuses however many events a learner runs (was 415)


def test_launch_and_call_an_endpoint_through_gradio_client():
    from gradio_client import Client

    from demo.server import first_page

    blocks = app.build_app()
    blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=None, quiet=True,
                  app_kwargs={"middleware": first_page.middleware(blocks.first_page)})  # as app.py launches it
    try:
        client = Client(blocks.local_url, verbose=False)
        status = client.predict(api_name="/app_status")
        assert "device: **cpu**" in status or "device: **cuda" in status
        assert "network:" in status
    finally:
        blocks.close()


BUILD_WITHOUT_TORCH = r"""
import json, sys
import app
blocks = app.build_app()
built = "torch" in sys.modules
counts = next(dep for dep in blocks.fns.values() if dep.api_name == "ngram_counts")
answer = counts.fn(*[component.value for component in counts.inputs])  # the tab's default inputs
print(json.dumps({"after_build": built, "after_answer": "torch" in sys.modules, "formula": answer[1]}))
"""


def test_building_the_app_and_a_first_ngram_answer_do_not_import_torch():
    """Issue #15/#22: torch is ~1.5 s of a cold start, and neither the page nor the n-gram counts need it: the tabs
    hold the torch-backed core modules lazily (core/loading/lazy.py). A fresh interpreter, since this one has torch."""
    import json
    import subprocess
    import sys

    from tests.live_app import ROOT, app_env

    out = subprocess.run([sys.executable, "-c", BUILD_WITHOUT_TORCH], cwd=ROOT, env=app_env(), capture_output=True,
                         text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["after_build"] is False, "building the tabs imported torch: a demo module read a torch-backed core module"
    assert result["after_answer"] is False
    assert "2 / 3 = **0.6667**" in result["formula"]  # P(词性 | 的) in the seed's toy corpus: 的 词性 twice in 3 的


def test_no_plot_repeats_its_title_in_a_gradio_label():
    """Every figure carries its own title (demo/kit/figures.py); a Gradio label above it ("Plot", or a second title)
    would show in every screenshot a teacher takes. The label stays, hidden, for screen readers."""
    import gradio as gr

    plots = [b for b in app.build_app().blocks.values() if isinstance(b, gr.Plot)]
    assert len(plots) > 50
    shown = [str(plot.label) for plot in plots if plot.show_label is not False]
    assert not shown, shown


BLAS_THREADS = """
import json
import app  # noqa: F401 - sets numpy's BLAS threads before numpy loads
import numpy  # noqa: F401
from threadpoolctl import threadpool_info
print(json.dumps([pool["num_threads"] for pool in threadpool_info() if pool["internal_api"] == "openblas"]))
"""


@pytest.mark.parametrize("operator_set, expected", [(None, 1), ("2", 2)])
def test_numpy_products_keep_to_one_thread_unless_the_operator_chose(operator_set, expected):
    """Issue #38: OpenBLAS threads per product fought for a loaded server's cores (a multi-head click: 68 ms of CPU
    instead of 25). The app asks for one thread per product; an OPENBLAS_NUM_THREADS set by whoever starts it wins."""
    import json
    import subprocess
    import sys

    from tests.live_app import ROOT, app_env

    out = subprocess.run([sys.executable, "-c", BLAS_THREADS], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env=app_env(OPENBLAS_NUM_THREADS=operator_set, OMP_NUM_THREADS=None), check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [expected]


COLLECTOR = r"""
import gc, json, runpy, sys
import app
imported = gc.isenabled()
sys.argv = ["app.py", "--help"]  # runs app.py as the app would run, and ends in parse_args, before the build
try:
    runpy.run_path("app.py", run_name="__main__")
except SystemExit:
    pass
started = gc.isenabled()
app.settle_collector()
print(json.dumps({"imported": imported, "started": started, "settled": gc.isenabled(),
                  "frozen": gc.get_freeze_count()}))
"""


def test_the_start_runs_without_the_cyclic_collector_until_the_app_is_built():
    """Issue #38 §4: the collector walked the start's ~400,000 objects ~1,000 times. Run as the app, app.py turns it
    off; settle_collector freezes what the start made and turns it back on. A test
    process that only imports app keeps its collector. A fresh interpreter, since freezing this one would keep its
    garbage for good."""
    import json
    import subprocess

    from tests.live_app import ROOT, app_env

    out = subprocess.run([sys.executable, "-c", COLLECTOR], cwd=ROOT, env=app_env(), capture_output=True, text=True,
                         timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["imported"] is True and result["started"] is False and result["settled"] is True
    assert result["frozen"] > 100_000  # Gradio, plotly and our modules: out of every later collection


IMPORTED_ONLY = r"""
import ctypes, gc, json
asked = []


class Spy(ctypes.CDLL):  # counts the app's mallopt calls (steady_malloc)
    def __getattr__(self, name):
        if name == "mallopt":
            asked.append(name)
        return super().__getattr__(name)


ctypes.CDLL = Spy
import app
from core.loading import hub
from demo.server import downloads
imported = {"collector": gc.isenabled(), "mallopt": len(asked), "download gate": hub._gate is not None}
app.prepare_process()
prepared = {"collector": gc.isenabled(), "mallopt": len(asked)}
gc.enable()
app.build_app()
print(json.dumps({"imported": imported, "prepared": prepared,
                  "gate after build": hub._gate == downloads._slot_for_this_event}))
"""


def test_importing_changes_nothing_and_the_start_sets_the_process_up_by_explicit_calls():
    """Issue #50: importing app.py used to call mallopt, and importing demo/server/downloads.py changed how core/loading/hub.py
    downloads. Now importing changes nothing; app.prepare_process (run as the app) turns the collector off and calls
    mallopt, and app.build_app installs the download slots as core/loading/hub.py's gate. A fresh interpreter, since the
    collector and malloc settings are the whole process's."""
    import json
    import subprocess

    from tests.live_app import ROOT, app_env

    out = subprocess.run([sys.executable, "-c", IMPORTED_ONLY], cwd=ROOT, env=app_env(), capture_output=True,
                         text=True, timeout=300, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["imported"] == {"collector": True, "mallopt": 0, "download gate": False}
    expected_mallopt = 1 if sys.platform.startswith("linux") else 0
    assert result["prepared"] == {"collector": False, "mallopt": expected_mallopt}
    assert result["gate after build"] is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_freed_heap_pages_go_back_to_the_os():
    """Issue #38 §5: pages freed between live buffers stay in RSS until the heap is trimmed; the server trims every
    TRIM_SECONDS (app.return_freed_memory). 100 MB in 256 kB buffers (under steady_malloc's 1 MB mmap threshold, so
    from the heap); every 10th stays alive and pins the freed space between them."""
    import os

    from benchmarks.soak import rss_mb

    trim = app.heap_trimmer()
    assert trim is not None
    buffers = [bytearray(256_000) for _ in range(400)]  # bytearray(n) writes its n zeros: every page is resident
    kept = buffers[9::10]
    del buffers
    before = rss_mb(os.getpid())
    trim(0)
    after = rss_mb(os.getpid())
    assert before - after > 50, (before, after)  # ~88 MB of the 100 were freed between kept buffers
    assert sum(len(b) for b in kept) == 40 * 256_000  # the live buffers are untouched
