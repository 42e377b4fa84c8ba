"""Checks of the Transformer tab (seed §11–§13): BERT-base's parameter count from its config (core/transformer/param_count.py
through the model card of core/mlm/pretraining.py), and the char-GPT (core/transformer/gpt.py, core/text/sampling.py, core/why/why.py)."""
from __future__ import annotations

from core.transformer import param_count
from core.loading.checkpoints import CHAR_GPT_ID
from core.checks.base import Answer, Check, Say, Setup, own, shown, top_options
from core.loading.lazy import lazy_import

gpt = lazy_import("core.transformer.gpt")
sampling = lazy_import("core.text.sampling")
mlm_pretraining = lazy_import("core.mlm.pretraining")
why = lazy_import("core.why.why")

BERT_BASE = "bert-base-uncased"
NEXT_TEXT = "Captain Ahab stood upon the quarter-dec"
TOP_P_TEXT = "Captain Ahab stood upon the quarter-deck"
TOP_P = 0.9
WHY_TEXT = "The sea was calm and the whal"


# -- BERT-base's parameter count ---------------------------------------------------------------------------------

def params_setup(own_text):
    return Setup(BERT_BASE, BERT_BASE, shown(layers=12, hidden_size=768, heads=12,
                                                                   pooler=Say("yes")), low=1e6, high=1e9)


def params_answer(own_text):
    card = mlm_pretraining.model_card(BERT_BASE)  # its config.json if here, else the published numbers
    total = float(card.breakdown["total"])
    return Answer(total, tuple((part, float(n)) for part, n in card.breakdown.items()), f"{BERT_BASE} ({card.source})")


# -- the Transformer base's parameter count (§11) ---------------------------------------------------------------

def base_setup(own_text):
    shape = param_count.TRANSFORMER_BASE
    return Setup(shape["name"], shape["name"], shown(**{k: Say("yes") if v is True else v for k, v in shape.items() if k != "name"}), low=1e6, high=1e9)


def base_answer(own_text):
    counted = param_count.parameter_count(param_count.transformer_shape(param_count.TRANSFORMER_BASE))
    groups = tuple(dict.fromkeys(row.group for row in counted.rows))
    return Answer(float(counted.total), tuple((g, float(counted.group_total(g))) for g in groups),
                  param_count.TRANSFORMER_BASE["name"])


# -- the char-GPT's next character -------------------------------------------------------------------------------

def distribution(text: str, settings=None):
    return gpt.next_token(CHAR_GPT_ID, text, settings or sampling.Settings())


def next_candidates(own_text):
    cut = distribution(own(own_text, NEXT_TEXT)).cut
    return list(zip(cut.tokens, map(float, cut.original)))  # most probable first


def next_setup(own_text):
    return Setup(own(own_text, NEXT_TEXT), CHAR_GPT_ID, shown(temperature=1, shown=Say("top_4")),
                 top_options(next_candidates(own_text)))


def next_answer(own_text):
    found = next_candidates(own_text)
    options = top_options(found)
    return Answer(found[0][0], tuple((c, p) for c, p in found if c in options), CHAR_GPT_ID)


# -- how many characters top-p 0.9 keeps -------------------------------------------------------------------------

def top_p_setup(own_text):
    return Setup(own(own_text, TOP_P_TEXT), CHAR_GPT_ID, shown(temperature=1, top_p=TOP_P), low=1, high=100)


def top_p_answer(own_text):
    cut = distribution(own(own_text, TOP_P_TEXT), sampling.Settings(1.0, 0, TOP_P, 0)).cut
    return Answer(float(cut.kept_count), tuple(zip(cut.tokens, map(float, cut.tempered))), CHAR_GPT_ID)


# -- temperature: the top character's probability at τ = 0.5 ---------------------------------------------------

TEMPERATURE = 0.5


def temperature_setup(own_text):
    cut = distribution(own(own_text, NEXT_TEXT)).cut
    return Setup(own(own_text, NEXT_TEXT), CHAR_GPT_ID,
                 shown(temperature=TEMPERATURE, top_at_1=f"P({cut.tokens[0]}) = {float(cut.original[0]):.3f}"),
                 low=0.0, high=1.0)


def temperature_answer(own_text):
    cut = distribution(own(own_text, NEXT_TEXT), sampling.Settings(TEMPERATURE)).cut
    return Answer(float(cut.tempered[0]), ((cut.tokens[0], float(cut.tempered[0])),), CHAR_GPT_ID)


# -- Why: which character integrated gradients credits most ------------------------------------------------------

def why_setup(own_text):
    text = own(own_text, WHY_TEXT)
    loaded = gpt.load(CHAR_GPT_ID)
    return Setup(text, CHAR_GPT_ID, shown(method=Say("integrated_gradients"), baseline=Say("zeros")),
                 tuple(gpt.encode_text(loaded, text).pieces))


def why_answer(own_text):
    result = why.explain_gpt(own(own_text, WHY_TEXT), CHAR_GPT_ID)
    signed = result.attributions[0].signed
    return Answer(max(range(len(signed)), key=signed.__getitem__), tuple(zip(result.tokens, signed)), CHAR_GPT_ID)


CHECKS = [
    Check("transformer-bert-params", "transformer", "number", "13", params_setup, params_answer, own_text=False),
    Check("transformer-base-params", "transformer", "number", "11", base_setup, base_answer, own_text=False),
    Check("transformer-gpt-next", "transformer", "choice", "12", next_setup, next_answer, own_hint="checks.own.prompt"),
    Check("transformer-top-p", "transformer", "number", "12", top_p_setup, top_p_answer, own_hint="checks.own.prompt",
          tolerance=0.2, abs_tolerance=1.0),
    Check("transformer-temperature", "transformer", "number", "12", temperature_setup, temperature_answer,
          own_hint="checks.own.prompt", tolerance=0.0, abs_tolerance=0.05),
    Check("transformer-gpt-why", "transformer", "token", "12", why_setup, why_answer, own_hint="checks.own.prompt"),
]
