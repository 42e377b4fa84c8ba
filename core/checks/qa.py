"""Checks of the QA tab (seed §14): distilbert-base-cased-distilled-squad through core/tasks/qa.py (the best span) and the
tab's Why view (core/why_encoders.explain_span). The checkpoint comes from the Hub: offline these checks show the
download card."""
from __future__ import annotations

import re

from core.checks.base import Answer, Check, Say, Setup, missing, own, shown
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import

qa = lazy_import("core.tasks.qa")
registry = lazy_import("core.loading.registry")
why_encoders = lazy_import("core.why.encoders")

MODEL_ID = "distilbert-base-cased-distilled-squad"
QUESTION = "Who was the captain of the Pequod?"
CONTEXT = ("The Pequod sailed from Nantucket on a cold Christmas day. Its captain, a grim old man called Ahab, had "
           "lost his leg to the white whale.")
WORD = re.compile(r"\S+")


def question_context(own_text: str | None) -> tuple[str, str]:
    """The question (the first line of the learner's text) and the context (the rest)."""
    if own_text is None:
        return QUESTION, CONTEXT
    question, _, context = own(own_text, "").partition("\n")
    if not question.strip() or not context.strip():
        raise UserInputError("checks.question_and_context")
    return question.strip(), context.strip()


def words(context: str) -> list[re.Match]:
    return list(WORD.finditer(context))


def word_at(spans: list[re.Match], char: int) -> int:
    """The word holding character ``char`` (or the first word after it, for a span that starts on a space)."""
    return next((i for i, m in enumerate(spans) if char < m.end()), len(spans) - 1)


def span_setup(own_text):
    question, context = question_context(own_text)
    return Setup(context, MODEL_ID, shown(question=question), tuple(m.group() for m in words(context)))


def span_answer(end: bool):
    def answer(own_text):
        question, context = question_context(own_text)
        try:
            best = qa.answer(question, context, MODEL_ID).best
        except ModelUnavailableError:
            return missing(MODEL_ID)
        spans = words(context)
        index = word_at(spans, best.end - 1 if end else best.start)
        return Answer(index, ((best.text, float(best.score)),), MODEL_ID)
    return answer


# -- Why: which input token integrated gradients credits most for the span's start -------------------------------

def why_tokens(own_text: str | None):
    question, context = question_context(own_text)
    try:
        loaded = registry.load("qa", MODEL_ID)
    except ModelUnavailableError:
        return None
    return loaded, question, context


def why_setup(own_text):
    question, context = question_context(own_text)
    found = why_tokens(own_text)
    tokens = () if found is None else tuple(qa.answer(question, context, MODEL_ID).windows[0].tokens)
    return Setup(f"{question}\n{context}", MODEL_ID, shown(explained=Say("span_start"),
                                                                method=Say("integrated_gradients")),
                 tokens)


def why_answer(own_text):
    question, context = question_context(own_text)
    if why_tokens(own_text) is None:
        return missing(MODEL_ID)
    found = why_encoders.explain_span(question, context, MODEL_ID)
    signed = found.start.attributions[0].signed
    return Answer(max(range(len(signed)), key=signed.__getitem__), tuple(zip(found.start.tokens, signed)), MODEL_ID)


CHECKS = [
    Check("qa-start", "qa", "token", "14", span_setup, span_answer(False), own_hint="checks.own.question_context"),
    Check("qa-end", "qa", "token", "14", span_setup, span_answer(True), own_hint="checks.own.question_context"),
    Check("qa-why", "qa", "token", "14", why_setup, why_answer, own_hint="checks.own.question_context"),
]
