"""Translating with the encoder–decoder Transformer trained here (core/nets/seq2seq.py, §10–§11): one word at a time.

    encode     m = Encoder(source)                            once; every decoder layer reads K_e, V_e from m
    step t     P(y_t | y_<t, source) = softmax(Decoder(y_<t, m) W_out + b_out)[last row]
    free       y_t = argmax P (greedy), or drawn with the app's sampling settings; fed back as the next input
    teacher    the true y_<t is fed instead of the model's own words (how it was trained), one pass for all t

Tokens: Chinese is read character by character (我 爱 中 国, ，), French as lower-cased words with the elisions j' l'
n' d' split off (j' aime), matched to the vocabulary without regard to case or accents (etudiant = étudiant). The
English output is words. Ids: 0 <pad>, 1 <unk>, 2 <s>, 3 </s> on both sides.

Held-out figures (``evaluate``): exact match is the share of sentences whose whole greedy output equals the reference;
token accuracy is Σ_sentences #{i : output_i = reference_i} / Σ_sentences max(len output, len reference), so a word
too many or too few costs a position.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import torch

from core.nets.seq2seq import Seq2SeqConfig, Transformer, from_state_dict
from core.loading.paths import ASSETS_DIR
from core.text.sampling import Sampler, Settings

SEQ2SEQ_ASSETS = ASSETS_DIR / "seq2seq"
SPECIALS = ["<pad>", "<unk>", "<s>", "</s>"]
PAD, UNK, BOS, EOS = range(4)
MAX_SOURCE_TOKENS = 60
MAX_OUTPUT_WORDS = 40
SEED_SENTENCES = {"我爱中国": "I love China", "机器学习": "machine learning", "je suis étudiant": "I am a student"}

_CJK = re.compile(r"[\u3400-\u9fff]")
_ELISION = re.compile(r"^([jlnd])['’](.+)$", re.IGNORECASE)


class SourceError(ValueError):
    """A source the model cannot read: ``kind`` is "empty", "too_long" or "unknown"; ``fields`` fill the UI's
    message (its translation keys live with the view)."""

    def __init__(self, kind: str, **fields):
        super().__init__(f"{kind}: {fields}")
        self.kind, self.fields = kind, fields


def fold(token: str) -> str:
    """Lower case, accents off: how a typed word is matched to the vocabulary."""
    return "".join(c for c in unicodedata.normalize("NFD", token.lower()) if unicodedata.category(c) != "Mn")


def split_source(text: str) -> list[str]:
    """Chinese → characters (",", "，" → "，"); anything else → words, j'/l'/n'/d' split off."""
    text = unicodedata.normalize("NFC", text.strip())
    if _CJK.search(text):
        return ["，" if ch in ",，、" else ch for ch in text if not ch.isspace() and ch not in "。.!?！？"]
    tokens = []
    for word in re.findall(r"[^\s,.!?;:]+", text.replace("’", "'")):
        match = _ELISION.match(word)
        tokens += [match.group(1).lower() + "'", match.group(2)] if match else [word]
    return tokens


@dataclass
class Vocab:
    source: list[str]
    target: list[str]

    def __post_init__(self):
        self.source_ids = {t: i for i, t in enumerate(self.source)}
        self.folded = {fold(t): i for i, t in enumerate(self.source)}
        self.target_ids = {t: i for i, t in enumerate(self.target)}

    @classmethod
    def build(cls, pairs: list[tuple[str, str]]) -> "Vocab":
        """From (source, English) pairs: every token, in order of first appearance."""
        source, target = dict.fromkeys(SPECIALS), dict.fromkeys(SPECIALS)
        for src, tgt in pairs:
            source.update(dict.fromkeys(split_source(src)))
            target.update(dict.fromkeys(tgt.split()))
        return cls(list(source), list(target))

    def encode_source(self, text: str) -> tuple[list[int], list[str], list[str]]:
        """(ids, the tokens as the vocabulary spells them, the tokens it does not know)."""
        ids, shown, unknown = [], [], []
        for token in split_source(text):
            i = self.source_ids.get(token, self.folded.get(fold(token), UNK))
            ids.append(i)
            shown.append(self.source[i] if i != UNK else token)
            if i == UNK:
                unknown.append(token)
        return ids, shown, unknown

    def encode_target(self, text: str) -> list[int]:
        return [self.target_ids.get(w, UNK) for w in text.split()]


# ------------------------------------------------------------------------------------------------------------------
# The corpus and the shipped model


def read_corpus(path: Path = SEQ2SEQ_ASSETS / "corpus.tsv") -> dict[str, list[tuple[str, str, str]]]:
    """split -> [(lang, source, English)]."""
    splits: dict[str, list[tuple[str, str, str]]] = {"train": [], "heldout": []}
    for line in path.read_text(encoding="utf-8").splitlines():
        split, lang, source, target = line.split("\t")
        splits[split].append((lang, source, target))
    return splits


def save(model: Transformer, vocab: Vocab, directory: Path = SEQ2SEQ_ASSETS) -> None:
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
              str(directory / "model.safetensors"))
    config = dict(model.config.to_dict(), source_vocab=vocab.source, target_vocab=vocab.target)
    (directory / "config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1), encoding="utf-8")


def load(directory: Path = SEQ2SEQ_ASSETS) -> tuple[Transformer, Vocab]:
    from safetensors.torch import load_file

    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    model = from_state_dict(Seq2SeqConfig.from_dict(config), load_file(str(directory / "model.safetensors")))
    return model, Vocab(config["source_vocab"], config["target_vocab"])


@lru_cache(maxsize=1)
def shipped() -> tuple[Transformer, Vocab]:
    return load(SEQ2SEQ_ASSETS)


# ------------------------------------------------------------------------------------------------------------------
# Decoding, one step at a time


@dataclass
class Step:
    """One decoder step: the prefix it read, the word it wrote, and what it looked at to write it."""

    prefix: list[str]  # the target words fed in, starting with <s>
    word: str  # the word chosen (</s> ends the sentence)
    top: list[tuple[str, float]]  # the top-k words of softmax(o W_out + b_out) for this step, probabilities
    self_attention: list[torch.Tensor]  # per decoder layer (nh, T, T): row t reads prefix positions ≤ t
    cross_attention: list[torch.Tensor]  # per decoder layer (nh, T, S): target rows × source tokens


@dataclass
class Translation:
    source: list[str]  # the source tokens as the model read them
    unknown: list[str]  # source tokens outside the vocabulary (read as <unk>)
    words: list[str]  # the output, without <s> and </s>
    steps: list[Step]
    encoder_attention: list[torch.Tensor] = field(default_factory=list)  # per encoder layer (nh, S, S)

    @property
    def text(self) -> str:
        return " ".join(self.words)


def source_ids(vocab: Vocab, text: str) -> tuple[list[int], list[str], list[str]]:
    ids, shown, unknown = vocab.encode_source(text)
    if not ids:
        raise SourceError("empty")
    if len(ids) > MAX_SOURCE_TOKENS:
        raise SourceError("too_long", tokens=len(ids), limit=MAX_SOURCE_TOKENS)
    if len(unknown) == len(ids):
        raise SourceError("unknown", words=" ".join(unknown))
    return ids, shown, unknown


def top_words(probs: torch.Tensor, vocab: Vocab, k: int) -> list[tuple[str, float]]:
    values, indices = probs.topk(min(k, probs.numel()))
    return [(vocab.target[i], float(p)) for p, i in zip(values.tolist(), indices.tolist())]


@torch.inference_mode()
def translate(text: str, model: Transformer | None = None, vocab: Vocab | None = None,
              settings: Settings = Settings(temperature=0), top_k: int = 5,
              max_words: int = MAX_OUTPUT_WORDS) -> Translation:
    """Decode freely: each step feeds the words written so far (greedy at temperature 0, else drawn with the app's
    sampling settings) and records both attentions and the top-k next words."""
    if model is None:
        model, vocab = shipped()
    ids, shown, unknown = source_ids(vocab, text)
    src = torch.tensor([ids])
    encoded = model.encode(src)
    sampler = Sampler(settings)
    out, steps = [BOS], []
    while len(out) <= max_words:
        decoded = model.decode(encoded, torch.tensor([out]))
        logits = decoded.logits[0, -1]  # (V_tgt,): the scores of the word after the prefix
        chosen = sampler.draw(logits).token
        steps.append(Step([vocab.target[i] for i in out], vocab.target[chosen],
                          top_words(logits.softmax(-1), vocab, top_k),
                          [a[0] for a in decoded.self_attentions], [a[0] for a in decoded.cross_attentions]))
        if chosen == EOS:
            break
        out.append(chosen)
    return Translation(shown, unknown, [vocab.target[i] for i in out[1:]], steps, [a[0] for a in encoded.attentions])


@dataclass
class ForcedStep:
    prefix: list[str]  # the true target words fed in
    truth: str  # the next true word
    predicted: str  # the model's most probable next word given the true prefix
    p_truth: float  # P(truth | true prefix, source)
    top: list[tuple[str, float]]


@torch.inference_mode()
def teacher_forced(text: str, reference: str, model: Transformer | None = None, vocab: Vocab | None = None,
                   top_k: int = 5) -> list[ForcedStep]:
    """Feed the true English words (as training does) in one pass: row t predicts word t + 1 from the true prefix."""
    if model is None:
        model, vocab = shipped()
    ids, _, _ = source_ids(vocab, text)
    truth = vocab.encode_target(reference) + [EOS]
    fed = [BOS] + truth[:-1]
    probs = model(torch.tensor([ids]), torch.tensor([fed])).logits[0].softmax(-1)  # (T, V_tgt)
    return [ForcedStep([vocab.target[i] for i in fed[:t + 1]], vocab.target[truth[t]],
                       vocab.target[int(probs[t].argmax())], float(probs[t, truth[t]]),
                       top_words(probs[t], vocab, top_k)) for t in range(len(truth))]


# ------------------------------------------------------------------------------------------------------------------
# Batched greedy decoding and the held-out figures


def pad(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])


def next_scores(model, src: torch.Tensor, out: torch.Tensor, encoded=None) -> torch.Tensor:
    """(B, V_tgt) scores of the word after each prefix: the Transformer decodes from its encoding (made once); the
    LSTM models of §11.2 (core/nets/seq2seq_lstm.py) read source and prefix again."""
    if encoded is not None:
        return model.decode(encoded, out).logits[:, -1]
    return model(src, out)[0][:, -1]


@torch.inference_mode()
def greedy_batch(model, sources: list[list[int]], max_words: int = MAX_OUTPUT_WORDS) -> list[list[int]]:
    """Greedy output ids (without <s>, </s>) for many sources at once."""
    src = pad(sources)
    encoded = model.encode(src) if isinstance(model, Transformer) else None
    out = torch.full((len(sources), 1), BOS)
    done = torch.zeros(len(sources), dtype=torch.bool)
    for _ in range(max_words + 1):
        nxt = next_scores(model, src, out, encoded).argmax(-1)  # (B,)
        nxt = torch.where(done, PAD, nxt)
        out = torch.cat([out, nxt[:, None]], dim=1)
        done |= nxt == EOS
        if done.all():
            break
    rows = []
    for row in out[:, 1:].tolist():
        row = row[:row.index(EOS)] if EOS in row else row
        rows.append([i for i in row if i != PAD])
    return rows


def greedy_outputs(model, vocab: Vocab, pairs: list[tuple[str, str, str]], batch: int = 256) -> list[list[int]]:
    model.eval()
    outputs = []
    for i in range(0, len(pairs), batch):
        outputs += greedy_batch(model, [vocab.encode_source(src)[0] for _, src, _ in pairs[i:i + batch]])
    return outputs


def scores(outputs: list[list[int]], references: list[list[int]]) -> dict[str, float]:
    exact = sum(o == r for o, r in zip(outputs, references))
    right = sum(sum(a == b for a, b in zip(o, r)) for o, r in zip(outputs, references))
    total = sum(max(len(o), len(r)) for o, r in zip(outputs, references))
    return {"sentences": len(references), "exact_match": exact / len(references), "token_accuracy": right / total}


def evaluate(model, vocab: Vocab, pairs: list[tuple[str, str, str]]) -> dict:
    """Greedy held-out figures, overall and per source language."""
    outputs = greedy_outputs(model, vocab, pairs)
    references = [vocab.encode_target(tgt) for _, _, tgt in pairs]
    result = scores(outputs, references)
    for lang in sorted({lang for lang, _, _ in pairs}):
        keep = [i for i, (l, _, _) in enumerate(pairs) if l == lang]
        result[lang] = scores([outputs[i] for i in keep], [references[i] for i in keep])
    return result


# ------------------------------------------------------------------------------------------------------------------
# The same view on a real one: T5 (core/nets/t5.py) through the registry


@torch.inference_mode()
def translate_t5(text: str, model_id: str | None = None, settings: Settings = Settings(temperature=0),
                 top_k: int = 5, max_words: int = MAX_OUTPUT_WORDS) -> Translation:
    """t5-small (or any T5 id) decoding "translate English to French: I am a student" one SentencePiece piece at a
    time, with the same per-step record as ``translate``. Offline without the checkpoint, the registry's
    ModelUnavailableError names ``hf download <id>``."""
    from core.loading import registry

    loaded = registry.load("seq2seq", model_id)
    model, tokenizer = loaded.model, loaded.tokenizer
    encoding = tokenizer.encode(text)
    if len(encoding.ids) <= 1:
        raise SourceError("empty")
    if len(encoding.ids) > 4 * MAX_SOURCE_TOKENS:
        raise SourceError("too_long", tokens=len(encoding.ids), limit=4 * MAX_SOURCE_TOKENS)
    memory, encoder_maps, mask = model.encode(torch.tensor([encoding.ids], device=loaded.device))
    sampler = Sampler(settings)
    out, steps = [model.config.decoder_start_token_id], []
    while len(out) <= max_words:
        logits, self_maps, cross_maps = model.decode(memory, mask, torch.tensor([out], device=loaded.device))
        chosen = sampler.draw(logits[0, -1]).token
        probs = logits[0, -1].softmax(-1)
        values, indices = probs.topk(top_k)
        steps.append(Step([tokenizer.piece(i) for i in out], tokenizer.piece(chosen),
                          [(tokenizer.piece(i), float(p)) for p, i in zip(values.tolist(), indices.tolist())],
                          [a[0].cpu() for a in self_maps], [a[0].cpu() for a in cross_maps]))
        if chosen == model.config.eos_token_id:
            break
        out.append(chosen)
    return Translation(encoding.pieces, encoding.unknown, [tokenizer.piece(i) for i in out[1:]], steps,
                       [a[0].cpu() for a in encoder_maps])
