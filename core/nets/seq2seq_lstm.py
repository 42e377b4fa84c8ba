"""The LSTM encoder–decoder before the Transformer (§11.2): one context vector C, or attention over the encoder's states.

    encoder     h_1 … h_S = LSTM(Embed(x_1 … x_S))                       one state per source token
    decoder     s_t = LSTM(s_{t−1}, [Embed(y_{t−1}); C])                  started from the encoder's last state
    context     "vector"     C = h_S for every target word (Sutskever et al., 2014; Cho et al., 2014): the whole
                             source squeezed into one vector
                "attention"  c_t = Σ_j α_tj h_j,  α_t = softmax_j(vᵀ tanh(W s_t + U h_j))   (Bahdanau et al.'s
                             additive score, read with the decoder's current state s_t as Luong et al. (2015) place
                             it, so the decoder runs over the whole target in one LSTM call)
    output      P(y_t) = softmax(W_out tanh(W_c [s_t; c_t]))             (c_t = C for the vector model)

α_t is the alignment of target word t to the source words (Bahdanau et al.'s figure 3), returned with the logits.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


@dataclass
class LSTMSeq2SeqConfig:
    src_vocab_size: int = 100
    tgt_vocab_size: int = 100
    embed: int = 64
    hidden: int = 128
    context: str = "attention"  # or "vector": one context vector C
    pad_id: int = 0

    @classmethod
    def from_dict(cls, config: dict) -> "LSTMSeq2SeqConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in config.items() if k in known})

    def to_dict(self) -> dict:
        return asdict(self)


class AdditiveAttention(nn.Module):
    """α_t = softmax_j(vᵀ tanh(W s_t + U h_j)), c_t = Σ_j α_tj h_j."""

    def __init__(self, hidden: int):
        super().__init__()
        self.W = nn.Linear(hidden, hidden, bias=False)
        self.U = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, s: torch.Tensor, h: torch.Tensor, allowed: torch.Tensor):
        scores = self.v(torch.tanh(self.W(s)[:, :, None, :] + self.U(h)[:, None, :, :])).squeeze(-1)  # (B, T, S)
        alpha = scores.masked_fill(~allowed[:, None, :], float("-inf")).softmax(dim=-1)  # (B, T, S)
        return alpha @ h, alpha  # (B, T, H), (B, T, S)


class LSTMSeq2Seq(nn.Module):
    def __init__(self, config: LSTMSeq2SeqConfig):
        super().__init__()
        if config.context not in ("attention", "vector"):
            raise ValueError(f"context {config.context!r}: 'attention' or 'vector'")
        self.config = config
        self.src_embed = nn.Embedding(config.src_vocab_size, config.embed, padding_idx=config.pad_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.embed, padding_idx=config.pad_id)
        self.encoder = nn.LSTM(config.embed, config.hidden, batch_first=True)
        vector = config.context == "vector"
        self.decoder = nn.LSTM(config.embed + (config.hidden if vector else 0), config.hidden, batch_first=True)
        if not vector:
            self.attention = AdditiveAttention(config.hidden)
        self.combine = nn.Linear(2 * config.hidden, config.hidden)  # W_c
        self.generator = nn.Linear(config.hidden, config.tgt_vocab_size)  # W_out

    def encode(self, src: torch.Tensor):
        """(h_1 … h_S (B, S, H), the last state (h_S, c_S) of each sentence, padding excluded)."""
        lengths = (src != self.config.pad_id).sum(dim=1).clamp(min=1).cpu()
        packed = pack_padded_sequence(self.src_embed(src), lengths, batch_first=True, enforce_sorted=False)
        states, last = self.encoder(packed)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=src.size(1))  # (B, S, H)
        return states, last

    def forward(self, src: torch.Tensor, tgt: torch.Tensor):
        """Logits (B, T, V_tgt) for the word after each target prefix, and α (B, T, S) (None for the vector model)."""
        states, last = self.encode(src)
        y = self.tgt_embed(tgt)  # (B, T, E)
        if self.config.context == "vector":
            C = last[0][-1]  # (B, H): h_S, the one context vector
            context = C[:, None, :].expand(-1, tgt.size(1), -1)  # (B, T, H): the same C for every target word
            s, _ = self.decoder(torch.cat([y, context], dim=-1), last)  # (B, T, H)
            alpha = None
        else:
            s, _ = self.decoder(y, last)  # (B, T, H)
            context, alpha = self.attention(s, states, src != self.config.pad_id)  # (B, T, H), (B, T, S)
        return self.generator(torch.tanh(self.combine(torch.cat([s, context], dim=-1)))), alpha
