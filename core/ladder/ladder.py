"""The ladder: one text through every character-level model the app ships, side by side (issue #17).

Names: the tab is called "Overview" (demo/ladder/overview.py, api_names ``overview_*``, tests/ladder/test_overview_demo.py) because
it opens the app with the timeline; what it computes is the ladder, so this module and its tests are core/ladder/ladder.py
and tests/ladder/test_ladder.py, as docs/ARCHITECTURE.md lists them.

Every rung predicts each character from the characters before it, and is scored by its surprisal

    s_i = −log2 P(c_i | c_1..c_{i-1})  bits,   total = Σ_i s_i,   bits/char = total / N,   perplexity = 2^(bits/char)

over i = 2..T: the first character has no context, and the neural models have no start symbol to predict it from,
so every rung starts at the second character and all rows line up. The rungs:

- n-gram, n = 1..5, add-one and interpolated Kneser-Ney (core/ngram/ngram.py), counted over the characters of the training
  split as one stream (spaces included, contexts cross sentence ends, like the neural models' training windows);
- the vanilla RNN and the LSTM of the RNN & LSTM tab (core/recurrent/lstm.py, assets/rnn/), P = softmax(head(h_t));
- the char-GPT of the Transformer & GPT tab (core/transformer/gpt.py, assets/gpt/), on the RNN's vocabulary; its context is
  128 characters, so a longer text is read in sliding windows exactly as core.transformer.gpt.evaluate reads held-out text.

All of them are trained on the same split of Moby-Dick (core.recurrent.lstm.split_text: the last 5% is held out). A character
outside a rung's vocabulary is what that rung scores as its <unk> (the RNNs' <unk> id, the n-gram's empty slot
outside V); the ladder names these characters per rung and shows what they cost.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import repeat
from typing import Callable

import numpy as np
import torch

from core.recurrent import lstm
from core.text.corpora import load_corpus
from core.loading.device import get_device, one_cpu_thread
from core.text.errors import UserInputError
from core.ladder.heldout import ADD_K, TAB_LINKS, describe, gpt_context
from core.ngram.ngram import NgramModel

MAX_CHARS = 300  # the RNN tab's cap too: beyond a few hundred columns a per-character strip is unreadable
NGRAM_ORDERS = (1, 2, 3, 4, 5)
SUBSET_CHARS = 3000  # the held-out prefix that tests/ladder/test_ladder.py recomputes (also stored in HELDOUT_PATH)


@dataclass(frozen=True)
class Rung:
    """One model on the ladder: how it scores a text, the equation behind it and the tab that explains it."""

    key: str  # "ngram-3-kneser_ney", "rnn", "lstm", "gpt"
    name: str  # "3-gram, Kneser-Ney"
    family: str  # "n-gram", "RNN", "LSTM", "Transformer"
    equation: str
    tab: str  # the tab that shows this model, as a link: "?tab=ngram&preset=moby-trigram"
    vocabulary: frozenset[str]  # the characters it has a symbol for; others are its <unk>
    log2_probs: Callable[[str], np.ndarray] = field(repr=False, compare=False)  # text → (T-1,) log2 P(c_i | c_<i)
    parameters: int = 0  # weights, or stored counts for an n-gram
    parameters_kind: str = "weights"
    tokenizer: str = "characters"  # what it reads: one symbol per character of its vocabulary (the Overview says so)


def training_split() -> tuple[str, str]:
    """(training text, held-out text) of Moby-Dick: the RNN & LSTM tab's split, shared by every rung."""
    return lstm.split_text(load_corpus("moby_dick"))


# ----------------------------------------------------------------------------------------------------------------
# The rungs


@lru_cache(maxsize=1)
def ngram_counts() -> NgramModel:
    """All k-gram counts, k = 1..5, of the training split's characters (one pass; lower orders share them)."""
    return NgramModel([list(training_split()[0])], max(NGRAM_ORDERS), boundaries=False)


