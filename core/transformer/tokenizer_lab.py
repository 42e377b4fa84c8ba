"""Transformer & GPT tab, tokenizer lab (issue #36): one text cut into the units models read.

    characters       Unicode code points (the char-GPT, the RNN and LSTM, BERT's Chinese); 1 per character
    UTF-8 bytes      1 to 4 per character: 1 for ASCII, 3 for a Chinese character
    WordPiece        BERT's subwords, greedily longest-first from the word's start ("strawberries" → straw ##berries);
                     MiniLM-L6's English vocabulary offline, bert-base-chinese's when it is on this machine
    byte-level BPE   GPT-2's merges over bytes, when its tokenizer is on this machine (hf download gpt2)
    BPE trained here the same kind of tokenizer, learned from a corpus in the tab (core/transformer/bpe.py, or ``tokenizers``
                     when the corpus is too large for the teaching trainer to finish in 2 s)

For each: tokens per character = tokens / characters, and characters per token, its inverse: what a model's
context of n tokens holds. A byte-level token need not end on a character boundary: one that holds part of a
character's UTF-8 bytes is a fragment, and printed alone it is "�" (U+FFFD); GPT-2 cuts most Chinese characters so.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

from core.transformer import bpe
from core.text import i18n
from core.loading import resolve
from core.loading.cache import BoundedCache
from core.loading.checkpoints import MINILM_ID
from core.text.corpora import load_corpus
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_SHORT_TEXT_CHARS
from core.text.textio import normalize_text, read_text_upload

registry = lazy_import("core.loading.registry")  # torch-backed: loaded when a WordPiece vocabulary is first asked for

CORPORA = ("moby_dick", "tang_poems", "toy_zh")  # the bundled corpora the live BPE can learn from
MIN_VOCAB, MAX_VOCAB = 260, 5000  # the 256 byte symbols, then merges
STEPS_SHOWN = 40  # merges the step-by-step view replays, each with the pair counts that chose it
# Above this many bytes of corpus, core/transformer/bpe.py takes more than 2 s to train at MAX_VOCAB: benchmarks/
# bench_tokenizer_lab.py measured 3.03 MB (CPU time of its one thread, 1-4 copies of Moby-Dick, 2026-11-26; counting
# words is ~0.5 s per MB, the merges ~1 s). Above it the tab trains with ``tokenizers`` (equal merges,
# tests/transformer/test_tokenizer_lab.py) and replays only the first steps here.
OURS_MAX_BYTES = 3_000_000
WORDPIECE_ZH = "bert-base-chinese"
GPT2 = "gpt2"


@lru_cache(maxsize=1)
def byte_symbols() -> tuple[dict[int, str], dict[str, int]]:
    """GPT-2's byte ↔ printable character map (its bytes_to_unicode): printable bytes stand for themselves, the
    other 68 (controls, space, …) are moved to U+0100 on, so " " is "Ġ" and "\\n" is "Ċ"."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {b: chr(b) for b in kept}, 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars, {c: b for b, c in chars.items()}


@dataclass
class Piece:
    shown: str  # what the token reads as: its characters, or "�" and the hex of a fragment's bytes
    start: int  # UTF-8 byte span in the text
    end: int
    fragment: bool = False  # bytes that are not whole characters: alone, they print as "�"
    unknown: bool = False  # WordPiece's [UNK]
    token: str = ""  # the tokenizer's own spelling ("##berries", "Ġthe")


@dataclass
class Segmentation:
    key: str  # characters, bytes, wordpiece, wordpiece_zh, gpt2, bpe
    model: str  # the vocabulary's source (a model id, "UTF-8", …)
    pieces: list[Piece] | None  # None: the tokenizer is not on this machine (``missing`` says why)
    vocab_size: int | None = None
    missing: ModelUnavailableError | None = None

    def per_char(self, chars: int) -> float:
        return len(self.pieces) / chars

    def chars_per_token(self, chars: int) -> float:
        return chars / len(self.pieces)

    @property
    def fragments(self) -> int:
        return sum(piece.fragment for piece in self.pieces)


def byte_offsets(text: str) -> list[int]:
    """UTF-8 byte offset of every character, and of the end.  # (len(text) + 1,)"""
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode("utf-8")))
    return offsets


