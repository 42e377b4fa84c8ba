"""ELMo's bidirectional language model (§7; Peters et al., 2018), scaled down to train on 2 CPU cores in minutes.

    token      x_k = LayerNorm(Proj(Highway(max-pool(CNN(chars of word k)))))   a word vector from its characters
    forward    →h_k^(j) = LSTM_j^→(→h_k^(j-1)),  →h_k^(0) = x_k,  j = 1, 2       reads w_1 … w_k
    backward   ←h_k^(j) = LSTM_j^←(←h_k^(j-1)),  ←h_k^(0) = x_k,  j = 1, 2       reads w_N … w_k
    layers     h_k^(0) = [x_k; x_k],  h_k^(j) = [→h_k^(j); ←h_k^(j)]              three vectors per token, all 2D wide
    training   p(w_{k+1} | w_1..w_k) = softmax(Θ_s →h_k^(2)),  p(w_{k-1} | w_k..w_N) = softmax(Θ_s ←h_k^(2))

As in the paper, the token encoder and the softmax Θ_s are shared by the two directions and the LSTMs are not; the
input word is read from its characters (any word has a vector), while the softmax predicts a fixed word vocabulary.
Left out to stay small: the LSTM projection layers and the residual connection between the two layers. Added: a
LayerNorm (no gain) on x_k. Without it the token vectors grew from norm ~5 to ~125 within 100 training steps,
saturating every LSTM gate, so the states ignored the context: exactly what this view must not show.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn


class Highway(nn.Module):
    """y = g ⊙ relu(W_h x + b_h) + (1 − g) ⊙ x,  g = σ(W_g x + b_g)  (Srivastava et al., 2015)."""

    def __init__(self, size: int):
        super().__init__()
        self.transform = nn.Linear(size, size)
        self.gate = nn.Linear(size, size)
        with torch.no_grad():  # gate bias −2: start close to carrying x through unchanged
            self.gate.bias.fill_(-2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g = torch.sigmoid(self.gate(x))  # (N, F)
        return g * torch.relu(self.transform(x)) + (1 - g) * x  # (N, F)


class CharCNN(nn.Module):
    """Word vector from the word's characters: embed, convolve with several widths, max-pool over the word."""

    def __init__(self, n_chars: int, out_size: int, char_size: int = 16, widths=(1, 2, 3, 4, 5), filters: int = 32):
        super().__init__()
        self.char_embed = nn.Embedding(n_chars, char_size, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(char_size, filters, w) for w in widths)
        self.highway = Highway(filters * len(widths))
        self.proj = nn.Linear(filters * len(widths), out_size)
        self.norm = nn.LayerNorm(out_size, elementwise_affine=False)  # no parameters: x_k keeps mean 0, variance 1

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        B, T, L = chars.shape  # L characters per word, padded
        c = self.char_embed(chars.view(B * T, L)).transpose(1, 2)  # (B·T, C, L)
        pooled = torch.cat([conv(c).max(dim=-1).values for conv in self.convs], dim=-1)  # (B·T, F)
        return self.norm(self.proj(self.highway(torch.relu(pooled)))).view(B, T, -1)  # (B, T, D)


@dataclass
class BiLMOutput:
    layers: list[torch.Tensor]  # 3 × (B, T, 2D): h^(0) = [x; x], h^(1), h^(2) = [→h; ←h]
    forward_logits: torch.Tensor  # (B, T, V): position k predicts word k+1
    backward_logits: torch.Tensor  # (B, T, V): position k predicts word k−1


class ElmoBiLM(nn.Module):
    """Char-CNN token encoder, two LSTM layers per direction, one softmax shared by both directions."""

    def __init__(self, n_chars: int, vocab_size: int, size: int = 128, num_layers: int = 2, dropout: float = 0.1):
        super().__init__()
        self.config = {"n_chars": n_chars, "vocab_size": vocab_size, "size": size, "num_layers": num_layers,
                       "dropout": dropout}
        self.token_encoder = CharCNN(n_chars, size)
        self.forward_lstms = nn.ModuleList(nn.LSTM(size, size, batch_first=True) for _ in range(num_layers))
        self.backward_lstms = nn.ModuleList(nn.LSTM(size, size, batch_first=True) for _ in range(num_layers))
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(size, vocab_size)  # Θ_s, shared by both directions

    def forward(self, chars: torch.Tensor) -> BiLMOutput:
        x = self.token_encoder(chars)  # (B, T, D)
        layers = [torch.cat([x, x], dim=-1)]  # h^(0): (B, T, 2D)
        fwd, bwd = x, x.flip(1)  # the backward LSTMs read the sentence reversed
        for lstm_f, lstm_b in zip(self.forward_lstms, self.backward_lstms):
            fwd = lstm_f(self.dropout(fwd))[0]  # (B, T, D): position k has read w_1..w_k
            bwd = lstm_b(self.dropout(bwd))[0]  # (B, T, D), reversed order
            layers.append(torch.cat([fwd, bwd.flip(1)], dim=-1))  # (B, T, 2D): position k has read w_k..w_N
        return BiLMOutput(layers, self.head(self.dropout(fwd)), self.head(self.dropout(bwd.flip(1))))
