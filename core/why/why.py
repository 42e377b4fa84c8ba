"""Why this answer, per model family: the answer each predicting view explains, as a function of the input token
embeddings (core/why/attribution.py computes the attributions; this module says what f is for each model).

    char-GPT / GPT-2   f = p(x_{T+1} = ŵ | x_{≤T})          ŵ: the most probable next token (banned tokens aside)
    char-BERT          f = p(c_i = ĉ | text)                 i: the first [MASK] of the first blank; ĉ its best character
    BERT-likes         f = softmax(logits)[ŷ] at one place   the masked word, a token's tag, a span start or end, a class
    LSTM               f = p(x_{T+1} = ĉ | x_{≤T})           the next character

The score is a probability, so f(x) − f(x') reads as "the input raised the answer's probability from … to …".
Baselines: zeros for the character models; [PAD] at every text position for BERT-likes (specials kept).

Each ``explain_*_stages`` is a generator of Why: first gradient × input and rollout (one forward and one backward
pass after the prediction), then integrated gradients at 4, 8, 16, … steps up to the steps asked for (with
``stream`` False, at those steps only). ``explain_*`` is its last stage, computed without the stages before it.
"""
from __future__ import annotations

import inspect
import threading
from typing import Callable, Iterator

import torch
from torch import nn

from core.why import attribution
from core.transformer import gpt
from core.recurrent import lstm
from core.mlm import char as mlm_char
from core.why.attribution import Attribution, Why, last
from core.text.errors import UserInputError

Score = Callable[[torch.Tensor], torch.Tensor]  # ids (B, T) → (B,)
MAX_TOKEN_STEPS = 16_384  # steps × tokens of one explanation (512 tokens × 32 steps, 128 characters × 128 steps)


