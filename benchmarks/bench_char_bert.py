"""BERT masked-LM tab, the char-BERT (assets/char_bert/): our forward pass and iterative fill against transformers'
BertForMaskedLM holding the same shipped weights, in the same process, on the same device.

- 256-character forward: [CLS] + 256 characters + [SEP] → logits at every position. Ours as the tab runs it (no
  attention maps kept) against transformers' default (SDPA); then both returning every attention map and hidden
  state (transformers' eager attention, which is what output_attentions needs).
- Iterative fill of a 6-character blank: core.mlm.char.fill_prepared (first pass, top-k, then 6 passes filling the
  most confident position each time, with its per-step records) against the same loop written plainly on
  transformers' model (6 passes, argmax only). Both must write the same word.

ratio = ours / reference (below 1 is faster); wall-clock medians, ours and the reference alternating, then the same
on time.thread_time with one torch thread (CPU time, which other processes' load barely moves).

    python -m benchmarks.bench_char_bert [--quick]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import alternating_medians, print_table, row  # noqa: E402
from core.mlm import char as mlm_char  # noqa: E402
from core.loading.device import get_device  # noqa: E402
from core.mlm.char_heldout import held_out_text  # noqa: E402

FILL_TEXT = ("Call me Ishmael. Some years ago, never mind how long precisely, having little or no ______ in my purse, "
             "and nothing particular to interest me on shore, I thought I would sail about a little.")


def reference_model():
    import transformers

    transformers.logging.set_verbosity_error()
    model = transformers.BertForMaskedLM.from_pretrained(str(mlm_char.CHAR_BERT_ASSETS))
    return model.to(get_device()).eval()


def reference_fill(model, ids: list[int]) -> str:
    """Iterative filling on transformers' model: the loop as one would write it, argmax characters only."""
    ids = torch.tensor([ids], device=model.device)  # (1, T)
    remaining = (ids[0] == mlm_char.MASK_ID).nonzero()[:, 0].tolist()
    written = {}
    while remaining:
        probs = model(input_ids=ids).logits[0, remaining].softmax(-1)[:, mlm_char.FIRST_CHAR_ID:]  # (M, chars)
        best, best_ids = probs.max(-1)
        pick = int(best.argmax())
        position = remaining.pop(pick)
        ids[0, position] = int(best_ids[pick]) + mlm_char.FIRST_CHAR_ID
        written[position] = int(ids[0, position])
    return "".join(mlm_char.shipped_char_bert().tokenizer.tokens[written[p]] for p in sorted(written))


def timed(loaded, reference, repeats: int, clock) -> list[tuple[str, float, float]]:
    ids = torch.tensor([[mlm_char.CLS_ID, *loaded.tokenizer.encode(held_out_text()[:256])[0], mlm_char.SEP_ID]],
                       device=loaded.device)  # (1, 258)
    prepared = mlm_char.prepare(loaded, FILL_TEXT, 6)
    ours_word = mlm_char.fill_prepared(loaded, prepared).blanks[0].iterative
    with torch.inference_mode():
        assert reference_fill(reference, prepared.ids) == ours_word, "the two iterative fills disagree"
        forward = alternating_medians(
            [lambda: loaded.model(ids, output_attentions=False, output_hidden_states=False),
             lambda: reference(input_ids=ids)], repeats, warmup=3, clock=clock)
        fill = alternating_medians([lambda: mlm_char.fill_prepared(loaded, prepared),
                                    lambda: reference_fill(reference, prepared.ids)], repeats, warmup=3, clock=clock)
        reference.set_attn_implementation("eager")
        maps = alternating_medians(
            [lambda: loaded.model(ids), lambda: reference(input_ids=ids, output_attentions=True,
                                                          output_hidden_states=True)], repeats, warmup=3, clock=clock)
        reference.set_attn_implementation("sdpa")
    return [("forward, 256 chars (vs SDPA)", *forward), ("forward, 256 chars, maps + states (vs eager)", *maps),
            (f"iterative fill, 6-char blank ('{ours_word}')", *fill)]


def run(quick: bool = False) -> list[dict]:
    repeats = 5 if quick else 30
    loaded = mlm_char.shipped_char_bert()
    reference = reference_model()
    rows = [row(f"char-BERT {name}", ours, ref, "s", "≤ 1.0×", target_ratio=1.0)
            for name, ours, ref in timed(loaded, reference, repeats, time.perf_counter)]
    if loaded.device.type == "cpu":
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            rows += [row(f"  {name}: CPU time, 1 thread", ours, ref, "CPU s", "≤ 1.0×", target_ratio=1.0)
                     for name, ours, ref in timed(loaded, reference, repeats, time.thread_time)]
        finally:
            torch.set_num_threads(threads)
    return rows


if __name__ == "__main__":
    print(f"torch threads: {torch.get_num_threads()}", flush=True)
    print_table(run(quick="--quick" in sys.argv))
