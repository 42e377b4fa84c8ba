"""What BERT reads and how it was pre-trained (seed §13): the input representation E = token + segment + position,
the 80/10/10 masking procedure, one word's contextual vectors against a static table, and the parameter count.

Split from core/mlm/mlm.py (which runs the masked LM itself: fill-mask, NSP, both sides vs left only); the tab is still
``mlm`` (demo/mlm/mlm.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from core.loading import registry
from core.loading.checkpoints import model_id_or_default
from core.embeddings.embeddings import GLOVE_NAME, cosine_matrix, load_glove
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.limits import MAX_DRAWS, MAX_MODEL_TOKENS
from core.mlm.mlm import clean_text, encode, with_mask_tokens
from core.mlm.masking import KEEP, MASK, RANDOM, UNCHANGED, chosen_count, choose_positions, draw_actions
from core.nets.bert_encoder import BertConfig
from core.transformer.param_count import parameter_breakdown, seed_hand_count
from core.text.tokenizer import WordPieceEncoding, WordPieceTokenizer

DRAW_CHUNK = 2048  # draws simulated at once in bert_masking: bounds its memory

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
    pair = with_mask_tokens(clean_text(pair, "mlm.empty_second"), tokenizer.mask_token) if pair else None
    encoding = encode(tokenizer, text, pair, min(MAX_MODEL_TOKENS, loaded.config.max_tokens))
    ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
    segments = torch.tensor([encoding.segment_ids], device=loaded.device)  # (1, T)
    embeddings = loaded.model.base.embeddings
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
# The masking procedure (create_pretraining_data.py in Google's BERT repository; the recipe is core/mlm/masking.py,
# which also pre-trains the char-BERT)

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
        raise UserInputError("mlm.draws_range", limit=f"{MAX_DRAWS:,}")
    draws, seed = int(draws), int(seed)
    encoding = encode(tokenizer, with_mask_tokens(clean_text(text), tokenizer.mask_token))
    candidates = np.array([i for i, special in enumerate(encoding.special_tokens_mask) if not special])
    n_chosen = chosen_count(len(candidates))
    # Counted chunk by chunk, so memory stays O(tokens) (DRAW_CHUNK rows at a time) at any number of draws. The
    # generator is read in the same order as one (draws, candidates) array, then one (draws, n) array, would read
    # it, so a seed gives the same result as drawing everything at once (tests/mlm/test_mlm.py checks this).
    rng = np.random.default_rng(seed)
    by_position = np.zeros(len(encoding), dtype=np.int64)
    first_chosen = None
    for start in range(0, draws, DRAW_CHUNK):
        rows = min(DRAW_CHUNK, draws - start)
        order = choose_positions(rng, rows, len(candidates), n_chosen)
        chosen = candidates[order]  # (rows, n) token positions
        by_position += np.bincount(chosen.ravel(), minlength=len(encoding))
        first_chosen = chosen[0] if first_chosen is None else first_chosen
    action_counts = np.zeros(3, dtype=np.int64)
    first_action = None
    for start in range(0, draws, DRAW_CHUNK):
        rows = min(DRAW_CHUNK, draws - start)
        action = draw_actions(rng, rows, n_chosen)  # (rows, n) decides 80 / 10 / 10
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
    """The word's GloVe 6B 50d vector, via core.embeddings.embeddings (one table lookup, the same for every sentence)."""
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
    word = clean_text(word, "mlm.empty_word")
    if len(word.split()) != 1:
        raise UserInputError("mlm.single_word")
    sentences = [clean_text(s) for s in sentences if s and s.strip()]
    if len(sentences) < 2:
        raise UserInputError("mlm.two_sentences", word=word)
    vectors, pieces = [], []
    for number, sentence in enumerate(sentences, 1):
        encoding = encode(loaded.tokenizer, sentence)
        positions = find_word(encoding, sentence, word)
        if not positions:
            raise UserInputError("mlm.word_not_in_sentence", word=word, number=number, sentence=sentence)
        ids = torch.tensor([encoding.ids], device=loaded.device)  # (1, T)
        hidden = loaded.model.base(ids, None, None, output_attentions=False).last_hidden_state  # (1, T, H)
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
    "bert-base-uncased": BertConfig(),
    "bert-base-chinese": BertConfig(vocab_size=21128),
    "distilbert-base-uncased": BertConfig(model_type="distilbert", num_hidden_layers=6, type_vocab_size=0,
                                          has_pooler=False, pretrained_with_nsp=False),
    # the seed's other size (§13.2): L = 24, H = 1024, A = 16, FFN 4H
    "bert-large-uncased": BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                          intermediate_size=4096),
}
SEED_SIZES = ("bert-base-uncased", "bert-large-uncased")  # the card compares the two sizes the seed gives


CONFIG_FILE, KNOWN = "config.json", "published"  # ModelCard.source: read from the checkpoint, or known numbers


@dataclass
class ModelCard:
    model_id: str
    source: str  # where the config came from: CONFIG_FILE (its config.json) or KNOWN (published numbers)
    config: BertConfig
    breakdown: dict[str, int]  # parameter_breakdown of the encoder (with the pooler for BERT), "total" last
    heads: dict[str, int]  # the pre-training heads on top: masked LM, NSP
    seed_formula: int  # the seed's hand count, 108,808,704 for bert-base
    omitted_biases: int  # linear-layer biases the hand formula leaves out
    pooler: int  # the pooler the hand formula leaves out


def model_card(model_id: str | None = None) -> ModelCard:
    """Counts for the checkpoint's config: its config.json if it can be resolved, else the known numbers."""
    model_id = model_id_or_default("mlm", model_id)
    try:
        config, source = registry.config(model_id), CONFIG_FILE  # config.json only
    except ModelUnavailableError:
        if model_id not in KNOWN_CONFIGS:
            raise
        config, source = KNOWN_CONFIGS[model_id], KNOWN
    nsp = config.pretrained_with_nsp  # the pooler and the NSP head were trained; without NSP the card leaves both out
    breakdown = parameter_breakdown(config, pooler=nsp)
    with_heads = parameter_breakdown(config, pooler=nsp, heads=("mlm", "nsp") if nsp else ("mlm",))
    heads = {k: v for k, v in with_heads.items() if k.startswith("head:")}
    hand = seed_hand_count(V=config.vocab_size, P=config.max_position_embeddings, S=config.type_vocab_size,
                                H=config.hidden_size, L=config.num_hidden_layers, A=config.num_attention_heads)
    biases = breakdown["attention: Q, K, V, O biases"] + breakdown["feed-forward: biases"]
    return ModelCard(model_id, source, config, breakdown, heads, hand, biases, breakdown.get("pooler", 0))
