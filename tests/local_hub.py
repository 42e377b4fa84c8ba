"""What the loading tests share (tests/loading/test_resolve.py, tests/loading/test_registry.py), besides conftest.py's ``server`` (a
fresh local Hub) and ``mlm_folder``: going offline as a restart would, comparing what two loads predict, and running
a load in a thread."""
from __future__ import annotations

import threading

import pytest

from core.mlm import mlm
from core.loading import registry, resolve

TEXT = "the man went to the [MASK] to buy milk ."
REPO = "tiny-org/tiny-bert-mlm"


def go_offline(monkeypatch):
    """What a restart with --offline does: nothing in memory, no network."""
    registry.clear_cache()
    monkeypatch.setattr(resolve, "_offline_flag", True)


def probabilities(loaded) -> list[tuple[str, float]]:
    return [(c.token, c.probability) for c in mlm.fill_mask(loaded, TEXT, top_k=5).blanks[0].candidates]


def same(got, expected) -> bool:
    """Same tokens in the same order, probabilities equal to float32 rounding (storage layout may differ)."""
    return ([t for t, _ in got] == [t for t, _ in expected]
            and [p for _, p in got] == pytest.approx([p for _, p in expected], rel=1e-5))


def in_thread(fn, *args):
    """Run fn in a thread; returns (thread, box) where box gets 'value' or 'error'."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except Exception as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box
