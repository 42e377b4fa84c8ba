"""core/text/sampling.py against transformers (test-only reference): temperature, top-k and top-p equal
TemperatureLogitsWarper, TopKLogitsWarper and TopPLogitsWarper (in generate's order) on random logits, ties and
min_tokens_to_keep included, and on the app's own models' scores; and a seeded generation from GPT-2 equals
transformers' generate(do_sample=True) token for token."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.generation.logits_process import (LogitsProcessorList, TemperatureLogitsWarper, TopKLogitsWarper,
                                                    TopPLogitsWarper)

from core.text import sampling
from core.text.errors import UserInputError
from core.text.sampling import Settings

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def reference(scores: torch.Tensor, s: Settings) -> torch.Tensor:
    """transformers' warpers as generate(do_sample=True) builds them (generation/utils.py _get_logits_processor)."""
    warpers = LogitsProcessorList()
    if s.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(float(s.temperature)))
    if s.top_k:
        warpers.append(TopKLogitsWarper(s.top_k, min_tokens_to_keep=s.min_tokens_to_keep))
    if s.top_p < 1.0:
        warpers.append(TopPLogitsWarper(s.top_p, min_tokens_to_keep=s.min_tokens_to_keep))
    return warpers(None, scores.float().reshape(1, -1).clone())[0]


SETTINGS = st.builds(Settings, temperature=st.floats(0.05, 3.0), top_k=st.integers(0, 70),
                     top_p=st.one_of(st.just(1.0), st.floats(0.0, 1.0)), min_tokens_to_keep=st.integers(1, 4))
# Logits with many ties (small integers, repeated values) as well as spread-out floats, a few −∞ (banned tokens)
LOGITS = st.lists(st.one_of(st.integers(-3, 3).map(float), st.floats(-30, 30, width=32)), min_size=1, max_size=64)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LOGITS, SETTINGS, st.integers(0, 3))
def test_warp_equals_transformers_warpers_on_random_logits(values, s, banned):
    scores = torch.tensor(values, dtype=torch.float32)
    scores[: min(banned, len(values) - 1)] = -math.inf  # at least one token stays drawable
    assert torch.equal(sampling.warp(scores, s), reference(scores, s))  # bit for bit, −∞ where cut


@pytest.mark.parametrize("s", [Settings(1.0, 2), Settings(1.0, 0, 0.5), Settings(0.5, 3, 0.9, min_tokens_to_keep=3),
                               Settings(1.0, 1, 1.0, min_tokens_to_keep=2), Settings(2.0, 0, 0.0)])
def test_ties_and_min_tokens_to_keep(s):
    """Ties at the top-k boundary are all kept (scores below the k-th are cut, equal ones are not); at the top-p
    boundary, torch.sort's order decides which of equal tokens are cut first, as in transformers."""
    scores = torch.tensor([2.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 2.0] * 3)
    ours = sampling.warp(scores, s)
    assert torch.equal(ours, reference(scores, s))
    assert int(torch.isfinite(ours).sum()) >= s.min_tokens_to_keep
    if s.top_k and s.top_p == 1:
        kth = scores.topk(max(s.top_k, s.min_tokens_to_keep)).values[-1]
        assert torch.equal(torch.isfinite(ours), scores >= kth)  # every tie of the k-th is kept


def test_no_cut_and_the_limits():
    scores = torch.randn(50, generator=torch.Generator().manual_seed(0))
    assert torch.equal(sampling.warp(scores, Settings()), scores)  # τ 1, top-k 0, top-p 1: nothing changes
    assert torch.equal(sampling.warp(scores, Settings(1.0, 500)), scores)  # k above the vocabulary: no cut
    top_p_zero = sampling.warp(scores, Settings(1.0, 0, 0.0))  # only the most probable token survives
    assert torch.isfinite(top_p_zero).sum() == 1 and torch.isfinite(top_p_zero[scores.argmax()])
    greedy = sampling.warp(torch.tensor([1.0, 3.0, 3.0, -2.0]), Settings(0.0))  # τ = 0: the argmax set, equal mass
    assert greedy.softmax(-1).tolist() == [0.0, 0.5, 0.5, 0.0]


