""""Your turn" (issue #51): in every tab, checks where the learner predicts and the live model answers.

The checks themselves are data in core/checks/ (setup, kind, the core call that answers, how to compare); this
module shows them and grades them. Three API endpoints carry everything, for gradio_client and for the browser
alike (the page's script calls them through Gradio's own REST route, ``/gradio_api/call/<name>``, the route
gradio_client uses):

- ``checks_list(lang)``: every check (slug, tab, kind, §, the question in ``lang`` or the caller's language);
- ``check_setup(slug, own_text)``: what the learner sees before answering (the input, the model, the settings, the
  options or the range), on the example or on their own text;
- ``check_answer(slug, prediction, own_text)``: runs the check's core function now (nothing is stored as the
  answer) and returns the verdict, the model's answer, how far off the prediction was or where it ranked, the figure
  with the prediction marked, and why, citing the seed §. A checkpoint not on this machine gives the same download
  card the tab's view shows, never an answer.

In the page each tab gets ONE gr.HTML (:func:`build`): a folded "Your turn" block that assets/your_turn.js fills
when it is opened; so the first page grows by a summary line per tab, not by a form per check (Gradio's front end
pays for every component and event when the page loads). The script has an address of its own (:data:`ROUTE`,
fetched once and cached); <head> carries only the words and a small loader (:func:`head`). The Overview's block
starts with the learner's map: each chapter's checks, tried and right, read from the browser's localStorage (nothing
about the learner is sent to the server), with a reset button. ``?check=<slug>`` opens one check in its tab. Words: the
``your_turn`` section of assets/i18n (the page's), ``checks`` (core's: questions, whys, errors).
"""
from __future__ import annotations

import contextlib
import math
import re
from typing import Any

import gradio as gr

from core import checks as registry
from core.checks.base import TABS, Answer, Check, Setup, grade
from core.loading.paths import ASSETS_DIR
from core.text.i18n import LANGUAGES, current_language, text, using_language
from demo.server import downloads
from demo.kit import static_html
from demo.kit.scripts import Served, compact, inline_json
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import sig4_text

LOADER = ASSETS_DIR / "your_turn_loader.js"
STORAGE_KEY = "plm-checks"  # localStorage: {slug: {"tried": true, "right": bool}}
# The page's words, sent once in <head> for both languages (the block is drawn by the browser).
WORDS = ["title", "count", "open_hint", "input", "model", "settings", "prediction", "check", "checking",
         "own_title", "own_use", "own_back", "own_on", "loading", "failed", "right", "wrong", "why", "map_title",
         "map_intro", "map_tried", "map_reset", "map_cleared", "map_open", "dot_right", "dot_wrong", "dot_untried",
         "move_up", "move_down", "order_hint", "token_hint", "number_hint"]


def tab_name(tab: str, lang: str) -> str:
    return text(f"tabs.{tab}", lang)


# ----------------------------------------------------------------------------------------------------------------
# What the endpoints return (plain JSON: gradio_client and the page read the same dicts)


def _shown_option(setup: Setup, index: int) -> str:
    """Option ``index`` as the learner reads it: its translation when the check gives one, else the word itself."""
    if setup.option_labels and index < len(setup.option_labels) and setup.option_labels[index]:
        return text(setup.option_labels[index])
    return str(setup.options[index])


def _number(value) -> str:
    return sig4_text(float(value)) if isinstance(value, (int, float)) else str(value)


def describe(check: Check) -> dict:
    return {"slug": check.slug, "tab": check.tab, "kind": check.kind, "section": f"§{check.section}",
            "question": text(check.question_key)}


def setup_of(check: Check, own_text: str | None) -> dict:
    setup = check.setup(own_text)
    return {**describe(check), "text": setup.text, "model": setup.model,
            "settings": {str(k): str(v) for k, v in setup.settings.items()},
            "options": [str(o) for o in setup.options],
            "shown": [_shown_option(setup, i) for i in range(len(setup.options))],
            "low": setup.low, "high": setup.high, "own_text": check.own_text, "own_hint": text(check.own_hint),
            "on_own_text": own_text is not None}


def _answer_text(check: Check, setup: Setup, value) -> str:
    if check.kind == "number":
        return _number(value)
    if check.kind == "token":
        return setup.options[int(value)]
    if check.kind == "order":
        return " → ".join(_shown_option(setup, setup.options.index(v)) for v in value)
    return _shown_option(setup, setup.options.index(value)) if value in setup.options else str(value)


