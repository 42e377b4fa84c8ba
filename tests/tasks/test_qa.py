"""core.tasks.qa: parity with transformers' question-answering pipeline on tiny random checkpoints, windows, bad input.

The reference is benchmarks.bench_qa.TransformersQA: transformers 5 no longer ships QuestionAnsweringPipeline, so it
is that pipeline rebuilt from transformers' own tokenizer call, model and span decoder (select_starts_ends).
"""
import numpy as np
import pytest

from benchmarks.bench_qa import TransformersQA, context_of
from core.tasks import qa
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.limits import MAX_TEXT_CHARS
from core.loading import checkpoints
from core.text import seeds

QUESTION = "Where do water droplets collide with ice crystals?"
LONG = context_of(260)  # needs several windows at max_seq_len 64-128


@pytest.fixture(scope="module")
def bert_folder(tiny_checkpoint):
    return str(tiny_checkpoint("BertForQuestionAnswering", num_labels=2))


@pytest.fixture(scope="module")
def distil_folder(tiny_checkpoint):
    return str(tiny_checkpoint("DistilBertForQuestionAnswering", num_labels=2))


@pytest.fixture(scope="module")
def reference(bert_folder, distil_folder):
    return {bert_folder: TransformersQA(bert_folder), distil_folder: TransformersQA(distil_folder)}


def assert_same_answers(ours: qa.QAResult, theirs: list[dict]):
    assert len(ours.answers) == len(theirs)
    for mine, ref in zip(ours.answers, theirs):
        assert (mine.text, mine.start, mine.end) == (ref["answer"], ref["start"], ref["end"])
        assert mine.score == pytest.approx(ref["score"], rel=1e-4, abs=1e-9)


CASES = [
    (QUESTION, seeds.PRECIPITATION, {}),
    (QUESTION, seeds.PRECIPITATION, {"top_k": 5}),
    (QUESTION, seeds.PRECIPITATION, {"top_k": 3, "max_answer_len": 3}),
    (seeds.SEED_EN[0][0], seeds.PRECIPITATION, {"top_k": 4, "handle_impossible_answer": True}),
    (*seeds.SEED_ZH, {"top_k": 6, "handle_impossible_answer": True}),
    (QUESTION, LONG, {"max_seq_len": 64, "doc_stride": 16, "top_k": 4}),
    (QUESTION, LONG, {"max_seq_len": 96, "doc_stride": 40, "top_k": 3, "max_answer_len": 5,
                      "handle_impossible_answer": True}),
    (QUESTION, LONG, {"max_seq_len": 128, "doc_stride": 0, "top_k": 2}),
]


@pytest.mark.parametrize("question,context,options", CASES)
@pytest.mark.parametrize("family", ["bert", "distilbert"])
def test_answers_scores_offsets_equal_transformers_pipeline(family, question, context, options, bert_folder,
                                                            distil_folder, reference):
    folder = bert_folder if family == "bert" else distil_folder
    ours = qa.answer(question, context, folder, **options)
    theirs = reference[folder](question, context, **options)
    assert_same_answers(ours, theirs)
    if options.get("max_seq_len", 384) < 384:
        assert len(ours.windows) > 1  # the long cases really exercise the windows


