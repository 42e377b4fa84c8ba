"""N-gram counting throughput on Moby-Dick: core.ngram.ngram.NgramModel against fitting nltk.lm, in the same run.

Both count every k-gram, k = 1..n, of the same tokenised sentences with NLTK's padding (n-1 <s> and </s>), and
both end with structures that answer P(w | context). Tokenisation is done once beforehand and not timed.
Scoring: the perplexity of 200 held-out sentences under trigram add-one (nltk.lm.Laplace), ours and NLTK's
measured alternately in the same run (medians of 20).

    python -m benchmarks.bench_ngram [--quick]
"""
from __future__ import annotations

import sys
import time

from nltk.lm import MLE, Laplace
from nltk.lm.preprocessing import pad_both_ends, padded_everygram_pipeline
from nltk.util import ngrams

from benchmarks.common import paired_median_seconds, print_table, row
from core.text.corpora import load_corpus
from core.ngram.ngram import NgramModel, tokenize_sentences

GOAL = "≥ 20× NLTK's tokens/s"


def _best(fn, repeats: int) -> float:
    """Best wall time of a few runs (the machine is shared, so the minimum is the least noisy)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def _fit_nltk(n, sentences):
    lm = MLE(n)
    lm.fit(*padded_everygram_pipeline(n, sentences))
    return lm


def _fit_laplace(n, sentences):
    lm = Laplace(n)
    lm.fit(*padded_everygram_pipeline(n, sentences))
    return lm


def run(quick: bool = False) -> list[dict]:
    sentences = tokenize_sentences(load_corpus("moby_dick"), lowercase=True)
    if quick:
        sentences = sentences[:2000]
    tokens = sum(map(len, sentences))
    rows = []
    for n in (3, 5):
        ours = _best(lambda: NgramModel(sentences, n, boundaries=True), 1 if quick else 3)
        ref = _best(lambda: _fit_nltk(n, sentences), 1)
        name = f"count 1..{n}-grams{' (quick subset)' if quick else ''}"
        rows.append(row(f"{name}: throughput", tokens / ours, tokens / ref, "tokens/s", GOAL))
        rows.append(row(f"{name}: fit time", ours, ref, "s", "ratio ≤ 0.05"))
    # Scoring held-out sentences (chain rule + perplexity), trigram Laplace: ours in one array pass (score_batch),
    # and sentence by sentence (score(), what the tab calls), each against nltk.lm, alternating, medians.
    held_out = sentences[-200:]
    ours_lm, ref_lm = NgramModel(sentences, 3, boundaries=True), _fit_laplace(3, sentences)
    reference = lambda: [ref_lm.perplexity(list(ngrams(pad_both_ends(s, 3), 3))) for s in held_out]  # noqa: E731
    repeats = 5 if quick else 20
    ours, ref = paired_median_seconds(lambda: [s.perplexity for s in ours_lm.score_batch(held_out, "add_k")],
                                      reference, repeats=repeats)
    rows.append(row(f"score {len(held_out)} sentences, trigram add-one (batch)", ours, ref, "s", "ratio ≤ 0.2",
                    target_ratio=0.2))
    ours, ref = paired_median_seconds(lambda: [ours_lm.score(s, "add_k").perplexity for s in held_out], reference,
                                      repeats=repeats)
    rows.append(row(f"score {len(held_out)} sentences one by one, trigram add-one", ours, ref, "s",
                    "none (for scale)"))
    print(f"Moby-Dick: {tokens:,} word tokens in {len(sentences):,} sentences (lowercased), NLTK padding")
    return rows


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