def _sentence(check: Check, setup: Setup, verdict) -> str:
    """What the learner reads under their prediction: the model's answer beside it, and how far off it was."""
    detail, answer = verdict.detail, verdict.answer
    said, model = _answer_text(check, setup, verdict.prediction), _answer_text(check, setup, answer.value)
    if check.kind == "number":
        return text("your_turn.verdict_number", said=said, model=model, off=_number(detail["abs_error"]),
                    percent=_number(100 * detail["rel_error"]) if math.isfinite(detail["rel_error"]) else "∞",
                    tolerance=_number(100 * detail["tolerance"]))
    if check.kind == "order":
        return text("your_turn.verdict_order", said=said, model=model, right=detail["positions_right"],
                    of=detail["of"])
    rank = detail.get("rank")
    if rank is None:
        return text("your_turn.verdict_pick", said=said, model=model)
    return text("your_turn.verdict_rank", said=said, model=model, rank=rank, of=detail["of"])


def _figure(check: Check, setup: Setup, verdict, lang: str) -> str:
    """The answer's scores as a bar chart (demo/kit/static_html.py's theme), the model's answer highlighted and marked ✓,
    the learner's pick marked ◆ in its label: nothing told by colour alone. "" when there is nothing to draw."""
    answer: Answer = verdict.answer
    title = text("your_turn.figure_title", lang)
    if check.kind == "number":
        labels = [text("your_turn.bar_yours", lang), text("your_turn.bar_model", lang)]
        values, marks = [float(verdict.prediction), float(answer.value)], [False, True]
    elif check.kind == "order":
        shown = [_shown_option(setup, i) for i in range(len(setup.options))]
        pairs = enumerate(zip(verdict.prediction, answer.value), 1)
        rows = [(place, shown[setup.options.index(mine)], shown[setup.options.index(true)],
                 "✓" if mine == true else "✗") for place, (mine, true) in pairs]
        headers = [text(f"your_turn.order_{key}", lang) for key in ("place", "yours", "model", "same")]
        return without_export(static_html.table(headers, rows, f"check-{check.slug}", lang))
    elif answer.scores:
        pick = setup.options[verdict.prediction] if check.kind == "token" else verdict.prediction
        true = setup.options[answer.value] if check.kind == "token" else answer.value
        names = [str(name) for name, _ in answer.scores]
        labels = [(_shown_option(setup, setup.options.index(name)) if name in setup.options else name)
                  + (" ✓" if name == true else "") + (" ◆" if name == pick else "") for name in names]
        values, marks = [float(score) for _, score in answer.scores], [name == true for name in names]
    else:
        return ""
    if not values or min(values) < 0 or not all(math.isfinite(v) for v in values) or max(values) <= 0:
        rows = [(name, _number(value)) for name, value in zip(labels, values)]
        headers = [text("your_turn.figure_item", lang), text("your_turn.figure_score", lang)]
        return without_export(static_html.table(headers, rows, f"check-{check.slug}", lang))
    figure = static_html.bars(labels, values, title, f"check-{check.slug}", lang, highlight=marks,
                              value_title=text("your_turn.figure_legend", lang), value_format=".4g")
    return without_export(figure)


def without_export(figure: str) -> str:
    """A drawn figure or table without its PNG / SVG / CSV buttons (their script belongs to the tabs' figures)."""
    return re.sub(r'<button type="button" class="static-export[^>]*>.*?</button>', "", figure, flags=re.S)


def result_of(check: Check, prediction, own_text: str | None, lang: str) -> dict:
    verdict = grade(check, prediction, own_text)
    setup = check.setup(own_text)
    out = {"slug": check.slug, "tab": check.tab, "kind": check.kind, "section": f"§{check.section}",
           "prediction": verdict.prediction if not isinstance(verdict.prediction, tuple) else list(verdict.prediction),
           "model": verdict.answer.model, "own_text": own_text}
    if verdict.answer.missing:
        card = downloads.missing_model_card(verdict.answer.missing, "your_turn.card_shows")
        return {**out, "right": None, "missing": verdict.answer.missing, "card": static_html.markdown(card),
                "answer": None, "answer_text": "", "verdict": "", "detail": {}, "explanation": "", "figure": ""}
    value = verdict.answer.value
    return {**out, "right": bool(verdict.right), "missing": None, "card": "",
            "answer": list(value) if isinstance(value, tuple) else value,
            "answer_text": _answer_text(check, setup, value),
            "verdict": _sentence(check, setup, verdict),
            "detail": {k: (v if not isinstance(v, float) or math.isfinite(v) else None)
                       for k, v in verdict.detail.items()},
            "explanation": text(check.why_key), "figure": _figure(check, setup, verdict, lang)}


