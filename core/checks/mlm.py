"""Checks of the Masked LM tab (seed §12–§13): the char-BERT shipped in assets/char_bert (core/mlm/char.py, and its
Why view core/why/why.py), offline, and a Hub BERT's fill (core/mlm/mlm.py), which needs its checkpoint.

"Both sides or left only" scores the hidden word the way the tab's comparison (core/mlm/char_compare.py) reads the
text, both sides or cut after the blank, with the char-BERT's own probabilities (mlm_char.probabilities_at): the
fills the view shows are argmaxes, and two wrong fills would tie; the probability of the true word does not."""
from __future__ import annotations

import math
import re

from core.loading.checkpoints import CHAR_BERT_ID
from core.checks.base import Answer, Check, Say, Setup, missing, own, shown, top_options
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import

mlm = lazy_import("core.mlm.mlm")
mlm_char = lazy_import("core.mlm.char")
registry = lazy_import("core.loading.registry")
torch = lazy_import("torch")
why = lazy_import("core.why.why")

FILL_TEXT = "the man went to the store. he bought a gallon o_ milk."
SIDES_TEXT = "The weather today is very [bad], so we had to cancel the outdoor game."
HUB_TEXT = "The capital of France is [MASK]."
HUB_MODEL = "bert-base-uncased"
HIDDEN = re.compile(r"\[([^\[\]]+)\]")


# -- the char-BERT's one-character fill --------------------------------------------------------------------------

def char_fill(own_text: str | None):
    text = own(own_text, FILL_TEXT)
    if text.count("_") != 1:
        raise UserInputError("checks.one_blank_char")
    return mlm_char.fill_as_written(text, top_k=4)


def fill_setup(own_text):
    filled = char_fill(own_text)
    candidates = [(c.char, c.probability) for c in filled.masked[0].candidates]
    return Setup(filled.text, CHAR_BERT_ID, shown(blank_chars=1), top_options(candidates))


def fill_answer(own_text):
    filled = char_fill(own_text)
    candidates = [(c.char, c.probability) for c in filled.masked[0].candidates]
    return Answer(filled.blanks[0].iterative, tuple(candidates), CHAR_BERT_ID)


# -- both sides or left only: which is more accurate here? -------------------------------------------------------

SIDES = ("both", "left")
SIDE_LABELS = ("checks.mlm-sides.both", "checks.mlm-sides.left")


def hidden_word(own_text: str | None) -> tuple[str, str]:
    """The text with its [word] as a blank of as many characters, and the word."""
    text = own(own_text, SIDES_TEXT)
    found = HIDDEN.findall(text)
    if len(found) != 1 or "_" in text:
        raise UserInputError("checks.one_hidden_word")
    word = found[0]
    return HIDDEN.sub("_" * len(word), text), word


def sides_setup(own_text):
    blanked, word = hidden_word(own_text)
    return Setup(blanked, CHAR_BERT_ID, shown(hidden=word, blank_chars=len(word)), SIDES,
                 option_labels=SIDE_LABELS)


def word_probability(text: str, word: str) -> float:
    """How well the char-BERT reading ``text`` (one blank) predicts the hidden word: the geometric mean, per
    character, of P(true c_j | the text, c_1..c_{j-1} written in, c_j..c_n still masked), from left to right."""
    loaded = mlm_char.shipped_char_bert()
    prepared = mlm_char.prepare(loaded, text, len(word))
    ids = torch.tensor([prepared.ids], device=loaded.device)  # (1, T)
    start, log_p = prepared.starts[0], 0.0
    for offset, char in enumerate(word):
        char_id = loaded.tokenizer.index.get(char, mlm_char.UNK_ID)
        with torch.inference_mode():
            probs = mlm_char.probabilities_at(loaded.model, ids, torch.zeros(1, dtype=torch.long, device=ids.device),
                                              torch.tensor([start + offset], device=ids.device))  # (1, V)
        log_p += math.log(max(float(probs[0, char_id]), 1e-30))
        ids[0, start + offset] = char_id
    return math.exp(log_p / len(word))


def sides_answer(own_text):
    blanked, word = hidden_word(own_text)
    end = blanked.index("_" * len(word)) + len(word)
    scores = (("both", word_probability(blanked, word)), ("left", word_probability(blanked[:end], word)))
    return Answer(max(scores, key=lambda s: s[1])[0], scores, CHAR_BERT_ID)


# -- a Hub BERT's fill -------------------------------------------------------------------------------------------

def hub_fill(own_text: str | None):
    """The Hub BERT's top 4 for the first blank, or None when the checkpoint is not on this machine."""
    try:
        loaded = registry.load("mlm", HUB_MODEL)
    except ModelUnavailableError:
        return None
    blank = mlm.fill_mask(loaded, own(own_text, HUB_TEXT), top_k=4).blanks[0]
    return [(c.text, c.probability) for c in blank.candidates]


def hub_setup(own_text):
    found = hub_fill(own_text)
    return Setup(own(own_text, HUB_TEXT), HUB_MODEL, shown(shown=Say("top_4")),
                 top_options(found) if found else ())


def hub_answer(own_text):
    found = hub_fill(own_text)
    if found is None:
        return missing(HUB_MODEL)
    return Answer(found[0][0], tuple(found), HUB_MODEL)


# -- Why: which character integrated gradients credits most for the fill ----------------------------------------

WHY_TEXT = "the man went to the store. he bought a gallon o_ milk."


def why_setup(own_text):
    filled = char_fill(own_text)
    return Setup(filled.text, CHAR_BERT_ID, shown(method=Say("integrated_gradients"), baseline=Say("zeros")),
                 tuple(filled.tokens))


def why_answer(own_text):
    char_fill(own_text)  # one blank of one character, as the setup showed
    result = why.explain_char_bert(own(own_text, WHY_TEXT))
    signed = result.attributions[0].signed
    return Answer(max(range(len(signed)), key=signed.__getitem__), tuple(zip(result.tokens, signed)), CHAR_BERT_ID)


CHECKS = [
    Check("mlm-char-fill", "mlm", "choice", "13", fill_setup, fill_answer, own_hint="checks.own.one_char_blank"),
    Check("mlm-sides", "mlm", "choice", "13.1", sides_setup, sides_answer, own_hint="checks.own.hidden_word"),
    Check("mlm-char-why", "mlm", "token", "13", why_setup, why_answer, own_hint="checks.own.one_char_blank"),
    Check("mlm-hub-fill", "mlm", "choice", "13", hub_setup, hub_answer, own_hint="checks.own.mask"),
]
