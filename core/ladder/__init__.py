"""The ladder (the Overview tab): one text through every character-level model, scored in bits per character.
It may use other chapters' public modules.
"""

__all__ = [
    "ladder", "heldout",
]  # the public modules; the others are this package's internals
