"""The char-BERT on held-out Moby-Dick: its masked-LM loss, and a fair comparison with the char-GPT.

Both models were trained on the training split of core.recurrent.lstm.split_text (the last 5% held out), the split of every
character model in the app. Two measurements, both on the held-out 5% only:

1. ``recipe_scores``: the training objective itself. The held-out text cut into consecutive windows of 128
   characters, each read as [CLS] window [SEP] and corrupted by core/mlm/masking.py's recipe (19 of 128 chosen;
   80/10/10), seeded; cross-entropy (nats) and accuracy at the chosen positions.

2. ``compare``: the same held-out positions for both models. 15% of the held-out characters (not the first, which
   has no left context) are chosen once with the recipe's own chooser (seed 0). At every chosen position t, each
   model reads one window of at most WINDOW = 128 characters that holds t, the rest of it intact:
     char-GPT, left only          c_{t−127} … c_{t−1}         P(c_t | left)  = its next-character softmax
     char-BERT, both sides        63 before, [MASK], 64 after  P(c_t | both)  (shifted at the split's two ends)
     char-BERT, left only         c_{t−127} … c_{t−1} [MASK]  the same model with the right side cut off
   One position is hidden at a time: every other character of the window is the true text, as the char-GPT's left
   context is. (Masking all chosen positions at once would hide 15% of the char-BERT's context and none of the
   char-GPT's.) The windows are equal in size, so neither model reads more characters; the char-BERT rows differ
   only in which side they read. Scores per model: accuracy (its most probable character equals c_t; special
   tokens and <unk> are never the guess) and bits per masked character, the mean of −log₂ P(c_t) under the full
   softmax.

The masked LM's bits are not a probability of the text: Σ_t −log₂ P(c_t | all the other characters) is a
pseudo-log-likelihood (Salazar et al., 2020), where each term conditions on characters another term predicts. It
does not compare with the Overview ladder's causal bits/char, which chain P(c_t | c_<t) into P(text); only the char-GPT
row here is such a term, read on the chosen positions.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from core.text.corpora import load_corpus
from core.recurrent.lstm import split_text
from core.mlm.char import (CHAR_BERT_ASSETS, CLS_ID, FIRST_CHAR_ID, MASK_ID, SEP_ID, LoadedCharBert,
                           probabilities_at)
from core.mlm.masking import choose_positions, chosen_count, mask_batch

HELDOUT_PATH = CHAR_BERT_ASSETS / "heldout.json"
WINDOW = 128  # characters a model reads around one position: the char-GPT's context
RECIPE_WINDOW = 128
RECIPE_SEED = 1  # the held-out corruption (the training run draws from its own seed)
COMPARE_SEED = 0
SUBSET_POSITIONS = 200  # the first chosen positions, which tests/mlm/test_mlm_char_parity.py recomputes
BATCH = 64
ROWS = ("char-GPT, left only", "char-BERT, both sides", "char-BERT, left only")


def held_out_text() -> str:
    """The held-out 5% of Moby-Dick, as the char-GPT's training script split it."""
    return split_text(load_corpus("moby_dick"))[1]


# ----------------------------------------------------------------------------------------------------------------
# 1. The training objective on held-out windows


@torch.inference_mode()
def recipe_scores(loaded: LoadedCharBert, ids: list[int], window: int = RECIPE_WINDOW,
                  seed: int = RECIPE_SEED) -> dict:
    """Held-out MLM loss (nats) and accuracy under the training corruption, on consecutive windows of ``ids``."""
    count = len(ids) // window
    chars = np.array(ids[:count * window]).reshape(count, window)  # (N, window)
    sequences = np.concatenate([np.full((count, 1), CLS_ID), chars, np.full((count, 1), SEP_ID)], axis=1)
    batch = mask_batch(sequences, np.arange(1, window + 1), MASK_ID,
                       np.arange(FIRST_CHAR_ID, len(loaded.tokenizer)), np.random.default_rng(seed))
    nats, hits = 0.0, 0
    for start in range(0, count, BATCH):
        rows = slice(start, start + BATCH)
        inputs = torch.tensor(batch.inputs[rows], device=loaded.device)  # (b, window + 2)
        positions = torch.tensor(batch.positions[rows], device=loaded.device)  # (b, n)
        targets = torch.tensor(batch.targets[rows], device=loaded.device).reshape(-1)  # (b·n,)
        row_index = torch.arange(len(inputs), device=loaded.device)[:, None].expand_as(positions)  # (b, n)
        probs = probabilities_at(loaded.model, inputs, row_index.reshape(-1), positions.reshape(-1))  # (b·n, V)
        nats += float(F.nll_loss(probs.log(), targets, reduction="sum"))
        hits += int((probs.argmax(-1) == targets).sum())
    scored = batch.targets.size
    return {"windows": count, "window": window, "chosen_per_window": batch.positions.shape[1], "scored": scored,
            "seed": seed, "loss_nats": round(nats / scored, 6), "accuracy": round(hits / scored, 6)}


