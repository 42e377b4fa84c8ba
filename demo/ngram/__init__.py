"""The "N-gram" tab.
"""

__all__ = [
    "ngram",
]  # the public modules; the others are this package's internals
