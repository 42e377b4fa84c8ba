"""Tokenisers: simple word and character splitting for the n-gram and LSTM tabs, BERT's WordPiece, and GPT-2's
byte-level BPE (or a BERT vocabulary read left to right, as the Chinese GPT-2 does).

WordPiece runs on the Rust ``tokenizers`` library. It is built either from a checkpoint's ``tokenizer.json`` or, for
repos that only ship ``vocab.txt``, from the vocabulary plus ``tokenizer_config.json`` (``do_lower_case``,
``tokenize_chinese_chars``, ``strip_accents``), exactly as BertTokenizer would configure it.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tokenizers import Encoding, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece

from core.text.errors import UserInputError
from core.text.limits import MAX_MODEL_TOKENS, MAX_TEXT_CHARS

# ----------------------------------------------------------------------------------------------------------------
# Word and character tokens (n-gram, word2vec, RNN/LSTM tabs)

# A word is a run of letters/digits (with inner apostrophes, "don't"), or one punctuation mark. CJK characters
# count as word characters, so already-segmented Chinese ("词性 是 动词") splits on its spaces.
_WORD_RE = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def word_tokens(text: str, lowercase: bool = False) -> list[str]:
    """Split text into words and punctuation marks."""
    if lowercase:
        text = text.lower()
    return _WORD_RE.findall(text)


def char_tokens(text: str, keep_spaces: bool = False) -> list[str]:
    """Split text into characters (suits unsegmented Chinese); whitespace is dropped unless keep_spaces."""
    if keep_spaces:
        return [" " if ch.isspace() else ch for ch in re.sub(r"\s+", " ", text.strip())]
    return [ch for ch in text if not ch.isspace()]


# ----------------------------------------------------------------------------------------------------------------
# WordPiece (BERT-family tabs)


@dataclass
class Truncation:
    """What truncation cut, so the UI can say so."""

    max_length: int
    removed_tokens: int  # content tokens dropped, over both segments
    removed_text: str  # the text those tokens covered (of the first segment that lost tokens, then the second)


@dataclass
class WordPieceEncoding:
    """One encoded input: a single text, or a pair ``[CLS] a [SEP] b [SEP]``."""

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]  # character spans into the segment the token came from; (0, 0) for specials
    word_ids: list[int | None]  # index of the word within its segment; None for [CLS]/[SEP]
    segment_ids: list[int]  # token_type_ids: 0 for the first text (and [CLS]), 1 for the second
    sequence_ids: list[int | None]  # which text a token came from: 0, 1, or None for specials
    special_tokens_mask: list[int]
    truncation: Truncation | None = None

    def __len__(self) -> int:
        return len(self.ids)


@dataclass
class WordPieceTokenizer:
    """BERT's WordPiece tokenizer with offsets, word ids, segment ids and reported truncation."""

    backend: Tokenizer
    cls_token: str = "[CLS]"
    sep_token: str = "[SEP]"
    pad_token: str = "[PAD]"
    mask_token: str = "[MASK]"
    unk_token: str = "[UNK]"
    do_lower_case: bool = True
    model_max_length: int = MAX_MODEL_TOKENS
    _vocab: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.backend.no_truncation()
        self.backend.no_padding()
        self._vocab = self.backend.get_vocab()

    # -- construction ---------------------------------------------------------------------------------------------
    @classmethod
    def from_directory(cls, directory: str | Path) -> "WordPieceTokenizer":
        """Load from tokenizer.json if present, else build from vocab.txt + tokenizer_config.json."""
        directory = Path(directory)
        config = _read_json(directory / "tokenizer_config.json")
        special = _read_json(directory / "special_tokens_map.json")

        def token(name: str, default: str) -> str:
            value = config.get(name) or special.get(name) or default
            return value["content"] if isinstance(value, dict) else value

        names = dict(
            cls_token=token("cls_token", "[CLS]"), sep_token=token("sep_token", "[SEP]"),
            pad_token=token("pad_token", "[PAD]"), mask_token=token("mask_token", "[MASK]"),
            unk_token=token("unk_token", "[UNK]"),
        )
        do_lower_case = bool(config.get("do_lower_case", True))
        max_len = int(config.get("model_max_length", MAX_MODEL_TOKENS))
        max_len = MAX_MODEL_TOKENS if max_len > 100_000 else max_len  # HF writes 1e30 for "unset"
        if (directory / "tokenizer.json").is_file():
            backend = Tokenizer.from_file(str(directory / "tokenizer.json"))
        elif (directory / "vocab.txt").is_file():
            backend = build_wordpiece(
                directory / "vocab.txt", do_lower_case=do_lower_case,
                tokenize_chinese_chars=bool(config.get("tokenize_chinese_chars", True)),
                strip_accents=config.get("strip_accents"), **names,
            )
        else:
            raise FileNotFoundError(f"{directory} has neither tokenizer.json nor vocab.txt")
        return cls(backend=backend, do_lower_case=do_lower_case, model_max_length=max_len, **names)

    # -- vocabulary -----------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return self.backend.get_vocab_size()

    def token_to_id(self, token: str) -> int | None:
        return self._vocab.get(token)

    def id_to_token(self, index: int) -> str:
        return self.backend.id_to_token(int(index)) or self.unk_token

    @property
    def mask_token_id(self) -> int:
        return self._vocab[self.mask_token]

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return self.backend.decode(list(map(int, ids)), skip_special_tokens=skip_special_tokens)

    # -- encoding -------------------------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of a text, without special tokens ("playing" → play, ##ing)."""
        return self.backend.encode(_encodable(text), add_special_tokens=False).tokens

    def encode(self, text: str, pair: str | None = None, max_length: int | None = None) -> WordPieceEncoding:
        """Encode a text or a pair with [CLS]/[SEP]; if too long, cut it as ``truncation="longest_first"`` does
        (see ``longest_first``) and report what was cut."""
        max_length = max_length or self.model_max_length
        first = self.backend.encode(_encodable(text), add_special_tokens=False)
        second = self.backend.encode(_encodable(pair), add_special_tokens=False) if pair is not None else None
        budget = max_length - self.backend.num_special_tokens_to_add(second is not None)
        if budget < 0:
            raise UserInputError("tokenizer.no_room", limit=max_length, least=max_length - budget)
        keep_first, keep_second = longest_first(len(first), len(second) if second is not None else 0, budget)
        truncation = None
        removed = (len(first) - keep_first) + ((len(second) - keep_second) if second is not None else 0)
        if removed:
            cut = [_text_after(text, first, keep_first)]
            if second is not None:
                cut.append(_text_after(pair, second, keep_second))
            truncation = Truncation(max_length=max_length, removed_tokens=removed,
                                    removed_text=" … ".join(part for part in cut if part))
            first.truncate(keep_first)
            if second is not None:
                second.truncate(keep_second)
        merged: Encoding = self.backend.post_process(first, second, add_special_tokens=True)
        # Which text each token came from: post_process on separately encoded segments loses the first segment's
        # sequence id, and type ids cannot stand in (RoBERTa gives both texts type id 0); the first len(first)
        # non-special tokens are the first text's, the rest the second's.
        content = itertools.accumulate(not special for special in merged.special_tokens_mask)
        return WordPieceEncoding(
            ids=list(merged.ids),
            tokens=list(merged.tokens),
            offsets=[tuple(o) for o in merged.offsets],
            word_ids=list(merged.word_ids),
            segment_ids=list(merged.type_ids),
            sequence_ids=[None if special else int(count > len(first))
                          for special, count in zip(merged.special_tokens_mask, content)],
            special_tokens_mask=list(merged.special_tokens_mask),
            truncation=truncation,
        )


