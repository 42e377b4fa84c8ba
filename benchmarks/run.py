"""Every benchmark in one table: ratios against the references (transformers, NLTK, gensim) measured in the same
run, plus our absolute figures. CPU always; on a machine with a CUDA GPU, the torch benchmarks again on the GPU.

    python -m benchmarks.run              # all benchmarks, CPU (+ GPU when torch sees one)
    python -m benchmarks.run --quick      # fewer repeats, for a smoke run
    python -m benchmarks.run --device cpu # CPU only, even on a GPU machine
    python -m benchmarks.run --device cuda  # the GPU pass only (an error without a GPU)
    python -m benchmarks.run --only bert ngram

Each benchmarks/bench_<name>.py exposes run(quick) -> rows (see benchmarks/common.py). A benchmark that fails is
reported as a failed row and the exit status is 1; the others still run. The GPU pass runs in a child process,
because models, once loaded, stay on the device they were loaded on.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from benchmarks.common import met_label  # noqa: E402


def discover() -> list[str]:
    return sorted(path.stem.removeprefix("bench_") for path in (ROOT / "benchmarks").glob("bench_*.py"))


# What a benchmark that runs on core's picked device says in its source: registry.load puts a model on get_device().
DEVICE_MARKS = ("get_device", ".to(device", "loaded.device")


def uses_device(name: str) -> bool:
    """Whether a benchmark runs on core's picked device (worth a GPU pass); the others are CPU-only by nature."""
    # Read, not imported: the GPU pass must not need a CPU-only benchmark's reference (gensim, nltk) installed.
    source = (ROOT / "benchmarks" / f"bench_{name}.py").read_text(encoding="utf-8")
    return any(mark in source for mark in DEVICE_MARKS)


def run_pass(names: list[str], device: str, quick: bool) -> list[dict]:
    """Run the named benchmarks in this process on `device` ("cpu" or "cuda")."""
    from core.loading.device import set_device

    set_device(device)
    rows = []
    for name in names:
        started = time.perf_counter()
        try:
            module = importlib.import_module(f"benchmarks.bench_{name}")
            results = module.run(quick)
            for result in results:
                rows.append({**result, "module": name, "device": device})
        except Exception as exc:  # noqa: BLE001 - one broken benchmark must not hide the others' numbers
            traceback.print_exc()
            rows.append({"module": name, "device": device, "benchmark": f"FAILED: {type(exc).__name__}: {exc}"[:90],
                         "ours": math.nan, "reference": None, "ratio": None, "unit": "", "goal": "", "failed": True})
        print(f"  {name} on {device}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return rows


def gpu_pass(names: list[str], quick: bool) -> list[dict]:
    command = [sys.executable, "-m", "benchmarks.run", "--pass-json", "cuda", "--only", *names] + (
        ["--quick"] if quick else [])
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PLM_DEVICE="cuda"))
    try:
        return json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return [{"module": "gpu", "device": "cuda", "benchmark": f"FAILED: GPU pass exited {result.returncode}",
                 "ours": math.nan, "reference": None, "ratio": None, "unit": "", "goal": "", "failed": True}]


# Issue #22's table: (benchmark module, start of the row's name, the issue's wording). Every row is a ratio to its
# reference measured in the same run (alternating, medians over >= 20 repeats), except the cold start (seconds).
ISSUE_22 = [
    ("ngram", "score 200 sentences, trigram add-one (batch)", "n-gram scoring, 200 sentences (vs nltk.lm)"),
    ("lstm", "LSTM Gates view, 300 chars × 1 text", "LSTM Gates view, batch 1 (vs nn.LSTM)"),
    ("lstm", "  Gates view × 1: CPU time", "  same, CPU time on 1 thread"),
    ("lstm", "LSTM Gates view, 300 chars × 4 text", "LSTM Gates view, 4 texts (vs nn.LSTM)"),
    ("lstm", "  Gates view × 4: CPU time", "  same, CPU time on 1 thread"),
    ("embeddings", "train word2vec skip-gram", "word2vec, 1 epoch Moby-Dick (vs gensim)"),
    ("bert", "bert-base size (random weights): forward + attention probs", "BERT-base + attention probs (vs eager)"),
    ("ner", "NER bert-base (random weights): 20k characters", "NER bert-base, 20k chars (vs pipeline)"),
    ("qa", "QA bert-base (random weights): 300-word context", "QA bert-base, 300 words (vs pipeline)"),
    ("startup", "cold start to first answer", "cold start to first answer, --offline"),
    ("startup", "  CPU time of a start", "  same, CPU time of the app's process"),
]


