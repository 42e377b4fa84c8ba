"""Codes, secrets, rate limits and input caps for classes (issue #55).

A class code is what students type or follow (``?class=CODE``); it grants a student's rights only. The teacher's
secret is 256 random bits, kept in the teacher link's fragment (never sent in a URL) and posted in request bodies; the
store keeps only its SHA-256. Both come from ``secrets``.

Guessing: a stranger who tries random codes to join someone's class makes failed joins. Failed joins are limited per
address AND for the whole process (:data:`FAILED_JOINS_PER_MINUTE`); once either is used up, every join (even with a
right code) is refused until the window passes, so a refused try tells nothing. Whatever the number of addresses, in
``minutes`` minutes a guesser gets at most ``FAILED_JOINS_PER_MINUTE * minutes`` tries, each finding one of ``live``
classes among ``CODE_SPACE`` codes with probability ``live / CODE_SPACE``: :func:`guess_probability`.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import deque

# Codes: no 0/O, 1/I/L, so a code read off a projector is typed right.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"
CODE_LENGTH = 6
CODE_SPACE = len(CODE_ALPHABET) ** CODE_LENGTH
CODE = re.compile(f"[{CODE_ALPHABET}]{{{CODE_LENGTH}}}")
SECRET_BYTES = 32                    # the teacher's secret: 256 bits
TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")  # a secret, a student token or a page's session id

# Rate limits: (events, window in seconds)
JOINS_PER_SESSION = (10, 60)         # one page joining again and again
JOINS_PER_ADDRESS = (600, 60)        # 200 students behind one NAT address, each joining three times a minute
FAILED_JOINS_PER_ADDRESS = (30, 60)  # wrong codes from one address
FAILED_JOINS_PER_MINUTE = 300        # wrong codes from everyone together (the guessing bound)
ANSWERS_PER_STUDENT = (30, 60)       # one student changing their mind
ANSWERS_PER_ADDRESS = (3000, 60)     # 200 students behind one address, 15 answers a minute each
STARTS_PER_ADDRESS = (20, 600)       # classes one address may start in 10 minutes
TEACHER_CALLS_PER_ADDRESS = (600, 60)  # the teacher view polls every 1.5 s; wrong secrets count here too
MAX_LIVE_CLASSES = 1000              # the store refuses a new class beyond this

# Caps on input
MAX_BODY_BYTES = 16_384              # a request body; a 10 MB nickname is refused before it is read
MAX_NICKNAME_CHARS = 40


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def new_token() -> str:
    """A student's token: who may change this prediction (not a teacher's right)."""
    return secrets.token_urlsafe(18)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def same_secret(secret: str, stored_digest: str) -> bool:
    return hmac.compare_digest(digest(secret), stored_digest)


def guess_probability(live: int = 100, minutes: float = 10) -> float:
    """The chance that a guesser at the global failed-join limit finds at least one of ``live`` classes' codes in
    ``minutes`` (tries drawn without any knowledge of the codes)."""
    tries = FAILED_JOINS_PER_MINUTE * minutes
    return 1 - (1 - live / CODE_SPACE) ** tries


class Limiter:
    """At most ``limit`` events per ``window`` seconds for each key (a sliding window, in this process's memory).
    Keys idle for a window are forgotten, so memory stays bounded by the keys active in the last window."""

    def __init__(self, limit: int, window: float, clock=time.monotonic):
        self.limit, self.window, self.clock = limit, window, clock
        self._events: dict[str, deque] = {}
        self._lock = threading.Lock()
        self._swept = clock()

    def full(self, key: str) -> bool:
        """Whether ``key`` has used its events in the window (nothing counted)."""
        now = self.clock()
        with self._lock:
            events = self._events.get(key, ())
            return sum(now - at < self.window for at in events) >= self.limit

    def allow(self, key: str) -> bool:
        now = self.clock()
        with self._lock:
            if now - self._swept > self.window:
                self._events = {k: q for k, q in self._events.items() if q and now - q[-1] < self.window}
                self._swept = now
            events = self._events.setdefault(key, deque())
            while events and now - events[0] >= self.window:
                events.popleft()
            if len(events) >= self.limit:
                return False
            events.append(now)
            return True


def limiter(pair: tuple[int, float], clock=time.monotonic) -> Limiter:
    return Limiter(pair[0], pair[1], clock)
