"""Train the Transformer & GPT tab's character GPT on the bundled Moby-Dick corpus.

    python scripts/train_gpt.py                          # the shipped run: about 6.5 min of one idle CPU core
    python scripts/train_gpt.py --steps 50 --out /tmp/gpt   # a quick check

Same corpus, same train/held-out split (the last 5%) and same 78-symbol vocabulary as the shipped RNN and LSTM
(read from assets/rnn/config.json), and the same held-out windows, so the three losses compare directly.
Writes char_gpt.safetensors and config.json (GPT-2 config fields + vocabulary + provenance) into --out.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.text.corpora import load_corpus  # noqa: E402
from core.transformer.gpt import GPT_ASSETS, evaluate, save_char_gpt  # noqa: E402
from core.nets.gpt import GPT, GPTConfig  # noqa: E402
from core.recurrent.lstm import RNN_ASSETS, Vocab, corpus_ids, split_text  # noqa: E402

TEST_WINDOWS = 8  # the test recomputes the loss on the first 8 windows (fast) and compares with this stored number


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2500)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128, help="training window = the context")
    parser.add_argument("--n-embd", type=int, default=96)
    parser.add_argument("--n-layer", type=int, default=4)
    parser.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3, help="peak; linear warm-up, cosine decay to lr/20")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (leave cores to others)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=GPT_ASSETS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    rnn_config = json.loads((RNN_ASSETS / "config.json").read_text(encoding="utf-8"))
    vocab = Vocab(rnn_config["level"], rnn_config["tokens"])  # the RNN/LSTM's vocabulary, not a rebuilt one
    train, held = (corpus_ids(part, vocab) for part in split_text(load_corpus("moby_dick")))
    config = GPTConfig(vocab_size=len(vocab), n_positions=args.seq_len, n_embd=args.n_embd, n_layer=args.n_layer,
                       n_head=args.n_head)
    model = GPT(config)
    print(f"{model.num_parameters():,} parameters; train {len(train):,} chars, held-out {len(held):,}", flush=True)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.99))
    gen = torch.Generator().manual_seed(args.seed)
    offsets = torch.arange(args.seq_len + 1)
    began, began_cpu = time.monotonic(), time.process_time()
    model.train()
    for step in range(args.steps):
        if step < args.warmup:
            lr = args.lr * (step + 1) / args.warmup
        else:
            progress = (step - args.warmup) / max(1, args.steps - args.warmup)
            lr = args.lr * (0.05 + 0.475 * (1 + math.cos(math.pi * progress)))
        for group in opt.param_groups:
            group["lr"] = lr
        starts = torch.randint(0, len(train) - args.seq_len - 1, (args.batch,), generator=gen)
        chunk = train[starts[:, None] + offsets]  # (B, T+1)
        logits = model(chunk[:, :-1]).logits  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if (step + 1) % 25 == 0 or step + 1 == args.steps:
            print(f"step {step + 1:5d}/{args.steps}  train loss {loss.item():.3f}  lr {lr:.2e}  "
                  f"{time.monotonic() - began:5.0f} s", flush=True)
    seconds, cpu_seconds = time.monotonic() - began, time.process_time() - began_cpu
    model.eval()
    held_loss = evaluate(model, held)
    subset_loss = evaluate(model, held, max_windows=TEST_WINDOWS)
    print(f"held-out loss {held_loss:.4f} nats/char ({held_loss / math.log(2):.3f} bits/char)", flush=True)
    info = {"corpus": "moby_dick", "split": "last 5% held out (core.recurrent.lstm.split_text)", "vocabulary": "assets/rnn",
            "steps": args.steps, "batch_size": args.batch, "seq_len": args.seq_len, "lr": args.lr,
            "warmup": args.warmup, "optimizer": "AdamW(0.9, 0.99), weight decay 0.01, clip 1.0, cosine to lr/20",
            "seed": args.seed, "threads": args.threads, "train_seconds": round(seconds),
            "train_cpu_seconds": round(cpu_seconds),  # wall time includes waiting for a shared machine's cores
            "parameters": model.num_parameters(),
            "held_out": {"windows": 64, "seq_len": 200, "loss_nats": round(held_loss, 6),
                         "bits_per_char": round(held_loss / math.log(2), 4)},
            "held_out_test_subset": {"windows": TEST_WINDOWS, "seq_len": 200, "loss_nats": round(subset_loss, 6)}}
    save_char_gpt(model, vocab, info, args.out)
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
