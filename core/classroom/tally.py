"""A check's predictions as the teacher's view shows them (issue #55): the distribution, and after the reveal how
many were right or close.

Kinds (core/checks/base.py): choice → a count per option; number → a histogram of :data:`BINS` equal bins over the
question's range (or the predictions' own range when the question has none); token → a count per token of the text;
order → for each item, how many put it at each place. Right is the check's own verdict (``compare``, the one a
learner gets alone); close is one step short of it: :func:`close`.
"""
from __future__ import annotations

import math

from core.checks.base import Answer, Check, Setup, Verdict, compare

BINS = 10
CLOSE_FACTOR = 2  # a number within twice the check's tolerance is close


def close(verdict: Verdict) -> bool:
    """Not right, but nearly: a number within CLOSE_FACTOR × the tolerance; the runner-up option or token (rank 2);
    an order with at most two places wrong (one swap)."""
    if verdict.right:
        return False
    d = verdict.detail
    if "rel_error" in d:
        return d["rel_error"] <= CLOSE_FACTOR * d["tolerance"] or d["abs_error"] <= CLOSE_FACTOR * d["abs_tolerance"]
    if "positions_right" in d:
        return d["positions_right"] >= d["of"] - 2
    return d.get("rank") == 2


def edges(setup: Setup, values: list[float], extra: float | None = None) -> list[float]:
    """BINS + 1 bin edges: the question's range when it has one, else the values' (and the answer's) own."""
    seen = [*values, *([extra] if extra is not None else [])]
    low = setup.low if setup.low is not None else min(seen, default=0.0)
    high = setup.high if setup.high is not None else max(seen, default=1.0)
    if not math.isfinite(low) or not math.isfinite(high) or high <= low:
        high = low + 1.0
    step = (high - low) / BINS
    return [low + i * step for i in range(BINS)] + [high]


def bin_of(value: float, bounds: list[float]) -> int:
    """The bin holding ``value``: [a, b) for each bin but the last, which is [a, b]."""
    for i in range(BINS):
        if value < bounds[i + 1]:
            return max(i, 0)
    return BINS - 1


def tally(check: Check, setup: Setup, predictions: list, answer: Answer | None = None) -> dict:
    """The distribution of ``predictions`` (already validated: core/checks/base.validate) and, with the model's
    ``answer``, where it falls and how many were right or close."""
    out = {"kind": check.kind, "answered": len(predictions)}
    known = answer is not None and not answer.missing
    if check.kind in ("choice", "token"):
        index = {o: i for i, o in enumerate(setup.options)}
        counts = [0] * len(setup.options)
        for p in predictions:
            counts[index[p] if check.kind == "choice" else int(p)] += 1
        out["labels"], out["counts"] = list(setup.options), counts
    elif check.kind == "number":
        values = [float(p) for p in predictions]
        bounds = edges(setup, values, float(answer.value) if known else None)
        counts = [0] * BINS
        for v in values:
            counts[bin_of(v, bounds)] += 1
        out["edges"], out["counts"] = bounds, counts
        out["median"] = sorted(values)[len(values) // 2] if values else None
    else:  # order: places[item][k] = how many put the item at place k + 1
        places = {o: [0] * len(setup.options) for o in setup.options}
        for p in predictions:
            for k, item in enumerate(p):
                places[item][k] += 1
        out["labels"], out["places"] = list(setup.options), [places[o] for o in setup.options]
    if known:
        verdicts = [compare(check, setup, tuple(p) if check.kind == "order" else p, answer) for p in predictions]
        out["right"] = sum(v.right for v in verdicts)
        out["close"] = sum(close(v) for v in verdicts)
        out["answer"] = list(answer.value) if isinstance(answer.value, tuple) else answer.value
        if check.kind == "number":
            out["answer_bin"] = bin_of(float(answer.value), out["edges"])
    return out
