"""Fine-tune MiniLM-L6 offline on a labelled set, against baselines on the same split (seed §14.2).

The data: ``label<TAB>sentence`` lines (the bundled sentiment sets, pasted lines, or an uploaded TSV/CSV), split once,
stratified, with a fixed seed: 75% to train on, 25% held out. Every model is scored on the same held-out sentences.

The models, from no pre-training to fine-tuning (C classes, x a sentence):

  majority        always the most frequent training label
  n-gram LR       P(c | x) = softmax(W φ(x) + b), φ(x) = which word (or Chinese character) 1- and 2-grams occur in x
  GloVe LR        the same, with φ(x) = the mean of x's GloVe 6B 50d word vectors (static, pre-trained on words)
  (a) frozen      the same, with φ(x) = mean over tokens of MiniLM's last hidden states (pre-trained, not changed)
  (b) fine-tuned  start from (a); unfreeze MiniLM's top k layers and train them with the head (lr 1e-4 for the
                  layers, as BERT fine-tuning uses; 1e-3 for the head), so φ itself changes

Every logistic regression minimises the mean cross-entropy  −(1/N) Σ_i log P(y_i | x_i) + λ‖W‖² with Adam, full batch.
MiniLM (all-MiniLM-L6-v2) was trained with mean pooling, so its sentence vector is the masked mean of the last layer,
not the [CLS] vector. The shared MiniLM loaded by the registry is never modified: the top layers are deep copies.

Training runs in core/tasks/finetune_train.py; this module holds data, features and baselines.
"""
from __future__ import annotations

import csv
import hashlib
import io
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from core.loading.cache import BoundedCache
from core.loading.device import one_cpu_thread
from core.text.corpora import LABELLED
from core.text.errors import UserInputError, as_sent
from core.text.i18n import text as tr
from core.text.limits import DEFAULT_SEED
from core.text.textio import normalize_text, read_text_upload
from core.text.tokenizer import word_tokens

MAX_UPLOAD_BYTES = 1024 * 1024  # labelled data: 1 MB is thousands of sentences
MAX_EXAMPLES = 2000  # more would take minutes to encode on 2 cores
MAX_SENTENCE_CHARS = 500
MAX_LABEL_CHARS = 40
MAX_CLASSES = 8
MIN_PER_CLASS = 4  # fewer cannot be split into train and held-out parts
TEST_FRACTION = 0.25
MAX_TOKENS = 64  # MiniLM reads the first 64 tokens of each sentence (the bundled ones have at most ~30)
HEADER_LABELS = {"label", "labels", "class", "sentiment", "y"}
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass
class Example:
    label: str
    text: str
    line: int  # 1-based line in the source, for messages
    group: int | None = None  # twins that must land on the same side of the split (the bundled sets' pairs)


@dataclass
class Split:
    labels: list[str]  # class names, sorted; class index = position
    train: list[Example]
    test: list[Example]
    seed: int
    notes: list[str] = field(default_factory=list)

    @property
    def y_train(self) -> np.ndarray:
        return np.array([self.labels.index(e.label) for e in self.train])

    @property
    def y_test(self) -> np.ndarray:
        return np.array([self.labels.index(e.label) for e in self.test])

    @property
    def fingerprint(self) -> str:
        """Same data and seed → same fingerprint (keys the feature cache)."""
        digest = hashlib.sha1(repr([(e.label, e.text) for e in self.train + self.test]).encode())
        return f"{digest.hexdigest()[:16]}-{self.seed}"


# ------------------------------------------------------------------------------------------------------------------
# Reading labelled lines


def _fields(line: str) -> list[str] | None:
    if "\t" in line:
        return line.split("\t", 1)
    if "," in line:  # a CSV row: label,sentence (the sentence may be quoted and hold commas)
        row = next(csv.reader(io.StringIO(line)), [])
        return [row[0], ",".join(row[1:])] if len(row) >= 2 else None
    return None


def parse_labelled(text: str | None, source: str = "classify.source_pasted", **source_fields) -> list[Example]:
    """``label<TAB>sentence`` (or ``label,sentence``) lines → examples. Blank lines and ``#`` comments are skipped,
    and so is a header row (``label<TAB>sentence``). Malformed lines are named by number. ``source`` is the key of
    the words that name the data in messages (with ``source_fields``)."""
    # \r\n and a lone \r end a line too (normalize_text would drop a bare \r as a control character).
    text = normalize_text((text or "").replace("\r\n", "\n").replace("\r", "\n"))
    examples, problems = [], []
    for number, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = _fields(raw)
        if parts is None:
            problems.append(tr("classify.problem_no_tab", line=number))
            continue
        label, sentence = unicodedata.normalize("NFC", parts[0].strip()).lower(), " ".join(parts[1].split())
        if not examples and not problems and label in HEADER_LABELS:
            continue
        if not label:
            problems.append(tr("classify.problem_empty_label", line=number))
        elif len(label) > MAX_LABEL_CHARS:
            problems.append(tr("classify.problem_long_label", line=number, chars=len(label), limit=MAX_LABEL_CHARS))
        elif not sentence:
            problems.append(tr("classify.problem_empty_sentence", line=number))
        elif len(sentence) > MAX_SENTENCE_CHARS:
            problems.append(tr("classify.problem_long_sentence", line=number, chars=len(sentence),
                               limit=MAX_SENTENCE_CHARS))
        else:
            examples.append(Example(label, sentence, number))
    if problems:
        shown = problems[:6] + ([tr("classify.problem_more", count=len(problems) - 6)] if len(problems) > 6 else [])
        raise UserInputError("classify.error_malformed", count=len(problems), source=tr(source, **source_fields),
                             problems="; ".join(shown))
    return check_examples(examples, tr(source, **source_fields))