# ----------------------------------------------------------------------------------------------------------------
# 2. The same positions, left only vs both sides


def compared_positions(length: int, seed: int = COMPARE_SEED) -> np.ndarray:
    """15% of positions 1 … length−1, chosen by the recipe's chooser, in text order."""
    n = chosen_count(length - 1)
    return np.sort(1 + choose_positions(np.random.default_rng(seed), 1, length - 1, n)[0])


@dataclass
class PositionScores:
    bits: np.ndarray  # (P,) −log₂ P(true character)
    correct: np.ndarray  # (P,) the most probable character is the true one

    def summary(self) -> dict:
        return {"bits_per_char": round(float(self.bits.mean()), 6), "accuracy": round(float(self.correct.mean()), 6)}


def _by_length(windows: list[list[int]]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for index, window in enumerate(windows):
        groups.setdefault(len(window), []).append(index)
    return groups


def _score(windows: list[list[int]], at: list[int], targets: list[int], first_char: int, probs_of) -> PositionScores:
    """Run ``probs_of(ids (b, T), at (b,)) → (b, V)`` over windows grouped by length; score the target ids."""
    bits, correct = np.zeros(len(windows)), np.zeros(len(windows), dtype=bool)
    for indices in _by_length(windows).values():
        for start in range(0, len(indices), BATCH):
            chunk = indices[start:start + BATCH]
            probs = probs_of([windows[i] for i in chunk], [at[i] for i in chunk])  # (b, V)
            target = torch.tensor([targets[i] for i in chunk], device=probs.device)  # (b,)
            bits[chunk] = (-probs.gather(1, target[:, None])[:, 0].log2()).cpu().numpy()
            correct[chunk] = (probs[:, first_char:].argmax(-1) + first_char == target).cpu().numpy()
    return PositionScores(bits, correct)


@torch.inference_mode()
def gpt_left_only(gpt, gpt_ids: list[int], positions: np.ndarray, window: int = WINDOW) -> PositionScores:
    """The char-GPT's P(c_t | the window − 1 characters before t) at each position."""
    device = gpt.lm_head.weight.device

    def probs_of(rows, _at):
        ids = torch.tensor(rows, device=device)  # (b, T)
        return gpt(ids).logits[:, -1].float().softmax(-1)  # (b, V)

    windows = [gpt_ids[max(0, t - window + 1):t] for t in positions]
    return _score(windows, [0] * len(windows), [gpt_ids[t] for t in positions], 1, probs_of)  # 1: skip <unk>


@torch.inference_mode()
def bert_at(loaded: LoadedCharBert, ids: list[int], positions: np.ndarray, both_sides: bool,
            window: int = WINDOW) -> PositionScores:
    """The char-BERT's P(c_t | its window, c_t as [MASK]): a window around t (both sides) or ending at t."""
    windows, at = [], []
    for t in positions:
        start = min(max(0, t - (window - 1) // 2), max(0, len(ids) - window)) if both_sides else max(0, t - window + 1)
        chars = list(ids[start:start + window] if both_sides else ids[start:t + 1])
        chars[t - start] = MASK_ID
        windows.append([CLS_ID, *chars, SEP_ID])
        at.append(t - start + 1)

    def probs_of(rows, at_rows):
        inputs = torch.tensor(rows, device=loaded.device)  # (b, T)
        return probabilities_at(loaded.model, inputs, torch.arange(len(rows), device=loaded.device),
                                torch.tensor(at_rows, device=loaded.device))  # (b, V)

    return _score(windows, at, [ids[t] for t in positions], FIRST_CHAR_ID, probs_of)


def compare(loaded: LoadedCharBert, gpt, gpt_vocab, text: str, positions: np.ndarray) -> dict[str, PositionScores]:
    """Every row of the comparison on the same positions of ``text``."""
    bert_ids, _ = loaded.tokenizer.encode(text)
    gpt_ids = gpt_vocab.encode(text)[0]
    return {ROWS[0]: gpt_left_only(gpt, gpt_ids, positions), ROWS[1]: bert_at(loaded, bert_ids, positions, True),
            ROWS[2]: bert_at(loaded, bert_ids, positions, False)}


def load_held_out(path=HELDOUT_PATH) -> dict:
    """scripts/char_bert_heldout.py's figures."""
    return json.loads(path.read_text(encoding="utf-8"))
