"""demo/recurrent/lstm.py handlers, called directly and through the built Blocks."""
import gradio as gr
import numpy as np
import pytest

from core.recurrent import lstm as core_lstm
from demo.recurrent import lstm
from demo.recurrent.lstm_generate import EXAMPLES, generate_both

CORPUS = "the whale swam. the ship sailed on the sea. the bank of the river. money in the bank. " * 20


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def tiny():
    """A session's retrained pair, in miniature (the handlers take it as their gr.State)."""
    vocab = core_lstm.Vocab.build(CORPUS, "char", min_count=1)
    for _, _, _, models in core_lstm.train_pair(vocab, CORPUS, steps=15, seq_len=20, batch_size=8):
        pass
    return models


def figure_values(fig):
    return [np.asarray(trace.z if trace.type == "heatmap" else trace.y, dtype=float) for trace in fig.data]


def test_inspect_shows_gates_predictions_and_unknowns(tiny):
    note, lstm_fig, rnn_fig, prob_fig, table = lstm.inspect_text("the whale Ω", "cell state C", 6, tiny)
    rows = table.values.tolist()  # the table's headers are in the learner's language
    assert "'Ω'" in note and "<unk>" in note
    z = figure_values(lstm_fig)[0]
    assert z.shape == (6, len("the whale Ω")) and np.isfinite(z).all()
    assert figure_values(rnn_fig)[0].shape == (6, 11)
    assert len(prob_fig.data) == 2 and all(0 <= p <= 1 for p in prob_fig.data[0].y)
    assert len(rows) == 11 and rows[0][1] == "t" and rows[0][2] == "h" and rows[3][1] == "␣"
    _, gate_fig, *_ = lstm.inspect_text("the whale", "forget gate f", 4, tiny)
    gates = figure_values(gate_fig)[0]
    assert gates.min() > 0 and gates.max() < 1


def test_inspect_bad_input_gives_clear_errors(tiny):
    with pytest.raises(gr.Error, match="empty"):
        lstm.inspect_text("   ", "forget gate f", 8, tiny)
    with pytest.raises(gr.Error, match="limit"):
        lstm.inspect_text("x" * 1000, "forget gate f", 8, tiny)


def test_gradients_and_forget_products(tiny, monkeypatch):
    monkeypatch.setattr(core_lstm, "held_out_text", lambda: CORPUS)
    summary, grad_fig, forget_fig = lstm.measure_gradients(20, "the ship sailed", tiny)
    assert "distance 19" in summary
    rnn_norms, lstm_norms = figure_values(grad_fig)
    assert len(rnn_norms) == len(lstm_norms) == 20 and (lstm_norms > 0).all()
    assert grad_fig.layout.yaxis.type == "log"
    prods = figure_values(forget_fig)
    assert all(p[0] == 1 and (np.diff(p) <= 0).all() for p in prods)  # a product of gates in (0, 1) only shrinks
    with pytest.raises(gr.Error, match="between 10 and 200"):
        lstm.measure_gradients(500, "the ship", tiny)


def test_generate_both_side_by_side(tiny):
    rnn_text, lstm_text, note, rnn_fig, lstm_fig = generate_both("the ", 30, 0.8, 3, 1.0, 7, tiny)
    assert rnn_text.startswith("the ") and len(rnn_text) == 34 and len(lstm_text) == 34
    assert (rnn_text, lstm_text, note) == generate_both("the ", 30, 0.8, 3, 1.0, 7, tiny)[:3]
    for fig, name in ((rnn_fig, "RNN"), (lstm_fig, "LSTM")):  # each model's first step, cut to its top 3
        assert fig.layout.title.text.startswith(name) and [t[0] for t in fig.data[1].text[:4]] == ["✓"] * 3 + ["✗"]
    assert "keeps **3**" in note and "top-k 3" in note and "seed 7" in note
    assert "?tab=" not in note  # a retrained pair: no preset link reproduces it
    assert "'Z'" in generate_both("Zthe", 5, 0.8, 0, 1.0, 0, tiny)[2]
    with pytest.raises(gr.Error, match="empty"):
        generate_both("", 30, 0.8, 0, 1.0, 0, tiny)
    with pytest.raises(gr.Error, match="Length"):
        generate_both("the", 10_000, 0.8, 0, 1.0, 0, tiny)
    with pytest.raises(gr.Error, match="temperature"):
        generate_both("the", 10, float("nan"), 0, 1.0, 0, tiny)
    with pytest.raises(gr.Error, match="seed"):
        generate_both("the", 10, 0.8, 0, 1.0, None, tiny)


