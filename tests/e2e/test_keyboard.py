"""Keyboard and dark mode in Chromium (issue #37), on the offline app.

Keyboard: with Tab alone a learner reaches a preset button, a lesson's "Show me", a drawn figure's CSV/PNG/SVG
buttons, a plotly figure's modebar buttons (its "Data" table among them) and the tour's controls; Enter or Space
uses each, and the focused control shows a visible outline (:focus-visible).

Dark mode (``?__theme=dark``): plotly figures get the dark template (dark paper, light text and axes) and the drawn
SVG figures' text turns light; a screenshot is written to tests/e2e/_artifacts/dark-*.png.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e import learner_path
from tests.e2e.conftest import fresh_page

pytestmark = pytest.mark.e2e
ARTIFACTS = Path(__file__).parent / "_artifacts"
FOCUSED_JS = """(selector) => { const el = document.activeElement;
  return !!el && el.matches(selector) && el.matches(':focus-visible')
    && getComputedStyle(el).outlineStyle !== 'none' && parseFloat(getComputedStyle(el).outlineWidth) >= 2; }"""


def tab_to(page, selector: str, limit: int = 400) -> None:
    """Press Tab until ``selector`` has the keyboard focus, and check the focus is drawn."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => !!document.activeElement && document.activeElement.matches(s)", selector):
            assert page.evaluate(FOCUSED_JS, selector), f"{selector} has the focus but no visible outline"
            return
    raise AssertionError(f"{selector} not reached with {limit} presses of Tab")


def start_at(page, selector: str) -> None:
    """Put the keyboard's starting point just before ``selector``'s block (a click on plain text near it)."""
    page.evaluate("""(s) => { const el = [...document.querySelectorAll(s)].find(e => e.offsetParent !== null);
      const from = document.createElement('span'); from.tabIndex = -1; from.className = 'keyboard-start';
      el.closest('.block, .form, .tabitem').prepend(from); from.focus(); }""", selector)


def test_presets_lessons_exports_and_the_tour_work_from_the_keyboard(browser, served_app):
    page = fresh_page(browser, served_app.url, "en-US")
    try:
        # A drawn figure's export buttons (the Overview's path): Tab to the table's CSV, Enter downloads it.
        start_at(page, ".static-view .static-figure")
        tab_to(page, '.static-view .static-export[data-format="png"]')
        tab_to(page, '.static-view .static-export[data-format="svg"]')
        tab_to(page, ".static-view .table-csv")
        with page.expect_download() as download:
            page.keyboard.press("Enter")
        assert download.value.suggested_filename.endswith(".csv")

        # A preset button: Enter runs it.
        learner_path.click_tab(page, "ngram")
        page.wait_for_function(learner_path.SETTLED_JS)
        start_at(page, ".preset-bar")
        tab_to(page, 'button.preset-btn[data-slug="add-one"]')
        page.keyboard.press("Enter")
        page.wait_for_function("() => [...document.querySelectorAll('.prose')].some(el => el.offsetParent !== null"
                               " && el.textContent.includes('(2 + 1) / (3 + 1 × 12)'))")

        # A lesson: Enter opens the box, Space on "Show me" runs its step (its sub-tab is selected).
        start_at(page, ".lesson-box")
        tab_to(page, ".lesson-box details.lesson > summary")
        page.keyboard.press("Enter")
        tab_to(page, '.lesson-box button.lesson-btn[data-step="3"]')
        page.keyboard.press(" ")
        page.wait_for_function(learner_path.SELECTED_JS, arg="score")
        page.wait_for_function(learner_path.SETTLED_JS)

        # A plotly figure's modebar: Tab reaches its buttons; Enter on "Data" shows the numbers as a table.
        start_at(page, ".js-plotly-plot")
        tab_to(page, '.js-plotly-plot .modebar-btn[data-title^="Data"]')
        page.keyboard.press("Enter")
        page.wait_for_function("() => [...document.querySelectorAll('.figure-data table tbody tr')]"
                               ".some(tr => tr.offsetParent !== null)")
        described = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot[role=figure]')]"
                                  ".filter(el => el.offsetParent !== null).map(el => el.getAttribute('aria-label'))")
        assert described and all(label and len(label) > 20 for label in described), described
        tab_to(page, '.js-plotly-plot .modebar-btn[data-title^="Download plot as SVG"]')
        with page.expect_download() as download:
            page.keyboard.press(" ")
        assert download.value.suggested_filename.endswith(".svg")

        # The tour: the header's button starts it and puts the focus on Next; Enter and Space move on; Esc leaves.
        page.evaluate("() => window.scrollTo(0, 0)")
        start_at(page, ".tour-box")
        tab_to(page, "button.tour-start")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.activeElement?.classList.contains('tour-next')")
        page.wait_for_function("() => document.querySelector('.tour-panel').dataset.state === 'ready'")
        first = int(page.evaluate("() => document.querySelector('.tour-panel').dataset.stop"))
        page.keyboard.press("Enter")
        page.wait_for_function("(k) => document.querySelector('.tour-panel').dataset.stop === String(k)", arg=first + 1)
        page.keyboard.press(" ")
        page.wait_for_function("(k) => document.querySelector('.tour-panel').dataset.stop === String(k)", arg=first + 2)
        assert page.evaluate(FOCUSED_JS, ".tour-next")
        page.keyboard.press("Shift+Tab")
        assert page.evaluate(FOCUSED_JS, ".tour-back")
        page.keyboard.press("Escape")
        page.wait_for_function("() => document.querySelector('.tour-panel').hidden")
    finally:
        page.close()


def test_dark_mode_draws_figures_light_on_dark(browser, served_app):
    ARTIFACTS.mkdir(exist_ok=True)
    page = fresh_page(browser, served_app.url + "?__theme=dark")
    try:
        assert page.evaluate("() => document.body.classList.contains('dark')")
        page.wait_for_function("() => [...document.querySelectorAll('.static-figure svg')].some(el => el.offsetParent"
                               " !== null)")
        drawn = page.evaluate("""() => { const svg = [...document.querySelectorAll('.static-figure svg')]
            .find(el => el.offsetParent !== null); const text = svg.querySelector('text[fill="#1f2937"]');
            return [getComputedStyle(svg).backgroundColor, getComputedStyle(text).fill]; }""")
        assert drawn == ["rgb(30, 41, 59)", "rgb(226, 232, 240)"], drawn
        page.evaluate("(href) => window.plmOpenLink(href)", "?tab=attention&preset=i-have-a-dream")
        page.wait_for_function(learner_path.SELECTED_JS, arg="steps")
        page.wait_for_function(learner_path.SETTLED_JS)
        looks = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.offsetParent
            !== null).map(el => [el._fullLayout.paper_bgcolor, el._fullLayout.font.color,
                                 el._fullLayout.xaxis.tickfont.color])""")
        assert looks and all(paper == "#1e293b" and font == ticks == "#e2e8f0" for paper, font, ticks in looks), looks
        page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                      ".filter(el => el.offsetParent !== null)[1].scrollIntoView({block: 'start'})")
        page.screenshot(path=str(ARTIFACTS / "dark-attention.png"))
    finally:
        page.close()
