"""The teacher's kit in Chromium (issue #54): 20 state links opened and every restored input checked, forged links,
a link's tab shown at once, and "Add to slides" → IndexedDB → reorder, delete → "Download the deck".

Every restored input is checked through the page itself: after a link opens, the view's own "Link to this view"
button sends the inputs exactly as the browser holds them, and the link it makes must be the one that was opened
(the same inputs, value for value). A few are also read off the screen."""
from __future__ import annotations

import io
import json
import re
import time
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from core.text.i18n import text
from demo.kit import state_links
from tests.app_events import views
from tests.e2e import learner_path
from tests.e2e.conftest import fresh_page
from tests.e2e.first_open import BUSY, IDLE_JS

pytestmark = pytest.mark.e2e
SPREAD = "test"  # each test a unit of work of its own (tests/conftest.py): the two workers share them
HEAVY = ("train", "finetune", "nnlm", "word2vec", "retrain", "why", "generate", "compare")  # minutes of training


def link_cases() -> list[tuple]:
    """20 (view, values, lang): one non-default preset's inputs per view, round robin over the tabs, in both
    languages. The link carries the values themselves (view=…&in=…), not the preset's name."""
    by_tab: dict[str, list] = {}
    for view in views():
        if any(word in view.api_prefix for word in HEAVY):
            continue
        for preset in reversed(list(view.presets.values())):
            if preset.values is None or preset.slug == view.default:
                continue
            values = preset.resolved()
            if state_links.changed(view, values):
                by_tab.setdefault(view.tab, []).append((view, values))
                break
    cases, round_ = [], 0
    while len(cases) < 20 and any(round_ < len(v) for v in by_tab.values()):
        for tab_views in by_tab.values():
            if round_ < len(tab_views) and len(cases) < 20:
                cases.append(tab_views[round_])
        round_ += 1
    return [(view, values, "zh" if number % 2 else "en") for number, (view, values) in enumerate(cases)]


def query(url: str) -> dict:
    return dict(parse_qsl(urlsplit(url).query))


def new_page(browser, served_app, lang: str, link: str = "", init_script: str = "",
             viewport: dict | None = None):
    page = fresh_page(browser, served_app.url + link, "zh-CN" if lang == "zh" else "en-US",
                      viewport or {"width": 1280, "height": 900}, cookies={"plm_lang": lang}, init_script=init_script)
    page.set_default_timeout(180_000)
    page.wait_for_function("() => !!window.plmKit && !!window.plmOpenLink")
    return page


def copy_link(page, view) -> str:
    """Press the view's "Link to this view" and return the link it put in the address bar."""
    slug = next(iter(view.presets))
    bar = page.locator(f".preset-bar:has(button.preset-btn[data-slug='{slug}'])").filter(visible=True).first
    page.evaluate("() => history.replaceState(null, '', '?copied=0')")
    bar.locator("button.kit-btn[data-kit='link']").click()
    page.wait_for_function("() => new URLSearchParams(location.search).has('view')")
    return page.url


@pytest.mark.timeout(900)  # 10 links, some of them loading a model first, on a shared 2-core machine
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_state_links_restore_every_input(browser, served_app, lang):
    cases = [case for case in link_cases() if case[2] == lang]
    assert len(cases) == 10
    page = new_page(browser, served_app, lang)
    try:
        for view, values, _ in cases:
            link = state_links.state_link(view, values, lang)
            page.evaluate("(href) => window.plmOpenLink(href)", link)
            page.wait_for_function(f"""() => [...document.querySelectorAll('button[role="tab"][aria-selected="true"]')]
                .some((b) => b.dataset.tabId === {json.dumps(view.tab)})""")
            asked, again = query(link), restored(page, view, link)
            assert (again["tab"], again["view"], again["lang"]) == (view.tab, view.key, lang)
            assert json.loads(again.get("in", "{}")) == json.loads(asked.get("in", "{}")), view.api_prefix
            # and on screen: a text the link set shows in a box (a view's other texts may sit in another sub-tab)
            texts = [value for component, value in zip(view.inputs, values)
                     if type(component).__name__ == "Textbox" and isinstance(value, str) and value.strip()]
            if texts:
                shown = page.evaluate("""(texts) => [...document.querySelectorAll('textarea, input[type=text]')]
                    .some((el) => el.offsetParent !== null && texts.includes(el.value))""", texts)
                assert shown, (view.api_prefix, texts[0][:40])
    finally:
        page.close()


def restored(page, view, link: str) -> dict:
    """The view's own "Link to this view", copied until it holds the inputs of ``link`` again (the tab shows first,
    then the view computes: a minute for some), for at most three minutes: the query it made."""
    asked, give_up = query(link), time.monotonic() + 180
    while True:
        page.wait_for_function(IDLE_JS)
        again = query(copy_link(page, view))
        if json.loads(again.get("in", "{}")) == json.loads(asked.get("in", "{}")) or time.monotonic() > give_up:
            return again


