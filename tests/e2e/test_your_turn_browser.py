""""Your turn" in Chromium (issue #51), in English and in 中文, on the offline app of the browser session.

Before the learner, another learner has answered every check in the other language (the server has served other
requests, and its caches hold their answers). Then, per tab and language, every check of the tab is opened, answered
once right and once wrong, and what the learner reads is checked: ✓ or ✗ with its word, the model's answer beside
their prediction, the explanation with its §, the figure with their pick marked, or the download card of a checkpoint
this machine lacks. Right and wrong predictions come from the check itself (tests/kit/test_your_turn_demo.predictions);
whether the answer is the model's is core's test. Then: the Overview's map shows the progress and resets it,
``?check=<slug>`` opens a check, the keyboard alone answers one, and bad input gets a message that keeps the
prediction. Screenshots go to tests/e2e/_artifacts/your-turn-*.png.
"""
from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest

from core import checks
from core.checks.base import TABS
from core.text.i18n import text
from tests.e2e import learner_path
from tests.e2e.conftest import fresh_page
from tests.kit.test_your_turn_demo import predictions

pytestmark = pytest.mark.e2e
SPREAD = "tab"  # one unit of work per tab, both languages in it (tests/conftest.py): the two workers share the tabs
ARTIFACTS = Path(__file__).parent / "_artifacts"
LOCALES = {"en": "en-US", "zh": "zh-CN"}
CJK = re.compile(r"[\u4e00-\u9fff]")


def call(url: str, name: str, data: list, lang: str):
    """One endpoint through Gradio's REST route (what the page and gradio_client use), as a learner in ``lang``."""
    headers = {"Content-Type": "application/json", "Accept-Language": LOCALES[lang]}
    posted = urllib.request.Request(f"{url}gradio_api/call/{name}", json.dumps({"data": data}).encode(), headers)
    with urllib.request.urlopen(posted, timeout=300) as response:
        event = json.load(response)["event_id"]
    with urllib.request.urlopen(f"{url}gradio_api/call/{name}/{event}", timeout=300) as response:
        return response.read().decode()


@pytest.fixture(scope="session")  # once per worker, whichever of the tabs' units it runs first
def others_first(served_app):
    """Another learner answers every check first, in the other language of each test (both, here)."""
    for lang in ("zh", "en"):
        for slug, check in checks.CHECKS.items():
            right, wrong = predictions(check)
            assert "event: complete" in call(served_app.url, "check_answer", [slug, wrong, None], lang), slug
    return served_app


def open_check(page, slug: str):
    page.evaluate("(slug) => window.plmYourTurn.open(slug, false)", slug)
    box = page.locator(f".your-turn-check-{slug}[open]")
    box.locator(".yt-answer").wait_for()
    return box


def predict(box, check, prediction) -> None:
    """Commit to ``prediction`` the way a learner does: a radio, a token, the number box, or ↑ moves."""
    if prediction is None:  # a check whose checkpoint is missing and whose options it would give: nothing to pick
        return
    if check.kind in ("choice", "token") and not box.locator(".yt-answer input").count():
        return  # no options to show (a missing checkpoint's tokenizer): Check answers with the download card
    if check.kind == "choice":
        box.locator(".yt-choices input").nth(check.setup(None).options.index(prediction)).check()
    elif check.kind == "token":
        box.locator(".yt-tokens input").nth(int(prediction)).check()
    elif check.kind == "number":
        box.locator(".yt-number input[type=number]").fill(repr(float(prediction)))
    else:
        for place, item in enumerate(prediction):
            items = box.locator(".yt-order li")
            now = [items.nth(i).get_attribute("data-value") for i in range(items.count())].index(item)
            for _ in range(now - place):
                box.locator(f'.yt-order li[data-value="{item}"] .yt-move[data-move="-1"]').click()
        shown = box.locator(".yt-order li")
        assert [shown.nth(i).get_attribute("data-value") for i in range(shown.count())] == list(prediction)


