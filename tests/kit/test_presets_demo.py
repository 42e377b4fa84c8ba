"""demo/kit/presets.py on the built app: every view's default (what a tab shows on first open) is a real result, deep
links select the tab and sub-tab and compute the preset, and lessons point at presets that exist."""
import functools
from urllib.parse import parse_qsl

import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import pytest

import app
from tests import app_events
from core.text.errors import UserInputError
from demo.kit import preset_records, presets, widgets
from core.loading import resolve

OFFLINE_VIEWS = {("mlm", "fill"), ("mlm", "compare"), ("mlm", "nsp"), ("ner", "tag"), ("qa", "answer"),
                 ("classify", "checkpoint"), ("ner", "why"), ("qa", "why"),  # issue #35's Why on NER / QA checkpoints
                 ("transformer", "gpt_vs_bert")}  # GPT vs BERT: the BERT side needs bert-base-uncased


@pytest.fixture(scope="module")
def built():
    resolve.set_offline(True)
    blocks = app.build_app()
    return blocks, blocks.preset_registry


def rows(value) -> int:
    if isinstance(value, pd.DataFrame):
        return len(value)
    if hasattr(value, "data") and isinstance(value.data, pd.DataFrame):  # a pandas Styler
        return len(value.data)
    if isinstance(value, dict):  # {"headers": ..., "data": ...}: a table with headers in the learner's language
        return len(value.get("data") or [])
    return len(value) if isinstance(value, list) else -1


TABS = [app.tab_id(module) for module in app.TABS]


def drawn_when_built(tab: gr.Tab) -> bool:
    """A tab whose first view is drawn into the page when the app is built (demo/kit/static_html.py): it shows with no
    request, so opening it computes nothing."""
    def blocks(block):
        yield block
        for child in getattr(block, "children", []):
            yield from blocks(child)

    return any(isinstance(b, gr.HTML) and "static-view" in (b.elem_classes or []) for b in blocks(tab))


def test_every_tab_registers_views_with_unique_slugs_and_a_section(built):
    _, reg = built
    assert list(reg.tabs) == TABS
    for tab_id in TABS:
        entry = reg.tabs[tab_id]
        assert entry.views, f"{tab_id} has no view"
        slugs = [slug for view in entry.views for slug in view.presets]
        assert len(slugs) == len(set(slugs)), f"duplicate preset slugs in {tab_id}"
        assert all(p.section.startswith("§") for view in entry.views for p in view.presets.values())
        assert reg.opening(tab_id) or drawn_when_built(entry.tab), f"opening {tab_id} shows nothing"


def test_every_default_shows_figures_with_data_and_tables_with_rows(built):
    _, reg = built
    for tab_id, entry in reg.tabs.items():
        for view in entry.views:
            updates = view.run()
            assert updates[view.done] is True
            figures = [v for c, v in updates.items() if c in view.outputs and isinstance(v, go.Figure)]
            tables = [v for c, v in updates.items() if c in view.outputs and isinstance(c, gr.Dataframe)]
            if (tab_id, view.key) in OFFLINE_VIEWS:  # predictions need a checkpoint: the note says how to get it
                notes = " ".join(str(v) for v in updates.values() if isinstance(v, str))
                assert "hf download" in notes, (tab_id, view.key)
                continue
            assert all(fig.data for fig in figures), (tab_id, view.key)
            assert all(rows(t) > 0 for t in tables), (tab_id, view.key)
            assert figures or tables or any(isinstance(v, str) and len(v) > 40 for v in updates.values())


def event(blocks, api_name: str):
    return next(dep for dep in blocks.fns.values() if dep.api_name == api_name)


class FakeRequest:  # noqa: D101 - what the load events read of gr.Request
    def __init__(self, **query):
        self.query_params = query


