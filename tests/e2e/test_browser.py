"""Every tab in a real browser: open it, run its example, check that the result renders, save a screenshot.

The app runs offline (`python app.py --offline`), as on a laptop without network: each scenario uses a view that
works on the bundled models. Screenshots (1280×800) go to tests/e2e/_artifacts/<tab module>.png (git-ignored);
scripts/refresh_screenshots.py runs this test with PLM_SCREENSHOTS=docs/screenshots to refresh the README's on purpose.

Run: python -m pytest tests/e2e -m e2e
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

import app
from tests.e2e.first_open import IDLE_JS

pytestmark = pytest.mark.e2e

SCREENSHOTS = Path(os.environ.get("PLM_SCREENSHOTS") or Path(__file__).resolve().parent / "_artifacts")

# Visible plotly divs whose traces hold at least one point (empty_figure() placeholders have no traces).
PLOTS_WITH_DATA_JS = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .filter(el => el.offsetParent !== null)
    .filter(el => (el.data || []).some(t => ['x', 'y', 'z'].some(k => t[k] && t[k].length > 0)))
    .length"""


# ----------------------------------------------------------------------------------------------------------------
# Small actions on the page. Selectors use what a learner sees (tab names, button text), not generated ids.


def visible(locator):
    return locator.filter(visible=True).first


def open_tab(page, name: str) -> None:
    visible(page.get_by_role("tab", name=name, exact=True)).click()


def click_button(page, name: str) -> None:
    visible(page.get_by_role("button", name=name, exact=True)).click()


def click_text(page, text: str) -> None:
    visible(page.get_by_text(text, exact=True)).click()


def plots_with_data(page) -> int:
    return page.evaluate(PLOTS_WITH_DATA_JS)


def wait_idle(page) -> None:
    """Until no component shows Gradio's pending/progress tracker."""
    page.wait_for_function(IDLE_JS)


def errors_shown(page) -> list[str]:
    return [t for t in page.locator('[data-testid="toast-body"].error').all_inner_texts() if t.strip()]


def visible_text(page) -> str:
    return page.locator("body").inner_text()


# ----------------------------------------------------------------------------------------------------------------
# One scenario per tab: what to click, how many plots must then hold data, which text must be on screen.


@dataclass
class Scenario:
    run: Callable  # (page) -> None: the tab's example, from the state the tab opens in
    plots: int  # visible plots with data afterwards
    texts: list[str] = field(default_factory=list)  # must appear in the visible page afterwards
    frame: Callable | None = None  # (page) -> Locator the screenshot must show; default: the first result plot
    opens_with_result: bool = False  # the tab draws its default result when opened, so plots are there before `run`


def _overview(page):
    open_tab(page, "Every model on your text")  # the ladder's sub-tab computes its default when opened
    page.wait_for_function(f"() => ({PLOTS_WITH_DATA_JS})() >= 2")  # (strip and totals) before the preset's click
    wait_idle(page)
    click_text(page, "A quote that closes far away")  # a preset: sets the text and scores it with every model


def _ngram(page):
    click_text(page, "Seed: P(词性 | 的) = 2/3 (MLE, word tokens)")  # a preset: sets every input and runs


def _embeddings(page):
    open_tab(page, "GloVe: neighbours & analogies")
    click_button(page, "Solve")  # king − man + woman


def _lstm(page):
    click_button(page, "Look inside")


def _attention(page):
    click_text(page, "Thinking Machines: 112, 96 → 0.8808")  # a preset: sets Q, K, V and computes


def _mlm(page):
    open_tab(page, "Input representation")
    click_button(page, "Show the input")


def _ner(page):
    click_button(page, "Tag entities")  # offline: the card naming the command that fetches the tagger
    page.get_by_text("hf download dslim/bert-base-NER").filter(visible=True).first.wait_for()
    open_tab(page, "Tokenisation & windows")


def _transformer(page):
    click_text(page, "it: what does the pronoun look at?")  # a preset: sets sentence, token and layer, and runs


def _qa(page):
    click_button(page, "Seed 001: what makes it fall?")  # offline: the input layout, and a note about the model


def _classify(page):
    click_button(page, "English twin (MRPC paraphrase)")  # offline: the pair layout, and how to get the model
    page.get_by_text("hf download").filter(visible=True).first.wait_for()
    open_tab(page, "Fine-tune MiniLM yourself")  # then fine-tune MiniLM offline (~20 s on 2 cores)
    click_button(page, "Train")