@pytest.mark.parametrize("bad, message", [
    (Settings(-0.1), "temperature"), (Settings(float("nan")), "temperature"), (Settings(3.5), "temperature"),
    (Settings("hot"), "temperature"), (Settings(1.0, -1), "top-k"), (Settings(1.0, 2.5), "top-k"),
    (Settings(1.0, 0, 1.01), "top-p"), (Settings(1.0, 0, -0.01), "top-p"), (Settings(1.0, 0, 1.0, -1), "seed"),
    (Settings(1.0, 0, 1.0, 2**32), "seed"), (Settings(1.0, 0, 1.0, None), "seed"),
])
def test_impossible_settings_get_a_clear_message(bad, message):
    with pytest.raises(UserInputError, match=message):
        bad.checked()


def test_the_cut_a_figure_draws_is_recomputed_by_hand():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=40).astype(np.float32)
    s = Settings(0.7, 12, 0.8, seed=5)
    draw = sampling.Sampler(s).draw(logits, lambda i: f"t{i}", shown=40)
    cut = draw.cut
    p = np.exp(logits - logits.max())
    p /= p.sum()
    p_tau = np.exp(logits / 0.7 - (logits / 0.7).max())
    p_tau /= p_tau.sum()
    order = np.argsort(-p, kind="stable")
    kept = np.zeros(40, bool)
    kept[order[:12]] = True  # top-k 12 …
    running = np.cumsum(p_tau[order[:12]] / p_tau[order[:12]].sum())  # … then top-p 0.8 of what top-k kept
    kept[order[int(np.searchsorted(running, 0.8)) + 1:]] = False
    assert cut.ids == order.tolist() and cut.tokens[0] == f"t{order[0]}"
    np.testing.assert_allclose(cut.original, p[order], rtol=1e-5)
    np.testing.assert_allclose(cut.tempered, p_tau[order], rtol=1e-5)
    assert cut.kept.tolist() == kept[order].tolist() and cut.kept_count == kept.sum()
    assert cut.kept_mass == pytest.approx(p_tau[kept].sum(), rel=1e-5)
    assert cut.kept_mass_original == pytest.approx(p[kept].sum(), rel=1e-5)
    np.testing.assert_allclose(cut.renormalised, np.where(kept, p_tau, 0)[order] / p_tau[kept].sum(), atol=1e-6)
    assert cut.rest == pytest.approx((0, 0, 0), abs=1e-6) and cut.candidates == 40
    assert kept[draw.token] and draw.probability == pytest.approx(p_tau[draw.token] / p_tau[kept].sum(), rel=1e-5)


def test_a_sampler_is_seeded_and_leaves_the_global_generator_alone():
    logits = torch.randn(30, generator=torch.Generator().manual_seed(2))
    state = torch.get_rng_state()
    first = [sampling.Sampler(Settings(1.0, seed=9)).draw(logits).token for _ in range(3)]
    assert len(set(first)) == 1  # a fresh sampler with the same seed draws the same
    sampler = sampling.Sampler(Settings(1.0, seed=9))
    draws = [sampler.draw(logits).token for _ in range(200)]
    torch.manual_seed(9)  # the global generator seeded alike draws the same numbers (what transformers uses)
    assert draws == [int(torch.multinomial(logits.softmax(-1)[None], 1)) for _ in range(200)]
    torch.set_rng_state(state)
    before = torch.get_rng_state()
    sampling.Sampler(Settings(1.0, seed=1)).draw(logits)
    assert torch.equal(torch.get_rng_state(), before)
    with pytest.raises(UserInputError, match="No token can be drawn"):
        sampling.Sampler(Settings()).draw(torch.full((4,), -math.inf))


# ----------------------------------------------------------------------------------------------------------------
# On the app's own models' scores

