"""Classification & fine-tuning: our classifier vs transformers' text-classification pipeline (same weights), then
the fine-tuning view's wall times on this machine.

1. Latency of one sentence pair through core.tasks.classify.classify and through transformers.pipeline(
   "text-classification"), measured alternately (medians), on a BERT-base-sized BertForSequenceClassification with
   random weights (12 layers, hidden 768) written by transformers into a temporary folder.
2. The default fine-tune (baselines, frozen MiniLM features, (a) head 150 steps, (b) top layer × 4 epochs) on the
   bundled English and Chinese sets: goal ≤ 60 s on 2 cores. With --max (or not --quick): the sliders' maxima
   (500 head steps, 6 layers, 20 epochs), which must finish or stop at the 120 s budget.

Run: python -m benchmarks.bench_classify [--quick] [--max]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import torch

from benchmarks.common import paired_median_seconds, print_table, row
from core.tasks import classify, finetune, finetune_train
from core.text.corpora import DEFAULT_LABELLED, LABELLED
from core.loading.checkpoints import MINILM_ID
from core.loading.resolve import resolve

PAIR = ("The film was funny, warm and beautifully acted.", "I loved every minute of this movie.")


def _base_sized_checkpoint(folder: str) -> None:
    import transformers

    torch.manual_seed(0)
    config = transformers.BertConfig(id2label={0: "negative", 1: "positive"})  # BERT-base shape
    transformers.BertForSequenceClassification(config).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)


def latency_rows(quick: bool) -> list[dict]:
    import transformers

    with tempfile.TemporaryDirectory() as folder:
        _base_sized_checkpoint(folder)
        pipe = transformers.pipeline("text-classification", model=folder, top_k=None, device="cpu")
        ours = lambda: classify.classify(*PAIR, folder)  # noqa: E731
        reference = lambda: pipe({"text": PAIR[0], "text_pair": PAIR[1]})  # noqa: E731
        mine, theirs = paired_median_seconds(ours, reference, repeats=5 if quick else 20, warmup=2)
    return [row("one sentence pair, BERT-base-sized classifier (vs pipeline)", mine * 1e3, theirs * 1e3, "ms",
                "≤ 1.1× the pipeline")]


def fine_tune_seconds(dataset: str, seed: int, **settings) -> tuple[float, finetune_train.Outcome]:
    """Wall time of one whole run from the learner's click: split, baselines, encoding, (a), (b), analysis."""
    started = time.perf_counter()
    data = finetune.split(finetune.load_bundled(dataset), seed)
    outcome = None
    for update in finetune_train.train(data, **settings):
        outcome = update
    return time.perf_counter() - started, outcome


def fine_tune_rows(quick: bool, at_max: bool) -> list[dict]:
    rows = []
    for index, dataset in enumerate(LABELLED):
        seconds, outcome = fine_tune_seconds(dataset, finetune.DEFAULT_SEED)  # the app's default run
        short = "EN" if index == 0 else "ZH"
        rows.append(row(f"default fine-tune, bundled {short} (baselines, (a), (b) 1 layer × 4 epochs)", seconds,
                        None, "s", "≤ 60 s"))
        accuracies = list(zip(("majority", "n-gram LR", "GloVe LR"), (b.accuracy for b in outcome.baselines)))
        accuracies += [("frozen+head", outcome.head_accuracy), ("fine-tuned", outcome.tuned_accuracy)]
        for name, accuracy in accuracies:
            rows.append(row(f"  held-out accuracy {short}, seed {finetune.DEFAULT_SEED}: {name}", accuracy, None, "",
                            ""))
    if at_max and not quick:
        seconds, outcome = fine_tune_seconds(DEFAULT_LABELLED, 7, head_steps=finetune_train.MAX_HEAD_STEPS,
                                             unfrozen=finetune_train.MAX_LAYERS, epochs=finetune_train.MAX_EPOCHS)
        stopped = "stopped at budget" if outcome.notes and "budget" in outcome.notes[-1] else "finished"
        rows.append(row(f"slider maxima, bundled EN (500 steps, 6 layers, 20 epochs): {stopped}, "
                        f"{outcome.epochs_done} epochs", seconds, None, "s", "≤ 120 s"))
    return rows


def run(quick: bool = False, at_max: bool = True) -> list[dict]:
    return latency_rows(quick) + fine_tune_rows(quick, at_max)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--max", action="store_true", help="also time the sliders' maxima (up to ~2 minutes)")
    args = parser.parse_args()
    print_table(run(args.quick, args.max or not args.quick))
