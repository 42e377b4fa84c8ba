"""Timing helpers shared by the benchmark scripts: medians over repeats, and the result table."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(fn: Callable[[], object], repeats: int = 20, warmup: int = 3) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs, after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_median_seconds(ours: Callable[[], object], reference: Callable[[], object], repeats: int = 20,
                          warmup: int = 3) -> tuple[float, float]:
    """Median wall times of two functions measured alternately, so machine load drifts hit both alike."""
    ours_median, reference_median = alternating_medians([ours, reference], repeats, warmup)
    return ours_median, reference_median


def alternating_medians(fns: list[Callable[[], object]], repeats: int = 20, warmup: int = 3,
                        clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Median time of each function, the functions run in turn (f0, f1, …, f0, f1, …) ``repeats`` times. ``clock``:
    wall time by default; time.thread_time gives the CPU time of single-threaded code, which other processes'
    load barely moves."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, fn_times in zip(fns, times):
            start = clock()
            fn()
            fn_times.append(clock() - start)
    return [statistics.median(t) for t in times]


def row(benchmark: str, ours: float, reference: float | None, unit: str, goal: str, *,
        target_ratio: float | None = None, target_value: float | None = None) -> dict:
    """One result row; ratio = ours / reference (lower is better for times). ``target_ratio`` / ``target_value``
    make the goal checkable: the row is met when the ratio / our figure is at or below it."""
    ratio = ours / reference if reference else None
    met = None
    if target_ratio is not None and ratio is not None:
        met = ratio <= target_ratio
    if target_value is not None:
        met = (met is not False) and ours <= target_value
    return {"benchmark": benchmark, "ours": ours, "reference": reference, "ratio": ratio, "unit": unit, "goal": goal,
            "met": met}


def met_label(r: dict) -> str:
    return {True: "yes", False: "NO"}.get(r.get("met"), "")


def print_table(rows: list[dict]) -> None:
    header = f"{'benchmark':<58} {'ours':>12} {'reference':>12} {'ratio':>8}  {'unit':<10} {'met':<4} goal"
    print(header)
    print("-" * len(header))
    for r in rows:
        ref = f"{r['reference']:.4g}" if r["reference"] is not None else "-"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        print(f"{r['benchmark']:<58} {r['ours']:>12.4g} {ref:>12} {ratio:>8}  {r['unit']:<10} {met_label(r):<4} "
              f"{r['goal']}")
