"""Pre-train the char-BERT, the masked-LM twin of the char-GPT, on the char-GPT's own Moby-Dick training split.

    python scripts/train_char_bert.py                               # the shipped run (its time: assets/README.md)
    python scripts/train_char_bert.py --steps 40 --out /tmp/cb      # a quick check

Same corpus, same split (core.recurrent.lstm.split_text: the last 5% held out) and the same 76 characters as the char-GPT
(read from assets/gpt/config.json), plus [PAD] [UNK] [CLS] [SEP] [MASK]. A BERT of the char-GPT's size: 4 layers,
4 heads, H = 96, FFN 384, 512 positions.

The objective is the masked LM alone, with the seed's recipe from core/mlm/masking.py (the code the "Masking
procedure" view explains): 15% of a window's characters chosen, of those 80% [MASK], 10% a random character, 10%
unchanged; cross-entropy at the chosen positions. No next-sentence prediction: a stream of characters has no
sentence pairs to tell apart, and RoBERTa (Liu et al., 2019) found that dropping NSP and training on full windows of
contiguous text matches or beats BERT's MLM + NSP on downstream tasks; for a 500K-parameter model every step goes to
the one objective the app shows.

Short windows first (core/mlm/char_train.py): with 128-character windows from the start, the loss sat at the
unigram level (2.8 nats) for all of 800 steps: a masked character can only be recovered from its neighbours, and
attention that is still spread evenly over 130 positions carries almost nothing about them, so nothing teaches it to
look there. On 8-character windows the same model leaves that plateau within 300 steps; the window then doubles
(8, 16, 32, 64, 128, 256) up to 510 characters, the 512 positions BERT also finished on, each longer window while the
learning rate is still high. When the window grows, the position rows it adds start as copies of the trained rows
one old window earlier (as Longformer extended RoBERTa's 512 positions): left at their random start, the rows past
130 stayed unlearnt (held-out 510-character windows at 2.35 nats against 0.95 for 128). Each step reads about 4,096
characters (batch = 4,096 / window).
AdamW (β = 0.9, 0.98 as RoBERTa; weight decay 0.01 on matrices), linear warm-up then linear decay to 0, gradients
clipped at 1. Weights start as BERT's: N(0, 0.02).

Reproducible: the windows come from a seeded torch.Generator and the masks from a seeded numpy Generator; with the
same --threads on the same machine and torch version a run is bit-for-bit the same (other thread counts or CPUs
change the last bits of the sums, so the weights drift slightly).
Writes config.json and model.safetensors into --out (held-out figures of the training objective included).
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.text.corpora import load_corpus  # noqa: E402
from core.transformer.gpt import GPT_ASSETS  # noqa: E402
from core.recurrent.lstm import split_text  # noqa: E402
from core.mlm.char import (CHAR_BERT_ASSETS, CharBertTokenizer, LoadedCharBert, char_bert_config,  # noqa: E402
                           save_char_bert)
from core.mlm.char_heldout import recipe_scores  # noqa: E402
from core.mlm.char_train import Recipe, init_like_bert, train_steps  # noqa: E402
from core.nets.bert import BertConfig, BertForMaskedLM  # noqa: E402


def main() -> None:
    default = Recipe()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=default.steps)
    parser.add_argument("--chars-per-step", type=int, default=default.chars_per_step,
                        help="characters one step reads: batch = this / window")
    parser.add_argument("--phases", default=",".join(f"{share:g}:{chars}" for share, chars in default.phases),
                        help="share:window,… in order (the shares add up to 1)")
    parser.add_argument("--lr", type=float, default=default.lr, help="peak learning rate")
    parser.add_argument("--warmup", type=int, default=default.warmup)
    parser.add_argument("--hidden", type=int, default=96)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (one: leave the other core to others)")
    parser.add_argument("--seed", type=int, default=default.seed)
    parser.add_argument("--eval-every", type=int, default=0, help="held-out recipe loss every N steps (0: at the end)")
    parser.add_argument("--out", type=Path, default=CHAR_BERT_ASSETS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    phases = tuple((float(share), int(chars)) for share, chars in (part.split(":") for part in args.phases.split(",")))
    recipe = Recipe(steps=args.steps, chars_per_step=args.chars_per_step, phases=phases, lr=args.lr,
                    warmup=args.warmup, seed=args.seed)

    gpt_tokens = json.loads((GPT_ASSETS / "config.json").read_text(encoding="utf-8"))["tokens"]
    tokenizer = CharBertTokenizer.from_characters(gpt_tokens[1:])  # the char-GPT's characters, without its <unk>
    train_text, held_text = split_text(load_corpus("moby_dick"))
    train = torch.tensor(tokenizer.encode(train_text)[0])  # (N,)
    held = tokenizer.encode(held_text)[0]
    config = char_bert_config(len(tokenizer), args.hidden, args.layers, args.heads,
                              max(512, max(chars for _, chars in phases) + 2))
    model = BertForMaskedLM(BertConfig.from_dict(config))
    init_like_bert(model)
    parameters = sum(p.numel() for p in model.parameters())  # the tied decoder counted once
    print(f"{parameters:,} parameters; train {len(train):,} chars, held-out {len(held):,}", flush=True)
    loaded = LoadedCharBert(model, tokenizer, config, {})
    curve = []
    began, began_cpu = time.monotonic(), time.process_time()
    for step, loss, chars in train_steps(model, train, len(tokenizer), recipe):
        if step % 50 == 0 or step == recipe.steps:
            print(f"step {step:5d}/{recipe.steps}  window {chars:3d}  train loss {loss:.3f}  "
                  f"{time.monotonic() - began:5.0f} s  cpu {time.process_time() - began_cpu:5.0f} s", flush=True)
        if args.eval_every and step % args.eval_every == 0 and step < recipe.steps:
            model.eval()
            scores = recipe_scores(loaded, held)
            model.train()
            curve.append({"step": step, "loss_nats": scores["loss_nats"], "accuracy": scores["accuracy"]})
            print(f"  held-out: loss {scores['loss_nats']:.4f} accuracy {scores['accuracy']:.4f}", flush=True)
    seconds, cpu_seconds = time.monotonic() - began, time.process_time() - began_cpu
    held_out = recipe_scores(loaded, held)
    print(f"held-out MLM loss {held_out['loss_nats']:.4f} nats, accuracy {held_out['accuracy']:.4f}; "
          f"{seconds:.0f} s wall, {cpu_seconds:.0f} s CPU", flush=True)
    info = {"corpus": "moby_dick", "split": "last 5% held out (core.recurrent.lstm.split_text)", "vocabulary": "assets/gpt",
            "objective": "masked LM only (core/mlm/masking.py: 15%; 80/10/10), no next-sentence prediction",
            "steps": recipe.steps, "chars_per_step": recipe.chars_per_step,
            "phases": [{"share": share, "window": chars, "batch": recipe.batch(chars)} for share, chars in phases],
            "lr": recipe.lr, "warmup": recipe.warmup,
            "schedule": "linear warm-up, linear decay to 0",
            "optimizer": "AdamW(0.9, 0.98, eps 1e-6), weight decay 0.01 on matrices, clip 1.0",
            "init": "N(0, 0.02)",
            "positions": "when the window grows, its new position rows start as copies of the rows one old window "
                         "earlier (core.mlm.char_train.extend_positions)",
            "seed": recipe.seed, "threads": args.threads, "torch": torch.__version__,
            "train_seconds": round(seconds),  # wall time: on a shared machine it includes waiting for a core
            "train_cpu_seconds": round(cpu_seconds),
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "parameters": parameters, "held_out_recipe": held_out, "held_out_curve": curve}
    save_char_bert(model, tokenizer, config, info, args.out)
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
