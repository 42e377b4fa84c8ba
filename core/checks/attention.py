"""Checks of the Attention tab (seed §8–§11): the toy equations of core/attention/attention.py and MiniLM's attention maps
(the packaged sentence-transformers/all-MiniLM-L6-v2, offline), as the tab computes them."""
from __future__ import annotations

import numpy as np

from core.loading.checkpoints import MINILM_ID
from core.checks.base import Answer, Check, Say, Setup, own, shown
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.seeds import thinking_machines

att = lazy_import("core.attention.attention")

IT_TEXT = "The animal didn't cross the street because it was too tired."
LAYER, HEAD = 5, 1  # 1-based, as the tab's sliders count
QUERY = "it"


# -- which token "it" attends to most -----------------------------------------------------------------------------

def head_row(own_text: str | None):
    """The tokens (without [CLS]/[SEP], as the tab's "hide special tokens" shows them) and the query's row."""
    maps = att.extract_attention(own(own_text, IT_TEXT))
    probs, _ = att.drop_special(maps.probs, maps.special)
    tokens = [token for token, special in zip(maps.tokens, maps.special) if not special]
    if QUERY not in tokens:
        raise UserInputError("checks.needs_word", word=QUERY)
    return tokens, probs[LAYER - 1, HEAD - 1, tokens.index(QUERY)]


def it_setup(own_text):
    tokens, _ = head_row(own_text)
    return Setup(own(own_text, IT_TEXT), MINILM_ID, shown(layer=LAYER, head=HEAD, query=QUERY,
                                                     special=Say("hidden")), tuple(tokens))


def it_answer(own_text):
    tokens, row = head_row(own_text)
    return Answer(int(np.argmax(row)), tuple(zip(tokens, map(float, row))), MINILM_ID)


# -- what a causal mask zeroes ------------------------------------------------------------------------------------

REGIONS = ("above", "below", "diagonal", "first")
REGION_LABELS = tuple(f"checks.attention-causal.{region}" for region in REGIONS)
WORDS = "i have a dream"


def regions(T: int) -> dict[str, np.ndarray]:
    upper = np.triu(np.ones((T, T), bool), 1)
    first = np.zeros((T, T), bool)
    first[:, 0] = True
    return {"above": upper, "below": upper.T, "diagonal": np.eye(T, dtype=bool), "first": first}


def causal_setup(own_text):
    return Setup(WORDS, "softmax(QKᵀ/√d_k + M) V", shown(causal_mask=Say("on")),
                 REGIONS, option_labels=REGION_LABELS)


def causal_answer(own_text):
    m = att.i_have_a_dream()
    Q, K, V = att.project(m["x"], m["W_Q"], m["W_K"], m["W_V"])
    probs = att.scaled_dot_product_attention(Q, K, V, causal=True).probs  # (4, 4), the tab's masked map
    mass = tuple((name, float(probs[where].sum())) for name, where in regions(len(probs)).items())
    return Answer(min(mass, key=lambda m: m[1])[0], mass, "core.attention.attention", higher_wins=False)


# -- the Thinking Machines weight --------------------------------------------------------------------------------

def thinking_setup(own_text):
    return Setup("Thinking Machines", "q₁·k₁ = 112, q₁·k₂ = 96", shown(d_k=64), low=0.0, high=1.0)


def thinking_answer(own_text):
    m = thinking_machines()
    weight = float(att.scaled_dot_product_attention(m["Q"], m["K"], m["V"]).probs[0, 0])
    return Answer(weight, (("Thinking → Thinking", weight),), "core.text.seeds.thinking_machines")


CHECKS = [
    Check("attention-it", "attention", "token", "10", it_setup, it_answer, own_hint="checks.own.sentence_it"),
    Check("attention-causal", "attention", "choice", "10", causal_setup, causal_answer, own_text=False),
    Check("attention-thinking", "attention", "number", "9", thinking_setup, thinking_answer, own_text=False,
          tolerance=0.0, abs_tolerance=0.02),
]
