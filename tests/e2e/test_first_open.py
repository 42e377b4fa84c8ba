"""Issue #18 in a real browser (1440×900): every tab and sub-tab shows its default result before any other click,
and deep links open a tab with a preset computed.

Run: python -m pytest tests/e2e/test_first_open.py -m e2e
"""
from __future__ import annotations

import pytest

from core.text.i18n import text
from tests.e2e.conftest import fresh_page
from tests.e2e.first_open import (BEFORE_A_RUN, FULL_JS, IDLE_JS, OFFLINE_NOTE, SOME_JS, content,
                                  open_view, views)

pytestmark = pytest.mark.e2e
SPREAD = "test"  # each test is a unit of work of its own (tests/conftest.py): no module fixture to share


@pytest.fixture
def wide_page(browser, served_app):
    page = fresh_page(browser, served_app.url)
    yield page
    page.close()


@pytest.mark.parametrize("query, tab, texts", [
    ("?tab=attention&preset=thinking-machines", "Attention", ["0.8808", "112"]),
    ("?tab=embeddings&preset=one-hot-times-q", "Word embeddings", ["[10 12 19]"]),
    ("?tab=mlm&preset=bert-base-parameters", "BERT masked LM", ["108,808,704", "109,482,240"]),
])
def test_deep_link_opens_the_tab_with_the_preset_computed(browser, served_app, query, tab, texts):
    page = fresh_page(browser, served_app.url + query, wait=False)
    try:
        page.get_by_role("tab", name=tab, exact=True).and_(page.locator("[aria-selected=true]")).wait_for()
        for text in texts:
            page.get_by_text(text).filter(visible=True).first.wait_for()
    finally:
        page.close()


def test_copy_link_button_puts_the_presets_deep_link_in_the_address(wide_page):
    page = wide_page
    page.get_by_role("tab", name="Attention", exact=True).click()
    link = page.locator('a.copy-link[href="?tab=attention&preset=thinking-machines"]').filter(visible=True).first
    assert link.get_attribute("title").startswith("Copy this example's link")
    link.click()
    page.wait_for_function("() => window.location.search === '?tab=attention&preset=thinking-machines'")
    assert page.get_by_role("tab", name="Attention", exact=True).get_attribute("aria-selected") == "true"  # no reload


def test_a_preset_button_runs_its_preset_and_a_lesson_step_reveals_its_answer(wide_page):
    page = wide_page
    page.get_by_role("tab", name="Attention", exact=True).click()
    page.get_by_text("0.8808").filter(visible=True).first.wait_for()  # the default, before we ask for another
    page.locator('button.preset-btn[data-slug="i-have-a-dream"]').filter(visible=True).first.click()
    page.get_by_text("A decoder may not look ahead").filter(visible=True).first.wait_for()  # the masked preset
    lesson = page.locator(".lesson-box details.lesson").filter(visible=True).first
    lesson.locator("summary").first.click()
    answer = lesson.locator("details.lesson-answer").first
    assert not answer.evaluate("d => d.open")
    answer.locator("summary").click()
    assert answer.evaluate("d => d.open") and answer.locator("p").inner_text().strip()


# Installed before the page's scripts: the browser's requests to start an event whose api_name matches
# window.__holdApi wait until window.__release() (Gradio's client sends each event with a POST to .../queue/join).
HOLD_EVENTS = """
window.__held = [];
const send = window.fetch;
window.fetch = function (input, init) {
  const url = typeof input === 'string' ? input : input.url;
  if (window.__holdApi && url.includes('/queue/join') && init && typeof init.body === 'string') {
    const id = JSON.parse(init.body).fn_index;
    const event = ((window.gradio_config || {}).dependencies || []).find((d) => d.id === id);
    if (event && window.__holdApi.test(event.api_name || '')) {
      return new Promise((go) => window.__held.push(() => go(send.call(this, input, init))));
    }
  }
  return send.call(this, input, init);
};
window.__release = () => { window.__holdApi = null; window.__held.splice(0).forEach((go) => go()); };
"""


def test_what_a_learner_types_while_a_tab_opens_is_kept(browser, served_app):
    """The learner opens Word embeddings and types other words before its default's results arrive: the results
    arrive and the words stay. The open events are held in the browser until the words are typed, so the typing
    comes first on any machine."""
    page = fresh_page(browser, served_app.url,
                      init_script="window.__holdApi = /^embeddings(_onehot)?_open$/;" + HOLD_EVENTS)
    try:
        page.get_by_role("tab", name="Word embeddings", exact=True).click()
        page.wait_for_function("() => window.__held.length > 0")  # the tab's open event is on its way, held
        words = page.get_by_label(text("embeddings.words", "en")).filter(visible=True).first
        assert words.input_value() == "king, queen, man, woman, apple"  # the page's own default
        words.fill("sun, moon, star")
        page.evaluate("() => window.__release()")
        page.wait_for_function(FULL_JS, timeout=60_000)  # the default's figures and summary, drawn
        assert words.input_value() == "sun, moon, star"
    finally:
        page.close()


# Last: it opens every view of every tab in one session, which leaves the server busy for a while after it.
@pytest.mark.timeout(900)  # ~40 views, 2.5 min alone; the suite's other worker shares the two cores meanwhile
def test_every_tab_and_subtab_shows_its_default_before_any_click(wide_page):
    page = wide_page
    failures = []
    for tab, sub in views():
        open_view(page, tab, sub)  # only tab buttons are clicked: no preset, no Compute
        if (tab, sub) in OFFLINE_NOTE:
            page.wait_for_function(IDLE_JS)
            page.get_by_text("hf download").filter(visible=True).first.wait_for()
            continue
        try:
            page.wait_for_function(SOME_JS if (tab, sub) in BEFORE_A_RUN else FULL_JS, timeout=60_000)
        except Exception:  # noqa: BLE001 - report every view that stayed empty, not only the first
            failures.append(f"{tab} / {sub or '(tab)'}: {content(page)}")
        errors = [t for t in page.locator('[data-testid="toast-body"].error').all_inner_texts() if t.strip()]
        if errors:
            failures.append(f"{tab} / {sub or '(tab)'}: error toast {errors}")
    assert not failures, "views without content on first open:\n" + "\n".join(failures)