def longest_first(n_first: int, n_second: int, budget: int) -> tuple[int, int]:
    """How many tokens of each segment ``longest_first`` truncation keeps, as the Rust tokenizers library decides
    (tokenizers/src/utils/truncation.rs): if only the longer segment must shrink, it gives up tokens until the pair
    fits; if both must, each keeps half the budget and an odd token goes to the segment that was longer to begin
    with (to the second one when they were equally long)."""
    if n_first + n_second <= budget:
        return n_first, n_second
    if n_second == 0:
        return min(n_first, budget), 0
    shorter, longer = sorted((n_first, n_second))
    longer = shorter if shorter > budget else max(shorter, budget - shorter)
    if shorter + longer > budget:
        shorter, longer = budget // 2, budget // 2 + budget % 2
    return (longer, shorter) if n_first > n_second else (shorter, longer)


def build_wordpiece(
    vocab_path: str | Path,
    *,
    do_lower_case: bool = True,
    tokenize_chinese_chars: bool = True,
    strip_accents: bool | None = None,
    cls_token: str = "[CLS]",
    sep_token: str = "[SEP]",
    pad_token: str = "[PAD]",
    mask_token: str = "[MASK]",
    unk_token: str = "[UNK]",
) -> Tokenizer:
    """The same pipeline BertTokenizer uses: BertNormalizer → BertPreTokenizer → WordPiece → [CLS] a [SEP] b [SEP]."""
    vocab: dict[str, int] = {}
    with open(vocab_path, encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            vocab[line.rstrip("\n")] = index
    backend = Tokenizer(WordPiece(vocab, unk_token=unk_token, max_input_chars_per_word=100))
    backend.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=tokenize_chinese_chars,
        strip_accents=strip_accents, lowercase=do_lower_case,
    )
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls_id, sep_id = vocab[cls_token], vocab[sep_token]
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls_token}:0 $A:0 {sep_token}:0",
        pair=f"{cls_token}:0 $A:0 {sep_token}:0 $B:1 {sep_token}:1",
        special_tokens=[(cls_token, cls_id), (sep_token, sep_id)],
    )
    backend.decoder = decoders.WordPiece(prefix="##")
    backend.add_special_tokens([token for token in (pad_token, unk_token, cls_token, sep_token, mask_token)
                                if token in vocab])
    return backend


