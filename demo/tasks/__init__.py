"""The NER, QA and classification tabs (ids ``ner``, ``qa``, ``classify``) and fine-tuning.
"""

__all__ = [
    "ner", "qa", "classify",
]  # the public modules; the others are this package's internals