@pytest.fixture(scope="module")
def null_folder(bert_folder, tmp_path_factory):
    """The tiny BERT with S = E = 4·h_[CLS]/|h_[CLS]| for the seed pair, so [CLS] ("no answer") wins clearly."""
    import torch
    import transformers

    model = transformers.BertForQuestionAnswering.from_pretrained(bert_folder).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(bert_folder)
    with torch.no_grad():
        hidden = model.bert(**tokenizer(*seeds.SEED_ZH, return_tensors="pt")).last_hidden_state[0, 0]  # (H,)
        model.qa_outputs.weight.copy_(4 * hidden / hidden.norm())
    folder = tmp_path_factory.mktemp("qa_null")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_no_answer_wins_like_the_pipeline(null_folder):
    reference = TransformersQA(null_folder)
    ours = qa.answer(*seeds.SEED_ZH, null_folder, top_k=3, handle_impossible_answer=True)
    theirs = reference(*seeds.SEED_ZH, top_k=3, handle_impossible_answer=True)
    assert_same_answers(ours, theirs)
    assert ours.best.is_null and ours.best.text == "" and (ours.best.start, ours.best.end) == (0, 0)
    assert ours.best.score == pytest.approx(ours.windows[0].null_score)
    without = qa.answer(*seeds.SEED_ZH, null_folder, top_k=3)  # the option off: the best span again
    assert_same_answers(without, reference(*seeds.SEED_ZH, top_k=3))
    assert not any(a.is_null for a in without.answers)


def test_windows_equal_the_fast_tokenizer_overflow(bert_folder, reference):
    tokenizer = reference[bert_folder].tokenizer
    for max_seq_len, stride in [(64, 16), (48, 5), (384, 128)]:
        ours = qa.answer(QUESTION, LONG, bert_folder, max_seq_len=max_seq_len, doc_stride=stride).windows
        theirs = tokenizer(text=QUESTION, text_pair=LONG, truncation="only_second", max_length=max_seq_len,
                           stride=stride, return_overflowing_tokens=True, return_offsets_mapping=True,
                           return_token_type_ids=True)
        assert len(ours) == len(theirs["input_ids"])
        for i, window in enumerate(ours):
            assert window.ids == list(theirs["input_ids"][i])
            assert window.segment_ids == list(theirs["token_type_ids"][i])
            assert window.offsets == [tuple(o) for o in theirs["offset_mapping"][i]]
            assert list(window.context) == [t for t, s in enumerate(theirs.sequence_ids(i)) if s == 1]


def test_window_probabilities_are_the_masked_softmax_of_the_reference_logits(bert_folder, reference):
    import torch

    ref = reference[bert_folder]
    result = qa.answer(QUESTION, LONG, bert_folder, max_seq_len=80, doc_stride=20)
    for window in result.windows:
        with torch.no_grad():
            out = ref.model(input_ids=torch.tensor([window.ids]), token_type_ids=torch.tensor([window.segment_ids]))
        for logits, probs in ((out.start_logits[0].numpy(), window.start_probs),
                              (out.end_logits[0].numpy(), window.end_probs)):
            keep = np.r_[[0], np.arange(window.context.start, window.context.stop)]  # [CLS] + context
            expected = np.exp(logits[keep] - logits[keep].max())
            expected /= expected.sum()
            np.testing.assert_allclose(probs, expected[1:], rtol=1e-4, atol=1e-7)
            assert probs.sum() + expected[0] == pytest.approx(1.0, abs=1e-5)


def test_best_span_respects_max_answer_len_and_lies_in_the_context(bert_folder):
    result = qa.answer(QUESTION, LONG, bert_folder, top_k=10, max_answer_len=2, max_seq_len=64, doc_stride=16)
    for a in result.answers:
        assert 0 <= a.token_end - a.token_start < 2
        window = result.windows[a.window]
        assert a.token_start in window.context and a.token_end in window.context
        assert result.context[a.start:a.end] == a.text and a.text.strip()
    assert [a.score for a in result.answers] == sorted((a.score for a in result.answers), reverse=True)


# ------------------------------------------------------------------------------------------------------------------
# Input layout (offline) and presets


def test_input_layout_works_offline_and_matches_bert_tokenizer(reference, bert_folder):
    windows, source = qa.input_layout(*seeds.SEED_ZH, "distilbert-base-cased-distilled-squad")
    assert "not available" in source and "MiniLM" in source
    theirs = reference[bert_folder].tokenizer(*seeds.SEED_ZH, return_token_type_ids=True)  # same bert-base vocab
    assert len(windows) == 1
    assert windows[0].ids == theirs["input_ids"]
    assert windows[0].segment_ids == theirs["token_type_ids"]
    assert windows[0].tokens[0] == "[CLS]" and windows[0].tokens[-1] == "[SEP]"
    assert windows[0].tokens[windows[0].context.start - 1] == "[SEP]"
    assert "37" in windows[0].context_tokens


