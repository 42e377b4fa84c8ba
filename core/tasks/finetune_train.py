"""Fine-tuning MiniLM-L6 on a split from core/tasks/finetune.py: (a) a head on frozen features, then (b) the head plus the
top k layers unfrozen; what changed (PCA of held-out vectors before and after, ‖ΔW‖/‖W‖ per layer); one run per
browser session.

Speed on 2 cores: the frozen part of the encoder runs once per run (no gradients), and its output at layer L−k, the
input of the first unfrozen layer, is kept; each training step then runs only the k copied layers. A run has a wall
budget: when it is spent, training stops at the end of the current step and the last completed epoch's weights
are kept (the result says so).

Reproducible: the head's initial weights, the mini-batch order and the split all come from the seed; training uses
one CPU thread (its ops are small) so that the float arithmetic, and so the held-out accuracy, repeats exactly.
"""
from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch
from torch import nn

from core.tasks import finetune
from core.loading import registry
from core.loading.cache import BoundedCache, bounded_cache
from core.loading.checkpoints import MINILM_ID
from core.loading.device import one_cpu_thread
from core.embeddings.embeddings import pca
from core.text.errors import UserInputError
from core.text.i18n import text as tr
from core.text.limits import DEFAULT_EPOCHS, DEFAULT_HEAD_STEPS, DEFAULT_LAYERS, MAX_EPOCHS, MAX_HEAD_STEPS, MAX_LAYERS
from core.nets.bert_encoder import additive_attention_mask

BATCH_SIZE = 16
HEAD_LR, LAYER_LR = 1e-3, 1e-4
BUDGET_SECONDS = 110.0  # wall budget of one run's training (encoding and baselines come before, ~5-10 s)


