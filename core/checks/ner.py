"""Checks of the NER tab (seed §14): dslim/bert-base-NER through core/tasks/ner.py (tags per word under the "first"
strategy, BIO as the model writes it and IOBES converted by ner.bio_to_iobes), as the tab shows them. The checkpoint
is downloaded from the Hub: offline these checks show the download card."""
from __future__ import annotations

import re

from core.checks.base import Answer, Check, Say, Setup, missing, own, shown
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_MODEL_TOKENS

ner = lazy_import("core.tasks.ner")
registry = lazy_import("core.loading.registry")
why_encoders = lazy_import("core.why.encoders")

MODEL_ID = "dslim/bert-base-NER"
TEXT = "Captain [Ahab] sailed the Pequod out of Nantucket with Starbuck and Queequeg."
STRATEGY = "first"  # one tag per word, the word's first token's (the tab's default table)
TYPES = ("PER", "ORG", "LOC", "MISC")
BIO = ("O", *(f"{p}-{t}" for t in TYPES for p in "BI"))
IOBES = ("O", *(f"{p}-{t}" for t in TYPES for p in "BIES"))
MARKED = re.compile(r"\[([^\[\]]+)\]")


def marked(own_text: str | None) -> tuple[str, str]:
    """The text without brackets and the [word] asked about."""
    text = own(own_text, TEXT)
    found = MARKED.findall(text)
    if len(found) != 1 or len(found[0].split()) != 1:
        raise UserInputError("checks.one_marked_word")
    return MARKED.sub(r"\1", text), found[0]


def word_tags(own_text: str | None):
    """(the words' BIO tags, their IOBES tags, the asked word's index), or None when the checkpoint is missing."""
    text, word = marked(own_text)
    try:
        tagged = ner.tag(text, MODEL_ID)
    except ModelUnavailableError:
        return None
    units = ner.units(tagged, STRATEGY)
    words = [tagged.text[unit.start:unit.end] for unit in units]  # as written (an uncased model lowercases .word)
    if word not in words:
        raise UserInputError("checks.word_not_found", word=word)
    bio = [unit.label for unit in units]
    return bio, ner.bio_to_iobes(bio), words.index(word), units


def tag_setup(options):
    def setup(own_text):
        text, word = marked(own_text)
        return Setup(text, MODEL_ID, shown(word=word, aggregation=STRATEGY), options)
    return setup


def tag_answer(scheme: int):
    def answer(own_text):
        found = word_tags(own_text)
        if found is None:
            return missing(MODEL_ID)
        tags, index, units = found[scheme], found[2], found[3]
        return Answer(tags[index], ((tags[index], float(units[index].score)),), MODEL_ID)
    return answer


def entities_setup(own_text):
    text, _ = marked(own_text)
    return Setup(text, MODEL_ID, shown(aggregation=STRATEGY), low=0, high=50)


def entities_answer(own_text):
    text, _ = marked(own_text)
    try:
        found = ner.entities(ner.tag(text, MODEL_ID), STRATEGY)
    except ModelUnavailableError:
        return missing(MODEL_ID)
    return Answer(float(len(found)), tuple((e.word, float(e.score)) for e in found), MODEL_ID)


# -- Why: which input token integrated gradients credit most for the asked word's tag -----------------------------

def why_setup(own_text):
    """The model's input pieces, as the Why view lists them ([CLS] … [SEP]); none when the checkpoint is missing."""
    text, word = marked(own_text)
    try:
        loaded = registry.load("ner", MODEL_ID)
    except ModelUnavailableError:
        return Setup(text, MODEL_ID, shown(word=word, method=Say("integrated_gradients")))
    tokenizer = loaded.tokenizer
    encoded = ner.encode(tokenizer, text, min(tokenizer.model_max_length, loaded.config.max_tokens, MAX_MODEL_TOKENS))
    pieces = (tokenizer.cls_token, *(t.piece for t in encoded.tokens), tokenizer.sep_token)
    return Setup(text, MODEL_ID, shown(word=word, method=Say("integrated_gradients"), baseline="[PAD]"), pieces)


def why_answer(own_text):
    text, word = marked(own_text)
    try:
        found = why_encoders.explain_tag(text, MODEL_ID, word)
    except ModelUnavailableError:
        return missing(MODEL_ID)
    signed = found.why.attributions[0].signed
    return Answer(max(range(len(signed)), key=signed.__getitem__), tuple(zip(found.why.tokens, signed)), MODEL_ID)


CHECKS = [
    Check("ner-bio", "ner", "choice", "14", tag_setup(BIO), tag_answer(0), own_hint="checks.own.marked_word"),
    Check("ner-iobes", "ner", "choice", "14", tag_setup(IOBES), tag_answer(1), own_hint="checks.own.marked_word"),
    Check("ner-why", "ner", "token", "14", why_setup, why_answer, own_hint="checks.own.marked_word"),
    Check("ner-entities", "ner", "number", "14", entities_setup, entities_answer, own_hint="checks.own.marked_word",
          tolerance=0.0),
]
