"""Layout on a phone and on a laptop (issue #31, Required 5 and 9), in Chromium against the offline app.

At 390×844 every top-level tab is reached in at most two taps (the tab bars wrap instead of hiding tabs behind
"⋯"; a tab that still sat in a menu would take two), no table cell is cut to "…", scrolled to its end the page
leaves nothing under the teacher's floating deck button, and no figure's title runs off its figure. At 1440×900 the
N-gram tab's first table shows its whole header. Every wait is on a condition of the page, never a fixed sleep.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1440, "height": 900}

# Text cut short by the browser: the cells and headers of every Dataframe on screen whose text is wider than their
# box while they end in an ellipsis, or hide the rest (overflow other than visible).
CUT_CELLS_JS = """() => [...document.querySelectorAll(
    '.table-wrap .header-cell .header.text, .table-wrap .body-cell .cell-wrap > span')]
  .filter((el) => el.offsetParent !== null && el.textContent.trim())
  .filter((el) => {
    const style = getComputedStyle(el);
    return el.scrollWidth > el.clientWidth + 1 && (style.textOverflow === 'ellipsis' || style.overflow !== 'visible');
  })
  .map((el) => el.textContent.trim())"""
# Text or controls the teacher's deck button (fixed at the bottom left, assets/kit.js) covers, by their boxes.
UNDER_THE_DECK_JS = """() => {
  const deck = document.querySelector('.kit-deck').getBoundingClientRect();
  return [...document.querySelectorAll('a, button, label, p, span, input, h1, h2, h3, td, th')]
    .filter((el) => el.offsetParent !== null && !el.closest('.kit-deck') && el.getClientRects().length)
    .filter((el) => { const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.left < deck.right && r.right > deck.left && r.top < deck.bottom
        && r.bottom > deck.top; })
    .map((el) => el.tagName + ' ' + el.textContent.trim().slice(0, 40));
}"""
AT_THE_END_JS = "() => window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1"
VISIBLE_CELLS_JS = """() => [...document.querySelectorAll('.table-wrap .body-cell')]
  .filter((el) => el.offsetParent !== null && el.textContent.trim()).length"""


def top_tab_names() -> list[str]:
    from app import TABS, tab_id
    from core.text.i18n import text

    return [text(f"tabs.{tab_id(module)}", "en") for module in TABS]


def open_page(browser, served_app, viewport: dict, query: str = "", locale: str = "en-US"):
    context = browser.new_context(viewport=viewport, device_scale_factor=1, locale=locale)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(served_app.url + query, wait_until="load")
    page.get_by_role("tab").first.wait_for()
    return context, page


def top_tab(page, name: str):
    """The top-level tab button (the first tab bar on the page holds the app's tabs)."""
    return page.locator(".tab-wrapper").first.get_by_role("tab", name=name, exact=True)


def test_on_a_phone_every_tab_is_two_taps_away_and_no_cell_is_cut(browser, served_app):
    context, page = open_page(browser, served_app, PHONE)
    try:
        taps = {}
        for name in top_tab_names():
            tab = top_tab(page, name)
            if tab.count() and tab.is_visible():
                tab.click()
                taps[name] = 1
            else:  # folded into Gradio's "⋯" menu: open it, then pick the tab
                page.locator(".tab-wrapper").first.get_by_role("button", name="More tabs").click()
                page.locator(".overflow-dropdown").first.get_by_role("button", name=name, exact=True).click()
                taps[name] = 2
            page.wait_for_function("(name) => [...document.querySelector('.tab-wrapper').querySelectorAll("
                                   "'[role=tab][aria-selected=true]')].some((t) => t.textContent.trim() === name)",
                                   arg=name)
        assert len(taps) == len(top_tab_names()) and max(taps.values()) <= 2, taps
        assert set(taps.values()) == {1}, taps  # today's bars wrap: every tab is one tap

        top_tab(page, "N-gram").click()
        page.wait_for_function(f"({VISIBLE_CELLS_JS})() >= 8")  # the counts table: 3 rows of 4 cells
        assert page.evaluate(CUT_CELLS_JS) == []
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], "the page itself scrolls sideways"
        # Scrolled to its end, the page leaves room under the deck button: the footer's links are not under it.
        page.locator(".kit-deck").wait_for()
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        page.wait_for_function(AT_THE_END_JS)
        assert page.evaluate(UNDER_THE_DECK_JS) == []
    finally:
        context.close()


