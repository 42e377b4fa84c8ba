"""demo/overview.py (the Overview tab, issue #17): timeline links, the held-out ladder as the file has it, the
surprisal strip and totals equal to core/ladder's numbers, presets, bad input, and first-open wiring."""
import gradio as gr
import numpy as np
import pytest

from core import i18n, ladder
from demo import overview

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_timeline_steps_link_to_their_tabs_in_order():
    fig = overview.timeline_figure()
    texts = [a.text for a in fig.layout.annotations]
    names = ["n-gram", "NNLM", "word2vec", "RNN / LSTM", "attention", "Transformer", "ELMo / GPT / BERT"]
    assert len(texts) == len(names)
    for text, name, (_, _, _, tab, preset) in zip(texts, names, overview.TIMELINE):
        assert f'href="{overview.link(tab, preset)}"' in text and f">{name}</a>" in text
    assert "2003" in texts[1] and "2013" in texts[2] and "2017" in texts[5] and "2018" in texts[6]
    links = overview.timeline_links()
    assert "(?tab=attention&preset=thinking-machines)" in links and "(?tab=transformer)" in links
    # ELMo as seed §7 describes it: the three-layer view (word, layer 1, layer 2), not the one-layer biLM
    assert "[ELMo](?tab=lstm&preset=elmo-layers-bank)" in links


def test_every_link_opens_a_tab_and_a_preset_the_app_has():
    """The timeline's, the step list's and every rung's links name a tab of the app and, when they name a preset,
    one that tab registers (demo/presets.py reads ?tab=…&preset=…; an unknown slug would open nothing)."""
    import re

    import app

    registry = app.build_app().preset_registry
    links = re.findall(r"\(([^)]*)\)", overview.timeline_links())
    links += [overview.link(tab, preset) for *_, tab, preset in overview.TIMELINE]
    links += [rung.tab for rung in ladder.rungs()]
    assert len(links) > 20
    for target in links:
        query = dict(part.split("=", 1) for part in target.lstrip("?").split("&"))
        assert query["tab"] in registry.tabs, target
        if "preset" in query:
            assert registry.find(query["tab"], query["preset"]) is not None, target


def test_first_open_shows_the_held_out_ladder_from_the_file():
    fig, links, note, frame, bars = overview.first_open()
    table = frame.values.tolist()
    facts, rows = ladder.load_held_out()
    assert len(fig.data) == 1 and f"{facts['held_out_chars']:,}" in note and "(?tab=ngram&preset=" in links
    assert [r[0] for r in table] == [row.name for row in rows]
    assert [r[1] for r in table] == [round(row.bits_per_char, 3) for row in rows]
    assert [r[6] for r in table] == [row.equation for row in rows]  # the file's English, rebuilt from the keys
    assert all(r[-1].startswith("[") and "(?tab=" in r[-1] for r in table)
    assert table[0][5] == rows[0].training_data and table[-1][5] == rows[-1].training_data
    np.testing.assert_allclose(bars.data[0].x, [row.bits_per_char for row in rows])
    best = int(np.argmin([row.bits_per_char for row in rows]))
    assert [c for c in bars.data[0].marker.color].index(bars.data[0].marker.color[best]) == best


def test_strip_and_totals_are_core_ladders_numbers():
    text = 'He said "Queequeg" — 我 €.'
    summary, strip, totals, frame = overview.score_text(text)
    table = frame.values.tolist()
    result = ladder.score_text(text)
    z = np.array(strip.data[0].z, dtype=float)
    assert z.shape == (len(result.scores), len(text))
    assert np.isnan(z[:, 0]).all()  # the first character is context only
    expected = np.minimum([score.bits for score in result.scores], overview.STRIP_CAP_BITS)
    np.testing.assert_allclose(z[:, 1:], expected)
    assert [label.rstrip("\u200b") for label in strip.data[0].x] == [overview._shown(ch) for ch in text]
    assert [label.rstrip("\u200b") for label in strip.data[0].y] == [s.rung.name for s in result.scores]
    np.testing.assert_allclose(totals.data[0].x, [score.total_bits for score in result.scores])
    assert [row[1] for row in table] == [round(score.total_bits, 2) for score in result.scores]
    assert "'我', '€'" in summary and "n-gram" in summary and "LSTM" in summary
    costs = table[0][3]
    first = result.scores[0]
    assert costs == (f"'我' (character {text.index('我') + 1}): {first.bits[text.index('我') - 1]:.1f} bits, "
                     f"'€' (character {text.index('€') + 1}): {first.bits[text.index('€') - 1]:.1f} bits")


