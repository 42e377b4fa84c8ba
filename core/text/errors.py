"""Errors that carry a message meant for the learner.

A message is a key into the translation tables (assets/i18n/*.yaml) plus its named fields:
``UserInputError("ner.too_long", chars=len(text), limit=MAX_TEXT_CHARS)``. ``str(error)`` renders it in the current
call's language (core.text.i18n), so the UI shows it verbatim in 中文 or English; each message says what was wrong and
what to do instead.
"""
from __future__ import annotations

import json
import re

from core.text import i18n
from core.text.limits import MAX_ECHO_CHARS

# Fields a message fills with text the app assembles (choices, suggestions, one line per problem, a loader's
# diagnosis of a checkpoint); every other text field may hold what the learner typed and is cut to MAX_ECHO_CHARS.
APP_MADE_FIELDS = frozenset({"choices", "close", "detail", "listed", "names", "notes", "problems", "seen"})


# Characters a message never repeats as they are: control characters (NUL, escape, …) and the bidirectional
# embeddings, overrides and isolates, which would turn the rest of the message around on screen. Each shows as "�".
_UNSHOWN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def echo(value: str, limit: int = MAX_ECHO_CHARS) -> str:
    """What a message repeats of the learner's text: at most ``limit`` characters, "…" marking a cut (a 50,000-
    character token pasted by mistake would otherwise fill the screen with the error toast), and no control or
    direction-changing character (_UNSHOWN)."""
    value = _UNSHOWN.sub("\ufffd", value)
    return value if len(value) <= limit else value[:limit - 1] + "…"


def as_sent(value: object) -> str:
    """A value an API client sent where text belongs, as a message repeats it: text as it is, anything else as JSON
    writes it (null, true, NaN, [1, "b"]), never a Python repr ("None", "['a']"); cut and cleaned as by echo."""
    if isinstance(value, str):
        return echo(value)
    try:
        return echo(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return "…"


class LearnerError(Exception):
    """Base of the errors whose message is shown to the learner as it is."""

    def __init__(self, key: str, **fields):
        super().__init__(key)
        self.key, self.fields = key, fields

    def message(self, lang: str | None = None) -> str:
        if self.key not in i18n.table(i18n.DEFAULT_LANGUAGE):
            # Not (yet) a key: an English sentence written in place. tests/test_i18n_literals.py lists such raises in core/
            # and demo/, which must all become keys.
            return self.key.format(**self.echoed_fields()) if self.fields else self.key
        return i18n.text(self.key, lang, **self.echoed_fields())

    def echoed_fields(self) -> dict:
        """The fields as the message shows them: the learner's text cut to MAX_ECHO_CHARS, in this one place, so
        no message has to remember it."""
        return {name: echo(value) if isinstance(value, str) and name not in APP_MADE_FIELDS else value
                for name, value in self.fields.items()}

    def __str__(self) -> str:
        return self.message()


class UserInputError(LearnerError, ValueError):
    """The learner's input cannot be used as given (empty, too long, no [MASK], ...)."""


class ModelUnavailableError(LearnerError, RuntimeError):
    """A checkpoint cannot be had right now (offline, not cached). The message names it and says how to get it."""