def check_examples(examples: list[Example], source: str) -> list[Example]:
    """At least two classes, few enough classes, enough examples of each; otherwise a message that names them.
    ``source`` names the data in the learner's language ("your pasted lines")."""
    if not examples:
        raise UserInputError("classify.error_no_examples", source=source)
    if len(examples) > MAX_EXAMPLES:
        raise UserInputError("classify.error_too_many_examples", source=source, count=f"{len(examples):,}",
                             limit=f"{MAX_EXAMPLES:,}")
    counts: dict[str, list[int]] = {}
    for example in examples:
        counts.setdefault(example.label, []).append(example.line)
    if len(counts) == 1:
        raise UserInputError("classify.error_one_class", source=source, label=examples[0].label)
    if len(counts) > MAX_CLASSES:
        names = ", ".join(sorted(counts)[:12])
        raise UserInputError("classify.error_too_many_classes", source=source, count=len(counts), names=names,
                             limit=MAX_CLASSES)
    rare = {label: lines for label, lines in counts.items() if len(lines) < MIN_PER_CLASS}
    if rare:
        listed = "; ".join(tr("classify.rare_label", label=label, lines=", ".join(map(str, lines)))
                           for label, lines in rare.items())
        raise UserInputError("classify.error_rare", listed=listed, minimum=MIN_PER_CLASS,
                             seen=", ".join(sorted(counts)))
    return examples


def load_bundled(name: str) -> list[Example]:
    """A bundled set. Its i-th positive and i-th negative sentence are twins on one topic ("The soup was hot…" /
    "The soup was cold…"); they share a group, so a topic word cannot carry a label from training into testing."""
    if name not in LABELLED:
        raise UserInputError("classify.error_unknown_dataset", name=as_sent(name), choices=", ".join(LABELLED))
    examples = parse_labelled(LABELLED[name].read_text(encoding="utf-8"), "classify.source_bundled",
                              name=LABELLED[name].name)
    seen: dict[str, int] = {}
    for example in examples:
        example.group = seen[example.label] = seen.get(example.label, -1) + 1
    return examples


def read_upload(path: str | Path) -> list[Example]:
    """An uploaded .tsv/.csv/.txt: read as bytes (capped), decoded as UTF-8, parsed; never unpickled or executed."""
    return parse_labelled(read_text_upload(path, MAX_UPLOAD_BYTES), "classify.source_upload")


def split(examples: list[Example], seed: int = DEFAULT_SEED, test_fraction: float = TEST_FRACTION) -> Split:
    """Stratified: each class gives the same share of its sentences to the held-out part (at least one).
    Examples with groups are split by group (all twins on one side)."""
    rng = np.random.default_rng(seed)
    labels = sorted({e.label for e in examples})
    train, test = [], []
    if all(e.group is not None for e in examples):
        groups = sorted({e.group for e in examples})
        held = set(rng.permutation(groups)[:max(1, round(len(groups) * test_fraction))].tolist())
        train = [e for e in examples if e.group not in held]
        test = [e for e in examples if e.group in held]
        return Split(labels, [train[i] for i in rng.permutation(len(train))], test, seed)
    for label in labels:
        members = [e for e in examples if e.label == label]
        order = rng.permutation(len(members))
        held = max(1, round(len(members) * test_fraction))
        test += [members[i] for i in order[:held]]
        train += [members[i] for i in order[held:]]
    train = [train[i] for i in rng.permutation(len(train))]
    return Split(labels, train, test, seed)


# ------------------------------------------------------------------------------------------------------------------
# Baselines: majority class, n-gram and GloVe logistic regression


def units(text: str) -> list[str]:
    """Lower-case words, with every Chinese character a unit of its own (Chinese has no spaces between words)."""
    out = []
    for token in word_tokens(text, lowercase=True):
        out.extend(token if _CJK.search(token) else [token])
    return out


def ngrams(text: str, n_max: int = 2) -> list[str]:
    tokens = units(text)
    return [" ".join(tokens[i:i + n]) for n in range(1, n_max + 1) for i in range(len(tokens) - n + 1)]


