"""Attention, equation by equation (seed §8–§11), and the attention maps of a real pretrained BERT.

Toy equations run in float64 NumPy on small matrices, so every intermediate can be shown:
  score      dot qᵀk · general qᵀWk · concat vᵀtanh(W[q; k]) · additive vᵀtanh(Wq + Uk)
  attention  Attention(Q, K, V) = softmax(QKᵀ / √d_k) V
  causal     scores above the diagonal set to −∞ before the softmax, so token t sees only tokens ≤ t
  multi-head headᵢ = Attention(X W_Qⁱ, X W_Kⁱ, X W_Vⁱ); MultiHead(X) = Concat(head₁ … head_h) W_O
  position   PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))
The real-model part runs a BERT-family encoder (core/nets/) and returns its per-layer, per-head softmax probabilities.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from core.text import i18n
from core.loading import registry
from core.loading.checkpoints import model_id_or_default
from core.loading.cache import bounded_cache
from core.text.errors import UserInputError
from core.text.limits import MAX_MODEL_TOKENS, MAX_TEXT_CHARS
from core.nets.distilbert import sinusoidal_table
from core.text.textio import normalize_text
from core.text.tokenizer import Truncation

MAX_TOY_TOKENS = 16  # rows of a hand-edited Q/K/V
MAX_TOY_DIM = 512  # columns of a hand-edited Q/K/V or x
MAX_ABS_VALUE = 1e6  # larger entries only overflow the softmax; refuse them with a message


# ------------------------------------------------------------------------------------------------------------------
# Small pieces


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax; subtracting the row max changes nothing mathematically and keeps exp() finite."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)  # exp(−∞) = 0: masked entries get probability 0
    return exp / exp.sum(axis=-1, keepdims=True)


def as_matrix(values, name: str, max_rows: int = MAX_TOY_TOKENS, max_cols: int = MAX_TOY_DIM) -> np.ndarray:
    """A 2-D float64 matrix from nested lists, or a UserInputError that names the bad cell."""
    values = values.to_numpy() if hasattr(values, "to_numpy") else values  # a pandas DataFrame from the UI
    rows = [list(row) for row in (values.tolist() if isinstance(values, np.ndarray) else values)]
    rows = [row for row in rows if any(str(cell).strip() not in ("", "None", "nan") for cell in row)]
    if not rows:
        raise UserInputError("attention.matrix_empty", name=name)
    if len({len(row) for row in rows}) != 1:
        raise UserInputError("attention.matrix_ragged", name=name)
    if len(rows) > max_rows or len(rows[0]) > max_cols:  # before any cell is read: a huge paste costs nothing
        raise UserInputError("attention.matrix_too_big", name=name, rows=len(rows), cols=len(rows[0]),
                             max_rows=max_rows, max_cols=max_cols)
    out = np.empty((len(rows), len(rows[0])))
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            try:
                out[r, c] = float(cell)
            except (TypeError, ValueError):
                raise UserInputError("attention.matrix_not_number", name=name, row=r + 1, column=c + 1,
                                     cell=cell) from None
    if not np.isfinite(out).all() or np.abs(out).max() > MAX_ABS_VALUE:
        raise UserInputError("attention.matrix_not_finite", name=name, limit=f"{MAX_ABS_VALUE:g}")
    return out


def causal_mask(T: int) -> np.ndarray:
    """(T, T) booleans, True on and below the diagonal: query t may look at keys 0..t (a decoder's mask)."""
    return np.tril(np.ones((T, T), dtype=bool))


# ------------------------------------------------------------------------------------------------------------------
# Score functions (seed §8): how well query q matches key k


SCORE_KINDS = ("scaled_dot", "dot", "general", "concat", "additive")


@dataclass
class ScoreParams:
    """The learned parameters of the non-dot score functions (random here; learned in a real model)."""

    W: np.ndarray | None = None  # general: (d_q, d_k); concat: (d_a, d_q + d_k); additive: (d_a, d_q)
    U: np.ndarray | None = None  # additive: (d_a, d_k)
    v: np.ndarray | None = None  # concat, additive: (d_a,)


def random_score_params(kind: str, d_q: int, d_k: int, d_a: int = 8, seed: int = 0) -> ScoreParams:
    rng = np.random.default_rng(seed)
    if kind == "general":
        return ScoreParams(W=rng.normal(0, 1 / np.sqrt(d_q), (d_q, d_k)))
    if kind == "concat":
        return ScoreParams(W=rng.normal(0, 1 / np.sqrt(d_q + d_k), (d_a, d_q + d_k)), v=rng.normal(0, 1, d_a))
    if kind == "additive":
        return ScoreParams(W=rng.normal(0, 1 / np.sqrt(d_q), (d_a, d_q)), U=rng.normal(0, 1 / np.sqrt(d_k), (d_a, d_k)),
                           v=rng.normal(0, 1, d_a))
    return ScoreParams()


def score_matrix(kind: str, Q: np.ndarray, K: np.ndarray, params: ScoreParams | None = None) -> np.ndarray:
    """(n, m) scores of every query row of Q against every key row of K, before any scaling or softmax."""
    if kind in ("dot", "scaled_dot"):
        if Q.shape[1] != K.shape[1]:
            raise UserInputError("attention.qk_width", q=Q.shape[1], k=K.shape[1])
        return Q @ K.T  # qᵢ·kⱼ
    params = params or random_score_params(kind, Q.shape[1], K.shape[1])
    if kind == "general":
        return Q @ params.W @ K.T  # qᵢᵀ W kⱼ
    if kind == "concat":
        pairs = np.concatenate(np.broadcast_arrays(Q[:, None, :], K[None, :, :]), axis=-1)  # (n, m, d_q + d_k)
        return np.tanh(pairs @ params.W.T) @ params.v  # vᵀ tanh(W [qᵢ; kⱼ])
    if kind == "additive":
        return np.tanh((Q @ params.W.T)[:, None, :] + (K @ params.U.T)[None, :, :]) @ params.v  # vᵀ tanh(Wqᵢ + Ukⱼ)
    raise ValueError(f"unknown score function {kind!r}; one of {SCORE_KINDS}")


# ------------------------------------------------------------------------------------------------------------------
# Scaled dot-product attention, every step kept


@dataclass
class AttentionSteps:
    scores: np.ndarray  # (n, m) QKᵀ (or another score function)
    scaled: np.ndarray  # (n, m) QKᵀ / √d_k (= scores for unscaled score functions)
    masked: np.ndarray | None  # (n, m) scaled with −∞ above the diagonal, when causal
    probs: np.ndarray  # (n, m) softmax of each row: the attention weights
    output: np.ndarray  # (n, d_v) probs @ V: each row a weighted sum of the value rows
    d_k: int
    scale: float  # √d_k, or 1 when the score function is not scaled

    @property
    def row_sums(self) -> np.ndarray:
        return self.probs.sum(axis=-1)


def scaled_dot_product_attention(Q, K, V, causal: bool = False, kind: str = "scaled_dot",
                                 params: ScoreParams | None = None) -> AttentionSteps:
    """softmax(QKᵀ / √d_k [+ causal mask]) V, returning QKᵀ, the scaled scores, the probabilities and the output."""
    Q, K, V = as_matrix(Q, "Q"), as_matrix(K, "K"), as_matrix(V, "V")
    if K.shape[0] != V.shape[0]:
        raise UserInputError("attention.kv_rows", k=K.shape[0], v=V.shape[0])
    if causal and Q.shape[0] != K.shape[0]:
        raise UserInputError("attention.causal_square")
    scores = score_matrix(kind, Q, K, params)  # (n, m)
    scale = float(np.sqrt(K.shape[1])) if kind == "scaled_dot" else 1.0
    scaled = scores / scale  # ÷ √d_k keeps the softmax out of its flat, saturated region when d_k is large
    masked = np.where(causal_mask(len(Q)), scaled, -np.inf) if causal else None
    probs = softmax(masked if causal else scaled)  # (n, m)
    return AttentionSteps(scores, scaled, masked, probs, probs @ V, K.shape[1], scale)


def project(x, W_Q, W_K, W_V) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q = x W_Q, K = x W_K, V = x W_V: one row per token."""
    x = as_matrix(x, "x")
    mats = {name: as_matrix(w, name, max_rows=MAX_TOY_DIM) for name, w in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V))}
    for name, w in mats.items():
        if w.shape[0] != x.shape[1]:
            raise UserInputError("attention.w_rows", cols=x.shape[1], name=name, rows=w.shape[0])
    return x @ mats["W_Q"], x @ mats["W_K"], x @ mats["W_V"]


def i_have_a_dream() -> dict[str, np.ndarray]:
    """A 4-token preset for masked self-attention: x (one row per word of "i have a dream") and W_Q, W_K, W_V."""
    rng = np.random.default_rng(314)  # a seed whose masked rows spread their weight (readable)
    return {"x": rng.integers(-2, 3, (4, 4)).astype(float),
            **{name: rng.integers(-1, 2, (4, 4)).astype(float) for name in ("W_Q", "W_K", "W_V")}}


# ------------------------------------------------------------------------------------------------------------------
# Multi-head attention, with every shape on the way


@dataclass
class Step:
    name: str
    equation: str
    shape: tuple[int, ...]


@dataclass
class MultiHeadResult:
    tokens: list[str]
    heads: int
    d_model: int
    d_head: int
    head_probs: np.ndarray  # (h, T, T) one attention map per head
    head_outputs: np.ndarray  # (h, T, d_head)
    concat: np.ndarray  # (T, d_model)
    output: np.ndarray  # (T, d_model) concat @ W_O
    steps: list[Step]


@dataclass
class MultiHeadWeights:
    W_Q: np.ndarray  # (d_model, d_model): column block i is head i's W_Qⁱ (d_model, d_head)
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray  # (d_model, d_model)


@lru_cache(maxsize=8)
def random_weights(d_model: int, seed: int = 0) -> MultiHeadWeights:
    rng = np.random.default_rng(seed)
    return MultiHeadWeights(*(rng.normal(0, 1 / np.sqrt(d_model), (d_model, d_model)) for _ in range(4)))


def word_embeddings(words: list[str], d_model: int) -> np.ndarray:
    """A fixed random vector per word (seeded by the word itself), so a word gets the same vector at any position."""
    return np.stack([np.random.default_rng(zlib.crc32(w.encode("utf-8"))).normal(0, 1, d_model) for w in words])


def split_words(sentence: str, max_words: int = MAX_TOY_TOKENS) -> list[str]:
    words = normalize_text(sentence or "").split()
    if not words:
        raise UserInputError("attention.no_words")
    if len(words) > max_words:
        raise UserInputError("attention.too_many_words", limit=max_words, count=len(words))
    return words


def multi_head_attention(x: np.ndarray, weights: MultiHeadWeights, heads: int, tokens: list[str] | None = None,
                         causal: bool = False) -> MultiHeadResult:
    """MultiHead(x) = Concat(head₁ … head_h) W_O with headᵢ = softmax(QᵢKᵢᵀ / √d_head) Vᵢ (seed §10)."""
    T, d_model = x.shape
    if heads < 1 or d_model % heads:
        raise UserInputError("attention.heads_divide", d_model=d_model, heads=heads)
    d_head = d_model // heads
    Q, K, V = x @ weights.W_Q, x @ weights.W_K, x @ weights.W_V  # (T, d_model) each

    def split(m):
        return m.reshape(T, heads, d_head).transpose(1, 0, 2)  # (h, T, d_head): head i owns columns i·d_head…

    Qh, Kh, Vh = split(Q), split(K), split(V)
    scores = Qh @ Kh.transpose(0, 2, 1) / np.sqrt(d_head)  # (h, T, T)
    if causal:
        scores = np.where(causal_mask(T), scores, -np.inf)
    probs = softmax(scores)  # (h, T, T)
    head_out = probs @ Vh  # (h, T, d_head)
    concat = head_out.transpose(1, 0, 2).reshape(T, d_model)  # (T, h·d_head) = (T, d_model)
    output = concat @ weights.W_O  # (T, d_model)
    say = i18n.text  # step names and notes in the learner's language (the formulas are the same in both)
    steps = [
        Step(say("attention.mh_input"), say("attention.mh_input_eq"), (T, d_model)),
        Step("W_Q, W_K, W_V", say("attention.mh_weights_eq"), (d_model, d_model)),
        Step("Q, K, V", say("attention.mh_qkv_eq"), (T, d_model)),
        Step(say("attention.mh_split"), say("attention.mh_split_eq", d_model=d_model, heads=heads),
             (heads, T, d_head)),
        Step(say("attention.mh_per_head"), f"W_Q[:, {d_head}·i : {d_head}·(i+1)]", (d_model, d_head)),
        Step(say("attention.mh_scores"), "Qᵢ Kᵢᵀ / √d_head" + (say("attention.mh_plus_mask") if causal else ""),
             (heads, T, T)),
        Step(say("attention.mh_weights"), say("attention.mh_weights_softmax"), (heads, T, T)),
        Step(say("attention.mh_head_outputs"), "headᵢ = weightsᵢ Vᵢ", (heads, T, d_head)),
        Step(say("attention.mh_concat"), "Concat(head₁ … head_h)", (T, d_model)),
        Step("W_O", say("attention.mh_output_projection"), (d_model, d_model)),
        Step(say("attention.mh_output"), "Concat(…) W_O", (T, d_model)),
    ]
    return MultiHeadResult(tokens or [str(t) for t in range(T)], heads, d_model, d_head, probs, head_out, concat,
                           output, steps)


# ------------------------------------------------------------------------------------------------------------------
# Positional encoding and permutation equivariance (seed §11)


def positional_encoding(positions: int, d_model: int) -> np.ndarray:
    """(positions, d_model) sinusoidal table; the one definition is core/nets/distilbert.py's."""
    if not 1 <= positions <= 2048 or not 2 <= d_model <= 1024:
        raise UserInputError("attention.pe_range")
    return sinusoidal_table(positions, d_model).double().numpy()


@dataclass
class PermutationResult:
    words: list[str]
    order: list[int]  # shuffled[j] = words[order[j]]
    shuffled: list[str]
    plain: np.ndarray  # (T, d) outputs for the original order, no positions
    plain_shuffled: np.ndarray  # (T, d) outputs for the shuffled order, no positions
    with_pe: np.ndarray  # (T, d) original order, x + PE
    with_pe_shuffled: np.ndarray  # (T, d) shuffled order, x + PE

    def word_change(self, with_positions: bool) -> np.ndarray:
        """‖z(word in shuffled sentence) − z(same word in original)‖ for each shuffled slot j."""
        a, b = (self.with_pe, self.with_pe_shuffled) if with_positions else (self.plain, self.plain_shuffled)
        return np.linalg.norm(b - a[self.order], axis=-1)


def shuffle_order(T: int, seed: int) -> list[int]:
    """A random permutation of range(T) that is not the identity (T ≥ 2)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(T)
    if (order == np.arange(T)).all():
        order = np.roll(order, 1)
    return order.tolist()


def permutation_demo(sentence: str, seed: int = 0, d_model: int = 64) -> PermutationResult:
    """Self-attention with and without PE on a sentence and on a shuffle of it.

    Without positions, attention is permutation-equivariant: shuffling the input rows shuffles the output rows the
    same way (z'ⱼ = z_order[j]) and changes nothing else. Adding PE breaks this, which is how word order gets in."""
    words = split_words(sentence)
    if len(words) < 2:
        raise UserInputError("attention.shuffle_two_words")
    order = shuffle_order(len(words), seed)
    weights = random_weights(d_model, seed=1)
    x = word_embeddings(words, d_model)  # (T, d)
    pe = positional_encoding(len(words), d_model)  # (T, d)

    def attend(inputs):
        return multi_head_attention(inputs, weights, heads=1).output  # (T, d)

    return PermutationResult(words, order, [words[i] for i in order], attend(x), attend(x[order]), attend(x + pe),
                             attend(x[order] + pe))


# ------------------------------------------------------------------------------------------------------------------
# A real model's attention maps


@dataclass
class AttentionMaps:
    tokens: list[str]  # WordPiece tokens, [CLS] … [SEP] (… [SEP])
    segment_ids: list[int]
    special: np.ndarray  # (T,) bool, True for [CLS]/[SEP]
    probs: np.ndarray  # (L, A, T, T) float32 softmax probabilities: layer, head, query, key (read-only)
    truncation: Truncation | None
    badge: str

    @property
    def layers(self) -> int:
        return self.probs.shape[0]

    @property
    def heads(self) -> int:
        return self.probs.shape[1]


def extract_attention(text: str, pair: str | None = None, model_id: str | None = None) -> AttentionMaps:
    """Tokenise (truncating to the model's length and reporting it), run the encoder, collect every attention map.

    Cached for the last few inputs, so redrawing another layer or head does not rerun the model."""
    text, pair = normalize_text(text or "").strip(), normalize_text(pair or "").strip() or None
    if not text:
        raise UserInputError("attention.empty_text")
    if len(text) + len(pair or "") > MAX_TEXT_CHARS:
        raise UserInputError("attention.too_long", chars=f"{len(text) + len(pair or ''):,}",
                             limit=f"{MAX_TEXT_CHARS:,}")
    return _extract(text, pair, model_id_or_default("encoder", model_id))


# Attention maps of 512 tokens weigh 75 MB (6 layers × 12 heads × 512² float32): the cache keeps at most 160 MB.
@bounded_cache(max_entries=4, max_weight=160e6, weight=lambda args, maps: maps.probs.nbytes)
def _extract(text: str, pair: str | None, model_id: str) -> AttentionMaps:
    loaded = registry.load("encoder", model_id)
    max_length = min(loaded.tokenizer.model_max_length, loaded.config.max_tokens, MAX_MODEL_TOKENS)
    enc = loaded.tokenizer.encode(text, pair, max_length=max_length)
    if not any(m == 0 for m in enc.special_tokens_mask):
        raise UserInputError("attention.no_tokens")
    ids = torch.tensor([enc.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([enc.segment_ids], device=loaded.device)  # (1, T)
    with torch.inference_mode():
        attentions = list(loaded.model(ids, token_type_ids=segments, output_attentions=True).attentions)
    # Copied one layer at a time, each freed once copied: a torch.cat would hold every map twice at its peak (150 MB
    # at 512 tokens instead of 75; issue #38's soak counts such peaks).
    probs = np.empty((len(attentions), *attentions[0].shape[1:]), dtype=np.float32)  # (L, A, T, T)
    for layer in range(len(attentions)):
        probs[layer] = attentions[layer][0].float().cpu().numpy()  # (A, T, T)
        attentions[layer] = None
    probs.setflags(write=False)  # shared through the cache
    return AttentionMaps(enc.tokens, enc.segment_ids, np.array(enc.special_tokens_mask, dtype=bool), probs,
                         enc.truncation, loaded.badge)


def drop_special(probs: np.ndarray, special: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hide [CLS]/[SEP] rows and columns and renormalise each remaining row to sum to 1.

    Returns the renormalised (…, t, t) maps and, per remaining query, the share of its attention that had gone to
    the hidden tokens (often most of it: many heads park attention on [SEP] when they have nothing to do)."""
    keep = ~special
    if not keep.any():
        raise UserInputError("attention.only_special")
    rows = probs[..., keep, :]  # (…, t, T)
    kept = rows[..., keep]  # (…, t, t)
    total = kept.sum(axis=-1, keepdims=True)  # (…, t, 1)
    return kept / np.maximum(total, 1e-12), 1.0 - total[..., 0]
