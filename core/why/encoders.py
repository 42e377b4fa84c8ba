"""Why this answer for the BERT-like tabs (issue #35): each tab's checkpoint and text turned into the arguments of
core.why.why.explain_encoder (which attributes to the input token embeddings), and the masked LM's logit lens.

    masked LM        f = p(w_i = ŵ | text)        i: the first [MASK]; ŵ: its most probable word (what Fill shows)
    NER              f = p(y_i = ŷ | text)        i: the token the learner picks (default: the first entity token)
    QA               f = P_start(î), P_end(ĵ)     î, ĵ: the best span's ends; question tokens masked to −10000 before
                                                  the softmax, as the QA tab (and transformers' pipeline) does
    classification   f = p(c = ĉ | text)          ĉ: the predicted class; sigmoid heads (one output, multi-label) as
                                                  softmax([0, z_c])₁ = σ(z_c), so the score is the tab's probability
    fine-tuned MiniLM the same f, through the frozen bottom of the shared MiniLM-L6, this session's fine-tuned copies of
                     its top k layers, the mean pool and the head (core/tasks/finetune_train.py); before any fine-tuning, the
                     head (a) at its seeded random initialisation on the frozen model

The baseline is [PAD] at every text position ([CLS], [SEP], [MASK] keep theirs), so f(x') is the answer's
probability with the words taken away. Rollout is read at the predicting position: the [MASK], the tagged token, the
span's start or end, and [CLS] for the classifiers (MiniLM's mean pool reads every position; [CLS] stands in).

As in core/why/why.py, each ``explain_*_stages`` yields the quick view (gradient × input, rollout) first and then
integrated gradients at each stage; ``explain_*`` is the last stage alone.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator
from types import SimpleNamespace

import torch
from torch import nn

from core.why import attribution, logit_lens
from core.tasks import classify, finetune, finetune_train, ner, qa
from core.mlm import mlm
from core.loading import registry
from core.why.attribution import Why, last
from core.loading.checkpoints import MINILM_ID
from core.text.corpora import DEFAULT_LABELLED
from core.text.errors import UserInputError, echo
from core.text.i18n import text as tr
from core.text.limits import DEFAULT_SEED, MAX_MODEL_TOKENS
from core.why.logit_lens import LogitLens
from core.why.why import (AttentionsOfNextPass, explain_encoder_stages, read_class, read_masked_word, read_span,
                          read_token_tag)

STEPS = attribution.DEFAULT_STEPS


def _specials(tokenizer) -> tuple[int, set[int]]:
    """[PAD]'s id and the ids the baseline keeps: [CLS], [SEP], [MASK]."""
    keep = {tokenizer.token_to_id(token) for token in (tokenizer.cls_token, tokenizer.sep_token, tokenizer.mask_token)}
    return tokenizer.token_to_id(tokenizer.pad_token) or 0, {i for i in keep if i is not None}


# ----------------------------------------------------------------------------------------------------------------
# Masked LM: the first blank's best word, and the logit lens at that blank


def explain_masked_word(text: str, model_id: str | None = None, steps: int = STEPS,
                        top_k: int = logit_lens.DEFAULT_TOP_K) -> tuple[Why, LogitLens]:
    """Why a BERT (or DistilBERT) with an MLM head puts its best word into the first [MASK], layer by layer."""
    return last(explain_masked_word_stages(text, model_id, steps, top_k, stream=False))


def explain_masked_word_stages(text: str, model_id: str | None = None, steps: int = STEPS,
                               top_k: int = logit_lens.DEFAULT_TOP_K, stream: bool = True
                               ) -> Iterator[tuple[Why, LogitLens]]:
    """explain_masked_word, stage by stage (the logit lens is ready with the first)."""
    loaded = registry.load("mlm", model_id)
    tokenizer, model = loaded.tokenizer, loaded.model
    text = mlm.with_mask_tokens(mlm.clean_text(text), tokenizer.mask_token)
    encoding = mlm.encode(tokenizer, text, None, min(MAX_MODEL_TOKENS, loaded.config.max_tokens))
    positions = [i for i, token_id in enumerate(encoding.ids) if token_id == tokenizer.mask_token_id]
    if not positions:
        raise UserInputError("mlm.no_blank")
    position = positions[0]
    ids = torch.tensor(encoding.ids, device=loaded.device)
    segments = torch.tensor([encoding.segment_ids], device=loaded.device)
    layer_logits = logit_lens.mlm_layer_logits(model, ids, position, segments)  # (L + 1, V); the last is the answer
    target = int(layer_logits[-1].argmax())
    pad_id, keep = _specials(tokenizer)
    notes = [tr("why.first_blank", count=len(positions))] if len(positions) > 1 else []
    unknown = mlm.unknown_pieces(tokenizer, encoding, text, None)
    if unknown:
        notes.append(tr("why.unknown_pieces", pieces=echo(", ".join(unknown))))
    layers = ["embeddings"] + [str(layer) for layer in range(1, layer_logits.shape[0])]
    lens = logit_lens.lens(layer_logits.softmax(dim=-1), tokenizer.id_to_token, loaded.files.name, layers, top_k)
    for why in explain_encoder_stages(model, loaded.files.name, encoding.ids, encoding.tokens,
                                      read_masked_word(position), target, position, pad_id, keep, "masked_word",
                                      tokenizer.id_to_token(target), encoding.segment_ids, steps, stream):
        why.notes.extend(notes)
        yield why, lens


