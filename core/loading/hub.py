"""The Hugging Face Hub over plain HTTP: one listing request, file downloads with deadlines, and the HF cache.

Why not huggingface_hub's downloader (installed, 2.4): its API calls use an httpx client built with
``timeout=None`` (a listing that never answers waits forever), a stalled body is retried five times, and a body that
trickles one byte at a time never times out. Here every request has a deadline (``timeout()``, default 20 s, env
``PLM_HUB_TIMEOUT``): connecting, the headers, and each read. A body must also keep moving: averaging less than
RATE_FLOOR_BYTES_PER_SECOND over RATE_WINDOW_SECONDS ends it as too slow, and a checkpoint's files must all arrive
before its ``Deadline`` (DEADLINE_BASE_SECONDS plus its size at DEADLINE_BYTES_PER_SECOND); the message says which
limit ended it. A full disk (ENOSPC) ends it too, the partial file removed. Bytes are reported to a
``progress(done, total)`` callable as they arrive.

The cache is huggingface_hub's own layout, so ``hf download <id>`` and this module fill and read the same folders:

    $HF_HUB_CACHE/models--org--name/refs/main                  the commit that "main" pointed at
    $HF_HUB_CACHE/models--org--name/blobs/<sha256 or git oid>  file contents
    $HF_HUB_CACHE/models--org--name/snapshots/<commit>/<file>  a relative symlink to its blob

Endpoints used (``HF_ENDPOINT``, default https://huggingface.co):
    GET /api/models/{id}/revision/{rev}?blobs=true   -> {"sha": commit, "siblings": [{"rfilename", "size", "lfs"}]}
    GET /{id}/resolve/{commit}/{file}                 -> the bytes (LFS files redirect to a CDN; followed)
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import os
import re
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from core.text import i18n
from core.text.errors import LearnerError, ModelUnavailableError

Progress = Callable[[int, int], None]  # (bytes done, bytes in all)

DEFAULT_TIMEOUT_SECONDS = 20.0  # the bound is 30 s of no progress
RATE_FLOOR_BYTES_PER_SECOND = 50_000  # a body averaging less than this ...
RATE_WINDOW_SECONDS = 60.0  # ... over this long is ended as too slow (a classroom cannot wait for it)
DEADLINE_BASE_SECONDS = 120.0  # a checkpoint's files must all arrive within this ...
DEADLINE_BYTES_PER_SECOND = 250_000  # ... plus their size at this rate (bert-base-uncased, 440 MB: 31 min)
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
SPACE_MARGIN_BYTES = 50_000_000  # left free beside a download: the server writes logs and uploads too
CHUNK_BYTES = 1 << 20
# A Hub model id: "name" or "org/name"; letters, digits, '.', '_', '-'; no "..", no leading punctuation.
HUB_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")

_timeout_override: float | None = None


class HubError(ModelUnavailableError):
    """The Hub could not be reached, refused, or stalled; the message says which and names the model."""


def set_timeout(seconds: float | None) -> None:
    """The deadline for each Hub request and the no-progress window (None: back to the default)."""
    global _timeout_override
    _timeout_override = seconds


def timeout() -> float:
    if _timeout_override is not None:
        return _timeout_override
    try:
        return float(os.environ.get("PLM_HUB_TIMEOUT", DEFAULT_TIMEOUT_SECONDS))
    except ValueError:
        return DEFAULT_TIMEOUT_SECONDS


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def cache_dir() -> Path:
    """huggingface_hub's cache folder, read from the environment on every call (tests switch it)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


# A second cache that is only read: the image's default cache, where a Space's ``preload_from_hub`` put checkpoints
# when the app has moved HF_HOME to persistent storage (use_persistent_storage). Read on every call, like HF_HOME.
PRELOADED_CACHE_ENV = "PLM_PRELOADED_HUB_CACHE"
SPACE_DATA_DIR = Path("/data")  # a Space's persistent storage, when the Space has some


