"""word2vec trained in the Word embeddings tab (seed §4): CBOW and skip-gram with negative sampling (Mikolov et al.,
2013; the network is core/nets/word2vec.py): pairs from a window, noise words from the unigram^¾ table, and plain SGD
that writes only the rows a batch touches, as word2vec does. The tab's other views are core/embeddings/embeddings.py.
"""
from __future__ import annotations

import math
import re
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from core.text import i18n
from core.loading.device import get_device, one_cpu_thread
from core.embeddings.embeddings import WordVectors
from core.text.errors import UserInputError
from core.nets.word2vec import SkipGramNS

MAX_TRAIN_TOKENS = 400_000  # Moby-Dick has ~213k; longer uploads are cut so a run stays near a minute on 2 cores

@dataclass
class Word2VecConfig:
    architecture: str = "skipgram"  # "skipgram" predicts context words from the centre; "cbow" the reverse
    dim: int = 50
    window: int = 4  # context words on each side (the effective window is drawn from 1..window per position)
    negatives: int = 5  # noise words per positive pair
    min_count: int = 5  # rarer words are dropped: too few examples to learn from
    epochs: int = 3
    subsample: float = 1e-3  # t in the keep probability (√(f/t) + 1)·t/f of frequent words
    batch_size: int = 2048  # pairs per step: few Python steps, and a batch's (B, 1+K, D) rows still fit in L2
    lr: float = 0.025  # word2vec's starting learning rate for plain SGD, decayed linearly to 1e-4
    seed: int = 0

    def check(self) -> None:
        if self.architecture not in ("skipgram", "cbow"):
            raise UserInputError("embeddings.err.architecture")
        limits = dict(dim=(2, 300), window=(1, 10), negatives=(1, 20), min_count=(1, 100), epochs=(1, 20))
        for name, (low, high) in limits.items():
            if not low <= getattr(self, name) <= high:
                raise UserInputError("embeddings.err.setting_range", name=i18n.text(f"embeddings.setting.{name}"),
                                     low=low, high=high)


@dataclass
class TrainedWord2Vec:
    vectors: WordVectors
    config: Word2VecConfig
    loss_steps: list[int]
    losses: list[float]  # mean negative-sampling loss over each stretch of steps
    tokens: int  # corpus tokens used (after dropping rare words)
    cut_tokens: int  # tokens left out because the corpus was longer than MAX_TRAIN_TOKENS
    seconds: float
    stopped: str | None = None  # why training ended early (core.loading.jobs.BUDGET / REPLACED), None if it ran to the end
    steps_planned: int = 0
    trained: bool = True  # False: the model before its first step (untrained_word2vec), its one loss at step 0


_CORPUS_WORD_RE = re.compile(r"\w+(?:['’]\w+)*")  # tokenizer._WORD_RE without its punctuation branch
_NOT_A_WORD_RE = re.compile(r"[_'’]+")  # \w is a letter, digit or '_': a run of underscores has no letter


def corpus_tokens(text: str) -> list[str]:
    """Lower-case words without punctuation (the word tokens of core.text.tokenizer.word_tokens that hold a letter or
    digit). Unsegmented CJK runs (no spaces) are split into characters."""
    tokens = []
    for token in _CORPUS_WORD_RE.findall(text.lower()):
        if len(token) > 4 and not token.isascii() and all(
                unicodedata.name(ch, "").startswith("CJK") for ch in token):
            tokens.extend(token)
        elif not _NOT_A_WORD_RE.fullmatch(token):
            tokens.append(token)
    return tokens


def _examples(ids: np.ndarray, window: int, cbow: bool, pad: int, rng: np.random.Generator):
    """(inputs, targets) for one epoch. Each position draws its window b from 1..window, so near words count
    more often (word2vec's dynamic window). Skip-gram: (centre, context) pairs; CBOW: (contexts (N, 2w), centre)."""
    n = len(ids)
    b = rng.integers(1, window + 1, size=n)  # (N,)
    if cbow:
        ctx = np.full((n, 2 * window), pad, dtype=np.int64)  # (N, 2w)
        for off in range(1, window + 1):
            ctx[:-off, window + off - 1] = np.where(b[:-off] >= off, ids[off:], pad)  # right neighbours
            ctx[off:, window - off] = np.where(b[off:] >= off, ids[:-off], pad)  # left neighbours
        keep = (ctx != pad).any(1)
        return ctx[keep], ids[keep]
    centres, contexts = [], []
    for off in range(1, window + 1):
        right = b[:-off] >= off  # centre i sees i + off
        left = b[off:] >= off  # centre i + off sees i
        centres += [ids[:-off][right], ids[off:][left]]
        contexts += [ids[off:][right], ids[:-off][left]]
    return np.concatenate(centres), np.concatenate(contexts)


@dataclass
class Corpus:
    ids: np.ndarray  # (N,) token ids in text order, rare words removed
    vocab: list[str]  # by falling count
    counts: np.ndarray  # (V,)
    cut_tokens: int  # tokens beyond MAX_TRAIN_TOKENS, left out


def unigram_table(counts: np.ndarray, size: int = 1_000_000) -> np.ndarray:
    """word2vec's noise table: word i fills a share count_i^¾ / Σ count^¾ of the slots, so a uniform slot is a
    draw from the unigram^¾ distribution (one array lookup per noise word instead of a multinomial)."""
    weights = counts**0.75
    slots = np.maximum(1, np.round(weights / weights.sum() * size)).astype(np.int64)  # (V,) every word can be drawn
    return np.repeat(np.arange(len(counts), dtype=np.int64), slots)  # (≈size,)


