"""Pre-training the char-BERT: batches, initialisation, schedule and the step loop (scripts/train_char_bert.py).

    batch      B random windows of the training text, each [CLS] c_1 … c_T [SEP], corrupted by core/mlm/masking.py
    loss       mean over the chosen positions of −ln P(original character | corrupted window)
    schedule   linear warm-up to the peak learning rate, then linear decay to 0 (BERT's)
    phases     a curriculum of window lengths: 8, 16, 32, 64, then 128, 256 and 510 characters (510 + [CLS] +
               [SEP] = the 512 positions); a step reads about chars_per_step characters whatever the window.
               Short windows first because a masked character is recovered from its neighbours, and attention that
               still spreads evenly over 130 positions tells it almost nothing about them: from 128 characters the
               loss stayed at the unigram level (2.8 nats) for 800 steps, from 8 it left it within 300 (a
               sequence-length warm-up, as in Li et al., 2022).
    new rows   a longer window reads position rows no step has trained yet, still at their N(0, 0.02) start
               (norm 0.2, against about 1.0 for trained rows), and the model did not learn them: in a first run the
               last 10% of the steps on 510-character windows (BERT's 128-then-512) left held-out 510-character
               windows at 2.35 nats against 0.95 on 128-character ones, and 700 steps on 256-character windows at
               a higher learning rate moved them no better. So when the window grows from T to T', rows T + 2 …
               T' + 1 start as copies of rows 2 … T' − T + 1, as Longformer (Beltagy et al., 2020) started its
               4,096 positions from copies of RoBERTa's 512: the model then only refines what it knows about near
               neighbours. From the 128-character model, 200 steps on 256-character windows reached 1.11 nats on
               held-out 256-character windows with copied rows, 1.95 without.

The windows come from a seeded torch.Generator and the masks from a seeded numpy Generator, so a seed fixes the
data; on one machine, thread count and torch version the weights are then bit-for-bit the same.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import torch
import torch.nn.functional as F

from core.mlm.char import CLS_ID, FIRST_CHAR_ID, MASK_ID, SEP_ID
from core.mlm.masking import MaskedBatch, mask_batch
from core.nets.bert import BertForMaskedLM


@dataclass
class Recipe:
    steps: int = 3700
    chars_per_step: int = 4096  # a step reads B windows of T characters, B = chars_per_step / T
    # (share of the steps, window in characters), in order: short windows first (see the module docstring)
    phases: tuple[tuple[float, int], ...] = ((0.06, 8), (0.06, 16), (0.06, 32), (0.06, 64), (0.34, 128),
                                             (0.2, 256), (0.22, 510))
    lr: float = 4e-3  # peak
    warmup: int = 200
    weight_decay: float = 0.01
    seed: int = 0

    def boundaries(self) -> list[int]:
        """The first step of each phase after the first."""
        shares = np.cumsum([share for share, _ in self.phases])
        return [round(self.steps * share) for share in shares[:-1]]

    def batch(self, chars: int) -> int:
        """Windows per step when a window holds ``chars`` characters."""
        return max(1, round(self.chars_per_step / chars))

    def window(self, step: int) -> tuple[int, int]:
        """(batch, characters per window) of step ``step`` (0-based)."""
        chars = self.phases[int(np.searchsorted(self.boundaries(), step, side="right"))][1]
        return self.batch(chars), chars


def init_like_bert(model: BertForMaskedLM, std: float = 0.02) -> None:
    """BERT's initialisation: weights N(0, std), biases 0, LayerNorm 1 and 0, the [PAD] embedding row 0."""
    for module in model.modules():
        if isinstance(module, (torch.nn.Linear, torch.nn.Embedding)):
            torch.nn.init.normal_(module.weight, std=std)
            if isinstance(module, torch.nn.Linear) and module.bias is not None:
                torch.nn.init.zeros_(module.bias)
            if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, torch.nn.LayerNorm):
            torch.nn.init.ones_(module.weight)
            torch.nn.init.zeros_(module.bias)
    torch.nn.init.zeros_(model.cls.predictions.bias)


@torch.no_grad()
def extend_positions(model: BertForMaskedLM, chars: int, longer: int) -> None:
    """Windows grow from ``chars`` to ``longer`` characters: position rows chars + 2 … longer + 1 (never used so far)
    become copies of rows 2 … longer − chars + 1, the rows ``chars`` positions earlier."""
    table = model.bert.embeddings.position_embeddings.weight  # (P, H)
    for position in range(chars + 2, longer + 2):
        table[position] = table[position - chars]


def learning_rate(step: int, recipe: Recipe) -> float:
    """Linear warm-up to the peak, then linear decay to 0."""
    if step < recipe.warmup:
        return recipe.lr * (step + 1) / recipe.warmup
    return recipe.lr * max(0.0, (recipe.steps - step) / max(1, recipe.steps - recipe.warmup))


def training_batch(train: torch.Tensor, batch: int, chars: int, vocab_size: int, windows: torch.Generator,
                   masks: np.random.Generator) -> MaskedBatch:
    """``batch`` random windows of ``chars`` characters as [CLS] window [SEP], corrupted by the recipe; a random
    replacement is any character (never a special token)."""
    starts = torch.randint(0, len(train) - chars, (batch,), generator=windows)  # (B,)
    chunk = train[starts[:, None] + torch.arange(chars)].numpy()  # (B, chars)
    ids = np.concatenate([np.full((batch, 1), CLS_ID), chunk, np.full((batch, 1), SEP_ID)], axis=1)  # (B, T)
    return mask_batch(ids, np.arange(1, chars + 1), MASK_ID, np.arange(FIRST_CHAR_ID, vocab_size), masks)


def masked_lm_loss(model: BertForMaskedLM, batch: MaskedBatch) -> torch.Tensor:
    """Cross-entropy at the chosen positions; the head runs on those rows only."""
    device = model.cls.predictions.bias.device
    hidden = model.bert(torch.from_numpy(batch.inputs).to(device), None, None, output_attentions=False,
                        output_hidden_states=False).last_hidden_state  # (B, T, H)
    rows = torch.arange(len(batch.inputs), device=device)[:, None]  # (B, 1)
    logits = model.cls.predictions(hidden[rows, torch.from_numpy(batch.positions).to(device)])  # (B, n, V)
    targets = torch.from_numpy(batch.targets).to(device)  # (B, n)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def optimizer(model: BertForMaskedLM, recipe: Recipe) -> torch.optim.AdamW:
    """AdamW with RoBERTa's β₂ = 0.98 and ε = 1e-6; weight decay on matrices only."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": recipe.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=recipe.lr, betas=(0.9, 0.98), eps=1e-6)


def train_steps(model: BertForMaskedLM, train: torch.Tensor, vocab_size: int,
                recipe: Recipe) -> Iterator[tuple[int, float, int]]:
    """Run the recipe, yielding (step, training loss, window in characters) after every step."""
    opt = optimizer(model, recipe)
    windows, masks = torch.Generator().manual_seed(recipe.seed), np.random.default_rng(recipe.seed)
    model.train()
    widest = 0  # the longest window read so far
    for step in range(recipe.steps):
        for group in opt.param_groups:
            group["lr"] = learning_rate(step, recipe)
        batch, chars = recipe.window(step)
        if chars > widest:
            if widest:
                extend_positions(model, widest, chars)
            widest = chars
        loss = masked_lm_loss(model, training_batch(train, batch, chars, vocab_size, windows, masks))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        yield step + 1, loss.item(), chars
    model.eval()
