"""The "Your turn" checks (issue #51): the types, and grading a learner's prediction against the live model.

A check asks one question about what a tab shows. ``setup(own_text)`` is what the learner sees BEFORE answering
(the input, the model, the settings, the options); ``answer(own_text)`` runs the same core function the tab's view
runs, at click time: no answer is stored anywhere. ``grade`` checks the prediction's form first (so bad input gets
a message in the learner's language and the model never runs for it), then asks the model.

Four kinds of prediction:
- choice: one of ``Setup.options`` (a string);
- number: a float in [``Setup.low``, ``Setup.high``]; right within ``Check.tolerance`` (relative) of the answer;
- token: an index into ``Setup.options`` (the tokens of the input, clicked in the text);
- order: every option once, in the learner's order.

Texts: ``checks.<slug>.question`` and ``checks.<slug>.why`` in assets/i18n/{en,zh}.yaml; ``Check.own_hint`` is the
key that says what to type for "Try it on your own text"; ``Setup.option_labels`` holds keys for options that are
not words of the input (they need a translation); options that are words of the input are shown as they are.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Callable

from core.text import i18n
from core.text.errors import UserInputError, as_sent
from core.text.limits import MAX_SHORT_TEXT_CHARS

KINDS = ("choice", "number", "token", "order")
TABS = ("overview", "ngram", "embeddings", "lstm", "attention", "transformer", "mlm", "ner", "qa", "classify")
SLUG = re.compile(r"[a-z0-9-]+")
MAX_OWN_CHARS = MAX_SHORT_TEXT_CHARS  # "Try it on your own text": a sentence or a few lines


@dataclass(frozen=True)
class Setup:
    text: str                                  # the input shown (without the result)
    model: str                                 # checkpoint id or bundled model name shown to the learner
    settings: dict                             # settings shown (e.g. {"smoothing": "add-one"})
    options: tuple[str, ...] = ()              # choice: the options; order: the items; token: the tokens of `text`
    low: float | None = None                   # number: the allowed range
    high: float | None = None
    option_labels: tuple[str, ...] = ()        # i18n keys, one per option, when options need a translation


@dataclass(frozen=True)
class Answer:
    value: object                              # choice: the option; number: float; token: index; order: tuple
    scores: tuple[tuple[str, float], ...] = ()  # what the figure shows, one (option, score) per option
    model: str = ""                            # checkpoint id + revision or the bundled file
    missing: str | None = None                 # a checkpoint id not on this machine: value is None
    higher_wins: bool = True                   # whether the answer is the option with the highest score


@dataclass(frozen=True)
class Check:
    slug: str
    tab: str
    kind: str
    section: str
    setup: Callable[[str | None], Setup]
    answer: Callable[[str | None], Answer]
    own_text: bool = True
    own_hint: str = "checks.own.sentence"     # i18n key: what "your own text" should be for this check
    tolerance: float = 0.1                     # number: the relative error still counted right
    abs_tolerance: float = 0.0                 # number: or this absolute error (for answers near 0)

    def __post_init__(self):
        if not SLUG.fullmatch(self.slug) or self.tab not in TABS or self.kind not in KINDS:
            raise ValueError(f"bad check definition: {self.slug!r} ({self.tab}, {self.kind})")

    @property
    def question_key(self) -> str:
        return f"checks.{self.slug}.question"

    @property
    def why_key(self) -> str:
        return f"checks.{self.slug}.why"


@dataclass(frozen=True)
class Verdict:
    right: bool
    prediction: object
    answer: Answer
    detail: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------------------------
# The learner's input


class Say(str):
    """A setting's value in words: shown as ``checks.value.<it>`` in the learner's language (numbers, model and
    method names are shown as they are)."""


def shown(**pairs) -> dict:
    """Setup.settings in the current call's language: each name is ``checks.setting.<name>``, each ``Say`` value
    ``checks.value.<value>``."""
    return {i18n.text(f"checks.setting.{name}"): i18n.text(f"checks.value.{value}") if isinstance(value, Say) else value
            for name, value in pairs.items()}


def own(own_text: str | None, default: str) -> str:
    """The text a check runs on: ``default`` (the seed's example) or the learner's own, refused when empty or too
    long."""
    if own_text is None:
        return default
    if not isinstance(own_text, str) or not own_text.strip():
        raise UserInputError("checks.own_empty")
    if len(own_text) > MAX_OWN_CHARS:
        raise UserInputError("checks.own_too_long", chars=len(own_text), limit=MAX_OWN_CHARS)
    return own_text.strip()


def _number(prediction, setup: Setup) -> float:
    try:
        value = float(prediction)
    except (TypeError, ValueError):
        raise UserInputError("checks.not_a_number", value=as_sent(prediction)) from None
    if not math.isfinite(value) or (setup.low is not None and value < setup.low) or \
            (setup.high is not None and value > setup.high):
        raise UserInputError("checks.bad_number", value=as_sent(prediction),
                             low="−∞" if setup.low is None else _plain(setup.low),
                             high="∞" if setup.high is None else _plain(setup.high))
    return value


def _plain(x: float) -> str:
    """A bound as a learner reads it: 1,000,000,000 rather than 1e+09."""
    return f"{x:,.0f}" if x == int(x) and abs(x) >= 1000 else f"{x:g}"


def _choice(prediction, setup: Setup) -> str:
    if not isinstance(prediction, str) or prediction not in setup.options:
        raise UserInputError("checks.unknown_option", value=as_sent(prediction), choices=", ".join(setup.options))
    return prediction


def _token(prediction, setup: Setup) -> int:
    try:
        index = int(prediction)
    except (TypeError, ValueError):
        index = -1
    if isinstance(prediction, bool) or str(prediction).strip() != str(index) or not 0 <= index < len(setup.options):
        raise UserInputError("checks.bad_token", value=as_sent(prediction), count=len(setup.options))
    return index


def _order(prediction, setup: Setup) -> tuple[str, ...]:
    if isinstance(prediction, str):
        try:
            prediction = json.loads(prediction)
        except ValueError:
            prediction = None
    if not isinstance(prediction, (list, tuple)) or sorted(map(str, prediction)) != sorted(setup.options):
        raise UserInputError("checks.bad_order", choices=", ".join(setup.options))
    return tuple(map(str, prediction))


VALIDATE = {"choice": _choice, "number": _number, "token": _token, "order": _order}


def validate(check: Check, prediction, own_text: str | None = None) -> tuple[Setup, object]:
    """The check's setup and the prediction in its kind's form; UserInputError for anything the learner must fix."""
    if own_text is not None and not check.own_text:
        raise UserInputError("checks.no_own_text")
    setup = check.setup(own_text)
    return setup, VALIDATE[check.kind](prediction, setup)


# ----------------------------------------------------------------------------------------------------------------
# Grading


def missing(model_id: str) -> Answer:
    """The answer of a check whose checkpoint is not on this machine: no value, the id for the download card."""
    return Answer(None, model=model_id, missing=model_id)


def top_options(candidates: list[tuple[str, float]], count: int = 4) -> tuple[str, ...]:
    """Options built from a model's best candidates, sorted alphabetically so their order gives nothing away."""
    return tuple(sorted(dict.fromkeys(c for c, _ in candidates[:count])))


def rank_of(pick: str, answer: Answer) -> int | None:
    """Where the pick's score ranks among the figure's scores (1 = the answer's place); None without scores."""
    scores = dict(answer.scores)
    if pick not in scores:
        return None
    sign = 1 if answer.higher_wins else -1
    return 1 + sum(sign * s > sign * scores[pick] for s in scores.values())


def grade(check: Check, prediction, own_text: str | None = None) -> Verdict:
    """Validate the prediction, then run the model (``check.answer``) and compare. A check whose checkpoint is not
    on this machine has no options to validate against: its verdict carries the missing id (the download card)."""
    if own_text is not None and not check.own_text:
        raise UserInputError("checks.no_own_text")
    setup = check.setup(own_text)
    if check.kind in ("choice", "token", "order") and not setup.options:
        answer = check.answer(own_text)
        if answer.missing:
            return Verdict(False, prediction, answer, {"missing": answer.missing})
    setup, prediction = validate(check, prediction, own_text)
    return compare(check, setup, prediction, check.answer(own_text))


def compare(check: Check, setup: Setup, prediction, answer: Answer) -> Verdict:
    """The verdict on an already validated ``prediction`` against the model's ``answer`` (a class's reveal grades
    every student's prediction against one answer: core/classroom/tally.py)."""
    if answer.missing:
        return Verdict(False, prediction, answer, {"missing": answer.missing})
    if check.kind == "number":
        error = abs(prediction - answer.value)
        relative = error / abs(answer.value) if answer.value else (0.0 if error == 0 else math.inf)
        return Verdict(relative <= check.tolerance or error <= check.abs_tolerance, prediction, answer,
                       {"abs_error": error, "rel_error": relative, "tolerance": check.tolerance,
                        "abs_tolerance": check.abs_tolerance})
    if check.kind == "order":
        right = sum(a == b for a, b in zip(prediction, answer.value))
        return Verdict(right == len(answer.value), prediction, answer,
                       {"positions_right": right, "of": len(answer.value)})
    pick = setup.options[prediction] if check.kind == "token" else prediction
    rank = rank_of(pick, answer) if check.kind == "choice" else None
    if check.kind == "token" and answer.scores:
        sign = 1 if answer.higher_wins else -1
        scores = [s for _, s in answer.scores]
        rank = 1 + sum(sign * s > sign * scores[prediction] for s in scores)
    right = prediction == answer.value or rank == 1  # a tie with the answer's score is right too
    if rank is None:
        rank = 1 if right else 2 if len(setup.options) == 2 else None
    return Verdict(right, prediction, answer, {"rank": rank, "of": len(setup.options)})