def shown_bytes(data: bytes) -> tuple[str, bool]:
    """(how the bytes read, whether they are a fragment): whole characters as text (a space as ␣, a newline as ↵),
    else "�" followed by their hex."""
    try:
        return data.decode("utf-8").replace(" ", "␣").replace("\n", "↵"), False
    except UnicodeDecodeError:
        return "�" + data.hex(" ").upper(), True


def characters(text: str) -> Segmentation:
    at = byte_offsets(text)
    return Segmentation("characters", "Unicode", [Piece(shown_bytes(ch.encode())[0], at[i], at[i + 1], token=ch)
                                                  for i, ch in enumerate(text)], vocab_size=None)


def utf8_bytes(text: str) -> Segmentation:
    pieces = []
    for i, byte in enumerate(text.encode("utf-8")):
        shown, fragment = shown_bytes(bytes([byte]))
        pieces.append(Piece(shown, i, i + 1, fragment, token=f"{byte:02X}"))
    return Segmentation("bytes", "UTF-8", pieces, vocab_size=256)


def from_byte_level(text: str, tokens: list[str]) -> list[Piece]:
    """Pieces of byte-level tokens ("Ġthe", "æĪ"), which together spell the text's bytes in order."""
    to_byte = byte_symbols()[1]
    pieces, at = [], 0
    for token in tokens:
        data = bytes(to_byte[c] for c in token)
        shown, fragment = shown_bytes(data)
        pieces.append(Piece(shown, at, at + len(data), fragment, token=token))
        at += len(data)
    if at != len(text.encode("utf-8")):  # a special token or a normalizer would break the byte spans
        raise ValueError("byte-level tokens do not spell the text")
    return pieces


def wordpiece(text: str, model_id: str) -> Segmentation:
    key = "wordpiece_zh" if model_id == WORDPIECE_ZH else "wordpiece"
    try:
        with resolve.downloads_elsewhere():  # only a vocabulary already here: the lab never downloads
            tokenizer, _ = registry.tokenizer(model_id)
    except ModelUnavailableError as exc:
        return Segmentation(key, model_id, None, missing=exc)
    encoding = tokenizer.backend.encode(text, add_special_tokens=False)
    at = byte_offsets(text)
    pieces = [Piece(token, at[a], at[b], unknown=token == tokenizer.unk_token, token=token)
              for token, (a, b) in zip(encoding.tokens, encoding.offsets)]
    return Segmentation(key, model_id, pieces, tokenizer.vocab_size)


def gpt2_bpe(text: str, model_id: str = GPT2) -> Segmentation:
    try:
        with resolve.downloads_elsewhere():
            tokenizer, _ = registry.tokenizer(model_id)
    except ModelUnavailableError as exc:
        return Segmentation("gpt2", model_id, None, missing=exc)
    tokens = tokenizer.backend.encode(text, add_special_tokens=False).tokens
    return Segmentation("gpt2", model_id, from_byte_level(text, tokens), tokenizer.backend.get_vocab_size())


# ----------------------------------------------------------------------------------------------------------------
# The BPE learned in the tab


@dataclass
class Trained:
    corpus: str  # a bundled corpus's key, or "upload"
    corpus_bytes: int
    vocab_size: int  # what the vocabulary reached (the slider's value, unless the corpus ran out of pairs)
    asked: int  # the slider's value
    merges: list[tuple[str, str]]  # every merge, in order
    steps: list[bpe.Merge]  # the first STEPS_SHOWN merges, with their counts and rivals (core/transformer/bpe.py)
    words: int  # distinct words counted
    trainer: str  # "core/transformer/bpe.py" or "tokenizers"
    seconds: float  # training time, counting words included
    ranks: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.ranks = {pair: i for i, pair in enumerate(self.merges)}

    def encode(self, text: str, merges: int | None = None) -> list[str]:
        """Byte-level tokens of the text after the first ``merges`` merges (all of them by default)."""
        ranks = self.ranks if merges is None else {pair: i for i, pair in enumerate(self.merges[:merges])}
        return [token for word in bpe.pre_tokenize(text) for token in bpe.encode_word(word, ranks)]


TRAINED = BoundedCache(max_entries=8)  # (corpus key, its hash, vocabulary size) → Trained


