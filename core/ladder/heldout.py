"""The held-out ladder as scripts/ladder_heldout.py wrote it, and each rung's name and equation: torch-free.

The Overview draws the held-out ladder into the page when the app is built (demo/ladder/overview.py), so reading it must not
import torch (core/loading/lazy.py: the cold start imports no torch); core/ladder/ladder.py, which scores text with the models,
re-exports everything here.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

from core.text import i18n
from core.text.errors import ModelUnavailableError
from core.loading.paths import ASSETS_DIR

HELDOUT_PATH = ASSETS_DIR / "ladder" / "heldout.json"
ADD_K = 1.0  # add-one, the seed's smoothing (§2.1); Kneser-Ney is the rung that fixes it

# Where each family is explained: the tab (and preset) a rung's row links to.
TAB_LINKS = {"n-gram": "?tab=ngram&preset=moby-trigram", "RNN": "?tab=lstm&preset=forget-gate",
             "LSTM": "?tab=lstm&preset=forget-gate", "Transformer": "?tab=transformer"}
_EQUATIONS = {  # language-free (formulas only); the n-gram and GPT ones have words, so they are keys (describe)
    "rnn": "h_t = tanh(U x_t + W h_{t−1} + b); P(c_{t+1} | c_≤t) = softmax(V h_t + b_V)",
    "lstm": "C_t = f_t ⊙ C_{t−1} + i_t ⊙ C̃_t; h_t = o_t ⊙ tanh(C_t); P(c_{t+1} | c_≤t) = softmax(V h_t + b_V)",
}


@lru_cache(maxsize=1)
def gpt_context() -> int:
    """The char-GPT's context in characters, from its shipped config (no model load)."""
    return int(json.loads((ASSETS_DIR / "gpt" / "config.json").read_text(encoding="utf-8"))["n_positions"])


def describe(key: str, lang: str | None = None) -> tuple[str, str]:
    """(name, equation) of the rung ``key`` in ``lang`` (default: the current call's language). The English ones
    are what scripts/ladder_heldout.py writes into the held-out file."""
    if key.startswith("ngram-"):
        _, n, smoothing = key.split("-", 2)
        n = int(n)
        context = i18n.text("overview.ctx_unigram" if n == 1 else "overview.ctx_one" if n == 2 else "overview.ctx_many",
                            lang, n=n - 1)
        if smoothing == "add_k":
            return (i18n.text("overview.rung_add_k", lang, n=n),
                    i18n.text("overview.eq_add_k", lang, k=f"{ADD_K:g}", context=context))
        return i18n.text("overview.rung_kn", lang, n=n), i18n.text("overview.eq_kn", lang, context=context)
    if key == "gpt":
        return i18n.text("overview.rung_gpt", lang), i18n.text("overview.eq_gpt", lang, context=gpt_context())
    return i18n.text(f"overview.rung_{key}", lang), _EQUATIONS[key]


@dataclass(frozen=True)
class CharGPTScores:
    """The char-GPT's held-out score under the two protocols the app shows (the Overview's ladder and the Transformer
    & GPT tab's badge): they read different text with different context, so their numbers differ."""
    windows: int  # training-time protocol: this many consecutive windows of the held-out split,
    length: int  # each this many characters, each read from a cold start (as core.recurrent.lstm.evaluate for the RNN/LSTM)
    window_nats: float  # mean nats/char over those windows (assets/gpt/config.json)
    stream_bits: float  # the ladder: the whole split as one stream, each character with up to `context` before it
    context: int

    @property
    def window_bits(self) -> float:
        return self.window_nats / math.log(2)


def char_gpt_scores(path=HELDOUT_PATH) -> CharGPTScores:
    """Both held-out figures of the shipped char-GPT, from the files that hold them (no model load)."""
    held = json.loads((ASSETS_DIR / "gpt" / "config.json").read_text(encoding="utf-8"))["info"]["held_out"]
    stream = next(row for row in load_held_out(path)[1] if row.key == "gpt")
    return CharGPTScores(held["windows"], held["seq_len"], held["loss_nats"], stream.bits_per_char, gpt_context())


def char_bert_rows() -> dict[str, dict]:
    """The char-BERT's comparison with the char-GPT (assets/char_bert/heldout.json, by scripts/char_bert_heldout.py):
    row name → its accuracy and bits per masked character, and "positions" → how many were hidden. Not a rung: a
    masked LM's bits are a pseudo-log-likelihood, not a probability of the text."""
    held = json.loads((ASSETS_DIR / "char_bert" / "heldout.json").read_text(encoding="utf-8"))
    return {"positions": held["protocol"]["positions"], **{row["model"]: row for row in held["rows"]}}


def bits_per_byte(bits_per_char: float, text: str) -> float:
    """bits/byte = bits/char × chars/bytes of the scored text in UTF-8. Per character, Chinese (3 bytes a character)
    and English (1) are not on one scale: a model of Chinese spends more bits on each of its richer characters. Per
    byte they are, whatever the tokenizer, since every tokenizer's units cover the same bytes."""
    return bits_per_char * len(text) / len(text.encode("utf-8"))


@dataclass
class HeldOutRow:
    key: str
    name: str
    family: str
    equation: str
    tab: str
    bits_per_char: float
    perplexity: float
    characters: int  # held-out characters scored
    parameters: int
    parameters_kind: str
    training_seconds: float
    training_note: str  # how the training time was obtained
    training_data: str
    subset_bits_per_char: float  # on the first SUBSET_CHARS held-out characters (what the test recomputes)
    bytes: int  # UTF-8 bytes of the characters scored
    bits_per_byte: float  # bits_per_char × characters / bytes
    tokenizer: str  # what the model reads: "characters" (every rung so far)
    vocabulary: int  # symbols it has (characters it does not have are its <unk>)


def load_held_out(path=HELDOUT_PATH) -> tuple[dict, list[HeldOutRow]]:
    """(facts about the split, one row per rung) as scripts/ladder_heldout.py wrote them."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelUnavailableError("overview.err.held_out_missing", name=path.name,
                                    command="python scripts/ladder_heldout.py") from None
    return data["split"], [HeldOutRow(**row) for row in data["rows"]]
