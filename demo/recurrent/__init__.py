"""The "RNN / LSTM" tab (id ``lstm``): training, generating, and ELMo's sub-tab.
"""

__all__ = [
    "lstm",
]  # the public modules; the others are this package's internals