def test_default_model_offline_gives_a_clear_message():
    with pytest.raises(ModelUnavailableError, match="distilbert-base-cased-distilled-squad"):
        qa.answer(*seeds.SEED_EN[0])


def test_seed_presets_hold_their_answers():
    question, context = seeds.SEED_ZH
    assert "37 摄氏度" in context and "温度" in question
    assert "falls under gravity" in seeds.PRECIPITATION
    assert "Within a cloud, water droplets collide with ice crystals" in seeds.PRECIPITATION


# ------------------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("question,context,message", [
    ("", seeds.PRECIPITATION, "question is empty"),
    ("   ", seeds.PRECIPITATION, "question is empty"),
    (QUESTION, "", "context is empty"),
    (QUESTION, "\u200b\u0007", "no tokens"),
])
def test_empty_inputs_are_refused(bert_folder, question, context, message):
    with pytest.raises(UserInputError, match=message):
        qa.answer(question, context, bert_folder)


def test_question_longer_than_the_window(bert_folder):
    with pytest.raises(UserInputError, match="question has .* tokens"):
        qa.answer(" ".join(["why"] * 80), LONG, bert_folder, max_seq_len=64)
    with pytest.raises(UserInputError, match="doc stride"):
        qa.answer(QUESTION, LONG, bert_folder, max_seq_len=64, doc_stride=60)
    with pytest.raises(UserInputError, match="top-k"):
        qa.answer(QUESTION, LONG, bert_folder, top_k=0)


def test_huge_context_is_cut_with_a_note_and_windowed(bert_folder):
    context = context_of(10_000)
    assert len(context) > 50_000
    result = qa.answer(QUESTION, context, bert_folder)
    assert len(result.context) <= MAX_TEXT_CHARS and context.startswith(result.context)
    assert any("only the first" in note for note in result.notes)
    assert len(result.windows) > 10
    assert result.context[result.best.start:result.best.end] == result.best.text


class _NoTokenizing:
    """A tokenizer stand-in whose use would fail: the stride check must come before any tokenising."""
    model_max_length = 512

    @property
    def backend(self):
        raise AssertionError("tokenised before checking the stride")


@pytest.mark.parametrize("max_seq_len,doc_stride", [(128, 127), (128, 128), (128, 125), (64, 61), (384, 400)])
def test_stride_close_to_the_window_is_refused_before_tokenising(bert_folder, max_seq_len, doc_stride):
    with pytest.raises(UserInputError, match=r"doc stride \(\d+\) must be .* below \d+"):
        qa.default_lengths(_NoTokenizing(), max_seq_len, doc_stride)
    with pytest.raises(UserInputError, match="doc stride"):  # a short context too: the combination itself is wrong
        qa.answer(QUESTION, seeds.PRECIPITATION, bert_folder, max_seq_len=max_seq_len, doc_stride=doc_stride)


def test_stride_that_would_need_thousands_of_windows_is_refused(bert_folder):
    question_len = 11  # "where do water droplets collide with ice crystals?" in WordPieces, + 3 specials = 14
    with pytest.raises(UserInputError, match=r"would need [\d,]+ windows \(the limit is 256\)"):
        qa.answer(QUESTION, context_of(3000), bert_folder, max_seq_len=64, doc_stride=64 - 3 - question_len - 1)


# ----------------------------------------------------------------------------------------------------------------
# The Chinese QA checkpoint (issue #19): through the registry, parity, offsets in the learner's own text


