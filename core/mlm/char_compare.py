"""One blank, read three ways (seed §12 vs §13.1): the char-GPT from the left, the char-BERT from both sides, and the
char-BERT from the left only. The two models share their text, split and characters (core/mlm/char.py), so what
differs is the side they read, and for the last pair not even the model.

    char-GPT     P(c_1 | left)  then greedy: c_i = argmax P(· | left, c_1 … c_{i−1})     (reads left to right)
    char-BERT    P(c_i | left, [MASK] × n, right), filled iteratively (core/mlm/char.py)    (both sides)
    left only    the same char-BERT on the text cut right after the blank: [CLS] left [MASK] × n [SEP]

The char-GPT's first character is the one number that compares directly with the char-BERT's first position: both are
a distribution over the blank's first character. Candidates are ranked over characters only (never <unk> or a
special token), with the probabilities of the full softmax, as in core/mlm/char.py.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.transformer import gpt
from core.text.errors import UserInputError
from core.text.i18n import text as translate
from core.mlm.char import (CharCandidate, CharFill, check_top_k, fill_prepared, prepare, shipped_char_bert,
                           written_blanks)


@dataclass
class GptWord:
    left: str  # the characters the char-GPT read (the last n_positions of the left side)
    first: list[CharCandidate]  # top-k for the blank's first character: P(c_1 | left)
    steps: list[CharCandidate]  # the greedy characters, each with its probability when it was written
    cut: bool  # the left side was longer than the char-GPT's context and was cut from the left

    @property
    def word(self) -> str:
        return "".join(step.char for step in self.steps)


@dataclass
class SidesComparison:
    text: str  # the cleaned input, one blank
    left: str  # everything before the blank: what the left-only readers get
    blank_chars: int
    gpt: GptWord  # the char-GPT, left only
    both: CharFill  # the char-BERT, both sides
    left_only: CharFill  # the char-BERT, the text cut after the blank
    note: str | None  # characters read as unknown, named; the char-GPT's context cut


def ranked(probs: torch.Tensor, tokens: list[str], first: int, k: int) -> list[CharCandidate]:
    """The k most probable entries of ``probs`` (V,) from id ``first`` on, best first."""
    values, indices = probs[first:].topk(k)
    return [CharCandidate(tokens[i + first], p) for p, i in zip(values.tolist(), indices.tolist())]


@torch.inference_mode()
def gpt_word(left: str, length: int, top_k: int) -> GptWord:
    """The char-GPT's next-character distribution after ``left``, then ``length`` characters written greedily."""
    model, vocab, _ = gpt.shipped_char_gpt()
    context = model.config.n_positions
    ids = vocab.encode(left)[0]
    device = model.lm_head.weight.device
    idx = torch.tensor([ids[-context:]], device=device)  # (1, T)
    first, steps = [], []
    for _ in range(length):
        probs = model(idx[:, -context:]).logits[0, -1].float().softmax(-1)  # (V,)
        best = ranked(probs, vocab.tokens, 1, top_k)  # id 0 is <unk>: never written
        first = first or best
        steps.append(best[0])
        idx = torch.cat([idx, torch.tensor([[vocab.index[best[0].char]]], device=device)], dim=1)  # (1, T + 1)
    return GptWord(vocab.decode(ids[-context:]), first, steps, len(ids) > context)


def both_sides_vs_left(text: str, blank_chars: int | None = None, top_k: int = 5) -> SidesComparison:
    """One blank (``blank_chars`` characters, default core.text.limits.DEFAULT_BLANK_CHARS) read by the char-GPT from the
    left, by the char-BERT from both sides, and by the char-BERT from the left only."""
    top_k = check_top_k(top_k)
    loaded = shipped_char_bert()
    prepared = prepare(loaded, text, blank_chars)
    if len(prepared.spans) != 1:
        raise UserInputError("mlm_char.one_blank", count=len(prepared.spans))
    (start, end), length = prepared.spans[0], prepared.lengths[0]
    left = prepared.text[:start]
    if not left.strip():
        raise UserInputError("mlm_char.blank_at_start")
    both = fill_prepared(loaded, prepared, top_k)
    left_only = fill_prepared(loaded, prepare(loaded, prepared.text[:end], length), top_k)
    word = gpt_word(left, length, top_k)
    notes = [both.note, translate("mlm_char.gpt_context_cut", context=len(word.left)) if word.cut else None]
    return SidesComparison(prepared.text, left, length, word, both, left_only, " ".join(filter(None, notes)) or None)


def compare_as_written(text: str, top_k: int = 5) -> SidesComparison:
    """``both_sides_vs_left`` with the blank as long as it is written ("___": three characters)."""
    text, lengths = written_blanks(text)
    return both_sides_vs_left(text, lengths or None, top_k)