# ----------------------------------------------------------------------------------------------------------------
# NER: one token's tag


@dataclass
class TagWhy:
    why: Why
    position: int  # the explained token's place in the model's input ([CLS] is 0)
    token: str
    chosen: bool  # the learner named the token (else: the first entity token, or the first token when none)
    entity: bool  # the text has an entity at all


def pick_token(encoded: ner.Encoded, tags: list[str], choice: str | None) -> tuple[int, bool]:
    """The token to explain, as a place in encoded.tokens, and whether the learner named it: empty → the first token
    tagged as an entity (the first token if none is); a number → that place in the model's input (1 = the first
    token after [CLS], as the numbers table counts); else a word or token of the text (case ignored)."""
    choice = str(choice or "").strip()
    tokens = encoded.tokens
    if not choice:
        return next((i for i, tag in enumerate(tags) if tag != ner.OUTSIDE), 0), False
    if choice.isdigit():
        position = int(choice)
        if not 1 <= position <= len(tokens):
            raise UserInputError("why.token_range", position=choice, last=len(tokens))
        return position - 1, True
    wanted = choice.casefold()
    words: dict[int | None, list[int]] = {}
    for i, token in enumerate(tokens):
        words.setdefault(token.word_id if token.word_id is not None else -i - 1, []).append(i)
    for i, token in enumerate(tokens):
        word = words[token.word_id if token.word_id is not None else -i - 1]
        spelled = encoded.text[tokens[word[0]].start:tokens[word[-1]].end]
        if token.piece.removeprefix("##").casefold() == wanted or (word[0] == i and spelled.casefold() == wanted):
            return i, True
    listed = ", ".join(dict.fromkeys(encoded.text[t.start:t.end] for t in tokens[:30]))
    raise UserInputError("why.token_not_found", token=choice, tokens=echo(listed))


def explain_tag(text: str, model_id: str | None = None, token: str | None = "", steps: int = STEPS) -> TagWhy:
    """Why the NER checkpoint gives one token its most probable tag (the argmax the Tags table shows)."""
    return last(explain_tag_stages(text, model_id, token, steps, stream=False))


def explain_tag_stages(text: str, model_id: str | None = None, token: str | None = "", steps: int = STEPS,
                       stream: bool = True) -> Iterator[TagWhy]:
    """explain_tag, stage by stage."""
    loaded = registry.load("ner", model_id)
    tokenizer, config = loaded.tokenizer, loaded.config
    limit = min(tokenizer.model_max_length, config.max_tokens, MAX_MODEL_TOKENS)
    encoded = ner.encode(tokenizer, text, limit, min(ner.DEFAULT_STRIDE, limit - 3))
    if len(encoded.windows) > 1:
        raise UserInputError("why.one_window", tokens=len(encoded.tokens), limit=limit - 2)
    cls_id, sep_id = tokenizer.token_to_id(tokenizer.cls_token), tokenizer.token_to_id(tokenizer.sep_token)
    ids = [cls_id, *(t.id for t in encoded.tokens), sep_id]
    pieces = [tokenizer.cls_token, *(t.piece for t in encoded.tokens), tokenizer.sep_token]
    labels = [config.id2label.get(i, f"LABEL_{i}") for i in range(config.num_labels)]
    with torch.no_grad():
        logits = loaded.model(torch.tensor([ids], device=loaded.device), None, None, output_attentions=False,
                              output_hidden_states=False).logits[0, 1:-1]  # (N, C)
    tags = [labels[i] for i in logits.argmax(dim=-1).tolist()]
    index, chosen = pick_token(encoded, tags, token)
    position = index + 1  # after [CLS]
    target = labels.index(tags[index])
    pad_id, keep = _specials(tokenizer)
    for why in explain_encoder_stages(loaded.model, loaded.files.name, ids, pieces, read_token_tag(position), target,
                                      position, pad_id, keep, "tag", tags[index], None, steps, stream):
        yield TagWhy(why, position, pieces[position], chosen, any(tag != ner.OUTSIDE for tag in tags))


# ----------------------------------------------------------------------------------------------------------------
# QA: the best span's start and end