def test_opening_the_page_fills_the_first_tab_and_only_lists_its_views(monkeypatch):
    """The app's first tab, the Overview, is drawn when the app is built: the page's open runs no event for it. A
    first tab that computes its views is filled by the page's load, which lists only that tab's views: Gradio builds
    a fresh component for every output a handler leaves out (the deep link, with every view as output, runs only
    when the address has a query). Here the N-gram tab is put first."""
    from demo.ngram import ngram
    from demo.ladder import overview

    resolve.set_offline(True)
    assert "app_open" not in {dep.api_name for dep in app.build_app().fns.values()}
    monkeypatch.setattr(app, "TABS", [ngram, overview])
    blocks = app.build_app()
    reg = blocks.preset_registry
    load = event(blocks, "app_open")
    first = reg.opening("ngram")
    assert first and set(map(id, load.outputs)) == {id(c) for view in first for c in view.components()}
    preset_records.OPENED.clear()
    updates = load.fn(FakeRequest())
    assert any("2 / 3 = **0.6667**" in v for v in updates.values() if isinstance(v, str))  # the seed bigram
    preset_records.OPENED.clear()
    assert load.fn(FakeRequest(tab="overview", preset="closing-quote")) == {v.done: False for v in first}
    linked = {id(c) for link in app_events.deep_links(blocks).values() for c in link.outputs}
    assert {id(c) for entry in reg.tabs.values() for view in entry.views for c in view.components()} <= linked
    assert len(app_events.deep_links(blocks)["ngram"].outputs) > len(load.outputs)  # a link fills all its tab


def test_first_open_deep_link_shows_the_seed_bigram(built):
    blocks, _ = built
    updates = app_events.follow_link(blocks, "?tab=ngram")
    texts = [v for v in updates.values() if isinstance(v, str)]
    assert any("P(词性 | 的) = count(的, 词性) / count(的) = 2 / 3 = **0.6667**" in t for t in texts)


def test_deep_link_selects_tab_and_subtab_and_computes_the_preset(built):
    blocks, reg = built
    link = functools.partial(app_events.follow_link, blocks)
    updates = link("?tab=attention&preset=thinking-machines")
    selected = {getattr(v, "selected", None) for v in updates.values() if isinstance(v, gr.Tabs)}
    assert {"attention", "steps"} <= selected
    assert any("0.8808" in v for v in updates.values() if isinstance(v, str))  # 1 / (1 + e^−2)
    updates = link("?tab=mlm&preset=bert-base-parameters")
    assert {"mlm", "card"} <= {getattr(v, "selected", None) for v in updates.values() if isinstance(v, gr.Tabs)}
    assert any("108,808,704" in v and "109,482,240" in v for v in updates.values() if isinstance(v, str))
    # a known tab with an unknown preset shows the tab's defaults; an unknown tab or junk is not an error
    updates = link("?tab=ngram&preset=nope")
    assert any("2 / 3" in v for v in updates.values() if isinstance(v, str))
    for junk in ("?tab=nope&preset=nope", "", None, "%ZZ&&==", "?tab=\x00", "?" + "&".join(["x=1"] * 500)):
        updates = link(junk)
        assert updates and all(not isinstance(v, str) for v in updates.values()), junk
    updates = link("?" + "&".join(["tab=qa"] * 500))  # read up to QUERY_LIMIT characters: still the QA tab
    assert "qa" in {getattr(v, "selected", None) for v in updates.values() if isinstance(v, gr.Tabs)}


def preset_bars(blocks) -> list[gr.HTML]:
    return [b for b in blocks.blocks.values() if isinstance(b, gr.HTML) and "preset-bar" in (b.elem_classes or [])]


def test_every_runnable_preset_has_a_button_and_a_link_naming_a_preset_that_exists(built):
    """A preset bar is one gr.HTML: its ``items`` prop lists each preset's slug, its label in every language and its
    deep link, which the browser renders as a button and a 🔗 link."""
    blocks, reg = built
    items = [item for bar in preset_bars(blocks) for item in bar.props["items"]]
    runnable = {(tab, slug) for tab, entry in reg.tabs.items() for view in entry.views
                for slug, preset in view.presets.items() if preset.values is not None}
    assert len(items) > 100
    for item in items:  # a view that samples adds its preset's seed (demo/kit/sampling.py): ?tab=…&preset=…&seed=…
        query = dict(parse_qsl(item["link"].removeprefix("?")))
        tab, slug = query["tab"], query["preset"]
        assert item["slug"] == slug and (tab, slug) in runnable, item["link"]
        assert set(item["label"]) == {"en", "zh"} and all(item["label"].values()), item
        assert set(query) <= {"tab", "preset", "seed"} and query.get("seed", "0").isdigit(), item["link"]
    shown = {tuple(item["link"].removeprefix("?tab=").split("&seed=")[0].split("&preset=")) for item in items}
    assert ("attention", "thinking-machines") in shown
    assert len(shown) == len(items)  # a preset appears in one bar only
    labels = {item["slug"]: item["label"] for item in items}
    assert labels["p-cixing-de"]["zh"] != labels["p-cixing-de"]["en"]  # a translated label, in each language


