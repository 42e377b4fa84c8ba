"""GPT, the left-to-right decoder (§12): a character GPT trained here, GPT-2 from the Hub, and GPT vs BERT.

What the tab shows, for any of the models:

    next token     p(x_{t+1} = w | x_{≤t}) = softmax(z / τ)_w over the tokens top-k and top-p keep (core/text/sampling.py)
    generation     draw x_{t+1} from that distribution, append it, repeat; the keys and values of earlier positions
                   are cached, so each step runs the network on one new token only
    attention      softmax(QKᵀ/√d_h + M) per layer and head: lower-triangular, because M hides the future
    GPT vs BERT    one blank: the causal LM reads only the text left of it; the masked LM reads both sides (§13.1)

The char-GPT is a 4-layer causal Transformer (core/nets/gpt.py) trained by scripts/train_gpt.py on exactly the
RNN & LSTM tab's Moby-Dick split and character vocabulary, so their held-out losses compare directly:

    held-out loss = mean over positions t of −ln p(x_{t+1} | x_{≤t})      (nats/char; ÷ ln 2 for bits/char)

computed on the same 64 consecutive 200-character windows as core/recurrent/lstm.py's ``evaluate``; every window is read
from its first character, as the recurrent models read it from a zero state. The context is 128 characters, so a
window's last 72 are read with a sliding window (at least 64 characters of context each).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import torch
import torch.nn.functional as F

from core.text import i18n, sampling
from core.loading import registry, resolve
from core.loading.checkpoints import CHAR_GPT_ID, CHINESE_GPT2_ID
from core.loading.device import get_device
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.limits import MAX_GENERATE, MAX_TEXT_CHARS
from core.recurrent.lstm import UNK, Vocab, clean_text, name_tokens
from core.nets.gpt import GPT, GPTConfig, from_state_dict, to_gpt2_state_dict
from core.loading.paths import ASSETS_DIR
from core.text.seeds import GPT_VS_BERT
from core.text.textio import normalize_text
from core.text.tokenizer import ByteBPETokenizer, CausalEncoding, WordPieceGPTTokenizer
from core.loading.weights import load_state_dict

GPT_ASSETS = ASSETS_DIR / "gpt"
MAX_TOKENS = 512  # text read at once, in tokens (also capped by each model's context)
MAX_MAP_TOKENS = 128  # attention maps beyond this are unreadable


def save_char_gpt(model: GPT, vocab: Vocab, info: dict, directory: Path = GPT_ASSETS) -> None:
    """Weights in GPT-2's layout (so transformers' GPT2LMHeadModel reads them too) + a GPT-2 config.json that also
    carries the character vocabulary and the training facts."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file(to_gpt2_state_dict(model), str(directory / "char_gpt.safetensors"))
    config = {"model_type": "gpt2", **model.config.to_dict(), "level": vocab.level, "tokens": vocab.tokens,
              "info": info}
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


@torch.inference_mode(False)  # loaded inside an inference-mode view, its weights could never get gradients (Why)
def load_char_gpt(directory: Path = GPT_ASSETS) -> tuple[GPT, Vocab, dict]:
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    model = from_state_dict(GPTConfig.from_dict(config), load_state_dict(directory / "char_gpt.safetensors"))
    return model.to(get_device()), Vocab(config["level"], config["tokens"]), config.get("info", {})


@lru_cache(maxsize=1)
def shipped_char_gpt() -> tuple[GPT, Vocab, dict]:
    """The char-GPT in assets/gpt/, loaded once per process."""
    return load_char_gpt(GPT_ASSETS)


def held_out_losses() -> dict[str, float]:
    """Held-out nats/char of the shipped char-GPT, RNN and LSTM: one split, one vocabulary, the same windows."""
    from core.recurrent.lstm import RNN_ASSETS

    rnn_info = json.loads((RNN_ASSETS / "config.json").read_text(encoding="utf-8"))["info"]
    return {"char-GPT": shipped_char_gpt()[2]["held_out"]["loss_nats"],
            "RNN": rnn_info["rnn"]["held_out_loss_nats"], "LSTM": rnn_info["lstm"]["held_out_loss_nats"]}


