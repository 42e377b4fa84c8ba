"""BERT's masked LM as a pipeline (seed §5–§6): fill in blanks, what goes into the encoder, how pre-training masks.

- ``fill_mask``: tokenise → encoder → vocabulary logits at the [MASK] positions only → softmax → top-k. The numbers
  equal transformers' fill-mask pipeline; several blanks are predicted independently from one forward pass (the
  pipeline does the same).
- ``next_sentence``: the NSP head's IsNext probability for a sentence pair (bert-base-uncased has the head).
- ``compare_contexts``: the same blank from the whole sentence and from its left context only (GPT's view, §13.1).
- ``input_representation``: token + segment + position embeddings, the sum, and the LayerNorm'd encoder input.
- ``bert_masking``: the pre-training corruption: 15% of tokens chosen; 80% → [MASK], 10% → random, 10% unchanged.
- ``contextual_vs_static``: the cosine of one word's vector across sentences, from the encoder and from GloVe.
- ``model_card``: parameter counts from a config, next to the seed's hand formula.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core import registry
from core.nets import bert, distilbert
from core.param_count import parameter_breakdown, seed_hand_count
from core.registry import MINILM_ID
from core.errors import ModelUnavailableError, UserInputError
from core.limits import MAX_MASKS, MAX_MODEL_TOKENS, MAX_TEXT_CHARS
from core.textio import normalize_text
from core.tokenizer import WordPieceEncoding, WordPieceTokenizer
from core.embeddings import GLOVE_NAME, cosine_matrix, load_glove

BLANK = re.compile(r"\[mask\]|_+", re.IGNORECASE)  # "[MASK]", "[mask]" and runs of "_" all mean one blank
MAX_TOP_K = 50
MASK_RATE, MASK_SHARE, RANDOM_SHARE = 0.15, 0.8, 0.1  # BERT's corruption: 15% chosen; 80/10/10 of those
MAX_DRAWS = 100_000
FILL_BATCH = 16  # fill-mask requests per forward pass when Gradio batches them
DRAW_CHUNK = 2048  # draws simulated at once in bert_masking: bounds its memory
HOW_TO_BLANK = ("Put [MASK] (or _) where the missing word goes, for example \"my dog is [MASK] .\", or pick a word "
                "and click 'Mask this word'.")

# ----------------------------------------------------------------------------------------------------------------
# Reading the learner's text


def clean_text(text: str | None, what: str = "a sentence") -> str:
    """NFC text without control characters; empty or huge text is refused."""
    text = normalize_text(text or "").strip()
    if not text:
        raise UserInputError(f"Type {what} first.")
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError(f"The text has {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}. Shorten it.")
    return text


def with_mask_tokens(text: str, mask_token: str = "[MASK]") -> str:
    """Every blank spelled the way the tokenizer knows it: [MASK]."""
    return BLANK.sub(mask_token, text)


def encode(tokenizer: WordPieceTokenizer, text: str, pair: str | None = None,
           max_tokens: int = MAX_MODEL_TOKENS) -> WordPieceEncoding:
    """[CLS] text [SEP] (pair [SEP]); longer than the position table is refused, not silently cut."""
    encoding = tokenizer.encode(text, pair, max_length=MAX_TEXT_CHARS * 4)  # never truncates: we check below
    if len(encoding) > max_tokens:
        raise UserInputError(f"The text is {len(encoding):,} WordPiece tokens with [CLS]/[SEP]; BERT reads at most "
                             f"{max_tokens} (its position table has {max_tokens} rows). Remove about "
                             f"{len(encoding) - max_tokens:,} tokens.")
    if len(encoding) <= 2 + (pair is not None):
        raise UserInputError("The text has no tokens the model can read (only spaces or invisible characters?). "
                             "Type words.")
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


def mask_word(tokenizer: WordPieceTokenizer, text: str, index: int) -> str:
    """The text (blanks written as [MASK]) with its ``index``-th word replaced by one [MASK]: BERT predicts one
    WordPiece per mask."""
    words = words_of(tokenizer, text)
    if not 0 <= index < len(words):
        raise UserInputError(f"The text has {len(words)} words; pick one of them.")
    text, word = with_mask_tokens(clean_text(text), tokenizer.mask_token), words[index]
    return text[:word.start] + tokenizer.mask_token + text[word.end:]


# ----------------------------------------------------------------------------------------------------------------
# Running the model: the encoder once, the vocabulary projection only where it is needed


def encoder_of(model: nn.Module) -> nn.Module:
    """The BertModel/DistilBertModel inside any head model (or a bare Encoder)."""
    return getattr(model, model.base_prefix)


def vocabulary_logits(model: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """The MLM head on some positions' final vectors: (M, H) → (M, V). Skipping the other positions saves T−M
    rows of the H×V product, which for a short sentence is a large part of the work."""
    if isinstance(model, distilbert.DistilBertForMaskedLM):
        return model.vocab_projector(model.vocab_layer_norm(model.act(model.vocab_transform(hidden))))
    if isinstance(model, (bert.BertForMaskedLM, bert.BertForPreTraining)):
        return model.cls.predictions(hidden)
    raise UserInputError("This checkpoint has no masked-LM head; choose one such as bert-base-uncased.")


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
        raise UserInputError(f"Ask for between 1 and {MAX_TOP_K} predictions per blank.") from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise UserInputError(f"Ask for between 1 and {MAX_TOP_K} predictions per blank.")
    tokenizer = loaded.tokenizer
    text = with_mask_tokens(clean_text(text), tokenizer.mask_token)
    pair = with_mask_tokens(clean_text(pair, "a second sentence"), tokenizer.mask_token) if pair else None
    encoding = encode(tokenizer, text, pair, min(MAX_MODEL_TOKENS, loaded.config.max_position_embeddings))
    positions = [i for i, token_id in enumerate(encoding.ids) if token_id == tokenizer.mask_token_id]
    if not positions:
        raise UserInputError("There is no blank to fill. " + HOW_TO_BLANK)
    if len(positions) > MAX_MASKS:
        raise UserInputError(f"There are {len(positions)} blanks; the limit is {MAX_MASKS}. With many blanks each "
                             f"one has too little context left; remove some.")
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
    hidden = encoder_of(model)(ids, mask, segments, output_attentions=False).last_hidden_state  # (B, T, H)
    rows = torch.cat([hidden[b, positions] for b, (*_, positions) in enumerate(items)])  # (ΣM, H): only blanks
    probs = vocabulary_logits(model, rows).float().softmax(dim=-1)  # (ΣM, V)
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
    if not isinstance(model, bert.BertForPreTraining):
        raise UserInputError(f"'{loaded.files.model_id}' has no next-sentence head (cls.seq_relationship). "
                             "bert-base-uncased has one; DistilBERT was trained without NSP.")
    tokenizer = loaded.tokenizer
    first = with_mask_tokens(clean_text(first, "the first sentence"), tokenizer.mask_token)
    second = with_mask_tokens(clean_text(second, "the second sentence"), tokenizer.mask_token)
    encoding = encode(tokenizer, first, second, min(MAX_MODEL_TOKENS, loaded.config.max_position_embeddings))
    ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([encoding.segment_ids], device=loaded.device)  # (1, T)
    pooled = model.bert(ids, None, segments, output_attentions=False).pooler_output  # (1, H)
    return float(model.cls.seq_relationship(pooled).float().softmax(-1)[0, 0])  # index 0 = IsNext, 1 = NotNext


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
        raise UserInputError("There is no blank to compare. " + HOW_TO_BLANK)
    if not 1 <= blank_number <= len(blanks):
        raise UserInputError(f"The text has {len(blanks)} blank(s); choose a number from 1 to {len(blanks)}.")
    return text[:blanks[blank_number - 1].end()]


def compare_contexts(loaded: registry.LoadedModel, text: str, top_k: int = 5,
                     blank_number: int = 1) -> ContextComparison:
    """Predict one blank from both sides (BERT) and from the left side only (what GPT conditions on)."""
    text = clean_text(text)
    left = left_context(text, blank_number)
    full = fill_mask(loaded, text, top_k)
    cut = fill_mask(loaded, left, top_k)
    return ContextComparison(full.text, cut.text, full.blanks[blank_number - 1], cut.blanks[-1])


# ----------------------------------------------------------------------------------------------------------------
# Which model the offline-capable views use


def model_for_views(model_id: str | None, progress=None) -> tuple[registry.LoadedModel, str | None]:
    """The picked MLM checkpoint if it can be had, else the packaged MiniLM-L6 encoder and the reason why.

    Tokenisation, embeddings and contextual vectors need only an encoder, so these views keep working offline.
    ``progress(fraction, message)`` hears a download's progress."""
    try:
        return registry.load("mlm", model_id, progress=progress), None
    except ModelUnavailableError as exc:
        return registry.load("encoder", MINILM_ID), str(exc)


