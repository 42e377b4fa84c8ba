"""The char-BERT: a masked LM of our own (seed §13), trained like the char-GPT on the same text, so the two differ
only in what they read: the char-GPT the left side of a position, the char-BERT both sides.

    input       [CLS] c_1 … c_T [SEP], one token per character: the char-GPT's 76 characters, plus [PAD] [UNK]
                [CLS] [SEP] [MASK] (81 tokens); a character the vocabulary lacks is read as [UNK] and named
    prediction  P(c_i = w | the text, c_i hidden) = softmax(E · LN(GELU(W_t h_i + b_t)) + b)_w
                (h_i: the encoder's last vector at i; E: the token-embedding table itself, the tied decoder)
    a blank     a word blank ("___" or "[MASK]") of n characters is n [MASK]s, predicted in two ways:
                independent  one forward pass; every position takes its own argmax (each blind to the others' choice)
                iterative    fill the position whose best character is most probable, run the model again with it
                             filled in, repeat until none is left (confidence-ordered decoding, as in Mask-Predict,
                             Ghazvininejad et al., 2019): later characters see earlier choices. What is written there
                             is drawn by core/text/sampling.py's Sampler (τ, top-k, top-p, seed; τ = 0: the argmax)
Candidates are ranked over the characters only (a special token is never proposed); their probabilities are the full
softmax's, not renormalised, so what a special token took is simply missing from the column.

The weights are a BertConfig + model.safetensors in save_pretrained's layout (assets/char_bert/, written by
scripts/train_char_bert.py): transformers' BertForMaskedLM loads them as they are, and so does core/nets' class of
that name. The vocabulary is config.json's "tokens" (no vocab.txt: a WordPiece reader would split it into words).
"""
from __future__ import annotations

import json
import math
import numbers
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from core.text import i18n, sampling
from core.loading.checkpoints import CHAR_BERT_ID
from core.loading.device import get_device
from core.text.errors import UserInputError
from core.text.limits import DEFAULT_BLANK_CHARS, MAX_BLANK_CHARS, MAX_FILLED_CHARS, MAX_MASKS, MAX_TEXT_CHARS
from core.recurrent.lstm import clean_text, name_tokens
from core.mlm.mlm import BLANK
from core.nets.bert import BertConfig, BertForMaskedLM
from core.loading.paths import ASSETS_DIR
from core.loading.weights import load_state_dict

CHAR_BERT_ASSETS = ASSETS_DIR / "char_bert"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = range(len(SPECIAL_TOKENS))
FIRST_CHAR_ID = len(SPECIAL_TOKENS)  # ids from here on are characters
WEIGHTS = "model.safetensors"
EMBEDDINGS_KEY = "bert.embeddings.word_embeddings.weight"
DECODER_KEY = "cls.predictions.decoder.weight"  # tied to the embeddings: save_pretrained leaves it out of the file
MAX_TOP_K = 20
# A word blank as the learner writes it: a run of underscores, one per character, or [MASK]s side by side, one per
# character. (A Hub BERT reads either as one blank: core.mlm.mlm.BLANK.)
WORD_BLANK = re.compile(r"(?:\[mask\])+|_+", re.IGNORECASE)


# ----------------------------------------------------------------------------------------------------------------
# Characters → ids


class CharBertTokenizer:
    """One id per character; the five special tokens first, then the characters in the char-GPT's order."""

    def __init__(self, tokens: list[str]):
        if tuple(tokens[:FIRST_CHAR_ID]) != SPECIAL_TOKENS:
            raise ValueError(f"the vocabulary must start with {SPECIAL_TOKENS}")
        self.tokens = list(tokens)
        self.index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def from_characters(cls, characters: list[str]) -> "CharBertTokenizer":
        return cls([*SPECIAL_TOKENS, *characters])

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def characters(self) -> list[str]:
        return self.tokens[FIRST_CHAR_ID:]

    def encode(self, text: str) -> tuple[list[int], list[str]]:
        """(ids, the distinct characters read as [UNK]) of a text, one id per character, no special tokens."""
        ids = [self.index.get(ch, UNK_ID) for ch in text]  # one character is never a special token's name
        unknown = list(dict.fromkeys(ch for ch, i in zip(text, ids) if i == UNK_ID))
        return ids, unknown

    def decode(self, ids: list[int]) -> str:
        return "".join(self.tokens[i] for i in ids)


