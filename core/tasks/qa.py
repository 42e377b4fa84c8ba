"""Extractive question answering with BERT (seed §14): tokenise → model → start/end distributions → best span.

The input is one sequence, ``[CLS] question [SEP] context [SEP]``, with segment id 0 for the question part and 1 for
the context part. The QA head holds two learned vectors S and E; for every token's final vector h_i

    P_start(i) = softmax_i(S·h_i)        P_end(j) = softmax_j(E·h_j)        score(i, j) = P_start(i) · P_end(j)

over the context tokens (and [CLS]), and the answer is the best span with i ≤ j < i + max_answer_len.

Everything follows transformers' QuestionAnsweringPipeline (its last version, 4.5x; transformers 5 dropped it), so
answers, scores and character offsets are equal:

* a context too long for one window of ``max_seq_len`` tokens is cut into windows that each repeat the question and
  overlap by ``doc_stride`` context tokens (the fast tokenizer's ``only_second`` truncation with overflow);
* per window, question tokens are masked to -10000 before the softmax; the "no answer" score is
  P_start([CLS]) · P_end([CLS]), the smallest over the windows;
* each window proposes its ``2·top_k + 10`` best token spans, widened to whole words (the answer is the context's
  own characters, not re-joined tokens); spans whose text is the same (ignoring case) add up their scores;
* the no-answer candidate (when asked for) joins the list, which is sorted and cut to ``top_k``.

One deliberate difference: when a context has fewer valid spans than the pipeline asks for, the pipeline pads its
list with zero-score spans (end before start, or starting at [CLS]); we leave those out.
"""
from __future__ import annotations

import math

import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from tokenizers import Encoding, Tokenizer

from core.loading import registry
from core.loading.checkpoints import model_id_or_default
from core.text.errors import UserInputError
from core.text.i18n import text
from core.text.limits import (MAX_MODEL_TOKENS, MAX_TEXT_CHARS, QA_DEFAULT_MAX_ANSWER_LEN, QA_DEFAULT_MAX_SEQ_LEN,
                         QA_MAX_TOP_K)
from core.text.textio import CleanText, clean_text, normalize_text
from core.text.tokenizer import WordPieceTokenizer

MASKED_LOGIT = -10000.0  # what the pipeline writes over question tokens before the softmax
BATCH_WINDOWS = 16  # windows per forward pass
MAX_WINDOWS = 256  # a stride close to the window length would make thousands of windows of one new token each

@dataclass
class Window:
    """One model input: ``[CLS] question [SEP] part of the context [SEP]``, and what the model said about it."""

    index: int
    tokens: list[str]
    ids: list[int]
    segment_ids: list[int]  # token_type_ids: 0 for [CLS] question [SEP], 1 for context [SEP]
    context: range  # positions of the context tokens
    offsets: list[tuple[int, int]]  # character span of every token (into the question or the context)
    encoding: Encoding  # the tokenizer's own record (words, offsets), used to widen spans to whole words
    start_probs: np.ndarray | None = None  # (C,) P_start over this window's context tokens
    end_probs: np.ndarray | None = None  # (C,) P_end
    null_score: float | None = None  # P_start([CLS]) · P_end([CLS])
    typed_span: tuple[int, int] | None = None  # char_span in the text the learner typed, once answer() maps it

    @property
    def context_tokens(self) -> list[str]:
        return [self.tokens[i] for i in self.context]

    @property
    def char_span(self) -> tuple[int, int]:
        """The part of the context this window covers (in the typed context after answer(), else the normalised)."""
        if self.typed_span is not None:
            return self.typed_span
        return self.offsets[self.context.start][0], self.offsets[self.context.stop - 1][1]


@dataclass
class Answer:
    """A candidate answer. ``start``/``end`` index the context's characters; the null answer has window None."""

    text: str
    score: float
    start: int
    end: int
    window: int | None = None  # where the span was first found, and its token positions there
    token_start: int | None = None
    token_end: int | None = None

    @property
    def is_null(self) -> bool:
        return self.window is None


