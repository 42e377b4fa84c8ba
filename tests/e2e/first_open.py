"""What "content on first open" means in the browser, shared by the e2e test and benchmarks/bench_first_paint.py.

Every tab and sub-tab, opened by a click on its tab button and with no other click, must show its default preset's
result: each visible plot holds data and each visible table has rows. Offline, views whose model cannot be had
show the ModelUnavailableError note (it names `hf download <id>`) instead: those are listed in OFFLINE_NOTE.
"""
from __future__ import annotations

import functools
import json

VIEWPORT = {"width": 1440, "height": 900}

# (tab, sub-tab) whose predictions need a checkpoint the offline app cannot have: they show the "hf download" note;
# their other plots and tables (tokenisation, input layout) must still be full.
# ("Fill in the blank", "Both sides vs left only" and "GPT vs BERT" run on the char-GPT and char-BERT offline.)
OFFLINE_NOTE = {("BERT masked LM", "Next sentence"), ("NER", "BIO · IOBES · entities"),
                ("NER", "Per-token probabilities"), ("NER", "Aggregation on split words"), ("QA", ""),
                ("Classification & fine-tuning", "Classify with a fine-tuned checkpoint")}
# Views that compare a learner's own training run with what came before: before any run they show the "before"
# half (a plot with data) and, in place of the other, a figure that says to train first.
BEFORE_A_RUN = {("Classification & fine-tuning", "What fine-tuning changed")}

# Counts of visible plots / tables, and of those that are still empty. A plot is full when one trace has points;
# a table when it has a row below its header (aria-rowcount > 1). Figures and tables drawn when the app is built
# (demo/kit/static_html.py: an SVG whose marks carry data-mark, an HTML table) count as plots and tables. Views whose results are text (generation) count
# visible text areas holding more than 40 characters. A component with no value at all (a gr.Plot before its first
# figure) draws Gradio's "Empty value" box: those are counted in the view's own (innermost) tab.
# Gradio's loading status while an event is queued or running (its StatusTracker): the one definition of "busy"
BUSY = ".wrap.generating, .progress-text, .eta-bar"
CONTENT_JS = """() => {
  const shown = el => el.offsetParent !== null && el.getBoundingClientRect().width > 0;
  const plotly = [...document.querySelectorAll('.js-plotly-plot')].filter(shown);
  const drawn = [...document.querySelectorAll('.static-figure svg')].filter(shown);  // demo/kit/static_html.py
  const plots = [...plotly, ...drawn];
  const emptyPlots = [...plotly.filter(el => !(el.data || []).some(
      t => ['x', 'y', 'z', 'values'].some(k => t[k] && (t[k].length > 0 || t[k].bdata)))),  // bdata: typed arrays
    ...drawn.filter(el => !el.querySelector('[data-mark]'))];  // a drawn figure's marks (bars, points)
  const grids = [...document.querySelectorAll('[role="grid"].table-wrap')].filter(shown);
  const drawnTables = [...document.querySelectorAll('.static-table table')].filter(shown);
  const tables = [...grids, ...drawnTables];
  const emptyTables = [...grids.filter(el => Number(el.getAttribute('aria-rowcount') || 0) <= 1),  // header only
    ...drawnTables.filter(el => !el.querySelector('tbody tr'))];
  const texts = [...document.querySelectorAll('textarea')].filter(shown).filter(el => el.value.length > 40);
  const busy = !!document.querySelector(__BUSY__);
  const items = [...document.querySelectorAll('.tabitem')].filter(shown);
  const view = items.filter(el => !items.some(other => other !== el && el.contains(other)));
  const emptyBoxes = view.flatMap(el => [...el.querySelectorAll('[aria-label="Empty value"]')]).filter(shown);
  return {plots: plots.length, emptyPlots: emptyPlots.length, tables: tables.length,
          emptyTables: emptyTables.length, emptyBoxes: emptyBoxes.length, longTexts: texts.length, busy};
}""".replace("__BUSY__", json.dumps(BUSY))

FULL_JS = f"() => {{ const c = ({CONTENT_JS})(); return !c.busy && c.plots + c.tables + c.longTexts > 0 " \
          "&& c.emptyPlots === 0 && c.emptyBoxes === 0 " \
          "&& c.emptyTables === 0; }"
SOME_JS = f"() => {{ const c = ({CONTENT_JS})(); return !c.busy && c.plots - c.emptyPlots > 0; }}"  # BEFORE_A_RUN
IDLE_JS = f"() => !document.querySelector({json.dumps(BUSY)})"


def visible(locator):
    return locator.filter(visible=True).first


def open_tab(page, name: str) -> None:
    """Click a tab button; one that does not fit the bar sits in Gradio's "More tabs" menu, as a learner finds it."""
    tab = page.get_by_role("tab", name=name, exact=True).filter(visible=True)
    more = page.get_by_role("button", name="More tabs").filter(visible=True)
    tab.or_(more).first.wait_for()  # the tab bar has rendered (it can take seconds on a busy machine)
    if tab.count():
        tab.first.click()
        return
    more.last.click()  # the innermost visible tab bar's menu
    visible(page.locator(".overflow-dropdown").get_by_role("button", name=name, exact=True)).click()


@functools.cache
def subtabs() -> dict[str, list[str]]:
    """Top-level tab title -> its sub-tab titles in order ([] when it has none), in English, read from the app that
    app.py builds from app.TABS. Opening a trainer's sub-tab shows its untrained model (issue #31); a training run is
    never started by opening a tab (it takes up to two minutes)."""
    import gradio as gr

    import app
    from core.text import i18n

    def tabs_in(block) -> list:  # the nearest gr.Tab below block, not those inside them
        found = []
        for child in getattr(block, "children", None) or []:
            found += [child] if isinstance(child, gr.Tab) else tabs_in(child)
        return found

    def title(tab) -> str:
        return i18n.text(tab.label.key, "en")

    top = tabs_in(app.build_app())  # builds the layout only: no model, no network
    return {title(tab): [title(sub) for sub in tabs_in(tab)] for tab in top}


def views():
    """Every (tab, sub-tab) in the order a learner meets them; sub-tab "" is a tab without sub-tabs."""
    for tab, subs in subtabs().items():
        for sub in subs or [""]:
            yield tab, sub


def open_view(page, tab: str, sub: str) -> None:
    open_tab(page, tab)
    if sub:
        open_tab(page, sub)


def content(page) -> dict:
    return page.evaluate(CONTENT_JS)