# ----------------------------------------------------------------------------------------------------------------
# Input representation: E = token + segment + position, then LayerNorm


@dataclass
class InputRepresentation:
    model_id: str
    tokens: list[str]
    segment_ids: list[int]
    token: np.ndarray  # (T, H) rows of the token-embedding table
    segment: np.ndarray  # (T, H) rows of the segment table (zeros for DistilBERT, which has none)
    position: np.ndarray  # (T, H) rows 0..T-1 of the learned position table
    total: np.ndarray  # (T, H) token + segment + position
    encoder_input: np.ndarray  # (T, H) LayerNorm(total): what layer 1 receives


@torch.inference_mode()
def input_representation(loaded: registry.LoadedModel, text: str, pair: str | None = None) -> InputRepresentation:
    tokenizer = loaded.tokenizer
    text = with_mask_tokens(clean_text(text), tokenizer.mask_token)
    pair = with_mask_tokens(clean_text(pair, "a second sentence"), tokenizer.mask_token) if pair else None
    encoding = encode(tokenizer, text, pair, min(MAX_MODEL_TOKENS, loaded.config.max_position_embeddings))
    ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([encoding.segment_ids], device=loaded.device)  # (1, T)
    embeddings = encoder_of(loaded.model).embeddings
    parts = embeddings.components(ids, segments)  # each (1 or B, T, H)
    token, position = parts["token"][0], parts["position"][0]  # (T, H)
    segment = parts["segment"][0] if "segment" in parts else torch.zeros_like(token)  # (T, H)
    total = token + segment + position  # (T, H)
    def as_numpy(t: torch.Tensor) -> np.ndarray:
        return t.float().cpu().numpy()

    return InputRepresentation(loaded.files.model_id, encoding.tokens, encoding.segment_ids, as_numpy(token),
                               as_numpy(segment), as_numpy(position), as_numpy(total),
                               as_numpy(embeddings(ids, segments)[0]))