BLOCK = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' block ')][1]"  # the Gradio component around it

SCENARIOS: dict[str, Scenario] = {
    # Opens on the path (drawn when the app is built: tests/e2e/test_static_figures.py); its second sub-tab opens on
    # the first preset's strip and totals, and the preset swaps in another text.
    "overview": Scenario(_overview, plots=2, texts=["closing quote after"],
                         frame=lambda page: page.get_by_text("Surprisal of each character").locator(
                             "xpath=ancestor::div[contains(@class, 'js-plotly-plot')][1]")),
    # Seed §2.1: count(的, 词性) / count(的) = 2 / 3.
    "ngram": Scenario(_ngram, plots=1, texts=["2 / 3"]),
    # GloVe 6B 50d: king − man + woman ≈ queen.
    "embeddings": Scenario(_embeddings, plots=1, texts=["queen"]),
    "lstm": Scenario(_lstm, plots=3),
    # Seed §9: q1·k1 = 112, q1·k2 = 96.
    "attention": Scenario(_attention, plots=4, texts=["112", "96"], opens_with_result=True),
    # One token through MiniLM-L6's 6 layers; the summary names the followed token and the model's shapes.
    "transformer": Scenario(_transformer, plots=4, texts=["“it”", "d_k = 32"], opens_with_result=True),
    # Seed 001: "playing" is play ##ing in BERT's WordPiece vocabulary.
    "mlm": Scenario(_mlm, plots=4, texts=["##ing"]),
    "ner": Scenario(_ner, plots=0, texts=["hf download dslim/bert-base-NER", "berlin"],
                    frame=lambda page: page.get_by_text("berlin", exact=True).locator(BLOCK)),
    # Offline the layout view runs on MiniLM's tokenizer: [CLS] question [SEP] context [SEP].
    "qa": Scenario(_qa, plots=0, texts=["[CLS]", "[SEP]", "precipitation"],
                   frame=lambda page: page.locator(".textfield").filter(has_text="[SEP]")),
    # Offline: the pair layout says which checkpoint to fetch; fine-tuning MiniLM runs and reports accuracies.
    "classify": Scenario(_classify, plots=1, texts=["Done", "MiniLM frozen + head (a)"]),
}


# The screenshot starts at the tab bar (the app title is the same on every tab); if the result (by default the first
# plot with data) would be cut off there, it scrolls on until the result's bottom edge is in view.
FRAME_JS = """(target) => {
    window.scrollTo(0, document.querySelector('[role=tablist]').getBoundingClientRect().top + window.scrollY - 8);
    target = target || [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.offsetParent !== null)
        .find(el => (el.data || []).some(t => ['x', 'y', 'z'].some(k => t[k] && t[k].length > 0)));
    if (!target) return;
    const box = target.getBoundingClientRect();
    if (box.bottom > window.innerHeight) window.scrollBy(0, Math.min(box.bottom - window.innerHeight + 16, box.top));
}"""


@pytest.fixture(scope="module")
def page(browser, served_app):
    """One page for the module: each scenario works in its own tab, so none disturbs another, and the ~3 s of
    loading the app's page is paid once instead of per tab (the suite's time budget)."""
    from tests.e2e.conftest import fresh_page

    shared = fresh_page(browser, served_app.url)
    yield shared
    shared.close()


def slug(module) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def save_screenshot(page, name: str) -> Path:
    """A 1280×800 PNG, palette-quantised so it is small enough to commit (UI colours survive 256 levels)."""
    from PIL import Image

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    image = Image.open(io.BytesIO(page.screenshot(full_page=False))).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


