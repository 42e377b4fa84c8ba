"""BERT's corruption recipe (seed §13; create_pretraining_data.py in Google's BERT repository), written once.

The BERT masked-LM tab's "Masking procedure" view (core/mlm_pretraining.bert_masking) explains it on the learner's
sentence, and scripts/train_char_bert.py pre-trains the char-BERT with it, so what the view shows is what trained the
model the tab runs offline:

    choose    n = max(1, round(0.15 · C)) of a sequence's C candidate positions ([CLS]/[SEP] are not candidates),
              uniformly, without replacement: the first n of a random permutation (argpartition of uniform draws)
    replace   each chosen position, independently: [MASK] with p = 0.8, a random token with p = 0.1, itself with p = 0.1
    loss      cross-entropy at the n chosen positions only, against the original token

A fixed count n per sequence (not a coin flip per position) is what Google's script does; the 10% left unchanged
keep the model from trusting that an unmasked token is right, the 10% random ones from ignoring the token it reads.
numpy's Generator draws everything, so a seed fixes every batch (torch's own generator is not involved).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MASK_RATE, MASK_SHARE, RANDOM_SHARE = 0.15, 0.8, 0.1  # 15% chosen; 80/10/10 of those
KEEP, MASK, RANDOM, UNCHANGED = 0, 1, 2, 3  # what happened to a token: not chosen, or the three fates of a chosen one


def chosen_count(candidates: int) -> int:
    """n = max(1, round(0.15 · candidates)): how many positions one sequence has chosen."""
    return max(1, round(candidates * MASK_RATE))


def choose_positions(rng: np.random.Generator, rows: int, candidates: int, n: int) -> np.ndarray:
    """(rows, n) indices into the candidates, n distinct ones per row, every n-subset equally likely."""
    return np.argpartition(rng.random((rows, candidates)), n - 1, axis=1)[:, :n]


def draw_actions(rng: np.random.Generator, rows: int, n: int) -> np.ndarray:
    """(rows, n) of MASK (p = 0.8), RANDOM (p = 0.1) or UNCHANGED (p = 0.1): one uniform draw per chosen token."""
    u = rng.random((rows, n))
    return np.where(u < MASK_SHARE, MASK, np.where(u < MASK_SHARE + RANDOM_SHARE, RANDOM, UNCHANGED))


@dataclass
class MaskedBatch:
    inputs: np.ndarray  # (B, T) token ids after the corruption: what the model reads
    positions: np.ndarray  # (B, n) the chosen positions
    targets: np.ndarray  # (B, n) the original ids there: what the loss asks for
    actions: np.ndarray  # (B, n) MASK / RANDOM / UNCHANGED


def mask_batch(ids: np.ndarray, candidates: np.ndarray, mask_id: int, replacement_ids: np.ndarray,
               rng: np.random.Generator) -> MaskedBatch:
    """The recipe on a batch of equal-length sequences: ``candidates`` are the positions that may be chosen (the
    same in every row), ``replacement_ids`` the tokens a random replacement is drawn from (no special tokens)."""
    rows = ids.shape[0]
    n = chosen_count(len(candidates))
    positions = candidates[choose_positions(rng, rows, len(candidates), n)]  # (B, n)
    actions = draw_actions(rng, rows, n)  # (B, n)
    random_ids = replacement_ids[rng.integers(len(replacement_ids), size=(rows, n))]  # (B, n)
    row = np.arange(rows)[:, None]  # (B, 1)
    targets = ids[row, positions]  # (B, n)
    inputs = ids.copy()
    inputs[row, positions] = np.where(actions == MASK, mask_id, np.where(actions == RANDOM, random_ids, targets))
    return MaskedBatch(inputs, positions, targets, actions)
