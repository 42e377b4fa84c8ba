"""The app in a 中文 browser and an English one, and the header's language toggle, in Chromium."""
from __future__ import annotations

import pytest

import app
from demo.kit import i18n
from tests.e2e.conftest import VIEWPORT, fresh_page

pytestmark = pytest.mark.e2e


def tab_titles(page) -> list[str]:
    return [t.strip() for t in page.get_by_role("tab").all_inner_texts()][:len(app.TABS)]


def expected_titles(lang: str) -> list[str]:
    return [i18n.text(f"tabs.{module.__name__.rsplit('.', 1)[-1]}", lang) for module in app.TABS]


def open_app(browser, served_app, locale: str):
    return fresh_page(browser, served_app.url, locale, {**VIEWPORT, "width": 1440})


@pytest.mark.parametrize("locale, lang", [("zh-CN", "zh"), ("zh-TW", "zh"), ("en-US", "en")])
def test_the_browser_language_picks_the_app_language(browser, served_app, locale, lang):
    page = open_app(browser, served_app, locale)
    try:
        assert tab_titles(page) == expected_titles(lang)
        heading = i18n.text("app.intro", lang).splitlines()[0].lstrip("# ")
        page.get_by_role("heading", name=heading).wait_for()  # the header comes from the server, in the same language
        from playwright.sync_api import expect

        expect(page.get_by_role("radio", name="中文" if lang == "zh" else "English", exact=True).first).to_be_checked()
    finally:
        page.close()


def test_the_toggle_wins_over_the_browser(browser, served_app):
    page = open_app(browser, served_app, "en-US")
    try:
        page.get_by_text("中文", exact=True).click()  # sets the cookie and reloads (the page has no root for a moment)
        page.wait_for_function("() => document.documentElement?.lang === 'zh-CN'")
        page.get_by_role("tab", name=expected_titles("zh")[0]).first.wait_for()
        assert tab_titles(page) == expected_titles("zh")
        page.get_by_text("English", exact=True).click()
        page.wait_for_function("() => document.documentElement?.lang === 'en'")
        page.get_by_role("tab", name=expected_titles("en")[0]).first.wait_for()
        assert tab_titles(page) == expected_titles("en")
    finally:
        page.close()
