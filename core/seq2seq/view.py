"""What the Transformer & GPT tab's encoder–decoder views show (issue #52, §10.3–§11.2), as data; demo/transformer/seq2seq.py
draws it.

    decode(model_id, text, settings)    one token at a time: the shipped zh/fr→en model, or a T5 through the registry
    forced(text, reference)             teacher forcing on the shipped model: the true previous words fed in
    why_word(text, words, step)         gradient × input: how much each source token's embedding pushed the step's word
    mask_experiment(), context_experiment()   §11.1 and §11.2 as measured (assets/seq2seq/results.json)
    alignments(text)                    §11.2: the attention LSTM's α and the Transformer's cross-attention, per word

Model ids: ``HERE_ID`` (core/loading/checkpoints.py) is the model trained in this repository; anything else is a T5 id or
folder (core/nets/t5.py), loaded through the registry (offline without it: ModelUnavailableError naming the
download).
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import torch

from core.seq2seq import seq2seq
from core.loading.checkpoints import SEQ2SEQ_HERE_ID
from core.text.errors import UserInputError
from core.text.sampling import Settings
from core.seq2seq.seq2seq import BOS, EOS, UNK, SEQ2SEQ_ASSETS, Translation, source_ids


SOURCE_ERRORS = {"empty": "seq2seq.error_empty", "too_long": "seq2seq.error_too_long",
                 "unknown": "seq2seq.error_unknown"}  # core.seq2seq.seq2seq.SourceError.kind -> its message


@contextmanager
def readable_source():
    """A source the model cannot read (core.seq2seq.seq2seq.SourceError: empty, too long, no word it knows) as a message in
    the learner's language."""
    try:
        yield
    except seq2seq.SourceError as exc:
        raise UserInputError(SOURCE_ERRORS[exc.kind], **exc.fields) from None


def is_here(model_id: str | None) -> bool:
    return str(model_id or "").strip() in ("", SEQ2SEQ_HERE_ID)


def decode(model_id: str | None, text: str, settings: Settings = Settings(temperature=0),
           top_k: int = 5) -> Translation:
    """Free decoding, one step at a time, with both attentions and the top-k words of every step."""
    with readable_source():
        if is_here(model_id):
            return seq2seq.translate(text, settings=settings, top_k=top_k)
        return seq2seq.translate_t5(text, str(model_id).strip(), settings=settings, top_k=top_k)


def forced(text: str, reference: str, top_k: int = 5) -> list[seq2seq.ForcedStep]:
    """Teacher forcing on the shipped model: the reference's words fed in, one row per word it should write."""
    with readable_source():
        return seq2seq.teacher_forced(text, reference, top_k=top_k)


def unknown_reference_words(reference: str) -> list[str]:
    """The reference's words the shipped model's English vocabulary does not have (read as <unk>)."""
    _, vocab = seq2seq.shipped()
    return [word for word in reference.split() if word not in vocab.target_ids]


@lru_cache(maxsize=1)
def model_for_gradients():
    """The shipped model loaded again outside inference mode (``seq2seq.shipped`` may have been loaded inside it, and
    inference tensors cannot take part in a backward pass)."""
    with torch.inference_mode(False):
        return seq2seq.load(SEQ2SEQ_ASSETS)


@dataclass
class WordWhy:
    word: str  # the output word explained (</s> for the end)
    source: list[str]  # the source tokens
    scores: list[float]  # gradient × input per source token: Σ_d ∂ z_word / ∂e_{s,d} · e_{s,d}
    logit: float  # z_word, the word's score before the softmax
    probability: float  # P(word | source, the words before it)


def why_word(text: str, words: list[str], step: int) -> WordWhy:
    """Gradient × input on the shipped model for output ``step`` (0-based; ``len(words)`` is the final </s>): the
    gradient of the word's score z (the output Linear's, before the softmax: log P saturates near 0 for a sure word,
    and its gradient with it) with respect to each source token's embedding
    (Embed(token)·√d_model, before the positions are added), dotted with that embedding."""
    model, vocab = model_for_gradients()
    with readable_source():
        ids, shown, _ = source_ids(vocab, text)
    if not 0 <= step <= len(words):
        raise IndexError(step)
    word = words[step] if step < len(words) else "</s>"
    target = EOS if step == len(words) else vocab.target_ids.get(word, UNK)
    prefix = [BOS] + [vocab.target_ids.get(w, UNK) for w in words[:step]]
    captured = {}

    def keep(module, inputs, output):
        captured["embedding"] = output
        return output

    handle = model.src_embed.lut.register_forward_hook(keep)
    try:
        with torch.inference_mode(False), torch.enable_grad():
            logits = model(torch.tensor([ids]), torch.tensor([prefix])).logits[0, -1]
            embedding = captured["embedding"]
            (gradient,) = torch.autograd.grad(logits[target], embedding)
    finally:
        handle.remove()
    # ∂z/∂(e·√d) · (e·√d) = ∂z/∂e · e: the lookup's output gives the same product as the scaled embedding
    scores = (gradient * embedding)[0].sum(-1)
    return WordWhy(word, shown, [float(s) for s in scores.detach()], float(logits[target].detach()),
                   float(logits.detach().softmax(-1)[target]))


# ------------------------------------------------------------------------------------------------------------------
# §11.1 and §11.2 as measured by scripts/seq2seq_experiments.py


@lru_cache(maxsize=1)
def results() -> dict:
    return json.loads((SEQ2SEQ_ASSETS / "results.json").read_text(encoding="utf-8"))


def mask_experiment() -> dict:
    """{"settings", "masked": {"training_loss", "heldout": {...}}, "unmasked": {...}}: the same model, data and seed,
    trained briefly with and without the decoder's mask, scored decoding freely on the held-out split."""
    return results()["mask_experiment"]


def context_experiment() -> dict:
    """{"vector": {..., "by_length": [{"bin", "sentences", "exact_match", "token_accuracy"}]}, "attention": {...}}."""
    return results()["context_experiment"]


@dataclass
class Alignments:
    source: list[str]
    lstm_words: list[str]  # the attention LSTM's output, then </s>
    lstm_alpha: torch.Tensor  # (len(lstm_words), len(source)): Bahdanau's α
    vector_words: list[str]  # what the one-vector-C LSTM writes (no alignment: it has none)
    transformer_words: list[str]  # the Transformer's output, then </s>
    cross: torch.Tensor  # (len(transformer_words), len(source)): last decoder layer's cross-attention, mean of heads


def alignments(text: str) -> Alignments:
    from core.seq2seq.compare import alignment, shipped_lstm

    attention_model, vocab = shipped_lstm("attention")
    with readable_source():
        source, lstm_words, alpha = alignment(attention_model, vocab, text)
    vector_model, _ = shipped_lstm("vector")
    ids, _, _ = source_ids(vocab, text)
    vector_words = [vocab.target[i] for i in seq2seq.greedy_batch(vector_model, [ids])[0]]
    translation = decode(None, text)
    cross = translation.steps[-1].cross_attention[-1].mean(0)  # (T, S): row t writes word t + 1 (or </s>)
    return Alignments(source, lstm_words, alpha, vector_words, translation.words + ["</s>"], cross)
