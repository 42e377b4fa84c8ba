"""demo/ladder/overview.py (the Overview tab, issue #17): timeline links, the held-out ladder as the file has it, the
surprisal strip and totals equal to core/ladder's numbers, presets, bad input, and first-open wiring."""
import csv
import html
import io
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import gradio as gr
import numpy as np
import pytest

from core.text import i18n
from core.ladder import ladder, heldout as ladder_heldout
import app
from demo.ladder import overview
from demo.kit import presets
from demo.kit.widgets import sig4
from demo.kit.figures import COLORWAY, HIGHLIGHT

pytestmark = pytest.mark.usefixtures("one_torch_thread")


SVG = "{http://www.w3.org/2000/svg}"


def figures(page: str) -> list[ET.Element]:
    """The SVG figures of a page of HTML, parsed as XML (so each must be well-formed)."""
    return [ET.fromstring(svg) for svg in re.findall(r"<svg.*?</svg>", page, re.S)]


def held_out_csv(page: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(html.unescape(re.search(r'data-csv="([^"]*)"', page)[1]))))


class Cells(HTMLParser):
    """The text of every <td> of a page, row by row."""

    def __init__(self):
        super().__init__()
        self.rows, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "td":
            self.rows[-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_timeline_steps_link_to_their_tabs_in_order():
    timeline = figures(overview.path_html("en", app.TABS))[0]
    names = ["n-gram", "NNLM", "word2vec", "RNN / LSTM", "attention", "Transformer", "ELMo / GPT / BERT"]
    anchors = timeline.findall(f".//{SVG}a")
    assert [a.find(f"{SVG}text").text for a in anchors] == names
    assert [a.get("href") for a in anchors] == [overview.link(tab, preset) for *_, tab, preset in overview.timeline(app.TABS)]
    points = [float(c.get("cx")) for c in timeline.iter(f"{SVG}circle")]
    assert len(points) == len(names) and points == sorted(points)  # left to right, in the seed's order
    texts = [t.text for t in timeline.iter(f"{SVG}text")]
    assert {"2003", "2013", "2017", "2018"} <= set(texts)
    zh = " ".join(t.text for t in figures(overview.path_html("zh", app.TABS))[0].iter(f"{SVG}text"))
    assert i18n.text("overview.fig_timeline", "zh") in zh and i18n.text("overview.brought.lstm", "zh") in zh
    links = overview.timeline_links(app.TABS)
    assert "(?tab=attention&preset=thinking-machines)" in links and "(?tab=transformer)" in links
    # ELMo as seed §7 describes it: the three-layer view (word, layer 1, layer 2), not the one-layer biLM
    assert "[ELMo](?tab=lstm&preset=elmo-layers-bank)" in links


def test_every_link_opens_a_tab_and_a_preset_the_app_has():
    """Every link the path shows (timeline, step list, each rung's tab) and every rung's link names a tab of the app
    and, when it names a preset, one that tab registers (demo/kit/presets.py reads ?tab=…&preset=…)."""
    from demo.kit import tour

    registry = app.build_app().preset_registry
    links = [html.unescape(href) for lang in ("en", "zh")
             for href in re.findall(r'href="([^"]*)"', overview.path_html(lang, app.TABS))]
    links += [rung.tab for rung in ladder.rungs()]
    assert len(links) > 40
    for target in links:
        query = dict(part.split("=", 1) for part in target.lstrip("?").split("&"))
        if "tour" in query:  # "Start the guided tour" (demo/kit/tour.py checks its stops against the app)
            assert set(query) == {"tour"} and 1 <= int(query["tour"]) <= len(tour.STOPS), target
            continue
        assert query["tab"] in registry.tabs, target
        if "preset" in query:
            assert registry.find(query["tab"], query["preset"]) is not None, target


def test_the_path_shows_the_held_out_ladder_from_the_file():
    page = overview.path_html("en", app.TABS)
    facts, rows = ladder_heldout.load_held_out()
    assert f"{facts['held_out_chars']:,}" in page and facts["date"] in page
    bars = [r for r in figures(page)[1].iter(f"{SVG}rect") if r.get("data-value")]
    values = np.array([row.bits_per_char for row in rows])
    assert [r.get("data-mark") for r in bars] == [row.name for row in rows]
    np.testing.assert_allclose([float(r.get("data-value")) for r in bars], values)
    widths = np.array([float(r.get("width")) for r in bars])
    np.testing.assert_allclose(widths / values, widths[0] / values[0], rtol=1e-3)  # lengths ∝ values, from zero
    best = int(np.argmin(values))
    assert [r.get("fill") for r in bars] == [HIGHLIGHT if i == best else COLORWAY[0] for i in range(len(rows))]
    table = held_out_csv(page)
    assert table[0] == [i18n.text(f"overview.col.{c}", "en") for c in
                        ("model", "bits", "bits_byte", "perplexity", "tokenizer", "parameters", "training", "data",
                         "scored_by", "tab")]
    assert [r[0] for r in table[1:]] == [row.name for row in rows]
    assert [float(r[1]) for r in table[1:]] == [round(row.bits_per_char, 3) for row in rows]
    # bits/byte = bits/char × chars/bytes of the held-out text as scored (its characters after the first), recomputed
    held = ladder.training_split()[1][1:]
    ratio = len(held) / len(held.encode("utf-8"))
    assert ratio < 1 and [float(r[2]) for r in table[1:]] == [round(row.bits_per_char * ratio, 3) for row in rows]
    assert [float(r[3]) for r in table[1:]] == [round(row.perplexity, 2) for row in rows]
    assert [r[4] for r in table[1:]] == ["characters (80 + an unknown slot)"] * 10 + [
        "characters (76 + an unknown slot)"] * 3  # the n-gram's alphabet is the training split's; the nets' ≥ 10 uses
    assert [r[8] for r in table[1:]] == [row.equation for row in rows]  # the file's English, rebuilt from the keys
    assert all(r[-1].startswith("[") and "(?tab=" in r[-1] for r in table[1:])
    assert table[1][7] == rows[0].training_data and table[-1][7] == rows[-1].training_data
    assert f"{len(held):,} characters are {len(held.encode('utf-8')):,} bytes" in page
    parser = Cells()
    parser.feed(page)
    shown = [r for r in parser.rows if r]
    assert [r[:9] for r in shown] == [r[:9] for r in table[1:]]  # the table shows what its CSV holds
    assert [r[9] for r in shown] == [re.match(r"\[(.*)\]", r[9])[1] for r in table[1:]]  # the link's text


def test_the_path_is_drawn_when_the_app_is_built_without_an_event():
    """The path is a gr.HTML holding its HTML in every language, drawn when the app is built: nothing runs when the
    page opens (demo/kit/static_html.py says why), and building it needs no torch (core/ladder/heldout.py)."""
    with gr.Blocks() as blocks, gr.Tab("Overview") as tab, presets.Registry(app.TABS).tab("overview", tab):
        overview.build()
    path = next(b for b in blocks.blocks.values() if isinstance(b, gr.HTML) and "static-view" in b.elem_classes)
    assert set(path.props["html"]) == {"en", "zh"}
    assert path.props["html"]["zh"] == overview.path_html("zh", app.TABS) != overview.path_html("en", app.TABS)
    assert not [dep for dep in blocks.fns.values() if path in dep.outputs or path in dep.inputs]


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
    assert [row[1] for row in table] == [sig4(score.total_bits) for score in result.scores]
    assert "'我', '€'" in summary and "n-gram" in summary and "LSTM" in summary
    # bits per byte: the total over the UTF-8 bytes of characters 2..T (我 and € are 3 bytes each, — too)
    scored_bytes = len(text[1:].encode("utf-8"))
    assert scored_bytes == len(text) - 1 + 3 * 2 and f"are {scored_bytes} UTF-8 bytes" in summary
    assert [row[3] for row in table] == [sig4(score.total_bits / scored_bytes) for score in result.scores]
    assert [row[3] for row in table] == [sig4(row_bits * (len(text) - 1) / scored_bytes)
                                         for row_bits in (score.bits.mean() for score in result.scores)]
    assert {row[5] for row in table} == {"characters (80 + an unknown slot)", "characters (76 + an unknown slot)"}
    costs = table[0][4]
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



def test_the_ladder_fills_itself_on_open_through_the_presets_registry():
    """The Overview uses demo/kit/presets.py like every tab: its ladder is a view in the second sub-tab, computed when that
    sub-tab opens (the path, drawn when the app is built, has no view). Its presets are buttons with deep links, and
    its lesson steps run them (switching to the ladder's sub-tab)."""
    with gr.Blocks() as blocks, gr.Tab("Overview") as tab, presets.Registry(app.TABS).tab("overview", tab):
        overview.build()
    names = {dep.api_name for dep in blocks.fns.values()}
    assert {"overview_score", "overview_ladder_preset", "overview_lesson", "overview_ladder_open"} <= names

    registry = app.build_app().preset_registry
    views = {view.key: view for view in registry.tabs["overview"].views}
    assert set(views) == {"ladder"} and registry.opening("overview") == []
    assert views["ladder"].where.id == "ladder"
    assert [tab.id for tab in views["ladder"].switcher.children] == ["path", "ladder"]
    assert registry.find("overview", "closing-quote") is views["ladder"]
    updates = views["ladder"].run("closing-quote", select=True)
    assert updates[views["ladder"].inputs[0]].startswith('"If the whale') and updates[views["ladder"].done]
    assert updates[views["ladder"].switcher].selected == "ladder"


def test_results_and_errors_in_chinese():
    """One handler's result and one error in 中文 under using_language("zh"), and in English by default."""
    text = dict(overview.LADDER_TEXTS)["call-me-ishmael"]
    with i18n.using_language("zh"):
        summary, strip, totals, table = overview.score_text(text)
        with pytest.raises(gr.Error) as error:
            overview.score_text("x")
    assert summary.startswith(f"**{len(text)} 个字符**") and "比特" in summary
    assert strip.layout.title.text.startswith("每个字符的意外度") and "5 元语法，Kneser-Ney 平滑" in list(strip.data[0].y)
    assert list(table.columns)[:2] == ["模型", "总比特数"]
    held = held_out_csv(overview.path_html("zh", app.TABS))
    assert "留出文本" in overview.path_html("zh", app.TABS) and held[0][0] == "模型" and held[-1][0] == "字符级 GPT"
    assert error.value.message.startswith("请输入至少两个字符的文本")
    summary, strip, _, table = overview.score_text(text)
    assert summary.startswith(f"**{len(text)} characters**") and list(table.columns)[0] == "model"
    with pytest.raises(gr.Error, match="at least two characters"):
        overview.score_text("x")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_first_page_text_is_the_header_and_the_overview_in_one_language(lang):
    """overview.first_page: what the page shows before Gradio's front end has drawn (demo/server/first_page.py).
    Its headings are the translation tables' own first lines, its path is the path sub-tab's HTML, the other
    language's words are not in it, and nothing of it is left as Markdown."""
    other = "zh" if lang == "en" else "en"
    page = overview.first_page(lang, app.TABS)

    class Headings(HTMLParser):
        found: list[tuple[str, str]] = []
        tag = None

        def handle_starttag(self, tag, attrs):
            self.tag = tag if tag in ("h1", "h2") else None

        def handle_data(self, data):
            if self.tag:
                self.found.append((self.tag, data.strip()))
                self.tag = None

    parser = Headings()
    parser.found = []
    parser.feed(page)
    def first_line(key, language):
        return i18n.text(key, language).splitlines()[0].lstrip("# ").strip()

    assert parser.found[:2] == [("h1", first_line("app.intro", lang)),
                                ("h2", first_line("overview.intro", lang))]
    assert page.startswith('<div id="plm-first-page"') and page.count('id="plm-first-page"') == 1
    assert overview.path_html(lang, app.TABS) in page
    assert i18n.text("app.first_page_note", lang) in html.unescape(page)
    assert first_line("overview.intro", other) not in page and "**" not in page and "## " not in page
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    assert "getElementById(\"plm-first-page\")" in script and "MutationObserver" in script
    assert "/*" not in page.split("</style>")[0]  # the stylesheet's comments are not sent
