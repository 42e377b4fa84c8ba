"""The Transformer as Vaswani et al. (2017) drew it, an encoder–decoder that translates, in the shape of the
Annotated Transformer (Harvard NLP) and written like core/nets/gpt.py (nanoGPT's style).

    src_embed   x = Embed(src)·√d_model + PE            PE: the fixed sinusoids, PE(pos, 2i) = sin(pos / 10000^(2i/d))
    encoder     per layer, two sub-layers, each LayerNorm(x + Sublayer(x))                                  (§10.2)
                  z = LN(x + SelfAttn(x, x, x, src_mask))
                  r = LN(z + FFN(z)),             FFN(z) = max(0, z W_1 + b_1) W_2 + b_2
    tgt_embed   y = Embed(tgt)·√d_model + PE
    decoder     per layer, three sub-layers                                                                  (§10.3)
                  a = LN(y + SelfAttn(y, y, y, tgt_mask))    masked: position t reads target positions ≤ t
                  c = LN(a + CrossAttn(a, m, m, src_mask))   Q_d from the decoder, K_e and V_e from the encoder's m
                  o = LN(c + FFN(c))
    generator   P(next word) = softmax(o W_out + b_out), one score per target-vocabulary word               (§10.4)

Attention(Q, K, V) = softmax(Q Kᵀ / √d_k + M) V per head, the heads concatenated and multiplied by W_O. M is 0
where reading is allowed and -∞ where not: the source's padding, and in the decoder's self-attention also every
later target position (the causal mask of §11.1). ``Seq2SeqConfig.causal = False`` drops that mask, for the §11.1
experiment: trained so, the decoder sees the very word it must predict.

Every attention returns its probabilities, (B, nh, T_q, T_k), so the views show what each head read. Submodule
names follow the Annotated Transformer (src_embed, encoder.layers.N.self_attn, decoder.layers.N.src_attn, generator).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Seq2SeqConfig:
    src_vocab_size: int = 100
    tgt_vocab_size: int = 100
    d_model: int = 64  # the width of every vector (the paper: 512)
    n_head: int = 4
    d_ff: int = 256  # FFN width (the paper: 2048 = 4 · 512)
    n_encoder_layers: int = 2  # the paper: N = 6
    n_decoder_layers: int = 2
    max_len: int = 64  # the longest sentence the position table covers, either side
    dropout: float = 0.1
    pad_id: int = 0  # the same id on both sides
    causal: bool = True  # the decoder's self-attention masks later target positions (§11.1)

    @classmethod
    def from_dict(cls, config: dict) -> "Seq2SeqConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor | None):
    """softmax(Q Kᵀ / √d_k + M) V; returns (output, probabilities). ``allowed`` is a boolean mask broadcastable to
    (B, nh, T_q, T_k), False where M = -∞."""
    scores = (q / math.sqrt(q.size(-1))) @ k.transpose(-2, -1)  # (B, nh, T_q, T_k)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    probs = scores.softmax(dim=-1)  # (B, nh, T_q, T_k), each row sums to 1
    return probs @ v, probs  # (B, nh, T_q, hs), (B, nh, T_q, T_k)


class MultiHeadAttention(nn.Module):
    """Self-attention when ``memory`` is the query's own sequence; encoder–decoder attention when it is the
    encoder's output (the decoder's queries Q_d against the encoder's keys K_e and values V_e, §11.2)."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        assert config.d_model % config.n_head == 0, "d_model must split evenly into heads"
        self.n_head = config.n_head
        self.q_proj = nn.Linear(config.d_model, config.d_model)  # W_Q, all heads side by side
        self.k_proj = nn.Linear(config.d_model, config.d_model)  # W_K
        self.v_proj = nn.Linear(config.d_model, config.d_model)  # W_V
        self.out_proj = nn.Linear(config.d_model, config.d_model)  # W_O

    def split(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        return x.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, allowed: torch.Tensor | None):
        B, T, C = x.shape
        q, k, v = self.split(self.q_proj(x)), self.split(self.k_proj(memory)), self.split(self.v_proj(memory))
        y, probs = attention(q, k, v, allowed)  # (B, nh, T, hs), (B, nh, T, T_k)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C): the heads concatenated
        return self.out_proj(y), probs


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, position by position (the seed's ReLU form)."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff)
        self.w_2 = nn.Linear(config.d_ff, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.dropout(F.relu(self.w_1(x))))  # (B, T, C)


class EncoderLayer(nn.Module):
    """z = LN(x + SelfAttn(x)), r = LN(z + FFN(z)): post-LayerNorm, as the paper and the seed (§10.2) draw it."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.feed_forward = FeedForward(config)
        self.norm1 = nn.LayerNorm(config.d_model)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, src_allowed: torch.Tensor):
        attended, probs = self.self_attn(x, x, src_allowed)  # (B, S, C), (B, nh, S, S)
        z = self.norm1(x + self.dropout(attended))
        return self.norm2(z + self.dropout(self.feed_forward(z))), probs


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder–decoder attention, FFN: three sub-layers, each LN(x + Sublayer(x)) (§10.3)."""

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.src_attn = MultiHeadAttention(config)
        self.feed_forward = FeedForward(config)
        self.norm1 = nn.LayerNorm(config.d_model)
        self.norm2 = nn.LayerNorm(config.d_model)
        self.norm3 = nn.LayerNorm(config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, src_allowed: torch.Tensor, tgt_allowed: torch.Tensor):
        attended, self_probs = self.self_attn(y, y, tgt_allowed)  # (B, T, C), (B, nh, T, T)
        a = self.norm1(y + self.dropout(attended))
        crossed, cross_probs = self.src_attn(a, memory, src_allowed)  # (B, T, C), (B, nh, T, S)
        c = self.norm2(a + self.dropout(crossed))
        return self.norm3(c + self.dropout(self.feed_forward(c))), self_probs, cross_probs


class Embeddings(nn.Module):
    """Embed(token) · √d_model + PE(position), the sinusoids fixed (a buffer, not a weight)."""

    def __init__(self, vocab_size: int, config: Seq2SeqConfig):
        super().__init__()
        self.lut = nn.Embedding(vocab_size, config.d_model)
        self.dropout = nn.Dropout(config.dropout)
        self.scale = math.sqrt(config.d_model)
        position = torch.arange(config.max_len).unsqueeze(1)  # (max_len, 1)
        rate = torch.exp(torch.arange(0, config.d_model, 2) * (-math.log(10000.0) / config.d_model))  # (C/2,)
        pe = torch.zeros(config.max_len, config.d_model)
        pe[:, 0::2] = torch.sin(position * rate)  # even dimensions
        pe[:, 1::2] = torch.cos(position * rate)  # odd dimensions
        self.register_buffer("pe", pe, persistent=False)  # (max_len, C)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        T = ids.size(1)
        if T > self.pe.size(0):
            raise ValueError(f"{T} positions exceed the {self.pe.size(0)} the position table covers")
        return self.dropout(self.lut(ids) * self.scale + self.pe[:T])  # (B, T, C)


@dataclass
class EncoderOutput:
    memory: torch.Tensor  # (B, S, C): the encoder's last layer, read by every decoder layer's K_e, V_e
    attentions: list[torch.Tensor]  # n_encoder_layers × (B, nh, S, S)
    src_allowed: torch.Tensor  # (B, 1, 1, S): False on padding


@dataclass
class DecoderOutput:
    logits: torch.Tensor  # (B, T, V_tgt): the generator's scores before the softmax
    self_attentions: list[torch.Tensor]  # n_decoder_layers × (B, nh, T, T)
    cross_attentions: list[torch.Tensor]  # n_decoder_layers × (B, nh, T, S)


class Transformer(nn.Module):
    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        self.src_embed = Embeddings(config.src_vocab_size, config)
        self.tgt_embed = Embeddings(config.tgt_vocab_size, config)
        self.encoder = nn.ModuleDict(dict(layers=nn.ModuleList(EncoderLayer(config)
                                                               for _ in range(config.n_encoder_layers))))
        self.decoder = nn.ModuleDict(dict(layers=nn.ModuleList(DecoderLayer(config)
                                                               for _ in range(config.n_decoder_layers))))
        self.generator = nn.Linear(config.d_model, config.tgt_vocab_size)  # the output Linear (§10.4)
        for p in self.parameters():  # the Annotated Transformer's initialisation
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def encode(self, src: torch.Tensor) -> EncoderOutput:
        src_allowed = (src != self.config.pad_id)[:, None, None, :]  # (B, 1, 1, S)
        x = self.src_embed(src)  # (B, S, C)
        attentions = []
        for layer in self.encoder.layers:
            x, probs = layer(x, src_allowed)
            attentions.append(probs)
        return EncoderOutput(x, attentions, src_allowed)

    def target_mask(self, tgt: torch.Tensor) -> torch.Tensor:
        """(B, 1, T, T): True where target position t may read position u: u ≤ t (when causal), u not padding."""
        T = tgt.size(1)
        allowed = (tgt != self.config.pad_id)[:, None, None, :]  # (B, 1, 1, T)
        if self.config.causal:
            allowed = allowed & torch.ones(T, T, dtype=torch.bool, device=tgt.device).tril()  # (B, 1, T, T)
        return allowed.expand(-1, 1, T, T)

    def decode(self, encoded: EncoderOutput, tgt: torch.Tensor) -> DecoderOutput:
        """Scores for the word after each target prefix: tgt starts with <s>; row t predicts word t + 1."""
        y = self.tgt_embed(tgt)  # (B, T, C)
        tgt_allowed = self.target_mask(tgt)
        self_attentions, cross_attentions = [], []
        for layer in self.decoder.layers:
            y, self_probs, cross_probs = layer(y, encoded.memory, encoded.src_allowed, tgt_allowed)
            self_attentions.append(self_probs)
            cross_attentions.append(cross_probs)
        return DecoderOutput(self.generator(y), self_attentions, cross_attentions)  # logits (B, T, V_tgt)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> DecoderOutput:
        return self.decode(self.encode(src), tgt)


def from_state_dict(config: Seq2SeqConfig, state: dict[str, torch.Tensor]) -> Transformer:
    """Build a Transformer and load its weights strictly (every key used, none missing), in eval mode."""
    model = Transformer(config)
    model.load_state_dict(state, strict=True)
    return model.eval()