def test_generate_presets_link_with_their_seed():
    row = EXAMPLES[0]
    *_, note, _, _ = generate_both(*row)
    assert f"?tab=lstm&preset=generate-1&seed={row[-1]}" in note
    *_, note, _, _ = generate_both(*row[:-1], 99)  # another seed: the same preset's link, with seed 99
    assert "?tab=lstm&preset=generate-1&seed=99" in note


def test_elmo_compares_a_word_across_sentences():
    note, fig, rows = lstm.compare_contexts(*lstm.ELMO_EXAMPLES[0])
    sims = figure_values(fig)[0]
    assert sims.shape == (3, 3) and np.allclose(np.diag(sims), 1) and (sims < 1 - 1e-4)[~np.eye(3, dtype=bool)].all()
    assert len(rows) == 3 and "**bank**" in note
    with pytest.raises(gr.Error, match="does not occur"):
        lstm.compare_contexts("whale", "the bank", "the river bank", "")
    with pytest.raises(gr.Error, match="at least two"):
        lstm.compare_contexts("bank", "the bank", "", "")


def test_train_streams_loss_curves_then_returns_session_models():
    outputs = list(lstm.train_models("char", 10, 60))
    assert len(outputs) >= 2
    fig, badge, models = outputs[-1]
    assert isinstance(models, core_lstm.ModelSet) and "retrained in this session" in badge
    assert [len(trace.y) for trace in fig.data] == [10, 10]
    assert outputs[0][2] is not models  # intermediate yields leave the session's models alone (gr.skip)
    assert lstm.use_shipped()[1] is None
    with pytest.raises(gr.Error, match="Steps must be"):
        list(lstm.train_models("char", 1, 60))


def test_tab_is_wired_into_the_app():
    import app

    blocks = app.build_app()
    names = {dep.get("api_name") for dep in blocks.config["dependencies"]}
    assert {"lstm_inspect", "lstm_gradients", "lstm_generate", "lstm_elmo", "lstm_train", "lstm_reset"} <= names


def test_chinese_text_is_named_out_of_vocabulary_in_the_learners_language():
    """The shipped models read English letters: Chinese characters are named, in 中文 for a Chinese learner; text with
    no character they know is an error that names them, not a page of <unk> heatmaps."""
    from core.text.i18n import using_language

    mixed = lstm.INSPECT_EXAMPLES[3][0]  # 我的母语是汉语 — my mother tongue.
    note, *_ = lstm.inspect_text(mixed, "forget gate f", 8)
    assert note.startswith("⚠️ Never seen in training") and all(f"'{ch}'" in note for ch in "我的母语是汉")
    with pytest.raises(gr.Error, match="know none of the characters in this text: '今', '天', '气', '很', '好'"):
        lstm.inspect_text("今天天气很好", "forget gate f", 8)
    with using_language("zh"):
        note, lstm_fig, *_, table = lstm.inspect_text(mixed, "forget gate f", 8)
        assert note.startswith("⚠️ 训练中从未见过") and "'汉'" in note
        assert "遗忘门" in lstm_fig.layout.title.text and "输入" in list(table.columns)
        with pytest.raises(gr.Error, match="一个都不认识：'今', '天', '气', '很', '好'"):
            lstm.inspect_text("今天 天气很好", "forget gate f", 8)
        with pytest.raises(gr.Error, match="一个都不认识"):
            generate_both("你好", 10, 0.8, 0, 1.0, 0)
