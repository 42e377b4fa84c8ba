"""T5 (Raffel et al., 2020), the encoder–decoder Transformer of §10 as Google trained it, for t5-small and its kin.

Where it differs from the paper's Transformer (core/nets/seq2seq.py):

    positions     no position vectors: each head adds a learned scalar b(bucket(j − i)) to the score of query i
                  and key j; the buckets are exact for |j − i| < 8 (16 buckets bidirectional, 32 causal), then
                  logarithmic up to max_distance (128). Only the first layer of each stack holds the table; the
                  later layers reuse its bias. Encoder–decoder attention has none.
    attention     softmax(Q Kᵀ + B + M) V, no 1/√d_k (folded into the initialisation)
    LayerNorm     RMS only: x / √(mean(x²) + ε) · g, no mean subtracted, no bias; pre-norm: x + Sublayer(LN(x))
    biases        none, in any Linear
    FFN           max(0, x W_i) W_o ("relu", t5-small), or GELU(x W_i0) ⊙ (x W_i1) W_o ("gated-gelu", T5 v1.1)
    embeddings    one table ``shared`` for encoder input, decoder input and (tied) the output layer, whose input is
                  then scaled by d_model^−½ (T5 v1.1: an output layer of its own, no scaling)

Submodule names equal the checkpoint keys of transformers' T5ForConditionalGeneration (shared, encoder.block.0.layer.0
.SelfAttention.relative_attention_bias, decoder.block.N.layer.1.EncDecAttention.q, lm_head, ...), so a checkpoint
loads strictly after ``normalize_state_dict`` drops the copies of ``shared`` that some files carry.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class T5Config:
    """config.json's fields (their names) that shape the network."""

    model_type: str = "t5"
    vocab_size: int = 32128
    d_model: int = 512
    d_kv: int = 64  # per head: the heads' width need not be d_model / num_heads
    d_ff: int = 2048
    num_layers: int = 6
    num_decoder_layers: int | None = None  # None: as many as the encoder
    num_heads: int = 8
    relative_attention_num_buckets: int = 32
    relative_attention_max_distance: int = 128
    layer_norm_epsilon: float = 1e-6
    feed_forward_proj: str = "relu"
    tie_word_embeddings: bool = True  # lm_head is ``shared`` (t5-small); False: a table of its own (T5 v1.1 files)
    scale_decoder_outputs: bool | None = None  # None: as tie_word_embeddings (transformers 5 writes it explicitly)
    pad_token_id: int = 0
    eos_token_id: int = 1
    decoder_start_token_id: int = 0

    @classmethod
    def from_dict(cls, config: dict) -> "T5Config":
        known = {f.name for f in fields(cls)}
        parsed = cls(**{k: v for k, v in config.items() if k in known and v is not None})
        if parsed.feed_forward_proj not in ("relu", "gated-gelu"):
            raise ValueError(f"T5 feed_forward_proj={parsed.feed_forward_proj!r} is not supported")
        return parsed

    @property
    def scales_output(self) -> bool:
        """Whether the output layer reads the decoder's vector × d_model^−½ (T5 does, T5 v1.1 does not)."""
        return self.tie_word_embeddings if self.scale_decoder_outputs is None else self.scale_decoder_outputs

    @property
    def decoder_layers(self) -> int:
        return self.num_decoder_layers or self.num_layers


def relative_position_bucket(relative_position: torch.Tensor, bidirectional: bool, num_buckets: int,
                             max_distance: int) -> torch.Tensor:
    """The bucket of each offset j − i (Mesh TensorFlow's rule, as transformers computes it)."""
    buckets = torch.zeros_like(relative_position)
    if bidirectional:  # half the buckets for keys after the query, half for keys before
        num_buckets //= 2
        buckets += (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:  # causal: only keys at or before the query count
        distance = -torch.min(relative_position, torch.zeros_like(relative_position))
    exact = num_buckets // 2
    logarithmic = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact)
                           * (num_buckets - exact)).long()
    logarithmic = torch.min(logarithmic, torch.full_like(logarithmic, num_buckets - 1))
    return buckets + torch.where(distance < exact, distance, logarithmic)


class T5LayerNorm(nn.Module):
    """x / √(mean(x²) + ε) · g: scale only, no mean subtracted, no bias."""

    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps)).to(self.weight.dtype)


