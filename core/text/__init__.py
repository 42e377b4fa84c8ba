"""Text in and text out, shared by every chapter: reading and normalising text, its size limits, the errors a
learner reads (in English or 中文), the seed's worked examples and corpora, tokenizers and sampling.

    textio     uploads and pasted text -> normalised text
    limits     every cap on input size (characters, tokens, steps)
    errors     UserInputError and ModelUnavailableError: keys into assets/i18n/, never a traceback
    i18n       the translation tables and the request's language
    seeds      the seed's worked examples as data (torch-free: the tabs' presets read them at build)
    corpora    the shipped corpora and labelled data
    tokenizer  character, word, WordPiece and byte-level BPE tokenizers
    sampling   temperature, top-k and top-p draws, the same for every generating model
"""

__all__ = [
    "textio", "limits", "errors", "i18n", "seeds", "corpora", "tokenizer", "sampling",
]
