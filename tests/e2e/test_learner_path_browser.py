"""Issue #31 in both languages (an en-US and a zh-CN browser): every lesson step and every preset link (see
tests/e2e/learner_path.py).

The tests are spread over the two test workers (SPREAD, tests/conftest.py): each tab's preset links, in both
languages, are one unit of work (so one app computes that tab's presets, once), and the lesson steps another. What
they need is made once per worker: each language's catalogue, and another learner's session on the worker's app
before the first of these tests runs there.
"""
from __future__ import annotations

import pytest

from app import TABS
from tests.e2e import learner_path
from tests.e2e.conftest import fresh_page

pytestmark = pytest.mark.e2e
SPREAD = "tab"


@pytest.fixture(scope="module", params=["en-US", "zh-CN"])
def locale(request):
    return request.param


@pytest.fixture
def path(locale):
    return learner_path.catalogue(locale)  # made once per worker and language


@pytest.fixture(scope="session")
def used_server(browser, served_app):
    """The worker's app once another learner's session has used it (learner_path.use_the_server, in English): the
    issue's links failed only on a server that had served other sessions."""
    learner_path.use_the_server(browser, served_app.url, "en-US")
    return served_app


@pytest.mark.timeout(900)
def test_every_lesson_step_selects_its_sub_tab_and_fills_it(browser, used_server, path, locale):
    targets, steps = path
    page = fresh_page(browser, used_server.url, locale)
    try:
        clicked, problems = learner_path.walk_lessons(page, steps)
    finally:
        page.close()
    assert clicked >= 30 and not problems, "\n".join(problems)


def test_the_catalogue_holds_every_tab_s_presets(path):
    targets, steps = path
    assert len(targets) >= 120 and sorted({t.tab for t in targets}) == sorted(learner_path.TAB_IDS) == sorted(
        tab.__name__.rsplit(".", 1)[-1] for tab in TABS)
    assert set(steps) <= set(learner_path.TAB_IDS)
    # the links the link walk leaves to the tour's walk are preset links of the app, and a small part of them
    toured = {(tab, slug) for tab in learner_path.TAB_IDS for slug in learner_path.toured(tab)}
    assert toured and toured <= {(t.tab, t.slug) for t in targets} and len(toured) < len(targets) / 4


@pytest.mark.timeout(600)
@pytest.mark.parametrize("tab", learner_path.TAB_IDS)
def test_every_preset_link_opens_its_sub_tab_with_its_results(browser, used_server, path, locale, tab):
    opened, loaded, problems = learner_path.tab_links(browser, used_server.url, locale, path[0], tab)
    mine = [target for target in path[0] if target.tab == tab]
    assert opened == len(mine) - len(learner_path.toured(tab)) >= 1 and loaded == 1 and not problems, \
        "\n".join(problems)
