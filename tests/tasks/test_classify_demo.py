"""demo.tasks.classify handlers, called directly: the checkpoint view (layout, v and W, probabilities), the offline
message, the data view, a short training run streamed to the end, every model on one sentence, what changed."""
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

from core.tasks import classify as core_classify
from core.tasks import finetune_train
from core.text.corpora import DEFAULT_LABELLED
from core.text.i18n import using_language
from demo.tasks import classify
from demo.kit.widgets import sig4
from core.loading import checkpoints
from demo.tasks import classify_finetune
from core.text import seeds

LABELS = {0: "negative", 1: "positive"}


class FakeRequest:
    def __init__(self, session_hash):
        self.session_hash = session_hash


@pytest.fixture(scope="module")
def folder(tiny_checkpoint):
    return str(tiny_checkpoint("DistilBertForSequenceClassification", id2label=LABELS))


def rows_of(frame):
    """A result table's rows as lists (handlers return pandas frames with headers in the learner's language)."""
    return frame.values.tolist()


def test_pair_shows_layout_vector_w_and_probabilities(folder):
    summary, probs, vector, table, entries, note, rows, shown = classify.classify_text(
        folder, "sentence pair", *seeds.SEED_PAIR_EN, 128)
    table, rows = rows_of(table), rows_of(rows)
    assert shown == {"__type__": "update", "visible": True}  # the model's results column, shown
    result = core_classify.classify(*seeds.SEED_PAIR_EN, folder)
    best = result.ranked[0]
    assert f"**{best['label']}** · P = {best['score']:.4f}" in summary and "id2label" in summary
    assert list(probs.data[0].y) == ["negative", "positive"]
    np.testing.assert_allclose(probs.data[0].x, result.probs, atol=1e-6)
    assert len(vector.data[0].y) == 3 and len(vector.data[0].z[0]) == 32  # v, then one W row per label; H = 32
    assert [row[0] for row in table] == ["negative", "positive"]
    assert table[0][3] == pytest.approx(table[0][1] + table[0][2], rel=2e-3, abs=2e-4)  # logit = W·v + b
    segments = [row[2] for row in rows]
    assert segments[0] == 0 and segments[-1] == 1 and rows[0][1] == "[CLS]"
    assert ("[SEP]", "special") in entries and "1 for `B [SEP]`" in note


def test_truncation_is_reported(folder):
    *_, note, rows, _ = classify.classify_text(folder, "sentence pair", "a long sentence " * 40, "short one", 16)
    assert len(rows) == 16 and "Truncated" in note and "longest_first" in note


def test_offline_checkpoint_names_the_fetch_command_and_layout_still_works():
    summary, probs, vector, table, entries, note, rows, shown = classify.classify_text(
        checkpoints.DIANPING_ID, "single sentence", "菜很好吃", "", 128)
    assert "is not on this machine" in summary and f"hf download {checkpoints.DIANPING_ID}\n" in summary
    assert shown == {"__type__": "update", "visible": False} and probs is None and vector is None  # hidden, not empty
    assert rows_of(rows)[0][1] == "[CLS]" and "not available here" in note


def test_preset_fills_the_inputs():
    preset = next(p for p in classify.VIEW_PRESETS if p.slug == "wo-hen-xihuan-ni")
    index, model_id, task, text_a, text_b, max_length = preset.resolved()
    assert (text_a, text_b) == seeds.SEED_PAIR_ZH and task == "sentence pair"
    assert model_id == checkpoints.SIMILARITY_ZH_ID
    summary, *_ = classify.run_example(index, model_id, task, text_a, text_b, max_length)
    assert "illustrate" in summary and "hf download IDEA-CCNL/Erlangshen-Roberta-110M-Similarity" in summary


def test_empty_pair_side_is_a_clear_error(folder):
    with pytest.raises(gr.Error, match="Sentence B is empty"):
        classify.classify_text(folder, "sentence pair", "hello", "   ", 128)