def build_corpus(text: str, min_count: int) -> Corpus:
    tokens = corpus_tokens(text)
    cut = max(0, len(tokens) - MAX_TRAIN_TOKENS)
    counts = Counter(tokens[:MAX_TRAIN_TOKENS])
    vocab = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if len(vocab) < 10:
        raise UserInputError("embeddings.err.too_few_words", count=len(vocab), min_count=min_count)
    index = {w: i for i, w in enumerate(vocab)}
    ids = np.array([index[t] for t in tokens[:MAX_TRAIN_TOKENS] if t in index], dtype=np.int64)
    return Corpus(ids, vocab, np.array([counts[w] for w in vocab], dtype=np.float64), cut)


def train_word2vec(
    text: str,
    config: Word2VecConfig | None = None,
    progress: Callable[[float, str], None] | None = None,
    stop: Callable[[], str | None] | None = None,
) -> TrainedWord2Vec:
    """Train word2vec on a text; ``progress(fraction, message)`` is called as training goes. ``stop()`` is asked
    every step: a reason (core.loading.jobs.Budget.stop_reason) ends training there, keeping the model trained so far."""
    return _word2vec(text, config or Word2VecConfig(), progress, stop, train=True)


def untrained_word2vec(text: str, config: Word2VecConfig | None = None) -> TrainedWord2Vec:
    """train_word2vec's model before its first step, with the mean loss of the first batch it would take: the output
    vectors start at zero, so every u·v is 0 and a pair costs (1 + negatives)·ln 2 (6 ln 2 ≈ 4.159 for 5)."""
    return _word2vec(text, config or Word2VecConfig(), None, None, train=False)


def _word2vec(text: str, config: Word2VecConfig, progress, stop, train: bool) -> TrainedWord2Vec:
    config.check()
    started = time.perf_counter()
    corpus = build_corpus(text, config.min_count)
    device = get_device()
    with one_cpu_thread(device):
        model, loss_steps, losses, stopped, planned = _fit(corpus, config, device, progress, stop, train)
    vectors = model.inp.weight.detach()[: len(corpus.vocab)].cpu().numpy()  # (V, D): the input table is kept
    name = f"embeddings.your_{config.architecture}"  # a key: named in the learner's language when shown
    return TrainedWord2Vec(WordVectors(corpus.vocab, vectors, name), config, loss_steps, losses,
                           tokens=len(corpus.ids), cut_tokens=corpus.cut_tokens, seconds=time.perf_counter() - started,
                           stopped=stopped, steps_planned=planned, trained=train)


def _fit(corpus: Corpus, config: Word2VecConfig, device: torch.device, progress,
         stop=None, train: bool = True) -> tuple[SkipGramNS, list, list, str | None, int]:
    freq = corpus.counts / corpus.counts.sum()  # (V,)
    keep_prob = np.minimum(1.0, (np.sqrt(freq / config.subsample) + 1) * config.subsample / freq)  # (V,)
    table = unigram_table(corpus.counts)  # noise distribution: unigram^(3/4)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    model = SkipGramNS(len(corpus.vocab), config.dim).to(device)
    cbow = config.architecture == "cbow"
    # An estimate of the steps for the progress bar and the learning-rate decay (subsampling and windows are random).
    kept = float(keep_prob[corpus.ids].sum())
    per_position = 1 if cbow else (config.window + 1)  # skip-gram makes 2·E[b] = window + 1 pairs per position
    total_steps = config.epochs * max(1, math.ceil(kept * per_position / config.batch_size))
    log_every = max(1, total_steps // 100)
    loss_steps, losses, running, seen, step = [], [], torch.zeros((), device=device), 0, 0

    def record(epoch: int) -> None:  # mean loss per example since the last record, and a progress update
        losses.append(running.item() / max(seen, 1))
        loss_steps.append(step)
        running.zero_()
        if progress:
            progress(min(step / total_steps, 0.99), i18n.text("embeddings.progress_epoch", epoch=epoch + 1,
                                                              epochs=config.epochs, loss=f"{losses[-1]:.3f}"))

    stopped = None
    for epoch in range(config.epochs):
        if stopped:
            break
        ids = corpus.ids[rng.random(len(corpus.ids)) < keep_prob[corpus.ids]]  # subsample anew each epoch
        inputs, targets = _examples(ids, config.window, cbow, model.pad, rng)
        order = rng.permutation(len(targets))
        noise = table[rng.integers(0, len(table), size=(len(targets), config.negatives))]  # (N, K) all at once
        inputs, targets = torch.from_numpy(inputs[order]).to(device), torch.from_numpy(targets[order]).to(device)
        noise = torch.from_numpy(noise).to(device)
        if not train:  # before the first step: the mean loss of the very batch the first step would take
            with torch.no_grad():
                first = model(inputs[:config.batch_size], targets[:config.batch_size], noise[:config.batch_size])
            return model, [0], [first.item()], None, total_steps
        for start in range(0, len(targets), config.batch_size):
            batch = slice(start, start + config.batch_size)
            lr = config.lr * max(1e-4 / 0.025, 1 - step / total_steps)  # word2vec's linear decay
            running += model.sgd_step(inputs[batch], targets[batch], noise[batch], lr)  # no .item(): no GPU sync
            seen += len(targets[batch])
            step += 1
            if step % log_every == 0:
                record(epoch)
                seen = 0
            stopped = stop() if stop is not None else None
            if stopped:
                break
    if not loss_steps or loss_steps[-1] != step:
        record(config.epochs - 1)
    return model, loss_steps, losses, stopped, total_steps
