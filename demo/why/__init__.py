"""The "Why this answer" views the tabs embed (``why`` for the generating models, ``encoders`` for the
BERT-likes).
"""

__all__ = [
    "why", "encoders",
]  # the public modules; the others are this package's internals
