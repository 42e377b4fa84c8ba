"""Forward latency of our BertModel vs transformers' BertModel, same weights, same process.

CPU (or the picked device), fp32, batch 1, sequence length 128. Two models: the real MiniLM-L6 and a random
bert-base-sized model. Run: python -m benchmarks.bench_bert [--quick]
"""
from __future__ import annotations

import argparse
import tempfile

import torch

from benchmarks.common import paired_median_seconds, print_table, row
from core.loading import registry
from core.nets import bert
from core.loading.checkpoints import MINILM_ID
from core.loading.resolve import resolve
from core.loading.device import get_device

SEQ_LEN = 128


def _pair(folder: str, device: torch.device):
    import transformers

    reference = transformers.BertModel.from_pretrained(folder).to(device).eval()  # default (sdpa) attention
    ours = registry.from_pretrained(folder, bert.BertOnlyEncoder, device=device)
    return ours, reference


def _time_pair(name: str, folder: str, repeats: int, device: torch.device) -> list[dict]:
    ours, reference = _pair(folder, device)
    vocab = ours.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.randint(1000, vocab, (1, SEQ_LEN), generator=generator).to(device)
    mask = torch.ones_like(input_ids)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def run_ours(attn: bool):
        with torch.inference_mode():
            ours(input_ids, mask, output_attentions=attn)
        sync()

    def run_reference(attn: bool):
        with torch.inference_mode():
            reference(input_ids=input_ids, attention_mask=mask, output_attentions=attn)
        sync()

    rows = []
    mine, theirs = paired_median_seconds(lambda: run_ours(False), lambda: run_reference(False), repeats)
    rows.append(row(f"{name}: forward, T={SEQ_LEN}, {device.type} fp32", mine * 1e3, theirs * 1e3, "ms", "ratio ≤ 1.0",
                    target_ratio=1.0))
    reference.set_attn_implementation("eager")  # the reference must materialise probabilities too
    mine, theirs = paired_median_seconds(lambda: run_ours(True), lambda: run_reference(True), repeats)
    rows.append(row(f"{name}: forward + attention probs (vs eager)", mine * 1e3, theirs * 1e3, "ms", "ratio ≤ 1.0",
                    target_ratio=1.0))
    return rows


def run(quick: bool = False) -> list[dict]:
    import transformers

    torch.manual_seed(0)
    device = get_device()
    repeats = 5 if quick else 30  # medians of alternating runs; bert-base gets 20, the minimum
    rows = _time_pair("MiniLM-L6 (real weights)", str(resolve(MINILM_ID).directory), repeats, device)
    with tempfile.TemporaryDirectory() as folder:
        transformers.BertModel(transformers.BertConfig()).save_pretrained(folder)  # random bert-base weights
        rows += _time_pair("bert-base size (random weights)", folder, 3 if quick else 20, device)
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    print_table(run(parser.parse_args().quick))
