"""What the server remembers for demo/kit/presets.py's views, per session: which views the learner asked for and which
defaults an open event already sent (the open-event race and the double open). Bounded, thread-safe, and forgotten
on restart: losing a record only costs a recomputation. Each preset's result is kept in the app's one result cache
(demo/server/result_cache.py, ``preset_result``)."""
from __future__ import annotations

import time
from typing import Callable, Protocol

from core.loading.cache import BoundedCache


class ViewLike(Protocol):  # demo.kit.presets.View: what a record needs of a view
    tab: str
    key: str
    fn: Callable


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
        self._seen = BoundedCache(limit)  # (session, tab, view) -> (marks, when the last was made)
        self.claim_seconds = claim_seconds

    @staticmethod
    def key(view: ViewLike, request) -> tuple:
        return getattr(request, "session_hash", None), view.tab, view.key

    def mark(self, view: ViewLike, request) -> None:
        self._seen.update(self.key(view, request), lambda old: (old[0] + 1, time.monotonic()), (0, 0.0))

    def count(self, view: ViewLike, request) -> int:
        return self._seen.get(self.key(view, request), (0, 0.0))[0]

    def claim(self, view: ViewLike, request) -> bool:
        """Mark the view unless it was marked less than ``claim_seconds`` ago; True if this call marked it."""
        now, marked = time.monotonic(), []

        def claimed(old: tuple[int, float]) -> tuple[int, float]:
            if old[0] and now - old[1] < self.claim_seconds:
                return old
            marked.append(True)
            return old[0] + 1, now

        self._seen.update(self.key(view, request), claimed, (0, 0.0))
        return bool(marked)

    def forget(self, view: ViewLike, request) -> None:
        self._seen.pop(self.key(view, request))

    def clear(self) -> None:
        self._seen.clear()


ASKED = SessionViews()
# Both open events of one click reach a worker well within 30 s (else the default is drawn twice, as before).
OPENED = SessionViews(claim_seconds=30.0)
