"""Chapter 2, word vectors: one-hot lookups, GloVe queries, word2vec training and the fixed-window NNLM.
"""

__all__ = [
    "embeddings", "word2vec", "nnlm",
]  # the public modules; the others are this package's internals
