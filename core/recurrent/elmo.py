"""ELMo (§7): three vectors per word from a two-layer bidirectional LM, and the task's weighted sum of them.

    h_k^(0) = [x_k; x_k]   the word's own vector, read from its characters: the same in every sentence
    h_k^(1), h_k^(2)       [forward LSTM state; backward LSTM state] after layer 1 and layer 2: depend on the sentence
    ELMo_k = γ · Σ_j s_j h_k^(j),   s = softmax(w_0, w_1, w_2)

A downstream task learns w and γ; the tab lets the learner set them with sliders. s mixes the layers, γ only scales
the result (so cosine similarities depend on s alone). The model (core/nets/elmo.py) is trained by
scripts/train_elmo.py on Moby-Dick, words lower-cased, and shipped in assets/elmo/ with its held-out losses.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from core.loading.device import get_device
from core.text.errors import UserInputError
from core.nets.elmo import ElmoBiLM
from core.loading.paths import ASSETS_DIR
from core.text.textio import normalize_text
from core.text.tokenizer import word_tokens

ELMO_ASSETS = ASSETS_DIR / "elmo"
LAYER_NAMES = ("word", "layer 1", "layer 2")
PAD, UNK_CHAR, BOW, EOW = "<pad>", "<unk>", "<w>", "</w>"  # character ids 0..3
UNK = "<unk>"  # word id 0 in the softmax vocabulary
MAX_WORD_CHARS = 16  # longer words are cut (the CNN sees their first 16 characters)
MAX_WORDS = 60  # words per sentence the view reads


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks, as the model was trained."""
    return word_tokens(re.sub(r"\s+", " ", normalize_text(text or "")), lowercase=True)


@dataclass
class ElmoVocab:
    chars: list[str]  # character id → character; ids 0..3 are PAD, UNK_CHAR, BOW, EOW
    words: list[str]  # softmax id → word; 0 is UNK
    char_index: dict[str, int] = field(init=False, repr=False)
    word_index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.char_index = {c: i for i, c in enumerate(self.chars)}
        self.word_index = {w: i for i, w in enumerate(self.words)}

    @classmethod
    def build(cls, tokens: list[str], min_word_count: int = 5, min_char_count: int = 20) -> "ElmoVocab":
        word_counts = Counter(tokens)
        char_counts = Counter(c for w, n in word_counts.items() for c in w for _ in range(n))
        chars = sorted(c for c, n in char_counts.items() if n >= min_char_count)
        kept = sorted(w for w, n in word_counts.items() if n >= min_word_count)
        return cls([PAD, UNK_CHAR, BOW, EOW] + chars, [UNK] + kept)

    def char_ids(self, word: str) -> list[int]:
        """<w> c_1 … c_16 </w>, padded to MAX_WORD_CHARS + 2."""
        ids = [2] + [self.char_index.get(c, 1) for c in word[:MAX_WORD_CHARS]] + [3]
        return ids + [0] * (MAX_WORD_CHARS + 2 - len(ids))

    def encode_chars(self, tokens: list[str]) -> torch.Tensor:
        return torch.tensor([self.char_ids(w) for w in tokens], dtype=torch.long)  # (T, L)

    def encode_words(self, tokens: list[str]) -> torch.Tensor:
        return torch.tensor([self.word_index.get(w, 0) for w in tokens], dtype=torch.long)  # (T,)


# ----------------------------------------------------------------------------------------------------------------
# Checkpoint: safetensors weights + one JSON with the vocabularies, sizes and training facts


def save_model(model: ElmoBiLM, vocab: ElmoVocab, info: dict, directory: Path) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
              str(directory / "elmo.safetensors"))
    config = {"model": model.config, "chars": vocab.chars, "words": vocab.words, "info": info}
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


@torch.inference_mode(False)  # loaded inside an inference-mode view, its weights could never get gradients (Why)
def load_model(directory: Path = ELMO_ASSETS) -> tuple[ElmoBiLM, ElmoVocab, dict]:
    """The model, loaded strictly (every checkpoint key used, none missing), in eval mode."""
    from core.loading.weights import load_state_dict

    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    model = ElmoBiLM(**config["model"])
    model.load_state_dict(load_state_dict(directory / "elmo.safetensors"), strict=True)
    return model.to(get_device()).eval(), ElmoVocab(config["chars"], config["words"]), config.get("info", {})


@lru_cache(maxsize=1)
def shipped_model() -> tuple[ElmoBiLM, ElmoVocab, dict]:
    """assets/elmo/, loaded once per process."""
    return load_model(ELMO_ASSETS)


# ----------------------------------------------------------------------------------------------------------------
# The view: a word's three vectors in two sentences, and the weighted sum


