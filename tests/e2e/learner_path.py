"""The learner's path in Chromium (issue #31), used by test_learner_path_browser.py in both languages.

A learner meets the app through its "Try this" steps and its preset links. For every lesson step and every preset
link, in one language, on a server that has already served other sessions:
- no error toast;
- the tab and the sub-tab where the preset's results live are selected;
- the preset's text is in its input box (the preset was loaded, not the view's default);
- the view's visible outputs are filled: every visible plot has data and every visible table has rows, or, where the
  offline app cannot have the model, the card naming `hf download <id>` is shown and the empty outputs are hidden.

Every preset link is opened in the page the way a click on an in-page link opens it (``window.plmOpenLink``, the
router every ``?tab=…`` link in the page goes through: no page load), here or, for a tour stop's, by the tour's walk;
one link per tab is also opened as a fresh page load. Waits are on conditions; nothing sleeps for a fixed time.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import app
from tests.e2e.conftest import fresh_page
from tests.e2e.first_open import CONTENT_JS

# The view's results are on screen: nothing is computing, no visible plot or table is empty, and there is content
# (or the missing-model card). Plots, tables and text areas inside hidden columns are not "visible".
SETTLED_JS = f"""() => {{
  const c = ({CONTENT_JS})();
  const card = [...document.querySelectorAll('code, pre, p')].some(
      el => el.offsetParent !== null && el.textContent.includes('hf download'));
  return !c.busy && c.emptyPlots === 0 && c.emptyTables === 0 && c.emptyBoxes === 0
      && (c.plots + c.tables + c.longTexts > 0 || card);
}}"""
SELECTED_JS = """(id) => [...document.querySelectorAll('button[role="tab"][aria-selected="true"]')].some(
  b => b.dataset.tabId === id && b.offsetParent !== null)"""
HAS_VALUE_JS = """(value) => [...document.querySelectorAll('textarea, input')].some(
  el => el.offsetParent !== null && el.value.trim() === value)"""
ERRORS_JS = """() => [...document.querySelectorAll('.toast-body')].filter(
  el => /error|错误/i.test(el.className + ' ' + (el.querySelector('.toast-title')?.textContent || '')))
  .map(el => el.textContent.trim().slice(0, 200))"""
CLOSE_TOASTS_JS = "() => document.querySelectorAll('.toast-close').forEach(b => b.click())"
# Markdown the page shows as its source: visible text (outside code, boxes and formulas) holding "**", a bold that
# CommonMark did not close (a 中文 "**标签：**文字" does not; tests/text/test_i18n.py checks the tables the same way).
LITERAL_BOLD_JS = """() => { const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (node.textContent.includes('**') && el && el.offsetParent !== null
        && !el.closest('code, pre, textarea, input, .katex, script, style')) {
      found.push(node.textContent.trim().slice(0, 80));
    }
  }
  return found; }"""
# How often a condition is checked while waiting: every 100 ms, not on every animation frame (Playwright's default),
# since SETTLED_JS walks the whole page and its layout; the conditions are the same, found at most 0.1 s later.
POLL_MS = 100


@dataclass(frozen=True)
class Target:
    """Where a preset's results live, and the texts the preset puts in input boxes (the shown sub-tab has one)."""
    tab: str
    slug: str
    sub: str | None
    texts: tuple[str, ...]

    @property
    def link(self) -> str:
        return f"?tab={self.tab}&preset={self.slug}"


@functools.cache  # read once per test process and language (the tour and the learner path share it); not changed
def catalogue(locale: str = "en-US"):
    """Every runnable preset and every lesson step of the app, read from the built app's own registry. A preset's
    values may depend on the learner's language (it is made when it runs), so they are resolved in ``locale``'s."""
    import gradio as gr

    import app as app_module
    from core.text.i18n import using_language

    built = app_module.build_app()
    targets, steps = {}, {}
    for tab_id, entry in built.preset_registry.tabs.items():
        for view in entry.views:
            boxes = [i for i, c in enumerate(view.inputs) if isinstance(c, gr.Textbox)]
            for slug, preset in view.presets.items():
                if preset.values is None:
                    continue
                with using_language("zh" if locale.startswith("zh") else "en"):
                    values = preset.resolved()
                texts = [str(values[i]).strip() for i in boxes if str(values[i]).strip()]
                sub = preset.shows or (view.where.id if view.where is not None else None)
                targets[(tab_id, slug)] = Target(tab_id, slug, sub, tuple(texts))
    for block in built.blocks.values():  # each lesson box, and the presets its steps run
        if getattr(block, "lesson_steps", None):
            tab_id = block.lesson_steps[0].view.tab
            steps[tab_id] = [targets[(tab_id, step.slug)] for step in block.lesson_steps]
    return list(targets.values()), steps


def click_tab(page, tab_id: str) -> None:
    page.locator(f'button[role="tab"][data-tab-id="{tab_id}"]').filter(visible=True).first.click()
    page.wait_for_function(SELECTED_JS, arg=tab_id, polling=POLL_MS)


