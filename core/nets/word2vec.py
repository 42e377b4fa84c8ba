"""word2vec with negative sampling (Mikolov et al., 2013), as an nn.Module: the two embedding tables, the loss, and
the sparse SGD step that trains them (its noise table is core/embeddings.unigram_table).

    loss per pair   −log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c),   k noise words drawn ∝ count^¾
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class SkipGramNS(nn.Module):
    """Two tables: input vectors (the embeddings we keep) and output vectors (used only for training).

    Loss per pair (Mikolov et al. 2013, eq. 4): −log σ(u_o·v_c) − Σ_k log σ(−u_k·v_c), with k noise words u_k.
    For CBOW, v_c is the mean of the context words' input vectors and o is the centre word.
    Training is plain SGD on sparse rows, as in word2vec and gensim: a batch touches a few thousand rows of each
    table, and ``sgd_step`` writes the gradient into only those rows (``index_add_``), never the whole (V, D) table.
    """

    def __init__(self, vocab_size: int, dim: int):
        super().__init__()
        self.pad = vocab_size  # CBOW pads short contexts with this row, which stays zero
        self.inp = nn.Embedding(vocab_size + 1, dim, padding_idx=self.pad, sparse=True)
        self.out = nn.Embedding(vocab_size, dim, sparse=True)
        nn.init.uniform_(self.inp.weight, -0.5 / dim, 0.5 / dim)  # word2vec's initialisation
        nn.init.zeros_(self.out.weight)
        with torch.no_grad():
            self.inp.weight[self.pad].zero_()

    def scores(self, inputs: torch.Tensor, targets: torch.Tensor, noise: torch.Tensor):
        """z = ±u·v_c for the true word (+) and each noise word (−), with the pieces the gradient reuses."""
        if inputs.dim() == 1:  # skip-gram: one centre word per pair
            h, count = self.inp(inputs), None  # (B, D)
        else:  # CBOW: mean of the (padded) context words
            count = (inputs != self.pad).sum(1, keepdim=True).clamp(min=1)  # (B, 1)
            h = self.inp(inputs).sum(1) / count  # (B, D)
        words = torch.cat([targets.unsqueeze(1), noise], 1)  # (B, 1+K): the true word, then the noise words
        u = self.out(words)  # (B, 1+K, D)
        sign = torch.ones(1, words.shape[1], device=h.device)
        sign[0, 1:] = -1  # σ(u_o·v_c) for the true word, σ(−u_k·v_c) for noise
        z = torch.linalg.vecdot(u, h.unsqueeze(1)) * sign  # (B, 1+K)
        return z, sign, h, u, words, count

    def forward(self, inputs: torch.Tensor, targets: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """Mean negative-sampling loss over the batch."""
        z = self.scores(inputs, targets, noise)[0]
        return -F.logsigmoid(z).sum(1).mean()

    @torch.no_grad()
    def sgd_step(self, inputs: torch.Tensor, targets: torch.Tensor, noise: torch.Tensor, lr: float) -> torch.Tensor:
        """One SGD step on the summed loss of the batch (each pair moves its rows as one word2vec update would);
        returns that summed loss. The gradient is written out by hand: ∂(−log σ(z))/∂s = −σ(−z)·sign for a score
        s = u·v_c, so ∂/∂v_c = Σ_j g_j u_j and ∂/∂u_j = g_j v_c (checked against autograd in the tests)."""
        z, sign, h, u, words, count = self.scores(inputs, targets, noise)
        loss = -F.logsigmoid(z).sum()
        g = torch.sigmoid(-z).mul_(sign).mul_(lr)  # (B, 1+K): −lr · ∂loss/∂s
        grad_h = torch.linalg.vecdot(u, g.unsqueeze(2), dim=1)  # (B, D) Σ_j g_j u_j
        self.out.weight.index_add_(0, words.view(-1), (g.unsqueeze(2) * h.unsqueeze(1)).view(-1, h.shape[1]))
        if count is None:
            self.inp.weight.index_add_(0, inputs, grad_h)
        else:  # each context word gets its share of the mean's gradient; the padding row is put back to zero
            share = (grad_h / count).unsqueeze(1).expand(-1, inputs.shape[1], -1)  # (B, 2w, D)
            self.inp.weight.index_add_(0, inputs.reshape(-1), share.reshape(-1, h.shape[1]))
            self.inp.weight[self.pad].zero_()
        return loss
