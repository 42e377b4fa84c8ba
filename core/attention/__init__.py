"""Chapter 4, attention: scaled dot-product attention, heads and masks, step by step.
"""

__all__ = [
    "attention",
]  # the public modules; the others are this package's internals