def print_issue_22(rows: list[dict]) -> None:
    """The issue's table, row by row, from this run: figure, target, met."""
    print("\nIssue #22 (bert-base rows: random weights of bert-base size; the Hub is unreachable here, and time "
          "depends on shapes, not values)")
    for module, start, wording in ISSUE_22:
        found = [r for r in rows if r.get("module") == module and r["benchmark"].startswith(start)]
        if not found:
            print(f"  {'-':<4} {wording:<46} not run (python -m benchmarks.run --only {module})")
        for r in found:
            figure = f"ratio {r['ratio']:.3f}" if r.get("ratio") is not None else f"{fmt(r['ours'])} {r['unit']}"
            print(f"  {met_label(r) or '-':<4} {wording:<46} {r['device']:<5} {figure:<14} goal {r['goal']}")


# Issue #36's rows: the live BPE of the tokenizer lab, ours against tokenizers, and the size where the tab switches.
ISSUE_36 = [
    ("tokenizer_lab", "BPE on Moby-Dick, vocabulary 1,000", "live BPE, Moby-Dick, vocab 1,000 (vs tokenizers)"),
    ("tokenizer_lab", "corpus bytes where core/transformer/bpe.py takes 2 s", "  size where ours takes 2 s (tab switches)"),
]


def print_issue_36(rows: list[dict]) -> None:
    print("\nIssue #36 (python -m benchmarks.run --only tokenizer_lab)")
    for module, start, wording in ISSUE_36:
        for r in (r for r in rows if r.get("module") == module and r["benchmark"].startswith(start)):
            figure = f"ratio {r['ratio']:.3f}" if r.get("ratio") is not None else f"{fmt(r['ours'])} {r['unit']}"
            print(f"  {met_label(r) or '-':<4} {wording:<46} {r['device']:<5} {figure:<14} goal {r['goal']}")


def fmt(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.4g}"


def print_table(rows: list[dict]) -> None:
    header = (f"{'tab':<11} {'device':<6} {'benchmark':<76} {'ours':>10} {'reference':>10} {'ratio':>7}  "
              f"{'unit':<10} {'met':<4} goal")
    print(header)
    print("-" * len(header))
    for r in rows:
        ratio = f"{r['ratio']:.3f}" if r.get("ratio") is not None else "-"
        print(f"{r['module']:<11} {r['device']:<6} {r['benchmark'][:76]:<76} {fmt(r['ours']):>10} "
              f"{fmt(r.get('reference')):>10} {ratio:>7}  {r.get('unit', ''):<10} {met_label(r):<4} "
              f"{r.get('goal', '')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats: a smoke run, not a measurement")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="auto: CPU, plus a GPU pass when torch sees a CUDA GPU; cuda: the GPU pass only")
    parser.add_argument("--only", nargs="+", metavar="NAME", help=f"a subset of: {' '.join(discover())}")
    parser.add_argument("--pass-json", choices=["cpu", "cuda"], help=argparse.SUPPRESS)  # internal: a child pass
    args = parser.parse_args(argv)
    names = args.only or discover()
    unknown = set(names) - set(discover())
    if unknown:
        parser.error(f"no benchmarks/bench_{sorted(unknown)[0]}.py")

    if args.pass_json:
        print(json.dumps(run_pass(names, args.pass_json, args.quick), default=str))
        return 0

    import torch

    gpu = torch.cuda.is_available()
    if args.device == "cuda" and not gpu:
        parser.error("--device cuda: torch sees no CUDA GPU on this machine")
    print(f"torch {torch.__version__} · {os.cpu_count()} CPU cores · torch threads {torch.get_num_threads()}"
          + (f" · GPU {torch.cuda.get_device_name(0)}" if gpu else " · no GPU"), flush=True)
    rows = run_pass(names, "cpu", args.quick) if args.device != "cuda" else []
    on_device = [name for name in names if uses_device(name)]
    if gpu and args.device in ("auto", "cuda") and on_device:
        rows += gpu_pass(on_device, args.quick)
    print()
    print_table(rows)
    print("\nratio = ours / reference, measured in this run (for times, < 1 means we are faster).")
    print_issue_22(rows)
    print_issue_36(rows)
    checked = [r for r in rows if r.get("met") is not None]
    if checked:
        print(f"\nTargets (rows with a checkable goal): {sum(r['met'] for r in checked)} of {len(checked)} met")
        for r in checked:
            figure = f"ratio {r['ratio']:.3f}" if r.get("ratio") is not None else f"{fmt(r['ours'])} {r['unit']}"
            print(f"  {met_label(r):<4} {r['module']:<11} {r['device']:<5} {r['benchmark'][:76]:<76} {figure:<14} "
                  f"goal {r['goal']}")
    return 1 if any(r.get("failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
