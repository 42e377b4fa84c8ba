"""Chapter 3, recurrent language models: the character RNN/LSTM (train, generate, read) and ELMo's
contextual vectors.
"""

__all__ = [
    "lstm", "elmo",
]  # the public modules; the others are this package's internals