def fit_logistic(features: torch.Tensor, y: np.ndarray, classes: int, seed: int, l2: float = 1e-3,
                 steps: int = 200, lr: float = 0.05) -> nn.Linear:
    """Softmax regression by full-batch Adam on mean cross-entropy + λ‖W‖²; deterministic for a seed."""
    torch.manual_seed(seed)
    head = nn.Linear(features.shape[1], classes)
    optimizer = torch.optim.Adam(head.parameters(), lr=lr)
    target = torch.as_tensor(y)
    with one_cpu_thread():
        for _ in range(steps):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(head(features), target) + l2 * head.weight.square().sum()
            loss.backward()
            optimizer.step()
    return head.eval()


@dataclass
class Baseline:
    """A baseline's name and note are translation keys (baselines are cached across learners and languages);
    ``name`` and ``note`` render them in the current call's language."""
    name_key: str
    accuracy: float  # on the held-out sentences
    note_key: str
    note_fields: dict = field(default_factory=dict)
    features: object = None  # text -> (D,) tensor; None for the majority baseline
    head: nn.Linear | None = None
    majority: int = 0

    @property
    def name(self) -> str:
        return tr(self.name_key)

    @property
    def note(self) -> str:
        return tr(self.note_key, **self.note_fields)

    def probabilities(self, text: str, classes: int) -> np.ndarray:
        if self.head is None:
            return np.eye(classes)[self.majority]
        with torch.no_grad():
            return self.head(self.features(text)[None]).softmax(-1)[0].numpy()


def majority_baseline(data: Split) -> Baseline:
    counts = np.bincount(data.y_train, minlength=len(data.labels))
    winner = int(counts.argmax())
    accuracy = float((data.y_test == winner).mean())
    return Baseline("classify.baseline_majority", accuracy, "classify.baseline_majority_note",
                    {"label": data.labels[winner]}, majority=winner)


def ngram_baseline(data: Split, max_vocab: int = 20_000) -> Baseline:
    counts: dict[str, int] = {}
    for example in data.train:
        for gram in set(ngrams(example.text)):
            counts[gram] = counts.get(gram, 0) + 1
    vocab = {g: i for i, g in enumerate(sorted(counts, key=lambda g: (-counts[g], g))[:max_vocab])}

    def features(text: str) -> torch.Tensor:
        x = torch.zeros(len(vocab))
        for gram in ngrams(text):
            if gram in vocab:
                x[vocab[gram]] = 1.0
        return x  # (V,) which 1- and 2-grams occur

    x_train = torch.stack([features(e.text) for e in data.train])
    head = fit_logistic(x_train, data.y_train, len(data.labels), data.seed)
    accuracy = _accuracy(head, torch.stack([features(e.text) for e in data.test]), data.y_test)
    return Baseline("classify.baseline_ngram", accuracy, "classify.baseline_ngram_note", {"count": f"{len(vocab):,}"},
                    features, head)


def glove_baseline(data: Split) -> Baseline:
    from core.embeddings.embeddings import load_glove

    glove = load_glove()
    found = total = 0

    def features(text: str) -> torch.Tensor:
        nonlocal found, total
        words = [w for w in word_tokens(text, lowercase=True) if any(ch.isalnum() for ch in w)]
        rows = [glove.index[w] for w in words if w in glove.index]
        found, total = found + len(rows), total + len(words)
        if not rows:
            return torch.zeros(glove.dim)
        return torch.from_numpy(np.asarray(glove.vectors[rows], dtype=np.float32).mean(0))  # (50,) mean vector

    x_train = torch.stack([features(e.text) for e in data.train])
    head = fit_logistic(x_train, data.y_train, len(data.labels), data.seed, lr=0.1, steps=300)
    accuracy = _accuracy(head, torch.stack([features(e.text) for e in data.test]), data.y_test)
    coverage = found / max(total, 1)
    note = "classify.baseline_glove_note" if coverage >= 0.5 else "classify.baseline_glove_note_low"
    return Baseline("classify.baseline_glove", accuracy, note, {"share": f"{coverage:.0%}"}, features, head)


def _accuracy(head: nn.Linear, x: torch.Tensor, y: np.ndarray) -> float:
    with torch.no_grad():
        return float((head(x).argmax(-1).numpy() == y).mean())


def baselines(data: Split) -> list[Baseline]:
    return [majority_baseline(data), ngram_baseline(data), glove_baseline(data)]


_baselines = BoundedCache(8)  # Split.fingerprint -> list[Baseline]


def cached_baselines(data: Split) -> list[Baseline]:
    """baselines(data), remembered for the last few splits (the data view shows them on every open)."""
    return _baselines.get_or_compute(data.fingerprint, lambda: baselines(data))


def check_sentence(text: str | None) -> str:
    """A sentence to classify with every trained model."""
    text = " ".join(normalize_text(text or "").split())
    if not text:
        raise UserInputError("classify.error_empty_sentence")
    if len(text) > MAX_SENTENCE_CHARS:
        raise UserInputError("classify.error_long_sentence", chars=f"{len(text):,}", limit=MAX_SENTENCE_CHARS)
    return text
