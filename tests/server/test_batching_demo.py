"""Dynamic batching (batch=True) of NER: one forward pass for many requests' windows, each request with its own
result or its own message, the same numbers as one request alone, and the endpoint keeps its parameter names."""
from __future__ import annotations


import gradio as gr
import numpy as np
import pytest

from core.tasks import ner as core_ner
from core.loading import registry
from core.text.limits import FILL_BATCH
from core.text.i18n import using_language
from core.tasks import qa as core_qa
from demo.server import result_cache
from demo.tasks import ner, qa

TEXTS = ["Wolfgang lives in Berlin.", "   ", "Angela Merkel visited Emmanuel Macron in Paris on a rainy Monday."]


@pytest.fixture
def ner_folder(conll_ner_checkpoint):
    return str(conll_ner_checkpoint)


def test_tag_many_reads_texts_of_different_lengths_in_one_pass(ner_folder, monkeypatch):
    """Padding is masked out: each text's probabilities equal transformers' on that text alone."""
    import transformers
    loaded = registry.load("ner", ner_folder)
    passes = []
    real_forward = type(loaded.model).forward

    def counted(self, input_ids, *args, **kwargs):
        passes.append(tuple(input_ids.shape))
        return real_forward(self, input_ids, *args, **kwargs)

    monkeypatch.setattr(type(loaded.model), "forward", counted)
    results = core_ner.tag_many(TEXTS, ner_folder)
    assert len(passes) == 1 and passes[0][0] == 2  # the two usable texts, padded to the longer
    assert isinstance(results[1], core_ner.UserInputError)
    reference = transformers.BertForTokenClassification.from_pretrained(ner_folder).eval()
    for result in (results[0], results[2]):
        ids = [loaded.tokenizer.token_to_id("[CLS]"), *(t.id for t in result.tokens),
               loaded.tokenizer.token_to_id("[SEP]")]
        import torch

        with torch.no_grad():
            expected = torch.softmax(reference(torch.tensor([ids])).logits[0, 1:-1], -1).numpy()
        np.testing.assert_allclose(result.probs, expected, atol=1e-5)


def test_a_batch_answers_each_request_and_refuses_only_the_bad_one(ner_folder):
    columns = ner.tag_batch(TEXTS, [ner_folder] * 3, ["first"] * 3)
    assert len(columns) == 9 + ner.RESULT_COLUMNS and all(len(column) == 3 for column in columns)
    for index in (0, 2):  # the same answer as the request alone
        alone = ner.tag_text(TEXTS[index], ner_folder, "first")
        assert columns[1][index] == alone[1] and columns[3][index] == alone[3]
        np.testing.assert_allclose(columns[0][index].probs, alone[0].probs, atol=1e-5)
    with pytest.raises(gr.Error) as alone:
        ner.tag_text(TEXTS[1], ner_folder, "first")
    assert columns[1][1] == f"⚠️ {alone.value.message}"
    assert all(column[1] == gr.skip() for i, column in enumerate(columns) if i != 1)


def test_a_batch_mixes_checkpoints_and_an_unavailable_one(ner_folder):
    columns = ner.tag_batch([TEXTS[0], TEXTS[0]], ["not-here/no-such-ner", ner_folder], ["first", "first"])
    assert "hf download not-here/no-such-ner" in columns[1][0]  # its offline view, tokenisation included
    assert columns[8][0] and columns[1][1].startswith("**Model:**")  # its token table; the other one tagged
    assert columns[-1] == [{"__type__": "update", "visible": False}, {"__type__": "update", "visible": True}]