@pytest.mark.timeout(600)
def test_one_link_opens_a_view_with_its_inputs_a_check_and_a_class(browser, served_app):
    """Issue #54 §5: a state link, ?check= (issue #51) and ?class= (issue #55) in one link, as a teacher sends it."""
    from core import checks
    from tests.classroom_http import Client

    code = Client(served_app.url).ok("start")["code"]
    view, values, _ = next(case for case in link_cases() if checks.checks_for(case[0].tab))
    slug = checks.checks_for(view.tab)[0].slug
    link = f"{state_links.state_link(view, values, 'en')}&check={slug}&class={code}"
    assert len(served_app.url + link) < state_links.LINK_LIMIT
    page = new_page(browser, served_app, "en")
    try:
        page.goto(served_app.url + link.lstrip("/"), wait_until="load")
        page.locator(f".your-turn-check-{slug}[open] .yt-answer").wait_for()  # the check, open in its tab
        page.get_by_role("button", name=text("classroom.join", "en", code=code)).wait_for()  # the class, to join
        again = restored(page, view, link)
        assert (again["tab"], again["view"]) == (view.tab, view.key)
        assert json.loads(again.get("in", "{}")) == json.loads(query(link).get("in", "{}"))
    finally:
        page.close()


def test_forged_links_open_the_defaults_with_one_message(browser, served_app):
    page = new_page(browser, served_app, "en")
    hostile = "<img src=x onerror=window.__pwned=1>"
    try:
        for link in ["?tab=attention&view=steps&in=%7B%220%22%3A%7B%22x%22%3A1%7D%7D&lang=en",
                     f"?tab=attention&view={hostile}&lang=en",
                     "?tab=attention&view=steps&in=" + "%5B" * 900,
                     f"?tab=ngram&view=all&in={hostile}&lang={hostile}&seed={hostile}"]:
            page.evaluate("(href) => window.plmOpenLink(href)", link)
            toast = page.locator(".toast-body").filter(has_text=text("deck.link_broken", "en", detail="").split("(")[0])
            toast.first.wait_for()
            assert toast.count() == 1
            assert page.locator(".toast-body.error").count() == 0
            assert page.evaluate("() => window.__pwned") is None
            page.evaluate("() => document.querySelectorAll('.toast-close').forEach((b) => b.click())")
            page.wait_for_function("() => !document.querySelector('.toast-body')")
    finally:
        page.close()


# Installed before the page's own scripts: from the first paint on, notes whether the NNLM's sub-tab was ever
# selected while a progress indicator was on screen, and whether the NNLM's loss figure (its title) was ever drawn.
WATCH_TAB_WHILE_BUSY = """
window.__linkSeen = {tabWhileBusy: false, drawn: false};
new MutationObserver(() => {
  const selected = [...document.querySelectorAll('button[role="tab"][aria-selected="true"]')]
    .map((b) => b.dataset.tabId);
  const tab = selected.includes('embeddings') && selected.includes('nnlm');
  const busy = [...document.querySelectorAll(__BUSY__)]
    .some((e) => e.checkVisibility());
  window.__linkSeen.tabWhileBusy ||= tab && busy;
  window.__linkSeen.drawn ||= [...document.querySelectorAll('.gtitle')]
    .some((e) => e.textContent.includes(window.__lossTitle));
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
""".replace("__BUSY__", json.dumps(BUSY))


def test_a_link_shows_its_tab_before_its_view_computes(browser, served_app):
    """A link to the NNLM on Moby-Dick trains it first: the tab and sub-tab are on screen while it does. The link is
    the nnlm-moby preset's settings but 590 steps instead of 600 (input 4), which no other test asks for: the worker's
    app may have trained the preset itself already, and would answer it from its result cache at once.

    An observer installed before the page loads sees every change to the page, so the answer does not depend on when
    the test looks: the progress may appear a moment after the tab does (the queue has not yet started the event),
    and the training may end soon after. The wait ends once the sub-tab was seen while busy, or once the loss figure
    is drawn (had the sub-tab not been seen while training, the test fails)."""
    view = next(v for v in views() if v.key == "nnlm")
    values = list(view.presets["nnlm-moby"].values)
    values[4] = 590
    title = json.dumps(text("nnlm.fig_loss", "en"))
    page = new_page(browser, served_app, "en", state_links.state_link(view, values, "en"),  # the link, a new tab
                    init_script=f"window.__lossTitle = {title};" + WATCH_TAB_WHILE_BUSY)
    try:
        page.wait_for_function("() => window.__linkSeen.tabWhileBusy || window.__linkSeen.drawn")
        assert page.evaluate("() => window.__linkSeen.tabWhileBusy")  # the tab came first; the training was running
    finally:
        page.close()


