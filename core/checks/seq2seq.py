"""Checks of the Transformer tab's encoder–decoder (issue #52, seed §10.4 and §11.2), on the model trained here
(core/seq2seq/seq2seq.py through core/seq2seq/view.py, the functions its view runs): the first English word the decoder
writes, and the source word its cross-attention weighs most when it writes its last word. Both are answered by the
live model when the learner presses Check."""
from __future__ import annotations

from core.loading.checkpoints import SEQ2SEQ_HERE_ID
from core.checks.base import Answer, Check, Say, Setup, own, shown, top_options
from core.loading.lazy import lazy_import

view = lazy_import("core.seq2seq.view")

FIRST_TEXT = "机器学习"
CROSS_TEXT = "je suis étudiant"


# -- the first word the decoder writes (§10.4: Linear + softmax over the English vocabulary) ---------------------

def first_candidates(own_text):
    step = view.decode(SEQ2SEQ_HERE_ID, own(own_text, FIRST_TEXT)).steps[0]
    return [(word, p) for word, p in step.top if word != "</s>"]  # most probable first


def first_setup(own_text):
    return Setup(own(own_text, FIRST_TEXT), SEQ2SEQ_HERE_ID, shown(temperature=0, shown=Say("top_4")),
                 top_options(first_candidates(own_text)))


def first_answer(own_text):
    found = first_candidates(own_text)
    options = top_options(found)
    return Answer(found[0][0], tuple((w, p) for w, p in found if w in options), SEQ2SEQ_HERE_ID)


# -- which source word the last word's cross-attention weighs most (§11.2) ---------------------------------------

def cross_row(own_text):
    """The source tokens, and the last decoder layer's cross-attention (mean of its heads) of the query that writes
    the last word before </s>."""
    translation = view.decode(SEQ2SEQ_HERE_ID, own(own_text, CROSS_TEXT))
    last = translation.steps[max(len(translation.steps) - 2, 0)]  # the step that writes the last word
    return translation.source, last.cross_attention[-1].mean(0)[-1]


def cross_setup(own_text):
    source, _ = cross_row(own_text)
    return Setup(own(own_text, CROSS_TEXT), SEQ2SEQ_HERE_ID, shown(layer=2, heads=Say("heads_mean")), tuple(source))


def cross_answer(own_text):
    source, row = cross_row(own_text)
    return Answer(int(row.argmax()), tuple(zip(source, map(float, row))), SEQ2SEQ_HERE_ID)


CHECKS = [
    Check("seq2seq-first-word", "transformer", "choice", "10.4", first_setup, first_answer,
          own_hint="checks.own.seq2seq_source"),
    Check("seq2seq-cross-source", "transformer", "token", "11.2", cross_setup, cross_answer,
          own_hint="checks.own.seq2seq_source"),
]