def read_allowed_span(end: bool, allowed: torch.Tensor):
    """read_span with the positions that cannot hold the answer (question, [SEP]) at −10000, as qa.py softmaxes."""
    read = read_span(end)
    return lambda model, ids, segments: read(model, ids, segments).masked_fill(~allowed, qa.MASKED_LOGIT)


def span_ends_function(model: nn.Module, ids: torch.Tensor, segment_ids: list[int], allowed: torch.Tensor,
                       ends: tuple[int, int]) -> attribution.EmbeddingFunction:
    """f: (B, T, E) → (B, 2), [P_start(î), P_end(ĵ)] at the embeddings of ``ids`` (T,), from one forward pass: what
    read_allowed_span's two scores read, for quick_views to take both gradients through one graph."""
    segments = torch.tensor([segment_ids], device=ids.device)

    def both(batch: torch.Tensor) -> torch.Tensor:
        out = model(batch, None, segments.expand_as(batch), output_attentions=False, output_hidden_states=False)
        return torch.stack([logits.masked_fill(~allowed, qa.MASKED_LOGIT).float().softmax(dim=-1)[:, position]
                            for logits, position in zip((out.start_logits, out.end_logits), ends)], dim=-1)

    return attribution.embedding_function(model.input_embeddings(), ids, both)


@dataclass
class SpanWhy:
    start: Why
    end: Why
    answer: str
    positions: tuple[int, int]  # the span's first and last token in the window
    window: int  # which window (0-based) of how many
    windows: int


def explain_span(question: str, context: str, model_id: str | None = None, steps: int = STEPS) -> SpanWhy:
    """Why the QA checkpoint's best answer starts and ends where it does, in the window where it was found."""
    return last(explain_span_stages(question, context, model_id, steps, stream=False))


def explain_span_stages(question: str, context: str, model_id: str | None = None, steps: int = STEPS,
                        stream: bool = True) -> Iterator[SpanWhy]:
    """explain_span, stage by stage: each stage of the start, then the same stage of the end."""
    result = qa.answer(question, context, model_id)
    best = result.best
    if best.is_null or best.window is None:
        raise UserInputError("why.no_span")
    loaded = registry.load("qa", model_id)
    window = result.windows[best.window]
    ids = torch.tensor(window.ids, device=loaded.device)
    allowed = torch.zeros(len(window.ids), dtype=torch.bool, device=loaded.device)
    allowed[window.context.start:window.context.stop] = True
    allowed |= ids == loaded.tokenizer.token_to_id(loaded.tokenizer.cls_token)
    pad_id, keep = _specials(loaded.tokenizer)
    ends = (best.token_start, best.token_end)
    f = span_ends_function(loaded.model, ids, window.segment_ids, allowed, ends)
    x = attribution.token_embeddings(loaded.model.input_embeddings(), ids)
    with AttentionsOfNextPass(loaded.model.base) as seen:  # both ends' quick views and maps from one pass
        quick = attribution.quick_views(f, x, window.tokens)
    start, end = (explain_encoder_stages(loaded.model, loaded.files.name, window.ids, window.tokens,
                                         read_allowed_span(is_end, allowed), position, position, pad_id, keep,
                                         "end" if is_end else "start", window.tokens[position], window.segment_ids,
                                         steps, stream, seen.maps, quick[is_end])
                  for is_end, position in zip((False, True), ends))
    for found in zip(start, end):  # the start's stage, then the end's
        yield SpanWhy(*found, best.text, (best.token_start, best.token_end), best.window, len(result.windows))


# ----------------------------------------------------------------------------------------------------------------
# Classification: a fine-tuned checkpoint's class


def read_sigmoid(index: int):
    """A sigmoid head's probability as a softmax: softmax([0, z_c]) = [1 − σ(z_c), σ(z_c)]; the target is 1."""
    def read(model, ids, segments):
        z = read_class(model, ids, segments)[:, index:index + 1]  # (B, 1)
        return torch.cat([torch.zeros_like(z), z], dim=-1)  # (B, 2)

    return read


def explain_class(text_a: str, text_b: str | None = None, model_id: str | None = None,
                  steps: int = STEPS) -> Why:
    """Why a *ForSequenceClassification checkpoint picks its class for one sentence or a pair."""
    return last(explain_class_stages(text_a, text_b, model_id, steps, stream=False))