def test_a_refused_request_speaks_its_own_language(ner_folder):
    """Gradio hands a batch handler a list of requests, one per request (a Chinese page got English before: the
    language was read from the list itself, which has no headers). Mixed languages in one batch: each its own."""
    from types import SimpleNamespace

    zh, en = (SimpleNamespace(headers={"accept-language": lang}) for lang in ("zh-CN", "en-US"))
    said = {}
    for lang in ("zh", "en"):
        with using_language(lang):
            with pytest.raises(gr.Error) as alone:
                ner.tag_text(TEXTS[1], ner_folder, "first")
        said[lang] = alone.value.message
    assert said["zh"] != said["en"]
    columns = ner.tag_batch([TEXTS[1]], [ner_folder], ["first"], request=[zh])
    assert columns[1] == [f"⚠️ {said['zh']}"]
    columns = ner.tag_batch([TEXTS[1]] * 2, [ner_folder] * 2, ["first"] * 2, request=[zh, en])
    assert columns[1] == [f"⚠️ {said['zh']}", f"⚠️ {said['en']}"]


def test_the_bert_events_are_batched_with_their_parameter_names():
    import app

    blocks = app.build_app()
    by_name = {fn.api_name: fn for fn in blocks.fns.values()}
    expected = {"ner_tag": ["text", "model_id", "strategy"],
                "mlm_fill": ["model_id", "text", "top_k", "temperature", "sampling_top_k", "top_p", "seed"],  # #36
                "qa_answer": ["model_id", "question", "context", "max_answer_len", "top_k", "doc_stride",
                              "max_seq_len", "no_answer"]}
    info = blocks.get_api_info()["named_endpoints"]
    for name, parameters in expected.items():
        bound = FILL_BATCH if name == "mlm_fill" else 8  # each event's own bound; PLM_MAX_BATCH picks within it
        assert by_name[name].batch and by_name[name].max_batch_size == result_cache.max_batch(bound), name  # 1 unless asked
        assert [p["parameter_name"] for p in info[f"/{name}"]["parameters"]] == parameters, name


QUESTIONS = [("Where does Wolfgang live?", "My name is Wolfgang and I live in Berlin."),
             ("What falls?", "In meteorology, precipitation is any product of the condensation of atmospheric water "
                             "vapor that falls under gravity. The main forms include drizzle, rain, sleet and snow.")]


@pytest.fixture(scope="module")
def qa_folder(tiny_checkpoint):
    return str(tiny_checkpoint("BertForQuestionAnswering", num_labels=2))


def test_answer_many_shares_passes_and_matches_each_request_alone(qa_folder, monkeypatch):
    loaded = registry.load("qa", qa_folder)
    passes = []
    real_forward = type(loaded.model).forward

    def counted(self, input_ids, *args, **kwargs):
        passes.append(tuple(input_ids.shape))
        return real_forward(self, input_ids, *args, **kwargs)

    asked = [dict(question=q, context=c, top_k=3) for q, c in QUESTIONS]
    alone = [core_qa.answer(q, c, qa_folder, top_k=3) for q, c in QUESTIONS]
    monkeypatch.setattr(type(loaded.model), "forward", counted)
    together = core_qa.answer_many([asked[0], dict(question="", context="x"), asked[1]], qa_folder)
    assert len(passes) == 1 and passes[0][0] == 2  # two requests of different lengths, one padded pass
    assert isinstance(together[1], core_qa.UserInputError)
    for mine, reference in zip([together[0], together[2]], alone):
        assert [a.text for a in mine.answers] == [a.text for a in reference.answers]
        assert [a.score for a in mine.answers] == pytest.approx([a.score for a in reference.answers], rel=1e-4)


def test_qa_batch_refuses_only_the_bad_request(qa_folder):
    (q1, c1), (q2, c2) = QUESTIONS
    columns = qa.answer_batch([qa_folder] * 3, [q1, q2, q2], [c1, c2, ""], [30] * 3, [3] * 3, [128] * 3,
                              [384] * 3, [False] * 3)
    for index, (q, c) in ((0, (q1, c1)), (1, (q2, c2))):
        alone = qa.answer_question(qa_folder, q, c, 30, 3, 128, 384, False)
        assert columns[1][index] == alone[1] and columns[2][index].equals(alone[2])  # summary, candidates table
    with pytest.raises(gr.Error) as refused:
        qa.answer_question(qa_folder, q2, "", 30, 3, 128, 384, False)
    assert columns[1][2] == f"⚠️ {refused.value.message}"
