"""Checks of the Word embeddings tab (seed §3–§4): GloVe 6B 50d through core/embeddings/embeddings.py, as the tab queries it."""
from __future__ import annotations

from core.checks.base import Answer, Check, Say, Setup, own, shown
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import

embeddings = lazy_import("core.embeddings.embeddings")

WORD, ANALOGY, RANKS = "frog", "king man woman", (1, 4, 12, 40)
ORDER = "king queen prince castle banana"


def glove():
    return embeddings.load_glove()


def words(own_text: str | None, default: str, count: int) -> list[str]:
    found = own(own_text, default).lower().split()
    if len(found) != count or len(set(found)) != count:
        raise UserInputError("checks.word_count", count=count)
    for word in found:
        glove().key(word)  # an unknown word: the tab's own message, with close spellings
    return found


def ranked_options(neighbours) -> tuple[str, ...]:
    """The 1st, 4th, 12th and 40th nearest words, alphabetically: the learner must find the nearest."""
    return tuple(sorted(neighbours[r - 1].word for r in RANKS))


def scored(wv, target, options) -> tuple[tuple[str, float], ...]:
    return tuple((word, float(wv.unit[wv.key(word)] @ target)) for word in options)


# -- nearest neighbour -------------------------------------------------------------------------------------------

def neighbours(own_text):
    (word,) = words(own_text, WORD, 1)
    return word, glove().most_similar([word], topn=RANKS[-1])


def neighbour_setup(own_text):
    word, found = neighbours(own_text)
    return Setup(word, embeddings.GLOVE_NAME, shown(similarity=Say("cosine")), ranked_options(found))


def neighbour_answer(own_text):
    word, found = neighbours(own_text)
    wv = glove()
    options = ranked_options(found)
    return Answer(found[0].word, scored(wv, wv.unit[wv.key(word)], options), embeddings.GLOVE_NAME)


# -- analogy: a − b + c ------------------------------------------------------------------------------------------

def analogy(own_text):
    a, b, c = words(own_text, ANALOGY, 3)
    return (a, b, c), glove().most_similar([a, c], [b], topn=RANKS[-1])


def analogy_setup(own_text):
    (a, b, c), found = analogy(own_text)
    return Setup(f"{a} − {b} + {c} = ?", embeddings.GLOVE_NAME, shown(similarity=Say("cosine"),
                                                                                       query_words=Say("excluded")),
                 ranked_options(found))


def analogy_answer(own_text):
    (a, b, c), found = analogy(own_text)
    wv = glove()
    target = (wv.unit[wv.key(a)] - wv.unit[wv.key(b)] + wv.unit[wv.key(c)]) / 3
    target = target / ((target @ target) ** 0.5)  # the query most_similar scores against
    return Answer(found[0].word, scored(wv, target, ranked_options(found)), embeddings.GLOVE_NAME)


# -- order four words by their similarity to a fifth -------------------------------------------------------------

def order_setup(own_text):
    first, *rest = words(own_text, ORDER, 5)
    return Setup(first, embeddings.GLOVE_NAME, shown(similarity=Say("cosine")), tuple(rest))


def order_answer(own_text):
    first, *rest = words(own_text, ORDER, 5)
    wv = glove()
    scores = tuple((word, wv.similarity(first, word)) for word in rest)
    return Answer(tuple(w for w, _ in sorted(scores, key=lambda s: -s[1])), scores, embeddings.GLOVE_NAME)


CHECKS = [
    Check("embeddings-neighbour", "embeddings", "choice", "4", neighbour_setup, neighbour_answer,
          own_hint="checks.own.word"),
    Check("embeddings-analogy", "embeddings", "choice", "4", analogy_setup, analogy_answer,
          own_hint="checks.own.analogy"),
    Check("embeddings-order", "embeddings", "order", "3", order_setup, order_answer, own_hint="checks.own.five_words"),
]
