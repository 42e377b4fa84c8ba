"""Score the held-out part of Moby-Dick with every rung of the ladder and write assets/ladder/heldout.json.

    python scripts/ladder_heldout.py                       # about a minute on one core
    python scripts/ladder_heldout.py --out /tmp/heldout.json
    python scripts/ladder_heldout.py --bytes-only          # add or refresh the per-byte columns of the file as it is

For each rung: bits per character and perplexity on the whole held-out split (core.recurrent.lstm.split_text, the last 5%, read
as one stream), the same on its first SUBSET_CHARS characters (tests/ladder/test_ladder.py recomputes that figure),
parameters (weights, or stored counts for an n-gram), training time and data; and per byte: the UTF-8 bytes of the
characters scored, bits per byte = bits/char × characters/bytes, and the tokenizer the rung reads with. Training time
is CPU time on one thread: the n-gram's counting pass at its order, measured here; for the RNN and LSTM, whose script
did not record it, a timed run of their own training steps multiplied by the number of steps they were trained for;
for the char-GPT, what scripts/train_gpt.py recorded.
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

from core.ladder import ladder, heldout as ladder_heldout  # noqa: E402
from core.recurrent import lstm  # noqa: E402
from core.ngram.ngram import NgramModel  # noqa: E402

TIMED_STEPS = 20  # neural training steps timed per model (after 3 warm-up steps)


def cpu_seconds(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def recurrent_step_seconds(kind: str, train: str) -> float:
    """CPU seconds per training step of the shipped configuration (batch 32 × 100 characters)."""
    models = lstm.shipped_models()
    model = lstm.RecurrentLM(kind, len(models.vocab))
    steps = lstm.train_steps(model, lstm.corpus_ids(train, models.vocab), steps=TIMED_STEPS + 3)
    for _ in range(3):
        next(steps)
    return cpu_seconds(lambda: [None for _ in steps]) / TIMED_STEPS


def training_facts(train: str) -> dict[str, tuple[float, str, str]]:
    """rung key → (training CPU seconds, how they were obtained, training data)."""
    facts = {}
    chars = f"Moby-Dick training split ({len(train):,} characters)"
    for n in ladder.NGRAM_ORDERS:
        seconds = cpu_seconds(lambda: NgramModel([list(train)], n, boundaries=False))
        for smoothing in ("add_k", "kneser_ney"):
            facts[f"ngram-{n}-{smoothing}"] = (seconds, f"one counting pass of all 1..{n}-grams, timed here",
                                              f"{chars}, counted once")
    info = lstm.shipped_models().info
    for kind in ("rnn", "lstm"):
        steps, per_step = info[kind]["steps"], recurrent_step_seconds(kind, train)
        seen = steps * info["batch_size"] * info["seq_len"]
        facts[kind] = (steps * per_step, f"{steps:,} Adam steps × {per_step:.3f} s per step (timed here)",
                       f"{chars}: {steps:,} steps × {info['batch_size']} windows × {info['seq_len']} characters "
                       f"= {seen / 1e6:.1f}M characters read")
    from core.transformer import gpt

    info = gpt.shipped_char_gpt()[2]
    seen = info["steps"] * info["batch_size"] * info["seq_len"]
    facts["gpt"] = (info["train_cpu_seconds"], f"recorded by scripts/train_gpt.py ({info['steps']:,} AdamW steps, "
                                               f"{info['threads']} thread)",
                    f"{chars}: {info['steps']:,} steps × {info['batch_size']} windows × {info['seq_len']} characters "
                    f"= {seen / 1e6:.1f}M characters read")
    return facts


def byte_columns(rung: ladder.Rung, bits_per_char: float, held: str) -> dict:
    """The per-byte columns of a rung's row: characters 2..T are scored, so their bytes."""
    scored = held[1:]
    return dict(bytes=len(scored.encode("utf-8")), bits_per_byte=ladder_heldout.bits_per_byte(bits_per_char, scored),
                tokenizer=rung.tokenizer, vocabulary=len(rung.vocabulary))


def bytes_only(path: Path) -> None:
    """Add the per-byte columns to the file's rows from their stored bits/char (nothing else is recomputed)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    held, rungs = ladder.training_split()[1], {rung.key: rung for rung in ladder.rungs()}
    for row in data["rows"]:
        row.update(byte_columns(rungs[row["key"]], row["bits_per_char"], held))
    data["split"]["held_out_bytes"] = len(held.encode("utf-8"))
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote the per-byte columns into {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ladder_heldout.HELDOUT_PATH)
    parser.add_argument("--bytes-only", action="store_true", help="add the per-byte columns to --out as it is")
    args = parser.parse_args()
    if args.bytes_only:
        return bytes_only(args.out)
    torch.set_num_threads(1)
    train, held = ladder.training_split()
    facts = training_facts(train)
    rows = []
    for rung in ladder.rungs():
        bits_per_char, characters = ladder.held_out_bits(rung, held)
        subset, _ = ladder.held_out_bits(rung, held[:ladder.SUBSET_CHARS])
        seconds, note, data = facts[rung.key]
        rows.append(dict(key=rung.key, name=rung.name, family=rung.family, equation=rung.equation, tab=rung.tab,
                         bits_per_char=bits_per_char, perplexity=2 ** bits_per_char, characters=characters,
                         parameters=rung.parameters, parameters_kind=rung.parameters_kind,
                         training_seconds=round(seconds, 2), training_note=note, training_data=data,
                         subset_bits_per_char=subset, **byte_columns(rung, bits_per_char, held)))
        print(f"{rung.name:22s} {bits_per_char:.4f} bits/char  (subset {subset:.4f})  {rung.parameters:>9,} "
              f"{rung.parameters_kind}  {seconds:8.1f} s", flush=True)
    split = dict(corpus="moby_dick", split="core.recurrent.lstm.split_text: the last 5% of the cleaned text is held out",
                 training_chars=len(train), held_out_chars=len(held), held_out_bytes=len(held.encode("utf-8")),
                 subset_chars=ladder.SUBSET_CHARS,
                 scored="every character after the first, each predicted from all the characters before it",
                 written_by="scripts/ladder_heldout.py", date=datetime.date.today().isoformat(),
                 torch=torch.__version__)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"split": split, "rows": rows}, ensure_ascii=False, indent=1) + "\n",
                        encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
