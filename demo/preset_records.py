"""What the server remembers for demo/presets.py's views: per session, which views the learner asked for and which
defaults an open event already sent (the open-event race and the double open), and per process, every preset's
result (first paint). Bounded, thread-safe, and forgotten on restart: losing a record only costs a recomputation.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from demo.presets import Preset, View


class SessionViews:
    """Per session and view: how many marks, and when the last one was made. Bounded: the oldest sessions are
    forgotten first.

    Two records use it. ``ASKED``: has the learner asked this view for a result (a preset, a lesson step, a deep
    link)? A default computed on open must never overwrite such a result. Gradio snapshots each event's inputs when
    it is sent, so a ``gr.State`` cannot tell a slow open event that a preset was clicked after it: this server-side
    record can. The open event skips the default when the learner asked before it started, and drops its result when
    the learner asked while it was computing.

    ``OPENED``: did an open event of this session just claim the view's default? Opening a tab fires two open events
    for a view in its first sub-tab (the tab's select, then the sub-tab's as it mounts), and opening the page two for
    the first tab's (app_open, and the tab's select): both leave with ``done`` False, and the browser drew the same
    figures twice. A claim holds for ``claim_seconds``; after that an open event with ``done`` still False (its
    answer never reached the page) computes the default again."""

    def __init__(self, limit: int = 20_000, claim_seconds: float = 0.0):
        self._seen: OrderedDict[tuple, tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit
        self.claim_seconds = claim_seconds

    @staticmethod
    def key(view: "View", request) -> tuple:
        return getattr(request, "session_hash", None), view.tab, view.key

    def _add(self, key: tuple) -> None:  # with the lock held
        self._seen[key] = (self._seen.get(key, (0, 0.0))[0] + 1, time.monotonic())
        self._seen.move_to_end(key)
        while len(self._seen) > self._limit:
            self._seen.popitem(last=False)

    def mark(self, view: "View", request) -> None:
        with self._lock:
            self._add(self.key(view, request))

    def count(self, view: "View", request) -> int:
        with self._lock:
            return self._seen.get(self.key(view, request), (0, 0.0))[0]

    def claim(self, view: "View", request) -> bool:
        """Mark the view unless it was marked less than ``claim_seconds`` ago; True if this call marked it."""
        with self._lock:
            key = self.key(view, request)
            if key in self._seen and time.monotonic() - self._seen[key][1] < self.claim_seconds:
                return False
            self._add(key)
            return True

    def forget(self, view: "View", request) -> None:
        with self._lock:
            self._seen.pop(self.key(view, request), None)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


ASKED = SessionViews()
# Both open events of one click reach a worker well within 30 s (else the default is drawn twice, as before).
OPENED = SessionViews(claim_seconds=30.0)


class Results:
    """A preset's values and results, computed once per process for each language (issue #18: first paint ≤ 1 s).

    A preset's result does not depend on the learner, only on its fixed values, the language (figure titles, notes)
    and which checkpoints the server can use (offline views show an "hf download" note until the model is there),
    so all three are in the key. The LSTM gradients default took 4–9 s and the bank sentences 4–7 s per open under
    load; now only the first open in a process pays. One lock per key: sessions opening the same tab at once wait
    for one computation instead of each running it. Bounded (LRU); results are treated as read-only."""

    def __init__(self, limit: int = 512):
        self._done: OrderedDict[tuple, tuple] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._limit = limit

    @staticmethod
    def key(view: "View", preset: "Preset") -> tuple:
        from core import registry
        from core.i18n import current_language

        return (view.fn, view.tab, view.key, preset.slug, current_language(), registry.is_offline(),
                tuple(sorted(set(registry.loaded_models()))))

    def get(self, view: "View", preset: "Preset") -> tuple[tuple, tuple]:
        key = self.key(view, preset)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    return self._done[key]
            values = preset.resolved()
            results = view.fn(*values)  # an error propagates and nothing is stored
            with self._lock:
                self._done[key] = values, results
                while len(self._done) > self._limit:
                    old, _ = self._done.popitem(last=False)
                    self._locks.pop(old, None)
            return values, results

    def clear(self) -> None:
        with self._lock:
            self._done.clear()


RESULTS = Results()
