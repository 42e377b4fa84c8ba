"""benchmarks/run.py: which benchmarks get a GPU pass (issue #38 §6), decided without importing them."""
from __future__ import annotations

import sys

from benchmarks import run


def test_the_gpu_pass_covers_the_bert_views_and_reads_the_files_without_importing_them():
    """The BERT group (fill-mask, NER, QA, attention, the block) and the other encoder benchmarks run again on a
    GPU; the CPU-only ones (n-grams, word2vec against gensim, the cold start) do not. Deciding imports nothing: the
    lent GPU machine has no gensim or nltk, and importing bench_embeddings there ended the whole pass."""
    before = set(sys.modules)
    picked = {name for name in run.discover() if run.uses_device(name)}
    assert picked == {"attention", "attribution", "bert", "char_bert", "mlm", "ner", "qa", "transformer"}
    assert not [name for name in set(sys.modules) - before if name.startswith("benchmarks.bench_")]
