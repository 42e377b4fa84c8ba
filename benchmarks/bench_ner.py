"""NER latency: our core.tasks.ner pipeline vs transformers' token-classification pipeline, same weights, same process.

Text: 200 words of Moby-Dick (one window), and 20,000 characters (many 512-token windows, stride 128). Both sides
return grouped entities with aggregation "simple"; ours also computes the full per-token probability table. Two
models with random weights and the 9 CoNLL labels: tiny (2 layers, hidden 32) and bert-base-sized (12 layers, hidden
768). Measured alternately (paired medians), so machine load hits both alike. Run: python -m benchmarks.bench_ner
"""
from __future__ import annotations

import argparse
import tempfile

import torch

from benchmarks.common import paired_median_seconds, print_table, row
from core.tasks import ner
from core.loading import registry
from core.loading.checkpoints import MINILM_ID
from core.loading.resolve import resolve
from core.text.corpora import load_corpus
from core.text.limits import MAX_TEXT_CHARS

CONLL = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def write_checkpoint(folder: str, size: str) -> str:
    import transformers

    torch.manual_seed(0)
    labels = dict(id2label=dict(enumerate(CONLL)), label2id={label: i for i, label in enumerate(CONLL)})
    if size == "tiny":
        config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=37, **labels)
    else:
        config = transformers.BertConfig(vocab_size=30522, **labels)  # bert-base: 12 layers, hidden 768, 12 heads
    transformers.BertForTokenClassification(config).eval().save_pretrained(folder)
    minilm = resolve(MINILM_ID, need="tokenizer").directory  # its tokenizer files only
    transformers.BertTokenizerFast.from_pretrained(str(minilm)).save_pretrained(folder)
    return folder


def words_of(text: str, count: int) -> str:
    return " ".join(text.split()[:count])


def run(quick: bool = False) -> list[dict]:
    import transformers

    corpus = load_corpus("moby_dick")
    short, long = words_of(corpus[30_000:], 200), corpus[30_000:30_000 + MAX_TEXT_CHARS]
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for size, repeats in (("tiny", 5 if quick else 30), ("bert-base", 2 if quick else 20)):
            # random weights, bert-base-sized (the Hub is unreachable here): time depends on shapes, not values
            folder = write_checkpoint(f"{root}/{size}", size)
            loaded = registry.load("ner", folder)
            pipe = transformers.pipeline("token-classification", model=folder, tokenizer=folder, device=loaded.device)
            tokens = len(ner.encode(loaded.tokenizer, short).tokens)
            ours, theirs = paired_median_seconds(lambda: ner.entities(ner.tag(short, folder), "simple"),
                                                 lambda: pipe(short, aggregation_strategy="simple"), repeats, warmup=2)
            rows.append(row(f"NER {size}: 200 words ({tokens} tokens), {loaded.device.type} fp32", ours * 1e3,
                            theirs * 1e3, "ms", "ratio ≤ 1.0", target_ratio=1.0))
            if quick and size != "tiny":
                continue
            windows = len(ner.encode(loaded.tokenizer, long).windows)
            ours, theirs = paired_median_seconds(
                lambda: ner.entities(ner.tag(long, folder), "simple"),
                lambda: pipe(long, aggregation_strategy="simple", stride=ner.DEFAULT_STRIDE),
                2 if quick else 20, warmup=1)  # the table row: medians of 20 alternating runs
            rows.append(row(f"NER {size} (random weights): 20k characters ({windows} windows, pad-free batches)",
                            ours * 1e3, theirs * 1e3, "ms",
                            "ratio ≤ 1.0", target_ratio=1.0))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repeats; long text on the tiny model only")
    print_table(run(parser.parse_args().quick))
