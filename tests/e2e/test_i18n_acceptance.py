"""Issue #19's acceptance test: the whole app in a 中文 browser and in an English one, with no string of the other
language visible.

Chromium opens the app with a zh-CN (then en-US) locale and checks, per tab (parametrised, so a failing tab is
named): the tab titles, the tab's explanation (its first Markdown) and the UI strings a learner reads (buttons, tab
titles, labels, info texts, placeholders, accordion titles). Then one error message, triggered from the page.

"No string of the other language" is decided two ways, both precise:
- **From the tables.** A string of the other language's table (one that differs between the two tables, and that
  no string of the shown language contains) must not appear in the page's visible text. In 中文, a single-line
  English value must not be a whole line of the page ("Count"), and no 4-word piece of a longer English value may
  appear; in English, no 8-character piece of a 中文 value may appear. The page's text here leaves out data: tables,
  highlighted tokens, text boxes, code and plots (but keeps the plots' titles and axis titles), so model ids, code,
  the learner's text and a model's output cannot trip it; a Chinese seed example on an English page is not a 中文
  *table* value unless the English table has it too, in which case it is allowed.
- **Hard-coded English** (no key at all) in the 中文 page: a UI string with an English word that the 中文 table does
  not use itself (tests/test_i18n_literals.english_words: "Count", "Smoothing"; not "BERT", "top-k", a model id).
  The explanation must be mostly 中文: 20+ CJK characters and no run of four English words outside brackets.

Screenshots go to PLM_SCREENSHOTS (scripts/refresh_screenshots.py refreshes the README's on purpose), or with
PLM_I18N_SHOTS=1 to tests/e2e/_artifacts/i18n/<lang>-<tab>.png (git-ignored).
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

import app
from core.text import i18n
from tests.e2e import learner_path
from tests.e2e.conftest import VIEWPORT
from tests.e2e.first_open import IDLE_JS
from tests.test_i18n_literals import english_words

pytestmark = pytest.mark.e2e
SPREAD = "lang"  # one unit of work per language (tests/conftest.py): each has its own page

SCREENSHOTS = Path(os.environ.get("PLM_SCREENSHOTS") or Path(__file__).resolve().parent / "_artifacts" / "i18n")
# Per-tab screenshots cost ~1 s each (20 of them): taken when scripts/refresh_screenshots.py asks (PLM_SCREENSHOTS),
# or PLM_I18N_SHOTS=1 to look at a failure; test_browser.py keeps one screenshot per tab in every run.
SCREENSHOTS_ASKED = bool(os.environ.get("PLM_SCREENSHOTS") or os.environ.get("PLM_I18N_SHOTS"))
LOCALES = {"zh": "zh-CN", "en": "en-US"}
TABS = [app.tab_id(module) for module in app.TABS]
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_MARKUP = re.compile(r"[*_`#>|]+|\$[^$]*\$|<[^>]*>|\]\([^)]*\)|\[")


# ----------------------------------------------------------------------------------------------------------------
# What the other language's table would leave on the page


def _pieces(value: str) -> list[str]:
    """A table value as the page shows it: placeholders and Markdown/HTML markup out, one piece per line."""
    return [" ".join(line.split()) for line in _MARKUP.sub(" ", _PLACEHOLDER.sub("\n", value)).splitlines()
            if line.strip()]


@functools.lru_cache(maxsize=2)  # one scan of the tables per language, not one per tab
def _other_language(shown: str) -> tuple[set[str], list[str]]:
    """(whole lines, fragments) of the other language that must not be visible on a page in ``shown``."""
    other = "en" if shown == "zh" else "zh"
    mine, theirs = i18n.table(shown), i18n.table(other)
    own_text = "\n".join(" ".join(v.split()) for v in mine.values())
    lines, fragments = set(), set()
    for key, value in theirs.items():
        if key.endswith("._section") or value == mine.get(key):
            continue
        pieces = _pieces(value)
        if len(pieces) == 1 and pieces[0] not in own_text and (CJK.search(pieces[0]) if other == "zh"
                                                                 else english_words(pieces[0])):
            lines.add(pieces[0])
        for piece in pieces:
            if other == "en":  # runs of four English words, one of them long (not "is in the" filler)
                words = piece.split()
                fragments |= {" ".join(run) for run in (words[i:i + 4] for i in range(len(words) - 3))
                              if english_words(" ".join(run)) == run and max(map(len, run)) >= 5}
            else:  # runs of eight characters with CJK in them
                fragments |= {piece[i:i + 8] for i in range(max(0, len(piece) - 7))
                              if len(CJK.findall(piece[i:i + 8])) >= 4}
    return frozenset(lines), tuple(sorted(f for f in fragments if f not in own_text))


def other_language_shown(page_text: str, shown: str) -> list[str]:
    lines, fragments = _other_language(shown)
    lines = set(lines)
    visible_lines = {" ".join(line.split()) for line in page_text.splitlines()}
    flat = " ".join(page_text.split())
    return sorted(visible_lines & lines) + [f for f in fragments if f in flat]


# ----------------------------------------------------------------------------------------------------------------
# The page


# The visible top-level tab panel, its UI strings (not results: tokens, generated text and tables are the learner's
# text or a model's output) and its explanation (the panel's first Markdown).
UI_STRINGS_JS = """() => {
  const shown = el => el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const panel = [...document.querySelectorAll('.tabitem')].find(shown);
  const out = [];
  const add = (s) => { s = (s || '').replace(/\\s+/g, ' ').trim(); if (s) out.push(s); };
  const scope = [document.querySelector('[role=tablist]'), panel].filter(Boolean);
  for (const root of scope) {
    root.querySelectorAll('button, [role=tab], [data-testid="block-info"], .info-text, label, .label-wrap')
      .forEach(el => { if (shown(el)) add(el.innerText); });
    root.querySelectorAll('textarea[placeholder], input[placeholder]')
      .forEach(el => { if (shown(el)) add(el.placeholder); });
  }
  const md = panel ? [...panel.querySelectorAll('[data-testid="markdown"]')].find(shown) : null;
  return {ui: [...new Set(out)], explanation: md ? md.innerText : ''};
}"""


# The visible page without its data (tables, highlighted tokens, text boxes, code, plots), plus the plots' titles.
PAGE_TEXT_JS = """() => {
  const data = [...document.querySelectorAll('[role=grid], .js-plotly-plot, .textfield, textarea, input, pre, code')];
  const saved = data.map(el => el.style.visibility);
  data.forEach(el => { el.style.visibility = 'hidden'; });
  const text = document.body.innerText;
  data.forEach((el, i) => { el.style.visibility = saved[i]; });
  const titles = [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.offsetParent !== null)
    .flatMap(el => [...el.querySelectorAll('.gtitle, .xtitle, .ytitle, .annotation-text')].map(t => t.textContent));
  return text + '\\n' + titles.join('\\n');
}"""


@pytest.fixture(scope="module")
def pages(browser, served_app):
    """One browser page per language, opened lazily and kept for the module (each tab opens once per language)."""
    opened, contexts = {}, []

    def get(lang: str):
        if lang not in opened:
            context = browser.new_context(viewport={**VIEWPORT, "width": 1280}, locale=LOCALES[lang])
            contexts.append(context)
            page = context.new_page()
            page.set_default_timeout(120_000)
            page.goto(served_app.url, wait_until="load")
            page.get_by_role("tab").first.wait_for()
            opened[lang] = page
        return opened[lang]

    yield get
    for context in contexts:
        context.close()


def wait_idle(page) -> None:
    page.wait_for_function(IDLE_JS)


def open_tab(page, tab: str, lang: str) -> None:
    title = i18n.text(f"tabs.{tab}", lang)
    page.get_by_role("tab", name=title, exact=True).filter(visible=True).first.click()
    page.wait_for_function("""(title) => [...document.querySelectorAll('[role=tab][aria-selected=true]')]
        .some(el => el.innerText.trim() === title)""", arg=title)
    # the tab's first-open results are on screen (what a learner reads), then nothing is left computing
    page.wait_for_function(learner_path.SETTLED_JS, polling=learner_path.POLL_MS)
    wait_idle(page)


def save_screenshot(page, name: str) -> Path:
    """A PNG of the viewport from the tab bar down, palette-quantised so the README's copies stay small."""
    import io

    from PIL import Image

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => window.scrollTo(0, document.querySelector('[role=tablist]').getBoundingClientRect().top"
                  " + window.scrollY - 8)")
    path = SCREENSHOTS / f"{name}.png"
    image = Image.open(io.BytesIO(page.screenshot(full_page=False))).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