# Each visible figure's title, and how far it reaches past its figure's right edge (px; > 0: cut off).
TITLE_REACH_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((gd) => gd.offsetParent !== null && gd.querySelector('.gtitle'))
  .map((gd) => [gd.querySelector('.gtitle').textContent,
                gd.querySelector('.gtitle').getBoundingClientRect().right - gd.getBoundingClientRect().right])"""


def settled_with_titles(page) -> None:
    """Wait until nothing computes and at least three figures show a title (the Transformer tab's first view)."""
    from tests.e2e import learner_path

    page.wait_for_function(learner_path.SETTLED_JS, polling=learner_path.POLL_MS)
    page.wait_for_function(f"({TITLE_REACH_JS})().length >= 3", polling=learner_path.POLL_MS)


def cut_titles(page) -> list[tuple[str, int]]:
    """The visible figures' titles that reach past their figure, with how far (px)."""
    return [(title, round(over)) for title, over in page.evaluate(TITLE_REACH_JS) if over > 0]


# The panel titles of each visible grid of panels (demo/kit/figures.py subplot_grid), and the column labels of each
# visible figure that has them (layout.meta.column_labels: the attention map's H1…H12), that overlap another's.
PANELS_OVERLAP_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((gd) => gd.offsetParent !== null && (gd.layout?.meta?.grid || gd.layout?.meta?.column_labels))
  .map((gd) => [...gd.querySelectorAll('.annotation-text')]
    .slice(0, gd.layout.meta.grid?.panels ?? gd.layout.meta.column_labels)
    .map((el) => [el.textContent, el.getBoundingClientRect()]))
  .flatMap((titles) => titles.filter(([_, a], i) => titles.some(([__, b], j) => i !== j && a.left < b.right - 1
    && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)).map(([text]) => text))"""


# The lines of the visible figures' titles that end between two characters of 中文, with the next line's start.
HAN_BREAKS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter((gd) => gd.offsetParent !== null)
  .map((gd) => [...gd.querySelectorAll('.gtitle tspan.line')].map((line) => line.textContent))
  .flatMap((lines) => lines.slice(1).map((next, i) => [lines[i], next]))
  .filter(([line, next]) => /[\\u2e80-\\u9fff]$/.test(line) && /^[\\u2e80-\\u9fff]/.test(next))"""


# A visible grid of three panels or more.
SHOWN_GRID_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].some((gd) =>
  gd.offsetParent !== null && gd.layout?.meta?.grid?.panels >= 3)"""


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_on_a_phone_every_figure_title_fits_its_figure(browser, served_app, locale):
    """The server wraps a title for a laptop's plot (560 px a line); on a phone assets/figure_head.js wraps it again
    to the plot's width. Before, the titles of 68 of the 95 figures of the app's tabs and sub-tabs ran off the right
    edge in English, 59 in 中文 (“第 6 层：“bank” 在每个头里看向哪里（每行和为 1）”: 143 px); here, the
    Transformer tab's first view. And a grid of small panels takes one column: the masked LM's top 5 per hidden
    character, in three columns of 90 px, wrote each panel's title over its neighbours'. In 中文 no title line ends
    inside a run of characters where the run has a comma, a space or a "（" half a line or more in (before, the
    Transformer view's three: "每一⏎步之后", "看向⏎哪里", "加⏎上的量")."""
    from tests.e2e import learner_path

    context, page = open_page(browser, served_app, PHONE, "?tab=transformer", locale)
    try:
        settled_with_titles(page)
        assert cut_titles(page) == [] and page.evaluate(HAN_BREAKS_JS) == []
        page.evaluate("(href) => window.plmOpenLink(href)", "?tab=mlm")
        page.wait_for_function(SHOWN_GRID_JS, polling=learner_path.POLL_MS)
        page.wait_for_function(learner_path.SETTLED_JS, polling=learner_path.POLL_MS)
        assert page.evaluate(PANELS_OVERLAP_JS) == []
        assert cut_titles(page) == [] and page.evaluate(HAN_BREAKS_JS) == []
    finally:
        context.close()


def saved_png(page, title: str, which: str = "gd.layout?.meta?.grid"):
    """The pixels of the PNG that the camera button (``title``) of the page's first visible figure ``which`` (a
    JavaScript condition on ``gd``; default: a grid of panels) downloads."""
    import numpy as np
    from PIL import Image

    page.evaluate("() => { document.querySelectorAll('[data-probe]').forEach((el) => delete el.dataset.probe); "
                  "[...document.querySelectorAll('.js-plotly-plot')].find((gd) => gd.offsetParent !== null "
                  f"&& {which}).dataset.probe = 'grid'; }}")
    grid = page.locator(".js-plotly-plot[data-probe=grid]")
    grid.hover()
    with page.expect_download() as download:
        grid.locator(f'.modebar-btn[data-title="{title}"]').click()
    return np.asarray(Image.open(download.value.path()).convert("RGB"), dtype=np.int16)


# The first visible heatmap with a colour bar that is not the layer × head map: [its plot's width, how far the bar's
# top is under the plot's bottom, how far the bar's left is right of the plot's right] (px).
COLOUR_BAR_JS = """() => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find((gd) =>
    gd.offsetParent !== null && gd.querySelector('.colorbar') && !gd.layout?.meta?.column_labels);
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect(), bar = gd.querySelector('.colorbar .cbfill')
    .getBoundingClientRect();
  return [plot.width, bar.top - plot.bottom, bar.left - plot.right].map(Math.round); }"""


def test_a_figure_saved_on_a_phone_is_the_one_a_laptop_saves_and_the_head_labels_fit(browser, served_app):
    """A phone re-lays a figure out (its title wrapped again, a grid's panels in one column, its colour bar under
    the plot). Its camera button used to save that phone layout stretched to the slide's 1600 × 900: the masked LM's
    five panels one under another, each 130 px tall. It now saves the figure as the server laid it out, the same PNG
    a laptop saves. The layer × head map keeps only head labels that fit: on a phone H10, H11 and H12 were printed
    over one another. A heatmap's colour bar beside the plot left it 156 px of a 326 px figure on a phone; under it
    (assets/figure_head.js colorbarBelow), 197 px."""
    import numpy as np

    from core.text.i18n import text
    from tests.e2e import learner_path

    title = text("common.plotly_download_png_lower", "zh")
    saved, heads, bars = {}, {}, {}
    for name, viewport in (("phone", PHONE), ("laptop", LAPTOP)):
        context, page = open_page(browser, served_app, viewport, "?tab=mlm", "zh-CN")
        try:
            page.wait_for_function(SHOWN_GRID_JS, polling=learner_path.POLL_MS)
            page.wait_for_function(learner_path.SETTLED_JS, polling=learner_path.POLL_MS)
            saved[name] = saved_png(page, title)
            page.evaluate("(href) => window.plmOpenLink(href)", "?tab=attention&preset=it-was-tired")
            page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some((gd) => "
                                   "gd.offsetParent !== null && gd.layout?.meta?.column_labels && "
                                   "gd.querySelectorAll('.annotation-text').length >= 4)",
                                   polling=learner_path.POLL_MS)
            page.wait_for_function(learner_path.SETTLED_JS, polling=learner_path.POLL_MS)
            if name == "phone":
                assert page.evaluate(PANELS_OVERLAP_JS) == []
            bars[name] = page.evaluate(COLOUR_BAR_JS)
            heads[name] = saved_png(page, title, "gd.querySelector('.colorbar') && !gd.layout?.meta?.column_labels")
        finally:
            context.close()
    for figures in (saved, heads):
        phone, laptop = figures["phone"], figures["laptop"]
        assert phone.shape == laptop.shape == (1800, 3200, 3)  # figures.SLIDE_EXPORT: 1600 × 900 at scale 2
        assert np.abs(phone - laptop).mean() < 0.5, np.abs(phone - laptop).mean()
    (width, below, beside), (_, _, laptop_beside) = bars["phone"], bars["laptop"]
    assert below >= 0 and width >= 180, bars["phone"]  # under the plot, which keeps 197 of 326 px (156 beside)
    assert laptop_beside >= 0, bars["laptop"]  # beside it, where there is room


# The number of lines of each visible figure's title.
TITLE_LINES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((gd) => gd.offsetParent !== null && gd.querySelector('.gtitle'))
  .map((gd) => Math.max(1, gd.querySelectorAll('.gtitle tspan.line').length))"""


# Each visible figure's width and the width it was last laid out for (assets/figure_head.js).
WIDTHS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
  .filter((gd) => gd.offsetParent !== null && gd.querySelector('.gtitle')).map((gd) => [gd.clientWidth, gd.__plmWidth])"""


def test_a_tablet_turned_upright_and_back_wraps_its_titles_again(browser, served_app):
    """A figure is laid out for the width it is drawn at. Turned from sideways (1280 px: the Transformer tab's
    figures 600 px wide, every title on one line) to upright (800 px: 344 px wide), the figures wrap their titles to
    the narrower plot; turned back, each takes the lines it had. Before, a figure kept the layout of the width it was
    drawn at until it was drawn again: turned upright, its titles ran off the right edge."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from tests.e2e import learner_path

    sideways, upright = {"width": 1280, "height": 800}, {"width": 800, "height": 1280}
    context, page = open_page(browser, served_app, sideways, "?tab=transformer")
    try:
        settled_with_titles(page)
        lines = page.evaluate(TITLE_LINES_JS)
        assert cut_titles(page) == []
        page.set_viewport_size(upright)
        try:
            page.wait_for_function(f"() => ({TITLE_REACH_JS})().every(([_, over]) => over <= 0)",
                                   polling=learner_path.POLL_MS, timeout=15_000)
        except PlaywrightTimeout:
            pass  # the assertion names the titles
        assert cut_titles(page) == []
        wrapped = page.evaluate(TITLE_LINES_JS)
        assert len(wrapped) == len(lines) and sum(wrapped) > sum(lines), (lines, wrapped)
        page.set_viewport_size(sideways)
        try:
            page.wait_for_function("(lines) => JSON.stringify((" + TITLE_LINES_JS + ")()) === JSON.stringify(lines)",
                                   arg=lines, polling=learner_path.POLL_MS, timeout=15_000)
        except PlaywrightTimeout:
            pass  # the assertion names the lines and the figures' widths
        assert page.evaluate(TITLE_LINES_JS) == lines, (lines, page.evaluate(WIDTHS_JS))
        assert cut_titles(page) == []
    finally:
        context.close()


def test_on_a_laptop_the_ngram_counts_table_shows_its_whole_header(browser, served_app):
    context, page = open_page(browser, served_app, LAPTOP, "?tab=ngram")
    try:
        table = page.locator(".table-wrap").filter(has=page.locator(".body-cell")).first
        table.locator(".body-cell").first.wait_for()
        headers = table.locator(".header-cell .header.text")
        page.wait_for_function("(el) => el.textContent.includes('count(ctx)')",
                               arg=table.locator(".header-cell").nth(2).element_handle())
        shown = headers.evaluate_all("(els) => els.map((el) => [el.textContent.trim(), el.scrollWidth <= "
                                     "el.clientWidth + 1, el.getBoundingClientRect().height])")
        assert [name for name, _, _ in shown][:4] == ["w", "count(ctx,w)", "count(ctx)", "P_MLE"]
        assert all(fits for _, fits, _ in shown), shown
        line = max(height for _, _, height in shown[:1])
        assert all(height <= line * 1.5 for _, _, height in shown), shown  # one line each, not broken letters
        assert page.evaluate(CUT_CELLS_JS) == []
        assert "0.6667" in table.inner_text()  # 4 significant digits, not 0.6666666666666666
    finally:
        context.close()


# Pairs of a scatter's point labels whose boxes overlap (more than 1 px each way), their area, and labels that run
# past the plot area, where plotly cuts them off.
LABEL_OVERLAPS_JS = """(gd) => {
  const boxes = [...gd.querySelectorAll('.textpoint text')].map((t) => t.getBoundingClientRect())
    .filter((b) => b.width > 0);
  const plot = gd.querySelector('.nsewdrag').getBoundingClientRect();
  let pairs = 0, area = 0;
  boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b) => {
    const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
    const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
    if (w > 1 && h > 1) { pairs += 1; area += w * h; }
  }));
  const cut = boxes.filter((b) => b.left < plot.left - 2 || b.right > plot.right + 2 || b.top < plot.top - 2
    || b.bottom > plot.bottom + 2).length;
  return {labels: boxes.length, pairs, area: Math.round(area), cut};
}"""


# LABEL_OVERLAPS_JS on the visible projection that shows the days (null while none does).
DAYS_JS = """() => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find((gd) => gd.offsetParent !== null
    && [...gd.querySelectorAll('.textpoint text')].some((t) => t.textContent === 'january'));
  return gd ? (""" + LABEL_OVERLAPS_JS + """)(gd) : null; }"""


def test_the_projections_words_are_not_drawn_over_one_another_and_a_phone_puts_its_legend_below(browser, served_app):
    """The GloVe projection's preset (king, queen, man, woman, … and 3 neighbours each). On a laptop every label was
    "top center", and 16 pairs of its 27 labels overlapped (3,199 px²), man, woman, girl and boy on top of each
    other; placed by demo/kit/text_size.label_positions: 3 pairs, 108 px², none cut off (2026-11-30). On a phone
    the legend beside the plot left it 135 px of a 320 px figure, and 26 pairs overlapped with 8 labels cut off;
    with the legend under it (assets/figure_head.js legendBelow), 226 px, and 6 pairs, none cut off. The days and
    numbers preset's clusters sit at the plot's right edge, where plotly cut off 2 labels on a laptop ("january")
    and 3 on a phone ("two", "thursday", "january"); the axes now widen until every label is inside (fitLabels),
    and the saved PNG keeps plotly's own ranges, the same on both."""
    import numpy as np
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from core.text.i18n import text
    from tests.e2e import learner_path

    widths, saved, days = {}, {}, {}
    for viewport in (LAPTOP, PHONE):
        context, page = open_page(browser, served_app, viewport, "?tab=embeddings&preset=capitals")
        try:
            plot = page.locator(".js-plotly-plot").filter(has=page.locator(".textpoint")).first
            plot.locator(".textpoint text").nth(26).wait_for()
            shown = plot.evaluate(LABEL_OVERLAPS_JS)
            assert shown["labels"] == 27 and shown["cut"] == 0, shown
            assert shown["pairs"] <= (6 if viewport is LAPTOP else 10) and shown["area"] <= 800, shown
            widths[viewport["width"]] = plot.evaluate("""(gd) => [gd.querySelector('.nsewdrag').getBoundingClientRect()
                .width, gd.querySelector('.legend').getBoundingClientRect().top
                - gd.querySelector('.nsewdrag').getBoundingClientRect().bottom]""")
            saved[viewport["width"]] = saved_png(page, text("common.plotly_download_png_lower", "en"),
                                                 "gd.querySelector('.textpoint')")
            # days and numbers: clusters at the plot's right edge, whose labels plotly cut off there
            page.evaluate("(href) => window.plmOpenLink(href)", "?tab=embeddings&preset=days-numbers")
            page.wait_for_function(f"() => ({DAYS_JS})()?.labels === 24", polling=learner_path.POLL_MS)
            try:  # the axes widen once the figure is drawn (assets/figure_head.js fitLabels)
                page.wait_for_function(f"() => ({DAYS_JS})().cut === 0", polling=learner_path.POLL_MS, timeout=15_000)
            except PlaywrightTimeout:
                pass  # the assertion says how many
            shown = page.evaluate(DAYS_JS)
            assert shown["cut"] == 0, shown
            days[viewport["width"]] = saved_png(page, text("common.plotly_download_png_lower", "en"),
                                                "gd.querySelector('.textpoint')")
        finally:
            context.close()
    assert widths[PHONE["width"]][0] >= 200 and widths[PHONE["width"]][1] > 0, widths  # under the plot
    assert widths[LAPTOP["width"]][1] < 0, widths  # beside it, where there is room
    for pngs in (saved, days):  # the phone saves the laptop's PNG: legend beside, plotly's own ranges
        phone, laptop = pngs[PHONE["width"]], pngs[LAPTOP["width"]]
        assert phone.shape == laptop.shape and np.abs(phone - laptop).mean() < 0.5, np.abs(phone - laptop).mean()