def test_data_view_shows_split_and_baselines():
    note, rows, sample = classify_finetune.show_data(DEFAULT_LABELLED, "", None, 0)
    rows, sample = rows_of(rows), rows_of(sample)
    assert "164 training and 56 held-out" in note
    assert [row[0] for row in rows][0] == "majority class" and rows[0][1] == 0.5
    assert len(rows) == 3 and all(0 <= row[1] <= 1 for row in rows)
    assert len(sample) == 8


def test_an_upload_switches_to_my_data(tmp_path):
    upload = tmp_path / "mine.csv"
    upload.write_text("label,sentence\n" + "".join(f"{'ab'[i % 2]},sentence number {i}\n" for i in range(12)),
                      encoding="utf-8")
    dataset, note, rows, sample, loss, status, answers = classify.show_upload("", str(upload), 0)
    assert dataset == classify_finetune.MY_DATA and "your uploaded file" in note
    assert "8 training and 4 held-out" in note  # 6 per label: round(6 × 0.25) = 2 held out of each
    assert "of the 4 held-out sentences" in status  # the head before training, scored on the new data


def test_bad_pasted_data_names_the_line():
    with pytest.raises(gr.Error, match="line 2"):
        classify_finetune.show_data(classify_finetune.MY_DATA, "positive\tgood\nno separator here\n", None, 0)
    with pytest.raises(gr.Error, match="at least two classes"):
        classify_finetune.show_data(classify_finetune.MY_DATA, "positive\tgood\npositive\tfine\n", None, 0)


def test_training_on_malformed_or_one_class_data_is_refused_before_it_starts():
    with pytest.raises(gr.Error, match="line 3"):
        list(classify.train(classify_finetune.MY_DATA, "positive\tgood\nnegative\tbad\nno tab\n", None, 0, 10, 1, 1))
    with pytest.raises(gr.Error, match="at least two classes"):
        list(classify.train(classify_finetune.MY_DATA, "positive\tgood\npositive\tfine\n", None, 0, 10, 1, 1))
    with pytest.raises(gr.Error, match="epochs"):
        list(classify.train(DEFAULT_LABELLED, "", None, 0, 10, 1, 99))


def test_predict_before_training_answers_with_the_untrained_head():
    """Before this session trains, every baseline and head (a) with its random initial weights classify the
    sentence, the head's row labelled as untrained."""
    table = classify.predict("hello", FakeRequest("never-trained"))
    assert list(table.columns) == ["model", "label", "P(negative)", "P(positive)"]
    assert rows_of(table)[-1][0] == "MiniLM frozen + head (a), before training (random initialisation)"
    assert len(table) == 4  # majority, n-grams, GloVe, the untrained head


def test_short_run_streams_then_every_model_classifies_and_changes_show():
    request = FakeRequest("demo-test")
    updates = list(classify.train(DEFAULT_LABELLED, "", None, 0, 30, 1, 1, request=request))
    assert len(updates) >= 3
    status, loss, rows = updates[-1]
    rows = rows_of(rows)
    assert status.startswith("**Done**")
    assert [row[0] for row in rows][-2:] == ["MiniLM frozen + head (a)", "MiniLM, top 1 layer(s) fine-tuned (b)"]
    assert len(loss.data) == 2
    table = classify.predict("The staff were friendly and the room was spotless.", request)
    assert len(table) == 5 and list(table.columns) == ["model", "label", "P(negative)", "P(positive)"]
    np.testing.assert_allclose(table[["P(negative)", "P(positive)"]].sum(axis=1), 1.0, atol=2e-4)
    note, projection, changes = classify.show_changes(DEFAULT_LABELLED, "", None, 0, request)
    assert "latest run" in note and len(projection.data) == 4  # two labels × before/after
    assert changes.visible is True
    # Q, K, V, attention output, FFN in, FFN out of the unfrozen layer
    assert len(changes.constructor_args["value"].data[0].y) == 6
    outcome = finetune_train.RUNS.result("demo-test")
    assert rows[-1][1] == sig4(outcome.tuned_accuracy)