WORD_LIST = re.compile(r"[a-z]+(?:, [a-z]+){2,}")


def english_run(text: str) -> str | None:
    """A run of four or more English words outside brackets (an untranslated sentence), if any."""
    text = re.sub(r"（[^）]*）|\([^)]*\)", " ", text)
    for run in re.findall(r"(?:\b[A-Za-z][a-z']+\b[ ,;:]+){3,}\b[A-Za-z][a-z']+\b", text):
        if english_words(run):
            return run
    return None


# ----------------------------------------------------------------------------------------------------------------
# The checks


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_header_tab_titles_and_status_in_the_browser_language(pages, lang):
    page = pages(lang)
    titles = [t.strip() for t in page.get_by_role("tab").filter(visible=True).all_inner_texts()][:len(TABS)]
    assert titles == [i18n.text(f"tabs.{tab}", lang) for tab in TABS]
    heading = i18n.text("app.intro", lang).splitlines()[0].lstrip("# ")
    page.get_by_role("heading", name=heading).wait_for()
    page.get_by_text(i18n.text("app.badge", lang, device="cpu", network=i18n.text("app.offline", lang))).wait_for()
    page.get_by_text(i18n.text("app.status_title", lang)).click()
    page.get_by_role("button", name=i18n.text("app.status_refresh", lang), exact=True).click()
    page.get_by_text(i18n.text("app.status_network", lang, network=i18n.text("app.offline", lang))
                     .replace("**", "")).wait_for()
    page.get_by_text(i18n.text("app.status_title", lang)).click()  # closed again
    header = page.evaluate("() => document.querySelector('[role=tablist]').parentElement.parentElement"
                           ".previousElementSibling?.innerText || ''") + "\n" + "\n".join(titles)
    assert not other_language_shown(header, lang)