def corpus_text(corpus: str, upload: str | None) -> tuple[str, str]:
    """(key, text) of the corpus to learn from: a bundled one, or the learner's upload (≤ 5 MB, UTF-8, cleaned)."""
    if upload:
        text = read_text_upload(upload)
        if not text.strip():
            raise UserInputError("tokenizer_lab.err_corpus_empty")
        return "upload", text
    if corpus not in CORPORA:
        raise UserInputError("tokenizer_lab.err_corpus", choices=", ".join(CORPORA))
    return corpus, load_corpus(corpus)


def train_bpe(corpus: str, text: str, vocab_size: int, progress: Callable[[float, str], None] | None = None,
              ours_max_bytes: int = OURS_MAX_BYTES) -> Trained:
    """The lab's BPE on a corpus: core/transformer/bpe.py when it finishes within 2 s, else ``tokenizers`` for the vocabulary
    (the same merges) and core/transformer/bpe.py for the first STEPS_SHOWN steps only. Cached per corpus and size."""
    if not MIN_VOCAB <= vocab_size <= MAX_VOCAB:
        raise UserInputError("tokenizer_lab.err_vocab", low=MIN_VOCAB, high=MAX_VOCAB)
    size = len(text.encode("utf-8"))
    key = (corpus, hashlib.sha1(text.encode("utf-8")).hexdigest(), vocab_size, size <= ours_max_bytes)
    found = TRAINED.get(key)
    if found is not None:
        return found
    report = progress or (lambda fraction, message: None)
    lines = text.splitlines()
    began = time.perf_counter()
    report(0.05, i18n.text("tokenizer_lab.progress_counting"))
    counts = bpe.count_words(lines)
    if size <= ours_max_bytes:
        report(0.6, i18n.text("tokenizer_lab.progress_merging"))
        learned = bpe.train(counts, vocab_size, watch=STEPS_SHOWN)
        merges, trainer = [(m.left, m.right) for m in learned.merges], "core/transformer/bpe.py"
    else:
        report(0.5, i18n.text("tokenizer_lab.progress_library"))
        merges, trainer = library_merges(lines, vocab_size), "tokenizers"
        learned = bpe.train(counts, len(bpe.BYTE_ALPHABET) + STEPS_SHOWN, watch=STEPS_SHOWN)
    report(1.0, i18n.text("tokenizer_lab.progress_done"))
    trained = Trained(corpus, size, len(bpe.BYTE_ALPHABET) + len(set(a + b for a, b in merges)), vocab_size, merges,
                      learned.merges[:STEPS_SHOWN], learned.words, trainer, time.perf_counter() - began)
    return TRAINED.put(key, trained)


def library_merges(lines: list[str], vocab_size: int) -> list[tuple[str, str]]:
    """The merges ``tokenizers``' BpeTrainer learns from the lines, with core/transformer/bpe.py's settings."""
    import json

    from tokenizers import Tokenizer, models, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = bpe.BYTE_LEVEL
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False,
                                                             initial_alphabet=bpe.BYTE_ALPHABET))
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
            for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def trained_bpe(text: str, trained: Trained) -> Segmentation:
    return Segmentation("bpe", trained.corpus, from_byte_level(text, trained.encode(text)), trained.vocab_size)


# ----------------------------------------------------------------------------------------------------------------
# The whole lab


@dataclass
class Lab:
    text: str  # as cut (NFC, control characters removed)
    chars: int
    bytes: int
    segmentations: list[Segmentation]
    trained: Trained


def prepare(text: str) -> str:
    text = normalize_text(text or "")
    if not text.strip():
        raise UserInputError("tokenizer_lab.err_empty")
    if len(text) > MAX_SHORT_TEXT_CHARS:
        raise UserInputError("tokenizer_lab.err_long", chars=f"{len(text):,}", limit=f"{MAX_SHORT_TEXT_CHARS:,}")
    return text


def cut(text: str, corpus: str = "moby_dick", vocab_size: int = 1000, upload: str | None = None,
        progress: Callable[[float, str], None] | None = None) -> Lab:
    """The text cut by every tokenizer of the lab, and the BPE learned from the corpus."""
    text = prepare(text)
    key, corpus_string = corpus_text(corpus, upload)
    trained = train_bpe(key, corpus_string, int(vocab_size), progress)
    cuts = [characters(text), utf8_bytes(text), wordpiece(text, MINILM_ID), wordpiece(text, WORDPIECE_ZH),
            gpt2_bpe(text), trained_bpe(text, trained)]
    return Lab(text, len(text), len(text.encode("utf-8")), cuts, trained)
