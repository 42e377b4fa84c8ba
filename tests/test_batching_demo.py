"""demo/batching.py: NER, QA and attention answer batches of requests (Gradio's batch=True), each request with its
own result or its own message, and the endpoints keep their parameter names."""
from __future__ import annotations

import json
import shutil

import gradio as gr
import pytest

from core import registry
from demo import attention, batching, ner

CONLL = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def ner_folder(tiny_checkpoint, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner_conll")
    shutil.copytree(tiny_checkpoint("BertForTokenClassification", num_labels=9), folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    config.update(id2label={str(i): label for i, label in enumerate(CONLL)},
                  label2id={label: i for i, label in enumerate(CONLL)})
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder)


def components(n: int) -> list:
    return [gr.Markdown() for _ in range(n)]


def test_a_batch_answers_each_request_and_refuses_only_the_bad_one(ner_folder):
    outputs = components(9)
    handler = batching.batched(ner.tag_text, components(3), outputs, outputs[1])
    texts = ["Wolfgang lives in Berlin.", "   ", "Angela visited Paris."]
    columns = handler(texts, [ner_folder] * 3, ["first"] * 3)
    assert len(columns) == 9 and all(len(column) == 3 for column in columns)
    for index in (0, 2):  # the same answer as the request alone
        alone = ner.tag_text(texts[index], ner_folder, "first")
        assert columns[1][index] == alone[1]
        assert columns[3][index] == alone[3]  # the entity table
    refused = [column[1] for column in columns]
    with pytest.raises(gr.Error) as alone:
        ner.tag_text(texts[1], ner_folder, "first")
    assert refused[1] == f"⚠️ {alone.value.message}"
    assert all(value == gr.skip() for i, value in enumerate(refused) if i != 1)


def test_a_batch_of_one_behaves_like_the_handler(ner_folder):
    outputs = components(9)
    handler = batching.batched(ner.tag_text, components(3), outputs, outputs[1])
    with pytest.raises(gr.Error):
        handler(["   "], [ner_folder], ["first"])
    single = handler(["Wolfgang lives in Berlin."], [ner_folder], ["first"])
    assert single[1] == [ner.tag_text("Wolfgang lives in Berlin.", ner_folder, "first")[1]]


def test_attention_batch_mixes_models_and_errors():
    model_id = registry.MINILM_ID
    outputs = components(6)
    handler = batching.batched(attention.explore, components(6), outputs, outputs[0])
    columns = handler([model_id, model_id], ["the cat sat", ""], ["", ""], [1, 1], [1, 1], [False, False])
    alone = attention.explore(model_id, "the cat sat", "", 1, 1, False)
    assert columns[0][0] == alone[0]
    assert columns[0][1].startswith("⚠️ ")


def test_the_bert_events_are_batched_with_their_parameter_names():
    import app

    blocks = app.build_app()
    by_name = {fn.api_name: fn for fn in blocks.fns.values()}
    expected = {"ner_tag": ["text", "model_id", "strategy"],
                "qa_answer": ["model_id", "question", "context", "max_answer_len", "top_k", "doc_stride",
                              "max_seq_len", "no_answer"],
                "attention_model": ["model_id", "text", "pair", "layer", "head", "hide_special"],
                "mlm_fill": ["model_id", "text", "top_k"]}
    info = blocks.get_api_info()["named_endpoints"]
    for name, parameters in expected.items():
        assert by_name[name].batch and by_name[name].max_batch_size > 1, name
        assert [p["parameter_name"] for p in info[f"/{name}"]["parameters"]] == parameters, name
