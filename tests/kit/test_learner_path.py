"""Issue #31 on the built app, without a browser: every lesson step and every preset link selects the sub-tab where
its results live, through an event that lists that sub-tab's gr.Tabs as an output; a preset's checkpoint is not
overwritten by another view's default. tests/e2e/test_learner_path_*.py click the same path in Chromium."""
import gradio as gr
import pytest

import app
from tests import app_events
from demo.kit import preset_records, presets
from core.loading import resolve


@pytest.fixture(scope="module")
def built():
    resolve.set_offline(True)
    blocks = app.build_app()
    return blocks, blocks.preset_registry


def event(blocks, api_name: str):
    return next(fn for fn in blocks.fns.values() if fn.api_name == api_name)


def sub_tab_ids(tabs: gr.Tabs) -> list:
    return [child.id for child in tabs.children if isinstance(child, gr.Tab)]


def test_every_sub_tab_view_is_selected_through_an_output_of_its_lesson_and_the_deep_link(built, monkeypatch):
    """Which sub-tab a preset selects, for every preset: the routing only. Its results are left out (117 s of models
    on two cores); tests/e2e/test_learner_path_browser.py opens every preset link, results and all, in both languages.
    """
    blocks, reg = built
    monkeypatch.setattr(presets, "preset_result",
                        lambda view, preset: (preset.resolved(), None if len(view.outputs) == 1 else
                                              (None,) * len(view.outputs)))
    links = app_events.deep_links(blocks)
    checked = 0
    for tab_id, entry in reg.tabs.items():
        for view in entry.views:
            if view.where is None:
                continue
            # The gr.Tabs the events return must be the one Gradio serves: the view's sub-tab is one of its children
            assert isinstance(view.switcher, gr.Tabs) and view.where in view.switcher.children, (tab_id, view.key)
            assert view.switcher in links[tab_id].outputs
            for slug, preset in view.presets.items():
                if preset.values is None:
                    continue
                shown = view.run(slug, select=True)[view.switcher]
                assert shown.selected in sub_tab_ids(view.switcher), (tab_id, slug, shown.selected)
                assert shown.selected == (preset.shows or view.where.id)
                checked += 1
    assert checked >= 100


def test_every_lesson_step_switches_to_the_sub_tab_of_its_result(built):
    blocks, _ = built
    boxes = [block for block in blocks.blocks.values() if getattr(block, "lesson_steps", None)]
    assert len(boxes) == len(app.TABS)  # one per tab
    switching = 0
    for box in boxes:
        tab_id = box.lesson_steps[0].view.tab
        lesson = event(blocks, f"{tab_id}_lesson")
        for number, step in enumerate(box.lesson_steps, 1):
            updates = lesson.fn(str(number))
            if step.view.switcher is None:  # a tab without sub-tabs (QA)
                continue
            assert step.view.switcher in lesson.outputs
            selected = updates[step.view.switcher].selected
            assert selected == (step.view.presets[step.slug].shows or step.view.where.id), (tab_id, number)
            switching += 1
    assert switching >= 25


def test_the_n_gram_lesson_opens_the_sub_tab_each_step_is_about(built):
    blocks, _ = built
    lesson = event(blocks, "ngram_lesson")
    switcher = next(o for o in lesson.outputs if isinstance(o, gr.Tabs))
    assert [lesson.fn(str(n))[switcher].selected for n in (1, 2, 3)] == ["counts", "counts", "score"]


def test_a_sub_tab_outside_an_explicit_tabs_is_refused_when_the_app_is_built():
    # Gradio would wrap it in a gr.Tabs of its own only when the tab closes, after the lesson's events are wired:
    # "Returned component Tabs not specified as output" on 9 of 34 steps.
    with gr.Blocks(), gr.Tabs(), gr.Tab("outer", id="outer"), gr.Tab("inner", id="inner") as inner:
        box = gr.Textbox()
        with pytest.raises(ValueError, match="explicit `with gr.Tabs"):
            presets.View("t", "v", [box], [box], lambda x: x, [presets.Preset("p", "P", ("x",))], where=inner)


class Session:
    session_hash = "learner-31"
    headers = {"accept-language": "en-US"}
    query_params: dict = {}
    cookies: dict = {}


def test_a_presets_checkpoint_wins_over_the_tabs_default(built):
    _, reg = built
    preset_records.ASKED.clear()
    preset_records.OPENED.clear()
    request = Session()
    compare = reg.find("mlm", "gpt-vs-bert-zh")
    fill = next(v for v in reg.tabs["mlm"].views if v.key == "fill")
    picker = compare.inputs[0]
    assert picker is fill.inputs[0]  # the tab's one checkpoint picker
    linked = reg.deep_link({"tab": "mlm", "preset": "gpt-vs-bert-zh"}, "overview", request)
    assert linked[picker] == "bert-base-chinese"
    # The link selects the MLM tab, whose open event then runs: the Fill view's default must not reset the picker.
    opening = reg.opening("mlm")
    opened = reg.open_tab("mlm", [False] * len(opening), request)
    assert picker not in opened and opened[fill.done] is False
    # Opening the Fill sub-tab itself then shows its own default, checkpoint included.
    assert fill.run_default(request)[picker] == "bert-base-uncased"
    preset_records.ASKED.clear()
    preset_records.OPENED.clear()
