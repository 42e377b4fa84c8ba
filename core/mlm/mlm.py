"""BERT's masked LM as a pipeline (seed §5–§6): fill in blanks, what goes into the encoder, how pre-training masks.

- ``fill_mask``: tokenise → encoder → vocabulary logits at the [MASK] positions only → softmax → top-k. The numbers
  equal transformers' fill-mask pipeline; several blanks are predicted independently from one forward pass (the
  pipeline does the same).
- ``next_sentence``: the NSP head's IsNext probability for a sentence pair (bert-base-uncased has the head).
- ``compare_contexts``: the same blank from the whole sentence and from its left context only (GPT's view, §13.1).

The offline-capable views run on the picked checkpoint or, when it cannot be had, on MiniLM-L6's encoder
(``registry.load_or_fallback``). What goes into the encoder, the masking procedure, contextual vectors and the model
card are in core/mlm/pretraining.py. Every message for the learner is a key into the ``mlm`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from core.loading import registry
from core.loading.checkpoints import MINILM_ID
from core.text.errors import UserInputError
from core.text.limits import FILL_BATCH, MAX_MASKS, MAX_MODEL_TOKENS, MAX_TEXT_CHARS
from core.text.textio import normalize_text
from core.text.tokenizer import WordPieceEncoding, WordPieceTokenizer

BLANK = re.compile(r"\[mask\]|_+", re.IGNORECASE)  # "[MASK]", "[mask]" and runs of "_" all mean one blank
MAX_TOP_K = 50

# ----------------------------------------------------------------------------------------------------------------
# Reading the learner's text


def clean_text(text: str | None, empty: str = "mlm.empty_sentence") -> str:
    """NFC text without control characters; empty or huge text is refused (``empty``: the key that asks for it)."""
    text = normalize_text(text or "").strip()
    if not text:
        raise UserInputError(empty)
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("mlm.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    return text


def with_mask_tokens(text: str, mask_token: str = "[MASK]") -> str:
    """Every blank spelled the way the tokenizer knows it: [MASK]."""
    return BLANK.sub(mask_token, text)


def encode(tokenizer: WordPieceTokenizer, text: str, pair: str | None = None,
           max_tokens: int = MAX_MODEL_TOKENS) -> WordPieceEncoding:
    """[CLS] text [SEP] (pair [SEP]); longer than the position table is refused, not silently cut."""
    encoding = tokenizer.encode(text, pair, max_length=MAX_TEXT_CHARS * 4)  # never truncates: we check below
    if len(encoding) > max_tokens:
        raise UserInputError("mlm.too_many_tokens", tokens=f"{len(encoding):,}", limit=max_tokens,
                             excess=f"{len(encoding) - max_tokens:,}")
    if len(encoding) <= 2 + (pair is not None):
        raise UserInputError("mlm.no_tokens")
    return encoding


@dataclass
class Word:
    start: int  # character span in the text
    end: int
    text: str


def words_of(tokenizer: WordPieceTokenizer, text: str) -> list[Word]:
    """The words BERT's pre-tokenizer sees (every Chinese character is one), punctuation and blanks left out."""
    text = with_mask_tokens(clean_text(text), tokenizer.mask_token)
    encoding = tokenizer.encode(text, max_length=MAX_TEXT_CHARS * 4)
    spans: dict[int, list[int]] = {}
    for word_id, (start, end), special in zip(encoding.word_ids, encoding.offsets, encoding.special_tokens_mask):
        if word_id is not None and not special:
            spans.setdefault(word_id, [start, end])[1] = end
    return [Word(start, end, text[start:end]) for start, end in spans.values()
            if text[start:end] != tokenizer.mask_token and any(ch.isalnum() for ch in text[start:end])]


def bert_word_tokenizer() -> WordPieceTokenizer:
    """Where BERT cuts words, whatever checkpoint is picked: MiniLM-L6's tokenizer (bert-base-uncased's vocabulary;
    the cuts depend only on spaces, punctuation and Chinese characters). Used with words_of and mask_word."""
    return registry.tokenizer(MINILM_ID)[0]


def mask_word(tokenizer: WordPieceTokenizer, text: str, index: int, per_character: bool = False) -> str:
    """The text (blanks written as [MASK]) with its ``index``-th word replaced by one [MASK]: BERT predicts one
    WordPiece per mask. ``per_character``: by one "_" per character instead, a blank as long as the word (one [MASK]
    for a WordPiece BERT, one per character for the char-BERT: core/mlm/char.py)."""
    words = words_of(tokenizer, text)
    if not 0 <= index < len(words):
        raise UserInputError("mlm.pick_word_in_range", count=len(words))
    text, word = with_mask_tokens(clean_text(text), tokenizer.mask_token), words[index]
    blank = "_" * len(word.text) if per_character else tokenizer.mask_token
    return text[:word.start] + blank + text[word.end:]