@dataclass
class QAResult:
    question: str
    context: str  # as the learner typed it (maybe cut); answer offsets point into this text
    answers: list[Answer]  # best first, at most top_k
    windows: list[Window]
    max_seq_len: int
    doc_stride: int
    max_answer_len: int
    notes: list[str]  # what the learner should know: cuts, several windows
    badge: str = ""

    @property
    def best(self) -> Answer:
        return self.answers[0]


# ------------------------------------------------------------------------------------------------------------------
# Input checks and windows


def check_inputs(question: str | None, context: str | None) -> tuple[str, str, list[str]]:
    """Question and context as the model will read them, plus notes; UserInputError if they cannot be used."""
    question, clean, notes = _checked(question, context)
    return question, clean.text, notes


def _checked(question: str | None, context: str | None) -> tuple[str, CleanText, list[str]]:
    """check_inputs, keeping the map from the normalised context back to the typed one (cut if too long)."""
    question = normalize_text(question or "").strip()
    clean = clean_text(context or "")
    context = clean.text
    if not question:
        raise UserInputError("qa.error_empty_question")
    if not context.strip():
        raise UserInputError("qa.error_empty_context")
    if len(question) > MAX_TEXT_CHARS:
        raise UserInputError("qa.error_question_long", chars=f"{len(question):,}")
    notes = []
    if len(context) > MAX_TEXT_CHARS:
        cut = context.rfind(" ", 0, MAX_TEXT_CHARS)
        cut = cut if cut > MAX_TEXT_CHARS // 2 else MAX_TEXT_CHARS
        notes.append(text("qa.note_cut", chars=f"{len(context):,}", cut=f"{cut:,}", limit=f"{MAX_TEXT_CHARS:,}"))
        end = clean.position(cut)
        clean = CleanText(context[:cut], clean.original[:end], clean.starts[:cut],
                          tuple(min(e, end) for e in clean.ends[:cut]))
    return question, clean, notes