# ----------------------------------------------------------------------------------------------------------------
# GPT-2's tokenisers: byte-level BPE (gpt2, distilgpt2) and a BERT vocabulary read left to right (Chinese GPT-2)


@dataclass
class CausalEncoding:
    """Text as a causal LM reads it, left to right."""

    ids: list[int]
    pieces: list[str]  # what each id reads as, for the figures
    unknown: list[str]  # input characters the vocabulary lacks (read as <unk> / [UNK])


class ByteBPETokenizer:
    """GPT-2's byte-level BPE from tokenizer.json: every string encodes, so nothing is ever unknown."""

    kind = "byte-level BPE"

    def __init__(self, backend: Tokenizer):
        self.backend = backend
        self.backend.no_truncation()
        self.banned: list[int] = []

    def encode(self, text: str) -> CausalEncoding:
        ids = self.backend.encode(text, add_special_tokens=False).ids
        return CausalEncoding(ids, [self.piece(i) for i in ids], [])

    def piece(self, token_id: int) -> str:
        return self.backend.decode([token_id], skip_special_tokens=False)  # "Ġgood" reads as " good"


class WordPieceGPTTokenizer:
    """A BERT vocabulary used left to right (uer/gpt2-chinese-cluecorpussmall): [CLS] starts the text, as in its
    training data; no [SEP], since the text goes on."""

    kind = "WordPiece"

    def __init__(self, wordpiece: WordPieceTokenizer):
        self.wordpiece = wordpiece
        self.cls_id = wordpiece.token_to_id(wordpiece.cls_token)
        specials = (wordpiece.cls_token, wordpiece.sep_token, wordpiece.pad_token, wordpiece.mask_token,
                    wordpiece.unk_token)
        self.banned = [i for i in map(wordpiece.token_to_id, specials) if i is not None]

    def encode(self, text: str) -> CausalEncoding:
        encoding = self.wordpiece.encode(text, max_length=MAX_TEXT_CHARS * 4)
        ids = [self.cls_id] + encoding.ids[1:-1]  # drop the trailing [SEP]
        unk = self.wordpiece.token_to_id(self.wordpiece.unk_token)
        unknown = [text[a:b] for i, (a, b) in zip(encoding.ids[1:-1], encoding.offsets[1:-1]) if i == unk]
        return CausalEncoding(ids, [self.piece(i) for i in ids], list(dict.fromkeys(unknown)))

    def piece(self, token_id: int) -> str:
        return self.wordpiece.id_to_token(token_id)



class SentencePieceTokenizer:
    """T5's SentencePiece (Unigram) vocabulary from tokenizer.json: "▁I ▁am ▁a ▁student" then </s>, as its post-processor
    appends; a piece the vocabulary lacks reads as <unk> and is named."""

    kind = "SentencePiece"

    def __init__(self, backend: Tokenizer):
        self.backend = backend
        self.backend.no_truncation()
        self.unk_id = backend.token_to_id("<unk>")
        self.banned: list[int] = []

    def encode(self, text: str) -> CausalEncoding:
        encoding = self.backend.encode(text)  # add_special_tokens: the closing </s>
        unknown = [text[a:b] for i, (a, b) in zip(encoding.ids, encoding.offsets) if i == self.unk_id]
        return CausalEncoding(encoding.ids, [self.piece(i) for i in encoding.ids], list(dict.fromkeys(unknown)))

    def piece(self, token_id: int) -> str:
        return self.backend.id_to_token(token_id)

    def decode(self, ids: list[int]) -> str:
        return self.backend.decode(ids, skip_special_tokens=True)

_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(text: str) -> str:
    """Refuse text the Rust tokenizer cannot take (lone surrogates); callers clean text with textio.normalize_text,
    which removes them, so only raw calls reach this error. Offsets stay valid because nothing is rewritten."""
    if not isinstance(text, str):
        raise UserInputError("tokenizer.not_text", kind=type(text).__name__)
    if _SURROGATE.search(text):
        raise UserInputError("tokenizer.surrogates")
    return text


def _text_after(text: str, encoding: Encoding, keep: int) -> str:
    """The part of ``text`` covered by the tokens from index ``keep`` on."""
    if keep >= len(encoding.offsets):
        return ""
    start = encoding.offsets[keep][0]
    return text[start:]


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))