# ----------------------------------------------------------------------------------------------------------------
# The masking procedure (create_pretraining_data.py in Google's BERT repository)

KEEP, MASK, RANDOM, UNCHANGED = 0, 1, 2, 3  # what happened to a token in one draw
ACTION_NAMES = {KEEP: "not chosen", MASK: "[MASK]", RANDOM: "random token", UNCHANGED: "chosen, unchanged"}


@dataclass
class MaskingResult:
    tokens: list[str]  # the input, [CLS] ... [SEP]
    corrupted: list[str]  # the first draw: what the model would read
    actions: list[int]  # the first draw: KEEP / MASK / RANDOM / UNCHANGED per token
    seed: int
    draws: int
    chosen_per_draw: int  # max(1, round(15% of the candidate tokens))
    candidates: int  # tokens that may be chosen ([CLS]/[SEP] may not)
    counts: dict[str, int]  # over all draws: how often each action happened to a chosen token
    chosen_by_position: list[int]  # over all draws: how often each token was chosen


def replacement_ids(tokenizer: WordPieceTokenizer) -> np.ndarray:
    """Ids a "random token" is drawn from: the vocabulary without [PAD]/[CLS]/[SEP]/[MASK]/[unused…] entries."""
    return np.array(sorted(i for token, i in tokenizer.backend.get_vocab().items()
                           if not (token.startswith("[") and token.endswith("]"))))


