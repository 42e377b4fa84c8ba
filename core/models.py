"""The model registry: which checkpoint each task uses, loaded lazily, once per process, behind a lock.

``load(task, model_id)`` resolves the checkpoint (core.checkpoint), picks the model class from the task and from the
tensors actually in the file (bert-base-uncased's file carries the NSP head, so it loads as BertForPreTraining),
loads it strictly onto ``get_device()`` and caches it. ``LoadedModel.badge`` says where it came from and where it runs.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import torch
from torch import nn

from core import bert
from core.checkpoint import MINILM_ID, CheckpointFiles, load_state_dict, resolve
from core.device import get_device
from core.errors import ModelUnavailableError, UserInputError
from core.tokenizer import WordPieceTokenizer

TASKS = ("encoder", "mlm", "ner", "qa", "classify")

# task -> (default, alternatives). The first entry is the online default.
CHECKPOINTS: dict[str, list[str]] = {
    "encoder": [MINILM_ID, "bert-base-uncased", "bert-base-cased", "distilbert-base-uncased", "bert-base-chinese"],
    "mlm": ["bert-base-uncased", "distilbert-base-uncased", "bert-base-chinese"],
    "ner": ["dslim/bert-base-NER"],
    "qa": ["distilbert-base-cased-distilled-squad", "deepset/bert-base-cased-squad2"],
    # Single sentence (SST-2 sentiment; Dianping reviews), pairs (MRPC paraphrase; Chinese similarity), CoLA.
    "classify": ["distilbert-base-uncased-finetuned-sst-2-english", "textattack/bert-base-uncased-MRPC",
                 "uer/roberta-base-finetuned-dianping-chinese", "IDEA-CCNL/Erlangshen-Roberta-110M-Similarity",
                 "textattack/bert-base-uncased-CoLA"],
}
# The checkpoint each task falls back to for the views that need only a tokenizer and an encoder (offline).
OFFLINE_ENCODER = MINILM_ID


@dataclass
class LoadedModel:
    task: str
    model: nn.Module
    tokenizer: WordPieceTokenizer
    files: CheckpointFiles
    device: torch.device

    @property
    def config(self) -> bert.BertConfig:
        return self.model.config

    @property
    def badge(self) -> str:
        """One line for the UI: model, source, device, dtype."""
        dtype = next(self.model.parameters()).dtype
        return (f"{self.files.model_id} · {type(self.model).__name__} · from {self.files.source} · "
                f"{self.device.type} · {str(dtype).removeprefix('torch.')}")


_cache: dict[tuple[str, str], LoadedModel] = {}
_tokenizers: dict[str, tuple[WordPieceTokenizer, CheckpointFiles]] = {}
_lock = threading.Lock()  # guards the dicts; loading itself holds only the per-checkpoint lock
_key_locks: dict[tuple[str, str], threading.Lock] = {}


def model_class_for(task: str, config: bert.BertConfig, keys: set[str]) -> type[nn.Module]:
    """The class whose parameters match this task and this file."""
    distil = config.model_type == "distilbert"
    if config.model_type not in ("bert", "distilbert"):
        raise UserInputError(f"This app runs BERT and DistilBERT checkpoints; this one is '{config.model_type}'.")
    if task == "encoder":
        return bert.Encoder
    if task == "mlm":
        if distil:
            return bert.DistilBertForMaskedLM
        if not any(k.endswith("predictions.transform.dense.weight") for k in keys):
            raise UserInputError("This checkpoint has no masked-LM head (cls.predictions), so it cannot fill in "
                                 "blanks. Choose a checkpoint trained with masked LM, such as bert-base-uncased.")
        return bert.BertForPreTraining if "cls.seq_relationship.weight" in keys else bert.BertForMaskedLM
    if task == "ner":
        if not any(k.startswith("classifier.") for k in keys):
            raise UserInputError("This checkpoint has no token-classification head (classifier.*). Choose a "
                                 "BertForTokenClassification checkpoint such as dslim/bert-base-NER.")
        return bert.DistilBertForTokenClassification if distil else bert.BertForTokenClassification
    if task == "qa":
        if not any(k.startswith("qa_outputs.") for k in keys):
            raise UserInputError("This checkpoint has no question-answering head (qa_outputs.*). Choose a "
                                 "SQuAD checkpoint such as distilbert-base-cased-distilled-squad.")
        return bert.DistilBertForQuestionAnswering if distil else bert.BertForQuestionAnswering
    if task == "classify":
        if not any(k.startswith("classifier.") for k in keys):
            raise UserInputError("This checkpoint has no sequence-classification head (classifier.*). Choose a "
                                 "fine-tuned classifier such as distilbert-base-uncased-finetuned-sst-2-english.")
        if any("TokenClassification" in name for name in config.architectures):
            raise UserInputError("This checkpoint tags tokens (its config says TokenClassification); sentence "
                                 "classification needs a *ForSequenceClassification checkpoint. Try the NER tab.")
        if distil:
            return bert.DistilBertForSequenceClassification
        if not any(k.endswith("pooler.dense.weight") for k in keys):
            raise UserInputError("This BERT checkpoint has a classifier but no pooler, so it is not a "
                                 "BertForSequenceClassification (it may tag tokens: try the NER tab).")
        return bert.BertForSequenceClassification
    raise ValueError(f"unknown task {task!r}; one of {TASKS}")


def model_id_or_default(task: str, model_id: object) -> str:
    """The checkpoint id as text (the UI's dropdown accepts anything), or the task's default when empty."""
    return str(model_id or "").strip() or CHECKPOINTS[task][0]


def load(task: str, model_id: str | None = None) -> LoadedModel:
    """The model for ``task`` (default checkpoint if ``model_id`` is None), loaded once and cached.

    Raises ModelUnavailableError (offline / not downloaded) or UserInputError (wrong kind of checkpoint)."""
    model_id = model_id_or_default(task, model_id)
    key = (task, model_id)
    with _lock:
        if key in _cache:
            return _cache[key]
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one load per checkpoint; other checkpoints (other tabs) load in parallel
        if key in _cache:
            return _cache[key]
        files = resolve(model_id)
        config = bert.BertConfig.from_dict(files.config)
        state = load_state_dict(files.weights)
        model_class = model_class_for(task, config, set(state))
        model = model_class(config)
        try:
            bert.load_checkpoint_into(model, state)
        except bert.CheckpointMismatchError as exc:
            raise ModelUnavailableError(f"'{model_id}' could not be loaded as {model_class.__name__}: {exc}") from exc
        device = get_device()
        model = model.to(device).eval()
        with _lock:
            tokenizer, _ = _tokenizer_for(files)
            loaded = _cache[key] = LoadedModel(task, model, tokenizer, files, device)
        return loaded


def tokenizer(model_id: str) -> tuple[WordPieceTokenizer, CheckpointFiles]:
    """Only the tokenizer (and the resolved files), without loading weights: for the offline views."""
    with _lock:
        return _tokenizer_for(resolve(model_id))


def _tokenizer_for(files: CheckpointFiles) -> tuple[WordPieceTokenizer, CheckpointFiles]:
    cached = _tokenizers.get(str(files.directory))
    if cached is None:
        try:
            cached = (WordPieceTokenizer.from_directory(files.directory), files)
        except FileNotFoundError as exc:
            raise ModelUnavailableError(f"'{files.model_id}' has no tokenizer files ({exc}).") from exc
        _tokenizers[str(files.directory)] = cached
    return cached


def loaded_models() -> list[str]:
    """Badges of every model loaded so far (for the status line)."""
    with _lock:
        return [entry.badge for entry in _cache.values()]


def clear_cache() -> None:
    with _lock:
        _cache.clear()
        _tokenizers.clear()
