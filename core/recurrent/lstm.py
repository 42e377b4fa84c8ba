"""What the RNN & LSTM tab computes (§6, §7): vocabularies, shipped checkpoints, training, and the views' data.

The models themselves (RNNCell, LSTMCell, RecurrentLM and their equations) are nn.Modules in core/nets/recurrent.py.
Here: characters (default) or words as tokens, the shipped Moby-Dick checkpoints in assets/rnn/, truncated-BPTT
training, the Gates and vanishing-gradient views (∂loss_T/∂h_t measured with autograd, §6.2), generation, and ELMo
(§7), shown with a forward and a backward character LSTM whose states are concatenated per word.
"""
from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from core.text import i18n, sampling
from core.loading.device import get_device, one_cpu_thread
from core.text.errors import UserInputError
from core.text.limits import MAX_GENERATE
from core.nets.recurrent import RecurrentLM
from core.loading.paths import ASSETS_DIR
from core.text.textio import normalize_text
from core.text.tokenizer import word_tokens

RNN_ASSETS = ASSETS_DIR / "rnn"
UNK = "<unk>"
MAX_PROMPT_CHARS = 300  # text the tab analyses (heatmaps get unreadable beyond a few hundred columns)


# ----------------------------------------------------------------------------------------------------------------
# Vocabulary: characters (default) or lower-cased words


def clean_text(text: str) -> str:
    """NFC, no control characters, every whitespace run one space: what the models were trained on.
    A trailing space is kept: "Call me " must be continued after the space."""
    return re.sub(r"\s+", " ", normalize_text(text))


@dataclass
class Vocab:
    level: str  # "char" or "word"
    tokens: list[str]  # index → token; tokens[0] is UNK
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def build(cls, text: str, level: str = "char", min_count: int = 10, max_size: int = 3000) -> "Vocab":
        """Tokens seen at least min_count times (at most max_size); rarer ones become UNK so UNK gets trained."""
        counts = Counter(split_tokens(clean_text(text), level))
        kept = [tok for tok, n in counts.most_common(max_size - 1) if n >= min_count]
        return cls(level, [UNK] + sorted(kept))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> tuple[list[int], list[str], list[str]]:
        """(ids, tokens, unknown tokens) of a text; unknown tokens map to UNK."""
        pieces = split_tokens(clean_text(text), self.level)
        ids = [self.index.get(tok, 0) for tok in pieces]
        unknown = list(dict.fromkeys(tok for tok, i in zip(pieces, ids) if i == 0))
        return ids, pieces, unknown

    def decode(self, ids: list[int]) -> str:
        sep = "" if self.level == "char" else " "
        return sep.join(self.tokens[i] for i in ids)


def split_tokens(text: str, level: str) -> list[str]:
    if level == "char":
        return list(text)
    if level == "word":
        return word_tokens(text, lowercase=True)
    raise ValueError(f"level must be 'char' or 'word', not {level!r}")


# ----------------------------------------------------------------------------------------------------------------
# Checkpoints: safetensors weights + one JSON with vocabulary and sizes


@dataclass
class ModelSet:
    """The models one tab session uses: an RNN and an LSTM on one vocabulary (+ the ELMo backward LSTM if shipped)."""

    vocab: Vocab
    rnn: RecurrentLM
    lstm: RecurrentLM
    lstm_backward: RecurrentLM | None = None
    info: dict = field(default_factory=dict)  # training facts for the badge: corpus, steps, held-out loss


def save_models(models: ModelSet, directory: Path) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    config = {"level": models.vocab.level, "tokens": models.vocab.tokens, "info": models.info, "models": {}}
    for name in ("rnn", "lstm", "lstm_backward"):
        model = getattr(models, name)
        if model is not None:
            state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
            save_file(state, str(directory / f"{name}.safetensors"))
            config["models"][name] = model.config
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


@torch.inference_mode(False)  # loaded inside an inference-mode view, its weights could never get gradients (Why)
def load_models(directory: Path = RNN_ASSETS) -> ModelSet:
    from core.loading.weights import load_state_dict

    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    models = {}
    for name, cfg in config["models"].items():
        model = RecurrentLM(cfg["kind"], cfg["vocab_size"], cfg["embed_size"], cfg["hidden_size"])
        model.load_state_dict(load_state_dict(directory / f"{name}.safetensors"))
        models[name] = model.to(get_device()).eval()
    return ModelSet(Vocab(config["level"], config["tokens"]), info=config.get("info", {}), **models)


