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


class _Flight:
    """A computation in progress: set when its caller has stored the value (or failed)."""

    def __init__(self):
        self.done = threading.Event()


class BoundedCache:
    def __init__(self, max_entries: int, max_weight: float | None = None,
                 weight: Callable[[Hashable, Any], float] | None = None):
        self.max_entries, self.max_weight = max_entries, max_weight
        self.weight = weight or (lambda key, value: 1)
        self._entries: OrderedDict[Hashable, tuple[Any, float]] = OrderedDict()
        self._lock = threading.Lock()  # held for a moment only, never across a computation
        self._computing: dict[Hashable, _Flight] = {}  # keys being computed now: others wait for them

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
        that computation (other keys compute in parallel). An exception is not cached."""
        return self.get_or_compute_many([key], lambda keys: [compute()])[0]

    def get_or_compute_many(self, keys: list[Hashable], compute_many: Callable[[list], list]) -> list:
        """The values for ``keys`` (in order, repeats allowed). The missing ones that no other caller is computing
        are computed here in one ``compute_many(those keys)`` call (a batch: one forward pass for several requests);
        the ones another caller is computing are waited for (single-flight: 64 identical clicks compute once). An
        exception is not cached: it reaches this call's caller, and whoever waited for it computes the key again."""
        missing, found = object(), {}
        while True:
            mine, theirs = [], {}
            with self._lock:
                for key in dict.fromkeys(keys):
                    if key in found:
                        continue
                    if key in self._entries:
                        self._entries.move_to_end(key)
                        found[key] = self._entries[key][0]
                    elif key in self._computing:
                        theirs[key] = self._computing[key]
                    else:
                        self._computing[key] = _Flight()
                        mine.append(key)
            if mine:
                flights = [self._computing[key] for key in mine]
                try:
                    values = compute_many(mine)
                    with self._lock:
                        for key, value in zip(mine, values, strict=True):
                            found[key] = self._put(key, value)
                finally:
                    with self._lock:
                        for key, flight in zip(mine, flights):
                            del self._computing[key]
                            flight.done.set()  # waiters read the entry, or compute it again after a failure
            for flight in theirs.values():
                flight.done.wait()
            if all(found.get(key, missing) is not missing for key in keys):
                return [found[key] for key in keys]
            # a key another caller failed to compute (or one evicted at once): go round, this caller computes it

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
