"""Named-entity recognition with BERT token classification (seed §14): tokenise → model → softmax → tags.

A linear classifier reads every token's final vector h_t and gives p(y_t | x) = softmax(W h_t + b) over the labels in
config.json's id2label (CoNLL-03 in BIO: O, B-/I- PER, ORG, LOC, MISC; or a model that tags in IOBES itself, such as
ckiplab/bert-base-chinese-ner: O, B-/I-/E-/S- over OntoNotes' 18 types). From those per-token distributions come

* the per-token table (one row per WordPiece token, one column per label) and its argmax BIO tags;
* the same tags in the IOBES scheme (B = begin, I = inside, E = end, S = single, O = other);
* grouped entities, with the subword aggregation strategies of transformers' TokenClassificationPipeline
  ("simple", "first", "average", "max"), reproduced step by step so the results are equal. For IOBES labels the
  grouping also ends a chunk at E- and S- (the pipeline would read "E-PER" as a type of its own).

Text longer than the model's 512 positions is cut into overlapping windows, exactly like that pipeline's
``stride`` mode: each window holds ``max_length - 2`` tokens plus [CLS]/[SEP] and starts ``stride`` tokens before the
previous one ended. Offsets always point into the full text. Entities are found per window and overlaps resolved as
the pipeline does (the longer entity wins, then the higher score); the per-token table keeps each token once, from
the window where it has the most context on both sides.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from core.text import i18n
from core.loading import registry
from core.text.errors import UserInputError
from core.text.limits import MAX_MODEL_TOKENS, MAX_TEXT_CHARS, NER_STRATEGIES
from core.text.textio import CleanText, clean_text
from core.text.tokenizer import WordPieceTokenizer

DEFAULT_STRIDE = 128  # tokens shared by neighbouring windows, so no word loses all its context at a cut
OUTSIDE = "O"
# Tokens per forward pass (two full 512-token windows, or many short texts batched). Bigger passes were slower on
# CPU: 8 × 512 tokens make 50 MB activations (B·T·4H floats), which glibc maps fresh from the OS on every
# layer (455,000 minor page faults, 0.8 s of system time per 20,000-character text; 4 × 512: 6,000; 2 × 512: 0).
WINDOW_TOKENS = 1024


# ------------------------------------------------------------------------------------------------------------------
# Tokens and windows


@dataclass
class Token:
    """One WordPiece token of the text ([CLS]/[SEP] excluded)."""

    id: int
    piece: str  # the vocabulary entry: "Wolf", "##gang", "[UNK]"
    word: str  # what the pipeline reports: the piece, or for [UNK] the characters it stands for
    start: int  # character span in the text
    end: int
    word_id: int | None
    is_subword: bool  # continues the previous token's word (decides which tokens a word aggregates)


@dataclass
class Encoded:
    """The whole text as tokens, and the windows (token ranges [a, b)) the model reads."""

    text: str  # as the learner typed it; token offsets point into it
    tokens: list[Token]
    windows: list[tuple[int, int]]
    max_length: int
    stride: int


def check_text(text: str | None) -> str:
    """The text as the model will see it (NFC, no control characters), or a UserInputError saying what is wrong."""
    return _checked(text).text


def _checked(text: str | None) -> CleanText:
    clean = clean_text(text or "")
    text = clean.text
    if not text.strip():
        raise UserInputError("ner.empty")
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("ner.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    return clean


def window_ranges(num_tokens: int, max_length: int, stride: int) -> list[tuple[int, int]]:
    """Token ranges of the windows: the same split as a fast tokenizer's overflow with ``stride``."""
    budget = max_length - 2  # room left by [CLS] and [SEP]
    if not 0 <= stride < budget:
        raise UserInputError("ner.stride", most=budget - 1, length=max_length)
    ranges, start = [], 0
    while True:
        stop = min(start + budget, num_tokens)
        ranges.append((start, stop))
        if stop == num_tokens:
            return ranges
        start += budget - stride  # the next window repeats the last `stride` tokens