def test_a_preset_bars_one_event_runs_the_preset_it_is_sent(built):
    blocks, _ = built
    event = next(dep for dep in blocks.fns.values() if dep.api_name == "attention_steps_preset")
    assert [type(c).__name__ for c in event.inputs] == ["HTML", "State"]  # the bar (its value: a slug), done
    shown = event.fn("thinking-machines", False)
    assert any("0.8808" in v for v in shown.values() if isinstance(v, str))  # 1 / (1 + e^−2)
    for bad in ("nope", "", None, 7, "<script>", "i-have-a-dream" * 100):
        with pytest.raises(gr.Error, match="There is no example") as refused:
            event.fn(bad, False)
        assert "thinking-machines" in refused.value.message and len(refused.value.message) < 400


def view_with_a_slot(label: str = "A", note: str = "its own issue"):
    """(view, its preset bar) for a one-textbox view with a runnable preset ``a`` and a slot."""
    with gr.Blocks():
        view = presets.View("x", "y", [gr.Textbox()], [gr.Markdown()], lambda text: text,
                            [presets.Preset("a", label, ("hello",), "§1"),
                             presets.Preset("slot", "Slot", None, "§1", note=note)])
        return view, view.buttons()


def test_a_cached_preset_result_keeps_its_shown_value_for_the_next_learner():
    """Gradio pops "value" out of an update dict as it sends it (blocks.postprocess_update_dict): the cached result
    must hand each learner its own copy, or the second one sees a shown plot with no figure (found in Chromium)."""
    from gradio.blocks import postprocess_update_dict

    with gr.Blocks():
        shown = gr.Textbox(visible=False)
        view = presets.View("x", "cached", [gr.Textbox()], [shown], lambda text: gr.update(value=text, visible=True),
                            [presets.Preset("a", "A", ("hello",), "§1")])
    sent = []
    for _ in range(3):  # the first computes, the next two come from result_cache.RESULTS
        update = view.run("a")[shown]
        assert update["visible"] is True
        sent.append(postprocess_update_dict(shown, update))
    assert [s.get("value") for s in sent] == ["hello"] * 3


def test_labels_and_notes_are_escaped_before_the_browser_renders_them():
    _, bar = view_with_a_slot("<img src=x onerror=alert(1)> & co", "<b>its own</b> issue")
    first, slot = bar.props["items"]
    assert first["label"]["en"] == "&lt;img src=x onerror=alert(1)&gt; &amp; co" and first["link"] == "?tab=x&preset=a"
    assert "link" not in slot and slot["note"]["zh"] == "&lt;b&gt;its own&lt;/b&gt; issue"


def test_opening_again_keeps_what_the_learner_did(built):
    _, reg = built
    view = reg.tabs["attention"].views[0]
    assert view._open(True) == {view.done: True}  # nothing recomputed, nothing overwritten
    assert view._open(False)[view.done] is True


def test_an_open_event_leaves_out_the_inputs_the_page_already_shows(built):
    """Opening a tab sends its default's results, not the inputs the page was built with: a learner who typed into
    the one-hot box while the default computed keeps the words. Inputs the page holds empty until then (attention's
    Q, K, V matrices) are filled, and sent as the preset sets them."""
    _, reg = built
    preset_records.OPENED.clear()
    onehot, lookup = reg.opening("embeddings")
    updates = reg.open_tab("embeddings", [False, False], FakeRequest())
    for view in (onehot, lookup):
        assert updates[view.done] is True
        assert not {id(c) for c in view.inputs} & set(map(id, updates)), view.key  # the page's own values stay
        assert {id(c) for c in view.outputs} <= set(map(id, updates)), view.key  # every result is sent
    figures = [v for c, v in updates.items() if isinstance(v, go.Figure)]
    assert figures and all(fig.data for fig in figures)

    steps = reg.opening("attention")[0]
    updates = reg.open_tab("attention", [False], FakeRequest())
    matrices = [c for c in steps.inputs if isinstance(c, gr.Dataframe)]
    sent = [c for c in matrices if id(c) in set(map(id, updates))]
    assert sent and all(rows(updates[c]) > 0 for c in sent)  # built empty, filled by the default
    assert all(c.value["data"] == [] for c in sent)
    question = steps.inputs[0]  # the sentence box, built with the default's sentence: not sent
    assert isinstance(question, gr.Textbox) and question.value and id(question) not in set(map(id, updates))


