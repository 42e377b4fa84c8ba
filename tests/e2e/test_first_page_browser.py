"""The first page's text in Chromium (issue #53; demo/server/first_page.PageWords, assets/first_page.js), in both
languages, on the worker's offline app:
- with every script file refused (Gradio's front end never arrives), the page's own HTML shows the header, the
  Overview's heading, its note that the app is loading, the timeline and the tour's link;
- with them, once Gradio has drawn its tab bar the text is gone, and the Overview's heading is on screen once;
- a link into another tab has no such text in its page.
Every wait is on a condition of the page."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.text import i18n
from tests.e2e.first_open import VIEWPORT

pytestmark = pytest.mark.e2e
ARTIFACTS = Path(__file__).parent / "_artifacts"


def first_line(key: str, lang: str) -> str:
    return i18n.text(key, lang).splitlines()[0].lstrip("# ").strip()


@pytest.mark.parametrize("locale, lang", [("en-US", "en"), ("zh-CN", "zh")])
def test_the_overview_reads_before_gradio_arrives_and_shows_once_after(browser, served_app, locale, lang):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale=locale)
    page = context.new_page()
    page.set_default_timeout(120_000)
    heading = page.get_by_role("heading", name=first_line("overview.intro", lang), exact=True)
    try:
        refused = []
        page.route("**/*.js*", lambda route: refused.append(route.request.url) or route.abort())
        page.goto(served_app.url, wait_until="load")
        heading.wait_for()  # visible, from the HTML alone
        assert refused, "no script file was asked for: the check above proved nothing"
        assert page.get_by_role("heading", name=first_line("app.intro", lang), exact=True).is_visible()
        assert page.get_by_text(i18n.text("app.first_page_note", lang)).is_visible()
        assert page.locator('#plm-first-page svg[role="group"]').first.is_visible()  # the timeline, drawn
        assert page.locator('#plm-first-page a[href="?tour=1"]').is_visible()
        assert not page.get_by_role("tab").count()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"first-page-{lang}-no-js.png"))

        page.unroute("**/*.js*")
        page.goto(served_app.url, wait_until="load")
        page.get_by_role("tab").first.wait_for()
        heading.wait_for()  # Gradio's own Overview
        assert page.locator("#plm-first-page").count() == 0 and heading.count() == 1

        answer = page.goto(served_app.url + "?tab=ngram", wait_until="commit")
        assert b"<gradio-app" in answer.body() and b"plm-first-page" not in answer.body()
    finally:
        context.close()