@torch.inference_mode()
def evaluate(model: GPT, data: torch.Tensor, seq_len: int = 200, max_windows: int = 64) -> float:
    """Mean next-character cross-entropy (nats) on the first max_windows consecutive windows of data: the windows
    of core/recurrent/lstm.py's evaluate. A window longer than the context is read in strides of half the context (the
    standard sliding-window evaluation), so every position keeps at least context/2 characters of its window."""
    n = min(max_windows, (len(data) - 1) // seq_len)
    device = model.lm_head.weight.device
    x = data[: n * seq_len].view(n, seq_len).to(device)  # (n, seq_len)
    y = data[1: n * seq_len + 1].view(n, seq_len).to(device)  # (n, seq_len)
    context = model.config.n_positions
    done = min(context, seq_len)
    parts = [model(x[:, :done]).logits]  # (n, done, V)
    while done < seq_len:
        end = min(done + context // 2, seq_len)
        parts.append(model(x[:, end - context:end]).logits[:, context - (end - done):])  # (n, end - done, V)
        done = end
    logits = torch.cat(parts, dim=1)  # (n, seq_len, V)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)).item()


# ----------------------------------------------------------------------------------------------------------------
# The char-GPT's tokens: characters (GPT-2's byte-level BPE and WordPiece wrappers live in core/text/tokenizer.py)


class CharTokenizer:
    """One id per character; characters outside the vocabulary (Moby-Dick's 76 + <unk>) become <unk>, as for the
    RNN and LSTM."""

    kind = "characters"

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self.banned = [0]  # never write <unk>

    def encode(self, text: str) -> CausalEncoding:
        ids, pieces, unknown = self.vocab.encode(text)
        return CausalEncoding(ids, [UNK if i == 0 else p for i, p in zip(ids, pieces)], unknown)

    def piece(self, token_id: int) -> str:
        return self.vocab.tokens[token_id]



# ----------------------------------------------------------------------------------------------------------------
# Loading: the shipped char-GPT, or a GPT-2 checkpoint (a Hub id or a local folder)


SHIPPED_SOURCE = "assets/gpt"  # LoadedGPT.source of the char-GPT this app ships


@dataclass
class LoadedGPT:
    model_id: str
    model: GPT
    tokenizer: CharTokenizer | ByteBPETokenizer | WordPieceGPTTokenizer
    source: str  # where the weights came from, for the badge
    info: dict = field(default_factory=dict)
    downloaded_bytes: int = 0  # a GPT-2 this server just downloaded: "downloaded now (N MB)"

    @property
    def context(self) -> int:
        return self.model.config.n_positions

    @property
    def badge(self) -> str:
        c = self.model.config
        return i18n.text("gpt.badge", model=self.model_id, layers=c.n_layer, heads=c.n_head, d_model=c.n_embd,
                         context=c.n_positions, parameters=f"{self.model.num_parameters():,}",
                         tokenizer=i18n.text("gpt.tokens_characters") if self.tokenizer.kind == CharTokenizer.kind
                         else self.tokenizer.kind,
                         source=i18n.text("gpt.source_shipped") if self.source == SHIPPED_SOURCE
                         else resolve.source_label(self.source, None, self.downloaded_bytes),
                         device=self.model.lm_head.weight.device.type)


def load(model_id: str | None = None) -> LoadedGPT:
    """The char-GPT (default), or a GPT-2 checkpoint by Hub id or local folder through the registry (loaded once).
    Raises ModelUnavailableError offline, naming the id and how to download it."""
    model_id = str(model_id or "").strip() or CHAR_GPT_ID
    if model_id == CHAR_GPT_ID:
        model, vocab, info = shipped_char_gpt()
        return LoadedGPT(model_id, model, CharTokenizer(vocab), SHIPPED_SOURCE, info)
    loaded = registry.load("causal-lm", model_id)
    return LoadedGPT(model_id, loaded.model, loaded.tokenizer, loaded.files.source,
                     downloaded_bytes=loaded.files.downloaded_bytes)


# ----------------------------------------------------------------------------------------------------------------
# What the tab computes


def encode_text(loaded: LoadedGPT, text: str) -> CausalEncoding:
    """Validate and encode the learner's text: not empty, within the context, not all unknown characters."""
    text = clean_text(text or "") if isinstance(loaded.tokenizer, CharTokenizer) else normalize_text(text or "")
    if not text.strip():
        raise UserInputError("gpt.empty_text")
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("gpt.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    encoded = loaded.tokenizer.encode(text)
    limit = min(loaded.context, MAX_TOKENS)
    if len(encoded.ids) > limit:
        raise UserInputError("gpt.too_many_tokens", tokens=len(encoded.ids), model=loaded.model_id, limit=limit,
                             context=loaded.context)
    if encoded.unknown and all(p in (UNK, "[UNK]") for p in encoded.pieces if p != "[CLS]"):
        key = "gpt.all_unknown_char_gpt" if isinstance(loaded.tokenizer, CharTokenizer) else "gpt.all_unknown"
        raise UserInputError(key, model=loaded.model_id, count=len(encoded.unknown),
                             chars=name_tokens(encoded.unknown), chinese=CHINESE_GPT2_ID)
    return encoded


def unknown_note(loaded: LoadedGPT, unknown: list[str]) -> str | None:
    if not unknown:
        return None
    unk = UNK if isinstance(loaded.tokenizer, CharTokenizer) else "[UNK]"
    return i18n.text("gpt.unknown_note", model=loaded.model_id, unk=unk, count=len(unknown),
                     chars=name_tokens(unknown))


@dataclass
class NextToken:
    model_id: str
    pieces: list[str]  # the input as the model reads it
    drawn: str  # the token one draw with the settings' seed gives
    draw: sampling.Draw  # that draw: its id, its renormalised probability and the cut it was drawn from
    note: str | None  # unknown characters, named

    @property
    def cut(self) -> sampling.Cut:
        return self.draw.cut


def banned_scores(loaded: LoadedGPT, logits: torch.Tensor) -> torch.Tensor:
    """The logits with the tokens this model never writes (<unk>, [CLS], …) at −∞.  # (V,)"""
    logits = logits.float().clone()
    if loaded.tokenizer.banned:
        logits[loaded.tokenizer.banned] = float("-inf")
    return logits


@torch.inference_mode()
def next_token(model_id: str | None, text: str, settings: sampling.Settings = sampling.Settings(),
               shown: int = 15) -> NextToken:
    """The next-token distribution after the text, the cut that the settings make, and one seeded draw from it."""
    sampler = sampling.Sampler(settings)
    loaded = load(model_id)
    encoded = encode_text(loaded, text)
    device = loaded.model.lm_head.weight.device
    logits = loaded.model(torch.tensor([encoded.ids], device=device)).logits[0, -1]  # (V,)
    draw = sampler.draw(banned_scores(loaded, logits), loaded.tokenizer.piece, shown)
    return NextToken(loaded.model_id, encoded.pieces, loaded.tokenizer.piece(draw.token), draw,
                     unknown_note(loaded, encoded.unknown))


@dataclass
class Step:
    token: str
    draw: sampling.Draw  # the drawn id, its renormalised probability, and the step's cut


@torch.inference_mode()
def generate_steps(model_id: str | None, prompt: str, length: int = 200,
                   settings: sampling.Settings = sampling.Settings(0.8), use_cache: bool = True,
                   shown: int = 5) -> Iterator[Step]:
    """Sample one token at a time (core/text/sampling.py, seeded), each step feeding only the new token and the KV
    cache. The draws are transformers' generate(do_sample=True) draws for the same seed and settings."""
    sampler = sampling.Sampler(settings)
    if not 1 <= length <= MAX_GENERATE:
        raise UserInputError("gpt.length_range", limit=MAX_GENERATE)
    loaded = load(model_id)
    ids = encode_text(loaded, prompt).ids
    model, device = loaded.model, loaded.model.lm_head.weight.device
    idx = torch.tensor([ids], device=device)  # (1, T)
    past = None
    for _ in range(length):
        if use_cache and past is not None and past[0][0].size(2) < model.config.n_positions:
            out = model(idx[:, -1:], past)
        else:  # first step, or the context is full: read the last n_positions tokens afresh
            out = model(idx[:, -model.config.n_positions:])
        past = out.past if use_cache else None
        draw = sampler.draw(banned_scores(loaded, out.logits[0, -1]), loaded.tokenizer.piece, shown)
        yield Step(loaded.tokenizer.piece(draw.token), draw)
        idx = torch.cat([idx, torch.tensor([[draw.token]], device=device)], dim=1)  # (1, T + 1)


def generate(model_id: str | None, prompt: str, length: int = 200,
             settings: sampling.Settings = sampling.Settings(0.8), use_cache: bool = True) -> str:
    """The generated continuation as text (the prompt not included)."""
    return "".join(step.token for step in generate_steps(model_id, prompt, length, settings, use_cache))


@dataclass
class AttentionMaps:
    model_id: str
    pieces: list[str]
    maps: torch.Tensor  # (n_layer, n_head, T, T): row t = how position t spreads its attention over positions ≤ t
    note: str | None


@torch.inference_mode()
def attention_maps(model_id: str | None, text: str) -> AttentionMaps:
    loaded = load(model_id)
    encoded = encode_text(loaded, text)
    if len(encoded.ids) > MAX_MAP_TOKENS:
        raise UserInputError("gpt.map_too_long", tokens=len(encoded.ids), limit=MAX_MAP_TOKENS)
    out = loaded.model(torch.tensor([encoded.ids], device=loaded.model.lm_head.weight.device))
    maps = torch.stack([a[0] for a in out.attentions]).float().cpu()  # (L, nh, T, T)
    return AttentionMaps(loaded.model_id, encoded.pieces, maps, unknown_note(loaded, encoded.unknown))


# ----------------------------------------------------------------------------------------------------------------
# GPT vs BERT on one blank (§12 vs §13.1)

PRESETS = GPT_VS_BERT  # the seed's example and its English twin: (sentence, causal LM online, masked LM)


@dataclass
class GptVsBert:
    text: str
    left: str  # what the causal LM reads: everything before the blank
    gpt: NextToken | None
    gpt_note: str | None  # why the causal side fell back to the char-GPT, or could not run
    bert: list[tuple[str, float]] | None  # the masked LM's top tokens at the blank
    bert_model: str
    bert_note: str | None  # which checkpoint the masked side needs, and how to fetch it
    bert_error: ModelUnavailableError | None = None  # why the masked side could not run (the UI decides how to say it)


def split_at_blank(text: str) -> tuple[str, str]:
    """(left of the blank, the text with the blank written as [MASK]); exactly one blank ("__" or [MASK])."""
    from core.mlm.mlm import BLANK

    text = normalize_text(text or "").strip()
    if not text:
        raise UserInputError("gpt.blank_empty")
    if len(text) > MAX_TEXT_CHARS:
        raise UserInputError("gpt.too_long", chars=f"{len(text):,}", limit=f"{MAX_TEXT_CHARS:,}")
    blanks = list(BLANK.finditer(text))
    if len(blanks) != 1:
        raise UserInputError("gpt.one_blank", count=len(blanks))
    return text[:blanks[0].start()], BLANK.sub("[MASK]", text)


def gpt_vs_bert(text: str, gpt_id: str | None = None, bert_id: str | None = "bert-base-uncased",
                top_k: int = 10) -> GptVsBert:
    """The causal LM's next-token distribution from the left context, beside the masked LM's at the blank.

    Offline, a GPT-2 id falls back to the char-GPT (its next character) and the BERT side says what to fetch.
    ``bert_id`` None: the causal side only (the char-BERT's side is core/mlm/char_compare.py's)."""
    from core.mlm import mlm  # here: the masked LM imports torch-backed code only the GPT vs BERT view needs

    left, masked = split_at_blank(text)
    if not left.strip():
        raise UserInputError("gpt.blank_at_start")
    gpt, gpt_note, gpt_id = None, None, str(gpt_id or "").strip() or CHAR_GPT_ID
    try:
        loaded = load(gpt_id)
    except ModelUnavailableError as exc:
        gpt_note, loaded = i18n.text("gpt.fallback_char_gpt", reason=str(exc)), load(CHAR_GPT_ID)
    # A character model continues after the space; a BPE model's next token carries its own leading space.
    reads = left if isinstance(loaded.tokenizer, CharTokenizer) else left.rstrip()
    try:
        gpt = next_token(loaded.model_id, reads, shown=top_k)
    except UserInputError as exc:
        gpt_note = " ".join(filter(None, [gpt_note, str(exc)]))
    bert, bert_note, bert_error = None, None, None
    if bert_id is None:
        return GptVsBert(masked, reads, gpt, gpt_note, bert, "", bert_note, bert_error)
    try:
        result = mlm.fill_mask(registry.load("mlm", bert_id), masked, top_k)
        bert = [(c.text, c.probability) for c in result.blanks[0].candidates]
    except ModelUnavailableError as exc:
        bert_note, bert_error = i18n.text("gpt.bert_needs", model=bert_id, reason=str(exc)), exc
    return GptVsBert(masked, reads, gpt, gpt_note, bert, bert_id, bert_note, bert_error)
