"""Bengio et al. (2003)'s neural probabilistic language model (seed §2.2), as an nn.Module.

    x = [C(w_{t-n+1}); …; C(w_{t-1})]          the context words' vectors, concatenated: rows of the matrix C (= Q)
    y = b + W x + U tanh(d + H x)              one score per vocabulary word
    P(w_t | context) = softmax(y)

C is the embedding table (V × m): looking a word up is the one-hot vector times C (§2.2's [0 0 0 1 0] × Q). H (with
bias d) is the hidden layer, U maps its tanh back to the vocabulary, and W (with bias b) is the paper's optional
direct connection from the word vectors to the output.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class NNLMTrace:
    """Every intermediate of one forward pass, for the step-through view."""
    x: torch.Tensor  # (B, (n-1)·m) concatenated context vectors
    hidden: torch.Tensor  # (B, h) tanh(d + Hx)
    direct: torch.Tensor  # (B, V) b + Wx
    recurrent_free: torch.Tensor  # (B, V) U tanh(d + Hx)
    logits: torch.Tensor  # (B, V) y
    probs: torch.Tensor  # (B, V) softmax(y)


class NNLM(nn.Module):
    def __init__(self, vocab_size: int, context: int, dim: int, hidden: int):
        super().__init__()
        self.context, self.dim = context, dim
        self.C = nn.Embedding(vocab_size, dim)  # (V, m): one row per word
        self.H = nn.Linear(context * dim, hidden)  # H x + d
        self.U = nn.Linear(hidden, vocab_size, bias=False)  # U tanh(·)
        self.W = nn.Linear(context * dim, vocab_size)  # W x + b (direct connections)

    def trace(self, ids: torch.Tensor) -> NNLMTrace:
        x = self.C(ids).flatten(1)  # (B, n-1, m) → (B, (n-1)·m)
        hidden = torch.tanh(self.H(x))  # (B, h)
        direct = self.W(x)  # (B, V)
        through_hidden = self.U(hidden)  # (B, V)
        logits = direct + through_hidden  # (B, V): y = b + Wx + U tanh(d + Hx)
        return NNLMTrace(x, hidden, direct, through_hidden, logits, torch.softmax(logits, dim=-1))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.C(ids).flatten(1)  # (B, (n-1)·m)
        return self.W(x) + self.U(torch.tanh(self.H(x)))  # (B, V) logits