@pytest.mark.parametrize("module", app.TABS, ids=slug)
def test_tab_runs_its_example_and_renders(page, module):
    """Every tab of app.TABS: its scenario (a seed example, and what it must show) or, for a tab without one, what
    it shows when opened, which must be full (tests/e2e/first_open.py's FULL_JS)."""
    from tests.e2e.first_open import FULL_JS

    scenario = SCENARIOS.get(slug(module)) or Scenario(lambda page: page.wait_for_function(FULL_JS), plots=0)
    open_tab(page, module.TITLE)
    if scenario.opens_with_result:
        # Let the default result land first: a preset clicked while it is still computing would be overwritten by it.
        page.wait_for_function(f"() => ({PLOTS_WITH_DATA_JS})() >= {scenario.plots}")
        wait_idle(page)

    scenario.run(page)
    # Wait for the result, or for an error toast (then fail at once, with the learner's message). The tab's default
    # content may already be there (issue #18), so wait for the count the scenario needs, not for one more.
    wanted = scenario.plots
    page.wait_for_function(f"""() => ({PLOTS_WITH_DATA_JS})() >= {wanted}
        || document.querySelector('[data-testid="toast-body"].error')""")
    assert not errors_shown(page), f"the UI showed an error: {errors_shown(page)}"
    for text in scenario.texts:  # fine-tuning MiniLM can take minutes on a loaded 2-core machine
        page.get_by_text(text).filter(visible=True).first.wait_for(timeout=240_000)
    wait_idle(page)

    assert not errors_shown(page), f"the UI showed an error: {errors_shown(page)}"
    assert plots_with_data(page) >= scenario.plots
    shown = visible_text(page)
    for text in scenario.texts:
        assert text in shown
    target = visible(scenario.frame(page)).element_handle() if scenario.frame else None
    page.evaluate(FRAME_JS, target)
    path = save_screenshot(page, slug(module))
    assert path.stat().st_size > 10_000


def test_plots_export_png_and_svg_at_slide_size(page):
    """The camera button's PNG settings reach the browser (1600×900 at 2×), and the SVG button downloads a vector
    figure of the same size (demo.kit.figure_head.HEAD, passed to launch(head=...) by app.py)."""
    open_tab(page, "Attention")
    _attention(page)
    page.wait_for_function(f"() => ({PLOTS_WITH_DATA_JS})() >= 4")
    options = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(el => el.offsetParent !== null && el._context).map(el => el._context.toImageButtonOptions)""")
    assert options and all(o.get("width") == 1600 and o.get("height") == 900 and o.get("scale") == 2
                           for o in options)

    assert page.evaluate("() => !!(window.Plotly && window.Plotly.__svgExport)"), \
        "the SVG export script is not loaded: app.py must pass head=figure_head.HEAD to launch()"
    plot = visible(page.locator(".js-plotly-plot"))
    plot.hover()  # plotly shows the modebar on hover
    with page.expect_download() as download:
        plot.locator('[data-title^="Download plot as SVG"]').click()
    svg = Path(download.value.path()).read_text(encoding="utf-8")
    assert download.value.suggested_filename.endswith(".svg")
    assert svg.startswith("<svg") and 'width="1600"' in svg and 'height="900"' in svg


def test_a_click_on_an_examples_row_puts_its_values_into_the_inputs(page):
    """The word2vec tab's example tables (demo.kit.i18n.examples_table: a gr.Dataset and a click event): a click on
    a row puts its values into the inputs, and no column is titled (a gr.I18n key would show there raw)."""
    open_tab(page, "Word embeddings")
    open_tab(page, "Train word2vec")
    # Opening the sub-tab fills its view, inputs included (presets.View): a row clicked before that lands would be
    # overwritten by the view's defaults. The view has landed when GloVe's neighbours table holds rows.
    glove = visible(page.locator(".block").filter(has_text="GloVe 6B 50d").filter(has=page.locator('[role="grid"]')))
    page.wait_for_function("(b) => Number(b.querySelector('[role=grid]').getAttribute('aria-rowcount')) > 1",
                           arg=glove.element_handle())
    table = visible(page.locator(".block").filter(has_text="Presets for Moby-Dick").filter(
        has=page.locator("table, .gallery")).last)
    assert table.locator("th").count() == 0 or not "".join(table.locator("th").all_inner_texts()).strip()
    table.get_by_text("CBOW", exact=True).click()
    epochs = visible(page.get_by_label("number input for Epochs"))
    page.wait_for_function("(box) => box.value === '8'", arg=epochs.element_handle())
    assert visible(page.get_by_role("radio", name="CBOW")).is_checked()
    assert visible(page.get_by_label("number input for Window (each side)")).input_value() == "4"
    words = visible(page.locator(".block").filter(has_text="Words to compare").filter(
        has=page.locator("table, .gallery")).last)
    words.get_by_text("harpoon", exact=True).click()
    word = visible(page.get_by_label("Word", exact=True))
    page.wait_for_function("(box) => box.value === 'harpoon'", arg=word.element_handle())
    assert not errors_shown(page)