def _ngram_scorer(model: NgramModel, smoothing: str) -> Callable[[str], np.ndarray]:
    def log2_probs(text: str) -> np.ndarray:
        ids = np.fromiter(map(model.stoi.get, text, repeat(model.unknown_id)), np.int64, len(text))
        positions = np.arange(1, len(ids))
        p = model.chain(ids, positions, np.zeros(len(positions), np.int64), smoothing, ADD_K)[0]
        return np.log2(p)  # every smoothing here gives p > 0

    return log2_probs


def _recurrent_scorer(model: lstm.RecurrentLM, vocab: lstm.Vocab) -> Callable[[str], np.ndarray]:
    def log2_probs(text: str) -> np.ndarray:
        """The RNN tab's own computation (core.recurrent.lstm.inspect): forward_fused, softmax, P of the next token."""
        x = torch.tensor([vocab.encode(text)[0]], device=get_device())  # (1, T)
        with torch.inference_mode(), one_cpu_thread(get_device()):
            probs = model.forward_fused(x, keep_gates=False).logits[0].softmax(-1)  # (T, V)
            p = probs[torch.arange(x.shape[1] - 1), x[0, 1:]]  # (T-1,)
        return np.log2(np.asarray(p.tolist(), dtype=np.float64))

    return log2_probs