@pytest.mark.parametrize("preset", overview.PRESETS, ids=lambda p: p.slug)
def test_every_preset_runs(preset):
    text, note = preset.resolved()
    summary, strip, totals, table = overview.run_ladder(text, note)
    assert len(text) <= ladder.MAX_CHARS and len(table) == len(ladder.rungs())
    assert np.isfinite(np.array(totals.data[0].x, dtype=float)).all()
    assert i18n.text(note.key, "en").startswith("**What to look at.**")
    assert i18n.text(note.key, "zh").startswith("**看点。**")


def test_name_preset_costs_an_ngram_the_same_twice():
    """The preset's claim: the 5-gram pays exactly the same for the second Zorbanowski as for the first."""
    text = dict(overview.LADDER_TEXTS)["name-repeated"]
    first, second = text.index("Zorbanowski"), text.rindex("Zorbanowski")
    assert second - first > 90
    score = next(s for s in ladder.score_text(text).scores if s.rung.key == "ngram-5-kneser_ney")
    inside = slice(4, 11)  # the name's characters whose 4-character context lies inside the name
    ours = score.bits[first - 1:][inside], score.bits[second - 1:][inside]  # bits[i - 1] is character i's
    np.testing.assert_array_equal(*ours)


def test_bad_input_gets_a_message():
    with pytest.raises(gr.Error, match="at least two characters"):
        overview.score_text("  \r\n ")
    with pytest.raises(gr.Error, match="at most 300"):
        overview.score_text("a" * 5000)



def test_the_tab_fills_itself_on_open_through_the_presets_registry():
    """The Overview uses demo/presets.py like every tab: its timeline and its ladder are views in two sub-tabs. The
    page's load fills the first (the path) only; the ladder is computed when its sub-tab opens. Its presets are
    buttons with deep links, and its lesson steps run them (switching to the ladder's sub-tab)."""
    with gr.Blocks() as blocks:
        overview.build()
    names = {dep.api_name for dep in blocks.fns.values()}
    assert {"overview_score", "overview_ladder_preset", "overview_lesson"} <= names

    import app

    registry = app.build_app().preset_registry
    views = {view.key: view for view in registry.tabs["overview"].views}
    assert set(views) == {"timeline", "ladder"} and registry.opening("overview") == [views["timeline"]]
    assert [view.where.id for view in views.values()] == ["path", "ladder"]
    assert views["timeline"].switcher is views["ladder"].switcher
    assert registry.find("overview", "closing-quote") is views["ladder"]
    updates = views["ladder"].run("closing-quote", select=True)
    assert updates[views["ladder"].inputs[0]].startswith('"If the whale') and updates[views["ladder"].done]
    assert updates[views["ladder"].switcher].selected == "ladder"


def test_results_and_errors_in_chinese():
    """One handler's result and one error in 中文 under using_language("zh"), and in English by default."""
    text = dict(overview.LADDER_TEXTS)["call-me-ishmael"]
    with i18n.using_language("zh"):
        summary, strip, totals, table = overview.score_text(text)
        _, _, note, held, _ = overview.first_open()
        with pytest.raises(gr.Error) as error:
            overview.score_text("x")
    assert summary.startswith(f"**{len(text)} 个字符**") and "比特" in summary
    assert strip.layout.title.text.startswith("每个字符的意外度") and "5 元语法，Kneser-Ney 平滑" in list(strip.data[0].y)
    assert list(table.columns)[:2] == ["模型", "总比特数"] and "留出文本" in note and held.iloc[-1, 0] == "字符级 GPT"
    assert error.value.message.startswith("请输入至少两个字符的文本")
    summary, strip, _, table = overview.score_text(text)
    assert summary.startswith(f"**{len(text)} characters**") and list(table.columns)[0] == "model"
    with pytest.raises(gr.Error, match="at least two characters"):
        overview.score_text("x")