def encode(tokenizer: WordPieceTokenizer, text: str, max_length: int | None = None,
           stride: int = DEFAULT_STRIDE) -> Encoded:
    """Tokenise the text once, with offsets and word ids, and plan its windows. The model reads the normalised
    text; token offsets (and so entity offsets) point into the text as the learner typed it."""
    clean = _checked(text)
    text = clean.text
    max_length = min(max_length or tokenizer.model_max_length, MAX_MODEL_TOKENS)
    encoding = tokenizer.backend.encode(text, add_special_tokens=False)
    if not encoding.ids:
        raise UserInputError("ner.no_tokens")
    unk_id = tokenizer.token_to_id(tokenizer.unk_token)
    tokens = []
    for token_id, piece, (start, end), word_id in zip(encoding.ids, encoding.tokens, encoding.offsets,
                                                      encoding.word_ids):
        surface = text[start:end]
        start, end = clean.span(start, end)  # into the typed text
        if token_id == unk_id:
            word, is_subword = clean.original[start:end], False
        else:  # the pipeline's rule for WordPiece: a "##" piece is longer than the characters it covers
            word, is_subword = piece, len(piece) != len(surface)
        tokens.append(Token(token_id, piece, word, start, end, word_id, is_subword))
    return Encoded(clean.original, tokens, window_ranges(len(tokens), max_length, stride), max_length, stride)


# ------------------------------------------------------------------------------------------------------------------
# Model


@dataclass
class TaggedText:
    """Everything the model said about a text; aggregation and tagging schemes are computed from it on demand."""

    encoded: Encoded
    labels: list[str]  # id2label, in column order
    window_probs: list[np.ndarray]  # per window: (b - a, C) softmax probabilities
    probs: np.ndarray  # (N, C): each token once, from the window where it sits most centrally
    decode: Callable[[list[str]], str]  # tokens → text, as the tokenizer's decoder joins "##" pieces
    badge: str

    @property
    def text(self) -> str:
        return self.encoded.text

    @property
    def tokens(self) -> list[Token]:
        return self.encoded.tokens

    def argmax_labels(self) -> list[str]:
        return [self.labels[i] for i in self.probs.argmax(-1)]


def _decoder(tokenizer: WordPieceTokenizer) -> Callable[[list[str]], str]:
    decoder = tokenizer.backend.decoder
    return decoder.decode if decoder is not None else " ".join


def tag(text: str, model_id: str | None = None, stride: int = DEFAULT_STRIDE, max_length: int | None = None,
        progress: Callable[[float, str], None] | None = None) -> TaggedText:
    """Run the token classifier over the text, windows batched. Raises ModelUnavailableError / UserInputError."""
    result = tag_many([text], model_id, stride, max_length, progress)[0]
    if isinstance(result, UserInputError):
        raise result
    return result


def tag_many(texts: list[str], model_id: str | None = None, stride: int = DEFAULT_STRIDE,
             max_length: int | None = None, progress: Callable[[float, str], None] | None = None
             ) -> list[TaggedText | UserInputError]:
    """``tag`` for several texts with one checkpoint (Gradio's dynamic batching): the windows of all texts share
    forward passes. A text that cannot be tagged gets its UserInputError in its place; the others are unaffected.
    Raises ModelUnavailableError when the checkpoint is not here."""
    loaded = registry.load("ner", model_id)
    config, tokenizer = loaded.config, loaded.tokenizer
    limit = min(max_length or tokenizer.model_max_length, config.max_tokens)
    labels = [config.id2label.get(i, f"LABEL_{i}") for i in range(config.num_labels)]
    encoded: list[Encoded | UserInputError] = []
    for text in texts:
        try:
            encoded.append(encode(tokenizer, text, limit, stride))
        except UserInputError as exc:
            encoded.append(exc)
    cls_id, sep_id = tokenizer.token_to_id(tokenizer.cls_token), tokenizer.token_to_id(tokenizer.sep_token)
    windows = [(k, [cls_id, *(t.id for t in enc.tokens[a:b]), sep_id])  # [CLS] window [SEP]
               for k, enc in enumerate(encoded) if isinstance(enc, Encoded) for a, b in enc.windows]
    probs = _window_probs(loaded, [ids for _, ids in windows], progress)
    out: list[TaggedText | UserInputError] = []
    for k, enc in enumerate(encoded):
        if isinstance(enc, UserInputError):
            out.append(enc)
            continue
        mine = [p for (owner, _), p in zip(windows, probs) if owner == k]
        out.append(TaggedText(enc, labels, mine, _merge_windows(enc, mine), _decoder(tokenizer), loaded.badge))
    return out


