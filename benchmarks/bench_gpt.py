"""Transformer & GPT tab, GPT half: char-GPT generation with and without the KV cache (goal: 200 characters in
≤ 0.5 s on 2 cores, with the cache), and a GPT-2-size forward pass (124M parameters, T = 128) against transformers'
GPT2LMHeadModel holding the same random weights (goal ≤ 1.0×).

ratio = ours / reference (below 1 is faster). Our forward always computes and returns every attention map and
hidden state (what the tab draws); transformers is timed twice: as it runs by default (SDPA, no maps) and asked for
the same outputs (output_attentions / output_hidden_states, which need its eager attention).

    python benchmarks/bench_gpt.py [--quick] [--threads N]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import paired_median_seconds, print_table, row  # noqa: E402
from core.transformer import gpt  # noqa: E402
from core.text.sampling import Settings  # noqa: E402
from core.nets.gpt import GPTConfig, from_state_dict  # noqa: E402

PROMPT = "Call me Ishmael. "
TOKENS = 200
SETTINGS = Settings(temperature=0.8, seed=0)  # core/text/sampling.py: seeded, so every repeat draws the same text


def gpt2_pair():
    """GPT-2 small (12 × 768, 124M) with random weights: transformers' model and ours loaded from its state dict."""
    import transformers

    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    config = transformers.GPT2Config()  # gpt2's sizes
    reference = transformers.GPT2LMHeadModel(config).eval()
    ours = from_state_dict(GPTConfig.from_dict(config.to_dict()), reference.state_dict())
    return ours, reference


def run(quick: bool = False) -> list[dict]:
    repeats = 3 if quick else 7
    rows = []
    gpt.load()
    cached, uncached = paired_median_seconds(lambda: gpt.generate(None, PROMPT, TOKENS, SETTINGS),
                                             lambda: gpt.generate(None, PROMPT, TOKENS, SETTINGS, use_cache=False),
                                             repeats, warmup=1)
    rows.append(row(f"char-GPT generate {TOKENS} chars: KV cache / no cache", cached, uncached, "s", "≤ 0.5 s cached"))
    # CPU time of this process: on a shared, busy machine, wall time mostly measures waiting for a core
    cpu = [time.process_time()]
    for use_cache in (True, False):
        gpt.generate(None, PROMPT, TOKENS, SETTINGS, use_cache=use_cache)
        cpu.append(time.process_time())
    rows.append(row(f"char-GPT generate {TOKENS} chars, CPU seconds: cache / no cache", cpu[1] - cpu[0],
                    cpu[2] - cpu[1], "CPU s", "≤ 0.5 s cached"))

    ours, reference = gpt2_pair()
    ids = torch.randint(0, 50257, (1, 128), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        t_ours, t_sdpa = paired_median_seconds(lambda: ours(ids), lambda: reference(ids), repeats, warmup=1)
        rows.append(row("GPT-2 124M forward T=128 (+ all maps) / transformers default", t_ours, t_sdpa, "s", "≤ 1.0×"))
        reference.set_attn_implementation("eager")
        t_ours, t_eager = paired_median_seconds(
            lambda: ours(ids), lambda: reference(ids, output_attentions=True, output_hidden_states=True),
            repeats, warmup=1)
        rows.append(row("GPT-2 124M forward T=128, both returning maps + states", t_ours, t_eager, "s", "≤ 1.0×"))
    return rows


if __name__ == "__main__":
    if "--threads" in sys.argv:
        torch.set_num_threads(int(sys.argv[sys.argv.index("--threads") + 1]))
    print(f"torch threads: {torch.get_num_threads()}", flush=True)
    print_table(run(quick="--quick" in sys.argv))
