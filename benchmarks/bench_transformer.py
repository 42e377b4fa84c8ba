"""Transformer tab benchmark: following one token through every step of MiniLM-L6 on a 32-token sentence, on
core's picked device (benchmarks.run: the CPU, then the GPU where there is one; the goal is stated for the CPU).

ours:      the "Inside a block" handler end to end (tokenise → walk every sub-module of every layer, keeping the
           token's slice of each step → summary, 4 plotly figures, step table), caches cleared before every call;
           and the walk alone, without figures.
reference: the plain encoder forward of the same model on the same ids (core.nets.bert's fused attention,
           no probabilities), measured alternately in the same process. The ratio says what the walk-through costs on
           top of the forward pass it has to make anyway.

    python benchmarks/bench_transformer.py [--quick]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from benchmarks.common import paired_median_seconds, print_table  # noqa: E402
from core.loading import registry  # noqa: E402
from core.transformer import transformer as tr  # noqa: E402
from core.loading.checkpoints import MINILM_ID  # noqa: E402
from core.loading.device import get_device  # noqa: E402

SENTENCE = ("The bank raised its interest rates again this spring, so on Sunday we walked along the quiet river "
            "bank and talked about whether to move our savings elsewhere.")
TOKEN, LAYER = "bank", 3


def clear_caches() -> None:
    tr._walk.cache_clear()
    tr._tokenize.cache_clear()


def run(quick: bool = False) -> list[dict]:
    from demo.transformer.transformer import block

    device = get_device()
    repeats = 5 if quick else 30
    loaded = registry.load("encoder", MINILM_ID)
    tokens = len(tr.tokenize(SENTENCE, MINILM_ID).ids)
    assert tokens == 32, f"the benchmark sentence should be 32 tokens, it is {tokens}"

    def handler():
        clear_caches()
        return block(MINILM_ID, SENTENCE, TOKEN, LAYER)

    def walk_only():
        clear_caches()
        return tr.walk(SENTENCE, MINILM_ID, TOKEN)

    def forward():
        with torch.inference_mode():
            ids = torch.tensor([loaded.tokenizer.encode(SENTENCE).ids], device=loaded.device)
            return loaded.model(ids, output_attentions=False).last_hidden_state.cpu()  # a GPU sync, as the walk's

    handler()  # loads the model once (the registry caches it), outside the timing
    rows = []
    default_threads = torch.get_num_threads()
    # The app runs with torch's default thread count; on a busy shared machine one thread is often much faster (small
    # matrices, and OpenMP threads waiting on each other), so both are measured, for ours and the reference alike.
    # On a GPU the thread count is the CPU side's only.
    for threads in sorted({default_threads, 1} if device.type == "cpu" else {default_threads}, reverse=True):
        torch.set_num_threads(threads)
        label = f"{device.type} {threads} thr"
        for name, fn, goal in (("block handler + 4 figures + table", handler, "≤ 300 ms"),
                               ("walk only, no figures", walk_only, "")):
            ours_s, ref_s = paired_median_seconds(fn, forward, repeats, warmup=2)
            rows.append({"benchmark": f"{name}, {tokens} tok, MiniLM-L6, {label} / forward",
                         "ours": ours_s * 1e3, "reference": ref_s * 1e3, "ratio": ours_s / ref_s,
                         "unit": "ms (median)", "goal": goal})
    torch.set_num_threads(default_threads)
    return rows


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
