"""The encoder-decoder Transformer (§10-§11): translation one word at a time, trained here.
"""

__all__ = [
    "seq2seq", "compare", "train", "view",
]  # the public modules; the others are this package's internals
