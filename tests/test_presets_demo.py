"""demo/presets.py on the built app: every view's default (what a tab shows on first open) is a real result, deep
links select the tab and sub-tab and compute the preset, and lessons point at presets that exist."""
import gradio as gr
import pandas as pd
import plotly.graph_objects as go
import pytest

import app
from core import registry
from demo import presets

OFFLINE_VIEWS = {("mlm", "fill"), ("mlm", "compare"), ("mlm", "nsp"), ("ner", "tag"), ("qa", "answer"),
                 ("classify", "checkpoint"),
                 ("transformer", "gpt_vs_bert")}  # GPT vs BERT: the BERT side needs bert-base-uncased


@pytest.fixture(scope="module")
def built():
    registry.set_offline(True)
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


# The tabs issue #18 equipped, and the Transformer & GPT tab (issue #19 moved it onto demo/presets.py).
TABS = ["ngram", "embeddings", "lstm", "attention", "transformer", "mlm", "ner", "qa"]


def test_every_tab_registers_views_with_unique_slugs_and_a_section(built):
    _, reg = built
    assert list(reg.tabs) == [app.tab_id(m) for m in app.TABS]
    for tab_id in TABS:
        entry = reg.tabs[tab_id]
        assert entry.views, f"{tab_id} has no view"
        slugs = [slug for view in entry.views for slug in view.presets]
        assert len(slugs) == len(set(slugs)), f"duplicate preset slugs in {tab_id}"
        assert all(p.section.startswith("§") for view in entry.views for p in view.presets.values())
        assert reg.opening(tab_id), f"opening {tab_id} computes nothing"


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


def test_first_open_load_shows_the_seed_bigram(built):
    blocks, _ = built
    load = next(dep for dep in blocks.fns.values() if dep.api_name == "app_open")
    updates = load.fn(FakeRequest(tab="ngram"))
    texts = [v for v in updates.values() if isinstance(v, str)]
    assert any("P(词性 | 的) = count(的, 词性) / count(的) = 2 / 3 = **0.6667**" in t for t in texts)


class FakeRequest:  # noqa: D101 - what load_from_url reads of gr.Request
    def __init__(self, **query):
        self.query_params = query


def test_deep_link_selects_tab_and_subtab_and_computes_the_preset(built):
    blocks, reg = built
    load = next(dep for dep in blocks.fns.values() if dep.api_name == "app_open")
    updates = load.fn(FakeRequest(tab="attention", preset="thinking-machines"))
    selected = {getattr(v, "selected", None) for v in updates.values() if isinstance(v, gr.Tabs)}
    assert {"attention", "steps"} <= selected
    assert any("0.8808" in v for v in updates.values() if isinstance(v, str))  # 1 / (1 + e^−2)
    updates = load.fn(FakeRequest(tab="mlm", preset="bert-base-parameters"))
    assert {"mlm", "card"} <= {getattr(v, "selected", None) for v in updates.values() if isinstance(v, gr.Tabs)}
    assert any("108,808,704" in v and "109,482,240" in v for v in updates.values() if isinstance(v, str))
    # a known tab with an unknown preset shows the tab's defaults; an unknown tab is not an error
    updates = load.fn(FakeRequest(tab="ngram", preset="nope"))
    assert any("2 / 3" in v for v in updates.values() if isinstance(v, str))
    assert load.fn(FakeRequest(tab="nope", preset="nope"))


def test_every_runnable_preset_has_a_copy_link_button_naming_a_preset_that_exists(built):
    """The 🔗 buttons carry their link in a class (presets.COPY_LINK_HEAD's one listener reads it)."""
    blocks, reg = built
    links = [c[len(presets.LINK_CLASS):].split("--") for b in blocks.blocks.values() if isinstance(b, gr.Button)
             for c in (b.elem_classes or []) if c.startswith(presets.LINK_CLASS)]
    buttons = [b for b in blocks.blocks.values()
               if isinstance(b, gr.Button) and (b.elem_id or "").startswith("preset-")]
    assert len(links) == len(buttons) > 100
    for tab, slug in links:
        view = reg.find(tab, slug)
        assert view is not None and view.presets[slug].values is not None, (tab, slug)
    assert ["attention", "thinking-machines"] in links
    assert not [fn.api_name for fn in blocks.fns.values() if "_link_" in (fn.api_name or "")]  # no event each


def test_opening_again_keeps_what_the_learner_did(built):
    _, reg = built
    view = reg.tabs["attention"].views[0]
    assert view._open(True) == {view.done: True}  # nothing recomputed, nothing overwritten
    assert view._open(False)[view.done] is True


def test_lessons_have_three_steps_that_name_a_section_and_run(built):
    blocks, _ = built
    lessons = [dep.api_name for dep in blocks.fns.values() if dep.api_name and "_lesson_" in dep.api_name]
    for tab_id in TABS:
        assert {f"{tab_id}_lesson_{n}" for n in (1, 2, 3)} <= set(lessons), tab_id


def test_slots_are_shown_but_not_runnable():
    with gr.Blocks():
        view = presets.View("x", "y", [gr.Textbox()], [gr.Markdown()], lambda text: text,
                            [presets.Preset("a", "A", ("hello",), "§1"),
                             presets.Preset("slot", "Slot", None, "§1", note="its own issue")])
        view.buttons()
    assert view.run("slot")[view.outputs[0]] == "hello"  # a slot falls back to the default
    with pytest.raises(ValueError):
        with gr.Blocks():
            presets.View("x", "y", [], [], print, [presets.Preset("slot", "Slot", None)])