def verdict(box, lang: str, check, right: bool) -> list[str]:
    """What the learner reads after Check, and what is wrong with it."""
    result = box.locator(".yt-result")
    before = int(result.get_attribute("data-shown") or 0)
    box.locator(".yt-check-button").click()
    box.page.wait_for_function("([el, n]) => Number(el.dataset.shown || 0) > n", arg=[result.element_handle(), before])
    problems = []
    seen = result.inner_text()
    if result.locator(".yt-card").count():  # a checkpoint not on this machine: the view's download card, no answer
        answer = check.answer(None)
        if not answer.missing:
            problems.append(f"{check.slug}: a download card, but the model is here: {seen[:200]}")
        elif "hf download" not in seen:
            problems.append(f"{check.slug}: card without its command: {seen[:200]}")
        return problems
    if result.locator(".yt-error").count():
        return [f"{check.slug} ({lang}): error {seen[:200]}"]
    word = text("your_turn.right" if right else "your_turn.wrong", lang)
    symbol = "✓" if right else "✗"
    if not seen.startswith(f"{symbol} {word}"):
        problems.append(f"{check.slug} ({lang}, {'right' if right else 'wrong'}): reads {seen[:120]!r}")
    if text(check.why_key, lang)[:20] not in seen or "§" not in seen:
        problems.append(f"{check.slug} ({lang}): no explanation in {seen[-200:]!r}")
    if check.kind != "order" and "◆" not in result.inner_html():
        problems.append(f"{check.slug}: the figure does not mark the prediction")
    if lang == "zh" and re.search(r"\b(You|picked|the model|Right|Not quite|Why)\b", seen):
        problems.append(f"{check.slug}: English in 中文: {seen[:200]!r}")
    if lang == "zh" and not CJK.search(seen):
        problems.append(f"{check.slug}: no Chinese in {seen[:120]!r}")
    if re.search(r"\{[a-z_]+\}", seen) or "checks." in seen or "your_turn." in seen:
        problems.append(f"{check.slug}: a raw key or placeholder in {seen[:200]!r}")
    return problems


