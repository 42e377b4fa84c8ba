"""Training runs share the server fairly: each has a work budget, and each browser session runs one at a time.

Every trainer (word2vec, RNN/LSTM, and any later one) does the same three things:

    budget = TRAINING.start(owner)          # owner: the browser session; its previous run is told to stop
    try:
        for step in ...:
            ...
            if budget.stop_reason():        # the time budget is spent, or a newer run replaced this one
                break                       # keep the model trained so far and say why it stopped
    finally:
        TRAINING.finish(owner, budget)

The budget is wall-clock seconds of training (TRAIN_SECONDS), so a run at the sliders' maxima ends, with the model it
has so far, within 120 s on 2 cores, setup and evaluation included. No gradio here: demo/ turns reasons into messages.
"""
from __future__ import annotations

import threading
import time

TRAIN_SECONDS = 100.0  # of training steps; corpus preparation and evaluation fit in the remaining ~20 s
BUDGET = "budget"  # stop reasons
REPLACED = "replaced"


class Budget:
    """One run's deadline and cancel flag; cheap enough to check every step."""

    def __init__(self, seconds: float = TRAIN_SECONDS):
        self.seconds = float(seconds)
        self.started = time.monotonic()
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def stop_reason(self) -> str | None:
        """REPLACED once cancelled, BUDGET once the seconds are spent, else None."""
        if self._cancelled.is_set():
            return REPLACED
        if time.monotonic() - self.started > self.seconds:
            return BUDGET
        return None

    def __call__(self) -> bool:
        return self.stop_reason() is not None


class TrainingSlots:
    """At most one running training per owner (a browser session): starting a new run cancels the old one."""

    def __init__(self):
        self._running: dict[str, Budget] = {}
        self._lock = threading.Lock()

    def start(self, owner: str | None, seconds: float = TRAIN_SECONDS) -> Budget:
        budget = Budget(seconds)
        if owner:
            with self._lock:
                previous = self._running.get(owner)
                self._running[owner] = budget
            if previous is not None:
                previous.cancel()
        return budget

    def cancel(self, owner: str | None) -> bool:
        """Tell the owner's running training to stop (it keeps its model); True if there was one."""
        with self._lock:
            budget = self._running.get(owner) if owner else None
        if budget is not None:
            budget.cancel()
        return budget is not None

    def finish(self, owner: str | None, budget: Budget) -> None:
        if not owner:
            return
        with self._lock:
            if self._running.get(owner) is budget:
                del self._running[owner]

    def running(self) -> int:
        with self._lock:
            return len(self._running)


TRAINING = TrainingSlots()
