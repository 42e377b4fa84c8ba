"""Chapter 7, downstream tasks on BERT-like encoders: named entities (NER), extractive QA, sentence
classification, and fine-tuning a classifier.
"""

__all__ = [
    "ner", "qa", "classify", "finetune", "finetune_train",
]  # the public modules; the others are this package's internals