class T5Attention(nn.Module):
    def __init__(self, config: T5Config, has_relative_bias: bool, bidirectional: bool):
        super().__init__()
        self.n_heads, self.d_kv = config.num_heads, config.d_kv
        inner = config.num_heads * config.d_kv
        self.q = nn.Linear(config.d_model, inner, bias=False)
        self.k = nn.Linear(config.d_model, inner, bias=False)
        self.v = nn.Linear(config.d_model, inner, bias=False)
        self.o = nn.Linear(inner, config.d_model, bias=False)
        self.bidirectional = bidirectional
        self.num_buckets = config.relative_attention_num_buckets
        self.max_distance = config.relative_attention_max_distance
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(self.num_buckets, config.num_heads)

    def position_bias(self, T_q: int, T_k: int) -> torch.Tensor:
        """B: (1, nh, T_q, T_k), one learned scalar per head and bucket of j − i."""
        device = self.relative_attention_bias.weight.device
        offsets = torch.arange(T_k, device=device)[None, :] - torch.arange(T_q, device=device)[:, None]  # (T_q, T_k)
        buckets = relative_position_bucket(offsets, self.bidirectional, self.num_buckets, self.max_distance)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)[None]  # (1, nh, T_q, T_k)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_kv).transpose(1, 2)  # (B, nh, T, d_kv)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, bias: torch.Tensor):
        """bias: B + M, broadcastable to (B, nh, T_q, T_k). Returns the output and the probabilities."""
        B, T, _ = x.shape
        q, k, v = self.split(self.q(x)), self.split(self.k(memory)), self.split(self.v(memory))
        scores = q @ k.transpose(-2, -1) + bias  # (B, nh, T_q, T_k): no 1/√d_k in T5
        probs = scores.float().softmax(dim=-1).type_as(scores)  # (B, nh, T_q, T_k)
        y = (probs @ v).transpose(1, 2).reshape(B, T, self.n_heads * self.d_kv)  # heads concatenated
        return self.o(y), probs


class T5LayerSelfAttention(nn.Module):
    def __init__(self, config: T5Config, has_relative_bias: bool, bidirectional: bool):
        super().__init__()
        self.SelfAttention = T5Attention(config, has_relative_bias, bidirectional)
        self.layer_norm = T5LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, x, bias):
        normed = self.layer_norm(x)
        attended, probs = self.SelfAttention(normed, normed, bias)
        return x + attended, probs


class T5LayerCrossAttention(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.EncDecAttention = T5Attention(config, has_relative_bias=False, bidirectional=True)
        self.layer_norm = T5LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, x, memory, bias):
        attended, probs = self.EncDecAttention(self.layer_norm(x), memory, bias)
        return x + attended, probs


class DenseReluDense(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.gated = config.feed_forward_proj == "gated-gelu"
        if self.gated:
            self.wi_0 = nn.Linear(config.d_model, config.d_ff, bias=False)
            self.wi_1 = nn.Linear(config.d_model, config.d_ff, bias=False)
        else:
            self.wi = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x):
        if self.gated:
            return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))
        return self.wo(F.relu(self.wi(x)))


class T5LayerFF(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.DenseReluDense = DenseReluDense(config)
        self.layer_norm = T5LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, x):
        return x + self.DenseReluDense(self.layer_norm(x))


class T5Block(nn.Module):
    """Encoder: layer.0 self-attention, layer.1 FFN. Decoder: layer.0 masked self-attention, layer.1 encoder–decoder
    attention, layer.2 FFN (§10.3's three sub-layers)."""

    def __init__(self, config: T5Config, is_decoder: bool, first: bool):
        super().__init__()
        self.layer = nn.ModuleList([T5LayerSelfAttention(config, first, bidirectional=not is_decoder)])
        if is_decoder:
            self.layer.append(T5LayerCrossAttention(config))
        self.layer.append(T5LayerFF(config))

    def forward(self, x, self_bias, memory=None, cross_bias=None):
        x, self_probs = self.layer[0](x, self_bias)
        cross_probs = None
        if memory is not None:
            x, cross_probs = self.layer[1](x, memory, cross_bias)
        return self.layer[-1](x), self_probs, cross_probs


