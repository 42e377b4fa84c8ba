"""Browser fixtures: Debian's Chromium driven by Playwright against `python app.py --offline` on a free port.

Playwright cannot download its own browsers on our machines, so it launches /usr/bin/chromium. Without that
browser (or without playwright) the e2e tests are skipped, except where PLM_REQUIRE_E2E=1 (CI), where they fail.

A test gets a fresh page (``fresh_page``): a new tab with empty storage, in a browser context kept warm per
worker, language and window size. A page in a new context starts a new renderer, which compiles Gradio's front end
again: 4.2–5.2 CPU s of Chromium per load on our machines, against 2.3–3.6 s for a new page in a context that holds
a page of the same site (``--process-per-site`` puts it in that page's renderer, whose V8 keeps the compiled
scripts; benchmarks/README.md). Tests that measure a cold load (bytes on the wire, first paint), or that need people
in separate browsers (a class, replicas), open a context of their own.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest


CHROMIUM = Path(os.environ.get("PLM_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--process-per-site"]
VIEWPORT = {"width": 1280, "height": 800}  # the README screenshots' size
# What a test's page may have left in its origin, cleared before the next page is handed out (cookies apart)
STORAGE = "local_storage,indexeddb,cache_storage,service_workers,file_systems"
_WARM: dict[tuple, "_Warm"] = {}  # (browser, locale, width, height) -> its context, in this worker


class _Warm:
    """One warm context: an anchor tab on the site (a small 404 page of the app's server, no script of ours) keeps
    its renderer, and the scripts compiled there, alive between the tests' pages."""

    def __init__(self, browser, url: str, locale: str, viewport: dict):
        self.context = browser.new_context(viewport=viewport, device_scale_factor=1, locale=locale)
        self.closed = False
        self.context.on("close", lambda _: setattr(self, "closed", True))
        self.anchor = self.context.new_page()
        self.anchor.goto(origin(url) + "/plm-test-anchor")
        self.cdp = self.context.new_cdp_session(self.anchor)
        self.origins: set[str] = set()

    def page(self, url: str):
        """A new tab, after every cookie and every origin's storage that earlier pages left is cleared."""
        self.context.clear_cookies()
        for used in self.origins:
            self.cdp.send("Storage.clearDataForOrigin", {"origin": used, "storageTypes": STORAGE})
        self.origins.add(origin(url))
        return self.context.new_page()


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def fresh_page(browser, url: str, locale: str = "en-US", viewport: dict = VIEWPORT, cookies: dict | None = None,
               wait: bool = True, init_script: str = ""):
    """A new page at ``url`` with no cookie or storage from earlier tests, once the app has rendered (``wait``).
    ``cookies`` are set for the url's origin before the load; ``init_script`` runs in the page before any of its
    own scripts. Close it with ``page.close()``."""
    key = (id(browser), locale, viewport["width"], viewport["height"])
    if key not in _WARM or _WARM[key].closed:
        _WARM[key] = _Warm(browser, url, locale, viewport)
    page = _WARM[key].page(url)
    if cookies:
        page.context.add_cookies([{"name": k, "value": v, "url": url} for k, v in cookies.items()])
    if init_script:
        page.add_init_script(init_script)
    page.set_default_timeout(120_000)  # a shared 2-core machine: first model loads can be slow
    page.goto(url, wait_until="load")  # not "networkidle": Gradio keeps a connection open
    if wait:
        page.get_by_role("tab").first.wait_for()  # the app has rendered
    return page


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
    page = fresh_page(browser, served_app.url)
    yield page
    page.close()
