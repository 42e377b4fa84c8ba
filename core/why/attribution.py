"""Why this answer: which input tokens a prediction leans on (gradient × input, integrated gradients, rollout).

Every method here reads one function of the input token embeddings, f: (B, T, E) → (B,), the score of one answer
(the probability of the masked word, of the next token, of a tag, a class, a span start or end). A model family
plugs in by naming its token-embedding module and a scoring function of the ids (``embedding_function``): a forward
hook swaps that module's output for the embeddings under study, so the model code itself is never changed, and
positions, segments and LayerNorm still apply on top, as in the real forward pass.

    gradient × input      a_i = x_i ⊙ ∂f/∂x_i(x)                                     (Shrikumar et al., 2016)
    integrated gradients  a_i = (x_i − x'_i) ⊙ ∫₀¹ ∂f/∂x_i(x' + α(x − x')) dα       (Sundararajan et al., 2017)
                          ≈ (x_i − x'_i) ⊙ Σ_k w_k ∂f/∂x_i(x' + α_k(x − x'))
    completeness          Σ_i Σ_e a_ie = f(x) − f(x')  for the exact integral; the gap is what the n steps miss
    stages                gradient × input first (one backward pass), then integrated gradients at 4, 8, 16, … steps
                          up to the n asked for, each a fresh n-point rule, each with its gap (attribute_in_stages)
    per token             ‖a_i‖₂ (how much) and Σ_e a_ie (which way: for or against the answer)
    attention rollout     Â_l = rownorm(½ mean_h A_l,h + ½ I),  R = Â_L ⋯ Â_1         (Abnar & Zuidema, 2020)

Conventions. The baseline x' is the [PAD] embedding at every text position of a BERT-like model ([CLS], [SEP] and
[MASK] keep their own), and the zero vector everywhere for the character models (char-GPT, char-BERT, LSTM). The
integral uses captum's default rule, Gauss–Legendre: α_k = (1 + t_k)/2, w_k = u_k/2 for the n Legendre nodes t_k and
weights u_k, all n steps in one batch, so captum's ``IntegratedGradients(method="gausslegendre")`` gives the same
numbers (tested). Gauss–Legendre nodes are not nested (the 8 nodes share none with the 4), so each stage of a
stream computes its own: 4 + 8 + 16 = 28 < 32, so the whole stream to 32 steps costs under twice the 32 steps
alone, and its last stage is exactly captum's computation at that step count. Rollout adds the residual stream as
the identity, averages the heads, renormalises each row, and multiplies the layers; the row of the predicting
position says how much of it each input token reaches. Attention is not explanation (Jain & Wallace, 2019):
rollout shows where information can flow, not what the answer needs.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

EmbeddingFunction = Callable[[torch.Tensor], torch.Tensor]  # (B, T, E) → (B,)
METHODS = ("integrated_gradients", "gradient_x_input")
DEFAULT_STEPS = 32
MAX_STEPS = 256
STAGES = (4, 8, 16, 32, 64, 128)  # the step counts a stream shows on its way to the steps asked for
BATCH_TOKENS = 4096  # interpolation points per forward pass, in tokens: steps × T above this run in chunks


def embedding_function(embedding: nn.Module, ids: torch.Tensor, score: Callable[[torch.Tensor], torch.Tensor]
                       ) -> EmbeddingFunction:
    """f(embeds) for a model whose token embeddings come out of ``embedding``: ``score(ids (B, T)) → (B,)`` runs the
    model, and while it runs the module's output is replaced by ``embeds`` (B, T, E), the rows under study.

    The model is shared by every session, so the hook replaces the output only in the thread that registered it: a
    view running the same model in another thread meanwhile reads its own embeddings."""

    def f(embeds: torch.Tensor) -> torch.Tensor:
        owner = threading.get_ident()

        def swap(module, args, output):
            return embeds.to(output.dtype) if threading.get_ident() == owner else None

        handle = embedding.register_forward_hook(swap)
        try:
            return score(ids.expand(embeds.shape[0], -1))  # (B,)
        finally:
            handle.remove()

    return f


def token_embeddings(embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
    """The embeddings x that the ids (T,) look up: (T, E), detached (the point the attribution is taken at)."""
    with torch.no_grad():
        return embedding(ids[None])[0].detach()


def gauss_legendre(steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Nodes α_k in (0, 1) and weights w_k (summing to 1) of the n-point Gauss–Legendre rule, captum's default."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return torch.tensor(0.5 * (nodes + 1)), torch.tensor(0.5 * weights)


def gradient(f: EmbeddingFunction, points: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """∂f/∂x at a batch of points (S, T, E), all in one forward and one backward pass; returns (f, gradients)."""
    with torch.enable_grad():
        points = points.detach().requires_grad_(True)
        scores = f(points)  # (S,)
        (grads,) = torch.autograd.grad(scores.sum(), points)  # rows are independent, so ∂Σf/∂x_s = ∂f_s/∂x_s
    return scores.detach(), grads  # (S,), (S, T, E)


def gradient_x_input(f: EmbeddingFunction, x: torch.Tensor) -> torch.Tensor:
    """a = x ⊙ ∂f/∂x(x): (T, E)."""
    _, grads = gradient(f, x[None])
    return x * grads[0]


def quick_views(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, tokens: Sequence[str]
                ) -> list["Attribution"]:
    """Gradient × input of each of the K answers that one pass scores, f: (B, T, E) → (B, K) (the QA span's start
    and end): one forward pass and K backward passes through its graph, instead of K of each."""
    with torch.enable_grad():
        point = x[None].detach().requires_grad_(True)  # (1, T, E)
        scores = f(point)[0]  # (K,)
        views = []
        for k, score in enumerate(scores):
            (grads,) = torch.autograd.grad(score, point, retain_graph=k + 1 < len(scores))  # (1, T, E)
            views.append(Attribution("gradient_x_input", list(tokens), (x * grads[0]).detach().float().cpu(),
                                     float(score), float("nan"), 0))
    return views


def integrated_gradients(f: EmbeddingFunction, x: torch.Tensor, baseline: torch.Tensor,
                         steps: int = DEFAULT_STEPS) -> torch.Tensor:
    """(x − x') ⊙ Σ_k w_k ∂f/∂x(x' + α_k (x − x')) with Gauss–Legendre α, w: (T, E). The n steps are one batch,
    or a few of at most BATCH_TOKENS tokens each for long inputs (memory grows with steps × T)."""
    alphas, weights = gauss_legendre(steps)
    delta = x - baseline  # (T, E)
    chunk = max(1, BATCH_TOKENS // x.shape[0])
    total = torch.zeros_like(x)
    for start in range(0, steps, chunk):
        a, w = alphas[start:start + chunk].to(x), weights[start:start + chunk].to(x)
        points = baseline[None] + a[:, None, None] * delta[None]  # (S, T, E)
        _, grads = gradient(f, points)
        total += torch.einsum("s,ste->te", w, grads)
    return delta * total  # (T, E)


@dataclass
class Attribution:
    """One method's attributions to the input tokens, with the numbers that say how far to trust them."""

    method: str  # one of METHODS
    tokens: list[str]  # the input as the model reads it
    values: torch.Tensor  # (T, E) per token, per embedding dimension
    score: float  # f(x): the answer's score on the real input
    baseline_score: float  # f(x'): on the baseline (integrated gradients; nan for gradient × input)
    steps: int  # integration steps (0 for gradient × input)

    @property
    def l2(self) -> list[float]:
        return self.values.norm(dim=-1).tolist()  # ‖a_i‖₂

    @property
    def signed(self) -> list[float]:
        return self.values.sum(dim=-1).tolist()  # Σ_e a_ie

    @property
    def total(self) -> float:
        return float(self.values.sum())

    @property
    def gap(self) -> float:
        """Σ a − (f(x) − f(x')): zero for exact integrated gradients; gradient × input promises nothing."""
        return self.total - (self.score - self.baseline_score)


def attribute(f: EmbeddingFunction, x: torch.Tensor, baseline: torch.Tensor, tokens: Sequence[str],
              method: str = "integrated_gradients", steps: int = DEFAULT_STEPS) -> Attribution:
    """Run one method and score the input and the baseline (one extra forward pass of two rows, no gradient)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}")
    if method == "integrated_gradients" and not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must lie in 1..{MAX_STEPS}")
    if method == "integrated_gradients":
        values = integrated_gradients(f, x, baseline, steps)
    else:
        values, steps = gradient_x_input(f, x), 0
    with torch.no_grad():
        ends = f(torch.stack([x, baseline])).float()  # (2,)
    baseline_score = float(ends[1]) if method == "integrated_gradients" else float("nan")
    return Attribution(method, list(tokens), values.detach().float().cpu(), float(ends[0]), baseline_score, steps)


def stage_steps(steps: int, stream: bool = True) -> list[int]:
    """The step counts of integrated gradients a stream computes on its way to ``steps``: each of STAGES below it,
    then ``steps`` itself (32 → 4, 8, 16, 32; 20 → 4, 8, 16, 20; 3 → 3). ``stream`` False: ``steps`` alone."""
    return [n for n in STAGES if n < steps and stream] + [steps]


def attribute_in_stages(f: EmbeddingFunction, x: torch.Tensor, baseline: torch.Tensor, tokens: Sequence[str],
                        steps: int = DEFAULT_STEPS, stream: bool = True, quick: Attribution | None = None
                        ) -> Iterator[list[Attribution]]:
    """The methods computed so far, as they are ready: [gradient × input] after one forward and backward pass (or
    ``quick``, when the caller's quick_views computed it already), then [integrated gradients at n steps, gradient ×
    input] for each n of stage_steps(steps, stream). f(x) comes from the gradient pass and f(x') from one forward
    pass after the quick view, shared by every stage (the gap of each is its own)."""
    if not 1 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must lie in 1..{MAX_STEPS}")
    if quick is None:
        [quick] = quick_views(lambda embeds: f(embeds)[:, None], x, tokens)
    score = quick.score
    yield [quick]
    with torch.no_grad():  # after the quick view: it does not need f(x')
        baseline_score = float(f(baseline[None]).float()[0])
    for n in stage_steps(steps, stream):
        values = integrated_gradients(f, x, baseline, n).detach().float().cpu()
        yield [Attribution("integrated_gradients", list(tokens), values, score, baseline_score, n), quick]


def attention_rollout(attentions: Sequence[torch.Tensor]) -> np.ndarray:
    """R = Â_L ⋯ Â_1 with Â_l = rownorm(½ mean_h A_l + ½ I), from L maps (nh, T, T) (or (1, nh, T, T)): (T, T).
    Row i is how much the last layer's position i reads of each input position."""
    rollout = None
    for probs in attentions:
        probs = probs.detach().double().cpu()
        mixed = probs.reshape(-1, *probs.shape[-2:]).mean(dim=0)  # (T, T) averaged over heads
        mixed = 0.5 * mixed + 0.5 * torch.eye(mixed.shape[-1], dtype=mixed.dtype)  # the residual stream
        mixed = mixed / mixed.sum(dim=-1, keepdim=True)
        rollout = mixed if rollout is None else mixed @ rollout
    return rollout.numpy()


@dataclass
class Why:
    """What the view shows for one answer: the prediction, both methods' attributions, the rollout row."""

    model_id: str
    target: str  # what is explained, in words (translated by the caller's key)
    answer: str  # the predicted token / tag / class / span end
    probability: float
    tokens: list[str]
    attributions: list[Attribution]
    rollout: list[float] | None  # the predicting position's row of the rollout; None for the LSTM
    baseline: str  # which baseline was used: "zeros" or "pad" (the [PAD] embedding)
    notes: list[str] = field(default_factory=list)
    steps: int = 0  # the integration steps the explanation ends at (a stage before the last has fewer, or none yet)

    @property
    def integrated(self) -> Attribution | None:
        """Integrated gradients at this stage; None in the quick first view (gradient × input and rollout only)."""
        return next((a for a in self.attributions if a.method == "integrated_gradients"), None)

    @property
    def final(self) -> bool:
        return self.integrated is not None and self.integrated.steps == self.steps


def last(stages):
    """The last item of a stream of stages: the final answer."""
    item = None
    for item in stages:
        pass
    return item
