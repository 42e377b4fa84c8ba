"""demo/kit/static_html.py: SVG figures and HTML tables drawn when the app is built (the Overview's path).

Values are checked against what was passed in, read back from the SVG/HTML with the standard library's XML and CSV
parsers: every figure must be well-formed XML, every text escaped, every bar as long as its value says."""
import csv
import html
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import app
from demo.kit import presets, static_html
from demo.kit.figures import COLORWAY, HIGHLIGHT

SVG = "{http://www.w3.org/2000/svg}"


def svg_of(figure_html: str) -> ET.Element:
    return ET.fromstring(re.search(r"<svg.*</svg>", figure_html, re.S)[0])


@pytest.mark.parametrize("top, expected", [(4.3986, [0, 1, 2, 3, 4, 5]), (1.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
                                           (0.07, [0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]),
                                           (730, [0, 100, 200, 300, 400, 500, 600, 700, 800]),
                                           (0, [0, 1])])
def test_nice_ticks_cover_the_top_in_round_steps(top, expected):
    assert static_html.nice_ticks(top) == pytest.approx(expected)


def test_wrap_breaks_at_spaces_or_between_cjk_characters_within_the_width():
    size = 14
    lines = static_html.wrap("pre-train once, fine-tune for every task", 150, size)
    assert " ".join(lines) == "pre-train once, fine-tune for every task" and len(lines) > 1
    assert all(static_html.text_width(line, size) <= 150 for line in lines)
    lines = static_html.wrap("预训练一次，为每个任务微调", 5 * size, size)
    assert "".join(lines) == "预训练一次，为每个任务微调" and [len(line) for line in lines] == [5, 5, 3]
    assert static_html.wrap("   ", 100, size) == [] and static_html.wrap("one", 1, size) == ["one"]
    assert static_html.text_width("中文", 10) == 20 and static_html.text_width("ab", 10) == pytest.approx(10.4)


def test_bars_draw_each_value_to_scale_and_highlight_the_chosen_one():
    labels, values = ["whale", "sea", "<ship & 船>"], [0.5, 0.25, 0.125]
    figure = static_html.bars(labels, values, "Next <word>", "test-bars", "en", value_title="p",
                              highlight=[False, True, False])
    svg = svg_of(figure)
    rects = [r for r in svg.iter(f"{SVG}rect") if r.get("data-value")]
    assert [r.get("data-mark") for r in rects] == labels  # escaped in the source, read back as written
    np.testing.assert_allclose([float(r.get("data-value")) for r in rects], values)
    widths = np.array([float(r.get("width")) for r in rects])
    np.testing.assert_allclose(widths / values, widths[0] / values[0], rtol=1e-3)
    assert [r.get("fill") for r in rects] == [COLORWAY[0], HIGHLIGHT, COLORWAY[0]]
    assert [float(r.get("x")) for r in rects] == [float(rects[0].get("x"))] * 3  # one zero baseline
    texts = [t.text for t in svg.iter(f"{SVG}text")]
    assert "Next <word>" in texts and "0.125" in texts and "<ship & 船>" in texts
    assert "<ship" not in figure and 'data-format="png"' in figure and 'data-format="svg"' in figure
    assert 'data-name="test-bars"' in figure


def test_timeline_keeps_end_labels_inside_the_figure():
    steps = [(str(2000 + i), f"step {i}", "a long description of what this step brought to the field", f"?tab={i}")
             for i in range(7)]
    svg = svg_of(static_html.timeline(steps, "T", "test-timeline", "zh"))
    width = float(svg.get("viewBox").split()[2])
    for text in svg.iter(f"{SVG}text"):
        half = static_html.text_width(text.text, float(text.get("font-size"))) / 2
        if text.get("text-anchor") == "middle":
            assert half <= float(text.get("x")) <= width - half, text.text
    assert [a.get("href") for a in svg.iter(f"{SVG}a")] == [f"?tab={i}" for i in range(7)]


def test_table_shows_escaped_cells_and_its_csv_holds_them_as_they_are():
    headers = ["model", "bits", "tab"]
    rows = [["a, \"quoted\"", "1.500", "[N-gram tab](?tab=ngram&preset=x)"], ["<b>中文</b>", "2", "[QA](?tab=qa)"]]
    page = static_html.table(headers, rows, "test-table", "zh", markdown_columns=[2])
    cells = list(csv.reader(io.StringIO(html.unescape(re.search(r'data-csv="([^"]*)"', page)[1]))))
    assert cells == [headers, *rows]
    assert "&lt;b&gt;中文&lt;/b&gt;" in page and "<b>中文</b>" not in page  # a cell is text, never markup
    assert '<a href="?tab=ngram&amp;preset=x">N-gram tab</a>' in page  # the Markdown column's link
    assert page.count("<tr>") == 3 and 'data-name="test-table"' in page


def test_markdown_renders_without_raw_html():
    assert static_html.markdown("**bold** `code`") == "<p><strong>bold</strong> <code>code</code></p>\n"
    assert "<script>" not in static_html.markdown("<script>alert(1)</script>")
    assert static_html.markdown_inline("[x](?tab=qa)") == '<a href="?tab=qa">x</a>'


def test_the_path_imports_gradios_plotly_chunk_once_it_shows():
    """figures.PLOTLY_PRELOAD_JS names the plotly chunk this Gradio ships (a Gradio upgrade that renames or splits it
    fails here, not silently), and the Overview's path runs it when it mounts."""
    from pathlib import Path

    import gradio as gr

    from demo.kit import figures
    from demo.ladder import overview

    chunk = figures.plotly_chunk()
    assert chunk and (Path(gr.__file__).parent / "templates" / "frontend" / "assets" / chunk).stat().st_size > 1e6
    assert f'"{chunk}"' in figures.PLOTLY_PRELOAD_JS and "requestIdleCallback" in figures.PLOTLY_PRELOAD_JS
    with gr.Blocks() as blocks, gr.Tab("Overview") as tab, presets.Registry(app.TABS).tab("overview", tab):
        overview.build()
    path = next(b for b in blocks.blocks.values() if isinstance(b, gr.HTML) and "static-view" in b.elem_classes)
    assert path.js_on_load.endswith(figures.PLOTLY_PRELOAD_JS) and static_html.EXPORT_JS in path.js_on_load
