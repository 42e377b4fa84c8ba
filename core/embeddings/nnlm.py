"""The NNLM view of the Word embeddings tab (seed §2.2): train Bengio's neural LM on a bundled corpus and step
through one prediction with every matrix's shape.

Conventions: word tokens, split on whitespace (the toy corpus is segmented with spaces; Moby-Dick is lower-cased and
split into words and punctuation). Every sentence is padded with n−1 `<s>` on the left and one `</s>` at the end,
so the first word has a context too. Moby-Dick keeps its MOBY_VOCAB most frequent words; the rest become `<unk>`.
Training is full-batch Adam on the toy corpus and mini-batch Adam on Moby-Dick, seeded, within a step and time
budget (at most MAX_SECONDS). The budget is the whole run's, from the call to the return: reading the corpus and
building the examples count, and training stops early enough to leave time for the held-out pass (estimated from the
steps' own pace), so a run at the sliders' maxima ends within its budget. The held-out loss is measured on the last
5% of Moby-Dick's sentences (the toy corpus is too small to hold any out: its loss is the training loss, and it says
so).
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from core.text import i18n
from core.text.corpora import load_corpus
from core.loading.device import one_cpu_thread
from core.text.errors import UserInputError
from core.text.limits import NNLM_MAX_CONTEXT as MAX_CONTEXT
from core.text.limits import NNLM_MAX_SECONDS as MAX_SECONDS
from core.nets.nnlm import NNLM

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
MOBY_VOCAB = 3000
WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|[.,;:!?]")


def sentences(corpus: str) -> list[list[str]]:
    text = load_corpus(corpus)
    if corpus == "toy_zh":
        return [line.split() for line in text.splitlines() if line.strip()]
    start = text.find("Call me Ishmael")
    words = WORD.findall(text[max(start, 0):].lower())
    out, current = [], []
    for w in words:
        current.append(w)
        if w in ".!?":
            out.append(current)
            current = []
    return out + ([current] if current else [])


@dataclass
class TrainedNNLM:
    model: NNLM
    vocab: list[str]
    index: dict[str, int]
    corpus: str
    losses: list[float] = field(default_factory=list)
    held_out_loss: float | None = None
    steps: int = 0
    seconds: float = 0.0


def _examples(sents: list[list[str]], index: dict[str, int], context: int) -> tuple[torch.Tensor, torch.Tensor]:
    unk = index.get(UNK, 0)
    xs, ys = [], []
    for sent in sents:
        ids = [index[BOS]] * context + [index.get(w, unk) for w in sent] + [index[EOS]]
        for t in range(context, len(ids)):
            xs.append(ids[t - context:t])
            ys.append(ids[t])
    return torch.tensor(xs, dtype=torch.long).reshape(-1, context), torch.tensor(ys, dtype=torch.long)


def train(corpus: str, context: int = 2, dim: int = 16, hidden: int = 32, steps: int = 300,
          seconds: float = 20.0, seed: int = 0, progress: Callable[[float, str], None] | None = None) -> TrainedNNLM:
    """Fit an NNLM on a bundled corpus ("toy_zh" or "moby_dick") within ``steps`` and ``seconds``."""
    if not 1 <= context <= MAX_CONTEXT:
        raise UserInputError("nnlm.err.context", limit=MAX_CONTEXT)
    if not (2 <= dim <= 128 and 2 <= hidden <= 256 and 1 <= steps <= 5000):
        raise UserInputError("nnlm.err.sizes")
    seconds = min(float(seconds), MAX_SECONDS)
    start = time.perf_counter()  # the budget covers the whole run, preparation and held-out pass included
    sents = sentences(corpus)
    held = sents[-max(1, len(sents) // 20):] if corpus != "toy_zh" else []
    train_sents = sents[:len(sents) - len(held)]
    counts = Counter(w for s in train_sents for w in s)
    words = [w for w, _ in counts.most_common(MOBY_VOCAB if corpus != "toy_zh" else None)]
    vocab = [BOS, EOS] + ([UNK] if corpus != "toy_zh" else []) + sorted(words)
    index = {w: i for i, w in enumerate(vocab)}
    x, y = _examples(train_sents, index, context)
    held_x, held_y = _examples(held, index, context) if held else (None, None)
    torch.manual_seed(seed)
    model = NNLM(len(vocab), context, dim, hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02 if corpus == "toy_zh" else 0.005)
    result = TrainedNNLM(model, vocab, index, corpus)
    # Matrices this small gain nothing from intra-op threads, and on a busy 2-core server the threads spin-wait for
    # each other: 150 toy steps took 26 s with 2 threads and 0.7 s with one (measured under load average 12).
    with one_cpu_thread():
        _fit(model, optimizer, x, y, steps, start + seconds, 0 if held_y is None else len(held_y), seed, result,
             progress)
    model.eval()
    if held_y is not None:
        with torch.inference_mode():
            result.held_out_loss = F.cross_entropy(model(held_x), held_y).item()
    result.seconds = time.perf_counter() - start
    return result


BATCH = 512  # examples per Adam step on Moby-Dick (the toy corpus is one full batch)


def _fit(model, optimizer, x, y, steps, deadline, held_examples, seed, result, progress) -> None:
    """Adam steps until ``steps`` or until the next step and the held-out pass would pass ``deadline``.

    A forward pass costs about a third of a training step (forward + backward + update), so the held-out pass over
    ``held_examples`` is estimated as that many examples at a third of the mean step's time per example."""
    generator = torch.Generator().manual_seed(seed)
    batch_size = min(len(y), BATCH)
    began = time.perf_counter()
    for step in range(1, steps + 1):
        batch = slice(None) if len(y) <= BATCH else torch.randint(len(y), (BATCH,), generator=generator)
        loss = F.cross_entropy(model(x[batch]), y[batch])  # −log P(w_t | context), mean over the batch
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        result.losses.append(loss.item())
        result.steps = step
        if progress is not None and (step % 25 == 0 or step == steps):
            progress(step / steps, i18n.text("nnlm.progress_step", step=step, steps=steps))
        now = time.perf_counter()
        step_seconds = (now - began) / step
        if now + step_seconds + step_seconds * held_examples / (3 * batch_size) > deadline:
            break


