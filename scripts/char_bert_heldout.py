"""The char-BERT against the char-GPT on the same held-out positions; writes assets/char_bert/heldout.json.

    python scripts/char_bert_heldout.py                              # a few minutes on one core
    python scripts/char_bert_heldout.py --out /tmp/heldout.json

The protocol is core/mlm/char_heldout.py's docstring: 15% of the held-out characters (seed 0), each hidden on its
own; the char-GPT reads the 127 characters before it, the char-BERT a 128-character window around it (both sides) or
ending at it (left only). Also the first SUBSET_POSITIONS positions' figures, which tests/test_mlm_char_heldout.py
recomputes from the shipped weights, and the training objective's held-out loss on 128- and 510-character windows
(the first as the training script wrote it, recomputed here).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.transformer import gpt  # noqa: E402
from core.mlm.char import shipped_char_bert  # noqa: E402
from core.mlm.char_heldout import (COMPARE_SEED, HELDOUT_PATH, ROWS, SUBSET_POSITIONS, WINDOW,  # noqa: E402
                                   compare, compared_positions, held_out_text, recipe_scores)

RECIPE_WINDOWS = (128, 510)  # the window of most training steps, and the longest the 512 positions hold
READS = {ROWS[0]: "the 127 characters before the position (its context); its next-character softmax",
         ROWS[1]: "a 128-character window holding the position (63 before, 64 after; shifted at the split's ends), "
                  "the position as [MASK]",
         ROWS[2]: "the 127 characters before the position, then [MASK]: the right side cut off"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HELDOUT_PATH)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    began = time.process_time()
    loaded = shipped_char_bert()
    gpt_model, gpt_vocab, _ = gpt.shipped_char_gpt()
    text = held_out_text()
    positions = compared_positions(len(text))
    scores = compare(loaded, gpt_model, gpt_vocab, text, positions)
    rows = []
    for name in ROWS:
        whole, subset = scores[name].summary(), scores[name]
        subset_bits, subset_correct = subset.bits[:SUBSET_POSITIONS], subset.correct[:SUBSET_POSITIONS]
        rows.append({"model": name, "reads": READS[name], **whole,
                     "subset_bits_per_char": round(float(subset_bits.mean()), 6),
                     "subset_accuracy": round(float(subset_correct.mean()), 6)})
        print(f"{name:24s} accuracy {whole['accuracy']:.4f}  {whole['bits_per_char']:.4f} bits per masked char  "
              f"(subset {rows[-1]['subset_accuracy']:.4f}, {rows[-1]['subset_bits_per_char']:.4f})", flush=True)
    ids = loaded.tokenizer.encode(text)[0]
    recipe = [recipe_scores(loaded, ids, window) for window in RECIPE_WINDOWS]
    for scores in recipe:
        print(f"training objective on held-out {scores['window']}-character windows: {scores['loss_nats']:.4f} nats, "
              f"accuracy {scores['accuracy']:.4f}")
    data = {
        "split": {"corpus": "moby_dick", "split": "core.recurrent.lstm.split_text: the last 5% of the cleaned text is held out",
                  "held_out_chars": len(text)},
        "protocol": {"positions": len(positions), "share": "15% of positions 1 … N−1 (core.mlm.masking's chooser)",
                     "seed": COMPARE_SEED, "window": WINDOW, "hidden": "one position at a time; the rest of the "
                     "window is the true text", "accuracy": "the most probable character (no special token, no "
                     "<unk>) is the true one", "bits": "mean −log2 P(true character), full softmax",
                     "subset_positions": SUBSET_POSITIONS},
        "rows": rows,
        "note": "Bits per masked character, not bits per character of the text: the char-BERT's terms condition on "
                "both sides, so their sum is a pseudo-log-likelihood, not the log-probability of the text. Compare "
                "them with each other, not with the Overview ladder's causal bits/char (the whole held-out stream, "
                "every character from the ones before it).",
        "training_objective": recipe,
        "written_by": "scripts/char_bert_heldout.py", "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "cpu_seconds": round(time.process_time() - began),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
