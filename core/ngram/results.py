"""What core/ngram/ngram.py's NgramModel hands the N-gram tab: counts behind one context, a sentence's chain-rule
factors, the steps of sampling. Plain dataclasses and arrays (the tab turns them into tables and figures); split off
core/ngram/ngram.py, which counts and estimates, to keep each file short. Import them from core.ngram.ngram.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # annotations only: core.text.sampling imports torch, which counting never needs
    from core.text.sampling import Cut

BOS, EOS, UNK = "<s>", "</s>", "<UNK>"



@dataclass
class NextWord:
    word: str
    count: int  # count(context, word)
    p_mle: float
    p: float  # under the chosen smoothing


@dataclass
class ContextCounts:
    """The counts behind P(• | context) for one context."""

    context: tuple[str, ...]  # the context actually used (the last n-1 tokens, padded with <s> when boundaries on)
    context_count: int  # count(context, •)
    followers: list[NextWord]  # seen next tokens, most frequent first
    top: list[tuple[str, float]]  # most probable next tokens under the chosen smoothing (seen or not)
    p_unseen: float  # probability of a token never seen after this context (0 under MLE)
    n_unseen: int  # how many tokens of V were never seen after it


@dataclass
class Factor:
    """One factor P(word | context) of the chain rule."""

    context: tuple[str, ...]
    word: str
    count: int  # count(context, word)
    context_count: int  # count(context, •)
    p: float
    known: bool  # is the word in V


@dataclass
class SentenceScore:
    """The chain rule over one (padded) sentence, computed as arrays; ``factors`` spells it out for the UI."""

    tokens: list[str]
    unknown: list[str]  # tokens not in the corpus, in order of appearance
    padded: list[str]  # the sentence as scored (with <s> … </s> when boundaries are on)
    first: int  # index in padded of the first scored token
    order: int  # the model's n (contexts are the up to n-1 tokens before each scored token)
    p: np.ndarray  # (N,) P(w_i | context) for padded[first:]
    log2_p: np.ndarray  # (N,) log2 of p (-inf where p = 0)
    log2_prob: float  # Σ log2 p: log2 P(sentence)
    counts: np.ndarray  # (N,) count(context, w_i)
    context_counts: np.ndarray  # (N,) count(context, •)
    known_words: np.ndarray  # (N,) bool: is w_i in V (</s> counts as known)
    notes: list[str] = field(default_factory=list)

    @cached_property
    def factors(self) -> list[Factor]:
        return [Factor(tuple(self.padded[max(0, i - self.order + 1):i]), self.padded[i], int(c), int(total), float(p),
                       bool(known))
                for i, c, total, p, known in zip(range(self.first, len(self.padded)), self.counts,
                                                 self.context_counts, self.p, self.known_words)]

    @property
    def probability(self) -> float:
        return math.prod(self.p.tolist())

    @property
    def perplexity(self) -> float:
        """PP = P(w_1..w_N)^(-1/N) = 2^(-log2 P / N): the model's average branching factor on this sentence."""
        return 2.0 ** (-self.log2_prob / len(self.p))


def log2_or_inf(p: np.ndarray) -> np.ndarray:
    """log2 p, with -inf (no warning) where p = 0."""
    return np.log2(p, where=p > 0, out=np.full(np.shape(p), -np.inf))


def log_or_minus_inf(p: np.ndarray) -> np.ndarray:
    """ln p, with -inf (no warning) where p = 0: the scores a sampler draws from."""
    return np.log(p, where=p > 0, out=np.full(np.shape(p), -np.inf))


@dataclass
class Step:
    """One step of sampling: the context, the kept candidates, what was drawn, and the cut (core/sampling.Cut)."""

    context: tuple[str, ...]
    candidates: list[tuple[str, float]]  # kept by the cut (of the shown ones), renormalised, most probable first
    chosen: str
    p_chosen: float  # in the sampling distribution
    cut: Cut | None = None  # the figure's data


@dataclass
class Generation:
    prompt: list[str]
    steps: list[Step]
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> list[str]:
        return self.prompt + [s.chosen for s in self.steps if s.chosen != EOS]