@lru_cache(maxsize=1)
def shipped_models() -> ModelSet:
    """The pretrained character models in assets/rnn/, loaded once per process (lru_cache holds a lock)."""
    return load_models(RNN_ASSETS)


# ----------------------------------------------------------------------------------------------------------------
# Training


def corpus_ids(text: str, vocab: Vocab) -> torch.Tensor:
    return torch.tensor(vocab.encode(text)[0], dtype=torch.long)  # (N,)


def split_text(text: str, held_out: float = 0.05) -> tuple[str, str]:
    """(training text, held-out text): the last 5% of the cleaned corpus is never trained on."""
    text = clean_text(text).strip()
    cut = int(len(text) * (1 - held_out))
    return text[:cut].strip(), text[cut:].strip()


def train_steps(model: RecurrentLM, data: torch.Tensor, *, steps: int, batch_size: int = 32, seq_len: int = 100,
                lr: float = 3e-3, seed: int = 0, clip: float = 1.0) -> Iterator[tuple[int, float]]:
    """Adam on random windows of the corpus, truncated BPTT over seq_len, cosine decay to lr/10; yields (step, loss)."""
    if len(data) < seq_len + 2:
        raise UserInputError("lstm.corpus_too_small", tokens=len(data), needed=seq_len + 2)
    device = model.head.weight.device
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    offsets = torch.arange(seq_len + 1)
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr * (0.1 + 0.45 * (1 + math.cos(math.pi * step / steps)))
        starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=gen)
        chunk = data[starts[:, None] + offsets].to(device)  # (B, T+1)
        logits = model(chunk[:, :-1]).logits  # (B, T, V)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), chunk[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), clip)  # RNN gradients can also explode (§6.2)
        opt.step()
        yield step + 1, loss.item()
    model.eval()


