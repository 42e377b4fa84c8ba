"""The guided tour's stops (demo/kit/tour.py) against the built app: issue #37.

Every stop names a tab of app.TABS, a runnable preset of that tab, the sub-tab that preset opens, and outputs of the
preset's view that sit in that sub-tab; there are 20-32 stops; they follow the seed's arc in order; each cites a seed
§ that exists in the seed post; both languages have a title and a text of 2-4 sentences for each.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import app as app_module
from core import checks
from core.text.i18n import table
from demo.kit import tour
from demo.kit.presets import enclosing_tab

# The seed posts: shared/ beside the checkout (CI), or the workplace's copy.
SEEDS = next((path for path in (Path(__file__).resolve().parents[3] / "shared" / "seeds", Path("/work/shared/seeds"))
              if path.exists()), Path("/work/shared/seeds"))


@pytest.fixture(scope="module")
def built():
    return app_module.build_app()


def sub_tab_ids(built, tab_id: str) -> set[str]:
    """The ids of the sub-tabs inside top-level tab ``tab_id`` of the built app."""
    import gradio as gr

    top = built.preset_registry.tabs[tab_id].tab
    return {block.id for block in built.blocks.values()
            if isinstance(block, gr.Tab) and block is not top and enclosing_tab(block.parent) is top}


def test_twenty_to_thirty_stops_along_the_seeds_arc_in_order_each_chapter_ending_with_a_check():
    views = [stop for stop in tour.STOPS if not stop.check]
    assert 20 <= len(views) <= 32  # issue #37's 20-30, and issue #52's three encoder–decoder stops (§10.3–§11.2)
    # issue #51: each chapter's run of stops ends with one of that chapter's checks, and only there
    for number, stop in enumerate(tour.STOPS):
        ends_run = number + 1 < len(tour.STOPS) and tour.STOPS[number + 1].tab != stop.tab or (
            number + 1 == len(tour.STOPS))
        assert bool(stop.check) == ends_run, (number, stop)
    assert [stop.tab for stop in tour.STOPS if stop.check] == list(dict.fromkeys(stop.tab for stop in views))
    topics = [stop.topic for stop in tour.STOPS]
    assert list(dict.fromkeys(topics)) == tour.ARC  # every step of the arc, in order, none skipped or revisited
    assert len({stop.key for stop in tour.STOPS}) == len(tour.STOPS)


def test_every_stop_opens_a_tab_sub_tab_and_preset_of_the_built_app(built):
    tab_ids = [app_module.tab_id(module) for module in app_module.TABS]
    collector = built.preset_registry
    for number, stop in enumerate(tour.STOPS, 1):
        assert stop.tab in tab_ids, stop
        if stop.check:  # a check of the stop's own tab, opened by its ?check= link; the browser draws what it outlines
            assert checks.get(stop.check).tab == stop.tab and stop.link == f"?tab={stop.tab}&check={stop.check}"
            assert not stop.preset and stop.sub is None
            continue
        view = collector.find(stop.tab, stop.preset)
        assert view is not None and view.presets[stop.preset].values is not None, stop
        opens = view.presets[stop.preset].shows or (view.where.id if view.where is not None else None)
        assert opens == stop.sub, (stop, opens)
        if stop.sub is None:  # a tab-level view: its outlined outputs (checked below) lie in no sub-tab, though the
            assert view.where is None, stop  # tab may hold sub-tabs below them (QA's "Why this answer", issue #35)
        else:
            assert stop.sub in sub_tab_ids(built, stop.tab), (stop, sub_tab_ids(built, stop.tab))
        assert stop.link == f"?tab={stop.tab}&preset={stop.preset}"
        # what the stop outlines: outputs of the preset's view, inside the sub-tab, tagged with the stop's classes
        assert stop.focus and len(set(stop.focus)) == len(stop.focus)
        for rank, index in enumerate(stop.focus):
            output = view.outputs[index]
            around = enclosing_tab(output)
            assert (around.id if around is not collector.tabs[stop.tab].tab else None) == stop.sub, (stop, index)
            assert tour.spot_class(number, rank) in output.elem_classes


def test_the_tour_refuses_a_stop_the_app_lacks(built):
    collector = built.preset_registry
    good = tour.STOPS[0]
    for bad in (tour.Stop("x", "counting", "ngram", "counts", "no-such-preset", "§2.1"),
                tour.Stop("x", "counting", "ngram", "score", good.preset, "§2.1"),  # the preset opens "counts"
                tour.Stop("x", "counting", "ngram", "counts", good.preset, "§2.1", (99,)),
                tour.Stop("x", "counting", "ngram", "counts", good.preset, "§2.1", (4,))):  # output 4 is in "score"
        with pytest.raises(ValueError):
            tour.check(bad, collector)
    for bad in (tour.Stop("x", "counting", "ngram", None, "", "§2.1", check="no-such-check"),
                tour.Stop("x", "counting", "ngram", None, "", "§2.1", check="qa-start")):  # a check of another tab
        with pytest.raises(ValueError):
            tour.check(bad, collector)


def seed_sections() -> set[str]:
    """Section numbers the main seed post has: "2.1", "14", "8.3"…, from its headings."""
    text = next(SEEDS.glob("000_*.txt")).read_text(encoding="utf-8")
    numbers = set(re.findall(r"^(\d+\.\d+) \S", text, flags=re.M))
    digits = "一二三四五六七八九"
    for heading in re.findall(r"^([一二三四五六七八九十]+)、", text, flags=re.M):  # 一 … 十 … 十六
        tens, _, units = heading.rpartition("十")
        value = (10 * (digits.index(tens) + 1 if tens else 1) if "十" in heading else 0) + (
            digits.index(units) + 1 if units else 0)
        numbers.add(str(value))
    return numbers


@pytest.mark.skipif(not SEEDS.exists(), reason="the seed posts are not beside the project")
def test_every_stop_cites_a_section_the_seed_has():
    known = seed_sections()
    assert {"2.1", "6.2", "8.3", "9", "13.4", "14.4", "15"} <= known
    for stop in tour.STOPS:
        cited = re.findall(r"§(\d+(?:\.\d+)?)", stop.section)
        assert cited and all(number in known for number in cited), (stop.key, stop.section)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_languages_say_what_to_look_at_in_two_to_four_sentences(lang):
    words = table(lang)
    end = re.compile(r"[.!?](?=\s|$)|[。！？]")
    for stop in tour.STOPS:
        title, body = tour.words(stop, lang)
        assert title.strip() and body.strip(), stop.key
        sentences = len(end.findall(re.sub(r"\d\.\d", "0", body)))
        assert 2 <= sentences <= 4, (lang, stop.key, sentences, body)
        outlined = "outlined" if lang == "en" else "框出"
        assert outlined in body, (lang, stop.key)  # it points at what the tour outlines
    if lang == "zh":  # no English sentences in the 中文 tour (ids, formulas and example sentences aside)
        for stop in tour.STOPS:
            assert re.search(r"[\u4e00-\u9fff]", tour.words(stop, lang)[0]), stop.key
    assert "{n}" in words["tour.overview_start"] and "?tour=1" in words["tour.overview_start"]


def test_the_overview_and_the_header_start_the_tour(built):
    from demo.ladder import overview

    for lang in ("en", "zh"):
        assert 'href="?tour=1"' in overview.path_html(lang, app_module.TABS)
    boxes = [block for block in built.blocks.values() if getattr(block, "tour_stops", None)]
    assert len(boxes) == 1 and boxes[0].tour_stops == tour.STOPS
    stops = boxes[0].props["stops"]
    assert [s["link"] for s in stops] == [stop.link for stop in tour.STOPS]
    assert all(set(s["title"]) == set(s["text"] or boxes[0].props["ui"]["check_text"]) == {"en", "zh"} for s in stops)
    assert [s["text"] is None for s in stops] == [bool(stop.check) for stop in tour.STOPS]  # one text for checks
