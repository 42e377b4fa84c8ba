"""Train the ELMo view's two-layer bidirectional LM (core/nets/elmo.py) on the bundled Moby-Dick corpus.

    python scripts/train_elmo.py                 # the shipped run (see assets/README.md for its time and losses)
    python scripts/train_elmo.py --steps 50 --out /tmp/elmo   # a quick check

Words are lower-cased; the last 5% of the corpus is held out and its forward/backward losses go into config.json.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.text.corpora import load_corpus  # noqa: E402
from core.loading.device import get_device  # noqa: E402
from core.recurrent.elmo import (ELMO_ASSETS, ElmoBiLM, ElmoVocab, corpus_tensors, evaluate, save_model,  # noqa: E402
                       split_tokens, train_steps, words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=800, help="Adam steps of batch 32 × 35 words")
    parser.add_argument("--size", type=int, default=128, help="token vector and LSTM width per direction")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (leave cores to others)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ELMO_ASSETS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    tokens = words(load_corpus("moby_dick"))
    train_tokens, held_tokens = split_tokens(tokens)  # the last 5% is never trained on
    vocab = ElmoVocab.build(train_tokens)
    train, held = corpus_tensors(train_tokens, vocab), corpus_tensors(held_tokens, vocab)
    torch.manual_seed(args.seed)
    model = ElmoBiLM(len(vocab.chars), len(vocab.words), size=args.size).to(get_device())
    print(f"{len(train_tokens)} training words, {len(held_tokens)} held out; {len(vocab.chars)} characters, "
          f"{len(vocab.words)} softmax words; {sum(p.numel() for p in model.parameters())} parameters", flush=True)
    began = time.monotonic()
    for step, fwd, bwd in train_steps(model, *train, steps=args.steps, seed=args.seed):
        if step % 100 == 0 or step == args.steps:
            print(f"step {step:5d}/{args.steps}  forward {fwd:.3f}  backward {bwd:.3f}  "
                  f"{time.monotonic() - began:5.0f} s", flush=True)
    seconds = time.monotonic() - began
    fwd, bwd = evaluate(model, *held)
    print(f"held-out loss: forward {fwd:.3f}, backward {bwd:.3f} nats/word "
          f"(perplexity {torch.tensor(fwd).exp():.0f} / {torch.tensor(bwd).exp():.0f})", flush=True)
    info = {"corpus": "moby_dick", "level": "word (lower-cased), read from characters", "steps": args.steps,
            "batch_size": 32, "seq_len": 35, "seed": args.seed, "train_seconds": round(seconds),
            "threads": args.threads, "device": str(get_device()), "held_out_words": len(held_tokens),
            "held_out_loss_nats": {"forward": round(fwd, 4), "backward": round(bwd, 4)}}
    save_model(model.cpu(), vocab, info, args.out)
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