@pytest.mark.timeout(900)
@pytest.mark.parametrize("tab", [tab for tab in TABS if checks.checks_for(tab)])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_check_answered_right_and_wrong(browser, others_first, lang, tab):
    ARTIFACTS.mkdir(exist_ok=True)
    first = checks.checks_for(tab)[0].slug
    page = fresh_page(browser, f"{others_first.url}?check={first}", LOCALES[lang])
    found = []
    try:
        page.wait_for_function(learner_path.SELECTED_JS, arg=tab)  # ?check= opened the check's tab
        for number, check in enumerate(checks.checks_for(tab)):
            box = open_check(page, check.slug)
            question = box.locator("summary .yt-question").inner_text()
            if question != text(check.question_key, lang):
                found.append(f"{check.slug}: question reads {question!r}")
            right, wrong = predictions(check)
            for prediction, is_right in ((wrong, False), (right, True)):
                predict(box, check, prediction)
                found += verdict(box, lang, check, is_right)
            mark = box.locator("summary .yt-mark").inner_text()
            if check.answer(None).missing is None and mark != "✓":
                found.append(f"{check.slug}: marked {mark!r} after a right answer")
            if number == 0:
                box.scroll_into_view_if_needed()
                box.screenshot(path=str(ARTIFACTS / f"your-turn-{lang}-{tab}.png"))
            box.locator(":scope > summary").click()  # fold it again: the next check opens below the tab's results
        stored = page.evaluate("() => JSON.parse(localStorage.getItem('plm-checks'))")
        answered = [c.slug for c in checks.checks_for(tab) if c.answer(None).missing is None]
        assert all(stored[slug] == {"tried": True, "right": True} for slug in answered), stored
    finally:
        page.close()
    assert not found, "\n".join(found)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_map_the_links_the_keyboard_and_bad_input(browser, served_app, lang):
    ARTIFACTS.mkdir(exist_ok=True)
    page = fresh_page(browser, f"{served_app.url}?check=ngram-add-one", LOCALES[lang])
    try:
        page.wait_for_function(learner_path.SELECTED_JS, arg="ngram")
        box = page.locator(".your-turn-check-ngram-add-one[open]")
        box.locator(".yt-answer").wait_for()
        # Bad input: a number out of range, then an empty own text: a message in the learner's language, the
        # prediction kept.
        number = box.locator(".yt-number input[type=number]")
        number.fill("1.5")
        box.locator(".yt-check-button").click()
        error = box.locator(".yt-result .yt-error")
        error.wait_for()
        assert text("checks.bad_number", lang, value="1.5", low="0", high="1") in error.inner_text()
        assert number.input_value() == "1.5"
        box.locator(".yt-own > summary").click()
        box.locator(".yt-own-text").fill("   ")
        box.locator(".yt-own-use").click()
        page.wait_for_function("(m) => document.querySelector('.your-turn-check-ngram-add-one .yt-result')"
                               ".innerText.includes(m)", arg=text("checks.own_empty", lang))
        assert number.input_value() == "1.5"
        # Try it on your own text: the same question, answered on it (的 磁性 twice in 2 sentences: 0.9 is far off)
        box.locator(".yt-own-text").fill("我 的 磁性\n你 的 磁性")
        box.locator(".yt-own-use").click()
        box.locator(".yt-on-own").wait_for()
        assert "我 的 磁性" in box.locator(".yt-text").inner_text() and number.input_value() == "1.5"
        number.fill("0.9")
        box.locator(".yt-check-button").click()
        box.locator(".yt-result .yt-verdict").wait_for()
        assert box.locator(".yt-result").get_attribute("role") == "status"
        assert box.locator(".yt-result").get_attribute("aria-live") == "polite"
        box.screenshot(path=str(ARTIFACTS / f"your-turn-{lang}-own-text.png"))

        # The keyboard alone: focus the next check's summary, open it, pick with the arrows, Check with Enter.
        page.locator(".your-turn-check-ngram-cixing > summary").focus()
        page.keyboard.press("Enter")
        page.locator(".your-turn-check-ngram-cixing[open] .yt-answer").wait_for()
        page.keyboard.press("Tab")  # the first radio of the options (after the setup, which has no control)
        for _ in range(10):
            if page.evaluate("() => document.activeElement?.type === 'radio'"):
                break
            page.keyboard.press("Tab")
        page.keyboard.press("ArrowRight")  # the second option: 磁性
        page.keyboard.press("Space")
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement?.classList.contains('yt-check-button')")
        page.keyboard.press("Enter")
        cixing = page.locator(".your-turn-check-ngram-cixing .yt-result .yt-verdict")
        cixing.wait_for()
        assert cixing.inner_text().startswith("✗ " + text("your_turn.wrong", lang))

        # The Overview's map: this learner's progress, then reset.
        learner_path.click_tab(page, "overview")
        chapter = page.locator('.yt-map-chapter[data-tab="ngram"]')
        chapter.wait_for()
        n = len(checks.checks_for("ngram"))
        assert chapter.locator(".yt-map-count").inner_text() == text("your_turn.map_tried", lang, tried=2, right=0, n=n)
        dots = chapter.locator(".yt-dot")
        assert dots.nth(0).inner_text() == "✗" and dots.nth(2).inner_text() == "○"
        page.locator(".yt-map").screenshot(path=str(ARTIFACTS / f"your-turn-{lang}-map.png"))
        page.locator(".yt-map .yt-reset").click()
        assert chapter.locator(".yt-map-count").inner_text() == text("your_turn.map_tried", lang, tried=0, right=0, n=n)
        assert page.locator(".yt-map-status").inner_text() == text("your_turn.map_cleared", lang)
        assert page.evaluate("() => localStorage.getItem('plm-checks')") is None
        # A dot on the map opens its check in its tab.
        page.locator('.yt-map-chapter[data-tab="lstm"] .yt-dot').first.click()
        page.wait_for_function(learner_path.SELECTED_JS, arg="lstm")
        page.locator(f".your-turn-check-{checks.checks_for('lstm')[0].slug}[open] .yt-answer").wait_for()
        assert "check=" in page.url
    finally:
        page.close()
