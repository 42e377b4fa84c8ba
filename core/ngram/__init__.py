"""Chapter 1, n-gram language models: counts, smoothing, perplexity and generation.
"""

__all__ = [
    "ngram",
]  # the public modules; the others are this package's internals
