"""The "Transformer & GPT" tab (id ``transformer``): the block, GPT's sub-tabs and the tokenizer lab.
"""

__all__ = [
    "transformer",
]  # the public modules; the others are this package's internals
