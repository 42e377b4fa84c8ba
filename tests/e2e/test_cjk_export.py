"""中文 in figures: on screen and in the PNG and SVG exports, Chinese text is drawn with a CJK font, not as boxes.

A figure made by demo/kit/figures.py (its theme, its export config) with a Chinese title, Chinese axis title and
Chinese tick labels is drawn by plotly.js in Chromium and exported the way the modebar buttons do it
(``Plotly.toImage``, PNG and SVG, slide size). What is checked:

1. **Which font draws the glyphs.** Chromium's DevTools ``CSS.getPlatformFontsForNode`` names the font that
   actually rendered the title's text: it must be one of figures.CJK_FONTS (on CI and here: WenQuanYi Micro Hei,
   from fonts-wqy-microhei, which .ci/run installs), for all of its Chinese characters.
2. **The SVG carries the font stack.** Every <text> of the exported SVG names the CJK fonts in its font-family, so
   a slide tool or browser opening the file picks one it has.
3. **The exports show glyphs, not boxes.** In the exported PNG, and in the exported SVG drawn by Chromium into a
   PNG, the title's four different characters each leave ink, and the four character cells differ from one another.
   A missing glyph is drawn as the same box (or nothing) for every character, which fails both.
"""
from __future__ import annotations

import base64
import io
import re
import urllib.parse
from pathlib import Path

import numpy as np
import plotly
import pytest

from demo.kit import figures

pytestmark = pytest.mark.e2e

TITLE = "词向量图"  # four different characters, drawn large so each character cell is easy to find
TITLE_SIZE = 96
TOP_MARGIN = 170


def chinese_figure():
    fig = figures.bar(["今天", "天气", "很好"], [0.5, 0.3, 0.2], TITLE, value_title="概率")
    fig.update_layout(title_font_size=TITLE_SIZE, margin=dict(t=TOP_MARGIN), width=1600, height=900)
    return fig


@pytest.fixture(scope="module")
def plot_page(browser, tmp_path_factory):
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    html = tmp_path_factory.mktemp("cjk") / "figure.html"
    config = {"toImageButtonOptions": figures.SLIDE_EXPORT, "displaylogo": False}
    chinese_figure().write_html(html, include_plotlyjs=False, full_html=True, config=config, div_id="fig",
                                default_width=1600, default_height=900)
    text = html.read_text(encoding="utf-8").replace(
        "<head>", f'<head><script src="{plotly_js.as_uri()}"></script>', 1)
    html.write_text(text, encoding="utf-8")
    context = browser.new_context(viewport={"width": 1700, "height": 1000})
    page = context.new_page()
    page.goto(html.as_uri())
    page.wait_for_function("() => document.querySelector('#fig .gtitle')")
    yield page
    context.close()


def _data_url_bytes(url: str) -> bytes:
    head, _, data = url.partition(",")
    return base64.b64decode(data) if ";base64" in head else urllib.parse.unquote(data).encode("utf-8")


def title_cells(png: bytes) -> list[np.ndarray]:
    """The title band of a PNG export cut into its four character cells (the ink's horizontal extent in four), each
    cropped tight to its ink, so the same glyph gives the same array wherever it sits."""
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("L"), dtype=np.int16)
    scale = image.shape[1] / 1600
    band = image[: int(TOP_MARGIN * scale)] < 128  # dark ink on white
    columns = np.flatnonzero(band.any(axis=0))
    assert columns.size, "no ink at all in the title band"
    left, right = columns[0], columns[-1] + 1
    width = (right - left) / len(TITLE)
    cells = []
    for i in range(len(TITLE)):
        cell = band[:, int(left + i * width): int(left + (i + 1) * width)]
        rows, cols = np.flatnonzero(cell.any(axis=1)), np.flatnonzero(cell.any(axis=0))
        cells.append(cell[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1] if rows.size else cell[:0, :0])
    return cells


def assert_distinct_glyphs(png: bytes, what: str) -> None:
    cells = title_cells(png)
    ink = [int(cell.sum()) for cell in cells]
    assert min(ink) > 200, f"{what}: a title character left (almost) no ink: {ink}"
    height = max(cell.shape[0] for cell in cells)
    width = max(cell.shape[1] for cell in cells)
    padded = [np.pad(cell, ((0, height - cell.shape[0]), (0, width - cell.shape[1]))) for cell in cells]
    for i in range(len(cells)):
        for j in range(i + 1, len(cells)):
            differing = int((padded[i] != padded[j]).sum())
            # The same box drawn twice differs by a few pixels at most; two different characters by hundreds.
            assert differing > 0.2 * min(ink[i], ink[j]), \
                f"{what}: characters {TITLE[i]} and {TITLE[j]} are drawn alike ({differing} pixels differ)"