class T5Stack(nn.Module):
    def __init__(self, config: T5Config, is_decoder: bool):
        super().__init__()
        n = config.decoder_layers if is_decoder else config.num_layers
        self.block = nn.ModuleList(T5Block(config, is_decoder, first=i == 0) for i in range(n))
        self.final_layer_norm = T5LayerNorm(config.d_model, config.layer_norm_epsilon)

    def forward(self, x, self_mask, memory=None, cross_mask=None):
        """x (B, T, C); masks additive, (B, 1, T_q, T_k) broadcastable. Returns the output and the maps."""
        T = x.size(1)
        bias = self.block[0].layer[0].SelfAttention.position_bias(T, T) + self_mask  # (B, nh, T, T)
        self_maps, cross_maps = [], []
        for block in self.block:
            x, self_probs, cross_probs = block(x, bias, memory, cross_mask)
            self_maps.append(self_probs)
            cross_maps.append(cross_probs)
        return self.final_layer_norm(x), self_maps, cross_maps


@dataclass
class T5Output:
    logits: torch.Tensor  # (B, T, V)
    encoder_last_hidden_state: torch.Tensor  # (B, S, C)
    encoder_attentions: list[torch.Tensor]  # num_layers × (B, nh, S, S)
    decoder_attentions: list[torch.Tensor]  # decoder_layers × (B, nh, T, T)
    cross_attentions: list[torch.Tensor]  # decoder_layers × (B, nh, T, S)


def additive(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """True/False → 0 / the dtype's lowest number, as transformers masks (not −∞, so a fully masked row stays finite)."""
    return (~allowed).to(dtype) * torch.finfo(dtype).min


class T5ForConditionalGeneration(nn.Module):
    def __init__(self, config: T5Config):
        super().__init__()
        self.config = config
        self.shared = nn.Embedding(config.vocab_size, config.d_model)
        self.encoder = T5Stack(config, is_decoder=False)
        self.decoder = T5Stack(config, is_decoder=True)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.shared.weight

    def encode(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        allowed = input_ids.new_ones(input_ids.shape, dtype=torch.bool) if attention_mask is None \
            else attention_mask.bool()
        mask = additive(allowed[:, None, None, :], self.shared.weight.dtype)  # (B, 1, 1, S)
        memory, maps, _ = self.encoder(self.shared(input_ids), mask)
        return memory, maps, mask

    def decode(self, memory: torch.Tensor, cross_mask: torch.Tensor, decoder_input_ids: torch.Tensor):
        T = decoder_input_ids.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=decoder_input_ids.device).tril()[None, None]  # (1,1,T,T)
        y, self_maps, cross_maps = self.decoder(self.shared(decoder_input_ids),
                                                additive(causal, memory.dtype), memory, cross_mask)
        if self.config.scales_output:
            y = y * self.config.d_model ** -0.5  # the (tied) output layer reads a rescaled vector
        return self.lm_head(y), self_maps, cross_maps

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor,
                attention_mask: torch.Tensor | None = None) -> T5Output:
        memory, encoder_maps, mask = self.encode(input_ids, attention_mask)
        logits, self_maps, cross_maps = self.decode(memory, mask, decoder_input_ids)
        return T5Output(logits, memory, encoder_maps, self_maps, cross_maps)

    @torch.inference_mode()
    def greedy(self, input_ids: torch.Tensor, max_new_tokens: int = 40) -> torch.Tensor:
        """Greedy decoding from decoder_start_token_id until </s> (eos) or max_new_tokens; (B, 1 + new)."""
        memory, _, mask = self.encode(input_ids)
        out = torch.full((input_ids.size(0), 1), self.config.decoder_start_token_id, device=input_ids.device)
        done = torch.zeros(input_ids.size(0), dtype=torch.bool, device=input_ids.device)
        for _ in range(max_new_tokens):
            nxt = self.decode(memory, mask, out)[0][:, -1].argmax(-1)  # (B,)
            nxt = torch.where(done, self.config.pad_token_id, nxt)
            out = torch.cat([out, nxt[:, None]], dim=1)
            done |= nxt == self.config.eos_token_id
            if done.all():
                break
        return out


TIED_COPIES = ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")


def normalize_state_dict(state: dict[str, torch.Tensor], model: nn.Module | None = None) -> dict[str, torch.Tensor]:
    """Drop the stacks' copies of ``shared`` and fill a tied lm_head from it."""
    out = {k: v for k, v in state.items() if k not in TIED_COPIES}
    if "shared.weight" not in out:
        out["shared.weight"] = state["encoder.embed_tokens.weight"]
    if model is None or model.config.tie_word_embeddings:
        out.setdefault("lm_head.weight", out["shared.weight"])
    return out