def bert_masking(tokenizer: WordPieceTokenizer, text: str, seed: int = 0, draws: int = 10_000) -> MaskingResult:
    """BERT's corruption, seeded, over many draws of the same sentence.

    Each draw chooses n = max(1, round(0.15 · candidates)) tokens uniformly, then each chosen token becomes [MASK]
    with p = 0.8, a random token with p = 0.1, or stays unchanged with p = 0.1. The model is trained to recover the
    original token at every chosen position, so it cannot trust that an unmasked token is right."""
    if not 1 <= int(draws) <= MAX_DRAWS:
        raise UserInputError(f"Choose between 1 and {MAX_DRAWS:,} draws.")
    draws, seed = int(draws), int(seed)
    encoding = encode(tokenizer, with_mask_tokens(clean_text(text), tokenizer.mask_token))
    candidates = np.array([i for i, special in enumerate(encoding.special_tokens_mask) if not special])
    n_chosen = max(1, round(len(candidates) * MASK_RATE))
    # Counted chunk by chunk, so memory stays O(tokens) (DRAW_CHUNK rows at a time) at any number of draws. The
    # generator is read in the same order as one (draws, candidates) array, then one (draws, n) array, would read
    # it, so a seed gives the same result as drawing everything at once (tests/test_mlm.py checks this).
    rng = np.random.default_rng(seed)
    by_position = np.zeros(len(encoding), dtype=np.int64)
    first_chosen = None
    for start in range(0, draws, DRAW_CHUNK):
        rows = min(DRAW_CHUNK, draws - start)
        order = np.argpartition(rng.random((rows, len(candidates))), n_chosen - 1, axis=1)[:, :n_chosen]
        chosen = candidates[order]  # (rows, n) token positions
        by_position += np.bincount(chosen.ravel(), minlength=len(encoding))
        first_chosen = chosen[0] if first_chosen is None else first_chosen
    action_counts = np.zeros(3, dtype=np.int64)
    first_action = None
    for start in range(0, draws, DRAW_CHUNK):
        rows = min(DRAW_CHUNK, draws - start)
        u = rng.random((rows, n_chosen))  # (rows, n) decides 80 / 10 / 10
        action = np.where(u < MASK_SHARE, MASK, np.where(u < MASK_SHARE + RANDOM_SHARE, RANDOM, UNCHANGED))
        action_counts += [(action == a).sum() for a in (MASK, RANDOM, UNCHANGED)]
        first_action = action[0] if first_action is None else first_action
    vocabulary = replacement_ids(tokenizer)
    random_ids = vocabulary[rng.integers(len(vocabulary), size=n_chosen)]  # (n,): only the first draw is shown

    actions, corrupted = [KEEP] * len(encoding), list(encoding.tokens)
    for position, act, random_id in zip(first_chosen, first_action, random_ids):
        actions[position] = int(act)
        if act == MASK:
            corrupted[position] = tokenizer.mask_token
        elif act == RANDOM:
            corrupted[position] = tokenizer.id_to_token(int(random_id))
    counts = {ACTION_NAMES[a]: int(n) for a, n in zip((MASK, RANDOM, UNCHANGED), action_counts)}
    by_position = by_position.tolist()
    return MaskingResult(encoding.tokens, corrupted, actions, seed, draws, n_chosen, len(candidates), counts,
                         by_position)


# ----------------------------------------------------------------------------------------------------------------
# Contextual vs static vectors (seed §4: one "bank" vector in GloVe; a different one per sentence in BERT)


@dataclass
class ContextualVsStatic:
    word: str
    sentences: list[str]
    pieces: list[list[str]]  # the word's WordPiece tokens in each sentence
    contextual: np.ndarray  # (S, S) cosine of the encoder's vectors (last layer, mean over the word's pieces)
    contextual_model: str
    static: np.ndarray | None  # (S, S) cosine of the static vectors: always 1.0; None if the word is not in GloVe
    static_model: str
    static_note: str | None  # why there is no static row


def glove_vector(word: str) -> tuple[np.ndarray, str]:
    """The word's GloVe 6B 50d vector, via core.embeddings (one table lookup, the same for every sentence)."""
    return load_glove().vector(word), GLOVE_NAME