def _window_probs(loaded: registry.LoadedModel, windows: list[list[int]],
                  progress: Callable[[float, str], None] | None) -> list[np.ndarray]:
    """p(y_t | x) for the tokens of every window, at most WINDOW_TOKENS (padded) tokens per forward pass. Windows
    are taken in order of length, so most passes hold windows of one length: no padding, no attention mask, and the
    fused attention kernel runs unmasked. A pass of mixed lengths pads and masks the padding out of attention."""
    order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
    passes: list[list[int]] = []
    for r in order:  # shortest first, so the window added last is its pass's longest
        if not passes or (len(passes[-1]) + 1) * len(windows[r]) > WINDOW_TOKENS:
            passes.append([])
        passes[-1].append(r)
    out: list[np.ndarray] = [None] * len(windows)  # type: ignore[list-item]
    done = 0
    with torch.inference_mode():
        for rows in passes:
            if progress is not None and len(windows) > 1:
                progress(done / len(windows), i18n.text("ner.progress_windows", first=done + 1, last=done + len(rows),
                                                         total=len(windows)))
            longest = max(len(windows[r]) for r in rows)
            ids = torch.tensor([windows[r] + [0] * (longest - len(windows[r])) for r in rows])  # (W, T)
            mask = None
            if any(len(windows[r]) < longest for r in rows):
                mask = torch.tensor([[1] * len(windows[r]) + [0] * (longest - len(windows[r])) for r in rows])
                mask = mask.to(loaded.device)  # (W, T): 0 marks padding
            logits = loaded.model(ids.to(loaded.device), mask, output_attentions=False,
                                  output_hidden_states=False).logits  # (W, T, C)
            probs = torch.softmax(logits.float(), dim=-1).cpu().numpy()  # (W, T, C)
            for row, r in enumerate(rows):
                out[r] = probs[row, 1:len(windows[r]) - 1]  # (T_r - 2, C): no [CLS]/[SEP], no padding
            done += len(rows)
    return out


def _merge_windows(encoded: Encoded, window_probs: list[np.ndarray]) -> np.ndarray:
    """(N, C): for every token, the probabilities from the window where it is farthest from either edge."""
    merged = np.zeros((len(encoded.tokens), window_probs[0].shape[1]), dtype=np.float32)
    best = np.full(len(encoded.tokens), -1)
    for (a, b), probs in zip(encoded.windows, window_probs):
        position = np.arange(a, b)
        centrality = np.minimum(position - a, b - 1 - position)  # tokens of context on the thinner side
        better = centrality > best[a:b]
        merged[a:b][better] = probs[better]
        best[a:b] = np.where(better, centrality, best[a:b])
    return merged


# ------------------------------------------------------------------------------------------------------------------
# Aggregation and grouping (transformers' TokenClassificationPipeline, step by step)


@dataclass
class Unit:
    """What gets a tag after aggregation: a token ("simple") or a whole word ("first", "average", "max")."""

    label: str
    score: float
    word: str
    start: int
    end: int
    tokens: range  # indices into TaggedText.tokens


@dataclass
class Entity:
    """A grouped entity, as the pipeline reports it."""

    entity_group: str
    score: float
    word: str
    start: int
    end: int


def split_tag(label: str) -> tuple[str, str]:
    """(prefix, type), the prefix one of B, I, E, S. BIO checkpoints (dslim/bert-base-NER) use B-/I-; IOBES ones
    (ckiplab/bert-base-chinese-ner) add E- (end) and S- (single). Labels without a prefix (O, or IO schemes) count as
    inside, as in the pipeline."""
    if label.startswith(("B-", "I-", "E-", "S-")):
        return label[0], label[2:]
    return "I", label


def _continues(previous: str, label: str) -> bool:
    """Does ``label`` extend the chunk ``previous`` belongs to? Only an I- or E- of the same type does, and only
    if ``previous`` did not close its chunk (E-, S-). For BIO labels this is the pipeline's grouping rule."""
    (before, kind_before), (prefix, kind) = split_tag(previous), split_tag(label)
    return prefix in ("I", "E") and kind == kind_before and before not in ("E", "S")


