"""Errors that carry a message meant for the learner.

The UI shows ``str(error)`` verbatim, so every message says what was wrong and what to do instead.
"""


class UserInputError(ValueError):
    """The learner's input cannot be used as given (empty, too long, no [MASK], ...)."""


class ModelUnavailableError(RuntimeError):
    """A checkpoint cannot be had right now (offline, not cached). The message names it and says how to get it."""
