"""The app behind Debian's nginx under /plm/ (issue 33 §8), in Chromium: docs/DEPLOY.md's `location` block in front of
`python app.py --root-path /plm --trusted-proxy 127.0.0.1`, online against the local test Hub (tests/hub_server.py).

Through the proxy a learner opens a preset link, sees its figure, downloads a table as CSV and downloads a checkpoint
from the Hub with its progress shown; every request the page makes stays under /plm/ (a request to the proxy's root
would be another site's on a course server).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.conftest import VIEWPORT, _unavailable
from tests.e2e.first_open import FULL_JS, IDLE_JS, visible
from tests.e2e.test_table_csv import download_rows
from tests.hub_server import HubServer
from tests.live_app import app_env, running_app
from tests.reverse_proxy import NGINX, nginx_proxy

pytestmark = pytest.mark.e2e

REPO = "tiny-org/tiny-bert-ner"


@pytest.fixture(scope="module")
def hub(conll_ner_checkpoint):
    server = HubServer()
    server.add_repo(REPO, conll_ner_checkpoint)
    yield server
    server.release()
    server.close()


@pytest.fixture(scope="module")
def proxied(browser, hub, tmp_path_factory):
    """The app online against the local Hub with an empty HF cache, and nginx in front of it; yields the /plm/ URL."""
    if not Path(NGINX).exists():
        _unavailable(f"{NGINX} is missing (apt-get install nginx)")
    tmp = tmp_path_factory.mktemp("proxied")
    env = app_env(HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp / "hf-cache"), HF_HUB_OFFLINE=None,
                  TRANSFORMERS_OFFLINE=None, PLM_TRUSTED_PROXY=None, GRADIO_ROOT_PATH=None)
    with running_app("--device", "cpu", "--root-path", "/plm", "--trusted-proxy", "127.0.0.1", env=env) as app, \
            nginx_proxy(app.port, tmp) as url:
        yield url


@pytest.fixture
def page(browser, proxied):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US", accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.requests_seen = []
    page.on("request", lambda request: page.requests_seen.append(request.url))
    yield page
    context.close()


def outside(page, base: str) -> list[str]:
    """Requests the page made that left the sub-path (data: and blob: URLs are the page's own)."""
    return [url for url in page.requests_seen if not url.startswith((base, "data:", "blob:"))]


def test_a_preset_link_its_figure_and_a_csv_download_through_the_proxy(page, proxied):
    page.goto(proxied + "?tab=attention&preset=thinking-machines", wait_until="load")
    page.wait_for_function(FULL_JS)
    # the preset ran: the seed's scores q1·k1 = 112 and q1·k2 = 96 are in its figure and arithmetic (§9)
    figure = visible(page.locator(".js-plotly-plot"))
    figure.wait_for()
    assert figure.locator(".main-svg").count() >= 1
    assert "112" in figure.inner_text() and "96" in figure.inner_text()
    assert re.search(r"/plm/\?tab=attention&preset=thinking-machines$", page.url)

    page.goto(proxied + "?tab=ngram", wait_until="load")
    page.wait_for_function(FULL_JS)
    grid = visible(page.locator('[role="grid"].table-wrap'))
    shown_rows = int(grid.get_attribute("aria-rowcount")) - 1
    name, rows = download_rows(page, visible(page.locator(".table-csv")))
    assert name == "ngram-table-1.csv" and len(rows) - 1 == shown_rows > 0
    assert outside(page, proxied) == []


def test_a_hub_download_shows_its_progress_through_the_proxy(page, proxied, hub):
    hub.stall.add("model.safetensors")  # half the weights arrive, then nothing until released
    page.goto(proxied + "?tab=ner", wait_until="load")
    # the link computes the tab's defaults, whose outputs include the picker: a learner reads the page before typing
    page.wait_for_function(FULL_JS)
    picker = visible(page.locator(".checkpoint-picker input"))
    picker.fill(REPO)
    picker.press("Enter")
    visible(page.get_by_role("button", name="Tag entities", exact=True)).click()
    progress = visible(page.get_by_text(re.compile(rf"Downloading {re.escape(REPO)}: [\d.]+ of [\d.]+ MB")))
    progress.wait_for()
    done, total = map(float, re.search(r": ([\d.]+) of ([\d.]+) MB", progress.inner_text()).groups())
    assert 0 < done < total
    hub.release()
    page.wait_for_function(IDLE_JS)
    # the tagger ran on the downloaded checkpoint: its words are shown as tagged text, and no error card
    tagged = visible(page.locator(".textfield, [data-testid='highlighted-text']"))
    tagged.wait_for()
    assert "Wolfgang" in tagged.inner_text()
    assert hub.count("model.safetensors", "GET") == 1
    assert not page.get_by_text("hf download").filter(visible=True).count()
    assert outside(page, proxied) == []
