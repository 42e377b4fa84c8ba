"""The "Embeddings" tab and its NNLM sub-tab.
"""

__all__ = [
    "embeddings",
]  # the public modules; the others are this package's internals
