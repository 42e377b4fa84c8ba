"""Browser fixtures: Debian's Chromium driven by Playwright against `python app.py --offline` on a free port.

Playwright cannot download its own browsers on our machines, so it launches /usr/bin/chromium. Without that
browser (or without playwright) the e2e tests are skipped, except where PLM_REQUIRE_E2E=1 (CI), where they fail.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest


CHROMIUM = Path(os.environ.get("PLM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 800}  # the README screenshots' size


def _unavailable(reason: str):
    if os.environ.get("PLM_REQUIRE_E2E") == "1":
        pytest.fail(f"PLM_REQUIRE_E2E=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -r requirements-test.txt)")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def served_app(browser, offline_app):
    """The worker's one offline app (tests/conftest.py: `offline_app`), shared with the API tests; depends on
    `browser` so that a skip skips the start-up too."""
    return offline_app


@pytest.fixture
def page(browser, served_app):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(120_000)  # a shared 2-core machine: first model loads can be slow
    page.goto(served_app.url, wait_until="load")  # not "networkidle": Gradio keeps a connection open
    page.get_by_role("tab").first.wait_for()  # the app has rendered
    yield page
    context.close()