@torch.inference_mode()
def evaluate(model: RecurrentLM, data: torch.Tensor, seq_len: int = 200, max_windows: int = 64) -> float:
    """Mean next-token cross-entropy (nats) on consecutive windows of held-out data."""
    n = min(max_windows, (len(data) - 1) // seq_len)
    device = model.head.weight.device
    x = data[: n * seq_len].view(n, seq_len).to(device)
    y = data[1: n * seq_len + 1].view(n, seq_len).to(device)
    logits = model(x).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()


# ----------------------------------------------------------------------------------------------------------------
# What the tab shows


def encode_prompt(vocab: Vocab, text: str, max_chars: int = MAX_PROMPT_CHARS) -> tuple[list[int], list[str], list[str]]:
    """Validate and encode the learner's text: (ids, tokens, unknown tokens)."""
    text = clean_text(text or "")
    if not text.strip():
        raise UserInputError("lstm.empty_text")
    if len(text) > max_chars:
        raise UserInputError("lstm.too_long", chars=len(text), limit=max_chars)
    ids, tokens, unknown = vocab.encode(text)
    if all(i == 0 for i, token in zip(ids, tokens) if not token.isspace()):
        # Nothing the models know (Chinese text, say): every step would read <unk>, and the result mean nothing.
        raise UserInputError("lstm.all_unknown", level=i18n.text(f"lstm.level_{vocab.level}"), count=len(unknown),
                             chars=name_tokens(unknown))
    return ids, tokens, unknown


def name_tokens(tokens: list[str], limit: int = 20) -> str:
    """Out-of-vocabulary tokens as the messages name them: '今', '天', … (at most ``limit``, then how many more)."""
    shown = ", ".join(f"'{token}'" for token in tokens[:limit])
    return shown + (f" … (+{len(tokens) - limit})" if len(tokens) > limit else "")


@dataclass
class Inspection:
    """Per-position view of one text through both models."""

    tokens: list[str]
    unknown: list[str]
    lstm_gates: dict[str, list[list[float]]]  # name in GATES → (T, H)
    rnn_hidden: list[list[float]]  # (T, H)
    next_token: dict[str, list[list[tuple[str, float]]]]  # "rnn"/"lstm" → per position, top-k (token, prob)
    actual_prob: dict[str, list[float]]  # "rnn"/"lstm" → probability given to the token that really came next


@torch.inference_mode()
def inspect(models: ModelSet, text: str, top_k: int = 3) -> Inspection:
    ids, tokens, unknown = encode_prompt(models.vocab, text)
    x = torch.tensor([ids], device=get_device())  # (1, T)
    with one_cpu_thread(x.device):  # 300 small steps: a second thread would only wait at a barrier each step
        traces = {"rnn": models.rnn.forward_fused(x), "lstm": models.lstm.forward_fused(x)}
    next_token, actual = {}, {}
    for name, trace in traces.items():
        probs = trace.logits[0].softmax(-1)  # (T, V)
        p, idx = probs.topk(top_k, dim=-1)
        next_token[name] = [[(models.vocab.tokens[j], float(q)) for q, j in zip(pr, ix)]
                            for pr, ix in zip(p.tolist(), idx.tolist())]
        actual[name] = probs[torch.arange(len(ids) - 1), x[0, 1:]].tolist()
    return Inspection(
        tokens=tokens, unknown=unknown,
        lstm_gates={name: g[0].tolist() for name, g in traces["lstm"].gates.items()},
        rnn_hidden=traces["rnn"].hidden[0].tolist(),
        next_token=next_token, actual_prob=actual,
    )


def gradient_norms(model: RecurrentLM, windows: torch.Tensor) -> list[float]:
    """‖∂loss_T/∂h_t‖ against the distance T−t (index 0 is t = T), averaged over windows (B, T+1).

    loss_T is the cross-entropy of the prediction made at the last step only, so every gradient reaching h_t has
    travelled T−t steps back through the recurrence: the product of Jacobians of §6.2."""
    windows = windows.to(model.head.weight.device)
    trace = model(windows[:, :-1])
    loss = F.cross_entropy(trace.logits[:, -1], windows[:, -1])
    grads = torch.autograd.grad(loss, trace.hs)  # T × (B, H)
    norms = torch.stack([g.norm(dim=-1) for g in grads], dim=1)  # (B, T)
    return norms.mean(0).flip(0).tolist()


@lru_cache(maxsize=1)
def held_out_text() -> str:
    """The held-out end of Moby-Dick: real text the shipped models never trained on."""
    from core.text.corpora import load_corpus

    return split_text(load_corpus("moby_dick"))[1]


def corpus_windows(vocab: Vocab, length: int, count: int = 16, seed: int = 0) -> torch.Tensor:
    """count random windows of length+1 tokens from the held-out text."""
    held = corpus_ids(held_out_text(), vocab)
    starts = torch.randint(0, len(held) - length - 1, (count,), generator=torch.Generator().manual_seed(seed))
    return held[starts[:, None] + torch.arange(length + 1)]  # (count, length+1)


@torch.inference_mode()
def forget_products(model: RecurrentLM, ids: list[int]) -> list[list[float]]:
    """∏_{k=t+1..T} f_k per unit, against the distance T−t: how much of C_t survives in C_T (∂C_T/∂C_t on the
    direct cell path, §6.4). Returns (T, H) with row 0 = distance 0 (product over no steps = 1)."""
    forget = model(torch.tensor([ids], device=get_device())).gates["forget"][0]  # (T, H)
    flipped = forget.flip(0)  # row d is f_{T-d}
    prods = torch.cumprod(flipped[:-1], dim=0)  # row d-1 = f_T ⋯ f_{T-d+1}
    return torch.cat([torch.ones_like(forget[:1]), prods]).tolist()


@torch.inference_mode()
def generate_steps(model: RecurrentLM, vocab: Vocab, prompt: str, length: int = 200,
                   settings: sampling.Settings = sampling.Settings(0.8), shown: int = 5) -> list[sampling.Draw]:
    """Read the prompt, then draw length tokens through core/text/sampling.py (temperature, top-k, top-p, seeded for
    repeatability; <unk> is never drawn). Each draw carries its cut, for the tab's next-token figure."""
    sampler = sampling.Sampler(settings)
    if not 1 <= length <= MAX_GENERATE:
        raise UserInputError("lstm.length_range", limit=MAX_GENERATE)
    ids = encode_prompt(vocab, prompt)[0]
    device = model.head.weight.device
    trace = model(torch.tensor([ids], device=device))
    logits, state, draws = trace.logits[0, -1], trace.state, []
    for _ in range(length):
        logits = logits.float().clone()  # (V,)
        logits[0] = -math.inf  # never write <unk>
        draws.append(sampler.draw(logits, vocab.tokens.__getitem__, shown))
        trace = model(torch.tensor([[draws[-1].token]], device=device), state)
        logits, state = trace.logits[0, -1], trace.state
    return draws


def generate(model: RecurrentLM, vocab: Vocab, prompt: str, length: int = 200,
             settings: sampling.Settings = sampling.Settings(0.8)) -> str:
    """The generated continuation as text (the prompt not included)."""
    return vocab.decode([draw.token for draw in generate_steps(model, vocab, prompt, length, settings)])


# ----------------------------------------------------------------------------------------------------------------
# ELMo (§7): forward + backward LSTM, states concatenated per word


@dataclass
class ContextVector:
    """One word in one sentence. ELMo-style: forward ⊕ backward states; ``static`` is the same for the word read
    alone (no context), so ``context`` = both − static is what the sentence added."""

    sentence: str
    span: tuple[int, int]  # character span of the word in the cleaned sentence
    forward: torch.Tensor  # (H,) forward LSTM after reading up to the word's last character
    backward: torch.Tensor  # (H,) backward LSTM after reading from the end back to the word's first character
    static: torch.Tensor  # (2H,) forward ⊕ backward state for the word read alone

    @property
    def both(self) -> torch.Tensor:
        return torch.cat([self.forward, self.backward])  # (2H,)

    @property
    def context(self) -> torch.Tensor:
        return self.both - self.static  # (2H,)


@torch.inference_mode()
def context_vector(models: ModelSet, sentence: str, word: str) -> ContextVector:
    """The vectors of the first whole-word occurrence of word in sentence (case-insensitive)."""
    if models.lstm_backward is None:
        raise UserInputError("lstm.no_backward")
    sentence, word = clean_text(sentence or "").strip(), clean_text(word or "").strip()
    if not word:
        raise UserInputError("lstm.no_word")
    ids, _, _ = encode_prompt(models.vocab, sentence)
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, flags=re.IGNORECASE)
    if match is None:
        raise UserInputError("lstm.word_not_found", word=word, sentence=sentence)
    start, end = match.span()
    x = torch.tensor([ids], device=get_device())  # (1, T)
    fwd = models.lstm(x).gates["hidden"][0]  # (T, H): position t has read sentence[:t+1]
    bwd = models.lstm_backward(x.flip(1)).gates["hidden"][0].flip(0)  # (T, H): position t has read sentence[t:]
    alone = x[:, start:end]  # (1, len(word)): the word without its sentence
    static = torch.cat([models.lstm(alone).state[0][0], models.lstm_backward(alone.flip(1)).state[0][0]])
    return ContextVector(sentence, (start, end), fwd[end - 1].cpu(), bwd[start].cpu(), static.cpu())


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(F.cosine_similarity(a, b, dim=0))


