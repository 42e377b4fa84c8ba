"""Train the encoder–decoder Transformer of §10–§11 on assets/seq2seq/corpus.tsv and ship it in assets/seq2seq/:
model.safetensors, config.json (the model's sizes and both vocabularies) and results.json (provenance,
hyper-parameters, training time, machine load, held-out exact match and token accuracy, the seed's translations).

    python scripts/make_seq2seq_corpus.py      # the corpus (deterministic)
    python scripts/train_seq2seq.py            # 1,200 steps on the CPU (the shipped run: --threads 1)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.nets.seq2seq import Seq2SeqConfig, Transformer  # noqa: E402
from core.seq2seq.seq2seq import SEED_SENTENCES, SEQ2SEQ_ASSETS, Vocab, evaluate, read_corpus, save, translate  # noqa: E402
from core.seq2seq.train import TrainSettings, train  # noqa: E402


def update_results(directory: Path, **entries) -> None:
    """Merge entries into results.json (the experiments' scripts add theirs beside the training's)."""
    path = directory / "results.json"
    results = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    results.update(entries)
    path.write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1.5e-3)
    parser.add_argument("--d-model", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=SEQ2SEQ_ASSETS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    corpus = read_corpus()
    vocab = Vocab.build([(src, tgt) for _, src, tgt in corpus["train"]])
    config = Seq2SeqConfig(len(vocab.source), len(vocab.target), d_model=args.d_model, n_head=4,
                           d_ff=4 * args.d_model, n_encoder_layers=args.layers, n_decoder_layers=args.layers)
    settings = TrainSettings(steps=args.steps, batch_size=args.batch_size, lr=args.lr)
    load_before = os.getloadavg()

    def progress(step: int, loss: float) -> None:
        if step % 100 == 0:
            print(f"step {step}: loss {loss:.4f}", flush=True)

    run = train(lambda: Transformer(config), vocab, corpus["train"], settings, progress)
    save(run.model, vocab, args.out)
    started = time.perf_counter()
    heldout = evaluate(run.model, vocab, corpus["heldout"])
    seeds = {src: translate(src, run.model, vocab).text for src in SEED_SENTENCES}
    update_results(
        args.out,
        provenance=("trained by scripts/train_seq2seq.py on assets/seq2seq/corpus.tsv (scripts/make_seq2seq_corpus.py: "
                    "sentences generated from a grammar written for this project); the held-out split's English "
                    "sentences were never training targets, nor their sources training inputs"),
        corpus=dict(train_pairs=len(corpus["train"]), heldout_pairs=len(corpus["heldout"]),
                    source_vocab=len(vocab.source), target_vocab=len(vocab.target)),
        config=config.to_dict(), parameters=run.model.num_parameters(),
        weights_bytes=(args.out / "model.safetensors").stat().st_size,
        training=dict(vars(settings), threads=args.threads, seconds=round(run.seconds, 1),
                      final_loss=round(run.final_loss(), 4), load_average_before=[round(x, 2) for x in load_before],
                      load_average_after=[round(x, 2) for x in os.getloadavg()], cpu=platform.processor() or "cpu",
                      torch=torch.__version__),
        heldout=heldout, heldout_seconds=round(time.perf_counter() - started, 1), seed_translations=seeds,
        heldout_first_200=evaluate(run.model, vocab, corpus["heldout"][:200]),  # what the fast test recomputes
    )
    print(json.dumps(dict(heldout=heldout, seeds=seeds, seconds=run.seconds), ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
