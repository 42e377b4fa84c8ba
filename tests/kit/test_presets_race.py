"""demo/kit/presets.py: a default computed on open never overwrites a result the learner asked for (issue #18).

The race, as it happens under load: the learner opens a tab (its default starts computing), then clicks a preset,
whose result arrives first; the default used to arrive later and overwrite it."""
import threading
from types import SimpleNamespace

import gradio as gr
import pytest

from demo.kit import preset_records, presets
from core.loading import resolve


def session(name: str):
    return SimpleNamespace(session_hash=name, headers={}, query_params={})


@pytest.fixture
def slow_view():
    """A view whose default blocks until released; its other preset returns at once."""
    release, started = threading.Event(), threading.Event()

    def compute(x):
        if x == "default":
            started.set()
            assert release.wait(10)
        return f"result of {x}"

    with gr.Blocks():
        box, out = gr.Textbox(), gr.Textbox()
        registry = presets.Registry()
        with gr.Tabs(), gr.Tab("t", id="racetab") as tab, registry.tab("racetab", tab):
            view = presets.View("racetab", "v", [box], [out], compute,
                                [presets.Preset("default", "D", ("default",), "§1"),
                                 presets.Preset("asked", "A", ("asked",), "§1")])
    return SimpleNamespace(view=view, registry=registry, out=out, release=release, started=started)


def test_a_preset_clicked_while_the_default_computes_survives_the_late_default(slow_view):
    s, request = slow_view, session("race-1")
    result = {}
    opening = threading.Thread(target=lambda: result.update(opened=s.registry.open_tab("racetab", [False], request)))
    opening.start()
    assert s.started.wait(10)
    asked = s.view._run_clicked("asked", False, request)  # the preset's event finishes while the default still runs
    assert asked[s.out] == "result of asked"
    s.release.set()
    opening.join(10)
    assert s.out not in result["opened"], "the late default overwrote the preset's result"
    assert result["opened"][s.view.done] is True


def test_a_default_starting_after_the_preset_computes_nothing(slow_view):
    s, request = slow_view, session("race-2")
    s.view._run_clicked("asked", False, request)
    s.release.set()
    opened = s.registry.open_tab("racetab", [False], request)  # the open event was queued behind the preset
    assert s.out not in opened and not s.started.is_set()


def test_other_sessions_still_get_their_default(slow_view):
    s = slow_view
    s.view._run_clicked("asked", False, session("race-3"))
    s.release.set()
    assert s.registry.open_tab("racetab", [False], session("race-4"))[s.out] == "result of default"


def test_the_tab_open_event_receives_the_request():
    """Gradio hands gr.Request only to parameters before *args: the open event must declare it first, or it never
    knows the session (nor the learner's language)."""
    import app

    resolve.set_offline(True)
    blocks = app.build_app()
    dep = next(d for d in blocks.fns.values() if d.api_name == "ngram_open")
    from gradio.helpers import special_args

    inputs, *_ = special_args(dep.fn, [False], request=session("r"))
    assert inputs[0].session_hash == "r"


def test_a_preset_is_computed_once_per_process_and_language():
    """First paint: a default does not depend on the learner, so the second session's open reuses the first's."""
    from core.text.i18n import using_language

    calls = []

    def compute(x):
        calls.append(x)
        return f"{x} computed"

    with gr.Blocks():
        box, out = gr.Textbox(), gr.Textbox()
        view = presets.View("cachetab", "v", [box], [out], compute, [presets.Preset("only", "O", ("x",), "§1")])
    first = view.run_default(session("cache-1"))
    second = view.run_default(session("cache-2"))
    assert first[out] == second[out] == "x computed" and calls == ["x"]
    with using_language("zh"):  # results hold translated text: another language is computed on its own
        view.run_default(session("cache-3"))
    assert calls == ["x", "x"]


def test_a_failing_preset_is_not_remembered():
    attempts = []

    def compute(x):
        attempts.append(x)
        if len(attempts) == 1:
            raise RuntimeError("model still loading")
        return "ok"

    with gr.Blocks():
        box, out = gr.Textbox(), gr.Textbox()
        view = presets.View("failtab", "v", [box], [out], compute, [presets.Preset("only", "O", ("x",), "§1")])
    with pytest.raises(RuntimeError):
        view.run()
    assert view.run()[out] == "ok" and len(attempts) == 2


@pytest.fixture
def counting_view():
    calls = []

    def compute(x):
        calls.append(x)
        if x == "broken" and calls.count(x) == 1:
            raise RuntimeError("model still loading")
        return f"{x} computed"

    with gr.Blocks():
        box, out = gr.Textbox(), gr.Textbox()
        registry = presets.Registry()
        with gr.Tabs(), gr.Tab("t", id="opentab") as tab, registry.tab("opentab", tab):
            view = presets.View("opentab", "v", [box], [out], compute, [presets.Preset("only", "O", ("x",), "§1")])
            broken = presets.View("opentab", "w", [box], [out], compute,
                                  [presets.Preset("broken", "B", ("broken",), "§1")])
    return SimpleNamespace(view=view, broken=broken, registry=registry, out=out, calls=calls)


def test_one_click_that_fires_two_open_events_draws_the_default_once(counting_view):
    """Opening a tab fires the tab's select and its first sub-tab's; opening the page, demo.load and the first
    tab's select. Both events leave with ``done`` False: the second must not send the same figures again."""
    s, request = counting_view, session("open-1")
    first = s.view._open(False, request)
    second = s.view._open(False, request)
    assert first[s.out] == "x computed" and second == {s.view.done: True}
    assert s.view._open(False, session("open-2"))[s.out] == "x computed"  # another learner gets the default
    assert s.calls == ["x"]  # and from the per-process cache


def test_an_open_claim_expires_so_a_lost_answer_is_sent_again(counting_view, monkeypatch):
    s, request = counting_view, session("open-3")
    assert s.out in s.view._open(False, request)
    monkeypatch.setattr(preset_records.OPENED, "claim_seconds", 0.0)  # later than the claim: the page still says it saw nothing
    assert s.view._open(False, request)[s.out] == "x computed"
    assert s.view._open(True, request) == {s.view.done: True}  # a page that saw it is never sent it again


def test_a_failed_open_does_not_claim_the_view(counting_view):
    s, request = counting_view, session("open-4")
    with pytest.raises(RuntimeError):
        s.broken.run_default(request)
    assert s.broken._open(False, request)[s.out] == "broken computed"  # the next open tries again at once
