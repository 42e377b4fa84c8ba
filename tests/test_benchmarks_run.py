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



def test_every_benchmark_the_runner_finds_has_the_run_it_calls():
    """run.py calls ``run(quick)`` on every bench_*.py it discovers: one without it (bench_deck had only a main) was a
    failed row in every table. Read, not imported (as above)."""
    import ast

    names = run.discover()
    assert len(names) >= 20 and "deck" in names
    for name in names:
        tree = ast.parse((run.ROOT / "benchmarks" / f"bench_{name}.py").read_text(encoding="utf-8"))
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert "run" in functions, name
        arguments = functions["run"].args
        assert arguments.args[0].arg == "quick" and len(arguments.defaults) >= len(arguments.args) - 1, name


def test_the_cold_glove_load_runs_in_a_fresh_process():
    """bench_embeddings times load_glove() in a fresh process from a snippet of source text: after the chapter
    packages moved (issue #50) it named ``core.embeddings``, the package, and failed there on every run."""
    from benchmarks import bench_embeddings

    seconds = bench_embeddings._cold_load_seconds()
    assert isinstance(seconds, float) and seconds > 0  # the snippet ran to its end and printed its time
