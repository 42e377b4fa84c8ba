"""Word embeddings: GloVe queries against gensim's KeyedVectors.most_similar on the same vectors, in the same run;
the time to load GloVe; and a word2vec epoch on Moby-Dick next to gensim's Word2Vec with the same settings,
with both models' held-out loss.

    python -m benchmarks.bench_embeddings [--quick]
"""
from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time

import numpy as np
import torch
from gensim.models import KeyedVectors, Word2Vec

from benchmarks.common import paired_median_seconds, print_table, row
from core.embeddings import embeddings as w2v
from core.embeddings import word2vec
from core.loading.device import one_cpu_thread
from core.text.corpora import load_corpus
from core.loading.paths import REPO_ROOT

LOAD_SNIPPET = ("import time; from core.embeddings import embeddings as w; t = time.perf_counter(); w.load_glove(); "
                "print(time.perf_counter() - t)")


def _cold_load_seconds() -> float:
    """load_glove() in a fresh process (the OS file cache is warm, the process is not)."""
    out = subprocess.run([sys.executable, "-c", LOAD_SNIPPET], cwd=REPO_ROOT, capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    return float(out.stdout.strip().splitlines()[-1])


def _cpu_ms_per_query(query, words: list[str]) -> float:
    """CPU time per query: on a shared, busy machine wall time mostly measures waiting for a core."""
    started = time.process_time()
    for word in words:
        query(word)
    return (time.process_time() - started) / len(words) * 1e3


def _query_rows(glove: w2v.WordVectors, kv: KeyedVectors, quick: bool) -> list[dict]:
    rng = np.random.default_rng(0)
    words = [glove.words[i] for i in rng.choice(50_000, size=20 if quick else 100, replace=False)]
    ours_words, their_words = itertools.cycle(words), itertools.cycle(words)  # the same words, in the same order
    nn_ours, nn_ref = paired_median_seconds(lambda: glove.most_similar([next(ours_words)], topn=10),
                                            lambda: kv.most_similar(next(their_words), topn=10),
                                            repeats=30 if quick else 200, warmup=5)
    an_ours, an_ref = paired_median_seconds(lambda: glove.most_similar(["king", "woman"], ["man"], topn=10),
                                            lambda: kv.most_similar(positive=["king", "woman"], negative=["man"],
                                                                    topn=10),
                                            repeats=30 if quick else 200, warmup=5)
    cpu_ours = _cpu_ms_per_query(lambda word: glove.most_similar([word], topn=10), words)
    cpu_ref = _cpu_ms_per_query(lambda word: kv.most_similar(word, topn=10), words)
    return [
        row("GloVe nearest neighbours, 400k words, top 10 (vs gensim)", nn_ours * 1e3, nn_ref * 1e3, "ms/query",
            "ratio ≤ 1.0 and ≤ 10 ms"),
        row("  same, CPU time summed over threads (less load-sensitive)", cpu_ours, cpu_ref, "ms/query", "≤ 10 ms"),
        row("GloVe analogy king − man + woman, top 10 (vs gensim)", an_ours * 1e3, an_ref * 1e3, "ms/query",
            "ratio ≤ 1.0"),
    ]


def _held_out_loss(corpus: word2vec.Corpus, words: list[str], inp: np.ndarray, out: np.ndarray) -> float:
    """The negative-sampling loss per pair on 50k fixed (centre, context, 5 noise words) draws from the corpus,
    with a model's input and output tables: the same yardstick for our model and gensim's."""
    rng = np.random.default_rng(123)
    centres, contexts = word2vec._examples(corpus.ids, 4, False, -1, rng)
    pick = rng.choice(len(centres), size=50_000, replace=False)
    table = word2vec.unigram_table(corpus.counts)
    noise = table[rng.integers(0, len(table), size=(50_000, 5))]
    row = {w: i for i, w in enumerate(words)}
    rows = np.array([row[w] for w in corpus.vocab])  # our ids → the model's rows
    inp, out = torch.from_numpy(np.asarray(inp)[rows]), torch.from_numpy(np.asarray(out)[rows])
    h = inp[centres[pick]]  # (N, D)
    scores = torch.cat([(out[contexts[pick]] * h).sum(-1, keepdim=True), -(out[noise] * h[:, None]).sum(-1)], 1)
    return float(-torch.nn.functional.logsigmoid(scores).sum(1).mean())


def _train_rows(quick: bool) -> list[dict]:
    """One epoch of the tab's skip-gram (50d, window 4, 5 negatives, min count 5) from the text, against gensim's
    optimised C/Cython Word2Vec with the same settings on the same tokens on 2 worker threads (its time leaves out
    our tokenisation, which ours includes), alternating, medians. Then the held-out loss of both after 1 and 3
    epochs, so a faster epoch is not bought with a worse model."""
    text = load_corpus("moby_dick")
    tokens = word2vec.corpus_tokens(text)
    sentences = [tokens[i:i + 1000] for i in range(0, len(tokens), 1000)]

    def gensim(config: word2vec.Word2VecConfig) -> Word2Vec:
        return Word2Vec(sentences, vector_size=config.dim, window=config.window, negative=config.negatives,
                        min_count=config.min_count, epochs=config.epochs, sample=config.subsample, sg=1,
                        workers=2, seed=0)

    one = word2vec.Word2VecConfig(epochs=1)
    ours, reference = paired_median_seconds(lambda: word2vec.train_word2vec(text, one), lambda: gensim(one),
                                            repeats=3 if quick else 20, warmup=1)
    rows = [row("train word2vec skip-gram on Moby-Dick, 1 epoch (vs gensim C, 2 threads)", ours, reference, "s",
                "ratio ≤ 2.0", target_ratio=2.0)]
    corpus = word2vec.build_corpus(text, one.min_count)
    for epochs in (1, 3):
        config = word2vec.Word2VecConfig(epochs=epochs)
        with one_cpu_thread(torch.device("cpu")):
            model = word2vec._fit(corpus, config, torch.device("cpu"), None)[0]
        ours_loss = _held_out_loss(corpus, corpus.vocab, model.inp.weight.detach()[:-1].numpy(),
                                   model.out.weight.detach().numpy())
        theirs = gensim(config)
        reference_loss = _held_out_loss(corpus, theirs.wv.index_to_key, theirs.wv.vectors, theirs.syn1neg)
        rows.append(row(f"  held-out negative-sampling loss after {epochs} epoch(s) (vs gensim)", ours_loss,
                        reference_loss, "loss/pair", "ratio ≤ 1.05 (as good a model)", target_ratio=1.05))
    return rows


def run(quick: bool = False) -> list[dict]:
    load = _cold_load_seconds()
    glove = w2v.load_glove()
    kv = KeyedVectors(glove.dim)
    kv.add_vectors(glove.words, np.asarray(glove.vectors))
    kv.fill_norms()  # gensim caches the norms on its first query; not timed
    rows = [row("load GloVe 6B 50d (fresh process, warm file cache)", load, None, "s", "≤ 2 s")]
    rows += _query_rows(glove, kv, quick)
    rows += _train_rows(quick)
    return rows


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