def default_lengths(tokenizer: WordPieceTokenizer, max_seq_len: int | None, doc_stride: int | None,
                    max_positions: int = MAX_MODEL_TOKENS) -> tuple[int, int]:
    """The pipeline's defaults: windows of min(model max, 384) tokens, stride min(window // 2, 128)."""
    limit = min(tokenizer.model_max_length, max_positions, MAX_MODEL_TOKENS)
    max_seq_len = int(max_seq_len or min(limit, QA_DEFAULT_MAX_SEQ_LEN))
    if not 8 <= max_seq_len <= limit:
        raise UserInputError("qa.error_window_range", limit=limit, length=max_seq_len)
    doc_stride = int(min(max_seq_len // 2, 128) if doc_stride is None else doc_stride)
    # Checked before any tokenising: a window holds at most max_seq_len - 3 context tokens ([CLS], two [SEP],
    # and at least one question token take the rest), and the tokenizer refuses a stride that is not smaller.
    if not 0 <= doc_stride < max_seq_len - 3:
        raise UserInputError("qa.error_stride_range", stride=doc_stride, below=max_seq_len - 3, length=max_seq_len)
    return max_seq_len, doc_stride


MAX_WINDOWERS = 8
_windowers: dict[int, tuple[Tokenizer, Tokenizer, threading.Lock]] = {}
_windowers_lock = threading.Lock()


def _windower(tokenizer: WordPieceTokenizer) -> tuple[Tokenizer, threading.Lock]:
    """A private copy of the tokenizer whose truncation we may switch on (the shared one stays untruncated)."""
    with _windowers_lock:
        entry = _windowers.get(id(tokenizer.backend))
        if entry is None or entry[0] is not tokenizer.backend:
            entry = _windowers[id(tokenizer.backend)] = (tokenizer.backend,
                                                         Tokenizer.from_str(tokenizer.backend.to_str()),
                                                         threading.Lock())
            while len(_windowers) > MAX_WINDOWERS:  # one per tokenizer in use; the oldest go
                del _windowers[next(iter(_windowers))]
    return entry[1], entry[2]


def make_windows(tokenizer: WordPieceTokenizer, question: str, context: str, max_seq_len: int,
                 doc_stride: int) -> list[Window]:
    """Cut ``[CLS] question [SEP] context [SEP]`` into windows of at most ``max_seq_len`` tokens.

    Each window repeats the whole question; consecutive windows share ``doc_stride`` context tokens. This is the
    fast tokenizer's ``truncation="only_second"`` with ``return_overflowing_tokens`` and ``stride``, which is what
    the pipeline calls."""
    shared = tokenizer.backend  # untruncated: for counting tokens
    question_len = len(shared.encode(question, add_special_tokens=False))
    if question_len == 0:
        raise UserInputError("qa.error_question_no_tokens")
    room = max_seq_len - shared.num_special_tokens_to_add(True) - question_len  # context tokens per window
    if room <= 0:
        raise UserInputError("qa.error_question_tokens", count=question_len, length=max_seq_len)
    # The tokenizer requires stride < room, but only when the context must be cut (the pipeline would crash here).
    context_len = len(shared.encode(context, add_special_tokens=False))
    if doc_stride >= room and context_len > room:
        raise UserInputError("qa.error_stride_room", stride=doc_stride, room=room)
    windows_needed = 1 if context_len <= room else 1 + math.ceil((context_len - room) / (room - doc_stride))
    if windows_needed > MAX_WINDOWS:
        raise UserInputError("qa.error_too_many_windows", length=max_seq_len, stride=doc_stride,
                             step=room - doc_stride, windows=f"{windows_needed:,}", limit=MAX_WINDOWS)
    backend, lock = _windower(tokenizer)
    with lock:
        backend.enable_truncation(max_seq_len, stride=doc_stride, strategy="only_second")
        backend.no_padding()
        first = backend.encode(question, context)
    if 1 not in first.sequence_ids:
        raise UserInputError("qa.error_context_no_tokens")
    windows = []
    for index, encoding in enumerate([first, *first.overflowing]):
        context_positions = [i for i, s in enumerate(encoding.sequence_ids) if s == 1]
        windows.append(Window(index=index, tokens=list(encoding.tokens), ids=list(encoding.ids),
                              segment_ids=list(encoding.type_ids),
                              context=range(context_positions[0], context_positions[-1] + 1),
                              offsets=[tuple(o) for o in encoding.offsets], encoding=encoding))
    return windows


def input_layout(question: str, context: str, model_id: str | None = None, max_seq_len: int | None = None,
                 doc_stride: int | None = None) -> tuple[list[Window], str]:
    """The windows the model would read, without running it; works offline.

    Uses the checkpoint's tokenizer when its files are here, else MiniLM-L6's (bert-base-uncased's vocabulary).
    Returns the windows and a line naming the tokenizer used."""
    question, context, _ = check_inputs(question, context)
    model_id = model_id_or_default("qa", model_id)
    tokenizer, _, missing = registry.tokenizer_or_fallback(model_id)
    source = registry.tokens_line(model_id, missing)
    max_seq_len, doc_stride = default_lengths(tokenizer, max_seq_len, doc_stride)
    return make_windows(tokenizer, question, context, max_seq_len, doc_stride), source


# ------------------------------------------------------------------------------------------------------------------
# Model and decoding


def _probabilities(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax over the tokens that may hold the answer; others get the pipeline's -10000 first (float32)."""
    logits = np.where(allowed, logits, np.float32(MASKED_LOGIT))  # (T,)
    probs = np.exp(logits - logits.max())
    return probs / probs.sum()


def _best_spans(p_start: np.ndarray, p_end: np.ndarray, max_answer_len: int, k: int) -> list[tuple[int, int, float]]:
    """The k best (i, j, P_start(i)·P_end(j)) with i ≤ j < i + max_answer_len, as positions in the given arrays."""
    scores = np.tril(np.triu(np.outer(p_start, p_end)), max_answer_len - 1)  # (C, C): keep j - i in [0, len)
    flat = scores.ravel()
    if k < flat.size:
        top = np.argpartition(-flat, k)[:k]
        top = top[np.argsort(-flat[top])]
    else:
        top = np.argsort(-flat)
    starts, ends = np.unravel_index(top, scores.shape)
    return [(int(i), int(j), flat[t]) for i, j, t in zip(starts, ends, top) if flat[t] > 0]


def _char_span(window: Window, i: int, j: int) -> tuple[int, int]:
    """Token positions → character span in the context, widened to whole words (a span may start mid-word)."""
    encoding = window.encoding
    start = encoding.word_to_chars(encoding.token_to_word(i), sequence_index=1)[0]
    end = encoding.word_to_chars(encoding.token_to_word(j), sequence_index=1)[1]
    return start, end


def _logits(loaded: registry.LoadedModel, windows: list[Window],
            progress: Callable[[float, str], None] | None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Start and end logits of every window, BATCH_WINDOWS per forward pass. Windows are taken in order of length,
    so most passes hold windows of one length (all but the last of a long context, usually): no padding, no
    attention mask, and the fused attention kernel stays on its fast path. A pass of mixed lengths (the windows of
    several requests, batched) pads and masks the padding out of attention."""
    order = sorted(range(len(windows)), key=lambda i: len(windows[i].ids))
    out: list[tuple[np.ndarray, np.ndarray]] = [None] * len(windows)  # type: ignore[list-item]
    with torch.inference_mode():
        for done in range(0, len(order), BATCH_WINDOWS):
            rows = order[done:done + BATCH_WINDOWS]
            if progress is not None and len(windows) > BATCH_WINDOWS:
                progress(done / len(windows), text("qa.progress_windows", first=done + 1, last=done + len(rows),
                                                     total=len(windows)))
            lengths = [len(windows[r].ids) for r in rows]
            longest = max(lengths)
            ids = torch.tensor([windows[r].ids + [0] * (longest - n) for r, n in zip(rows, lengths)])  # (B, T)
            segments = torch.tensor([windows[r].segment_ids + [0] * (longest - n) for r, n in zip(rows, lengths)])
            mask = None
            if min(lengths) < longest:
                mask = torch.tensor([[1] * n + [0] * (longest - n) for n in lengths]).to(loaded.device)  # (B, T)
            spans = loaded.model(ids.to(loaded.device), mask, segments.to(loaded.device), output_attentions=False,
                                 output_hidden_states=False)
            start = spans.start_logits.float().cpu().numpy()  # (B, T)
            end = spans.end_logits.float().cpu().numpy()
            for row, (r, n) in enumerate(zip(rows, lengths)):
                out[r] = (start[row, :n], end[row, :n])
    return out


def answer(question: str, context: str, model_id: str | None = None, *, top_k: int = 1,
           max_answer_len: int = QA_DEFAULT_MAX_ANSWER_LEN, doc_stride: int | None = None,
           max_seq_len: int | None = None, handle_impossible_answer: bool = False,
           progress: Callable[[float, str], None] | None = None) -> QAResult:
    """Find the answer to ``question`` in ``context``. Raises ModelUnavailableError / UserInputError."""
    result = answer_many([dict(question=question, context=context, top_k=top_k, max_answer_len=max_answer_len,
                               doc_stride=doc_stride, max_seq_len=max_seq_len,
                               handle_impossible_answer=handle_impossible_answer)], model_id, progress)[0]
    if isinstance(result, UserInputError):
        raise result
    return result


def answer_many(requests: list[dict], model_id: str | None = None,
                progress: Callable[[float, str], None] | None = None) -> list[QAResult | UserInputError]:
    """``answer`` for several requests (each a dict of answer's arguments: question, context, top_k, ...) with one
    checkpoint (Gradio's dynamic batching): the windows of all requests share forward passes. A request that cannot
    be answered gets its UserInputError in its place. Raises ModelUnavailableError when the checkpoint is not here."""
    loaded = registry.load("qa", model_id)
    planned: list[tuple | UserInputError] = []
    for request in requests:
        try:
            planned.append(_plan(loaded, **request))
        except UserInputError as exc:
            planned.append(exc)
    windows = [window for plan in planned if not isinstance(plan, UserInputError) for window in plan[3]]
    logits = iter(_logits(loaded, windows, progress))
    return [plan if isinstance(plan, UserInputError) else _spans(loaded, *plan, [next(logits) for _ in plan[3]])
            for plan in planned]


def _plan(loaded: registry.LoadedModel, question: str, context: str, top_k: int = 1,
          max_answer_len: int = QA_DEFAULT_MAX_ANSWER_LEN, doc_stride: int | None = None, max_seq_len: int | None = None,
          handle_impossible_answer: bool = False) -> tuple:
    """One request checked and cut into windows: (question, typed context, notes, windows, options)."""
    if not 1 <= int(top_k) <= QA_MAX_TOP_K:
        raise UserInputError("qa.error_top_k", limit=QA_MAX_TOP_K, value=top_k)
    if int(max_answer_len) < 1:
        raise UserInputError("qa.error_answer_len", value=max_answer_len)
    top_k, max_answer_len = int(top_k), int(max_answer_len)
    question, typed, notes = _checked(question, context)
    tokenizer = loaded.tokenizer
    max_seq_len, doc_stride = default_lengths(tokenizer, max_seq_len, doc_stride,
                                              loaded.config.max_tokens)
    windows = make_windows(tokenizer, question, typed.text, max_seq_len, doc_stride)
    if len(windows) > 1:
        notes.append(text("qa.note_windows", length=max_seq_len, windows=len(windows), stride=doc_stride))
    return question, typed, notes, windows, (top_k, max_answer_len, max_seq_len, doc_stride, handle_impossible_answer)


def _spans(loaded: registry.LoadedModel, question: str, typed: CleanText, notes: list[str], windows: list[Window],
           options: tuple, logits: list[tuple[np.ndarray, np.ndarray]]) -> QAResult:
    """The best answers of one request from its windows' logits."""
    top_k, max_answer_len, max_seq_len, doc_stride, handle_impossible_answer = options
    context = typed.text  # what the model reads; answers are reported in typed.original
    cls_id = loaded.tokenizer.token_to_id(loaded.tokenizer.cls_token)
    per_window = 2 * top_k + 10  # the pipeline over-asks, because several token spans widen to the same words
    answers: list[Answer] = []
    keys: list[str] = []  # each answer's words as the model read them, lower-cased: spans that give the same add up
    null_score = 1_000_000.0  # min over windows; large and positive to start, as in the pipeline
    for window, (start_logits, end_logits) in zip(windows, logits):
        allowed = np.zeros(len(window.ids), dtype=bool)
        allowed[window.context.start:window.context.stop] = True
        allowed |= np.asarray(window.ids) == cls_id  # [CLS] stays: SQuAD 2.0 models point at it for "no answer"
        p_start, p_end = _probabilities(start_logits, allowed), _probabilities(end_logits, allowed)
        window.null_score = float(p_start[0] * p_end[0])
        null_score = min(null_score, window.null_score)
        ctx = slice(window.context.start, window.context.stop)
        window.start_probs, window.end_probs = p_start[ctx], p_end[ctx]
        window.typed_span = typed.span(*window.char_span)
        for i, j, score in _best_spans(p_start[ctx], p_end[ctx], max_answer_len, per_window):
            i, j = i + window.context.start, j + window.context.start
            start, end = _char_span(window, i, j)
            key = context[start:end].lower()
            same = next((a for a, k in zip(answers, keys) if k == key), None)
            if same is not None:  # the same words found again (another span or window): their scores add up
                same.score += float(score)
            else:
                start, end = typed.span(start, end)  # shown in the text the learner typed
                answers.append(Answer(typed.original[start:end], float(score), start, end, window.index, i, j))
                keys.append(key)
    if handle_impossible_answer:
        answers.append(Answer("", null_score, 0, 0))
    answers = sorted(answers, key=lambda a: a.score, reverse=True)[:top_k]
    return QAResult(question, typed.original, answers, windows, max_seq_len, doc_stride, max_answer_len, notes,
                    loaded.badge)
