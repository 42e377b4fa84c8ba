"""Chapter 6, masked language models: BERT's fill-in (word pieces), the char-BERT (one [MASK] per character), its
pre-training objective, held-out scores and retraining.
"""

__all__ = [
    "mlm", "char", "char_compare", "pretraining",
]  # the public modules; the others are this package's internals
