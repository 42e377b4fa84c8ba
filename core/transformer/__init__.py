"""Chapter 5, the Transformer and GPT: a block's shapes and parameter counts, the char-GPT and GPT-2 generating,
and the tokenizer lab (BPE learned from a corpus).
"""

__all__ = [
    "transformer", "gpt", "param_count", "tokenizer_lab",
]  # the public modules; the others are this package's internals
