"""The Word-embeddings tab's handlers, called directly and through the built app."""
from __future__ import annotations

import gradio as gr
import numpy as np
import plotly.graph_objects as go
import pytest

from demo.embeddings import embeddings as tab

API_NAMES = {"embeddings_onehot", "embeddings_lookup", "embeddings_neighbours", "embeddings_analogy",
             "embeddings_projection", "embeddings_static", "embeddings_train", "embeddings_compare"}


def _error(call) -> str:
    with pytest.raises(gr.Error) as info:
        call()
    return info.value.message


def test_one_hot_vs_dense():
    one_hot, one_hot_cos, dense_cos, summary = tab.compare_one_hot("king, queen, apple")
    np.testing.assert_array_equal(np.array(one_hot.data[0].z), np.eye(3))
    np.testing.assert_array_equal(np.array(one_hot_cos.data[0].z), np.eye(3))  # different words: cosine 0
    dense = np.array(dense_cos.data[0].z)
    assert dense[0, 1] > dense[0, 2] > 0  # king is closer to queen than to apple
    assert "king" in summary and "queen" in summary


def test_one_hot_with_a_word_glove_lacks_still_shows_one_hot():
    one_hot, _, dense_cos, summary = tab.compare_one_hot("北京 东京")
    assert np.array(one_hot.data[0].z).shape == (2, 2)
    assert "'北京' is not in the GloVe 6B 50d vocabulary" in summary and not dense_cos.data


def test_seed_lookup():
    equation, fig = tab.one_hot_lookup(4)
    assert "[0 0 0 1 0] × Q = [10 12 19]" in equation
    assert fig.layout.shapes[0].y0 == 2.5  # the highlighted row is row 4
    assert "from 1 to 5" in _error(lambda: tab.one_hot_lookup(6))


def test_neighbours_and_analogy():
    fig, table = tab.neighbours("Frog", 7)
    assert list(table.columns) == ["rank", "word", "cosine"]
    rows = table.values.tolist()
    assert len(rows) == 7 and len(fig.data[0].y) == 7
    assert [row[0] for row in rows] == list(range(1, 8))
    assert all(-1 <= row[2] <= 1 for row in rows)
    fig, summary = tab.analogy("king", "man", "woman", 5)
    assert "≈ queen" in summary and fig.data[0].y[0] == "queen"


def test_bad_words_get_clear_messages():
    assert "Did you mean: king" in _error(lambda: tab.neighbours("kingg", 10))
    assert "Type a word" in _error(lambda: tab.neighbours("  ", 10))
    assert "English" in _error(lambda: tab.neighbours("北京大学", 10))
    assert "all three" in _error(lambda: tab.analogy("king", "", "woman", 5))
    assert "at least two" in _error(lambda: tab.compare_one_hot("king"))
    assert "at most 20" in _error(lambda: tab.compare_one_hot(" ".join(f"w{i}" for i in range(30))))


def test_projection_2d_and_3d():
    fig, note = tab.projection("king, queen, paris, france", 3, "2D")
    assert all(isinstance(trace, go.Scatter) for trace in fig.data) and len(fig.data) == 4
    assert sum(len(trace.x) for trace in fig.data) >= 4
    fig, _ = tab.projection("cat dog car truck", 2, "3D")
    assert all(isinstance(trace, go.Scatter3d) for trace in fig.data)


def test_projection_bad_input():
    assert "empty" in _error(lambda: tab.projection(" ", 3, "2D"))
    glove = tab.w2v.load_glove()
    words = [w for w in glove.words[5000:7000] if w.isalpha()][:1000]
    fig, note = tab.projection(", ".join(words), 0, "2D")
    assert "1,000 words" in note and sum(len(trace.x) for trace in fig.data) == tab.w2v.MAX_PROJECTION_WORDS
    fig, note = tab.projection("king queen kingg", 2, "2D")
    assert "Did you mean" in note and fig.data
    assert "English" in _error(lambda: tab.projection("北京大学 東京大学", 3, "2D"))


def test_bank_has_cosine_one():
    summary, vectors_fig, neighbours_fig = tab.static_vectors(
        "bank", "We sat on the river bank.", "She opened a savings account at the bank.")
    assert "**1.000**" in summary
    z = np.array(vectors_fig.data[0].z)
    np.testing.assert_array_equal(z[0], z[1])
    assert len(neighbours_fig.data[0].y) == 10
    assert "does not occur in sentence 1" in _error(lambda: tab.static_vectors("bank", "a river", "the bank"))


def test_train_on_an_upload_then_compare(tmp_path):
    rng = np.random.default_rng(0)
    topics = [["cat", "dog", "cow", "horse", "grass", "barn"], ["car", "bus", "truck", "van", "road", "fuel"]]
    corpus = tmp_path / "toy.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(topics[i % 2], 8)) for i in range(400)), encoding="utf-8")
    fig, summary, model = tab.train(tab.UPLOAD, str(corpus), tab.CBOW, 10, 2, 2, 2)
    assert fig.data[0].y and "vocabulary 12 words" in summary
    ours, glove, note = tab.compare_spaces(model, "truck", 5)
    assert len(ours) == 5 and len(glove) == 5 and note == ""
    ours, glove, note = tab.compare_spaces(model, "cow", 3)
    assert len(ours) == 3
    assert "Did you mean" in _error(lambda: tab.compare_spaces(model, "trucks", 5))