@pytest.mark.parametrize("tab", TABS)
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_each_tab_speaks_the_browser_language(pages, lang, tab):
    page = pages(lang)
    open_tab(page, tab, lang)
    if SCREENSHOTS_ASKED:
        save_screenshot(page, f"{lang}-{tab}")
    shown = page.evaluate(UI_STRINGS_JS)
    body = page.evaluate(PAGE_TEXT_JS)

    leaks = other_language_shown(body, lang)
    assert not leaks, f"{tab} ({lang}): strings of the other language are visible: {leaks[:10]}"
    explanation = shown["explanation"]
    if lang == "zh":
        assert len(CJK.findall(explanation)) >= 20, f"{tab}: the explanation is not in 中文: {explanation[:200]!r}"
        run = english_run(explanation)
        assert run is None, f"{tab}: English sentence in the 中文 explanation: {run!r}"
        # "平滑（smoothing）": the English term in brackets on first use is the house style, not an untranslated label
        # A choice that is a list of words ("king, queen, man, woman, apple") is what GloVe reads: model input.
        english = [s for s in shown["ui"] if english_words(re.sub(r"（[^）]*）", " ", s))
                   and not WORD_LIST.fullmatch(s.strip())]
        assert not english, f"{tab}: English UI strings on the 中文 page: {english[:15]}"
    else:
        assert len(english_words(explanation)) >= 10, f"{tab}: the explanation is not English: {explanation[:200]!r}"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_figure_toolbar_in_the_browser_language(pages, lang):
    """Plotly's modebar tooltips (camera, zoom, pan, …) and our SVG button follow the page language
    (demo.kit.figure_head.HEAD gives plotly.js a 中文 locale from the tables)."""
    page = pages(lang)
    open_tab(page, "ngram", lang)
    # Runs before the error test, which leaves the N-gram tab without a corpus (an error toast over its plots).
    plot = page.locator(".js-plotly-plot").filter(visible=True).first
    plot.hover()
    titles = [t for t in plot.locator(".modebar-btn").evaluate_all("els => els.map(e => e.dataset.title)") if t]
    assert len(titles) >= 4, titles
    assert i18n.text("common.svg_button", lang) in titles
    assert i18n.text("common.plotly_download_png", lang) in titles or \
        i18n.text("common.plotly_download_png_lower", lang) in titles
    if lang == "zh":
        assert all(CJK.search(title) for title in titles), titles
    else:
        assert not any(CJK.search(title) for title in titles), titles


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_gradios_footer_link_to_saved_runs_in_the_browser_language(pages, lang):
    """Once a run is saved in the browser, Gradio's footer shows a link to them, "Runs", which its own zh-CN table
    does not translate: our tables fill the key (demo/kit/i18n.py GRADIOS_OWN)."""
    page = pages(lang)
    open_tab(page, "ngram", lang)
    panel = page.locator(".tabitem").filter(visible=True).first
    panel.locator("button.primary").filter(visible=True).first.click()  # the Counts view's run button: a saved run
    link = page.locator("footer a[title]").filter(has_text=i18n.text("common.runs", lang)).first
    link.wait_for()
    assert link.get_attribute("title") == i18n.text("common.runs_description", lang)
    assert (lang == "zh") == bool(CJK.search(link.inner_text())), link.inner_text()
    wait_idle(page)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_error_message_in_the_browser_language(pages, lang):
    """N-gram with "My own text" chosen and no text: the learner is told the corpus is empty, in their language."""
    page = pages(lang)
    open_tab(page, "ngram", lang)
    panel = page.locator(".tabitem").filter(visible=True).first
    panel.get_by_label(i18n.text("ngram.corpus_own", lang), exact=True).first.check()  # "My own text", box empty
    panel.locator("button.primary").filter(visible=True).first.click()  # the Counts view's run button
    toast = page.locator('[data-testid="toast-body"].error').first
    toast.wait_for()
    # The toast's header: Gradio draws its kind in English from the message's type ("Error") and labels its close
    # button "Close" (gradio 6.31, statustracker); assets/toast_words.js puts them in the page's language.
    title = toast.locator(".toast-title").first
    title.filter(has_text=i18n.text("common.toast_error", lang)).wait_for(timeout=15_000)
    assert title.inner_text().strip() == i18n.text("common.toast_error", lang)
    assert toast.get_by_role("button", name=i18n.text("common.toast_close", lang), exact=True).count() == 1
    message = " ".join(toast.locator('[data-testid="toast-text"]').first.inner_text().split())
    if lang == "zh":
        assert len(CJK.findall(message)) >= 6 and not english_words(message), message
    else:
        assert not CJK.search(message) and len(english_words(message)) >= 4, message
    assert not other_language_shown(message, lang), message
    if SCREENSHOTS_ASKED:
        save_screenshot(page, f"{lang}-error")
