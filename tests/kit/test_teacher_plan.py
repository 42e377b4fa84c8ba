"""The teacher's kit in this process, on the built app (demo/kit/teacher.py): a tab's one-click lesson deck plan (one
slide per "Show me" step, each with its step's link and the first figure or table its preset shows) and a view's
snapshot through the tab's own ``<tab>_snapshot`` event. tests/e2e/test_deck_libreoffice.py builds the same decks in
Chromium and opens them in LibreOffice; this module runs in pytest's own process, so coverage.py sees the code."""
from __future__ import annotations

import json

import gradio as gr
import plotly.graph_objects as go
import pytest
from gradio.state_holder import SessionState
from starlette.applications import Starlette
from starlette.testclient import TestClient

from core.loading import resolve
from core.text.i18n import text
from demo.kit import teacher
from tests.conftest import run_async


@pytest.fixture(scope="module")
def built():
    import app

    resolve.set_offline(True)
    return app.build_app()


@pytest.mark.slow  # computes the lesson's presets; the fast lane keeps this module's refusals
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_lesson_plan_has_one_slide_per_step_with_its_link_and_what_it_shows(built, lang):
    steps = [step for box in teacher._lesson_boxes("ngram") for step in box.lesson_steps]
    assert len(steps) >= 3
    answer = TestClient(Starlette(routes=teacher.ROUTES)).get(f"{teacher.PLAN_PATH}?kind=lesson&tab=ngram&lang={lang}")
    assert answer.status_code == 200
    plan = answer.json()
    assert plan["title"] == f"{text('tabs.ngram', lang)}: {text('presets.lesson_title', lang)}"
    assert [slide["link"] for slide in plan["slides"]] == [f"?tab=ngram&preset={step.slug}&lang={lang}"
                                                          for step in steps]
    for slide, step in zip(plan["slides"], steps):
        assert slide["title"] and slide["caption"] and slide["notes"]
        assert text("deck.notes_question", lang, value="").strip(" :：") in slide["notes"]
        if "figure" in slide:
            assert go.Figure(json.loads(slide["figure"])).data, step.slug  # plotly reads it back, with traces
        else:
            header, *rows = slide["table"]
            assert rows and all(len(row) == len(header) for row in rows), step.slug


@pytest.mark.parametrize("query", ["kind=lesson&tab=nowhere&lang=zh", "kind=lesson&tab=../../etc&lang=zh",
                                   "kind=everything&tab=ngram&lang=zh"])
def test_a_plan_for_an_unknown_tab_or_kind_is_refused_in_the_asked_language(built, query):
    answer = TestClient(Starlette(routes=teacher.ROUTES)).get(f"{teacher.PLAN_PATH}?{query}")
    assert (answer.status_code, answer.json()) == (400, {"message": text("deck.bad_upload", "zh")})


def snapshot(built, tab: str, asked: str) -> dict:
    fn = next(f for f in built.fns.values() if f.api_name == f"{tab}_snapshot")
    values = [asked, *(getattr(component, "value", None) for component in fn.inputs[1:])]
    return json.loads(run_async(built.process_api(fn, values, state=SessionState(built)))["data"][0])


@pytest.mark.slow
def test_a_views_snapshot_gives_its_slides_words_and_its_link(built):
    view = next(v for v in built.preset_registry.tabs["ngram"].views if getattr(v, "bar", None) is not None)
    slide = snapshot(built, "ngram", f"add:{view.key}")
    assert slide["mode"] == "slide" and slide["spots"] == teacher.spot_class(view)
    assert slide["link"].startswith("?tab=ngram") and slide["title"] and slide["caption"]
    link = snapshot(built, "ngram", f"link:{view.key}")
    assert link["mode"] == "link" and link["link"] == slide["link"]
    with pytest.raises(gr.Error) as refused:  # a forged view key: one sentence, no traceback
        snapshot(built, "ngram", "add:no-such-view")
    assert refused.value.message == text("deck.bad_upload", "en")


def test_a_slide_takes_a_results_figure_or_table_in_every_form_a_view_returns():
    import pandas as pd

    figure = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    frame = pd.DataFrame({"token": ["猫", "dog"], "p": [0.123456, 0.5]})
    expected_rows = [["token", "p"], ["猫", "0.1235"], ["dog", "0.5"]]  # numbers as the table shows them: 4 digits
    assert json.loads(teacher._figure_or_table(figure)["figure"])["data"][0]["y"] == [1, 2]
    assert teacher._figure_or_table(frame) == {"table": expected_rows}
    assert teacher._figure_or_table(frame.style) == {"table": expected_rows}  # a coloured table (a pandas Styler)
    shown = {"headers": ["token", "p"], "data": [["猫", 0.123456], ["dog", 0.5]]}  # a Dataframe's value as sent
    assert teacher._figure_or_table(shown) == {"table": expected_rows}
    assert teacher._figure_or_table({"value": figure, "visible": True, "__type__": "update"})["figure"]
    assert teacher._figure_or_table({"value": figure, "visible": False, "__type__": "update"}) is None
    assert teacher._figure_or_table("some text") is None and teacher._figure_or_table(None) is None


def test_a_slide_takes_a_plot_outputs_figure_as_gradio_holds_it():
    held = gr.Plot().postprocess(go.Figure(go.Bar(x=["a", "b"], y=[3, 4])))  # PlotData, after postprocessing
    assert json.loads(teacher._figure_or_table(held)["figure"])["data"][0]["y"] == [3, 4]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_slide_whose_preset_fails_says_why_in_its_caption(monkeypatch, lang):
    from types import SimpleNamespace

    from core.text.errors import UserInputError

    def refuse(view, preset):
        raise UserInputError("deck.empty")

    monkeypatch.setattr(teacher, "preset_result", refuse)
    view = SimpleNamespace(tab="ngram", where=None, presets={"tiny": object()}, outputs=[])
    slide = teacher._slide(view, "tiny", lang, None, "Look at **the counts**", "§4.2")
    assert slide == {"title": text("tabs.ngram", lang), "link": f"?tab=ngram&preset=tiny&lang={lang}",
                     "notes": "Look at the counts\n" + text("deck.notes_section", lang, section="4.2"),
                     "caption": text("deck.empty", lang)}


class Collector:
    """Stands in for the app's preset registry: one tab, and no view for any tour stop."""

    tabs = {"ngram": None}

    def find(self, tab, slug):
        return None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_plans_without_an_app_a_language_or_lesson_steps_are_refused(monkeypatch, lang):
    monkeypatch.setattr(teacher, "_REGISTRY", [])
    with pytest.raises(teacher.UserInputError) as refused:
        teacher.plan("tour", lang)
    assert refused.value.message(lang) == text("deck.bad_upload", lang)
    monkeypatch.setattr(teacher, "_REGISTRY", [Collector()])
    with pytest.raises(teacher.UserInputError) as refused:
        teacher.plan("tour", "klingon")
    assert refused.value.key == "deck.bad_upload"
    monkeypatch.setattr(teacher, "_LESSONS", {})
    with pytest.raises(teacher.UserInputError) as refused:
        teacher.plan("lesson", lang, "ngram")
    assert refused.value.message(lang) == text("deck.empty", lang)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_tour_plan_skips_the_stops_whose_view_the_app_lacks(monkeypatch, lang):
    monkeypatch.setattr(teacher, "_REGISTRY", [Collector()])
    assert teacher.plan("tour", lang) == {"title": text("tour.region", lang), "slides": []}
