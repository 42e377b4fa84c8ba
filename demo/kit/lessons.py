""""Try this" lessons (issue #18): three or more questions per tab, each naming the seed § it comes from, with a button
that runs a preset of one of the tab's views (demo/kit/presets.py) and an answer revealed on demand.

    lessons.lesson_table(LESSON, views)     # in a tab's build(): rows (§, question, answer[, view key], preset slug)

A lesson is ONE ``gr.HTML`` and ONE event (``<tab>_lesson``, whose input is the step's number), not an accordion
holding a row, Markdown, a button and an answer accordion per step: Gradio's front end pays for every component and
event when the page opens (see demo/kit/presets.py). Questions and answers are Markdown in the translation tables; they
are rendered to HTML here, in every language (markdown-it, raw HTML off), and the browser shows its own language.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import gradio as gr
from core.text.errors import UserInputError
from demo.server.handlers import friendly_errors
from demo.kit.i18n import BROWSER_LANGUAGE_JS, in_every_language, label
from demo.kit.presets import View, unique
from demo.kit.scripts import script
from demo.kit.static_html import markdown_inline

# The box (assets/lesson_template.js), rendered by the browser from its props in its language, and its script
# (assets/lesson.js): a "Show me" click sends its step's number.
TEMPLATE = script("lesson_template", LANGUAGE=BROWSER_LANGUAGE_JS)
JS = script("lesson")

@dataclass(frozen=True)
class Step:
    """One step: the seed § it comes from, a question, the answer revealed on demand (each a ``label(key)`` or a
    plain string, in Markdown), and the preset of ``view`` that shows it."""
    section: str
    question: object
    answer: object
    view: View
    slug: str


def lesson_table(rows: Sequence[tuple], views: "View | dict[str, View]") -> gr.HTML:
    """:func:`lesson` from a tab's LESSON table: rows (section, question, answer, slug) for a tab with one view, or
    (section, question, answer, view key, slug) with ``views`` a dict of the tab's views by key."""
    if isinstance(views, dict):
        return lesson([Step(section, question, answer, views[key], slug)
                       for section, question, answer, key, slug in rows])
    return lesson([Step(section, question, answer, views, slug) for section, question, answer, slug in rows])


def lesson(steps: Sequence[Step]) -> gr.HTML:
    """The "Try this" box: a closed <details> whose steps each run their preset, switching to its sub-tab."""
    for step in steps:
        step.view.runnable(step.slug)  # a lesson pointing at no preset fails when the app is built
    box = gr.HTML("", html_template=TEMPLATE, js_on_load=JS, elem_classes=["lesson-box"],
                  steps=[{"number": number, "section": step.section,
                          "question": in_every_language(step.question, render=markdown_inline),
                          "answer": in_every_language(step.answer, render=markdown_inline)}
                         for number, step in enumerate(steps, 1)],
                  title=in_every_language(label("presets.lesson_title")),
                  show=in_every_language(label("presets.show_me")),
                  answer=in_every_language(label("presets.answer")))
    box.lesson_steps = list(steps)  # for tests and tools: what each "Show me" runs

    @friendly_errors
    def run_step(number: str, request: gr.Request = None):
        chosen = str(number).strip()
        if not chosen.isdigit() or not 1 <= int(chosen) <= len(steps):
            raise UserInputError("presets.unknown_step", number=chosen[:20], count=len(steps))
        step = steps[int(chosen) - 1]
        return step.view.run_asked(step.slug, select=True, request=request)

    # Each view's events show progress on its first result only (View.progress_on says why); so does this one.
    views = unique(step.view for step in steps)
    box.click(run_step, box, unique(c for view in views for c in view.components()),
              show_progress_on=[view.progress_on for view in views], api_name=f"{steps[0].view.tab}_lesson")
    return box
