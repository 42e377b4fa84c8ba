"""The "BERT masked LM" tab (id ``mlm``): fill-in, the char-BERT's views and retraining.
"""

__all__ = [
    "mlm",
]  # the public modules; the others are this package's internals
