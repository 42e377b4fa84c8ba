"""The two measured experiments of §11, on assets/seq2seq/corpus.tsv, added to assets/seq2seq/results.json:

    mask_experiment     §11.1: the shipped Transformer's sizes trained briefly with and without the decoder's causal
                        mask (same data, seed, steps): final training loss against held-out free-decoding figures
    context_experiment  §11.2: LSTM encoder–decoders with one context vector C and with attention over the encoder's
                        states (same data, seed, steps): held-out figures by source length; both models are shipped
                        (lstm_vector.*, lstm_attention.*) so the app can show the attention model's alignments

    python scripts/seq2seq_experiments.py [--mask-steps 400] [--lstm-steps 600] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.nets.seq2seq import Seq2SeqConfig  # noqa: E402
from core.seq2seq.seq2seq import SEQ2SEQ_ASSETS, read_corpus, shipped  # noqa: E402
from core.seq2seq.compare import context_experiment, save_lstm  # noqa: E402
from core.seq2seq.train import TrainSettings, mask_experiment  # noqa: E402
from scripts.train_seq2seq import update_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mask-steps", type=int, default=400)
    parser.add_argument("--lstm-steps", type=int, default=600)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", choices=("mask", "context"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    corpus = read_corpus()
    model, vocab = shipped()
    machine = dict(threads=args.threads, load_average_before=[round(x, 2) for x in os.getloadavg()])
    if args.only != "context":
        settings = TrainSettings(steps=args.mask_steps, warmup=min(200, args.mask_steps // 4))
        config = Seq2SeqConfig.from_dict(model.config.to_dict())
        result = mask_experiment(config, vocab, corpus["train"], corpus["heldout"], settings)
        update_results(SEQ2SEQ_ASSETS, mask_experiment=dict(settings=vars(settings), **machine, **result))
        print(json.dumps(result, indent=1))
    if args.only != "mask":
        settings = TrainSettings(steps=args.lstm_steps)
        result, models = context_experiment(vocab, corpus["train"], corpus["heldout"], settings)
        save_lstm(models)
        update_results(SEQ2SEQ_ASSETS, context_experiment=dict(settings=vars(settings), **machine, **result))
        print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
