"""State links' small pieces, without the built app (demo/kit/state_links.py): values as JSON holds them, a
multi-choice dropdown and a plain table read back from a link, labels and numbers as a caption shows them, and a
link's first answer (its tab and sub-tab) from where_to."""
from __future__ import annotations

from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

from core.text.i18n import table
from demo.kit import state_links
from demo.kit.state_links import BrokenLink, decode, plain


def test_plain_turns_tuples_numpy_scalars_and_sent_tables_into_json_values():
    assert plain((1, (2, 3))) == [1, [2, 3]]
    value = plain(np.float32(0.5))
    assert value == 0.5 and type(value) is float
    assert type(plain(np.int64(7))) is int
    assert plain({"headers": ["a", "b"], "data": [(1, np.int64(2))]}) == [[1, 2]]


def test_a_multiselect_dropdown_takes_only_a_list_of_its_choices():
    box = gr.Dropdown(choices=[("One", "one"), ("Two", "two"), ("Three", "three")], multiselect=True, value=["one"])
    assert decode(box, ["three", "one"], ["one"], "picked") == ["three", "one"]
    for raw in ["one", ["one", "four"], [1]]:
        with pytest.raises(BrokenLink, match="picked: not among the choices"):
            decode(box, raw, ["one"], "picked")


def test_a_table_whose_default_is_rows_comes_back_as_rows():
    grid = gr.Dataframe(value=[[1, 2], [3, 4]])
    rows = [[5, "x"], [6.5, "y"]]
    assert decode(grid, rows, [[1, 2], [3, 4]], "grid") == rows
    with pytest.raises(BrokenLink, match="grid: not a rectangle"):
        decode(grid, [[1, 2], [3]], [[1, 2], [3, 4]], "grid")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_translated_label_reads_in_the_asked_language(lang):
    label = gr.I18n()("tabs.ngram")
    assert state_links.words(label, lang) == table(lang)["tabs.ngram"]
    assert state_links.words(gr.I18n()("no.such.key"), lang) == "no.such.key"  # an unknown key shows as itself
    assert state_links.words("plain words", lang) == "plain words" and state_links.words(None, lang) == ""


def test_a_caption_shows_four_significant_digits_and_short_lists():
    assert state_links._shown(2 / 3) == "0.6667" and state_links._shown(12345.678) == "1.235e+04"
    assert state_links._shown(np.float64(0.125)) == "0.125"
    long = list(range(40))
    shown = state_links._shown(long)
    assert len(shown) == 60 and shown.endswith("…") and shown.startswith("[0, 1, 2")


class Recorder:
    """Stands in for state_links.ASKED: records the views a link marked as asked for."""

    def __init__(self):
        self.marked = []

    def mark(self, view, request):
        self.marked.append((view, request))


def fake_registry():
    where = SimpleNamespace(id="counts-tab", label="Counts")
    plain_view = SimpleNamespace(key="plain", switcher=None, presets={})
    switched = SimpleNamespace(key="switched", switcher="the-switcher", where=where,
                               presets={"tiny": SimpleNamespace(shows="samples-tab"),
                                        "quiet": SimpleNamespace(shows="")})
    views = [plain_view, switched]
    registry = SimpleNamespace(tabs={"ngram": SimpleNamespace(views=views)},
                               find=lambda tab, slug: switched if slug in switched.presets else None)
    return registry, plain_view, switched


def test_where_to_skips_a_link_to_a_tab_the_app_lacks(monkeypatch):
    monkeypatch.setattr(state_links, "ASKED", Recorder())
    registry, _, _ = fake_registry()
    answer = state_links.where_to(registry, "TABS", "?tab=nowhere&view=plain")
    assert list(answer) == ["TABS"] and answer["TABS"] == gr.skip()
    assert state_links.ASKED.marked == []


def test_where_to_selects_the_tab_and_the_presets_sub_tab(monkeypatch):
    monkeypatch.setattr(state_links, "ASKED", Recorder())
    registry, plain_view, switched = fake_registry()
    answer = state_links.where_to(registry, "TABS", "?tab=ngram&view=plain", request="req")
    assert list(answer) == ["TABS"] and answer["TABS"].selected == "ngram"  # no sub-tab to choose
    answer = state_links.where_to(registry, "TABS", "?tab=ngram&preset=tiny")
    assert answer["TABS"].selected == "ngram" and answer["the-switcher"].selected == "samples-tab"
    answer = state_links.where_to(registry, "TABS", "tab=ngram&preset=quiet", request="req")
    assert answer["the-switcher"].selected == "counts-tab"  # a preset that names no sub-tab: the view's own
    answer = state_links.where_to(registry, "TABS", "?tab=ngram&view=switched")
    assert answer["the-switcher"].selected == "counts-tab"
    assert state_links.ASKED.marked == [(switched, None), (switched, "req"), (switched, None)]
