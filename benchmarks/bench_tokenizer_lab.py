"""Transformer & GPT tab, tokenizer lab: the live BPE, trained on Moby-Dick at vocabulary 1,000 by the project's
teaching trainer (core/transformer/bpe.py) and by the tokenizers library's BpeTrainer, alternately in the same run (both count
GPT-2's byte-level words line by line, then merge; the merges are checked equal). Then the threshold the tab uses:
the corpus size at which core/transformer/bpe.py takes 2 s at the slider's largest vocabulary (core/tokenizer_lab.MAX_VOCAB),
from timings on 1 to 4 copies of Moby-Dick, against core/tokenizer_lab.OURS_MAX_BYTES (above it the tab trains with
tokenizers).

ratio = ours / tokenizers (above 1: ours is slower). tokenizers uses every core it gets (rayon); core/transformer/bpe.py one.

    python -m benchmarks.bench_tokenizer_lab [--quick]
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import alternating_medians, print_table, row  # noqa: E402
from core.transformer import bpe, tokenizer_lab  # noqa: E402
from core.text.corpora import load_corpus  # noqa: E402

VOCAB = 1000
SECONDS = 2.0  # the teaching trainer's budget in the tab


def ours(lines: list[str], vocab_size: int) -> bpe.BPE:
    return bpe.train(bpe.count_words(lines), vocab_size)


def theirs(lines: list[str], vocab_size: int) -> list[tuple[str, str]]:
    return tokenizer_lab.library_merges(lines, vocab_size)


def threshold_bytes(lines: list[str], repeats: int) -> tuple[float, list[tuple[int, float]]]:
    """Bytes of corpus at which ours takes SECONDS at MAX_VOCAB: a line through (bytes, median seconds) of 1-4 copies
    of the corpus (counting grows with bytes; merging with distinct words, the same in every copy). Seconds of CPU
    time of this thread: core/transformer/bpe.py runs on one, and on an idle server that is its wall time, which other jobs'
    load on a shared build machine would inflate 2-3× here."""
    points = []
    for copies in (1, 2, 3, 4):
        text = lines * copies
        size = sum(len(line.encode("utf-8")) + 1 for line in text)
        times = []
        for _ in range(repeats):
            start = time.thread_time()
            ours(text, tokenizer_lab.MAX_VOCAB)
            times.append(time.thread_time() - start)
        points.append((size, statistics.median(times)))
    (x0, y0), (x1, y1) = points[0], points[-1]
    slope = (y1 - y0) / (x1 - x0)
    return x0 + (SECONDS - y0) / slope, points


def run(quick: bool = False) -> list[dict]:
    lines = load_corpus("moby_dick").splitlines()
    assert [(m.left, m.right) for m in ours(lines, VOCAB).merges] == theirs(lines, VOCAB)  # the same merges
    repeats = 3 if quick else 20
    t_ours, t_theirs = alternating_medians([lambda: ours(lines, VOCAB), lambda: theirs(lines, VOCAB)], repeats,
                                           warmup=1)
    rows = [row(f"BPE on Moby-Dick, vocabulary {VOCAB:,}: core/transformer/bpe.py / tokenizers BpeTrainer", t_ours, t_theirs, "s",
                "report the ratio")]
    cpu = alternating_medians([lambda: ours(lines, VOCAB)], repeats, warmup=0, clock=time.thread_time)[0]
    rows.append(row("  core/transformer/bpe.py, CPU seconds of its one thread", cpu, None, "CPU s", "-"))
    counting = alternating_medians([lambda: bpe.count_words(lines)], repeats, warmup=1)[0]
    rows.append(row("  of which core/transformer/bpe.py counting words (GPT-2 pre-tokenizer, line by line)", counting, None, "s",
                    "-"))
    size, points = threshold_bytes(lines, 2 if quick else 5)
    threshold = row(f"corpus bytes where core/transformer/bpe.py takes {SECONDS:g} s at vocabulary {tokenizer_lab.MAX_VOCAB:,} "
                    f"(encoded: {tokenizer_lab.OURS_MAX_BYTES:,})", size, None, "bytes", "OURS_MAX_BYTES within ±50%")
    threshold["met"] = 0.5 <= size / tokenizer_lab.OURS_MAX_BYTES <= 1.5
    rows.append(threshold)
    for copies, (nbytes, seconds) in enumerate(points, 1):
        rows.append(row(f"  core/transformer/bpe.py at vocabulary {tokenizer_lab.MAX_VOCAB:,} on {copies} × Moby-Dick "
                        f"({nbytes / 1e6:.1f} MB)", seconds, None, "CPU s", "-"))
    return rows


if __name__ == "__main__":
    results = run(quick="--quick" in sys.argv)
    print_table(results)
    if "--json" in sys.argv:
        print(json.dumps(results, default=str))
