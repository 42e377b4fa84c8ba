"""Retrain the RNN & LSTM tab's shipped character models on the bundled Moby-Dick corpus.

    python scripts/train_rnn.py              # the shipped run: about 8 min on one idle CPU core
    python scripts/train_rnn.py --rnn-steps 100 --lstm-steps 100 --backward-steps 100 --out /tmp/rnn   # a quick check

Writes rnn.safetensors, lstm.safetensors, lstm_backward.safetensors (the LSTM trained on reversed text, for the
ELMo view) and config.json (vocabulary, sizes, held-out loss) into --out.
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
from core.recurrent.lstm import (RNN_ASSETS, ModelSet, RecurrentLM, Vocab, corpus_ids, evaluate, save_models,  # noqa: E402
                      split_text, train_steps)


def train_one(name: str, kind: str, data: torch.Tensor, held: torch.Tensor, vocab: Vocab, steps: int, seed: int):
    torch.manual_seed(seed)
    model = RecurrentLM(kind, len(vocab)).to(get_device())
    began = time.monotonic()
    for step, loss in train_steps(model, data, steps=steps, seed=seed):
        if step % 250 == 0 or step == steps:
            print(f"{name:14s} step {step:5d}/{steps}  train loss {loss:.3f}  {time.monotonic() - began:5.0f} s",
                  flush=True)
    held_loss = evaluate(model, held)
    print(f"{name:14s} held-out loss {held_loss:.3f} nats/char ({held_loss / 0.6931:.2f} bits/char)", flush=True)
    return model, {"steps": steps, "held_out_loss_nats": round(held_loss, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Adam steps of batch 32 × 100 characters; the defaults are the shipped models' numbers
    parser.add_argument("--rnn-steps", type=int, default=4000)
    parser.add_argument("--lstm-steps", type=int, default=4000)
    parser.add_argument("--backward-steps", type=int, default=3000, help="the backward LSTM (ELMo view)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (leave cores to others)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RNN_ASSETS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    text = load_corpus("moby_dick")
    vocab = Vocab.build(text, "char")
    train, held = (corpus_ids(part, vocab) for part in split_text(text))  # the last 5% is held out
    rnn, rnn_info = train_one("rnn", "rnn", train, held, vocab, args.rnn_steps, args.seed)
    lstm, lstm_info = train_one("lstm", "lstm", train, held, vocab, args.lstm_steps, args.seed)
    # The backward LSTM reads the text right to left: train it on the reversed corpus (and the reversed held-out part).
    backward, backward_info = train_one("lstm_backward", "lstm", train.flip(0), held.flip(0), vocab,
                                        args.backward_steps, args.seed + 1)
    info = {"corpus": "moby_dick", "level": "char", "batch_size": 32, "seq_len": 100,
            "rnn": rnn_info, "lstm": lstm_info, "lstm_backward": backward_info}
    save_models(ModelSet(vocab, rnn, lstm, backward, info), args.out)
    print(f"saved to {args.out}")


if __name__ == "__main__":
    main()