def explain_class_stages(text_a: str, text_b: str | None = None, model_id: str | None = None, steps: int = STEPS,
                         stream: bool = True) -> Iterator[Why]:
    """explain_class, stage by stage."""
    shown = classify.classify(text_a, text_b, model_id, pair=bool(str(text_b or "").strip()))
    loaded = registry.load("classify", model_id)
    encoding = shown.encoding
    best = int(shown.probs.argmax())
    read, target = (read_sigmoid(best), 1) if shown.function == "sigmoid" else (read_class, best)
    pad_id, keep = _specials(loaded.tokenizer)
    for why in explain_encoder_stages(loaded.model, loaded.files.name, encoding.ids, encoding.tokens, read, target, 0,
                                      pad_id, keep, "class", shown.labels[best], encoding.segment_ids, steps, stream):
        if encoding.truncation:
            why.notes.append(tr("why.truncated", length=encoding.truncation.max_length,
                                removed=encoding.truncation.removed_tokens))
        yield why


# ----------------------------------------------------------------------------------------------------------------
# Classification offline: MiniLM-L6 with the head fine-tuned in this session


class SessionClassifier(nn.Module):
    """embeddings → the shared MiniLM's layers below ``first`` (frozen) → ``layers`` (this session's fine-tuned copies
    of the rest; none before fine-tuning) → mean over the tokens → ``head``: the model the Fine-tune sub-tab trained,
    with the interface explain_encoder reads (``input_embeddings``, ``base`` with attentions, logits)."""

    def __init__(self, encoder: nn.Module, layers: list[nn.Module], head: nn.Linear, first: int):
        super().__init__()
        self.encoder, self.layers, self.head, self.first = encoder, nn.ModuleList(layers), head, first

    def input_embeddings(self) -> nn.Embedding:
        return self.encoder.input_embeddings()

    def _run(self, ids: torch.Tensor, segments, need_probs: bool) -> tuple[torch.Tensor, list]:
        bert = self.encoder.base
        x = bert.embeddings(ids, torch.zeros_like(ids) if segments is None else segments)  # (B, T, H)
        probs = []
        for layer in bert.encoder.layer[:self.first]:
            x, p = layer(x, None, need_probs)
            probs.append(p)
        x = x.float().to(self.head.weight.device)  # the session's copies live on the CPU, in float32
        for layer in self.layers:
            x, p = layer(x, None, need_probs)
            probs.append(p)
        return x, probs

    def base(self, ids, mask=None, segments=None, output_attentions=True, output_hidden_states=False):
        x, probs = self._run(ids, segments, output_attentions)
        return SimpleNamespace(last_hidden_state=x, attentions=tuple(probs) if output_attentions else ())

    def forward(self, ids, mask=None, segments=None, output_attentions=False, output_hidden_states=False):
        x, _ = self._run(ids, segments, False)
        return SimpleNamespace(logits=self.head(finetune_train.mean_pool(x, torch.ones_like(ids))))  # (B, C)


def session_classifier(outcome: finetune_train.Outcome | None) -> tuple[SessionClassifier, list[str], bool]:
    """The model to explain, its class names, and whether it is fine-tuned: the session's run (b), or before any run
    head (a) as training would start it on the default bundled set (seeded random weights, frozen MiniLM)."""
    encoder = registry.load("encoder", MINILM_ID).model
    if outcome is not None and outcome.tuned is not None:
        tuned = outcome.tuned
        return SessionClassifier(encoder, list(tuned.layers), tuned.head, tuned.first_index), outcome.data.labels, True
    data = finetune.split(finetune.load_bundled(DEFAULT_LABELLED), DEFAULT_SEED)
    head = finetune_train.initial_head(encoder.config.hidden_size, data).eval()
    return SessionClassifier(encoder, [], head, len(encoder.base.encoder.layer)), data.labels, False


def explain_session_class(text: str, outcome: finetune_train.Outcome | None, steps: int = STEPS) -> Why:
    """Why this session's fine-tuned MiniLM (or, before fine-tuning, the untrained head) picks its class."""
    return last(explain_session_class_stages(text, outcome, steps, stream=False))


def explain_session_class_stages(text: str, outcome: finetune_train.Outcome | None, steps: int = STEPS,
                                 stream: bool = True) -> Iterator[Why]:
    """explain_session_class, stage by stage."""
    sentence = finetune.check_sentence(text)
    model, labels, tuned = session_classifier(outcome)
    tokenizer = registry.load("encoder", MINILM_ID).tokenizer
    encoding = tokenizer.encode(sentence, max_length=finetune.MAX_TOKENS)  # as training read its sentences
    with torch.no_grad():
        probs = model(torch.tensor([encoding.ids], device=model.input_embeddings().weight.device)).logits[0]
    best = int(probs.argmax())
    pad_id, keep = _specials(tokenizer)
    name = tr("why.session_model" if tuned else "why.session_untrained")
    for why in explain_encoder_stages(model, name, encoding.ids, encoding.tokens, read_class, best, 0, pad_id, keep,
                                      "class", labels[best], None, steps, stream):
        if encoding.truncation:
            why.notes.append(tr("why.truncated", length=finetune.MAX_TOKENS,
                                removed=encoding.truncation.removed_tokens))
        yield why
