"""One token's vector through every step of every layer of a real BERT-family encoder (seed §10–§11).

The walk calls the loaded model's own submodules one at a time, in the order its forward pass does, and keeps the
chosen token's row after each of them. Nothing is re-implemented: every weight is the checkpoint's.

  embeddings  x₀ = LayerNorm(token_emb + segment_emb + position_emb)                       (T, H)
  Q, K, V     Q = x W_Q + b_Q, split into A heads of d_k = H / A                            (A, T, d_k)
  weights     α = softmax(q_t Kᵀ / √d_k)   one row per head: how token t spreads its attention  (A, T)
  heads       z = α V per head, concatenated                                                 (T, H)
  W_O         Attn(x) = Concat(z₁ … z_A) W_O + b_O                                           (T, H)
  Add & Norm  x' = LayerNorm(x + Attn(x))                                                    (T, H)
  FFN         FFN(x') = GELU(x' W₁ + b₁) W₂ + b₂                       H → 4H → H            (T, 4H) → (T, H)
  Add & Norm  x'' = LayerNorm(x' + FFN(x'))                                                  (T, H)
repeated for the N layers; BERT is post-norm (the LayerNorm comes after the residual sum), as in the original
Transformer. GELU replaces the original max(0, ·) ReLU.

Per layer it also measures the residual stream: ‖x_ℓ‖; how much each sub-layer adds, ‖Sublayer(x)‖ and its ratio
to ‖x‖; how far the whole sub-layer (with its Add & LayerNorm) moves the vector, ‖x_out − x_in‖ / ‖x_in‖; and
cos(x_ℓ, x₀), how much of the input embedding's direction survives.

The tab's parameter counts from a shape alone (the seed's Transformer base, the loaded encoder's config) are in
core.transformer.param_count.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from torch import nn

from core.loading import registry
from core.loading.checkpoints import model_id_or_default
from core.text.errors import UserInputError
from core.text.limits import MAX_MODEL_TOKENS, MAX_TEXT_CHARS
from core.nets.bert_encoder import attention
from core.text.textio import normalize_text
from core.text.tokenizer import Truncation


@dataclass
class Step:
    """One computation on the way, with the chosen token's slice of its result."""

    layer: int  # 0 = embeddings, 1 … N = encoder layers
    key: str  # short id: "q", "probs", "ffn1", "ln2", ...
    name: str  # what it is, for a learner
    equation: str  # the formula, in plain Unicode
    shape: tuple[int, ...]  # the whole tensor's shape (batch dimension dropped)
    dims: str  # what the shape's axes are, e.g. "A × T × d_k"
    vector: np.ndarray  # the chosen token's slice: (H,), (4H,), (A, d_k) or (A, T) for the attention weights
    norm: float | None  # ‖vector‖; None for the attention weights (each row is a distribution, not a vector)

    @property
    def label(self) -> str:
        return f"L{self.layer} {self.name}" if self.layer else self.name


@dataclass
class BlockWalk:
    """Everything the "Inside a block" view shows, for one text, one checkpoint and one token."""

    tokens: list[str]
    index: int  # the followed token's position
    steps: list[Step]
    attention: np.ndarray  # (L, A, T) the followed token's attention weights, per layer and head
    hidden_states: np.ndarray  # (L+1, T, H) every token's vector after the embeddings and after each layer
    residual_norm: np.ndarray  # (L+1,) ‖x_ℓ‖ of the followed token
    cosine_to_input: np.ndarray  # (L+1,) cos(x_ℓ, x₀)
    attention_update: np.ndarray  # (L,) ‖Attn(x) W_O‖, what self-attention adds to the residual stream
    ffn_update: np.ndarray  # (L,) ‖FFN(x')‖
    attention_moved: np.ndarray  # (L,) ‖x' − x‖ / ‖x‖ across the attention sub-layer, Add & LayerNorm included
    ffn_moved: np.ndarray  # (L,) ‖x'' − x'‖ / ‖x'‖ across the FFN sub-layer
    attention_update_relative: np.ndarray  # (L,) ‖Attn(x) W_O‖ / ‖x‖
    ffn_update_relative: np.ndarray  # (L,) ‖FFN(x')‖ / ‖x'‖
    layers: int
    hidden_size: int
    heads: int
    intermediate_size: int
    activation: str
    truncation: Truncation | None
    badge: str

    @property
    def token(self) -> str:
        return self.tokens[self.index]

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.heads

    def layer_steps(self, layer: int) -> list[Step]:
        return [step for step in self.steps if step.layer == layer]

    def same_token_elsewhere(self) -> int | None:
        """The next other position holding the same token ("bank … bank"), if any."""
        others = [i for i, t in enumerate(self.tokens) if t == self.token and i != self.index]
        return others[0] if others else None

    def cosine_with(self, other: int) -> np.ndarray:
        """(L+1,) cos(x_ℓ[this token], x_ℓ[other]) at every layer: how alike two positions' vectors are."""
        a, b = self.hidden_states[:, self.index], self.hidden_states[:, other]  # (L+1, H)
        return (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)


