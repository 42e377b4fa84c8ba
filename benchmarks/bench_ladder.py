"""The ladder: a 300-character text through every rung (issue #17's target: ≤ 1 s on 2 cores).

There is no outside reference for the whole ladder, so each rung's row is set against the cheapest honest baseline
for that kind of model, measured alternately in the same run: the n-gram rungs against a plain Python dict of
counts (a per-token walk; at 300 characters numpy's per-call overhead is comparable, on the held-out split the
arrays win), the recurrent rungs against torch.nn.RNN / nn.LSTM holding the same
weights (the rungs run on one CPU thread, the references on torch's default count). The last row is the absolute time of the whole ladder (every rung, models already loaded).

    python -m benchmarks.bench_ladder [--quick]
"""
from __future__ import annotations

import sys
from collections import Counter

import torch

from benchmarks.common import median_seconds, paired_median_seconds, print_table, row
from core.ladder import ladder
from core.recurrent import lstm

TEXT = ("Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse, and "
        "nothing particular to interest me on shore, I thought I would sail about a little and see the watery part "
        "of the world. It is a way I have of driving off the spleen and regulating the circulation. Whenever I find")


def _dict_trigram_add_one(train: str):
    """The same trigram add-one P(c | h) from Python dicts, one lookup per character."""
    trigrams = Counter(train[i:i + 3] for i in range(len(train) - 2))
    followed = Counter(train[i:i + 2] for i in range(len(train) - 2))
    vocabulary = len(set(train))
    return lambda text: [(trigrams[text[i - 2:i + 1]] + 1) / (followed[text[i - 2:i]] + vocabulary)
                         for i in range(2, len(text))]


def _torch_reference(model: lstm.RecurrentLM):
    cls = torch.nn.LSTM if model.kind == "lstm" else torch.nn.RNN
    ref = cls(model.cell.U.in_features, model.cell.hidden_size, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(model.cell.U.weight)
        ref.weight_hh_l0.copy_(model.cell.W.weight)
        ref.bias_ih_l0.copy_(model.cell.U.bias)
        ref.bias_hh_l0.zero_()

    @torch.inference_mode()
    def log_probs(ids: torch.Tensor):
        hidden, _ = ref(model.embed(ids))  # (1, T, H)
        return model.head(hidden).log_softmax(-1)[0, torch.arange(ids.shape[1] - 1), ids[0, 1:]]

    return log_probs


def run(quick: bool = False) -> list[dict]:
    text = ladder.prepare(TEXT[:300])
    rungs = {rung.key: rung for rung in ladder.rungs()}  # loads every model once, untimed
    repeats = 5 if quick else 20
    rows = []
    train, held = ladder.training_split()
    dict_model = _dict_trigram_add_one(train)
    for name, sample, goal in (("300 chars", text, "for scale"), (f"held-out {len(held):,} chars", held, "ratio < 1")):
        ours, ref = paired_median_seconds(lambda: rungs["ngram-3-add_k"].log2_probs(sample),
                                          lambda: dict_model(sample), repeats=repeats)
        rows.append(row(f"ladder: 3-gram add-one rung vs a Python dict walk, {name}", ours, ref, "s", goal))
    models = lstm.shipped_models()
    ids = torch.tensor([models.vocab.encode(text)[0]])
    for kind in ("rnn", "lstm"):
        reference = _torch_reference(getattr(models, kind))
        ours, ref = paired_median_seconds(lambda: rungs[kind].log2_probs(text), lambda: reference(ids),
                                          repeats=repeats)
        rows.append(row(f"ladder: {kind} rung vs torch.nn.{kind.upper()} + head, 300 chars", ours, ref, "s",
                        "for scale"))
    total = median_seconds(lambda: ladder.score_text(text), repeats=repeats)
    rows.append(row(f"ladder: all {len(rungs)} rungs on a 300-character text", total, None, "s", "≤ 1 s"))
    return rows


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