def test_every_input_a_learner_edits_is_built_empty_or_with_its_default(built):
    """What keeps a learner's typing through an open event (above), for every view: an input the learner can edit is
    built either empty (the default fills it) or with the value its view's default sets, so the open event leaves
    it alone. A table counts as empty with no rows."""
    _, reg = built
    checked, differ = 0, []
    for entry in reg.tabs.values():
        for view in entry.views:
            values = view.presets[view.default].resolved()
            for component, value in zip(view.inputs, values):
                if isinstance(component, (gr.State, gr.Markdown, gr.HTML)):
                    continue  # not edited by the learner
                built_with = component.value
                if built_with in (None, "") or (isinstance(built_with, dict) and not built_with.get("data")):
                    continue
                checked += 1
                if not widgets.shows_already(component, value):
                    differ.append(f"{view.tab}/{view.key} {type(component).__name__}: {built_with!r} vs {value!r}")
    assert checked > 150 and not differ, differ


def test_lessons_have_three_steps_that_name_a_section_and_run(built):
    """Each tab's "Try this" box is one gr.HTML (demo/kit/lessons.py) and one event, ``<tab>_lesson``, sent the number of
    the step: at least three steps (BERT's has five, NER's four), each naming a seed § and holding its question and answer in both languages."""
    blocks, reg = built
    deps = {dep.api_name: dep for dep in blocks.fns.values()}
    boxes = [b for b in blocks.blocks.values() if isinstance(b, gr.HTML) and "lesson-box" in (b.elem_classes or [])]
    assert len(boxes) == len(reg.tabs)
    for box in boxes:
        steps = box.props["steps"]
        assert [step["number"] for step in steps] == list(range(1, len(steps) + 1)) and len(steps) >= 3
        assert all(step["section"].startswith("§") for step in steps), steps
        for step in steps:
            for part in ("question", "answer"):
                assert step[part]["en"] and step[part]["zh"] and step[part]["en"] != step[part]["zh"], step
    for tab_id in TABS:
        assert f"{tab_id}_lesson" in deps, tab_id
    # a step selects its sub-tab and computes its preset; a step that does not exist is a clear error
    shown = deps["attention_lesson"].fn("1")
    assert "steps" in {getattr(v, "selected", None) for v in shown.values() if isinstance(v, gr.Tabs)}
    assert any("0.8808" in v for v in shown.values() if isinstance(v, str))
    for bad in ("4", "0", "-1", "", None, "1.5", "x" * 10_000):
        with pytest.raises(gr.Error, match="pick 1 to 3"):
            deps["attention_lesson"].fn(bad)


def test_lesson_markdown_is_rendered_and_raw_html_is_not():
    from demo.kit import lessons

    with gr.Blocks():
        view = presets.View("x", "y", [gr.Textbox()], [gr.Markdown()], lambda text: text,
                            [presets.Preset("a", "A", ("hello",), "§1")])
        box = lessons.lesson([lessons.Step("§1", "Why **this**? <script>alert(1)</script>", "`P(w)`", view, "a")])
    step = box.props["steps"][0]
    assert step["question"]["en"] == "Why <strong>this</strong>? &lt;script&gt;alert(1)&lt;/script&gt;"
    assert step["answer"]["zh"] == "<code>P(w)</code>"
    with pytest.raises(Exception, match="There is no example"):  # a lesson pointing at no preset fails at build
        with gr.Blocks():
            lessons.lesson([lessons.Step("§1", "q", "a", view, "missing")])


def test_slots_are_shown_but_not_runnable():
    view, bar = view_with_a_slot()
    assert view.run()[view.outputs[0]] == "hello"
    with pytest.raises(UserInputError):  # a slot does not run: its button is disabled, and the event refuses it
        view.run("slot")
    assert [item.get("link") for item in bar.props["items"]] == ["?tab=x&preset=a", None]
    with pytest.raises(ValueError):
        with gr.Blocks():
            presets.View("x", "y", [], [], print, [presets.Preset("slot", "Slot", None)])