def default_cache_dir(environ=os.environ) -> Path:
    """Where huggingface_hub keeps its cache when neither HF_HOME nor HF_HUB_CACHE is set."""
    return Path(environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "huggingface" / "hub"


def use_persistent_storage(data_dir: Path | None = None, environ=os.environ) -> Path | None:
    """On a Space (SPACE_ID set) with persistent storage (``data_dir``, default SPACE_DATA_DIR, a writable folder), and
    when the operator set
    neither HF_HOME nor HF_HUB_CACHE: point HF_HOME at ``data_dir``/huggingface, so downloads survive a restart, and
    keep reading the image's default cache, where ``preload_from_hub`` put its checkpoints. Returns the new HF_HOME,
    or None when nothing changed. app.py calls it first thing, before huggingface_hub (which reads HF_HOME when it is
    imported) is imported."""
    if not environ.get("SPACE_ID") or environ.get("HF_HOME") or environ.get("HF_HUB_CACHE"):
        return None
    data_dir = Path(data_dir or SPACE_DATA_DIR)
    if not data_dir.is_dir() or not os.access(data_dir, os.W_OK | os.X_OK):
        return None
    home = data_dir / "huggingface"
    try:
        home.mkdir(exist_ok=True)
    except OSError:
        return None
    environ[PRELOADED_CACHE_ENV] = str(default_cache_dir(environ))
    environ["HF_HOME"] = str(home)
    return home


def cache_dirs() -> list[Path]:
    """Where cached checkpoints are looked for: the cache (downloads go there), then the preloaded one, if any."""
    folders = [cache_dir()]
    preloaded = os.environ.get(PRELOADED_CACHE_ENV)
    if preloaded and Path(preloaded).expanduser() != folders[0]:
        folders.append(Path(preloaded).expanduser())
    return folders


def repo_folder(model_id: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / ("models--" + model_id.replace("/", "--"))


def cached_snapshots(model_id: str, revision: str = "main") -> list[Path]:
    """The snapshot folders the caches hold for ``revision`` (a branch name or a commit): the cache's first, then the
    preloaded one's (``cache_dirs``). No network."""
    found = []
    for cache in cache_dirs():
        folder = repo_folder(model_id, cache)
        commit = revision
        ref = folder / "refs" / revision
        if ref.is_file():
            commit = ref.read_text(encoding="utf-8").strip()
        snapshot = folder / "snapshots" / commit
        if re.fullmatch(r"[0-9a-f]{40}", commit) and snapshot.is_dir():
            found.append(snapshot)
    return found


def cached_snapshot(model_id: str, revision: str = "main") -> Path | None:
    """The first of ``cached_snapshots``, or None."""
    return next(iter(cached_snapshots(model_id, revision)), None)


@dataclass(frozen=True)
class Deadline:
    """When all of a checkpoint's files must have arrived: DEADLINE_BASE_SECONDS plus ``nbytes`` at
    DEADLINE_BYTES_PER_SECOND, counted from ``for_bytes``."""

    at: float  # time.monotonic()
    seconds: float
    nbytes: int

    @classmethod
    def for_bytes(cls, nbytes: int) -> "Deadline":
        seconds = DEADLINE_BASE_SECONDS + nbytes / DEADLINE_BYTES_PER_SECOND
        return cls(time.monotonic() + seconds, seconds, nbytes)


@dataclass(frozen=True)
class RepoListing:
    model_id: str
    commit: str
    sizes: dict[str, int]  # every file in the repo -> its size in bytes
    sha256: dict[str, str]  # LFS files -> the sha256 the download must match


def _request(url: str, what: str, model_id: str):
    """urlopen with the deadline; every failure becomes a HubError that says what could not be done."""
    request = urllib.request.Request(url, headers={"User-Agent": "plm-explorer"})
    token = os.environ.get("HF_TOKEN")
    if token and url.startswith(endpoint()):
        request.add_unredirected_header("Authorization", f"Bearer {token}")  # not forwarded to a CDN redirect
    try:
        return urllib.request.urlopen(request, timeout=timeout())
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code in (401, 403, 404):
            raise HubError("registry.hub_not_found", model=model_id, code=exc.code, what=what) from None
        raise HubError("registry.hub_http", model=model_id, code=exc.code, what=what) from None
    except (TimeoutError, socket.timeout) as exc:
        raise HubError("registry.hub_timeout", model=model_id, seconds=timeout(), what=what) from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise HubError("registry.hub_unreachable", model=model_id, what=what) from exc


def list_repo(model_id: str, revision: str = "main") -> RepoListing:
    """One request: the commit ``revision`` points at, and every file with its size."""
    url = f"{endpoint()}/api/models/{model_id}/revision/{urllib.parse.quote(revision, safe='')}?blobs=true"
    what = i18n.text("registry.the_listing")
    with _request(url, what, model_id) as response:
        body = _read_all(response, model_id, what)
    try:
        info = json.loads(body)
        commit = str(info["sha"])
        siblings = info.get("siblings") or []
        sizes = {str(s["rfilename"]): int((s.get("lfs") or {}).get("size") or s.get("size") or 0) for s in siblings}
        sha = {str(s["rfilename"]): str(s["lfs"]["sha256"]) for s in siblings if (s.get("lfs") or {}).get("sha256")}
    except (ValueError, KeyError, TypeError) as exc:
        raise HubError("registry.listing_unreadable", model=model_id) from exc
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise HubError("registry.listing_no_commit", model=model_id)
    return RepoListing(model_id, commit, sizes, sha)


def _read_all(response, model_id: str, what: str) -> bytes:
    parts = []
    for chunk in _chunks(response, model_id, what):
        parts.append(chunk)
        if sum(map(len, parts)) > 64 << 20:
            raise HubError("registry.answer_too_large", model=model_id, what=what)
    return b"".join(parts)


def _chunks(response, model_id: str, what: str, deadline: Deadline | None = None):
    """The body in chunks; a read that times out ends it as stalled, an average under the floor over a window as
    too slow, and the ``deadline`` passing as too long."""
    window_start, window_bytes = time.monotonic(), 0
    while True:
        try:
            chunk = response.read1(CHUNK_BYTES)
        except (TimeoutError, socket.timeout, OSError) as exc:
            raise HubError("registry.stalled_silent", model=model_id, what=what, seconds=timeout()) from exc
        if not chunk:
            return
        yield chunk
        window_bytes += len(chunk)
        now = time.monotonic()
        if deadline is not None and now > deadline.at:
            raise HubError("registry.past_deadline", model=model_id, seconds=deadline.seconds,
                           mb=deadline.nbytes / 1e6, rate=DEADLINE_BYTES_PER_SECOND / 1e3)
        elapsed = now - window_start
        if elapsed >= RATE_WINDOW_SECONDS:
            if window_bytes / elapsed < RATE_FLOOR_BYTES_PER_SECOND:
                raise HubError("registry.too_slow", model=model_id, what=what, rate=window_bytes / elapsed / 1e3,
                               seconds=elapsed, floor=RATE_FLOOR_BYTES_PER_SECOND / 1e3)
            window_start, window_bytes = now, 0


def download(listing: RepoListing, filename: str, progress: Progress | None = None, done_before: int = 0,
             total: int = 0, deadline: Deadline | None = None) -> Path:
    """Fetch one file of ``listing``'s commit into the cache (skipped when already there); its snapshot path. A full
    disk raises HubError("registry.disk_full") with the partial file removed; nothing else in the cache is touched."""
    try:
        return _download(listing, filename, progress, done_before, total, deadline)
    except OSError as exc:
        if exc.errno in DISK_FULL:
            raise HubError("registry.disk_full", model=listing.model_id, what=filename,
                           mb=listing.sizes.get(filename, 0) / 1e6) from None
        raise


def _download(listing: RepoListing, filename: str, progress: Progress | None, done_before: int, total: int,
              deadline: Deadline | None) -> Path:
    model_id = listing.model_id
    folder = repo_folder(model_id)
    target = folder / "snapshots" / listing.commit / filename
    if target.is_file():
        return target
    url = f"{endpoint()}/{model_id}/resolve/{listing.commit}/{urllib.parse.quote(filename)}"
    blobs = folder / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    partial = blobs / f".{listing.commit}.{filename.replace('/', '--')}.{os.getpid()}.incomplete"
    digest, size = hashlib.sha256(), 0
    try:
        with _request(url, filename, model_id) as response, open(partial, "wb") as out:
            for chunk in _chunks(response, model_id, filename, deadline):
                out.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                if progress:
                    progress(done_before + size, total)
        expected = listing.sizes.get(filename)
        if expected and size != expected:
            raise HubError("registry.ended_early", model=model_id, what=filename, size=size, expected=expected)
        if filename in listing.sha256 and digest.hexdigest() != listing.sha256[filename]:
            raise HubError("registry.corrupt", model=model_id, what=filename)
        blob = blobs / digest.hexdigest()
        os.replace(partial, blob)
    finally:
        partial.unlink(missing_ok=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        target.symlink_to(os.path.relpath(blob, target.parent))
    except FileExistsError:
        pass  # another process fetched it meanwhile
    except OSError:  # no symlinks here (Windows without developer mode): a copy, as huggingface_hub does
        target.write_bytes(blob.read_bytes())
    return target


def check_space(model_id: str, nbytes: int) -> None:
    """Refuse a download that the disk holding the cache has no room for (ENOSPC mid-way is handled too)."""
    folder = cache_dir()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # cannot tell: the write itself will say
    if free < nbytes + SPACE_MARGIN_BYTES:
        raise HubError("registry.disk_too_small", model=model_id, mb=nbytes / 1e6, free=free / 1e6)


def set_ref(listing: RepoListing, revision: str = "main") -> None:
    """Point ``revision`` at the commit just fetched, so offline runs find it (written after the files)."""
    ref = repo_folder(listing.model_id) / "refs" / revision
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(listing.commit, encoding="utf-8")


# ------------------------------------------------------------------------------------------------------------------
# One download per model id at a time, shared by everyone who asks.


@dataclass
class _Flight:
    """One download in progress: who else listens to its progress, and how it ended."""

    done: threading.Event = field(default_factory=threading.Event)
    listeners: list = field(default_factory=list)
    error: BaseException | None = None


_inflight: dict[str, _Flight] = {}
_inflight_lock = threading.Lock()  # held only to look up or register a flight, never across I/O
_gate: Callable[[], contextlib.AbstractContextManager] | None = None  # the app's download slots (set_download_gate)
_gate_passed = contextvars.ContextVar("plm_download_gate_passed", default=False)


def set_download_gate(gate: Callable[[], contextlib.AbstractContextManager] | None) -> None:
    """What a download waits for before it starts (the app's slots, demo/server/downloads.py). Only the caller that runs a
    download enters it; whoever asks for the same key meanwhile waits for that download, not for the gate."""
    global _gate
    _gate = gate


@contextlib.contextmanager
def gate_passed():
    """Inside this block the caller already holds a download slot (the app's download step): no second one."""
    token = _gate_passed.set(True)
    try:
        yield
    finally:
        _gate_passed.reset(token)


def shared(key: str, ready: Callable[[], Path | None], work: Callable[[Progress], Path],
           progress: Progress | None = None) -> Path:
    """``ready()`` if it finds what the caller needs; else the first caller runs ``work(report)`` and whoever asks
    for ``key`` meanwhile waits for it (hearing its progress), then looks again (it may need more than that fetch
    brought). A failure reaches every waiter as the same message. Deadlines in ``work`` bound the wait."""
    while True:
        found = ready()
        if found is not None:
            return found
        with _inflight_lock:
            flight = _inflight.get(key)
            owner = flight is None
            if owner:
                flight = _inflight[key] = _Flight()
            if progress is not None:
                flight.listeners.append(progress)
        if not owner:
            flight.done.wait()
            if isinstance(flight.error, LearnerError):  # the same message, rendered in this caller's language
                raise type(flight.error)(flight.error.key, **flight.error.fields)
            if flight.error is not None:
                raise type(flight.error)(str(flight.error))
            continue

        def report(done: int, total: int) -> None:
            for listener in list(flight.listeners):
                listener(done, total)

        try:
            if _gate is None or _gate_passed.get():
                return work(report)
            with _gate():
                return work(report)
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with _inflight_lock:
                _inflight.pop(key, None)
            flight.done.set()