def _own(own_text) -> str | None:
    """None (the check's example) or the learner's text as they typed it (core refuses an empty or long one)."""
    return None if own_text is None else str(own_text)


# ----------------------------------------------------------------------------------------------------------------
# The endpoints (gr.api: no component, no event in the page; app.build_app registers them once)


@friendly_errors
def checks_list(lang: str = "", request: gr.Request = None) -> list[dict]:
    """Every check, in tab order: slug, tab, kind, section and the question in ``lang`` ("en", "zh"; "" = yours)."""
    with using_language(lang) if lang in LANGUAGES else contextlib.nullcontext():
        return [describe(check) for check in registry.CHECKS.values()]


@friendly_errors
@gpu_handler
def check_setup(slug: str, own_text: str | None = None, request: gr.Request = None) -> dict:
    """What check ``slug`` shows before the learner answers, on its example (``own_text`` None) or on their text."""
    return setup_of(registry.get(slug), _own(own_text))


@friendly_errors
@gpu_handler
def check_answer(slug: str, prediction: Any = None, own_text: str | None = None,
                 request: gr.Request = None) -> dict:
    """Grade ``prediction`` for check ``slug`` against the live model (on ``own_text`` when given): the verdict,
    the model's answer and the explanation. The prediction: an option (choice), a number, a token's index (token)
    or every item in order (order)."""
    return result_of(registry.get(slug), prediction, _own(own_text), current_language())


def register_api() -> None:
    """The three endpoints, inside the app's gr.Blocks (they appear in its API page, not in its layout)."""
    gr.api(checks_list, api_name="checks_list")
    # the page's own step before a check (API clients may call it; its docs would weigh on every page load)
    gr.api(check_setup, api_name="check_setup", concurrency_id="checks", api_visibility="undocumented")
    gr.api(check_answer, api_name="check_answer", concurrency_id="checks")


# ----------------------------------------------------------------------------------------------------------------
# The page


def _words() -> dict:
    return {lang: {key: text(f"your_turn.{key}", lang) for key in WORDS} for lang in LANGUAGES}


def head() -> str:
    """What every page carries in <head> (app.py adds it to launch(head=...)): the words, where each check lives,
    the small loader (assets/your_turn_loader.js: it queues the blocks' calls and turns a ``?check=`` link into its
    tab's before the page reads the address) and a link to the script itself (:data:`ROUTE`), which the browser
    fetches once and caches: inside the config, the page would carry it on every load, escaped."""
    config = {"words": _words(), "key": STORAGE_KEY,
              "checks": {tab: [c.slug for c in registry.checks_for(tab)] for tab in TABS},
              "tabs": {tab: {lang: tab_name(tab, lang) for lang in LANGUAGES} for tab in TABS}}
    data = inline_json(config)
    return (f"<script>window.plmYourTurnConfig = {data};\n{compact(LOADER)}</script>"
            + SCRIPT.tag())


SCRIPT = Served("your_turn", "/your_turn.js")
ROUTE = SCRIPT.route  # app.py: launch(app_kwargs={"routes": [ROUTE]})


# The block as first painted: one folded line, its words written by the script (from <head>, both languages), which
# fills the block when it is opened (or a ?check= link opens it).
TEMPLATE = ('<details class="your-turn" data-tab="${tab}"><summary class="yt-summary"></summary>'
            '<div class="yt-list"></div></details>')
MOUNT_JS = "window.plmYourTurn && window.plmYourTurn.mount(element, props.tab);"
# The Overview's block starts with the learner's map (the script draws it from localStorage).
MAP = '<section class="yt-map"><h2 class="yt-map-title"></h2><div class="yt-map-body"></div></section>'


def build(tab: str) -> gr.HTML | None:
    """The tab's "Your turn" block (none for a tab without checks); the Overview's holds the learner's map too."""
    if not registry.checks_for(tab) and tab != "overview":
        return None
    template = (MAP if tab == "overview" else "") + (TEMPLATE if registry.checks_for(tab) else "")
    return gr.HTML("", html_template=template, js_on_load=MOUNT_JS, elem_classes=["your-turn-box"], tab=tab)