def _gpt_scorer(model, vocab: lstm.Vocab, batch: int = 64) -> Callable[[str], np.ndarray]:
    def log2_probs(text: str) -> np.ndarray:
        """The char-GPT's own forward pass. Its context is n_positions characters; a longer text is read as
        core.transformer.gpt.evaluate reads held-out text: the first window whole, then strides of half the context, each
        position predicted with at least context/2 characters before it. Windows run in batches."""
        ids = torch.tensor(vocab.encode(text)[0], device=model.lm_head.weight.device)  # (T,)
        x, targets, context = ids[:-1], ids[1:], model.config.n_positions  # predict characters 2..T from 1..T-1
        starts, keep = [0], [min(context, len(x))]  # window start, and how many of its last positions are new
        while starts[-1] + context < len(x):
            end = min(starts[-1] + context + context // 2, len(x))
            starts.append(end - context)
            keep.append(end - (starts[-2] + context))
        width = min(context, len(x))
        windows = torch.stack([x[s:s + width] for s in starts])  # (W, width)
        with torch.inference_mode(), one_cpu_thread(get_device()):
            logits = torch.cat([model(chunk).logits for chunk in windows.split(batch)])  # (W, width, V)
            picked = torch.cat([row[width - k:] for row, k in zip(logits, keep)])  # (T-1, V)
            p = picked.softmax(-1)[torch.arange(len(targets)), targets]  # (T-1,)
        return np.log2(np.asarray(p.tolist(), dtype=np.float64))

    return log2_probs


def ngram_rungs() -> list[Rung]:
    counts = ngram_counts()
    vocabulary = frozenset(counts.itos)
    rungs = []
    for n in NGRAM_ORDERS:
        model = counts.lower_order(n)
        stored = int(sum(map(len, model.keys)))  # one count per distinct k-gram, k = 1..n
        for smoothing, continuation in (
                ("add_k", 0),
                ("kneser_ney", int(sum(map(len, model.keys[:-1])))),  # + a continuation count per lower-order gram
        ):
            key = f"ngram-{n}-{smoothing}"
            name, equation = describe(key, "en")
            rungs.append(Rung(key, name, "n-gram", equation, TAB_LINKS["n-gram"], vocabulary,
                              _ngram_scorer(model, smoothing), stored + continuation, "stored counts"))
    return rungs


def recurrent_rungs() -> list[Rung]:
    models = lstm.shipped_models()
    vocabulary = frozenset(models.vocab.tokens[1:])  # tokens[0] is <unk>
    return [Rung(key, describe(key, "en")[0], family, describe(key, "en")[1], TAB_LINKS[family], vocabulary,
                 _recurrent_scorer(model, models.vocab), sum(p.numel() for p in model.parameters()))
            for key, family, model in (("rnn", "RNN", models.rnn), ("lstm", "LSTM", models.lstm))]


_LOADING = threading.Lock()


def rungs() -> tuple[Rung, ...]:
    """Every rung, bottom to top, loaded once per process (a lock, so that users arriving together count once)."""
    with _LOADING:
        return _rungs()


def gpt_rungs() -> list[Rung]:
    from core.transformer import gpt  # the Transformer & GPT tab's module (loads the tokenisers it also serves)

    model, vocab, _ = gpt.shipped_char_gpt()
    assert model.config.n_positions == gpt_context()
    name, equation = describe("gpt", "en")
    return [Rung("gpt", name, "Transformer", equation, TAB_LINKS["Transformer"], frozenset(vocab.tokens[1:]),
                 _gpt_scorer(model.eval(), vocab), model.num_parameters())]


@lru_cache(maxsize=1)
def _rungs() -> tuple[Rung, ...]:
    return tuple(ngram_rungs() + recurrent_rungs() + gpt_rungs())


# ----------------------------------------------------------------------------------------------------------------
# Scoring


@dataclass
class RungScore:
    rung: Rung
    bits: np.ndarray  # (T-1,) surprisal −log2 P(c_i | c_<i) of characters 2..T
    unknown: list[tuple[int, str, float]]  # (position in text, character, its bits) for characters outside V
    scored_bytes: int = 0  # UTF-8 bytes of characters 2..T

    @property
    def total_bits(self) -> float:
        return float(self.bits.sum())

    @property
    def bits_per_char(self) -> float:
        return self.total_bits / len(self.bits)

    @property
    def bits_per_byte(self) -> float:
        """total bits / bytes = bits/char × chars/bytes (core.ladder.heldout.bits_per_byte)."""
        return self.total_bits / self.scored_bytes

    @property
    def unknown_chars(self) -> list[str]:
        return list(dict.fromkeys(ch for _, ch, _ in self.unknown))


@dataclass
class LadderScore:
    text: str  # the text as scored (whitespace runs made one space, NFC)
    scores: list[RungScore]

    @property
    def chars(self) -> list[str]:
        return list(self.text)


def prepare(text: str, max_chars: int = MAX_CHARS) -> str:
    """The learner's text as every rung reads it; a clear message when it cannot be scored."""
    text = lstm.clean_text(text or "").strip()
    if len(text) < 2:
        raise UserInputError("overview.err.too_short")
    if len(text) > max_chars:
        raise UserInputError("overview.err.too_long", chars=len(text), limit=max_chars)
    return text


def score_rung(rung: Rung, text: str) -> RungScore:
    bits = -rung.log2_probs(text)
    unknown = [(i, ch, float(bits[i - 1])) for i, ch in enumerate(text) if i and ch not in rung.vocabulary]
    return RungScore(rung, bits, unknown, len(text[1:].encode("utf-8")))


def score_text(text: str, ladder: tuple[Rung, ...] | None = None) -> LadderScore:
    """Per-character surprisal of the learner's text under every rung, aligned (row r, column i = character i+1)."""
    text = prepare(text)
    ladder = ladder or rungs()
    known = set().union(*(rung.vocabulary for rung in ladder))
    if all(ch not in known for ch in text if not ch.isspace()):
        # Every rung was trained on English (Moby-Dick): Chinese text, say, would be scored as one long guess.
        unknown = list(dict.fromkeys(ch for ch in text if not ch.isspace()))
        raise UserInputError("lstm.ladder_all_unknown", count=len(unknown), chars=lstm.name_tokens(unknown))
    return LadderScore(text, [score_rung(rung, text) for rung in ladder])


# ----------------------------------------------------------------------------------------------------------------
# The held-out ladder (computed by scripts/ladder_heldout.py, read from HELDOUT_PATH)


def held_out_bits(rung: Rung, text: str) -> tuple[float, int]:
    """(bits per character, characters scored) of a rung on a held-out text (one stream, contexts carried)."""
    bits = -rung.log2_probs(text)
    return float(bits.mean()), len(bits)