def scalar_mix(layers: torch.Tensor, weights: list[float], gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(γ · Σ_j s_j h^(j), s) with s = softmax(weights); layers is (J, ..., 2D)."""
    s = torch.softmax(torch.tensor(weights, dtype=layers.dtype, device=layers.device), dim=0)  # (J,)
    return gamma * torch.einsum("j,j...->...", s, layers), s


@torch.inference_mode()
def word_layers(model: ElmoBiLM, vocab: ElmoVocab, sentence: str, word: str) -> tuple[torch.Tensor, list[str], int]:
    """(the 3 layer vectors (3, 2D) of the first occurrence of word in sentence, the sentence's words, its index)."""
    tokens, target = words(sentence), words(word)
    if not target:
        raise UserInputError("elmo.no_word")
    if len(target) > 1:
        raise UserInputError("elmo.one_word", word=word.strip())
    if not tokens:
        raise UserInputError("elmo.empty_sentence")
    if len(tokens) > MAX_WORDS:
        raise UserInputError("elmo.too_long", words=len(tokens), limit=MAX_WORDS)
    if target[0] not in tokens:
        raise UserInputError("elmo.word_missing", word=target[0], sentence=sentence.strip())
    k = tokens.index(target[0])
    out = model(vocab.encode_chars(tokens)[None].to(get_device()))
    return torch.stack([h[0, k] for h in out.layers]).cpu(), tokens, k  # (3, 2D)


@dataclass
class LayerComparison:
    word: str
    sentences: tuple[list[str], list[str]]  # the two sentences' words
    positions: tuple[int, int]  # the word's index in each
    layers: tuple[torch.Tensor, torch.Tensor]  # (3, 2D) per sentence
    weights: list[float]  # s_j
    gamma: float
    mixed: tuple[torch.Tensor, torch.Tensor]  # γ Σ s_j h^(j) per sentence, (2D,)
    cosines: list[float]  # per layer, then the weighted sum: cos(word in sentence 1, word in sentence 2)
    norms: list[tuple[float, float]]  # ‖·‖ per layer, then the weighted sum, in sentence 1 and 2


def compare_layers(model: ElmoBiLM, vocab: ElmoVocab, word: str, first: str, second: str,
                   weights: list[float], gamma: float) -> LayerComparison:
    if len(weights) != len(LAYER_NAMES):
        raise ValueError(f"one weight per layer ({len(LAYER_NAMES)}), not {len(weights)}")
    if not all(math.isfinite(w) for w in weights) or not math.isfinite(gamma):
        raise UserInputError("elmo.bad_weights")
    (a, tok_a, k_a), (b, tok_b, k_b) = (word_layers(model, vocab, s, word) for s in (first, second))
    (mix_a, s), (mix_b, _) = scalar_mix(a, weights, gamma), scalar_mix(b, weights, gamma)
    rows_a, rows_b = list(a) + [mix_a], list(b) + [mix_b]
    return LayerComparison(
        word=words(word)[0], sentences=(tok_a, tok_b), positions=(k_a, k_b), layers=(a, b), weights=s.tolist(),
        gamma=gamma, mixed=(mix_a, mix_b),
        cosines=[float(F.cosine_similarity(x, y, dim=0)) for x, y in zip(rows_a, rows_b)],
        norms=[(float(x.norm()), float(y.norm())) for x, y in zip(rows_a, rows_b)],
    )


# ----------------------------------------------------------------------------------------------------------------
# Training (scripts/train_elmo.py)


def corpus_tensors(tokens: list[str], vocab: ElmoVocab) -> tuple[torch.Tensor, torch.Tensor]:
    """(character ids (N, L), softmax word ids (N,)) of a token stream; each word type is encoded once."""
    types = sorted(set(tokens))
    type_index = {w: i for i, w in enumerate(types)}
    type_ids = torch.tensor([type_index[w] for w in tokens])  # (N,)
    return vocab.encode_chars(types)[type_ids], vocab.encode_words(types)[type_ids]


def bilm_loss(model: ElmoBiLM, chars: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(forward, backward) mean cross-entropy: position k predicts word k+1 (forward) and word k−1 (backward)."""
    out = model(chars)  # chars (B, T, L), targets (B, T)
    V = out.forward_logits.shape[-1]
    fwd = F.cross_entropy(out.forward_logits[:, :-1].reshape(-1, V), targets[:, 1:].reshape(-1))
    bwd = F.cross_entropy(out.backward_logits[:, 1:].reshape(-1, V), targets[:, :-1].reshape(-1))
    return fwd, bwd


def train_steps(model: ElmoBiLM, chars: torch.Tensor, targets: torch.Tensor, *, steps: int, batch_size: int = 32,
                seq_len: int = 35, lr: float = 1e-3, seed: int = 0, clip: float = 1.0
                ) -> Iterator[tuple[int, float, float]]:
    """Adam on random windows, cosine decay to lr/10; yields (step, forward loss, backward loss).

    The softmax bias starts at the log unigram frequencies. Started at zero, the quickest way down the loss was to
    push every LSTM state to a constant ±1 vector that spells out word frequencies through Θ_s: the gates saturate,
    their gradients vanish, and the model stayed at the unigram loss (5.67 nats) for 1,200 steps."""
    counts = torch.bincount(targets, minlength=model.head.bias.numel()).float() + 1  # add-one: no log 0
    with torch.no_grad():
        model.head.bias.copy_(counts.div(counts.sum()).log())
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    offsets = torch.arange(seq_len)
    device = model.head.weight.device
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * (0.1 + 0.45 * (1 + math.cos(math.pi * step / steps)))
        idx = torch.randint(0, len(targets) - seq_len, (batch_size,), generator=gen)[:, None] + offsets  # (B, T)
        fwd, bwd = bilm_loss(model, chars[idx].to(device), targets[idx].to(device))
        opt.zero_grad(set_to_none=True)
        ((fwd + bwd) / 2).backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        yield step + 1, fwd.item(), bwd.item()
    model.eval()


@torch.inference_mode()
def evaluate(model: ElmoBiLM, chars: torch.Tensor, targets: torch.Tensor, seq_len: int = 100,
             max_windows: int = 64) -> tuple[float, float]:
    """(forward, backward) mean cross-entropy in nats per word on consecutive held-out windows."""
    model.eval()
    n = min(max_windows, len(targets) // seq_len)
    device = model.head.weight.device
    fwd, bwd = bilm_loss(model, chars[: n * seq_len].view(n, seq_len, -1).to(device),
                         targets[: n * seq_len].view(n, seq_len).to(device))
    return fwd.item(), bwd.item()


def split_tokens(tokens: list[str], held_out: float = 0.05) -> tuple[list[str], list[str]]:
    cut = int(len(tokens) * (1 - held_out))
    return tokens[:cut], tokens[cut:]

