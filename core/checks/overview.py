"""Checks of the Overview tab: the ladder (core/ladder/ladder.py), one text through the character models the app ships,
scored in bits per character, as the Overview's ladder view shows it."""
from __future__ import annotations

from core.checks.base import Answer, Check, Say, Setup, own, shown
from core.loading.lazy import lazy_import

ladder = lazy_import("core.ladder.ladder")

TEXT = "The whale rose slowly from the deep, and the men in the boats held their breath."
BEST = ("ngram-1-add_k", "ngram-3-add_k", "rnn", "lstm", "gpt")  # rung keys, bottom to top
ORDER = ("ngram-2-add_k", "rnn", "lstm", "gpt")
LABELS = {key: f"checks.rung.{key}" for key in (*BEST, *ORDER)}
MODEL = "n-gram · RNN · LSTM · char-GPT (Moby-Dick)"


def bits_per_char(own_text: str | None, keys: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """Each named rung's bits/char on the text: the ladder's own scores, in the order of ``keys``."""
    chosen = tuple(rung for key in keys for rung in ladder.rungs() if rung.key == key)
    scored = ladder.score_text(own(own_text, TEXT), chosen)
    return tuple((s.rung.key, s.bits_per_char) for s in scored.scores)


def text_shown(own_text: str | None) -> str:
    return ladder.prepare(own(own_text, TEXT))  # refuses a text too short or too long before the learner commits


def best_setup(own_text):
    return Setup(text_shown(own_text), MODEL, shown(score=Say("bits_per_char")), BEST,
                 option_labels=tuple(LABELS[k] for k in BEST))


def best_answer(own_text):
    scores = bits_per_char(own_text, BEST)
    return Answer(min(scores, key=lambda s: s[1])[0], scores, MODEL, higher_wins=False)


def order_setup(own_text):
    return Setup(text_shown(own_text), MODEL, shown(score=Say("bits_per_char"), order=Say("lowest_first")), ORDER,
                 option_labels=tuple(LABELS[k] for k in ORDER))


def order_answer(own_text):
    scores = bits_per_char(own_text, ORDER)
    return Answer(tuple(k for k, _ in sorted(scores, key=lambda s: s[1])), scores, MODEL, higher_wins=False)


def bits_setup(own_text):
    return Setup(text_shown(own_text), "char-gpt", shown(score=Say("bits_per_char")), low=0.0, high=10.0)


def bits_answer(own_text):
    (score,) = bits_per_char(own_text, ("gpt",))
    return Answer(score[1], (score,), "char-gpt")


CHECKS = [
    Check("overview-ladder-best", "overview", "choice", "2.1–12", best_setup, best_answer,
          own_hint="checks.own.english_text"),
    Check("overview-ladder-order", "overview", "order", "2.1–12", order_setup, order_answer,
          own_hint="checks.own.english_text"),
    Check("overview-gpt-bits", "overview", "number", "12", bits_setup, bits_answer,
          own_hint="checks.own.english_text", tolerance=0.15),
]