def test_the_theme_names_a_cjk_font_in_every_figure_helper():
    cjk = [font.strip("'") for font in figures.CJK_FONTS]
    assert "WenQuanYi Micro Hei" in cjk  # the one CI installs
    template = figures.TEMPLATE.layout
    assert template.font.family == figures.FONT_FAMILY and template.hoverlabel.font.family == figures.FONT_FAMILY
    # Every helper's figure uses the template (no helper sets a font family of its own).
    made = [figures.bar(["今天"], [1.0], "标题"), figures.heatmap(np.eye(2), ["注", "意"], ["注", "意"], "标题"),
            figures.lines([0, 1], {"损失": [1, 0]}, "标题"), figures.empty_figure("空"),
            figures.scatter(np.zeros((2, 2)), ["国王", "王后"], ["词", "词"], "标题")]
    for fig in made:
        assert fig.layout.template.layout.font.family == figures.FONT_FAMILY
        assert "family" not in fig.to_plotly_json()["layout"].get("font", {})


def test_chromium_draws_the_title_with_a_cjk_font(plot_page):
    client = plot_page.context.new_cdp_session(plot_page)
    client.send("DOM.enable")
    client.send("CSS.enable")
    root = client.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = client.send("DOM.querySelector", {"nodeId": root, "selector": "#fig .gtitle"})["nodeId"]
    fonts = client.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    cjk = {font.strip("'") for font in figures.CJK_FONTS}
    drawn = {font["familyName"]: font["glyphCount"] for font in fonts}
    assert sum(count for family, count in drawn.items() if family in cjk) == len(TITLE), drawn


def test_png_export_shows_the_chinese_glyphs(plot_page):
    url = plot_page.evaluate("""() => Plotly.toImage(document.getElementById('fig'),
        {format: 'png', width: 1600, height: 900, scale: 1})""")
    png = _data_url_bytes(url)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert_distinct_glyphs(png, "PNG export")


def test_svg_export_names_the_cjk_fonts_and_renders_the_glyphs(plot_page):
    url = plot_page.evaluate("""() => Plotly.toImage(document.getElementById('fig'),
        {format: 'svg', width: 1600, height: 900})""")
    svg = _data_url_bytes(url).decode("utf-8")
    assert TITLE in svg and "今天" in svg and "概率" in svg  # text stays text (vector, searchable)
    families = re.findall(r"font-family:\s*([^;\"]+)", svg)
    assert families, "no font-family in the SVG"
    for family in families:
        assert "WenQuanYi Micro Hei" in family and "Noto Sans CJK SC" in family, family
    # The SVG file itself, drawn by Chromium (as an <img>, the way a browser or slide tool opens it) into a PNG.
    drawn = plot_page.evaluate("""(svg) => new Promise((resolve, reject) => {
        const img = new Image();
        img.onload = () => {
            const canvas = document.createElement('canvas');
            canvas.width = 1600; canvas.height = 900;
            const ctx = canvas.getContext('2d');
            ctx.fillStyle = 'white'; ctx.fillRect(0, 0, 1600, 900);
            ctx.drawImage(img, 0, 0, 1600, 900);
            resolve(canvas.toDataURL('image/png'));
        };
        img.onerror = () => reject(new Error('the SVG did not load'));
        img.src = 'data:image/svg+xml;charset=utf-8,' + encodeURIComponent(svg);
    })""", svg)
    assert_distinct_glyphs(_data_url_bytes(drawn), "SVG export drawn by Chromium")


def test_the_glyph_check_sees_boxes(plot_page):
    """The check above is not vacuous: characters no font has (private use) all come out alike or empty."""
    url = plot_page.evaluate("""() => {
        const gd = document.getElementById('fig');
        return Plotly.toImage({data: gd.data, layout: {...gd.layout, title: {...gd.layout.title,
            text: '\\ue000\\ue001\\ue002\\ue003'}}}, {format: 'png', width: 1600, height: 900, scale: 1});
    }""")
    with pytest.raises(AssertionError):
        assert_distinct_glyphs(_data_url_bytes(url), "private-use characters")


def test_in_the_app_chinese_ticks_use_a_cjk_font_and_the_svg_button_keeps_them(page):
    """The same in the running app, with Gradio's own plotly.js: the N-gram tab opens on the seed's Chinese toy
    corpus, so its bar chart's tick labels are Chinese words. The CJK font draws them, and the SVG the modebar's
    SVG button downloads carries them as text with the CJK font stack."""
    page.get_by_role("tab", name="N-gram", exact=True).filter(visible=True).first.click()
    plot = page.locator(".js-plotly-plot").filter(visible=True).first
    plot.locator("text", has_text="词性").first.wait_for()

    client = page.context.new_cdp_session(page)
    client.send("DOM.enable")
    client.send("CSS.enable")
    root = client.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    ticks = client.send("DOM.querySelectorAll", {"nodeId": root, "selector": ".js-plotly-plot .ytick text"})["nodeIds"]
    cjk = {font.strip("'") for font in figures.CJK_FONTS}
    drawn = {}
    for node in ticks:
        for font in client.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]:
            drawn[font["familyName"]] = drawn.get(font["familyName"], 0) + font["glyphCount"]
    assert sum(count for family, count in drawn.items() if family in cjk) >= 2, drawn

    plot.hover()
    with page.expect_download() as download:
        plot.locator('[data-title^="Download plot as SVG"]').click()
    svg = Path(download.value.path()).read_text(encoding="utf-8")
    assert "词性" in svg
    assert all("WenQuanYi Micro Hei" in family for family in re.findall(r"font-family:\s*([^;\"]+)", svg))
