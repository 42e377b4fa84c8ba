"""Training the encoder–decoder Transformer (core/nets/seq2seq.py) on (source, English) pairs, teacher-forced:

    loss = −(1/N) Σ_t log P(y_t | y_<t, source)        cross-entropy over the target words and </s>, <pad> ignored

The decoder reads <s> y_1 … y_{n-1} and is scored on y_1 … y_n </s>. With the causal mask (§11.1) row t sees only
<s> y_1 … y_{t-1}; without it, row t also sees y_t, the very word it is scored on, and the loss can fall towards 0
without the model learning to translate: at test time those later words are not there (``mask_experiment``).

AdamW, linear warm-up then cosine decay, batches drawn with a seeded generator: the same seed gives the same model
on the same thread count.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from core.nets.seq2seq import Seq2SeqConfig, Transformer
from core.seq2seq.seq2seq import BOS, EOS, PAD, Vocab, evaluate, pad


@dataclass
class TrainSettings:
    steps: int = 3000
    batch_size: int = 64
    lr: float = 1e-3
    warmup: int = 200
    weight_decay: float = 0.01
    seed: int = 0


@dataclass
class TrainResult:
    model: nn.Module
    losses: list[float] = field(default_factory=list)  # the training loss of every step
    seconds: float = 0.0

    def final_loss(self, last: int = 50) -> float:
        tail = self.losses[-last:]
        return sum(tail) / len(tail)


def tensors(vocab: Vocab, pairs: list[tuple[str, str, str]]) -> list[tuple[list[int], list[int]]]:
    return [(vocab.encode_source(src)[0], vocab.encode_target(tgt) + [EOS]) for _, src, tgt in pairs]


def batch_loss(model: nn.Module, batch: list[tuple[list[int], list[int]]]) -> torch.Tensor:
    src = pad([s for s, _ in batch])  # (B, S)
    gold = pad([t for _, t in batch])  # (B, T): y_1 … y_n </s>
    fed = torch.cat([torch.full((len(batch), 1), BOS), gold[:, :-1]], dim=1)  # (B, T): <s> y_1 … y_n
    fed = fed.masked_fill(fed == EOS, PAD)  # </s> is never an input
    output = model(src, fed)
    logits = output.logits if isinstance(model, Transformer) else output[0]  # (B, T, V_tgt)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), gold.reshape(-1), ignore_index=PAD)


def train(build: Callable[[], nn.Module], vocab: Vocab, pairs: list[tuple[str, str, str]], settings: TrainSettings,
          progress: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train ``build()`` (made after seeding, so the same seed starts from the same weights)."""
    torch.manual_seed(settings.seed)
    model = build()
    data = tensors(vocab, pairs)
    generator = torch.Generator().manual_seed(settings.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr, betas=(0.9, 0.98),
                                  weight_decay=settings.weight_decay)

    def rate(step: int) -> float:
        if step < settings.warmup:
            return (step + 1) / settings.warmup
        done = (step - settings.warmup) / max(1, settings.steps - settings.warmup)
        return 0.5 * (1 + math.cos(math.pi * done))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    result, start = TrainResult(model), time.perf_counter()
    model.train()
    for step in range(settings.steps):
        picks = torch.randint(len(data), (settings.batch_size,), generator=generator).tolist()
        loss = batch_loss(model, [data[i] for i in picks])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        result.losses.append(loss.item())
        if progress:
            progress(step, result.losses[-1])
    result.seconds = time.perf_counter() - start
    model.eval()
    return result


def mask_experiment(config: Seq2SeqConfig, vocab: Vocab, train_pairs, heldout_pairs, settings: TrainSettings) -> dict:
    """§11.1: the same model, data and seed trained with and without the decoder's causal mask; each one's final
    training loss (teacher-forced, as it was trained) against its held-out greedy figures (decoding freely)."""
    out = {}
    for name, causal in (("masked", True), ("unmasked", False)):
        variant = Seq2SeqConfig.from_dict(dict(config.to_dict(), causal=causal))
        run = train(lambda: Transformer(variant), vocab, train_pairs, settings)
        out[name] = dict(training_loss=run.final_loss(), seconds=run.seconds,
                         heldout=evaluate(run.model, vocab, heldout_pairs))
    return out