# ----------------------------------------------------------------------------------------------------------------
# Running the model: the encoder once, the vocabulary projection only where it is needed


@dataclass
class Candidate:
    token_id: int
    token: str  # the vocabulary entry; a continuation piece keeps its ## ("##ing")
    text: str  # as decoded (transformers' token_str)
    probability: float


@dataclass
class Blank:
    position: int  # token index in the input (0 is [CLS])
    candidates: list[Candidate]  # best first


@dataclass
class FillMaskResult:
    text: str  # the input, blanks written as [MASK]
    pair: str | None
    tokens: list[str]
    segment_ids: list[int]
    blanks: list[Blank]
    filled: str  # every blank replaced by its top prediction (each blank on its own, not jointly)
    unknown: list[str]  # pieces of the input the vocabulary lacks (read as [UNK])


@torch.inference_mode()
def fill_mask(loaded: registry.LoadedModel, text: str, top_k: int = 5, pair: str | None = None) -> FillMaskResult:
    """Top-k predictions for every [MASK] (and "_"/"[mask]") in ``text``: P(w | context) = softmax(W h_mask + b)."""
    return _fill_results(loaded, [_blanks(loaded, text, top_k, pair)])[0]


def fill_mask_batch(loaded: registry.LoadedModel, requests: list[tuple[str, int]]) -> list[FillMaskResult | Exception]:
    """fill_mask for several (text, top_k) requests in one forward pass (Gradio's dynamic batching): sentences are
    padded to the longest and the padding is masked out of attention. A request that cannot be used gets its
    UserInputError in its place; the others are unaffected."""
    out: list[FillMaskResult | Exception] = [None] * len(requests)  # type: ignore[list-item]
    ready, where = [], []
    for index, (text, top_k) in enumerate(requests):
        try:
            ready.append(_blanks(loaded, text, top_k))
        except UserInputError as exc:
            out[index] = exc
            continue
        where.append(index)
    for start in range(0, len(ready), FILL_BATCH):
        for index, result in zip(where[start:start + FILL_BATCH], _fill_results(loaded, ready[start:start + FILL_BATCH])):
            out[index] = result
    return out


def _blanks(loaded: registry.LoadedModel, text: str, top_k, pair: str | None = None):
    """(text, pair, top_k, encoding, [MASK] positions) of one request, as _fill_results takes it; or UserInputError."""
    try:
        top_k = int(top_k)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError("mlm.top_k_range", limit=MAX_TOP_K) from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise UserInputError("mlm.top_k_range", limit=MAX_TOP_K)
    if loaded.task != "mlm":  # MiniLM-L6's encoder standing in offline (registry.load_or_fallback) has no MLM head
        raise UserInputError("mlm.no_mlm_head")
    tokenizer = loaded.tokenizer
    text = with_mask_tokens(clean_text(text), tokenizer.mask_token)
    pair = with_mask_tokens(clean_text(pair, "mlm.empty_second"), tokenizer.mask_token) if pair else None
    encoding = encode(tokenizer, text, pair, min(MAX_MODEL_TOKENS, loaded.config.max_tokens))
    positions = [i for i, token_id in enumerate(encoding.ids) if token_id == tokenizer.mask_token_id]
    if not positions:
        raise UserInputError("mlm.no_blank")
    if len(positions) > MAX_MASKS:
        raise UserInputError("mlm.too_many_blanks", count=len(positions), limit=MAX_MASKS)
    return text, pair, int(top_k), encoding, positions


