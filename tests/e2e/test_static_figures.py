"""The Overview's path, drawn when the app is built (demo/kit/static_html.py), in Chromium: it shows with the page, with no
request to the server, and its PNG, SVG and "⬇ CSV" buttons download what it shows: the PNG at slide width, the
SVG as text, the CSV with every row of the held-out file; in 中文, with a CJK font."""
from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from core.text import i18n
from core.ladder.heldout import load_held_out
from demo.kit import figures, static_html
from tests.e2e.conftest import fresh_page
from tests.e2e.first_open import CONTENT_JS, FULL_JS, VIEWPORT, open_tab

pytestmark = pytest.mark.e2e

SVG = "{http://www.w3.org/2000/svg}"
HELD_OUT_FIGURE = '[data-name="overview-held-out-bits"]'
TIMELINE = '[data-name="overview-timeline"]'


def opened(browser, served_app, locale: str):
    page = fresh_page(browser, served_app.url, locale, wait=False)
    page.locator(TIMELINE).first.wait_for()
    return page


@pytest.fixture(scope="module")
def en_page(browser, served_app):
    """One English page for the download tests (a page per test cost 3-5 s on 2 cores)."""
    page = opened(browser, served_app, "en-US")
    yield page
    page.close()


@pytest.fixture(scope="module")
def zh_page(browser, served_app):
    page = opened(browser, served_app, "zh-CN")
    yield page
    page.close()


def downloaded(page, button) -> tuple[str, bytes]:
    button.hover()
    with page.expect_download() as info:
        button.click()
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def colour_pixels(png: bytes, hex_colour: str) -> int:
    from PIL import Image

    image = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    rgb = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    return int((np.abs(image - rgb).sum(axis=2) < 12).sum())


def test_the_path_shows_with_the_page_even_when_no_event_can_run(browser, served_app):
    """Every request to Gradio's queue is refused, so no event runs: the figures and the table still show."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.route("**/gradio_api/queue/**", lambda route: route.abort())
    try:
        page.goto(served_app.url, wait_until="load")
        page.wait_for_function(f"() => {{ const c = ({CONTENT_JS})(); return c.plots >= 2 && c.tables >= 1; }}")
        shown = page.evaluate(CONTENT_JS)
        assert shown["emptyPlots"] == 0 and shown["emptyTables"] == 0, shown
        rows = page.locator(".static-table tbody tr").count()
        assert rows == len(load_held_out()[1])
    finally:
        context.close()


def test_once_the_path_shows_plotly_js_is_imported_once_for_the_tabs_that_plot(page):
    """figures.PLOTLY_PRELOAD_JS: with no click, the page imports Gradio's plotly chunk; the first plotted view then
    uses that module (the chunk is fetched once, not again by Gradio's Plot)."""
    page.wait_for_function("() => !!window.Plotly")
    fetched = "() => performance.getEntriesByType('resource').filter(e => e.name.includes('/assets/PlotlyPlot-')).length"
    assert page.evaluate(fetched) == 1
    open_tab(page, "Every model on your text")
    page.wait_for_function(FULL_JS)
    assert page.evaluate(fetched) == 1 and page.locator(".js-plotly-plot").filter(visible=True).count() >= 2


def test_png_and_svg_buttons_download_the_figure_at_slide_width(en_page):
    page = en_page
    from PIL import Image

    figure = page.locator(HELD_OUT_FIGURE)
    name, png = downloaded(page, figure.locator('button[data-format="png"]'))
    assert name == "overview-held-out-bits.png" and png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = Image.open(io.BytesIO(png)).size
    box = [float(v) for v in figure.locator("svg").get_attribute("viewBox").split()]
    assert width == static_html.SLIDE_WIDTH == 3200 and height == round(box[3] * width / box[2])
    assert colour_pixels(png, figures.HIGHLIGHT) > 10_000  # the best rung's bar, drawn in the accent colour
    assert colour_pixels(png, figures.COLORWAY[0]) > 100_000  # the other twelve

    name, svg = downloaded(page, figure.locator('button[data-format="svg"]'))
    assert name == "overview-held-out-bits.svg" and svg.startswith(b"<?xml")
    root = ET.fromstring(svg)
    rows = load_held_out()[1]
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("data-value")]
    assert [r.get("data-mark") for r in bars] == [row.name for row in rows]
    assert root.get("width") == f"{box[2]:g}" and "WenQuanYi Micro Hei" in root.get("font-family")

    name, png = downloaded(page, page.locator(TIMELINE).locator('button[data-format="png"]'))
    assert name == "overview-timeline.png" and Image.open(io.BytesIO(png)).size[0] == 3200
    assert colour_pixels(png, figures.COLORWAY[2]) > 500  # the word2vec point, drawn


def test_the_csv_button_downloads_every_row_of_the_held_out_file(en_page):
    page = en_page
    name, raw = downloaded(page, page.locator('.static-table button[data-format="csv"]'))
    assert name == "overview-held-out.csv" and raw.startswith("\ufeff".encode())
    assert raw.count(b"\r\n") == len(load_held_out()[1]) + 1  # RFC 4180 line ends, as the tables' CSV buttons
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))
    held = load_held_out()[1]
    assert rows[0][0] == "model" and [r[0] for r in rows[1:]] == [row.name for row in held]
    assert [float(r[1]) for r in rows[1:]] == [round(row.bits_per_char, 3) for row in held]


def platform_fonts(page, selector: str, seconds: float = 60.0) -> list[dict]:
    """The fonts Chromium drew the first ``selector``'s text with (DevTools' CSS.getPlatformFontsForNode). A node id
    goes stale when the page draws the figure again between the query and the read (it did once, in CI, while the
    Overview's first results arrived): the node is then looked up again, until ``seconds`` have passed."""
    import time

    from playwright.sync_api import Error

    client = page.context.new_cdp_session(page)
    client.send("DOM.enable")
    client.send("CSS.enable")
    deadline = time.monotonic() + seconds
    while True:
        root = client.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        node = client.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        try:
            if node:
                return client.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        except Error as error:
            if "Could not find node" not in str(error):
                raise
        if time.monotonic() > deadline:
            raise AssertionError(f"{selector} was not on the page long enough to read its fonts")


def test_in_chinese_a_cjk_font_draws_the_figures_and_the_export_keeps_the_text(zh_page):
    title = i18n.text("overview.fig_held_out", "zh")
    fonts = platform_fonts(zh_page, f"{HELD_OUT_FIGURE} svg > text")
    cjk = {font.strip("'") for font in figures.CJK_FONTS}
    chinese = sum(1 for ch in title if static_html.text_width(ch, 1) == 1)
    assert sum(f["glyphCount"] for f in fonts if f["familyName"] in cjk) >= chinese > 5, fonts
    _, svg = downloaded(zh_page, zh_page.locator(HELD_OUT_FIGURE).locator('button[data-format="svg"]'))
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert title in texts and i18n.text("overview.axis_bits_per_char", "zh") in texts
    _, png = downloaded(zh_page, zh_page.locator(HELD_OUT_FIGURE).locator('button[data-format="png"]'))
    assert colour_pixels(png, figures.HIGHLIGHT) > 10_000
