"""Fill-mask latency: core.fill_mask vs transformers' fill-mask pipeline, same checkpoint, same process, same device.

Checkpoints are random BertForMaskedLM weights written by transformers (bert-base sized: L=12, H=768, A=12; and a
tiny one), with bert-base-uncased's tokenizer from the packaged MiniLM. Random weights cost the same to run as real
ones. Ratio = ours / reference (median seconds per call); goal ≤ 1.0.

    python -m benchmarks.bench_fill_mask [--quick]
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHORT = "The weather today is very [MASK], so we had to cancel the outdoor game."
LONG = ("Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purse, and "
        "nothing particular to interest me on shore, I thought I would sail about a little and see the watery part of "
        "the world. It is a way I have of driving off the [MASK] and regulating the circulation. Whenever I find "
        "myself growing grim about the mouth; whenever it is a damp, drizzly November in my soul, then, I account "
        "it high time to get to [MASK] as soon as I can.")  # ~110 tokens, two blanks
TOP_K = 5


def write_checkpoint(folder: Path, size: str) -> str:
    import torch
    import transformers

    from core.loading.checkpoints import MINILM_ID
    from core.loading.resolve import resolve

    torch.manual_seed(0)
    config = (transformers.BertConfig() if size == "base" else
              transformers.BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=37))
    transformers.BertForMaskedLM(config).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)
    return str(folder)


def run(quick: bool = False) -> list[dict]:
    import torch
    import transformers

    from benchmarks.common import paired_median_seconds, row
    from core.mlm import mlm
    from core.loading import registry
    from core.loading.device import get_device

    transformers.logging.set_verbosity_error()
    device = get_device()
    repeats = 5 if quick else 20
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size, texts in (("tiny", [("short", SHORT)]), ("base", [("short", SHORT), ("110 tokens, 2 masks", LONG)])):
            folder = write_checkpoint(Path(tmp) / size, size)
            loaded = registry.load("mlm", folder)
            pipe = transformers.pipeline("fill-mask", model=folder, tokenizer=folder,
                                         device=device if device.type != "cpu" else -1)
            for label, text in texts:
                def ours(loaded=loaded, text=text):
                    mlm.fill_mask(loaded, text, TOP_K)
                    if device.type == "cuda":
                        torch.cuda.synchronize()

                def reference(pipe=pipe, text=text):
                    pipe(text, top_k=TOP_K)
                    if device.type == "cuda":
                        torch.cuda.synchronize()

                mine, theirs = paired_median_seconds(ours, reference, repeats=repeats)  # alternated: noise hits both
                name = "bert-base (L=12, H=768)" if size == "base" else "tiny (L=2, H=32)"
                rows.append(row(f"fill-mask, {name}, {label}, {device.type}", mine * 1e3, theirs * 1e3, "ms/call",
                                "≤ 1.0"))
            registry.clear_cache()
    return rows


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run(quick="--quick" in sys.argv))