def wait_for_slides(page, at_least: int) -> None:
    """Until the deck in IndexedDB holds ``at_least`` slides. The store answers asynchronously: each check asks it
    and reads the answer to the check before (wait_for_function would take a promise itself for a true value)."""
    page.wait_for_function("""(n) => { window.plmKit.all().then((s) => { window.__slides = s.length; });
        return (window.__slides || 0) >= n; }""", arg=at_least, polling=100)


def open_preset(page, tab: str, slug: str) -> None:
    """Open a preset's link in the page and wait until its results are on screen (its tab and sub-tab selected,
    its text in a box, every visible figure and table filled: tests/e2e/learner_path.py)."""
    target = next(t for t in learner_path.catalogue("zh-CN")[0] if (t.tab, t.slug) == (tab, slug))
    page.evaluate("(href) => window.plmOpenLink(href)", target.link)
    assert learner_path.problems(page, target) == []


@pytest.mark.timeout(600)
def test_add_to_slides_reorder_delete_and_download(browser, served_app, tmp_path):
    from pptx import Presentation

    page = new_page(browser, served_app, "zh")
    try:
        page.evaluate("() => window.plmKit.clear()")
        view = next(v for v in views() if (v.tab, v.key) == ("attention", "steps"))
        open_preset(page, "attention", "thinking-machines")
        bar = page.locator(".preset-bar:has(button.preset-btn[data-slug='thinking-machines'])").filter(visible=True)
        bar.first.locator("button.kit-btn[data-kit='slide']").click()
        wait_for_slides(page, 1)
        slides = page.evaluate("() => window.plmKit.all()")
        first_images = [pixels(s["image"]) for s in slides if s.get("image")]
        assert all(s["image"].startswith("data:image/png;base64,") or s.get("table") for s in slides)
        assert {s["title"] for s in slides} == {state_links.title(view, "zh")}
        assert all("?tab=attention&view=steps&lang=zh" in s["link"] for s in slides)
        assert all(re.search(r"[\u4e00-\u9fff]", s["caption"]) for s in slides)
        count = len(slides)
        # a second view's slide, moved up one place; then the last of the first view's deleted
        open_preset(page, "ngram", "add-one")
        page.locator(".preset-bar:has(button.preset-btn[data-slug='add-one'])").filter(visible=True).first \
            .locator("button.kit-btn[data-kit='slide']").click()
        wait_for_slides(page, count + 1)
        page.locator(".kit-toggle").click()
        page.locator(".kit-slide").nth(count).wait_for()  # the panel lists the new slide
        last = page.locator(".kit-slide").last
        moved = last.get_attribute("data-id")
        last.locator("button[data-move='-1']").click()
        page.wait_for_function("(id) => document.querySelectorAll('.kit-slide')[Math.max(0, "
                               "document.querySelectorAll('.kit-slide').length - 2)].dataset.id === id", arg=moved)
        page.locator(".kit-slide").last.locator("button[data-remove]").click()  # one of the first view's
        page.wait_for_function("(n) => document.querySelectorAll('.kit-slide').length === n", arg=count)
        slides = page.evaluate("() => window.plmKit.all()")
        assert len(slides) == count and moved in {str(s["id"]) for s in slides}
        with page.expect_download() as download:
            page.locator(".kit-download").click()
        path = tmp_path / "deck.pptx"
        download.value.save_as(path)
        presentation = Presentation(io.BytesIO(path.read_bytes()))
        titles = [s.shapes.title.text_frame.text for s in list(presentation.slides)[1:-1]]
        assert titles == [s["title"] for s in slides]
        assert len(presentation.slides) == len(slides) + 2
        laptop = first_images
    finally:
        page.close()
    # The same slide added on a phone, whose figures are re-laid out for 390 px (titles wrapped, colour bars under
    # the plot): the slide holds the figures as a laptop saves them (assets/kit.js, plmSlideFigure).
    page = new_page(browser, served_app, "zh", viewport={"width": 390, "height": 844})
    try:
        page.evaluate("() => window.plmKit.clear()")
        open_preset(page, "attention", "thinking-machines")
        bar = page.locator(".preset-bar:has(button.preset-btn[data-slug='thinking-machines'])").filter(visible=True)
        bar.first.locator("button.kit-btn[data-kit='slide']").click()
        wait_for_slides(page, 1)
        phone = [pixels(s["image"]) for s in page.evaluate("() => window.plmKit.all()") if s.get("image")]
    finally:
        page.close()
    assert len(phone) == len(laptop) >= 4, (len(phone), len(laptop))
    for on_phone, on_laptop in zip(phone, laptop):
        assert on_phone.shape == on_laptop.shape and np.abs(on_phone - on_laptop).mean() < 0.5, \
            np.abs(on_phone - on_laptop).mean()


def pixels(data_url: str):
    """A slide's PNG (a data: URL) as an RGB array."""
    import base64

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).convert("RGB"),
                      dtype=np.int16)
