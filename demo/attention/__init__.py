"""The "Attention" tab and its views.
"""

__all__ = [
    "attention",
]  # the public modules; the others are this package's internals