@torch.inference_mode()
def _fill_results(loaded: registry.LoadedModel, items: list) -> list[FillMaskResult]:
    """One forward pass over (text, pair, top_k, encoding, positions) items, padded to the longest."""
    tokenizer, model = loaded.tokenizer, loaded.model
    longest = max(len(encoding.ids) for *_, encoding, _ in items)
    pad_id = tokenizer.token_to_id(tokenizer.pad_token) or 0
    ids = torch.tensor([e.ids + [pad_id] * (longest - len(e.ids)) for *_, e, _ in items],
                       device=loaded.device)  # (B, T)
    segments = torch.tensor([e.segment_ids + [0] * (longest - len(e.ids)) for *_, e, _ in items],
                            device=loaded.device)  # (B, T)
    mask = None  # no padding (one request, or equal lengths): no mask, the fused attention kernel's fast path
    if any(len(e.ids) < longest for *_, e, _ in items):
        mask = torch.tensor([[1] * len(e.ids) + [0] * (longest - len(e.ids)) for *_, e, _ in items],
                            device=loaded.device)  # (B, T): 0 = padding, never attended to
    hidden = model.base(ids, mask, segments, output_attentions=False).last_hidden_state  # (B, T, H)
    rows = torch.cat([hidden[b, positions] for b, (*_, positions) in enumerate(items)])  # (ΣM, H): only blanks
    # The MLM head on the blanks only: skipping the other positions saves T−M rows of the H×V product, which for a
    # short sentence is a large part of the work.
    probs = model.mlm_logits(rows).float().softmax(dim=-1)  # (ΣM, V)
    results, row = [], 0
    for text, pair, top_k, encoding, positions in items:
        values, indices = probs[row:row + len(positions)].topk(top_k, dim=-1)  # (M, k)
        row += len(positions)
        blanks = [Blank(position, [Candidate(i, tokenizer.id_to_token(i), tokenizer.decode([i]), p)
                                   for p, i in zip(row_p, row_i)])
                  for position, row_p, row_i in zip(positions, values.tolist(), indices.tolist())]
        filled_ids = list(encoding.ids)
        for blank in blanks:
            filled_ids[blank.position] = blank.candidates[0].token_id
        results.append(FillMaskResult(text, pair, encoding.tokens, encoding.segment_ids, blanks,
                                      tokenizer.decode(filled_ids), unknown_pieces(tokenizer, encoding, text, pair)))
    return results


def unknown_pieces(tokenizer: WordPieceTokenizer, encoding: WordPieceEncoding, text: str,
                   pair: str | None = None) -> list[str]:
    """The spans of the input that became [UNK] (emoji, rare scripts), named so the learner knows."""
    unk = tokenizer.token_to_id(tokenizer.unk_token)
    return [(text if sequence == 0 else pair)[start:end]
            for token_id, sequence, (start, end) in zip(encoding.ids, encoding.sequence_ids, encoding.offsets)
            if token_id == unk]


@torch.inference_mode()
def next_sentence(loaded: registry.LoadedModel, first: str, second: str) -> float:
    """P(IsNext) for the pair "[CLS] first [SEP] second [SEP]" from the NSP head: softmax(W_nsp · pooler)[0]."""
    model = loaded.model
    if not model.has_next_sentence_head:
        raise UserInputError("mlm.no_nsp_head", model=loaded.files.name)
    tokenizer = loaded.tokenizer
    first = with_mask_tokens(clean_text(first, "mlm.empty_first"), tokenizer.mask_token)
    second = with_mask_tokens(clean_text(second, "mlm.empty_second"), tokenizer.mask_token)
    encoding = encode(tokenizer, first, second, min(MAX_MODEL_TOKENS, loaded.config.max_tokens))
    ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([encoding.segment_ids], device=loaded.device)  # (1, T)
    encoded = model.base(ids, None, segments, output_attentions=False)
    return float(model.next_sentence_logits(encoded).float().softmax(-1)[0, 0])  # index 0 = IsNext, 1 = NotNext


@dataclass
class ContextComparison:
    full_text: str
    left_text: str  # everything up to and including the blank; what a left-to-right model sees
    full: Blank
    left: Blank


def left_context(text: str, blank_number: int = 1) -> str:
    """The text cut right after its ``blank_number``-th blank (1-based)."""
    blanks = list(BLANK.finditer(text))
    if not blanks:
        raise UserInputError("mlm.no_blank_to_compare")
    if not 1 <= blank_number <= len(blanks):
        raise UserInputError("mlm.blank_number", count=len(blanks))
    return text[:blanks[blank_number - 1].end()]


def compare_contexts(loaded: registry.LoadedModel, text: str, top_k: int = 5,
                     blank_number: int = 1) -> ContextComparison:
    """Predict one blank from both sides (BERT) and from the left side only (what GPT conditions on)."""
    text = clean_text(text)
    left = left_context(text, blank_number)
    full = fill_mask(loaded, text, top_k)
    cut = fill_mask(loaded, left, top_k)
    return ContextComparison(full.text, cut.text, full.blanks[blank_number - 1], cut.blanks[-1])
