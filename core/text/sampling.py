"""Drawing the next token: temperature, top-k, top-p (nucleus) and a seed. Every generator of the app samples here:
the n-gram (core/ngram/ngram.py), the RNN and LSTM (core/recurrent/lstm.py), the char-GPT and GPT-2 (core/transformer/gpt.py). A masked LM that
fills blanks one at a time (issue #34's char-BERT) calls ``Sampler.draw`` on the scores of the blank it fills.

Given the scores z of every token (logits, or log-probabilities for the n-gram; −∞ = never drawn):

    temperature   z ← z / τ                          τ < 1 sharpens, τ > 1 flattens; τ = 0 is the limit τ → 0:
                                                     all the mass on the highest score (shared if several tie)
    top-k         keep the k highest z (a tie with the k-th is kept too), at least min_tokens_to_keep
    top-p         sort p_τ = softmax(z/τ) ascending and drop tokens while their running sum is ≤ 1 − p: the smallest
                  set of most probable tokens holding at least p of the mass is kept, at least min_tokens_to_keep
    draw          q = softmax over the kept set (the renormalised probabilities), x ~ q

The conventions are transformers' (generation/utils.py ``_sample``), so that the same seed gives the same text:
TemperatureLogitsWarper, then TopKLogitsWarper, then TopPLogitsWarper, each with the same torch operations (the
top-p sort is torch.sort's, whose order among equal scores decides which of them a cut between them keeps), in
float32; then probs = softmax(scores) and torch.multinomial(probs, 1) on a torch.Generator seeded with the seed,
which draws exactly what the global generator draws after torch.manual_seed(seed). top-k 0 and top-p 1 mean no
cut, as there. Where transformers refuses (τ = 0), this module takes the limit a learner expects (greedy).

What a figure needs comes back with every draw (``Cut``): the distribution at τ = 1, the one the cut is made on
(softmax(z/τ)), the kept set, the renormalised probabilities, and the kept set's mass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import torch

from core.text.errors import UserInputError

MAX_TEMPERATURE = 3.0
MAX_SEED = 2**32 - 1
SHOWN = 20  # tokens a Cut keeps for the figure (the rest is one "all the others" bar)


@dataclass(frozen=True)
class Settings:
    temperature: float = 1.0
    top_k: int = 0  # 0: no top-k cut
    top_p: float = 1.0  # 1: no top-p cut
    seed: int = 0
    min_tokens_to_keep: int = 1  # transformers' name: neither cut keeps fewer tokens than this

    def checked(self) -> "Settings":
        """The settings as numbers, or a clear message for an impossible one."""
        def number(value, key, low, high, whole=False, **fields):
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise UserInputError(key, **fields) from None
            if math.isnan(value) or not low <= value <= high or (whole and value != int(value)):
                raise UserInputError(key, **fields)
            return value

        temperature = number(self.temperature, "sampling.err_temperature", 0, MAX_TEMPERATURE, limit=MAX_TEMPERATURE)
        top_k = int(number(self.top_k, "sampling.err_top_k", 0, math.inf, whole=True))
        top_p = number(self.top_p, "sampling.err_top_p", 0, 1)
        seed = int(number(self.seed, "sampling.err_seed", 0, MAX_SEED, whole=True, limit=f"{MAX_SEED:,}"))
        if int(self.min_tokens_to_keep) < 1:
            raise ValueError("min_tokens_to_keep must be a positive integer, as in transformers")
        return Settings(temperature, top_k, top_p, seed, int(self.min_tokens_to_keep))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def warp(scores: torch.Tensor, settings: Settings) -> torch.Tensor:
    """The scores with −∞ outside the kept set: temperature, then top-k, then top-p, as transformers' warpers
    compute them.  # (..., V) → (..., V), float32"""
    scores = scores.float()
    if settings.greedy:  # the limit of softmax(z/τ) as τ → 0: uniform over the highest scores
        best = scores.max(dim=-1, keepdim=True).values
        return torch.where(scores == best, 0.0, -math.inf)
    if settings.temperature != 1.0:
        scores = scores / settings.temperature  # TemperatureLogitsWarper
    if settings.top_k:  # TopKLogitsWarper
        k = min(max(settings.top_k, settings.min_tokens_to_keep), scores.size(-1))
        kth = torch.topk(scores, k)[0][..., -1, None]
        scores = scores.masked_fill(scores < kth, -math.inf)
    if settings.top_p < 1.0:  # TopPLogitsWarper
        sorted_scores, order = torch.sort(scores, descending=False)
        cumulative = sorted_scores.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= (1 - settings.top_p)
        remove[..., -settings.min_tokens_to_keep:] = False
        scores = scores.masked_fill(remove.scatter(-1, order, remove), -math.inf)
    return scores