def find_word(encoding: WordPieceEncoding, sentence: str, word: str) -> list[int]:
    """Token positions of the first occurrence of ``word`` (case-insensitive, whole word) in the sentence."""
    spans: dict[int, list[int]] = {}
    for position, (word_id, sequence_id) in enumerate(zip(encoding.word_ids, encoding.sequence_ids)):
        if word_id is not None and sequence_id == 0:
            spans.setdefault(word_id, []).append(position)
    for positions in spans.values():
        start, end = encoding.offsets[positions[0]][0], encoding.offsets[positions[-1]][1]
        if sentence[start:end].casefold() == word.casefold():
            return positions
    return []


@torch.inference_mode()
def contextual_vs_static(loaded: registry.LoadedModel, word: str, sentences: list[str]) -> ContextualVsStatic:
    word = clean_text(word, "a word")
    if len(word.split()) != 1:
        raise UserInputError("Type a single word, such as bank.")
    sentences = [clean_text(s) for s in sentences if s and s.strip()]
    if len(sentences) < 2:
        raise UserInputError(f"Type at least two sentences that use '{word}'.")
    vectors, pieces = [], []
    for number, sentence in enumerate(sentences, 1):
        encoding = encode(loaded.tokenizer, sentence)
        positions = find_word(encoding, sentence, word)
        if not positions:
            raise UserInputError(f"'{word}' does not occur as a word in sentence {number}: \"{sentence}\".")
        ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
        hidden = encoder_of(loaded.model)(ids, None, None, output_attentions=False).last_hidden_state  # (1, T, H)
        vectors.append(hidden[0, positions].mean(dim=0).float().cpu().numpy())  # (H,)
        pieces.append([encoding.tokens[p] for p in positions])
    static, static_name, note = None, "GloVe 6B 50d", None
    try:
        row, static_name = glove_vector(word)
        static = cosine_matrix(np.stack([row] * len(sentences)))  # the same row for every sentence
    except (UserInputError, ModelUnavailableError) as exc:
        note = str(exc)
    return ContextualVsStatic(word, sentences, pieces, cosine_matrix(np.stack(vectors)), loaded.files.model_id,
                              static, static_name, note)


# ----------------------------------------------------------------------------------------------------------------
# Model card: parameters from the config, and the seed's hand formula

# Configs of the tab's checkpoints, so the card works without downloading them (numbers from their config.json).
KNOWN_CONFIGS = {
    "bert-base-uncased": bert.BertConfig(),
    "bert-base-chinese": bert.BertConfig(vocab_size=21128),
    "distilbert-base-uncased": bert.BertConfig(model_type="distilbert", num_hidden_layers=6, type_vocab_size=0),
}


@dataclass
class ModelCard:
    model_id: str
    source: str  # where the config came from
    config: bert.BertConfig
    breakdown: dict[str, int]  # parameter_breakdown of the encoder (with the pooler for BERT), "total" last
    heads: dict[str, int]  # the pre-training heads on top: masked LM, NSP
    seed_formula: int  # the seed's hand count, 108,808,704 for bert-base
    omitted_biases: int  # linear-layer biases the hand formula leaves out
    pooler: int  # the pooler the hand formula leaves out


def model_card(model_id: str | None = None) -> ModelCard:
    """Counts for the checkpoint's config: its config.json if it can be resolved, else the known numbers."""
    model_id = registry.model_id_or_default("mlm", model_id)
    try:
        config, source = registry.config(model_id), "the checkpoint's config.json"  # config.json only
    except ModelUnavailableError:
        if model_id not in KNOWN_CONFIGS:
            raise
        config, source = KNOWN_CONFIGS[model_id], "its published config (not downloaded here)"
    distil = config.model_type == "distilbert"
    breakdown = parameter_breakdown(config, pooler=not distil)
    with_heads = parameter_breakdown(config, pooler=not distil, heads=("mlm",) if distil else ("mlm", "nsp"))
    heads = {k: v for k, v in with_heads.items() if k.startswith("head:")}
    hand = seed_hand_count(V=config.vocab_size, P=config.max_position_embeddings, S=config.type_vocab_size,
                                H=config.hidden_size, L=config.num_hidden_layers, A=config.num_attention_heads)
    biases = breakdown["attention: Q, K, V, O biases"] + breakdown["feed-forward: biases"]
    return ModelCard(model_id, source, config, breakdown, heads, hand, biases, breakdown.get("pooler", 0))
