"""Issue #36 in Chromium, in English and in 中文: the tokenizer lab's preset links (straw ##berries, 我学中文, one
sentence in both languages) and a sampling preset's link with a seed in it open their sub-tab with the figure and
tables filled: the lab's token strips mark byte fragments with a pattern, the next-token figure shows the cut, and
the seed from the link is in the seed box. Waits are on conditions (tests/e2e/learner_path.py), never on sleeps.
"""
from __future__ import annotations

import pytest

from tests.e2e import learner_path
from tests.e2e.conftest import fresh_page
from tests.e2e.learner_path import HAS_VALUE_JS, Target

pytestmark = pytest.mark.e2e

LAB = [Target("transformer", "straw-berries", "tokenizer-lab", ("strawberries",)),
       Target("transformer", "wo-xue-zhongwen", "tokenizer-lab", ("我学中文",)),
       Target("transformer", "two-languages", "tokenizer-lab", ("I am learning Chinese: 我学中文，从字开始。",))]
SAMPLING = Target("ngram", "moby-top-p", "generate", ("the white",))
SEED = 11

# The visible plots' traces: (trace name, its text labels, its pattern shapes); and the visible tables' rows.
PLOTS_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.offsetParent !== null)
  .map(el => (el.data || []).map(t => ({name: t.name || '', y: (t.y || []).slice(0, 2).map(String),
    text: [].concat(t.text || []).map(String), shapes: [].concat(((t.marker || {}).pattern || {}).shape || [])})))"""
ROWS_JS = """() => [...document.querySelectorAll('[role="grid"].table-wrap')].filter(el => el.offsetParent !== null)
  .map(el => Number(el.getAttribute('aria-rowcount') || 0) - 1)"""
WORDS = {"en-US": {"bytes": "UTF-8 bytes", "before": "before the cut"},
         "zh-CN": {"bytes": "UTF-8 字节", "before": "截断前"}}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_lab_links_and_a_seeded_sampling_link_fill_their_figures_and_tables(browser, served_app, locale):
    words = WORDS[locale]
    page = fresh_page(browser, served_app.url, locale)
    try:
        for target in LAB:
            page.evaluate("(href) => window.plmOpenLink(href)", target.link)
            assert not learner_path.problems(page, target), target.link
            plots, rows = page.evaluate(PLOTS_JS), page.evaluate(ROWS_JS)
            strips = next(traces for traces in plots if any(t["y"][:1] == [words["bytes"]] for t in traces))
            assert len(strips) >= 4  # characters, bytes, WordPiece, the BPE learned here (GPT-2s: not offline)
            fragments = [shape == "/" for t in strips for shape in t["shapes"]]
            labels = [text for t in strips for text in t["text"]]
            assert (sum(fragments) > 0) == ("我" in target.texts[0])  # hatched where bytes split a character
            assert all(text.startswith("�") for text, hatched in zip(labels, fragments) if hatched)
            assert len(rows) == 2 and rows[0] >= 4 and rows[1] == 40  # the counts; the first 40 merges

    finally:
        page.close()
    link = f"{SAMPLING.link}&seed={SEED}"
    for opened_in_place in (True, False):  # a link clicked in the page, and the same link as a fresh page load
        page = fresh_page(browser, served_app.url + ("" if opened_in_place else link), locale)
        try:
            if opened_in_place:
                page.evaluate("(href) => window.plmOpenLink(href)", link)
            assert not learner_path.problems(page, SAMPLING), link
            page.wait_for_function(HAS_VALUE_JS, arg=str(SEED))  # the link's seed is in the seed box
            cut = next(traces for traces in page.evaluate(PLOTS_JS)
                       if traces and words["before"] in traces[0]["name"])
            marks = [text[0] for text in cut[1]["text"] if text]
            assert "✓" in marks and "✗" in marks  # top-p 0.75 keeps some tokens and cuts others, each labelled
            assert page.locator(f'a[href$="preset=moby-top-p&seed={SEED}"]').filter(visible=True).count()
        finally:
            page.close()