_TRAINED: dict[tuple, TrainedNNLM] = {}
_CACHE_SIZE = 8


def trained(corpus: str, context: int, dim: int, hidden: int, steps: int, seconds: float,
            progress: Callable[[float, str], None] | None = None) -> TrainedNNLM:
    """A model per setting, trained once per process and shared read-only (training is seeded, so a repeated
    setting would give the same weights, unless the time budget cut it short)."""
    key = (corpus, context, dim, hidden, steps, seconds)
    if key not in _TRAINED:
        if len(_TRAINED) >= _CACHE_SIZE:
            _TRAINED.pop(next(iter(_TRAINED)))
        _TRAINED[key] = train(corpus, context, dim, hidden, steps, seconds, progress=progress)
    return _TRAINED[key]


@dataclass
class Prediction:
    context: list[str]  # the n−1 words the model read (after <s> padding / <unk>)
    unknown: list[str]
    shapes: list[tuple[str, str, str]]  # (step, equation, shape)
    x: list[float]
    hidden: list[float]
    top: list[tuple[str, float]]  # (word, P(word | context)), most likely first
    perplexity_note: str = ""


def predict(trained_model: TrainedNNLM, text: str, top_k: int = 10) -> Prediction:
    """One forward pass for the last n−1 words of ``text``, with every intermediate and its shape."""
    model, index = trained_model.model, trained_model.index
    n1 = model.context
    words = text.split() if trained_model.corpus == "toy_zh" else WORD.findall((text or "").lower())
    unknown = [w for w in words if w not in index]
    if unknown and UNK not in index:
        raise UserInputError("nnlm.err.not_in_toy", words=", ".join(unknown))
    context = ([BOS] * n1 + words)[-n1:]
    ids = torch.tensor([[index.get(w, index.get(UNK, 0)) for w in context]])  # (1, n-1)
    with torch.inference_mode():
        tr = model.trace(ids)
    V, m, h = len(trained_model.vocab), model.dim, model.H.out_features
    shapes = [  # (step name: a key under nnlm.step in assets/i18n, equation, shape)
        ("one_hot", "e(w)", f"{n1} × ({V},)"),
        ("lookup", "C(w) = e(w) · C", f"{n1} × ({m},), C: {V} × {m}"),
        ("concatenate", "x = [C(w₁); …; C(wₙ₋₁)]", f"({n1 * m},)"),
        ("hidden", "tanh(d + H x)", f"H: {h} × {n1 * m} → ({h},)"),
        ("through_hidden", "U tanh(d + H x)", f"U: {V} × {h} → ({V},)"),
        ("direct", "b + W x", f"W: {V} × {n1 * m} → ({V},)"),
        ("scores", "y = b + W x + U tanh(d + H x)", f"({V},)"),
        ("probabilities", "softmax(y)", f"({V},), Σ = 1"),
    ]
    probs = tr.probs[0]
    values, order = probs.topk(min(top_k, V))
    top = [(trained_model.vocab[i], float(p)) for p, i in zip(values, order)]
    return Prediction(context, unknown, shapes, tr.x[0].tolist(), tr.hidden[0].tolist(), top)


def perplexity(loss: float) -> float:
    return math.exp(loss)