GRID = [Settings(1.0, 5), Settings(0.7, 0, 0.9), Settings(1.3, 40, 0.95, min_tokens_to_keep=2), Settings(0.5, 1),
        Settings(2.0, 0, 0.5), Settings(1.0, 3, 0.3, min_tokens_to_keep=3)]


def model_scores() -> dict[str, torch.Tensor]:
    from core.transformer import gpt
    from core.recurrent import lstm
    from core.text.corpora import load_corpus
    from core.ngram.ngram import NgramModel, log_or_minus_inf, tokenize_sentences

    toy = NgramModel(tokenize_sentences(load_corpus("toy_zh")), 2)  # counts: many exact ties
    moby = NgramModel(tokenize_sentences(load_corpus("moby_dick")[:200_000], lowercase=True), 3, boundaries=True)
    models = lstm.shipped_models()
    device = models.rnn.head.weight.device  # the app's device: on a GPU the warpers run there, on both sides
    ids = torch.tensor([models.vocab.encode("Call me Ishmael. Some years ago")[0]], device=device)
    loaded = gpt.load()
    with torch.inference_mode():
        char_ids = torch.tensor([loaded.tokenizer.encode("The White Wha").ids], device=device)
        char_gpt = loaded.model(char_ids).logits[0, -1]
        return {"ngram-toy": torch.from_numpy(log_or_minus_inf(toy.distribution(["的"], "mle"))),
                "ngram-moby-kn": torch.from_numpy(log_or_minus_inf(moby.distribution(["the", "white"], "kneser_ney"))),
                "rnn": models.rnn(ids).logits[0, -1], "lstm": models.lstm(ids).logits[0, -1], "char-gpt": char_gpt}


@pytest.fixture(scope="module")
def scores():
    return model_scores()


@pytest.mark.parametrize("model", ["ngram-toy", "ngram-moby-kn", "rnn", "lstm", "char-gpt"])
def test_warp_equals_transformers_on_the_models_own_scores(scores, model):
    for s in GRID:
        assert torch.equal(sampling.warp(scores[model], s), reference(scores[model], s)), (model, s)


GPT2_SETTINGS = [Settings(1.0, 0, 1.0, 0), Settings(0.7, 20, 1.0, 1), Settings(1.3, 0, 0.9, 2),
                 Settings(0.9, 50, 0.8, 3), Settings(1.0, 5, 1.0, 4), Settings(0.5, 0, 0.5, 5)]


@pytest.mark.parametrize("s", GPT2_SETTINGS, ids=lambda s: f"t{s.temperature}-k{s.top_k}-p{s.top_p}-seed{s.seed}")
def test_seeded_gpt2_generation_equals_transformers_generate(tiny_gpt2_checkpoint, s):
    """The same seed and settings: core/transformer/gpt.py's draws (through core/text/sampling.py, with the KV cache) equal
    GPT2LMHeadModel.generate(do_sample=True) after torch.manual_seed(seed), token for token; and the same logits
    warped equal transformers' own warped scores at every step."""
    import transformers

    from core.transformer import gpt

    folder = tiny_gpt2_checkpoint("bpe")
    model = transformers.GPT2LMHeadModel.from_pretrained(folder).eval()
    prompt = "The weather today is"
    loaded = gpt.load(str(folder))
    ids = loaded.tokenizer.encode(prompt).ids
    torch.manual_seed(s.seed)
    out = model.generate(torch.tensor([ids]), do_sample=True, max_new_tokens=40, temperature=s.temperature,
                         top_k=s.top_k, top_p=s.top_p, pad_token_id=model.config.eos_token_id,
                         output_scores=True, return_dict_in_generate=True)
    theirs = out.sequences[0, len(ids):].tolist()
    steps = list(gpt.generate_steps(str(folder), prompt, 40, s))
    ours = [step.draw.token for step in steps]
    assert len(theirs) >= 10 and ours[:len(theirs)] == theirs  # transformers stops early only at <|endoftext|>
    for step, warped in zip(steps, out.scores):  # the kept set the figure shows is transformers' kept set
        assert step.draw.cut.kept_count == int(torch.isfinite(warped[0]).sum())