@pytest.fixture
def chinese_qa(monkeypatch, tmp_path):
    """uer/roberta-base-chinese-extractive-qa's layout (BertForQuestionAnswering, pytorch_model.bin only, vocab.txt
    and tokenizer_config.json), tiny and random, served under its real id by a local Hub."""
    from tests import chinese_checkpoints

    folder = chinese_checkpoints.write(tmp_path / "zh-qa", "BertForQuestionAnswering", safetensors=False,
                                       tokenizer_config=True, num_labels=2)
    assert not (folder / "model.safetensors").exists() and not (folder / "tokenizer.json").exists()
    server = chinese_checkpoints.serve(monkeypatch, tmp_path, {checkpoints.CHINESE_QA_ID: folder})
    yield folder
    chinese_checkpoints.stop(server)


def test_chinese_qa_checkpoint_is_offered_and_loads_through_the_registry(chinese_qa):
    from core.loading import registry
    from core.nets.bert import BertForQuestionAnswering

    assert checkpoints.CHINESE_QA_ID in checkpoints.CHECKPOINTS["qa"] and checkpoints.SQUAD2_ID in checkpoints.CHECKPOINTS["qa"]
    loaded = registry.load("qa", checkpoints.CHINESE_QA_ID)
    assert isinstance(loaded.model, BertForQuestionAnswering) and loaded.config.model_type == "bert"
    assert "downloaded now (" in loaded.badge
    # BERT's Chinese handling: one token per character, "37" whole (it is in the vocabulary)
    encoding = loaded.tokenizer.encode(*seeds.SEED_ZH)
    assert encoding.tokens[:4] == ["[CLS]", "今", "天", "的"] and "37" in encoding.tokens
    assert encoding.tokens[-4:] == ["摄", "氏", "度", "[SEP]"]


def test_chinese_seed_answers_match_transformers_and_map_to_the_typed_context(chinese_qa):
    """The seed's question on a context typed with a control character and a Windows line break: answers equal
    transformers' pipeline on the cleaned text, and each one's offsets point into the text as typed."""
    question, context = seeds.SEED_ZH
    typed = "天气预报显示\x07今天最高温度\r\n37 摄氏度"
    cleaned = "天气预报显示今天最高温度\n37 摄氏度"
    ours = qa.answer(question, typed, checkpoints.CHINESE_QA_ID, top_k=8)
    theirs = TransformersQA(str(chinese_qa))(question, cleaned, top_k=8)
    assert len(ours.answers) == len(theirs) == 8
    removed = 1  # the \x07 before "今"; \r\n became one "\n"
    for mine, ref in zip(ours.answers, theirs):
        assert mine.score == pytest.approx(ref["score"], rel=1e-4, abs=1e-9)
        assert typed[mine.start:mine.end] == mine.text  # offsets into the learner's text
        assert mine.text.replace("\x07", "").replace("\r\n", "\n") == ref["answer"]
        shift = (removed if ref["start"] >= 6 else 0) + (1 if ref["start"] > cleaned.index("\n") else 0)
        assert mine.start == ref["start"] + shift


def test_the_seeds_span_37_to_du_is_37_sheshidu_in_the_typed_text(chinese_qa):
    """Seed §14: start at "37", end at "度" gives the answer "37 摄氏度"; the character span is the context's own
    text, mapped back through the cleaning to what the learner typed."""
    from core.loading import registry
    from core.text.textio import clean_text

    question, context = seeds.SEED_ZH
    typed = context.replace("今天", "今\x07天").replace(" 37", "\r\n37")  # odd characters the cleaning changes
    clean = clean_text(typed)
    tokenizer = registry.load("qa", checkpoints.CHINESE_QA_ID).tokenizer
    window = qa.make_windows(tokenizer, question, clean.text, 384, 128)[0]
    i = window.tokens.index("37")
    j = len(window.tokens) - 1 - window.tokens[::-1].index("度")
    assert window.context.start <= i < j < window.context.stop
    start, end = qa._char_span(window, i, j)
    assert clean.text[start:end].split() == ["37", "摄氏度"]
    start, end = clean.span(start, end)
    assert typed[start:end] == "37 摄氏度" and start == typed.index("37") and end == len(typed)
