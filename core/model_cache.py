"""Building models from resolved checkpoint files, and the models each tab has loaded (a bounded LRU cache).

``build(files, pick)`` checks every tensor's shape from the file headers against the class's skeleton on the meta
device, then allocates the model and loads the weights strictly. ``load(task, id)`` resolves the checkpoint through the registry (which may download it), builds the task's class
once per resolved snapshot and keeps it. The key is the snapshot folder, not the typed string, so ``/x``, ``/x/`` and
``/x/.`` are one entry. Eviction is least recently used first, bounded by count and by memory (``--cache-models``,
``--cache-gb``). ``config(id)`` and ``tokenizer(id)`` fetch and parse only what their views need.

Locks: one short lock guards the dicts; a per-checkpoint lock makes concurrent requests for the same checkpoint
build it once. Neither is held across network I/O: the download happens in ``registry.resolve`` before either.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from core import registry
from core.device import get_device
from core.errors import ModelUnavailableError, UserInputError
from core.families import FAMILIES, Family, family_of, load_checkpoint_into, shared_parameters, tie
from core.i18n import text
from core.nets import bert
from core.registry import CheckpointFiles, Progress
from core.weights import CheckpointMismatchError, find_weights_file, load_state_dict, raise_if_mismatched, weight_shapes


def build(files: CheckpointFiles, pick: Callable[[Any, set[str]], type[nn.Module]],
          device: torch.device | str | None = None) -> nn.Module:
    """Check every tensor's shape against ``pick(config, keys)``'s skeleton on the meta device, then allocate it and
    load the weights strictly. ``pick`` chooses the class from the keys the file holds."""
    family, shown = files.family, files.name
    config = family.parse_config(files.config)
    weights = find_weights_file(files.directory, shown)
    shapes = weight_shapes(weights, shown)
    model_class = pick(config, set(shapes))
    try:
        with torch.device("meta"):
            skeleton = model_class(config)
        placeholders = {k: torch.empty(shape, device="meta") for k, shape in shapes.items()}  # shapes, no data
        raise_if_mismatched(skeleton, {k: v.shape for k, v in family.normalize_keys(placeholders, skeleton).items()})
        # Memory for the weights only: no random initialisation, since the strict load overwrites every tensor.
        groups = shared_parameters(skeleton)
        model = skeleton.to_empty(device="cpu")
        tie(model, groups)  # to_empty gives shared parameters separate storage
        load_checkpoint_into(model, load_state_dict(weights, shown), family.normalize_keys)
    except CheckpointMismatchError as exc:
        raise ModelUnavailableError("registry.cannot_load_as", model=shown, cls=model_class.__name__,
                                    detail=str(exc)) from exc
    model.checkpoint = files
    return model.to(device or get_device()).eval()


def from_pretrained(model_id, model_class: type[nn.Module], device: torch.device | str | None = None) -> nn.Module:
    """Resolve ``model_id`` (or take resolved CheckpointFiles), build ``model_class`` and load its weights strictly."""
    files = model_id if isinstance(model_id, CheckpointFiles) else registry.resolve(model_id)
    return build(files, lambda config, keys: model_class, device)


class Badge(str):
    """One line for the UI: model, kind, source, device, dtype, shown in the language of whoever it is shown to.

    Results that hold a badge are cached and shared by learners of both languages (core/attention.py's maps, the
    Transformer walk), so the badge cannot be a string made in the first caller's language. As a string it is the
    English line (logs, ``in`` checks); formatted (``f"{badge}"``, ``text(key, badge=badge)``) it renders in the
    language of the call being handled."""

    def __new__(cls, model: str, kind: str, source: str, device: str, dtype: str):
        fields = dict(model=model, kind=kind, source=source, device=device, dtype=dtype)
        badge = super().__new__(cls, cls._render(fields, "en"))
        badge.fields = fields
        return badge

    @staticmethod
    def _render(fields: dict, lang: str | None) -> str:
        kind = text("registry.kind_encoder", lang) if fields["kind"] == "Encoder" else fields["kind"]  # a class name
        return text("registry.badge", lang, **dict(fields, kind=kind, source=registry.source_label(fields["source"],
                                                                                                   lang)))

    def __getnewargs__(self):  # copy and pickle rebuild it from its fields
        return tuple(self.fields.values())

    def __format__(self, spec: str) -> str:
        return format(self._render(self.fields, None), spec)

    def __str__(self) -> str:
        return self._render(self.fields, None)


@dataclass
class LoadedModel:
    task: str
    model: nn.Module
    tokenizer: Any
    files: CheckpointFiles
    device: torch.device
    nbytes: int = 0  # parameters and buffers, for the cache's memory bound

    @property
    def config(self) -> bert.BertConfig:
        return self.model.config

    @property
    def badge(self) -> Badge:
        """One line for the UI: model, class, source, device, dtype. Path-free: local folders show only their name."""
        dtype = next(self.model.parameters()).dtype
        return Badge(self.files.name, type(self.model).__name__, self.files.source, self.device.type,
                     str(dtype).removeprefix("torch."))


_cache: OrderedDict[tuple[str, str], LoadedModel] = OrderedDict()  # (task, resolved folder) -> model, LRU order
_tokenizers: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()  # guards these dicts for a moment; never held across network I/O or loading
_key_locks: dict[tuple[str, str], threading.Lock] = {}
TOKENIZER_CACHE = 16


def model_class_for(task: str, config, keys: set[str], family: Family | None = None) -> type[nn.Module]:
    """The class whose parameters match this task and this file (``family``: from the config's model_type)."""
    model_type = getattr(config, "model_type", "?")
    family = family or family_of({"model_type": model_type}, model_type)
    if task not in family.classes:  # e.g. a BERT checkpoint picked for a GPT view
        raise UserInputError("registry.wrong_class", model_type=model_type)
    return family.classes[task](config, keys)


def load(task: str, model_id: str | None = None, progress: Progress | None = None) -> LoadedModel:
    """The model for ``task`` (default checkpoint if ``model_id`` is None), loaded once and cached.

    ``progress(fraction, message)`` hears download progress. Raises ModelUnavailableError (offline / not
    downloaded / Hub trouble) or UserInputError (wrong kind of checkpoint, too large)."""
    if not any(task in family.classes for family in FAMILIES.values()):
        raise ValueError(f"unknown task {task!r}; one of {sorted({t for f in FAMILIES.values() for t in f.classes})}")
    files = registry.resolve(registry.model_id_or_default(task, model_id), "model", progress)  # no lock held: may download
    key = (task, str(files.directory))
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
        if len(_key_locks) > 4 * registry.settings.cache_models:  # forget locks of checkpoints nobody is loading now
            for stale in [k for k, lock in _key_locks.items() if k not in _cache and not lock.locked()]:
                del _key_locks[stale]
        key_lock = _key_locks.setdefault(key, threading.Lock())
    with key_lock:  # one build per checkpoint (CPU work only); other checkpoints build in parallel
        with _lock:
            if key in _cache:
                return _cache[key]
        model = build(files, lambda config, keys: model_class_for(task, config, keys, files.family))
        nbytes = sum(t.numel() * t.element_size() for t in (*model.parameters(), *model.buffers()))
        loaded = LoadedModel(task, model, _tokenizer_for(files), files, next(model.parameters()).device, nbytes)
        with _lock:
            _cache[key] = loaded
            _evict()
        return loaded


def _evict() -> None:
    """Least recently used first, until the count and memory bounds hold (the newest entry always stays)."""
    bounds = registry.settings
    while len(_cache) > 1 and (len(_cache) > bounds.cache_models
                               or sum(entry.nbytes for entry in _cache.values()) > bounds.cache_bytes):
        key, _ = _cache.popitem(last=False)
        _key_locks.pop(key, None)


def config(model_id: str, progress: Progress | None = None):
    """Only the parsed config.json (fetches nothing else): for the model card."""
    files = registry.resolve(model_id, "config", progress)
    return files.family.parse_config(files.config)


def tokenizer(model_id: str, progress: Progress | None = None) -> tuple[Any, CheckpointFiles]:
    """Only the tokenizer (and the resolved files), without weights: for the views that need no model."""
    files = registry.resolve(model_id, "tokenizer", progress)  # no lock held: may download
    return _tokenizer_for(files), files


def tokenizer_with_fallback(model_id: str) -> tuple[Any, str]:
    """The checkpoint's tokenizer, or MiniLM-L6's when the checkpoint is not here (the offline views: input layouts
    and windows need only a WordPiece vocabulary). Returns the tokenizer and a line saying which one it is."""
    try:
        found, _ = tokenizer(model_id)
        return found, text("registry.tokens_from", model=model_id)
    except (ModelUnavailableError, UserInputError):
        found, _ = tokenizer(registry.OFFLINE_ENCODER)
        return found, text("registry.tokens_fallback", model=model_id, fallback=registry.OFFLINE_ENCODER)


def _tokenizer_for(files: CheckpointFiles):
    key = str(files.directory)
    with _lock:
        if key in _tokenizers:
            _tokenizers.move_to_end(key)
            return _tokenizers[key]
    try:
        made = files.family.tokenizer(files.directory)  # local file reads only
    except FileNotFoundError:
        raise ModelUnavailableError("registry.no_tokenizer", model=files.name) from None
    with _lock:
        _tokenizers[key] = made
        while len(_tokenizers) > TOKENIZER_CACHE:
            _tokenizers.popitem(last=False)
    return made


def loaded_models() -> list[str]:
    """Badges of every model in the cache, most recent last (for the status panel; path-free)."""
    with _lock:
        return [entry.badge for entry in _cache.values()]


def clear_cache() -> None:
    """Forget loaded models, tokenizers, recent download failures and the network probe (as a restart would)."""
    with _lock:
        _cache.clear()
        _tokenizers.clear()
        _key_locks.clear()
    registry.forget_network()