def methods_in_stages(embedding: nn.Embedding, ids: torch.Tensor, score: Score, baseline: torch.Tensor,
                      tokens: list[str], steps: int, stream: bool = True, quick: Attribution | None = None
                      ) -> Iterator[list[Attribution]]:
    """[gradient × input] (``quick``, when the caller has it), then [integrated gradients, gradient × input] at each
    stage, of one answer, at the embeddings that ``ids`` (T,) look up (core.why.attribution.attribute_in_stages)."""
    if len(ids) * steps > MAX_TOKEN_STEPS:
        raise UserInputError("why.too_much_work", tokens=len(ids), steps=steps, limit=f"{MAX_TOKEN_STEPS:,}",
                             most=max(1, MAX_TOKEN_STEPS // len(ids)))
    f = attribution.embedding_function(embedding, ids, score)
    x = attribution.token_embeddings(embedding, ids)
    yield from attribution.attribute_in_stages(f, x, baseline, tokens, steps, stream, quick)


def zeros_like_embeddings(embedding: nn.Embedding, length: int) -> torch.Tensor:
    return torch.zeros(length, embedding.embedding_dim, device=embedding.weight.device)


def pad_baseline(embedding: nn.Embedding, ids: torch.Tensor, pad_id: int, keep: set[int]) -> torch.Tensor:
    """x': the [PAD] embedding at every position whose id is not in ``keep`` ([CLS], [SEP], [MASK] keep theirs)."""
    kept = torch.tensor([int(i) in keep for i in ids], device=ids.device)
    return attribution.token_embeddings(embedding, torch.where(kept, ids, torch.full_like(ids, pad_id)))


# ----------------------------------------------------------------------------------------------------------------
# char-GPT and GPT-2: the next token


def last_position_logits(model, ids: torch.Tensor) -> torch.Tensor:
    """GPT.forward's logits at the last position only: (B, V). The head on every position would hold
    steps × T × V floats (GPT-2: 32 × 512 × 50,257, 3.3 GB) for one row each."""
    pos = torch.arange(ids.shape[1], device=ids.device)  # (T,)
    x = model.transformer.wte(ids) + model.transformer.wpe(pos)  # (B, T, C); the hook swaps wte's output
    for block in model.transformer.h:
        x = block(x)[0]  # (B, T, C)
    return model.lm_head(model.transformer.ln_f(x[:, -1]))  # (B, V)


def next_token_score(model, target: int) -> Score:
    return lambda ids: last_position_logits(model, ids).float().softmax(dim=-1)[:, target]  # (B,)


def explain_gpt(text: str, model_id: str | None = None, steps: int = attribution.DEFAULT_STEPS) -> Why:
    """Why the GPT's most probable next token follows the text."""
    return last(explain_gpt_stages(text, model_id, steps, stream=False))


def explain_gpt_stages(text: str, model_id: str | None = None, steps: int = attribution.DEFAULT_STEPS,
                       stream: bool = True) -> Iterator[Why]:
    """explain_gpt, stage by stage."""
    loaded = gpt.load(model_id)
    encoded = gpt.encode_text(loaded, text)
    model, device = loaded.model, loaded.model.lm_head.weight.device
    ids = torch.tensor(encoded.ids, device=device)
    with torch.no_grad():
        out = model(ids[None])
    target = int(gpt.banned_scores(loaded, out.logits[0, -1]).argmax())  # never <unk> (or GPT-2's specials)
    probs = out.logits[0, -1].float().softmax(dim=-1)  # (V,) the full softmax, as f reads it
    embedding = model.transformer.wte
    rollout = attribution.attention_rollout([a[0] for a in out.attentions])[-1].tolist()
    notes = [n for n in [gpt.unknown_note(loaded, encoded.unknown)] if n]
    for methods in methods_in_stages(embedding, ids, next_token_score(model, target),
                                     zeros_like_embeddings(embedding, len(ids)), encoded.pieces, steps, stream):
        yield Why(loaded.model_id, "next_token", loaded.tokenizer.piece(target), float(probs[target]),
                  encoded.pieces, methods, rollout, "zeros", list(notes), steps)


# ----------------------------------------------------------------------------------------------------------------
# char-BERT: the first masked character


def masked_score(model, position: int, target: int) -> Score:
    def score(ids: torch.Tensor) -> torch.Tensor:
        hidden = model.bert(ids, None, None, output_attentions=False, output_hidden_states=False).last_hidden_state
        return model.mlm_logits(hidden[:, position]).float().softmax(dim=-1)[:, target]  # (B,)

    return score


def explain_char_bert(text: str, steps: int = attribution.DEFAULT_STEPS) -> Why:
    """Why the char-BERT puts its best character into the first [MASK] of the first blank."""
    return last(explain_char_bert_stages(text, steps, stream=False))


def explain_char_bert_stages(text: str, steps: int = attribution.DEFAULT_STEPS, stream: bool = True
                             ) -> Iterator[Why]:
    """explain_char_bert, stage by stage."""
    loaded = mlm_char.shipped_char_bert()
    prepared = mlm_char.prepare(loaded, text, 1)
    model, tokenizer = loaded.model, loaded.tokenizer
    ids = torch.tensor(prepared.ids, device=loaded.device)
    position = prepared.starts[0]
    with torch.no_grad():
        encoded = model.bert(ids[None], None, None, output_attentions=True, output_hidden_states=False)
        probs = model.mlm_logits(encoded.last_hidden_state[0, position]).float().softmax(dim=-1)  # (V,)
    target = mlm_char.FIRST_CHAR_ID + int(probs[mlm_char.FIRST_CHAR_ID:].argmax())  # characters only
    tokens = [tokenizer.tokens[i] for i in prepared.ids]
    embedding = model.input_embeddings()
    rollout = attribution.attention_rollout([a[0] for a in encoded.attentions])[position].tolist()
    notes = [n for n in [mlm_char.unknown_note(prepared.unknown)] if n]
    for methods in methods_in_stages(embedding, ids, masked_score(model, position, target),
                                     zeros_like_embeddings(embedding, len(ids)), tokens, steps, stream):
        yield Why(mlm_char.CHAR_BERT_ID, "masked_char", tokenizer.tokens[target], float(probs[target]), tokens,
                  methods, rollout, "zeros", list(notes), steps)


# ----------------------------------------------------------------------------------------------------------------
# BERT-likes (core/nets): one softmax read at one place of the encoder's output


def explain_encoder(model: nn.Module, model_id: str, ids: list[int], tokens: list[str], read: Callable,
                    target: int, position: int, pad_id: int, keep: set[int], target_kind: str,
                    answer: str, token_type_ids: list[int] | None = None,
                    steps: int = attribution.DEFAULT_STEPS) -> Why:
    """A BERT-like head model's answer: ``read(model, ids (B, T), token_type_ids (B, T)) → logits (B, C)`` (the
    masked word's vocabulary row, a token's tag row, the start or end logits over positions, the class logits);
    f is softmax of that row at ``target``; rollout is read at ``position``."""
    return last(explain_encoder_stages(model, model_id, ids, tokens, read, target, position, pad_id, keep,
                                       target_kind, answer, token_type_ids, steps, stream=False))


def explain_encoder_stages(model: nn.Module, model_id: str, ids: list[int], tokens: list[str], read: Callable,
                           target: int, position: int, pad_id: int, keep: set[int], target_kind: str,
                           answer: str, token_type_ids: list[int] | None = None,
                           steps: int = attribution.DEFAULT_STEPS, stream: bool = True,
                           attentions: tuple | None = None, quick: Attribution | None = None) -> Iterator[Why]:
    """explain_encoder, stage by stage; the answer's probability is f(x) of the first stage's gradient pass.
    ``attentions`` and ``quick``: the encoder's maps for these ids and the answer's gradient × input, when the caller
    has them (explain_span_stages: one pass for the span's two ends); else the quick view's gradient pass computes
    the one and brings the other (AttentionsOfNextPass)."""
    device = model.input_embeddings().weight.device
    id_tensor = torch.tensor(ids, device=device)
    segments = torch.tensor([token_type_ids or [0] * len(ids)], device=device)

    def score(batch: torch.Tensor) -> torch.Tensor:
        return read(model, batch, segments.expand_as(batch)).float().softmax(dim=-1)[:, target]  # (B,)

    embedding = model.input_embeddings()
    baseline = pad_baseline(embedding, id_tensor, pad_id, keep)
    rollout = None
    with AttentionsOfNextPass(model.base if attentions is None else None) as seen:
        for methods in methods_in_stages(embedding, id_tensor, score, baseline, tokens, steps, stream, quick):
            if rollout is None:  # the quick view's gradient pass brought the maps along (else: one pass for them)
                attentions = attentions or seen.maps or encoder_attentions(model, ids, token_type_ids)
                rollout = attribution.attention_rollout([a[0] for a in attentions])[position].tolist()
            yield Why(model_id, target_kind, answer, methods[-1].score, tokens, methods, rollout, "pad", [], steps)


class AttentionsOfNextPass:
    """The attention maps of ``base``'s next forward pass in this thread: ``with AttentionsOfNextPass(model.base) as
    seen: …`` asks that pass for them too (``output_attentions=True``) and keeps them in ``seen.maps`` (L tensors
    (B, nh, T, T), detached). The quick view's gradient pass brings rollout's maps along, instead of a forward pass
    of its own (a quarter of the quick view of MiniLM; issue #53). ``base`` None, or not a module whose forward takes
    ``output_attentions`` (the session classifier's): nothing is watched and ``maps`` stays None.

    The model is shared by every session: only this thread's pass is changed and read, as in
    attribution.embedding_function."""

    def __init__(self, base: nn.Module | None):
        self.maps: tuple | None = None
        self.handles: list = []
        if not isinstance(base, nn.Module) or "output_attentions" not in inspect.signature(base.forward).parameters:
            return
        owner, signature = threading.get_ident(), inspect.signature(base.forward)

        def ask(module, args, kwargs):
            if threading.get_ident() != owner or self.maps is not None:
                return None
            bound = signature.bind(*args, **kwargs)
            bound.arguments["output_attentions"] = True
            return bound.args, bound.kwargs

        def keep(module, args, kwargs, output):
            if threading.get_ident() == owner and self.maps is None:
                self.maps = tuple(a.detach() for a in output.attentions)
                self.close()

        self.handles = [base.register_forward_pre_hook(ask, with_kwargs=True),
                        base.register_forward_hook(keep, with_kwargs=True)]

    def close(self) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []

    def __enter__(self) -> "AttentionsOfNextPass":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def encoder_attentions(model: nn.Module, ids: list[int], token_type_ids: list[int] | None = None) -> tuple:
    """The attention maps of a BERT-like encoder on one input: L tensors (1, nh, T, T)."""
    device = model.input_embeddings().weight.device
    segments = torch.tensor([token_type_ids or [0] * len(ids)], device=device)
    with torch.no_grad():
        return model.base(torch.tensor([ids], device=device), None, segments, output_attentions=True,
                          output_hidden_states=False).attentions


def read_masked_word(position: int) -> Callable:
    def read(model, ids, segments):
        hidden = model.base(ids, None, segments, output_attentions=False, output_hidden_states=False)
        return model.mlm_logits(hidden.last_hidden_state[:, position])  # (B, V)

    return read


def read_token_tag(position: int) -> Callable:
    return lambda model, ids, segments: model(ids, None, segments, output_attentions=False,
                                              output_hidden_states=False).logits[:, position]  # (B, C)


def read_span(end: bool) -> Callable:
    def read(model, ids, segments):
        out = model(ids, None, segments, output_attentions=False, output_hidden_states=False)
        return out.end_logits if end else out.start_logits  # (B, T)

    return read


def read_class(model, ids, segments):
    return model(ids, None, segments, output_attentions=False, output_hidden_states=False).logits  # (B, C)


# ----------------------------------------------------------------------------------------------------------------
# LSTM: the next character


def explain_lstm(text: str, steps: int = attribution.DEFAULT_STEPS, kind: str = "lstm") -> Why:
    """Why the shipped LSTM (or RNN) predicts its most probable next character after the text."""
    return last(explain_lstm_stages(text, steps, kind, stream=False))


def explain_lstm_stages(text: str, steps: int = attribution.DEFAULT_STEPS, kind: str = "lstm",
                        stream: bool = True) -> Iterator[Why]:
    """explain_lstm, stage by stage."""
    models = lstm.shipped_models()
    model = getattr(models, kind)
    ids_list, pieces, unknown = lstm.encode_prompt(models.vocab, text)
    device = model.head.weight.device
    ids = torch.tensor(ids_list, device=device)
    with torch.no_grad():
        probs = model(ids[None]).logits[0, -1].float().softmax(dim=-1)
    probs[0] = 0.0  # never explain <unk>
    target = int(probs.argmax())
    score = lambda batch: model(batch).logits[:, -1].float().softmax(dim=-1)[:, target]  # noqa: E731
    notes = [lstm.name_tokens(unknown)] if unknown else []
    for methods in methods_in_stages(model.embed, ids, score, zeros_like_embeddings(model.embed, len(ids)), pieces,
                                     steps, stream):
        yield Why(kind.upper(), "next_char", models.vocab.tokens[target], float(probs[target]), pieces, methods,
                  None, "zeros", list(notes), steps)