def waited(page, script: str, arg=None, what: str = "", limit_ms: int = 90_000) -> list[str]:
    """Wait for ``script`` to hold; [] once it does, else what is on screen (a failure to report, not raise)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=limit_ms, polling=POLL_MS)
        return []
    except PlaywrightTimeout:
        return [f"{what} not reached in {limit_ms / 1000:.0f} s; on screen: {page.evaluate(CONTENT_JS)}"]


def problems(page, target: Target) -> list[str]:
    """Wait until ``target`` is shown; what is wrong with it (empty: nothing)."""
    found = waited(page, SELECTED_JS, target.tab, f"{target.link}: tab {target.tab} selected")
    if target.sub is not None:
        found += waited(page, SELECTED_JS, target.sub, f"{target.link}: sub-tab {target.sub} selected")
    found += waited(page, SETTLED_JS, None, f"{target.link}: results filled")
    if target.texts and not any(page.evaluate(HAS_VALUE_JS, text) for text in target.texts):
        found.append(f"{target.link}: none of its texts {[t[:30] for t in target.texts]} is in a visible box")
    literal = page.evaluate(LITERAL_BOLD_JS)
    if literal:
        found.append(f"{target.link}: Markdown shown as its source {literal[:3]}")
    errors = page.evaluate(ERRORS_JS)
    if errors:
        found.append(f"{target.link}: error toast {errors}")
        page.evaluate(CLOSE_TOASTS_JS)
    return found


def use_the_server(browser, url: str, locale: str) -> None:
    """Another learner's session first: every tab opened and one preset of each run, so the server under test has
    served other requests (the issue's links failed only on such a server)."""
    page = fresh_page(browser, url, locale)
    try:
        for tab in page.evaluate("() => [...document.querySelector('[role=tablist]')"
                                 ".querySelectorAll('button[role=tab]')].map(b => b.dataset.tabId)"):
            click_tab(page, tab)
            page.wait_for_function(SETTLED_JS, polling=POLL_MS)
            button = page.locator("button.preset-btn:not([disabled])").filter(visible=True)
            if button.count():
                button.last.click()
                page.wait_for_function(SETTLED_JS, polling=POLL_MS)
    finally:
        page.close()


# Where to go before a step whose sub-tab is ``sub``: null if another sub-tab is already selected (the previous step
# left the learner elsewhere), else the last other visible sub-tab beside it.
AWAY_JS = """(sub) => { const b = [...document.querySelectorAll('button[role=tab]')]
  .find(b => b.dataset.tabId === sub && b.offsetParent !== null);
  if (b.getAttribute('aria-selected') !== 'true') return null;
  const others = [...b.parentElement.querySelectorAll('button[role=tab]')]
  .filter(o => o.dataset.tabId !== sub && o.offsetParent !== null);
  return others.length ? others[others.length - 1].dataset.tabId : null; }"""


def walk_lessons(page, steps: dict[str, list[Target]]) -> tuple[int, list[str]]:
    """Click every "Show me", each from another sub-tab than the step's own, so the switch is seen: where the step's
    sub-tab is the one already selected, another is opened first (and its results awaited)."""
    found, clicked = [], 0
    for tab_id, targets in steps.items():
        click_tab(page, tab_id)
        box = page.locator(".lesson-box details.lesson").filter(visible=True).first
        if not box.evaluate("d => d.open"):
            box.locator("summary").first.click()
        for number, target in enumerate(targets, 1):
            if target.sub is not None:
                away = page.evaluate(AWAY_JS, target.sub)
                if away:
                    click_tab(page, away)
                    found += waited(page, SETTLED_JS, None, f"sub-tab {away} of {tab_id} filled on open")
            box.locator(f'button.lesson-btn[data-step="{number}"]').click()
            clicked += 1
            found += [f"lesson {tab_id} {number}: {problem}" for problem in problems(page, target)]
    return clicked, found


def open_links(page, targets: list[Target]) -> tuple[int, list[str]]:
    """Open every preset link in the page, one after another, as a click on an in-page link does."""
    found = []
    for target in targets:
        page.evaluate("(href) => window.plmOpenLink(href)", target.link)
        found += problems(page, target)
    return len(targets), found


def load_links(browser, url: str, locale: str, targets: list[Target]) -> tuple[int, list[str]]:
    """One link per tab (its last preset: most often in a later sub-tab) opened as a fresh page."""
    last = {target.tab: target for target in targets}
    found = []
    for target in last.values():
        page = fresh_page(browser, url + target.link, locale)
        try:
            found += problems(page, target)
        finally:
            page.close()
    return len(last), found


TAB_IDS = [app.tab_id(module) for module in app.TABS]  # the built app's tabs, in order


def toured(tab: str) -> set[str]:
    """The slugs of ``tab``'s preset links that the guided tour opens in the page: its stops that are not checks. The
    tour's walk (tests/e2e/test_tour_browser.py, both languages) opens each through the same router and checks it
    with ``problems``, so the link walk leaves them to it (31 of the 192 links, in 2026-11)."""
    from demo.kit import tour

    return {stop.preset for stop in tour.STOPS if stop.tab == tab and not stop.check}


def tab_links(browser, url: str, locale: str, targets: list[Target], tab: str) -> tuple[int, int, list[str]]:
    """One tab's preset links: its last link (most often in a later sub-tab) loaded as a fresh page, then every one
    of its links the tour does not open (``toured``) opened in that page, one after another, as in-page clicks do:
    (links opened in the page, links loaded as a page, problems). One test per tab, so that the two test workers
    share the time all the links take; one page load per tab serves both kinds of opening (a tab with one link
    opens it in a page opened bare)."""
    mine = [target for target in targets if target.tab == tab]
    if len(mine) < 2:
        loaded, found = load_links(browser, url, locale, mine)
        page = fresh_page(browser, url, locale)
    else:
        page = fresh_page(browser, url + mine[-1].link, locale)
        loaded, found = 1, problems(page, mine[-1])
    try:
        skipped = toured(tab)
        opened, more = open_links(page, [target for target in mine if target.slug not in skipped])
    finally:
        page.close()
    return opened, loaded, found + more