# ----------------------------------------------------------------------------------------------------------------
# The checkpoint


def char_bert_config(vocab_size: int, hidden: int = 96, layers: int = 4, heads: int = 4,
                     positions: int = 512) -> dict:
    """config.json's BERT fields, as transformers' BertConfig writes them (FFN 4H, exact GELU, no dropout: the
    training used none)."""
    return {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": vocab_size,
            "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
            "intermediate_size": 4 * hidden, "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0, "max_position_embeddings": positions, "type_vocab_size": 2,
            "initializer_range": 0.02, "layer_norm_eps": 1e-12, "pad_token_id": PAD_ID, "tie_word_embeddings": True}


def save_char_bert(model: BertForMaskedLM, tokenizer: CharBertTokenizer, config: dict, info: dict,
                   directory: Path = CHAR_BERT_ASSETS) -> None:
    """config.json (BERT fields + "level", "tokens", "info") and model.safetensors with save_pretrained's keys:
    every parameter once, the tied decoder left out."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    state = {key: tensor.detach().cpu().contiguous() for key, tensor in model.state_dict().items()
             if key != DECODER_KEY}
    save_file(state, str(directory / WEIGHTS), metadata={"format": "pt"})
    config = {**config, "level": "char", "tokens": tokenizer.tokens, "info": info}
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


@dataclass
class LoadedCharBert:
    model: BertForMaskedLM
    tokenizer: CharBertTokenizer
    config: dict  # config.json as written
    info: dict  # training facts: steps, time, held-out figures

    @property
    def device(self) -> torch.device:
        return self.model.cls.predictions.bias.device

    @property
    def max_positions(self) -> int:
        return self.model.config.max_position_embeddings


@torch.inference_mode(False)  # loaded inside an inference-mode view, its weights could never get gradients (Why)
def load_char_bert(directory: Path = CHAR_BERT_ASSETS, device: torch.device | str | None = None) -> LoadedCharBert:
    """Build core/nets' BertForMaskedLM from config.json and load model.safetensors strictly (the tied decoder is
    the embedding table, so it is given that tensor: every key used, none missing)."""
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    model = BertForMaskedLM(BertConfig.from_dict(config))
    state = load_state_dict(directory / WEIGHTS)
    state[DECODER_KEY] = state[EMBEDDINGS_KEY]
    model.load_state_dict(state, strict=True)
    model = model.to(device or get_device()).eval()
    return LoadedCharBert(model, CharBertTokenizer(config["tokens"]), config, config.get("info", {}))


@lru_cache(maxsize=1)
def shipped_char_bert() -> LoadedCharBert:
    """The char-BERT in assets/char_bert/, loaded once per process on core.loading.device's device."""
    return load_char_bert(CHAR_BERT_ASSETS)


