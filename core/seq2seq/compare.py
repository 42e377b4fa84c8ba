"""§11.2 measured: an LSTM encoder–decoder with one context vector C against one with attention over the encoder's
states (core/nets/seq2seq_lstm.py), trained alike on the same corpus, scored on the held-out sentences by source
length (as Bahdanau et al., 2015, figure 2), and the attention model's alignment of each target word to the source.

Length is the number of source tokens (Chinese characters, French words). The figures per length bin are
core/seq2seq/seq2seq.py's: greedy exact match and token accuracy.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import torch

from core.nets.seq2seq_lstm import LSTMSeq2Seq, LSTMSeq2SeqConfig
from core.seq2seq.seq2seq import (BOS, SEQ2SEQ_ASSETS, Vocab, greedy_batch, greedy_outputs, scores, shipped, source_ids)
from core.seq2seq.train import TrainSettings, train

BINS = ((1, 8), (9, 16), (17, 24), (25, 32), (33, 60))  # source tokens, inclusive
CONTEXTS = ("vector", "attention")


def by_length(model, vocab: Vocab, pairs: list[tuple[str, str, str]], bins=BINS,
              outputs: list[list[int]] | None = None) -> list[dict]:
    """Greedy figures per bin of source length: [{"bin": [lo, hi], "sentences", "exact_match", "token_accuracy"}]
    (``outputs``: the greedy outputs when already decoded)."""
    outputs = outputs if outputs is not None else greedy_outputs(model, vocab, pairs)
    references = [vocab.encode_target(tgt) for _, _, tgt in pairs]
    lengths = [len(vocab.encode_source(src)[0]) for _, src, _ in pairs]
    rows = []
    for lo, hi in bins:
        keep = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        if keep:
            rows.append(dict(bin=[lo, hi], **scores([outputs[i] for i in keep], [references[i] for i in keep])))
    return rows


def context_experiment(vocab: Vocab, train_pairs, heldout_pairs, settings: TrainSettings, embed: int = 64,
                       hidden: int = 128) -> tuple[dict, dict[str, LSTMSeq2Seq]]:
    """Both LSTM models trained with the same settings and seed; their figures overall and by source length."""
    out, models = {}, {}
    for context in CONTEXTS:
        config = LSTMSeq2SeqConfig(len(vocab.source), len(vocab.target), embed, hidden, context)
        run = train(lambda: LSTMSeq2Seq(config), vocab, train_pairs, settings)
        outputs = greedy_outputs(run.model, vocab, heldout_pairs)
        overall = scores(outputs, [vocab.encode_target(tgt) for _, _, tgt in heldout_pairs])
        out[context] = dict(config=config.to_dict(), parameters=sum(p.numel() for p in run.model.parameters()),
                            training_loss=run.final_loss(), seconds=run.seconds, heldout=overall,
                            by_length=by_length(run.model, vocab, heldout_pairs, outputs=outputs))
        models[context] = run.model
    return out, models


@torch.inference_mode()
def alignment(model: LSTMSeq2Seq, vocab: Vocab, text: str) -> tuple[list[str], list[str], torch.Tensor]:
    """(source tokens, the greedy output words, α: one row per output word and </s>, one column per source token)."""
    ids, shown, _ = source_ids(vocab, text)
    words = greedy_batch(model, [ids])[0]
    _, alpha = model(torch.tensor([ids]), torch.tensor([[BOS] + words]))  # row t: the word after the prefix
    return shown, [vocab.target[i] for i in words] + ["</s>"], alpha[0]


def save_lstm(models: dict[str, LSTMSeq2Seq], directory: Path = SEQ2SEQ_ASSETS) -> None:
    from safetensors.torch import save_file

    for context, model in models.items():
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(directory / f"lstm_{context}.safetensors"))
        (directory / f"lstm_{context}.json").write_text(json.dumps(model.config.to_dict(), indent=1), encoding="utf-8")


@lru_cache(maxsize=2)
def shipped_lstm(context: str) -> tuple[LSTMSeq2Seq, Vocab]:
    """The §11.2 model shipped beside the Transformer (same vocabulary): "vector" or "attention"."""
    from safetensors.torch import load_file

    config = LSTMSeq2SeqConfig.from_dict(json.loads((SEQ2SEQ_ASSETS / f"lstm_{context}.json").read_text("utf-8")))
    model = LSTMSeq2Seq(config)
    model.load_state_dict(load_file(str(SEQ2SEQ_ASSETS / f"lstm_{context}.safetensors")), strict=True)
    return model.eval(), shipped()[1]
