"""Every cache is bounded (issue 21 §4): n-gram models, attention maps, loaded models, tokenizers, windowers."""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import pytest

import core
import demo
from core.loading import registry
from core.loading.cache import BoundedCache, bounded_cache
from core.loading import resolve


def test_bounded_cache_keeps_entry_and_weight_limits_and_the_newest_entry():
    cache = BoundedCache(max_entries=3, max_weight=10, weight=lambda key, value: value)
    for key, value in [("a", 2), ("b", 2), ("c", 2)]:
        cache.put(key, value)
    cache.get("a")  # used: "b" is now the least recently used
    cache.put("d", 2)
    assert len(cache) == 3 and "b" not in cache and "a" in cache
    cache.put("e", 7)  # 2 + 2 + 7 > 10: the oldest go until it fits
    assert sum(cache.values()) <= 10 and "e" in cache
    cache.put("huge", 50)  # alone over the limit: kept alone, the view in use does not recompute on every click
    assert cache.values() == [50]


def test_bounded_cache_decorator_memoises_and_does_not_cache_errors():
    calls = []

    @bounded_cache(max_entries=2)
    def square(x):
        calls.append(x)
        if x < 0:
            raise ValueError("negative")
        return x * x

    assert [square(2), square(2), square(3), square(4), square(2)] == [4, 4, 9, 16, 4]
    assert calls == [2, 3, 4, 2] and len(square.entries) == 2
    for _ in range(2):
        with pytest.raises(ValueError):
            square(-1)
    assert calls.count(-1) == 2


def _module_functions():
    for package in (core, demo):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if callable(value) and getattr(value, "__module__", None) == module.__name__:
                    yield f"{module.__name__}.{name}", value


def test_no_unbounded_lru_cache_in_core_or_demo():
    caches = {name: fn for name, fn in _module_functions() if hasattr(fn, "cache_info")}
    assert caches, "expected some functools caches to check"
    unbounded = [name for name, fn in caches.items() if fn.cache_info().maxsize is None]
    # bounded by construction: keyed by a language code, and an unknown code raises (exceptions are not cached)
    assert [name for name in unbounded if name != "demo.kit.i18n.table"] == []


def test_heavy_caches_are_bounded_by_weight():
    from core.attention import attention
    from demo.ngram import ngram

    assert attention._extract.entries.max_weight <= 200e6  # bytes of attention probabilities
    assert ngram._fit.entries.max_weight <= 5_000_000  # characters of corpus text


def test_attention_cache_drops_old_maps_beyond_its_weight():
    from core.attention import attention

    cache = attention._extract.entries
    saved = list(cache._entries.items())
    try:
        cache.clear()
        maps = lambda: type("Maps", (), {"probs": np.zeros((6, 12, 512, 512), np.float32)})()  # noqa: E731, 75 MB
        for i in range(4):
            cache.put((f"text {i}", None, "m"), maps())
        assert len(cache) == 2  # 3 × 75 MB would pass 160 MB
    finally:
        cache.clear()
        cache._entries.update(saved)


def test_loaded_models_are_bounded(tiny_checkpoint, monkeypatch):
    registry.clear_cache()
    monkeypatch.setattr(resolve, "settings", resolve.Settings(cache_models=2))
    folders = [str(tiny_checkpoint("BertForMaskedLM", seed=s).resolve()) for s in range(4)]
    for folder in folders:
        registry.load("mlm", folder)
    assert len(registry._models) == 2
    assert [key[1] for key in registry._models.keys()] == folders[2:]
    registry.load("mlm", folders[2])  # used again: now the most recent
    registry.load("mlm", folders[0])
    assert [key[1] for key in registry._models.keys()] == [folders[2], folders[0]]
    registry.clear_cache()
