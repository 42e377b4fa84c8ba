"""Checks of the n-gram tab (seed §2.1): counted on the seed's toy corpus with core/ngram/ngram.py, as the tab does."""
from __future__ import annotations

from core.checks.base import Answer, Check, Say, Setup, own, shown
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.ngram.ngram import NgramModel, tokenize_sentences

TOY = "toy_zh"
MODEL = "bigram (n = 2)"
CONTEXT, WORDS = "的", ("词性", "磁性")


def bigram(own_text: str | None) -> NgramModel:
    """The tab's bigram model (words, no sentence boundaries) of the toy corpus or of the learner's own corpus."""
    return NgramModel(tokenize_sentences(own(own_text, load_corpus(TOY)), "word"), 2, False)


def corpus_setup(own_text: str | None, **settings) -> Setup:
    return Setup(own(own_text, load_corpus(TOY)), MODEL, shown(n=2, **settings), WORDS)


# -- which is likelier after 的 -----------------------------------------------------------------------------------

def cixing_answer(own_text):
    model = bigram(own_text)
    scores = tuple((w, model.prob(w, (CONTEXT,), "mle")) for w in WORDS)
    return Answer(max(scores, key=lambda s: s[1])[0], scores, MODEL)


# -- add-one on a pair never seen --------------------------------------------------------------------------------

def add_one_setup(own_text):
    return Setup(own(own_text, load_corpus(TOY)), MODEL, shown(n=2, smoothing=Say("add_one"),
                                                                              probability="P(磁性 | 的)"),
                 low=0.0, high=1.0)


def add_one_answer(own_text):
    p = bigram(own_text).prob(WORDS[1], (CONTEXT,), "add_k", 1.0)
    return Answer(p, (("P(磁性 | 的)", p),), MODEL)


# -- perplexity: which of two sentences scores lower -------------------------------------------------------------

PAIR = ("北京 的 词性 是 动词", "北京 的 磁性 是 动词")


def pair(own_text: str | None) -> tuple[str, str]:
    if own_text is None:
        return PAIR
    lines = [line.strip() for line in own(own_text, "").splitlines() if line.strip()]
    if len(lines) != 2 or lines[0] == lines[1]:
        raise UserInputError("checks.two_lines")
    return lines[0], lines[1]


def perplexity_setup(own_text):
    return Setup("\n".join(pair(own_text)), MODEL, shown(n=2, smoothing=Say("add_one")), pair(own_text))


def perplexity_answer(own_text):
    model = NgramModel(tokenize_sentences(load_corpus(TOY), "word"), 2, False)
    sentences = pair(own_text)
    tokens = [[t for line in tokenize_sentences(s, "word") for t in line] for s in sentences]  # as the tab does
    scores = model.score_batch(tokens, "add_k", 1.0)
    perplexities = tuple((s, score.perplexity) for s, score in zip(sentences, scores))
    return Answer(min(perplexities, key=lambda s: s[1])[0], perplexities, MODEL, higher_wins=False)


# -- with characters as tokens ----------------------------------------------------------------------------------

def char_setup(own_text):
    return Setup(own(own_text, load_corpus(TOY)), "bigram (n = 2)", shown(n=2, tokens=Say("characters"),
                                                                                 probability="P(词 | 的)"), low=0.0, high=1.0)


def char_answer(own_text):
    model = NgramModel(tokenize_sentences(own(own_text, load_corpus(TOY)), "char"), 2, False)
    p = model.prob("词", ("的",), "mle")
    return Answer(p, (("P(词 | 的)", p),), "bigram (n = 2)")


CHECKS = [
    Check("ngram-cixing", "ngram", "choice", "2.1", lambda own_text: corpus_setup(own_text, smoothing=Say("mle")),
          cixing_answer, own_hint="checks.own.corpus"),
    Check("ngram-add-one", "ngram", "number", "2.1", add_one_setup, add_one_answer, own_hint="checks.own.corpus",
          tolerance=0.05),
    Check("ngram-perplexity", "ngram", "choice", "2.1", perplexity_setup, perplexity_answer,
          own_hint="checks.own.two_sentences"),
    Check("ngram-char", "ngram", "number", "2.1", char_setup, char_answer, own_hint="checks.own.corpus",
          tolerance=0.05),
]
