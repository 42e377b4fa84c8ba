"""Issue #31 in 中文 (a zh-CN browser): every lesson step and every preset link (see tests/e2e/learner_path.py)."""
from __future__ import annotations

import pytest

from app import TABS
from tests.e2e import learner_path

pytestmark = pytest.mark.e2e
LOCALE = "zh-CN"


@pytest.fixture(scope="module")
def path():
    return learner_path.catalogue(LOCALE)


@pytest.fixture(scope="module")
def used_server(browser, served_app):
    learner_path.use_the_server(browser, served_app.url, LOCALE)
    return served_app


@pytest.mark.timeout(900)
def test_every_lesson_step_selects_its_sub_tab_and_fills_it(browser, used_server, path):
    targets, steps = path
    page = learner_path.new_page(browser, used_server.url, LOCALE)
    try:
        clicked, problems = learner_path.walk_lessons(page, steps)
    finally:
        page.context.close()
    assert clicked >= 30 and not problems, "\n".join(problems)


@pytest.mark.timeout(900)
def test_every_preset_link_opens_its_sub_tab_with_its_results(browser, used_server, path):
    targets, _ = path
    page = learner_path.new_page(browser, used_server.url, LOCALE)
    try:
        opened, problems = learner_path.open_links(page, targets)
    finally:
        page.context.close()
    loaded, more = learner_path.load_links(browser, used_server.url, LOCALE, targets)
    assert opened >= 120 and loaded == len(TABS) and not problems + more, "\n".join(problems + more)
