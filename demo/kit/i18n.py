"""The one place that holds the app's translations: English and 中文.

The tables live in assets/i18n/en.yaml and zh.yaml, nested for the translators and flattened here to dotted keys
("tabs.ngram"). Two ways to use them:

- Component labels, tab titles, buttons and info texts: ``label("tabs.ngram")`` returns a ``gr.I18n`` key; Gradio's
  front end translates it in the browser, from ``I18N`` passed to ``launch(i18n=...)``.
- Static Markdown (a tab's explanation) is ``gr.Markdown(label("<tab>.intro"))`` too.
- Result sentences, error messages and figure titles are made by handlers on the server: ``t("<tab>.result",
  n=3)``. Every event runs in the language of its request (demo.server.serving sets it, from
  core.text.i18n.language_of), so ``text`` needs no language argument inside a handler. Core raises
  ``UserInputError("ngram.empty_corpus", ...)`` with a key, rendered the same way.

A learner's language is the 中文/English toggle in the header when they have used it (a ``plm_lang`` cookie that the
toggle sets, so every request carries it; core.text.i18n.COOKIE), otherwise the browser's ``Accept-Language``. The
page tells Gradio's front end (which reads ``navigator.language``) the same choice (demo/server/first_page.PageWords).
"""
from __future__ import annotations

import html
from typing import Callable

import gradio as gr

from core.text.i18n import (COOKIE, DEFAULT_LANGUAGE, LANGUAGES, current_language, placeholders, table, text,
                            using_language)
from demo.kit.scripts import inline_json, script
from demo.server.gradio_inside import PerLanguage, is_translation

# The tables and text() live in core.text.i18n (gradio-free, so core's error messages use the same keys).
__all__ = ["LANGUAGES", "DEFAULT_LANGUAGE", "table", "placeholders", "text", "t", "current_language", "using_language",
           "label", "in_every_language", "PerLanguage", "BROWSER_LANGUAGE_JS", "I18N", "TOGGLE_JS",
           "NAVIGATOR_SCRIPT", "LABELLED", "toast_head"]

t = text  # the short name tab modules use (their inputs are often called ``text``): ``t("ngram.result", n=3)``


# Sections whose texts only the server renders, or sends once in <head> (demo/kit/your_turn.py): the "Your turn" checks'
# questions and explanations, and their page's words. Left out of Gradio's tables, which every page load carries.
SERVER_ONLY = ("checks.", "your_turn.")


def gradio_i18n() -> gr.I18n:
    """The tables for Gradio's front end. A browser in zh-CN or zh-TW opens Gradio in that locale, which looks each key
    up in zh-CN (or zh-TW), then zh (svelte-i18n's sub-locales), so one zh table serves them all: the page's config
    carried four copies of it before, 1.28 MB of its 2.19 MB, sent on every page load. Keys under SERVER_ONLY are
    not in it (``label`` refuses them)."""
    return gr.I18n(**{lang: {key: value for key, value in table(lang).items() if not key.startswith(SERVER_ONLY)}
                      for lang in ("en", "zh")})


I18N = gradio_i18n()  # passed to launch(i18n=...)


# Every key ``label`` has made: the only keys the browser is ever asked to translate, so the only ones each page's
# table carries (demo/server/first_page.OneLanguage). It is complete once the app is built: no handler makes a new
# label while serving (tests/test_i18n_views.py).
LABELLED: set[str] = set()
# Words of Gradio's own front end that its zh-CN table lacks (gradio 6.31: its footer's "Runs" link and the runs page,
# a table's filter menu and CSV drop errors, a queue position): the same keys in our tables fill them, since the
# page's translations and Gradio's are one svelte-i18n dictionary. Its editors, chat and audio are not in this app.
GRADIOS_OWN = ("common.runs", "common.runs_description", "common.back_to_app", "common.back_to_app_description",
               "common.download_all", "common.progress", "common.run", "dataframe.import_empty_file",
               "dataframe.import_no_column_names", "dataframe.import_ragged_row", "dataframe.import_static_columns",
               "dataframe.import_fixed_columns", "dataframe.import_fixed_rows", "dataframe.filter",
               "dataframe.clear_filter", "status.queue_position")