def test_changes_view_before_any_training_shows_the_frozen_picture():
    note, projection, changes = classify.show_changes(DEFAULT_LABELLED, "", None, 0, FakeRequest("fresh"))
    assert "Before fine-tuning" in note and len(projection.data) == 2
    assert changes.visible is False  # no run, no weight changes: hidden, not an empty figure (issue #31)


# ----------------------------------------------------------------------------------------------------------------
# 中文 (issue #19)




def test_results_and_errors_come_out_in_chinese(folder):
    with using_language("zh"):
        summary, probs, vector, logits, entries, note, rows, _ = classify.classify_text(
            folder, "sentence pair", *seeds.SEED_PAIR_ZH, 128)
        data_note, accuracy, sample = classify_finetune.show_data(DEFAULT_LABELLED, "", None, 0)
    assert "在 2 个标签上做 softmax" in summary and "标签名来自模型的 config.json" in summary
    assert list(logits.columns) == ["标签", "W_c · v", "b_c", "logit", "概率"]
    assert probs.layout.title.text.startswith("P(标签)") and "片段编号为 0" in note
    assert ("[SEP]", "特殊词元") in entries
    assert "164 个训练句子" in data_note and rows_of(accuracy)[0][0] == "多数类"
    zh = SimpleNamespace(headers={"accept-language": "zh-CN,zh;q=0.9"}, session_hash="zh-never-trained")
    with pytest.raises(gr.Error, match="句子 B 为空"):
        classify.classify_text(folder, "sentence pair", "你好", "  ", 128, request=zh)
    assert rows_of(classify.predict("好", zh))[-1][0] == "冻结的 MiniLM + 分类头（a），训练前（随机初始化）"


def test_seed_pair_preset_on_the_chinese_similarity_model(monkeypatch, tmp_path):
    """The 我很喜欢你 / 我很中意你 preset on IDEA-CCNL/Erlangshen-Roberta-110M-Similarity (tiny, served by a local
    Hub): the pair layout, the model's own two probabilities, and the note that the seed's [0.02, 0.98] is an
    illustration."""
    from tests import chinese_checkpoints

    folder = chinese_checkpoints.write(tmp_path / "similarity", "BertForSequenceClassification", safetensors=True,
                                       tokenizer_config=False, num_labels=2)
    server = chinese_checkpoints.serve(monkeypatch, tmp_path, {checkpoints.SIMILARITY_ZH_ID: folder})
    try:
        preset = next(p for p in classify.VIEW_PRESETS if p.slug == "wo-hen-xihuan-ni")
        with using_language("zh"):
            summary, probs, vector, logits, entries, note, rows, _ = classify.run_example(*preset.resolved())
    finally:
        chinese_checkpoints.stop(server)
    assert list(probs.data[0].y) == ["不相似", "相似"]
    assert sum(probs.data[0].x) == pytest.approx(1.0, abs=1e-6)
    assert "[0.02, 0.98]" in summary and "说明原理" in summary and "见上方" in summary  # the model's numbers: shown
    assert [row[2] for row in rows_of(rows)] == [0] * 7 + [1] * 6


def test_opening_the_finetune_view_shows_the_data_and_the_head_before_training():
    preset = classify.FINETUNE_PRESETS[0]
    note, accuracy, sample, loss, status, answers = classify.before_training_bundled(*preset.resolved())
    assert "164 training and 56 held-out" in note and len(rows_of(sample)) == 8
    assert rows_of(accuracy)[-1][0] == "MiniLM frozen + head (a), before training (random initialisation)"
    assert list(loss.data[0].x) == [0] and "Before training (random initialisation)" in loss.layout.title.text