def test_train_bad_input(tmp_path):
    assert "Train a model first" in _error(lambda: tab.compare_spaces(None, "whale", 5))
    assert "Choose a .txt file" in _error(lambda: tab.train(tab.UPLOAD, None, tab.SKIPGRAM, 50, 4, 3, 5))
    binary = tmp_path / "weights.bin"
    binary.write_bytes(b"\x00\x01pickle")
    assert "binary" in _error(lambda: tab.train(tab.UPLOAD, str(binary), tab.SKIPGRAM, 50, 4, 3, 5))
    short = tmp_path / "short.txt"
    short.write_text("just a few words here", encoding="utf-8")
    assert "longer text" in _error(lambda: tab.train(tab.UPLOAD, str(short), tab.SKIPGRAM, 50, 4, 3, 5))


def test_tab_builds_with_unique_api_names():
    with gr.Blocks() as blocks:
        tab.build()
    names = [fn.api_name for fn in blocks.fns.values() if fn.api_visibility != "undocumented"]
    assert API_NAMES <= set(names) and len(names) == len(set(names))  # plus one endpoint per preset


def test_presets_run_and_show_the_seed_numbers():
    """The lookup preset computes [0 0 0 1 0] × Q = [10 12 19] (§2.2); one-hot cosines are all 0, GloVe's are not."""
    lookup = {p.slug: p for p in tab.LOOKUP_PRESETS}["one-hot-times-q"]
    equation, fig = tab.one_hot_lookup(*lookup.resolved())
    assert "[0 0 0 1 0] × Q = [10 12 19]" in equation and fig.data
    one_hot, one_hot_cos, dense_cos, summary = tab.compare_one_hot(*tab.ONE_HOT_PRESETS[0].resolved())
    cos = np.array(one_hot_cos.data[0].z, dtype=float)
    assert np.allclose(cos, np.eye(len(cos)))
    dense = np.array(dense_cos.data[0].z, dtype=float)
    assert 0.7 < dense[0, 1] < 0.85  # king–queen in GloVe 6B 50d (the lesson's "about 0.78")
    text, *figs = tab.static_vectors(*tab.STATIC_PRESETS[0].resolved())
    assert all(f.data for f in figs)


def test_results_and_errors_in_chinese():
    """Under using_language("zh"): a handler's summary, figure and table headers, and its errors (an unknown word is
    named) are 中文; English by default."""
    from core.text.i18n import using_language

    with using_language("zh"):
        one_hot, one_hot_cos, dense_cos, summary = tab.compare_one_hot("king, queen, apple")
        fig, table = tab.neighbours("frog", 5)
        missing = _error(lambda: tab.analogy("king", "", "woman", 5))
        unknown = _error(lambda: tab.neighbours("北京大学", 10))
    assert summary.startswith("独热向量：每一对的余弦相似度都是 **0**") and one_hot.layout.title.text == "独热向量"
    assert list(table.columns) == ["名次", "词", "余弦相似度"] and "最近邻" in fig.layout.title.text
    assert missing == "请把三个词都填上，例如：king − man + woman。"
    assert unknown.startswith("'北京大学' 不在 GloVe 6B 50d 的词表中") and "英文单词" in unknown
    _, _, _, summary = tab.compare_one_hot("king, queen, apple")
    assert summary.startswith("One-hot: every pair has cosine **0**")
    assert "not in the GloVe 6B 50d vocabulary" in _error(lambda: tab.neighbours("北京大学", 10))


def test_nnlm_answers_in_chinese():
    """The NNLM sub-tab's default preset in 中文: the summary, the step table's headers and step names, and the
    message that names a word outside the toy corpus."""
    from core.text.i18n import using_language
    from demo.embeddings import nnlm as embeddings_nnlm

    values = embeddings_nnlm.PRESETS[0].resolved()
    with using_language("zh"):
        summary, shapes, probs, loss = embeddings_nnlm.train_and_predict(*values)
        unknown = _error(lambda: embeddings_nnlm.train_and_predict(*values[:-1], "鲸鱼"))
    assert "“的”之后的预测：** 词性" in summary and list(shapes.columns) == ["步骤", "公式", "形状"]
    assert shapes.iloc[0, 0] == "每个上下文词的独热向量" and shapes.iloc[-1, 2].endswith("Σ = 1")
    assert probs.layout.title.text == "P(下一个词 | 的)"
    assert unknown == "以下词不在玩具语料中：鲸鱼。请使用语料里的词，例如：北京 的。"
    summary, shapes, _, _ = embeddings_nnlm.train_and_predict(*values)
    assert "Prediction after “的”:** 词性" in summary and shapes.iloc[0, 0] == "one-hot of each context word"