def aggregate(tokens: list[Token], probs: np.ndarray, labels: list[str], strategy: str,
              decode: Callable[[list[str]], str], offset: int = 0) -> list[Unit]:
    """Tag tokens ("simple") or whole words; a word is a token plus the subword pieces that follow it."""
    if strategy not in NER_STRATEGIES:
        raise UserInputError("ner.unknown_strategy", strategy=str(strategy)[:40], choices=", ".join(NER_STRATEGIES))
    if strategy == "simple":
        groups = [[i] for i in range(len(tokens))]
    else:
        groups = []
        for i, token in enumerate(tokens):
            if groups and token.is_subword:
                groups[-1].append(i)
            else:
                groups.append([i])
    units = []
    for group in groups:
        if strategy in ("simple", "first"):
            scores = probs[group[0]]  # the first piece decides
        elif strategy == "max":
            scores = probs[max(group, key=lambda i: probs[i].max())]  # the most confident piece decides
        else:
            scores = np.nanmean(probs[group], axis=0)  # mean distribution over the pieces, then argmax
        best = int(scores.argmax())
        units.append(Unit(labels[best], float(scores[best]), decode([tokens[i].word for i in group]),
                          tokens[group[0]].start, tokens[group[-1]].end, range(offset + group[0],
                                                                                offset + group[-1] + 1)))
    return units


def group(units: list[Unit], decode: Callable[[list[str]], str]) -> list[Entity]:
    """Merge neighbours of the same type into entities; B- and S- always start a new one, and nothing continues
    after an E- or S-. "O" groups are dropped."""
    runs: list[list[Unit]] = []
    for unit in units:
        if runs and _continues(runs[-1][-1].label, unit.label):
            runs[-1].append(unit)
        else:
            runs.append([unit])
    entities = []
    for run in runs:
        kind = run[0].label.split("-", 1)[-1]
        if kind == OUTSIDE:
            continue
        entities.append(Entity(kind, float(np.nanmean([unit.score for unit in run])),
                               decode([unit.word for unit in run]), run[0].start, run[-1].end))
    return entities


def resolve_overlaps(entities: list[Entity]) -> list[Entity]:
    """Entities found twice in overlapping windows: keep the longer one, then the more confident one."""
    if not entities:
        return entities
    entities = sorted(entities, key=lambda entity: entity.start)
    kept, previous = [], entities[0]
    for entity in entities:
        if previous.start <= entity.start < previous.end:
            longer = entity.end - entity.start - (previous.end - previous.start)
            if longer > 0 or longer == 0 and entity.score > previous.score:
                previous = entity
        else:
            kept.append(previous)
            previous = entity
    kept.append(previous)
    return kept


def entities(tagged: TaggedText, strategy: str) -> list[Entity]:
    """Grouped entities under a strategy: per window, then overlaps resolved (equal to the transformers pipeline)."""
    found = []
    for (a, b), probs in zip(tagged.encoded.windows, tagged.window_probs):
        units = aggregate(tagged.tokens[a:b], probs, tagged.labels, strategy, tagged.decode, offset=a)
        found += group(units, tagged.decode)
    return resolve_overlaps(found) if len(tagged.encoded.windows) > 1 else found


def units(tagged: TaggedText, strategy: str) -> list[Unit]:
    """Tokens or words of the whole text with their tags, from the merged per-token table."""
    return aggregate(tagged.tokens, tagged.probs, tagged.labels, strategy, tagged.decode)


# ------------------------------------------------------------------------------------------------------------------
# Tagging schemes


def bio_to_iobes(tags: list[str]) -> list[str]:
    """BIO (or a model's IOBES) → IOBES. A chunk starts where ``group`` starts one: at B-X or S-X, at I-X after a
    different type or after a closed chunk; a one-unit chunk becomes S-X, a longer one B-X I-X … E-X."""
    kinds = [split_tag(tag)[1] for tag in tags]
    starts = [i == 0 or not _continues(tags[i - 1], tag) for i, tag in enumerate(tags)]
    out = []
    for i, kind in enumerate(kinds):
        if kind == OUTSIDE:
            out.append(OUTSIDE)
            continue
        ends = i + 1 == len(tags) or starts[i + 1]
        out.append(("S" if ends else "B") if starts[i] else ("E" if ends else "I"))
        out[-1] += "-" + kind
    return out


def parse_word_tags(line: str) -> list[tuple[str, str]]:
    """"爱/B-PER 因/I-PER 在/O" → [(word, tag), ...]; tags must be O, B-TYPE or I-TYPE."""
    pairs = []
    for item in (line or "").split():
        word, slash, tag = item.rpartition("/")
        if not slash or not word:
            raise UserInputError("ner.no_tag", item=item)
        if tag != OUTSIDE and not (tag[:2] in ("B-", "I-") and len(tag) > 2):
            raise UserInputError("ner.not_bio", tag=tag, word=word)
        pairs.append((word, tag))
    if not pairs:
        raise UserInputError("ner.no_pairs")
    return pairs