ACTIVATION_NAMES = {"gelu": "GELU", "gelu_new": "GELU (tanh)", "gelu_pytorch_tanh": "GELU (tanh)", "relu": "ReLU"}


# ------------------------------------------------------------------------------------------------------------------
# Input checks


@dataclass
class Tokenized:
    tokens: list[str]
    ids: list[int]
    segment_ids: list[int]
    truncation: Truncation | None


def check_text(text: object) -> str:
    text = normalize_text(str(text or "")).strip()
    if not text:
        raise UserInputError("transformer.empty_text")
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("transformer.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    return text


def tokenize(text: str, model_id: str | None = None) -> Tokenized:
    """WordPiece tokens with [CLS]/[SEP], cut to the model's length (the cut is reported, not hidden)."""
    text = check_text(text)
    return _tokenize(text, model_id_or_default("encoder", model_id))


@lru_cache(maxsize=16)
def _tokenize(text: str, model_id: str) -> Tokenized:
    loaded = registry.load("encoder", model_id)
    max_length = min(loaded.tokenizer.model_max_length, loaded.config.max_tokens, MAX_MODEL_TOKENS)
    enc = loaded.tokenizer.encode(text, None, max_length=max_length)
    if all(enc.special_tokens_mask):
        raise UserInputError("transformer.no_tokens")
    return Tokenized(enc.tokens, enc.ids, enc.segment_ids, enc.truncation)


def token_choices(tokens: list[str]) -> list[str]:
    """How the token picker lists them: "3 · bank"."""
    return [f"{i} · {token}" for i, token in enumerate(tokens)]


def pick_token(tokens: list[str], choice: object) -> int:
    """The position of the chosen token: an index, "3 · bank" from the picker, or a token's text (first match).
    None or "" picks the first token after [CLS]."""
    if choice is None or (isinstance(choice, str) and not choice.strip()):
        return min(1, len(tokens) - 1)
    if isinstance(choice, float) and not np.isfinite(choice):
        raise UserInputError("transformer.pick_token")
    text = str(choice).strip()
    head = text.split("·", 1)[0].strip()
    try:
        index = int(float(head)) if isinstance(choice, (int, float)) or head.lstrip("-").isdigit() else None
    except (ValueError, OverflowError):
        index = None
    if index is None:
        word = text.split("·", 1)[-1].strip().lower()
        matches = [i for i, token in enumerate(tokens) if token.lower() == word]
        if not matches:
            raise UserInputError("transformer.not_a_token", token=text[:40])
        return matches[0]
    if not 0 <= index < len(tokens):
        raise UserInputError("transformer.no_such_token", index=index, count=len(tokens), last=len(tokens) - 1)
    return index


# ------------------------------------------------------------------------------------------------------------------
# The walk


def walk(text: object, model_id: str | None = None, token: object = None) -> BlockWalk:
    """Follow one token of ``text`` through the encoder ``model_id`` (default MiniLM-L6). Cached per input."""
    text, model_id = check_text(text), model_id_or_default("encoder", model_id)
    return _walk(text, model_id, pick_token(_tokenize(text, model_id).tokens, token))


@lru_cache(maxsize=4)  # the layer slider redraws from here; each entry holds (L+1, T, H) hidden states
def _walk(text: str, model_id: str, index: int) -> BlockWalk:
    loaded = registry.load("encoder", model_id)
    tokenized = _tokenize(text, model_id)
    config = loaded.config
    ids = torch.tensor([tokenized.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([tokenized.segment_ids], device=loaded.device)  # (1, T)
    with torch.inference_mode():
        steps, hidden, probs = trace(loaded.model.base, ids, segments, index)
    x = hidden[:, index]  # (L+1, H)
    norms = np.linalg.norm(x, axis=1)
    ln_after_attention = np.stack([s.vector for s in steps if s.key == "ln1"])  # (L, H) x'
    attn_add = np.array([s.norm for s in steps if s.key == "wo"])
    ffn_add = np.array([s.norm for s in steps if s.key == "ffn2"])
    x_in, x_mid, x_out = x[:-1], ln_after_attention, x[1:]
    return BlockWalk(
        tokens=tokenized.tokens, index=index, steps=steps, attention=probs, hidden_states=hidden,
        residual_norm=norms, cosine_to_input=(x @ x[0]) / np.maximum(norms * norms[0], 1e-12),
        attention_update=attn_add, ffn_update=ffn_add,
        attention_moved=np.linalg.norm(x_mid - x_in, axis=1) / norms[:-1],
        ffn_moved=np.linalg.norm(x_out - x_mid, axis=1) / np.linalg.norm(x_mid, axis=1),
        attention_update_relative=attn_add / norms[:-1], ffn_update_relative=ffn_add / np.linalg.norm(x_mid, axis=1),
        layers=config.num_hidden_layers, hidden_size=config.hidden_size, heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size, activation=config.hidden_act, truncation=tokenized.truncation, badge=loaded.badge,
    )


def trace(base: nn.Module, ids: torch.Tensor, segments: torch.Tensor,
          index: int) -> tuple[list[Step], np.ndarray, np.ndarray]:
    """Run ``base`` (a bare encoder of the BERT family) submodule by submodule on one unpadded sequence.

    Returns the steps (token ``index``'s slices), every token's hidden states (L+1, T, H) and the token's attention
    weights (L, A, T). Equals ``base(ids)`` exactly up to float rounding (tests/transformer/test_transformer.py)."""
    T, A = ids.shape[1], base.config.num_attention_heads
    act = ACTIVATION_NAMES.get(base.config.hidden_act, base.config.hidden_act)
    steps: list[Step] = []

    def keep(layer, key, name, equation, dims, tensor, vector=None, norm=True):
        vector = (tensor[0, index] if vector is None else vector).float().cpu().numpy()  # the token's slice
        shape = tuple(tensor.shape[1:])
        steps.append(Step(layer, key, name, equation, shape, dims, vector,
                          float(np.linalg.norm(vector)) if norm else None))

    emb = base.embeddings
    parts = emb.components(ids, segments)  # token, segment (BERT only), position: each (1|B, T, H)
    keep(0, "token", "token embedding", "E_token[id]", "T × H", parts["token"])
    if "segment" in parts:
        keep(0, "segment", "segment embedding", "E_segment[A or B]", "T × H", parts["segment"])
    keep(0, "position", "position embedding", "E_position[t]", "T × H", parts["position"].expand_as(parts["token"]))
    summed = sum(parts.values())  # (1, T, H)
    keep(0, "sum", "sum of embeddings", " + ".join(parts), "T × H", summed)
    x = emb.LayerNorm(summed)  # (1, T, H)
    keep(0, "ln", "embedding LayerNorm", "x₀ = LayerNorm(sum)", "T × H", x)
    hidden, weights = [x], []
    for number, layer in enumerate(base.layers, start=1):
        p = layer.block_parts()  # its submodules in forward order, under whatever names its family gives them
        hs = x.shape[-1] // A

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(1, T, A, hs).transpose(1, 2)  # (1, A, T, d_k)

        q, k, v = heads(p.query(x)), heads(p.key(x)), heads(p.value(x))  # (1, A, T, d_k)
        for key, tensor, letter in (("q", q, "Q"), ("k", k, "K"), ("v", v, "V")):
            keep(number, key, f"{letter} (per head)", f"{letter} = x W_{letter} + b_{letter}, split into heads",
                 "A × T × d_k", tensor, vector=tensor[0, :, index])  # (A, d_k)
        context, probs = attention(q, k, v, None, True)  # (1, A, T, d_k), (1, A, T, T)
        keep(number, "probs", "attention weights", "α = softmax(q Kᵀ / √d_k)", "A × T × T", probs,
             vector=probs[0, :, index], norm=False)  # (A, T)
        weights.append(probs[0, :, index].float().cpu().numpy())
        keep(number, "heads", "heads' outputs", "z = α V (per head)", "A × T × d_k", context,
             vector=context[0, :, index])
        concat = context.transpose(1, 2).reshape(1, T, A * hs)  # (1, T, H)
        keep(number, "concat", "concat heads", "Concat(z₁ … z_A)", "T × H", concat)
        attended = p.attention_output(concat)  # (1, T, H)
        keep(number, "wo", "× W_O", "Attn(x) = Concat(z) W_O + b_O", "T × H", attended)
        added = x + attended
        keep(number, "add1", "add (residual)", "x + Attn(x)", "T × H", added)
        x = p.attention_norm(added)  # (1, T, H)
        keep(number, "ln1", "LayerNorm", "x' = LayerNorm(x + Attn(x))", "T × H", x)
        inner = p.ffn_in(x)  # (1, T, 4H)
        keep(number, "ffn1", "FFN: x W₁ + b₁", "h = x' W₁ + b₁", "T × 4H", inner)
        activated = p.activation(inner)  # (1, T, 4H)
        keep(number, "act", act, f"g = {act}(h)", "T × 4H", activated)
        outer = p.ffn_out(activated)  # (1, T, H)
        keep(number, "ffn2", "FFN: g W₂ + b₂", "FFN(x') = g W₂ + b₂", "T × H", outer)
        added = x + outer
        keep(number, "add2", "add (residual)", "x' + FFN(x')", "T × H", added)
        x = p.ffn_norm(added)  # (1, T, H)
        keep(number, "ln2", "LayerNorm", "x'' = LayerNorm(x' + FFN(x'))", "T × H", x)
        hidden.append(x)
    hidden_states = torch.cat(hidden).float().cpu().numpy()  # (L+1, T, H)
    return steps, hidden_states, np.stack(weights)
