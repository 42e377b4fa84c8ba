"""A small thread-safe LRU cache bounded by entries and, optionally, by a weight (text length, bytes): the one
bounded cache of the project (loaded models and tokenizers, preset results, session records, recent download
failures, fine-tuning runs and baselines).

functools.lru_cache bounds entries only; a few of our entries (an n-gram model of a 5 MB upload, attention maps of
512 tokens, a loaded bert-base) weigh hundreds of MB, so the caches that hold them also bound the total weight. The
newest entry is always kept, even alone over the weight limit, so the view the learner is using never recomputes on
every click. ``get_or_compute`` computes a missing entry once however many threads ask for it at the same time.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable


class BoundedCache:
    def __init__(self, max_entries: int, max_weight: float | None = None,
                 weight: Callable[[Hashable, Any], float] | None = None):
        self.max_entries, self.max_weight = max_entries, max_weight
        self.weight = weight or (lambda key, value: 1)
        self._entries: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()
        self._lock = threading.Lock()  # held for a moment only, never across a computation
        self._key_locks: dict[Hashable, threading.Lock] = {}  # get_or_compute: one per key being computed

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key not in self._entries:
                return default
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def put(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            return self._put(key, value)

    def _put(self, key: Hashable, value: Any) -> Any:  # with the lock held
        self._entries[key] = (value, float(self.weight(key, value)))
        self._entries.move_to_end(key)
        total = sum(w for _, w in self._entries.values())
        while len(self._entries) > 1 and (len(self._entries) > self.max_entries or
                                          self.max_weight is not None and total > self.max_weight):
            _, (_, dropped) = self._entries.popitem(last=False)
            total -= dropped
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value for ``key``; a missing one is computed once. Callers that ask for the same key meanwhile wait for
        that computation (a lock per key: other keys compute in parallel). An exception is not cached."""
        missing = object()
        value = self.get(key, missing)
        if value is not missing:
            return value
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        try:
            with key_lock:
                value = self.get(key, missing)
                return self.put(key, compute()) if value is missing else value
        finally:
            with self._lock:  # forget the key's lock once nobody holds it; it is made again when needed
                if self._key_locks.get(key) is key_lock and not key_lock.locked():
                    del self._key_locks[key]

    def update(self, key: Hashable, change: Callable[[Any], Any], default: Any = None) -> Any:
        """Set ``key`` to ``change(its value, or default)`` in one step: no other thread reads or writes in between.
        Returns the new value."""
        with self._lock:
            return self._put(key, change(self._entries[key][0] if key in self._entries else default))

    def pop(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entry = self._entries.pop(key, None)
        return default if entry is None else entry[0]

    def keys(self) -> list[Hashable]:
        """Least recently used first."""
        with self._lock:
            return list(self._entries)

    def values(self) -> list[Any]:
        with self._lock:
            return [value for value, _ in self._entries.values()]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


def bounded_cache(max_entries: int, max_weight: float | None = None,
                  weight: Callable[[tuple, Any], float] | None = None):
    """Decorator: memoise a function of hashable positional arguments in a BoundedCache (``fn.cache``).
    Exceptions are not cached. Two threads asking for the same new key may both compute it."""
    def decorate(fn):
        cache = BoundedCache(max_entries, max_weight, weight)
        missing = object()

        @functools.wraps(fn)
        def cached(*args):
            value = cache.get(args, missing)
            if value is missing:
                value = cache.put(args, fn(*args))
            return value

        cached.entries = cache  # (not ".cache": Gradio treats an event function with .cache as gr.cache)
        cached.cache_clear = cache.clear
        return cached

    return decorate
