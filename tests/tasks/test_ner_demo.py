"""The NER tab's handlers (demo/tasks/ner.py): entities, tables and the probability heatmap from a tiny CoNLL tagger, the
tokenisation view offline, clear errors, the seed's BIO → IOBES converter, and the tab in 中文. The tagger itself is
tests/tasks/test_ner.py."""
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

import app
from core.text import limits
from core.tasks import ner
from core.loading.checkpoints import MINILM_ID
from core.text.limits import MAX_TEXT_CHARS
from demo.tasks import ner as tab
from tests import chinese_checkpoints
from tests.conftest import CONLL_LABELS

TEXT = "Queequeg and Tashtego met Daggoo near Nantucket; Ishmael, Starbuck, Stubb and Flask watched the Pequod."
SEED_ZH = "爱因斯坦在柏林发表演讲。"


@pytest.fixture(scope="module")
def ckip_like_dir(tmp_path_factory):
    return str(chinese_checkpoints.write_ner(tmp_path_factory.mktemp("ckip_like"), SEED_ZH))


def test_tab_handlers_show_entities_tables_and_heatmap(conll_ner_checkpoint):
    out = tab.tag_text(TEXT, str(conll_ner_checkpoint), "first")
    tagged, note, highlighted, entity_rows, scheme_rows, agg_rows, fig, _, token_rows, *columns = out
    assert columns == [{"__type__": "update", "visible": True}] * tab.RESULT_COLUMNS  # the results, shown
    entity_rows, scheme_rows, agg_rows, token_rows = map(tab.rows_of, (entity_rows, scheme_rows, agg_rows, token_rows))
    assert "BertForTokenClassification" in note and "one window" in note
    expected = ner.entities(tagged, "first")
    assert [row[:1] + row[2:] for row in entity_rows] == [[e.entity_group, e.word, e.start, e.end] for e in expected]
    assert "".join(span["token"] for span in highlighted.value) == TEXT
    labelled = [span for span in highlighted.value if span["class_or_confidence"]]
    assert len(labelled) == len(expected) and labelled[0]["class_or_confidence"].startswith(expected[0].entity_group)
    assert [row[2] for row in scheme_rows] == [u.label for u in ner.units(tagged, "first")]
    assert agg_rows and all(len(row) == len(tab.AGG_HEADERS) for row in agg_rows)
    assert len(token_rows) == len(tagged.tokens) and token_rows[1][1] == "##e" and token_rows[1][7] == "yes"
    heat, marks = fig.data
    assert np.asarray(heat.z).shape == (tab.HEAT_ROWS, len(CONLL_LABELS))
    assert list(marks.x) == [heat.x[j] for j in tagged.probs[:tab.HEAT_ROWS].argmax(-1)]  # argmax boxed per row
    for strategy in limits.NER_STRATEGIES:
        assert len(tab.rows_of(tab.show(tagged, strategy)[1])) == len(ner.entities(tagged, strategy))
    no_split = tab.rows_of(tab.show(ner.tag("My name is Wolfgang.", str(conll_ner_checkpoint)), "first")[3])
    assert no_split[0][0].startswith("(no word here is split")
    assert tab.page_heatmap(tagged, 5).data[0].y[0].startswith("5·")
    assert tab.page_heatmap(None, 0).data == ()


def test_tab_offline_message_keeps_tokenisation_view():
    out = tab.tag_text("Call me Ishmael.", "dslim/bert-base-NER", "first")
    assert out[0] is None and "is not on this machine" in out[1] and "hf download dslim/bert-base-NER\n" in out[1]
    assert out[-tab.RESULT_COLUMNS:] == (({"__type__": "update", "visible": False},) * tab.RESULT_COLUMNS)
    rows = tab.rows_of(out[8])  # the tokens still shown, from MiniLM's tokenizer
    assert [row[1] for row in rows] == ["call", "me", "is", "##hma", "##el", "."]
    assert [row[7] for row in rows] == ["", "", "", "yes", "yes", ""]


def test_tab_errors_and_seed_converter(conll_ner_checkpoint):
    with pytest.raises(gr.Error, match="empty"):
        tab.tag_text("  ", str(conll_ner_checkpoint), "first")
    with pytest.raises(gr.Error, match=r"encoder without a task head \(BertModel\).*use it in Attention"):
        tab.tag_text("Berlin", MINILM_ID, "first")
    rows, note = tab.convert_tags(tab.CONVERT_EXAMPLES[0][0])
    rows = tab.rows_of(rows)
    assert [row[2] for row in rows] == ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "O", "O"] and "S-LOC" in note
    with pytest.raises(gr.Error, match="not a BIO tag"):
        tab.convert_tags("Berlin/LOCATION")
    assert len(tab.long_text()) == MAX_TEXT_CHARS


def test_tab_is_wired_in_the_app():
    blocks = app.build_app()
    names = {dep.get("api_name") for dep in blocks.config["dependencies"]}
    assert {"ner_tag", "ner_show", "ner_heatmap", "ner_long_text", "ner_convert"} <= names


def zh_request():
    return SimpleNamespace(headers={"cookie": "plm_lang=zh"})


def test_tab_in_chinese_result_and_error(ckip_like_dir):
    out = tab.tag_text(SEED_ZH, ckip_like_dir, "simple", request=zh_request())
    note = out[1]
    assert out[0].labels == chinese_checkpoints.CKIP_LABELS and "**模型：**" in note and "标注体系 IOBES" in note and "73 个" in note
    assert "IOBES（B、I、E、S）" in note  # the model's own scheme, said in 中文
    assert tab.rows_of(out[4])[0][1] == "爱" and out[4]["headers"][1:3] == ["词元 / 词", "标签（模型）"]
    assert out[6].layout.title.text.startswith("p(标签 | 词元)")
    with pytest.raises(gr.Error) as refused:
        tab.tag_text("   ", ckip_like_dir, "simple", request=zh_request())
    assert refused.value.message == "文本是空的。请输入或粘贴一个要标注的句子，或者选一个例子。"
    rows, converted = tab.convert_tags(tab.CONVERT_EXAMPLES[0][0], request=zh_request())
    assert rows["headers"] == ["词", "BIO", "IOBES"]


def test_offline_chinese_preset_names_the_checkpoint_to_fetch():
    preset = next(p for p in tab.TAG_PRESETS if p.slug == "einstein-berlin-zh")
    text, model_id, strategy = preset.values
    assert model_id == "ckiplab/bert-base-chinese-ner"
    out = tab.tag_text(text, model_id, strategy, request=zh_request())
    assert out[0] is None and "hf download ckiplab/bert-base-chinese-ner\n" in out[1] and "本机还没有这个模型" in out[1]
    out = tab.tag_text(text, model_id, strategy)
    assert "hf download ckiplab/bert-base-chinese-ner\n" in out[1] and "is not on this machine" in out[1]
