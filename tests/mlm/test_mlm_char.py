"""core/mlm/char.py and core/mlm/char_compare.py: the char-BERT fills blanks, one [MASK] per character, independently
and iteratively, and reads one blank beside the char-GPT; bad input gets a clear message."""
from __future__ import annotations

import pytest
import torch
import transformers

from core.transformer import gpt
from core.text.errors import UserInputError
from core.text.limits import DEFAULT_BLANK_CHARS, MAX_BLANK_CHARS, MAX_FILLED_CHARS, MAX_MASKS
from core.mlm.char import (CHAR_BERT_ASSETS, CLS_ID, FIRST_CHAR_ID, MASK_ID, SEP_ID, UNK_ID, fill, prepare,
                           shipped_char_bert)
from core.mlm.char_compare import both_sides_vs_left

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SEED_EN = "The weather today is very __, so we had to cancel the outdoor game."


@pytest.fixture(scope="module")
def reference():
    transformers.logging.set_verbosity_error()
    return transformers.BertForMaskedLM.from_pretrained(str(CHAR_BERT_ASSETS)).eval()


def reference_probs(reference, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return reference(input_ids=torch.tensor([ids])).logits[0].softmax(-1)  # (T, V)


def test_a_blank_becomes_one_mask_per_character():
    loaded = shipped_char_bert()
    prepared = prepare(loaded, "Call me ___. I [MASK] a sailor.", [7, 2])
    assert prepared.text == "Call me ___. I [MASK] a sailor."
    assert prepared.lengths == [7, 2] and prepared.ids.count(MASK_ID) == 9
    assert prepared.ids[0] == CLS_ID and prepared.ids[-1] == SEP_ID
    assert prepared.ids[prepared.starts[0] - 8:prepared.starts[0]] == loaded.tokenizer.encode("Call me ")[0]
    assert prepare(loaded, "a __ b").lengths == [DEFAULT_BLANK_CHARS]
    assert prepare(loaded, "a __ b __", 3).lengths == [3, 3]


def test_independent_fill_is_the_argmax_of_transformers_probabilities(reference):
    result = fill("Call me ______. Some years ago, never mind how long precisely.", 6, top_k=5)
    tokenizer = shipped_char_bert().tokenizer
    probs = reference_probs(reference, [tokenizer.index[token] for token in result.tokens])
    for masked in result.masked:
        best = probs[masked.position, FIRST_CHAR_ID:].topk(5)
        assert [c.char for c in masked.candidates] == [tokenizer.tokens[i + FIRST_CHAR_ID]
                                                      for i in best.indices.tolist()]
        assert [c.probability for c in masked.candidates] == pytest.approx(best.values.tolist(), abs=1e-5)
    assert result.blanks[0].independent == "".join(m.candidates[0].char for m in result.masked)
    assert result.independent == result.text.replace("______", result.blanks[0].independent)


def test_iterative_fill_takes_the_most_confident_position_and_runs_the_model_again(reference):
    result = fill(SEED_EN, 6, top_k=3)
    first = {m.position: m for m in result.masked}
    assert len(result.steps) == 6 and sorted(s.position for s in result.steps) == sorted(first)
    step = result.steps[0]
    # step 1 reads the first pass: the winner is the position whose best character is most probable ...
    assert step.probability == max(c for _, _, c in step.confidences)
    assert [(p, ch) for p, ch, _ in step.confidences] == [(m.position, m.candidates[0].char) for m in result.masked]
    assert [c for _, _, c in step.confidences] == pytest.approx([m.candidates[0].probability for m in result.masked])
    # ... and it writes that position's independent argmax
    assert step.char == first[step.position].candidates[0].char
    ids = prepare(shipped_char_bert(), SEED_EN, 6).ids
    tokens = shipped_char_bert().tokenizer
    for done, step in enumerate(result.steps):
        assert step.step == done + 1
        assert step.probability == max(c for _, _, c in step.confidences)  # each step: the most confident left
        assert len(step.confidences) == 6 - done
        # transformers, given the characters written so far, agrees with the step's numbers
        probs = reference_probs(reference, ids)[step.position]
        assert float(probs[tokens.index[step.char]]) == pytest.approx(step.probability, abs=1e-5)
        assert int(probs[FIRST_CHAR_ID:].argmax()) + FIRST_CHAR_ID == tokens.index[step.char]
        ids[step.position] = tokens.index[step.char]
    blank = result.blanks[0]
    assert sorted(blank.order) == list(range(6)) and len(blank.iterative) == 6
    assert result.iterative == SEED_EN.replace("__", blank.iterative)


def test_several_blanks_are_filled_in_one_order():
    result = fill("It was the best of _____, it was the worst of ____.", [5, 4])
    assert [len(b.iterative) for b in result.blanks] == [5, 4]
    assert {s.blank for s in result.steps} == {0, 1} and len(result.steps) == 9
    assert result.iterative.startswith("It was the best of ") and result.iterative.endswith(".")


def test_unknown_characters_are_named_and_read_as_unk():
    result = fill("Naïve café ___ here", 3)
    assert result.unknown == ["ï", "é"] and result.tokens.count("[UNK]") == 2
    assert "ï" in result.note and "é" in result.note
    assert prepare(shipped_char_bert(), "x é __").ids.count(UNK_ID) == 1


def test_carriage_returns_and_whitespace_runs_read_as_one_space():
    loaded = shipped_char_bert()
    assert prepare(loaded, "Call\r\nme \t ___.\r").text == "Call me ___."


@pytest.mark.parametrize("text, blank_chars, key", [
    ("", None, "mlm_char.empty"),
    ("   \r\n ", None, "mlm_char.empty"),
    (None, None, "mlm_char.empty"),
    ("no blank here", None, "mlm_char.no_blank"),
    (" _ ".join(["w"] * (MAX_MASKS + 2)), 1, "mlm_char.too_many_blanks"),
    ("a __ b __", [3], "mlm_char.lengths_per_blank"),
    ("a __ b", 0, "mlm_char.blank_chars_range"),
    ("a __ b", MAX_BLANK_CHARS + 1, "mlm_char.blank_chars_range"),
    ("a __ b", 2.5, "mlm_char.blank_chars_range"),
    ("a __ b", "six", "mlm_char.blank_chars_range"),
    ("a __ b", float("nan"), "mlm_char.blank_chars_range"),
    ("a __ b", float("inf"), "mlm_char.blank_chars_range"),
    ("a __ b", True, "mlm_char.blank_chars_range"),
    ("a __ b __ c __", MAX_FILLED_CHARS // 3 + 1, "mlm_char.too_many_chars"),
    ("x" * 506 + " ___", 4, "mlm_char.too_many_positions"),
    ("x" * 30_000 + " ___", 4, "mlm_char.too_long"),
    ("你好__。", 2, "mlm_char.all_unknown"),
])
def test_bad_input_gets_a_message(text, blank_chars, key):
    with pytest.raises(UserInputError) as caught:
        prepare(shipped_char_bert(), text, blank_chars)
    assert caught.value.key == key
    assert "Traceback" not in str(caught.value) and len(str(caught.value)) < 400


def test_the_longest_input_fits_the_position_table():
    prepared = prepare(shipped_char_bert(), "x" * 505 + " ___", 4)  # 505 + 1 + 4 characters + [CLS] + [SEP]
    assert len(prepared.ids) == 512


@pytest.mark.parametrize("top_k", [0, 21, "many", None])
def test_top_k_is_checked(top_k):
    with pytest.raises(UserInputError, match="candidates"):
        fill("Call me ___.", 3, top_k=top_k)


def test_both_sides_vs_left_only_on_one_blank():
    result = both_sides_vs_left(SEED_EN, 5, top_k=4)
    left = "The weather today is very "
    assert result.left == left and result.blank_chars == 5
    # the char-GPT's first character is its next-character softmax after the left side
    model, vocab, _ = gpt.shipped_char_gpt()
    with torch.inference_mode():
        ids = torch.tensor([vocab.encode(left)[0]], device=model.lm_head.weight.device)  # the model's device
        probs = model(ids).logits[0, -1].softmax(-1).cpu()
    top = probs[1:].topk(4)
    assert [c.char for c in result.gpt.first] == [vocab.tokens[i + 1] for i in top.indices.tolist()]
    assert [c.probability for c in result.gpt.first] == pytest.approx(top.values.tolist(), abs=1e-6)
    assert result.gpt.steps[0] == result.gpt.first[0] and len(result.gpt.word) == 5 and not result.gpt.cut
    # both sides: the fill of the whole text; left only: the fill of the text cut after the blank
    assert result.both.iterative == fill(SEED_EN, 5).iterative
    assert result.left_only.text == left + "__"
    assert result.left_only.iterative == fill(left + "__", 5).iterative


def test_the_char_gpt_reads_only_its_context():
    text = "Call me Ishmael. " * 10 + "___ years ago."
    result = both_sides_vs_left(text, 4)
    assert result.gpt.cut and len(result.gpt.left) == 128 and "128" in result.note


@pytest.mark.parametrize("text, key", [
    ("__ is at the start", "mlm_char.blank_at_start"),
    ("two __ blanks __", "mlm_char.one_blank"),
    ("no blanks", "mlm_char.no_blank"),
])
def test_both_sides_vs_left_refuses(text, key):
    with pytest.raises(UserInputError) as caught:
        both_sides_vs_left(text, 3)
    assert caught.value.key == key