@dataclass
class Encoded:
    """MiniLM's view of every sentence (train then test), computed once per run without gradients."""

    ids: torch.Tensor  # (N, T) token ids, padded
    mask: torch.Tensor  # (N, T) 1 for real tokens
    layer_input: torch.Tensor  # (N, T, H) hidden state entering the first unfrozen layer (layer L-k)
    frozen: torch.Tensor  # (N, H) mean-pooled last layer of the frozen model
    unknown: int  # [UNK] tokens over all sentences (Chinese characters missing from the English vocabulary)


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ_t m_t h_t / Σ_t m_t: the sentence vector all-MiniLM-L6-v2 was trained to produce."""
    weights = mask[..., None].to(hidden.dtype)  # (N, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1)  # (N, H)


def encode(texts: list[str], unfrozen: int, batch: int = 64) -> Encoded:
    loaded = registry.load("encoder", MINILM_ID)
    tokenizer, encoder = loaded.tokenizer, loaded.model.base
    encodings = [tokenizer.encode(text, max_length=finetune.MAX_TOKENS) for text in texts]
    width = max(len(e) for e in encodings)
    ids = torch.zeros(len(texts), width, dtype=torch.long)
    mask = torch.zeros(len(texts), width, dtype=torch.long)
    for row, e in enumerate(encodings):
        ids[row, :len(e)], mask[row, :len(e)] = torch.tensor(e.ids), 1
    unknown = sum(e.tokens.count(tokenizer.unk_token) for e in encodings)
    inputs, pooled = [], []
    with torch.inference_mode():  # on the registry's device; training then runs on CPU copies
        for start in range(0, len(texts), batch):
            rows, rows_mask = ids[start:start + batch].to(loaded.device), mask[start:start + batch].to(loaded.device)
            out = encoder(rows, rows_mask, None, False)
            inputs.append(out.hidden_states[len(encoder.encoder.layer) - unfrozen].float().cpu())  # (B, T, H)
            pooled.append(mean_pool(out.last_hidden_state, rows_mask).float().cpu())
    return Encoded(ids, mask, torch.cat(inputs).clone(), torch.cat(pooled).clone(), unknown)


class TopLayers(nn.Module):
    """Copies of MiniLM's top k layers and a linear head: layer_input → layers → mean pool → W v + b."""

    def __init__(self, layers: list[nn.Module], head: nn.Linear, first_index: int):
        super().__init__()
        self.layers = nn.ModuleList(copy.deepcopy(layer).float().cpu() for layer in layers)
        self.head = copy.deepcopy(head).cpu()
        self.first_index = first_index  # index of the first copied layer in the full model

    def sentence_vectors(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        additive = additive_attention_mask(mask, x.dtype)  # (B, 1, 1, T)
        for layer in self.layers:
            x, _ = layer(x, additive, False)  # (B, T, H)
        return mean_pool(x, mask)  # (B, H)

    def forward(self, x, mask):
        return self.head(self.sentence_vectors(x, mask))  # (B, C)


@dataclass
class Progress:
    """One streamed update: where training is, and the loss curves so far."""

    stage: str
    fraction: float
    message: str
    head_losses: list[float]
    layer_losses: list[float]  # one per mini-batch


@dataclass
class Outcome:
    data: finetune.Split
    baselines: list[finetune.Baseline]
    head_accuracy: float
    tuned_accuracy: float
    head_losses: list[float]
    layer_losses: list[float]
    unfrozen: int
    epochs_done: int
    seconds: float
    notes: list[str]
    before: np.ndarray  # (N_test, 2) PCA of frozen held-out vectors
    after: np.ndarray  # (N_test, 2) PCA of fine-tuned held-out vectors
    variance: tuple[np.ndarray, np.ndarray]  # share of variance per kept axis, before and after
    weight_change: list[tuple[str, float]] = field(default_factory=list)  # (parameter, ‖ΔW‖/‖W‖)
    head: nn.Linear | None = None
    tuned: TopLayers | None = None

    def predict(self, text: str) -> list[tuple[str, np.ndarray]]:
        """Every model's label probabilities for one sentence, baselines first."""
        classes = len(self.data.labels)
        rows = [(b.name, b.probabilities(text, classes)) for b in self.baselines]
        encoded = encode([text], self.unfrozen)
        with torch.no_grad():
            rows.append((tr("classify.model_frozen"), self.head(encoded.frozen).softmax(-1)[0].numpy()))
            tuned = self.tuned(encoded.layer_input, encoded.mask).softmax(-1)[0].numpy()
        rows.append((tr("classify.model_tuned", layers=self.unfrozen), tuned))
        return rows


class Cancelled(Exception):
    """A newer run from the same browser session replaced this one."""


def check_settings(head_steps: int, unfrozen: int, epochs: int) -> tuple[int, int, int]:
    limits = (("classify.setting_head_steps", head_steps, 1, MAX_HEAD_STEPS),
              ("classify.setting_unfrozen", unfrozen, 1, MAX_LAYERS),
              ("classify.setting_epochs", epochs, 1, MAX_EPOCHS))
    for name, value, low, high in limits:
        if not low <= int(value) <= high:
            raise UserInputError("classify.error_setting", name=tr(name), low=low, high=high, value=value)
    return int(head_steps), int(unfrozen), int(epochs)


def _accuracy(logits: torch.Tensor, y: np.ndarray) -> float:
    return float((logits.argmax(-1).numpy() == y).mean())


def initial_head(width: int, data: finetune.Split) -> nn.Linear:
    """Head (a) before its first step, seeded by the split's seed: what training starts from, and what the view
    before training shows."""
    torch.manual_seed(data.seed)
    return nn.Linear(width, len(data.labels))


@dataclass
class Untrained:
    """Head (a) before training (random initialisation) on the frozen MiniLM vectors of the held-out sentences."""

    data: finetune.Split
    head: nn.Linear
    probs: np.ndarray  # (N_test, C): softmax(W v + b) of each held-out sentence
    accuracy: float
    loss: float  # mean held-out cross-entropy (nats); an even guess scores ln C

    def predict(self, text: str) -> list[tuple[str, np.ndarray]]:
        """The baselines' and this head's label probabilities for one sentence, baselines first."""
        classes = len(self.data.labels)
        rows = [(b.name, b.probabilities(text, classes)) for b in finetune.cached_baselines(self.data)]
        with torch.no_grad():
            rows.append((tr("classify.before.model"), self.head(encode([text], 1).frozen).softmax(-1)[0].numpy()))
        return rows


def untrained(data: finetune.Split) -> Untrained:
    """The state before training, from the held-out sentences only (their frozen vectors are cached: ~0.7 s once)."""
    vectors = frozen_vectors(tuple(e.text for e in data.test))  # (N_test, H)
    head = initial_head(vectors.shape[1], data).eval()
    with torch.no_grad():
        logits = head(vectors)  # (N_test, C)
        loss = nn.functional.cross_entropy(logits, torch.as_tensor(data.y_test)).item()
    return Untrained(data, head, logits.softmax(-1).numpy(), _accuracy(logits, data.y_test), loss)


def train(data: finetune.Split, head_steps: int = DEFAULT_HEAD_STEPS, unfrozen: int = DEFAULT_LAYERS,
          epochs: int = DEFAULT_EPOCHS, budget_seconds: float = BUDGET_SECONDS,
          cancel: threading.Event | None = None, with_baselines: bool = True) -> Iterator[Progress | Outcome]:
    """Yields Progress updates, then one Outcome. Raises Cancelled when ``cancel`` is set."""
    head_steps, unfrozen, epochs = check_settings(head_steps, unfrozen, epochs)
    with one_cpu_thread():
        yield from _train(data, head_steps, unfrozen, epochs, budget_seconds, cancel, with_baselines)


def _train(data, head_steps, unfrozen, epochs, budget_seconds, cancel, with_baselines):
    started = time.perf_counter()
    notes: list[str] = []
    yield Progress("baselines", 0.0, tr("classify.progress_baselines"), [], [])
    found = finetune.cached_baselines(data) if with_baselines else [finetune.majority_baseline(data)]
    yield Progress("encode", 0.05, tr("classify.progress_encode", count=len(data.train) + len(data.test)), [], [])
    n_train = len(data.train)
    enc = encode([e.text for e in data.train + data.test], unfrozen)
    if enc.unknown:
        notes.append(tr("classify.note_unknown", count=enc.unknown))
    y_train, y_test = torch.as_tensor(data.y_train), data.y_test

    # (a) head on frozen features: softmax regression on the mean-pooled vectors, full batch.
    head = initial_head(enc.frozen.shape[1], data)
    optimizer = torch.optim.Adam(head.parameters(), lr=1e-2)
    head_losses: list[float] = []
    for step in range(head_steps):
        _check(cancel)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(enc.frozen[:n_train]), y_train)
        loss.backward()
        optimizer.step()
        head_losses.append(loss.item())
        if step % 25 == 0 or step == head_steps - 1:
            yield Progress("head", 0.1 + 0.2 * (step + 1) / head_steps,
                           tr("classify.progress_head", step=step + 1, steps=head_steps), head_losses, [])
    head.eval()
    with torch.no_grad():
        head_accuracy = _accuracy(head(enc.frozen[n_train:]), y_test)

    # (b) unfreeze the top k layers; start from the trained head.
    encoder = registry.load("encoder", MINILM_ID).model.base
    first = len(encoder.encoder.layer) - unfrozen
    tuned = TopLayers(list(encoder.encoder.layer[first:]), head, first)
    tuned.train()
    optimizer = torch.optim.AdamW([{"params": tuned.layers.parameters(), "lr": LAYER_LR},
                                   {"params": tuned.head.parameters(), "lr": HEAD_LR}], weight_decay=0.01)
    generator = torch.Generator().manual_seed(data.seed)
    batches = -(-n_train // BATCH_SIZE)
    layer_losses: list[float] = []
    kept = copy.deepcopy(tuned.state_dict())
    epochs_done = 0
    for epoch in range(epochs):
        order = torch.randperm(n_train, generator=generator)
        out_of_time = False
        for b in range(batches):
            _check(cancel)
            rows = order[b * BATCH_SIZE:(b + 1) * BATCH_SIZE]
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(tuned(enc.layer_input[rows], enc.mask[rows]), y_train[rows])
            loss.backward()
            optimizer.step()
            layer_losses.append(loss.item())
            done = (epoch * batches + b + 1) / (epochs * batches)
            yield Progress("layers", 0.3 + 0.65 * done,
                           tr("classify.progress_layers", layers=unfrozen, epoch=epoch + 1, epochs=epochs,
                                batch=b + 1, batches=batches), head_losses, layer_losses)
            if time.perf_counter() - started > budget_seconds:
                out_of_time = True
                break
        if out_of_time:
            tuned.load_state_dict(kept)
            notes.append(tr("classify.note_budget_none" if epochs_done == 0 else "classify.note_budget",
                              budget=f"{budget_seconds:.0f}", epoch=epoch + 1, done=epochs_done))
            break
        kept = copy.deepcopy(tuned.state_dict())
        epochs_done = epoch + 1
    tuned.eval()
    test_input, test_mask = enc.layer_input[n_train:], enc.mask[n_train:]
    with torch.no_grad():
        tuned_accuracy = _accuracy(tuned(test_input, test_mask), y_test)
        after_vectors = tuned.sentence_vectors(test_input, test_mask).numpy()
    before, before_var = pca(enc.frozen[n_train:].numpy().astype(np.float64), 2)
    after, after_var = pca(after_vectors.astype(np.float64), 2)
    yield Outcome(data, found, head_accuracy, tuned_accuracy, head_losses, layer_losses, unfrozen, epochs_done,
                  time.perf_counter() - started, notes, before, after, (before_var, after_var),
                  weight_change(list(encoder.encoder.layer[first:]), tuned, first), head, tuned)


def weight_change(original: list[nn.Module], tuned: TopLayers, first: int) -> list[tuple[str, float]]:
    """‖W_after − W_before‖_F / ‖W_before‖_F for every weight matrix of the unfrozen layers."""
    rows = []
    for offset, (before, after) in enumerate(zip(original, tuned.layers)):
        after_params = dict(after.named_parameters())
        for name, param in before.named_parameters():
            if name.endswith("weight") and param.dim() == 2:
                before_weight = param.detach().float().cpu()
                delta = (after_params[name].detach() - before_weight).norm() / before_weight.norm()
                rows.append((tr("classify.changes_layer", layer=first + offset, name=name.removesuffix(".weight")),
                             float(delta)))
    return rows


def before_projection(data: finetune.Split) -> tuple[np.ndarray, np.ndarray]:
    """PCA of the frozen MiniLM vectors of the held-out sentences (the 'before' picture, no training needed)."""
    return _frozen_projection(tuple(e.text for e in data.test))


@bounded_cache(max_entries=8)  # "What fine-tuning changed" shows it on every open: 0.7 s of MiniLM each time
def _frozen_projection(texts: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    coords, variance = pca(frozen_vectors(texts).numpy().astype(np.float64), 2)
    coords.flags.writeable = variance.flags.writeable = False  # shared by every caller
    return coords, variance


@bounded_cache(max_entries=8)  # the held-out sentences' vectors: the projection and the view before training
def frozen_vectors(texts: tuple[str, ...]) -> torch.Tensor:
    """Mean-pooled last layer of the frozen MiniLM, (N, H); shared by every caller, so never changed in place."""
    return encode(list(texts), 1).frozen


def _check(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise Cancelled()


# ------------------------------------------------------------------------------------------------------------------
# One run (and one result) per browser session

class SessionRuns:
    """Each browser session's run and latest result (bounded), and the machine's training slots.

    Starting a run cancels the session's previous run at once, so a second click replaces the first instead of
    queueing behind it; the UI event itself is not queue-limited, and at most ``slots`` runs train at a time (the
    others wait, cancellable, for a slot)."""

    def __init__(self, max_sessions: int = 32, slots: int = 2):
        self.slots = threading.Semaphore(slots)
        self._lock = threading.Lock()  # guards _running
        self._running: dict[str, threading.Event] = {}
        self._results = BoundedCache(max_sessions)  # session -> its latest Outcome

    def start(self, session: str) -> threading.Event:
        with self._lock:
            previous = self._running.get(session)
            if previous is not None:
                previous.set()
            event = self._running[session] = threading.Event()
            return event

    def finish(self, session: str, event: threading.Event, outcome: Outcome | None) -> None:
        with self._lock:
            if self._running.get(session) is event:
                del self._running[session]
            if outcome is not None and not event.is_set():
                self._results.put(session, outcome)

    def result(self, session: str) -> Outcome | None:
        return self._results.get(session)


RUNS = SessionRuns()


def run_for_session(session: str, data: finetune.Split, progress: Callable[[Progress], None] | None = None,
                    **settings) -> Iterator[Progress | Outcome]:
    """train() in the session's slot: cancels the session's earlier run, stores the outcome when done."""
    event = RUNS.start(session)
    outcome = None
    try:
        while not RUNS.slots.acquire(timeout=0.5):
            _check(event)
            yield Progress("waiting", 0.0, tr("classify.progress_waiting"), [], [])
        try:
            for update in train(data, cancel=event, **settings):
                if isinstance(update, Outcome):
                    outcome = update
                yield update
        finally:
            RUNS.slots.release()
    finally:
        RUNS.finish(session, event, outcome)