@dataclass
class Cut:
    """One step's next-token distribution before and after the cut: the ``shown`` most probable tokens, and, in
    ``rest``, the mass of all the others."""

    tokens: list[str]  # (n,) most probable first
    ids: list[int]  # (n,)
    original: np.ndarray  # (n,) softmax(z): the model's own distribution (τ = 1, no cut)
    tempered: np.ndarray  # (n,) softmax(z/τ): the distribution the cut is made on
    kept: np.ndarray  # (n,) bool: in the kept set
    renormalised: np.ndarray  # (n,) q: softmax(z/τ) over the kept set, what the draw uses (0 if cut)
    rest: tuple[float, float, float]  # the other tokens' mass: original, tempered, renormalised
    kept_count: int  # over the whole vocabulary
    kept_mass: float  # Σ softmax(z/τ) over the kept set: what top-p compares with p
    kept_mass_original: float  # Σ softmax(z) over the kept set
    candidates: int  # tokens with a score above −∞ (the vocabulary less the tokens never drawn)
    settings: Settings = field(default_factory=Settings)

    def kept_tokens(self) -> list[tuple[str, float]]:
        """(token, q) of the kept tokens among the shown ones, most probable first."""
        return [(token, float(q)) for token, q, kept in zip(self.tokens, self.renormalised, self.kept) if kept]


def cut(scores: torch.Tensor | np.ndarray, settings: Settings, label: Callable[[int], str] = str, shown: int = SHOWN,
        processed: torch.Tensor | None = None) -> Cut:
    """What the figure shows for one step (``processed``: warp(scores), when the caller has it already)."""
    scores = torch.as_tensor(scores).float().reshape(-1)  # (V,)
    processed = warp(scores, settings) if processed is None else processed.reshape(-1)
    original = scores.softmax(-1)
    tempered = warp(scores, replace(settings, top_k=0, top_p=1.0)).softmax(-1)
    final = processed.softmax(-1)
    kept = torch.isfinite(processed)
    candidates = int(torch.isfinite(scores).sum())
    # Most probable first (the model's order: temperature keeps it, and at τ = 0 the tokens after the first keep theirs)
    order = torch.sort(original, descending=True, stable=True).indices[:min(shown, candidates)]

    def shown_values(values: torch.Tensor) -> np.ndarray:
        return values[order].double().cpu().numpy()

    def others(values: torch.Tensor) -> float:
        return max(0.0, 1 - float(values[order].double().sum()))

    return Cut(tokens=[label(i) for i in order.tolist()], ids=order.tolist(), original=shown_values(original),
               tempered=shown_values(tempered), kept=kept[order].cpu().numpy(), renormalised=shown_values(final),
               rest=(others(original), others(tempered), others(final)), kept_count=int(kept.sum()),
               kept_mass=float(tempered[kept].double().sum()), kept_mass_original=float(original[kept].double().sum()),
               candidates=candidates, settings=settings)


@dataclass
class Draw:
    token: int
    probability: float  # q of the drawn token: its renormalised probability
    cut: Cut


class Sampler:
    """Draws for one generation: the settings checked once, one generator seeded once (so a run is reproducible
    and never touches torch's global generator, which other users' requests share). The draws happen on the CPU,
    so a seed writes the same text whatever device the model runs on (transformers on a GPU would draw from CUDA's
    generator instead: its CPU draws are the ones these equal)."""

    def __init__(self, settings: Settings):
        self.settings = settings.checked()
        self.generator = torch.Generator().manual_seed(self.settings.seed)

    def draw(self, scores: torch.Tensor | np.ndarray, label: Callable[[int], str] = str, shown: int = SHOWN) -> Draw:
        """One token from the scores (V,): warp, softmax, torch.multinomial, as transformers' _sample."""
        scores = torch.as_tensor(scores).cpu()
        processed = warp(scores.reshape(-1), self.settings)  # (V,)
        if not torch.isfinite(processed).any():
            raise UserInputError("sampling.err_nothing_to_draw")
        probs = processed.softmax(dim=-1)  # (V,)
        token = int(torch.multinomial(probs, 1, generator=self.generator))
        return Draw(token, float(probs[token]), cut(scores, self.settings, label, shown, processed))