# ----------------------------------------------------------------------------------------------------------------
# Retraining (the script and the tab's "train" button)


def untrained_pair(vocab: Vocab, seed: int = 0) -> ModelSet:
    """A fresh RNN and LSTM, seeded: the very weights train_pair starts from (the tab shows them before training)."""
    torch.manual_seed(seed)
    models = ModelSet(vocab, RecurrentLM("rnn", len(vocab)).to(get_device()),
                      RecurrentLM("lstm", len(vocab)).to(get_device()))
    models.rnn.eval(), models.lstm.eval()
    return models


def train_pair(vocab: Vocab, text: str, *, steps: int, seconds: float | None = None, seed: int = 0,
               **kwargs) -> Iterator[tuple[int, float, float, ModelSet]]:
    """Train a fresh RNN and LSTM side by side on the same batches; yields (step, rnn loss, lstm loss, models).

    Stops after steps, or earlier once seconds have passed (the tab keeps a run within its time budget)."""
    data = corpus_ids(text, vocab)
    models = untrained_pair(vocab, seed)
    runs = zip(train_steps(models.rnn, data, steps=steps, seed=seed, **kwargs),
               train_steps(models.lstm, data, steps=steps, seed=seed, **kwargs))
    began = time.monotonic()
    for (step, rnn_loss), (_, lstm_loss) in runs:
        yield step, rnn_loss, lstm_loss, models
        if seconds is not None and time.monotonic() - began > seconds:
            break
    models.rnn.eval(), models.lstm.eval()