LABELLED.update(GRADIOS_OWN)
# Words of Gradio's front end that are no key of its translations: a toast's kind (its message's type, capitalised:
# "Error") and its close button's label. assets/toast_words.js puts them in on a 中文 page.
TOAST_WORDS = {"error": "common.toast_error", "warning": "common.toast_warning", "info": "common.toast_info",
               "success": "common.toast_success", "close": "common.toast_close"}


def toast_head() -> str:
    """The <head> script that shows Gradio's toasts' kind and close label in the page's language, with its words."""
    words = {lang: {kind: text(key, lang) for kind, key in TOAST_WORDS.items()} for lang in LANGUAGES}
    data = inline_json(words)
    return f"<script>window.plmToastWords = {data};\n{script('toast_words')}</script>"


def label(key: str):
    """A component label / tab title that the browser shows in the learner's language."""
    table(DEFAULT_LANGUAGE)[key]  # fail at build time, not in the browser, when a key is missing
    if key.startswith(SERVER_ONLY):
        raise KeyError(f"{key} is not in the browser's tables (SERVER_ONLY): render it with text()")
    LABELLED.add(key)
    return I18N(key)


def in_every_language(value, render: Callable[[str], str] = html.escape) -> PerLanguage:
    """``{language: HTML}`` for HTML the browser renders itself (demo/kit/presets.py's preset bar, demo/kit/lessons.py): a
    ``label(key)`` in each language, or a plain string (a checkpoint id, a formula) as it is; ``render`` turns the
    text into HTML (default: escaped). The browser picks its language with :data:`BROWSER_LANGUAGE_JS`; a page
    carries only its learner's (PerLanguage)."""
    if is_translation(value):
        return PerLanguage({lang: render(table(lang)[value.key]) for lang in LANGUAGES})
    return PerLanguage(dict.fromkeys(LANGUAGES, render(str(value or ""))))


# The language a page shows, as Gradio's front end picks it for its own labels (svelte-i18n reads
# navigator.language first; demo/server/first_page.PageWords sets it from the toggle's cookie), as a JS expression
# giving one of LANGUAGES. gr.I18n only translates component labels and values, not the HTML of a gr.HTML.
BROWSER_LANGUAGE_JS = "(/^zh/i.test(navigator.language || (navigator.languages || [])[0] || '') ? 'zh' : 'en')"


# The header toggle. Gradio's front end picks its language from navigator.language when it starts, before any <head>
# code of ours could run (Gradio injects that with the config). So the choice is made on the server: the toggle sets a
# cookie and reloads, and demo/server/first_page.PageWords puts a first script into the page that presents the
# server's choice (language_of: the cookie, else Accept-Language) as the browser's. The same cookie tells the
# handlers (language_of), so labels and results switch together, and the page carries only that language's table
# (demo/server/first_page.py).
TOGGLE_JS = ("(choice) => { const lang = choice === '中文' ? 'zh' : 'en'; "
             f"document.cookie = `{COOKIE}=${{lang}}; path=/; max-age=31536000; SameSite=Lax`; "
             "location.reload(); return choice; }")

NAVIGATOR_SCRIPT = ('<script>(() => {{ const lang = "{locale}"; '
                    'Object.defineProperty(navigator, "language", {{ get: () => lang, configurable: true }}); '
                    'Object.defineProperty(navigator, "languages", {{ get: () => [lang], configurable: true }}); '
                    '}})();</script>')  # demo/server/first_page.PageWords puts it first in the page's <head>


def examples_table(samples: list[list], inputs: list, label, api_name: str) -> gr.Dataset:
    """A table of example settings: a click puts its row into ``inputs``. Made of the public gr.Dataset and a click
    event, not gr.Examples: gr.Examples titles its columns with its inputs' labels, which Gradio's front end shows as
    raw gr.I18n keys; here the table's label names the columns and there are no headers. The click is no API
    endpoint (``api_name`` names it on purpose all the same)."""
    table = gr.Dataset(components=inputs, samples=samples, headers=[], label=label)

    def example_row(row: list):
        """The clicked row's values, one per input (the Dataset hands over the row the page's index names)."""
        return tuple(row) if len(inputs) > 1 else row[0]

    table.click(example_row, table, inputs, queue=False, show_progress="hidden", api_name=api_name,
                api_visibility="private")
    return table
