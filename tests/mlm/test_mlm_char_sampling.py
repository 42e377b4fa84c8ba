"""Issue #36 item 1 on the char-BERT: its iterative fill draws each character through core/text/sampling.py's Sampler.
τ = 0 (or no settings) is the argmax fill exactly; a seed reproduces a whole fill; every step's distribution is
transformers' TemperatureLogitsWarper → TopKLogitsWarper → TopPLogitsWarper on transformers' BertForMaskedLM logits
at that position (the shipped files, special tokens at −∞), and every draw is torch.multinomial on a generator
seeded once with the seed, as in transformers' _sample."""
from __future__ import annotations

import math

import pytest
import torch
import transformers

from core.text import sampling
from core.text.errors import UserInputError
from core.mlm.char import (CHAR_BERT_ASSETS, FIRST_CHAR_ID, MASK_ID, fill, fill_as_written, logits_at, prepare,
                           shipped_char_bert)
from core.text.sampling import Settings
from tests.text.test_sampling import reference as reference_warpers

pytestmark = pytest.mark.usefixtures("one_torch_thread")
ISHMAEL = "Call me _______. Some years ago, never mind how long precisely, having little or no money in my purse."
SAMPLED = [Settings(1.2, 0, 0.9, 7), Settings(1.0, 5, 1.0, 1), Settings(0.7, 0, 1.0, 2), Settings(2.0, 10, 0.5, 3)]


@pytest.fixture(scope="module")
def reference():
    transformers.logging.set_verbosity_error()
    return transformers.BertForMaskedLM.from_pretrained(str(CHAR_BERT_ASSETS)).eval()


def characters_logits(logits: torch.Tensor) -> torch.Tensor:
    """Logits (V,) with the special tokens at −∞ (the fill never writes one)."""
    scores = logits.float().clone()
    scores[:FIRST_CHAR_ID] = -math.inf
    return scores


def comparable(result) -> list:
    return [(s.position, s.blank, s.offset, s.char, s.probability, [(c.char, c.probability) for c in s.candidates],
             s.confidences) for s in result.steps] + [result.iterative, result.independent]


def test_tau_zero_is_the_argmax_fill_exactly():
    text = "It was the best of _____, it was the worst of ____."
    plain = fill(text, [5, 4], 4)
    for greedy in (Settings(0.0), Settings(0.0, 3, 0.2, seed=99)):  # top-k, top-p and the seed change nothing at τ = 0
        assert comparable(fill(text, [5, 4], 4, greedy)) == comparable(plain)
    for step in plain.steps:  # the argmax of every step, all the mass on it
        assert step.probability == max(c for _, _, c in step.confidences)
        assert step.draw.probability == 1.0 and step.draw.cut.kept_count == 1 and step.draw.cut.settings.greedy
        assert step.draw.cut.tokens[0] == step.char and step.draw.token == shipped_char_bert().tokenizer.index[step.char]


def test_a_seed_reproduces_the_fill_and_other_seeds_write_other_words():
    s = Settings(1.2, 0, 0.9, 7)
    first = fill_as_written(ISHMAEL, 5, s)
    again = fill_as_written(ISHMAEL, 5, s)
    assert comparable(first) == comparable(again) and first.settings == s
    words = {fill_as_written(ISHMAEL, 5, Settings(1.2, 0, 0.9, seed)).blanks[0].iterative for seed in range(6)}
    assert len(words) >= 3  # seven characters at τ = 1.2: the seed matters


def test_the_global_generator_is_left_alone():
    state = torch.get_rng_state()
    fill_as_written("my dog is _____ .", 3, Settings(1.0, 0, 1.0, 4))
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("s", SAMPLED, ids=lambda s: f"t{s.temperature}-k{s.top_k}-p{s.top_p}-seed{s.seed}")
def test_each_step_is_transformers_warpers_and_multinomial_on_the_char_berts_logits(reference, s):
    """Replay the fill with transformers: at each step's position, the logits given the characters written so far,
    warped by transformers' warpers; the cut the step recorded is that distribution, the drawn character lies in
    its kept set, and torch.multinomial on one generator seeded with the seed draws the same character."""
    result = fill_as_written(ISHMAEL + " And ___ the sea.", 5, s)
    tokenizer = shipped_char_bert().tokenizer
    ids = [tokenizer.index[token] for token in result.tokens]
    generator = torch.Generator().manual_seed(s.seed)
    for step in result.steps:
        with torch.inference_mode():
            logits = reference(input_ids=torch.tensor([ids])).logits[0]  # (T, V)
        scores = characters_logits(logits[step.position])
        warped = reference_warpers(scores, s)  # (V,) −∞ outside the kept set
        probs = warped.softmax(-1)
        cut, token = step.draw.cut, step.draw.token
        assert tokenizer.tokens[token] == step.char and torch.isfinite(warped[token])  # drawn from the kept set
        assert cut.kept_count == int(torch.isfinite(warped).sum()) and cut.candidates == len(tokenizer) - FIRST_CHAR_ID
        assert [bool(torch.isfinite(warped[i])) for i in cut.ids] == cut.kept.tolist()
        assert cut.renormalised.tolist() == pytest.approx(probs[cut.ids].tolist(), abs=2e-6)
        assert step.draw.probability == pytest.approx(float(probs[token]), abs=2e-6)
        assert cut.kept_mass == pytest.approx(float(scores.div(s.temperature).softmax(-1)[torch.isfinite(warped)].sum()),
                                              abs=2e-6)
        assert int(torch.multinomial(probs, 1, generator=generator)) == token
        # the position is the most confident one still masked, at τ = 1, whatever the settings
        masked = [p for p, _, _ in step.confidences]
        full = logits.softmax(-1)  # (T, V) the full softmax, special tokens included, as the table shows it
        assert masked[int(full[masked, FIRST_CHAR_ID:].max(-1).values.argmax())] == step.position
        assert step.probability == pytest.approx(float(full[step.position, token]), abs=2e-6)
        ids[step.position] = token


def test_the_warp_is_transformers_on_the_char_berts_own_scores():
    """Bit for bit: core's scores (core/nets' BertForMaskedLM) at every [MASK] of a fill, warped two ways."""
    loaded = shipped_char_bert()
    prepared = prepare(loaded, ISHMAEL.replace("_______", "_"), 7)
    positions = [i for i, token in enumerate(prepared.ids) if token == MASK_ID]
    scores = logits_at(loaded.model, torch.tensor([prepared.ids], device=loaded.device),
                       torch.zeros(len(positions), dtype=torch.long, device=loaded.device),
                       torch.tensor(positions, device=loaded.device)).cpu().clone()
    scores[:, :FIRST_CHAR_ID] = -math.inf
    for row in scores:
        for s in SAMPLED + [Settings(1.0, 3, 0.3, min_tokens_to_keep=3)]:
            assert torch.equal(sampling.warp(row, s), reference_warpers(row, s)), s


@pytest.mark.parametrize("bad, words", [(Settings(-0.5), "temperature"), (Settings(1.0, 0, 1.5), "top-p"),
                                        (Settings(1.0, -2), "top-k"), (Settings(1.0, 0, 1.0, -1), "seed")])
def test_impossible_settings_get_a_clear_message(bad, words):
    with pytest.raises(UserInputError, match=words):
        fill_as_written("my dog is _____ .", 3, bad)