@torch.inference_mode()
def logits_at(model: BertForMaskedLM, ids: torch.Tensor, rows: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """The scores over the vocabulary at (rows[m], positions[m]) of a (B, T) batch: (M, V), float32. The head runs
    on those M vectors only; no attention maps or hidden states are kept."""
    hidden = model.bert(ids, None, None, output_attentions=False, output_hidden_states=False).last_hidden_state
    return model.cls.predictions(hidden[rows, positions]).float()  # (M, V)


def probabilities_at(model: BertForMaskedLM, ids: torch.Tensor, rows: torch.Tensor,
                     positions: torch.Tensor) -> torch.Tensor:
    """softmax of ``logits_at``: (M, V)."""
    return logits_at(model, ids, rows, positions).softmax(dim=-1)


# ----------------------------------------------------------------------------------------------------------------
# Reading a text with blanks


@dataclass
class Prepared:
    text: str  # cleaned: NFC, whitespace runs as one space; blanks as the learner wrote them
    ids: list[int]  # [CLS] … [SEP], every blank as [MASK] × its length
    spans: list[tuple[int, int]]  # each blank's character span in ``text``
    starts: list[int]  # each blank's first [MASK] (a token index; 0 is [CLS])
    lengths: list[int]  # each blank's number of characters
    unknown: list[str]  # characters read as [UNK]


def blank_lengths(blank_chars, count: int) -> list[int]:
    """One length per blank: the caller's number for all of them, one number per blank, or the default."""
    if blank_chars is None:
        lengths = [DEFAULT_BLANK_CHARS] * count
    elif isinstance(blank_chars, (list, tuple)):
        if len(blank_chars) != count:
            raise UserInputError("mlm_char.lengths_per_blank", count=count, given=len(blank_chars))
        lengths = list(blank_chars)
    else:
        lengths = [blank_chars] * count
    for length in lengths:
        if (isinstance(length, bool) or not isinstance(length, numbers.Real) or not math.isfinite(length)
                or length != int(length) or not 1 <= length <= MAX_BLANK_CHARS):
            raise UserInputError("mlm_char.blank_chars_range", limit=MAX_BLANK_CHARS)
    return [int(length) for length in lengths]


def prepare(loaded: LoadedCharBert, text: str | None, blank_chars=None) -> Prepared:
    """Validate and encode: text present and not huge, 1..MAX_MASKS blanks, at most MAX_FILLED_CHARS [MASK]s, the
    whole input within the position table; characters outside the vocabulary are named."""
    if not isinstance(text, str):
        text = ""
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("mlm_char.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    text = clean_text(text).strip()
    if not text:
        raise UserInputError("mlm_char.empty")
    spans = [m.span() for m in BLANK.finditer(text)]
    if not spans:
        raise UserInputError("mlm_char.no_blank")
    if len(spans) > MAX_MASKS:
        raise UserInputError("mlm_char.too_many_blanks", count=len(spans), limit=MAX_MASKS)
    lengths = blank_lengths(blank_chars, len(spans))
    if sum(lengths) > MAX_FILLED_CHARS:
        raise UserInputError("mlm_char.too_many_chars", count=sum(lengths), limit=MAX_FILLED_CHARS)
    tokenizer, ids, starts, unknown, done = loaded.tokenizer, [CLS_ID], [], [], 0
    for (start, end), length in zip(spans + [(len(text), len(text))], lengths + [0]):
        piece_ids, piece_unknown = tokenizer.encode(text[done:start])
        ids += piece_ids
        unknown += piece_unknown
        starts.append(len(ids))
        ids += [MASK_ID] * length
        done = end
    ids.append(SEP_ID)
    if len(ids) > loaded.max_positions:
        raise UserInputError("mlm_char.too_many_positions", positions=f"{len(ids):,}", limit=loaded.max_positions,
                             chars=loaded.max_positions - 2)
    unknown = list(dict.fromkeys(unknown))
    if unknown and not any(i >= FIRST_CHAR_ID for i in ids):
        raise UserInputError("mlm_char.all_unknown", chars=name_tokens(unknown))
    return Prepared(text, ids, spans, starts[:-1], lengths, unknown)


def written_blanks(text: str | None) -> tuple[str, list[int]]:
    """The text with each word blank written as underscores, and each blank's length as written: "_____" is five
    characters, "[MASK][MASK]" two, a lone [MASK] or "_" one."""
    lengths: list[int] = []

    def as_underscores(match: re.Match) -> str:
        written = match.group()
        lengths.append(len(written) if written.startswith("_") else len(written) // len("[MASK]"))
        return "_" * lengths[-1]

    return WORD_BLANK.sub(as_underscores, text if isinstance(text, str) else ""), lengths


def unknown_note(unknown: list[str]) -> str | None:
    return i18n.text("mlm_char.unknown_note", count=len(unknown), chars=name_tokens(unknown)) if unknown else None


def with_blanks_filled(prepared: Prepared, words: list[str]) -> str:
    """The cleaned text with blank b replaced by words[b]."""
    out, done = [], 0
    for (start, end), word in zip(prepared.spans, words):
        out += [prepared.text[done:start], word]
        done = end
    return "".join(out) + prepared.text[done:]


# ----------------------------------------------------------------------------------------------------------------
# Filling the blanks: independent argmaxes and iterative filling


@dataclass
class CharCandidate:
    char: str
    probability: float


@dataclass
class MaskedChar:
    position: int  # token index in the input (0 is [CLS])
    blank: int  # which blank (0-based)
    offset: int  # which character of its blank (0-based)
    candidates: list[CharCandidate]  # top-k, every blank still masked: what the independent fill reads


@dataclass
class FillStep:
    step: int  # 1-based: the order of filling
    position: int
    blank: int
    offset: int
    char: str  # written here at this step
    probability: float  # its probability at this step (at τ = 0, the highest among the positions still masked)
    candidates: list[CharCandidate]  # top-k at this position at this step
    confidences: list[tuple[int, str, float]]  # every position still masked: (position, best char, its probability)
    draw: sampling.Draw  # the draw that wrote ``char``: its q and this step's cut (what the figure shows)


@dataclass
class FilledBlank:
    start: int  # token index of its first [MASK]
    length: int
    independent: str  # each character its own argmax from the one pass with everything masked
    iterative: str  # the characters the iterative fill wrote
    order: list[int]  # the blank's offsets in the order they were filled


@dataclass
class CharFill:
    model_id: str
    text: str  # the cleaned input, blanks as written
    tokens: list[str]  # what the model read: [CLS] … [MASK] … [SEP]
    masked: list[MaskedChar]  # every [MASK] in order, from the first pass
    steps: list[FillStep]  # the iterative fill, one step per [MASK]
    blanks: list[FilledBlank]
    independent: str  # the text with each blank's independent argmaxes
    iterative: str  # the text with each blank's iterative fill
    unknown: list[str]
    note: str | None  # the characters read as [UNK], named
    settings: sampling.Settings = sampling.Settings(0.0)  # what drew the iterative fill's characters


def check_top_k(top_k) -> int:
    try:
        top_k = int(top_k)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError("mlm_char.top_k_range", limit=MAX_TOP_K) from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise UserInputError("mlm_char.top_k_range", limit=MAX_TOP_K)
    return top_k


def top_characters(tokenizer: CharBertTokenizer, probs: torch.Tensor, k: int) -> list[list[CharCandidate]]:
    """(M, V) → per row the k most probable characters (special tokens left out), best first."""
    values, indices = probs[:, FIRST_CHAR_ID:].topk(k, dim=-1)  # (M, k)
    return [[CharCandidate(tokenizer.tokens[i + FIRST_CHAR_ID], p) for p, i in zip(row_p, row_i)]
            for row_p, row_i in zip(values.tolist(), indices.tolist())]


@torch.inference_mode()
def fill_prepared(loaded: LoadedCharBert, prepared: Prepared, top_k: int = 5,
                  settings: sampling.Settings | None = None) -> CharFill:
    """The first pass (top-k at every [MASK], the independent argmaxes), then the iterative fill from it.

    Each step fills the most confident position still masked (the one whose best character is most probable at
    τ = 1), whatever the settings: the settings decide what is written, not where. Ordering by confidence is what
    makes the iterative fill better than the independent one (the model writes first where it is surest, and the
    uncertain positions read those characters); a sampled order would fill an uncertain position first, blind. The
    character written there is drawn by one core.text.sampling.Sampler, seeded once per fill (a seed reproduces the whole
    fill), from that position's logits over the characters (special tokens at −∞: never drawn). No settings, or
    τ = 0: the argmax, as the fill always was (the leftmost character on a tie)."""
    settings = (settings or sampling.Settings(0.0)).checked()
    sampler = None if settings.greedy else sampling.Sampler(settings)
    model, tokenizer = loaded.model, loaded.tokenizer
    where = [(start + offset, blank, offset) for blank, (start, length) in
             enumerate(zip(prepared.starts, prepared.lengths)) for offset in range(length)]
    ids = torch.tensor([prepared.ids], device=loaded.device)  # (1, T)
    remaining = [position for position, _, _ in where]
    logits = logits_at(model, ids, torch.zeros(len(remaining), dtype=torch.long, device=loaded.device),
                       torch.tensor(remaining, device=loaded.device))  # (M, V)
    probs = logits.softmax(dim=-1)  # (M, V)
    first = top_characters(tokenizer, probs, top_k)
    masked = [MaskedChar(position, blank, offset, candidates)
              for (position, blank, offset), candidates in zip(where, first)]
    independent = {m.position: m.candidates[0].char for m in masked}
    blank_of = {position: (blank, offset) for position, blank, offset in where}
    steps, written = [], {}
    while remaining:
        best, best_ids = probs[:, FIRST_CHAR_ID:].max(dim=-1)  # (M,) each position's confidence and argmax
        pick = int(best.argmax())  # the most confident position; the leftmost on a tie
        position, blank_offset = remaining[pick], blank_of[remaining[pick]]
        scores = logits[pick].cpu().clone()  # (V,) the characters' logits: a special token is never written
        scores[:FIRST_CHAR_ID] = -math.inf
        if sampler is None:  # the argmax; the cut says so (τ = 0: all the mass on it, shared with any tie)
            char_id = int(best_ids[pick]) + FIRST_CHAR_ID
            processed = sampling.warp(scores, settings)
            draw = sampling.Draw(char_id, float(processed.softmax(-1)[char_id]),
                                 sampling.cut(scores, settings, tokenizer.tokens.__getitem__, processed=processed))
        else:
            draw = sampler.draw(scores, tokenizer.tokens.__getitem__)
            char_id = draw.token
        steps.append(FillStep(len(steps) + 1, position, *blank_offset, tokenizer.tokens[char_id],
                              float(probs[pick, char_id]), top_characters(tokenizer, probs[pick:pick + 1], top_k)[0],
                              [(p, tokenizer.tokens[int(i) + FIRST_CHAR_ID], float(c))
                               for p, c, i in zip(remaining, best.tolist(), best_ids.tolist())], draw))
        written[position] = tokenizer.tokens[char_id]
        ids[0, position] = char_id
        remaining.pop(pick)
        if remaining:
            logits = logits_at(model, ids, torch.zeros(len(remaining), dtype=torch.long, device=loaded.device),
                               torch.tensor(remaining, device=loaded.device))  # (M', V)
            probs = logits.softmax(dim=-1)
    blanks = [FilledBlank(start, length, "".join(independent[start + o] for o in range(length)),
                          "".join(written[start + o] for o in range(length)),
                          [s.offset for s in steps if s.blank == b])
              for b, (start, length) in enumerate(zip(prepared.starts, prepared.lengths))]
    return CharFill(CHAR_BERT_ID, prepared.text, [tokenizer.tokens[i] for i in prepared.ids], masked, steps, blanks,
                    with_blanks_filled(prepared, [b.independent for b in blanks]),
                    with_blanks_filled(prepared, [b.iterative for b in blanks]), prepared.unknown,
                    unknown_note(prepared.unknown), settings)


def fill_as_written(text: str, top_k: int = 5, settings: sampling.Settings | None = None) -> CharFill:
    """``fill`` with every blank as long as it is written (``written_blanks``)."""
    text, lengths = written_blanks(text)
    return fill(text, lengths or None, top_k, settings)


def fill(text: str, blank_chars=None, top_k: int = 5, settings: sampling.Settings | None = None) -> CharFill:
    """Fill every blank of ``text`` with the shipped char-BERT. ``blank_chars``: the number of characters of every
    blank, or one number per blank (default DEFAULT_BLANK_CHARS); ``settings``: how each character of the iterative
    fill is drawn (None: the argmax)."""
    top_k = check_top_k(top_k)
    settings = (settings or sampling.Settings(0.0)).checked()  # a bad setting is refused before the model loads
    loaded = shipped_char_bert()
    return fill_prepared(loaded, prepare(loaded, text, blank_chars), top_k, settings)
