"""Issue #31: each trainer's view shows the untrained model before training (random initialisation, labelled so, in
English and 中文), computed from the very model training starts from; a training run then replaces it.

The three trainers: Word embeddings → Train word2vec, RNN & LSTM → Train, Classification → Fine-tune MiniLM.
Each expected number is derived here independently of the code under test (the init's consequence, a recomputation
from the same weights, or training's own first loss)."""
from __future__ import annotations

import math
import types

import gradio as gr
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.tasks import finetune, finetune_train
from core.recurrent import lstm as core_lstm
from core.text.corpora import DEFAULT_LABELLED, load_corpus
from core.text.i18n import using_language
from core.text.sampling import Settings
from demo.tasks import classify
from demo.embeddings import embeddings
from demo.recurrent import lstm, lstm_train
from demo.kit import presets

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BEFORE_EN, BEFORE_ZH = "before training (random initialisation)", "训练前（随机初始化）"


def built_view(module, tab_id: str, key: str) -> presets.View:
    """Build one tab inside a presets Registry (as app.py does) and return its view ``key``."""
    registry = presets.Registry()
    with gr.Blocks():
        with gr.Tab(tab_id) as tab:
            with registry.tab(tab_id, tab):
                module.build()
    return next(view for view in registry.tabs[tab_id].views if view.key == key)


def shown(view: presets.View, slug: str | None = None) -> list:
    """What the view shows for a preset (its default when None), in its outputs' order: the first-open path."""
    updates = view.run(slug)
    return [updates[component] for component in view.outputs]


def rows_of(frame) -> list[list]:
    return frame.values.tolist()


# ----------------------------------------------------------------------------------------------------------------
# word2vec


def test_word2vec_before_training_loss_is_six_ln2_and_its_neighbours_come_from_the_random_vectors():
    view = built_view(embeddings, "embeddings", "train")
    assert view.where.id == "train" and view.default == "before-training"
    fig, summary, model, ours, glove, note = shown(view)
    # The output vectors start at zero, so every score u·v is 0, σ(0) = 1/2 and −log σ(0) = ln 2, for the true
    # word and for each of the k noise words: (1 + k)·ln 2 per pair, whatever the pairs are.
    expected = (1 + model.config.negatives) * math.log(2)
    assert model.config.negatives == 5 and abs(expected - 4.1589) < 1e-4
    assert list(fig.data[0].x) == [0] and abs(fig.data[0].y[0] - expected) < 1e-3
    assert not model.trained and summary.startswith("**Before training (random initialisation).**")
    assert summary.count("4.159") == 2  # 6 · ln 2 = 4.159, and the loss measured on the first batch: 4.159
    assert BEFORE_EN in fig.data[0].name and BEFORE_EN in fig.layout.title.text
    # word2vec's initialisation: input vectors uniform in ±0.5/dim
    assert np.abs(model.vectors.vectors).max() <= 0.5 / model.config.dim
    assert list(ours.columns) == ["rank", "word", "cosine"] and list(glove.columns) == ["rank", "word", "cosine"]
    assert len(ours) == 10 and len(glove) == 10
    for rank, word, cosine in rows_of(ours):  # the random vectors' own cosines with "whale"
        assert abs(cosine - model.vectors.similarity("whale", word)) < 1e-3
    assert note.startswith("Before training (random initialisation)")


def test_word2vec_before_training_speaks_chinese():
    fig, summary, model, ours, glove, note = embeddings.before_training(*embeddings.BEFORE_TRAINING_PRESETS[1].resolved())
    assert model.config.architecture == "cbow" and abs(model.losses[0] - 6 * math.log(2)) < 1e-3
    with using_language("zh"):
        fig, summary, model, ours, glove, note = embeddings.before_training(
            *embeddings.BEFORE_TRAINING_PRESETS[0].resolved())
    assert BEFORE_ZH in fig.layout.title.text and summary.startswith(f"**{BEFORE_ZH}。**")
    assert list(ours.columns) == ["名次", "词", "余弦相似度"] and note.startswith(BEFORE_ZH)


def test_word2vec_untrained_is_where_training_starts_and_training_changes_it():
    text = load_corpus("moby_dick")
    config = dict(architecture="cbow", dim=10, window=1, epochs=1, min_count=50)
    untrained = embeddings.word2vec.untrained_word2vec(text, embeddings.word2vec.Word2VecConfig(**config))
    fig, summary, trained = embeddings.train(embeddings.MOBY, None, embeddings.CBOW, 10, 1, 1, 50,
                                             progress=lambda *a, **k: None)
    assert trained.trained and trained.vectors.words == untrained.vectors.words
    # One epoch of SGD moves the vectors, and the loss falls below its starting value (1 + k)·ln 2.
    assert not np.allclose(trained.vectors.vectors, untrained.vectors.vectors)
    assert trained.losses[-1] < 6 * math.log(2) - 0.1 and fig.data[0].x[0] > 0
    ours, glove, note = embeddings.compare_spaces(trained, "whale", 5)
    assert "Before training" not in note and len(ours) == 5
    # Stopped after two SGD steps, training has moved only the input rows its batches touched (the first step
    # moves none: its gradient Σ g_j u_j is 0 while the output vectors are 0); every other word still has exactly
    # the untrained vector, so both started from the same weights.
    config = embeddings.word2vec.Word2VecConfig(architecture="skipgram", dim=10, window=1, epochs=1, min_count=5)
    steps = []
    two_steps = embeddings.word2vec.train_word2vec(text, config, stop=lambda: steps.append(1) or len(steps) == 2 or None)
    start = embeddings.word2vec.untrained_word2vec(text, config)
    assert two_steps.loss_steps[-1] == 2 and start.loss_steps == [0]
    untouched = np.all(two_steps.vectors.vectors == start.vectors.vectors, axis=1)  # (V,)
    assert 0.5 < untouched.mean() < 1


# ----------------------------------------------------------------------------------------------------------------
# RNN & LSTM

CORPUS = "the whale swam. the ship sailed on the sea. the bank of the river. money in the bank. " * 20


def test_untrained_pair_is_the_pair_train_pair_starts_from():
    """train_pair's first loss is the untrained models' loss on its first batch (the loss is taken before the first
    update): recomputed here from untrained_pair and the batch that seed draws."""
    vocab = core_lstm.Vocab.build(CORPUS, "char", min_count=1)
    step, rnn_loss, lstm_loss, _ = next(core_lstm.train_pair(vocab, CORPUS, steps=1, seq_len=20, batch_size=8))
    data = core_lstm.corpus_ids(CORPUS, vocab)
    starts = torch.randint(0, len(data) - 21, (8,), generator=torch.Generator().manual_seed(0))
    chunk = data[starts[:, None] + torch.arange(21)]  # (8, 21): the first batch of train_steps
    models = core_lstm.untrained_pair(vocab, 0)
    for model, loss in ((models.rnn, rnn_loss), (models.lstm, lstm_loss)):
        with torch.no_grad():
            logits = model(chunk[:, :-1]).logits
        assert abs(F.cross_entropy(logits.reshape(-1, len(vocab)), chunk[:, 1:].reshape(-1)).item() - loss) < 1e-5


def test_rnn_view_before_training_shows_the_random_pair_on_held_out_text():
    view = built_view(lstm, "lstm", "train")
    assert view.where.id == "train" and view.inputs[0].value == "char"
    fig, table, note = shown(view)
    assert list(table.columns) == ["model", "weights", "held-out loss (nats per token)",
                                   "sample after the opening of Moby-Dick (temperature 1)"]
    rows = rows_of(table)
    assert [row[0] for row in rows] == ["Vanilla RNN", "LSTM"] and all(row[1] == BEFORE_EN for row in rows)
    # Recomputed from the same seed and vocabulary: the held-out loss of the random pair.
    _, held_text, vocab = lstm_train.corpus("char")
    models = core_lstm.untrained_pair(vocab, 0)
    held = core_lstm.corpus_ids(held_text, vocab)
    for row, model in zip(rows, (models.rnn, models.lstm)):
        loss = core_lstm.evaluate(model, held)
        assert math.isfinite(row[2]) and abs(row[2] - loss) < 1e-3 * loss
        assert abs(loss - math.log(len(vocab))) < 0.15  # a random model is close to a uniform guess, ln V
        assert row[3] == core_lstm.generate(model, vocab, lstm_train.SAMPLE_PROMPT, 120, Settings(1.0))  # what it writes
    assert [trace.y[0] for trace in fig.data] == pytest.approx([rows[0][2], rows[1][2]], rel=1e-3)
    assert list(fig.data[0].x) == [0] and "random initialisation" in fig.layout.title.text
    assert note.startswith("**Before training (random initialisation).**") and f"ln {len(vocab)}" in note


def test_rnn_view_before_training_in_chinese_and_at_the_word_level():
    with using_language("zh"):
        fig, table, note = lstm_train.before_training("word")
    assert list(table.columns)[:2] == ["模型", "权重"] and rows_of(table)[0][1] == BEFORE_ZH
    assert note.startswith(f"**{BEFORE_ZH}。**") and "ln 3,000" in note and BEFORE_ZH in fig.layout.title.text
    assert abs(rows_of(table)[1][2] - math.log(3000)) < 0.15
    with pytest.raises(gr.Error, match="character-level or word-level"):
        lstm_train.before_training("bytes")


def test_rnn_training_replaces_the_untrained_table():
    before = rows_of(lstm_train.before_training("char")[1])
    *_, (fig, badge, models) = list(lstm.train_models("char", 20, 60))
    table, note = lstm_train.after_training(models)
    rows = rows_of(table)
    assert [row[1] for row in rows] == ["trained, 20 steps"] * 2 and note.startswith("**After training (20 steps).**")
    assert [row[2] for row in rows] == [pytest.approx(models.info[name]["held_out_loss_nats"], rel=1e-3)
                                        for name in ("rnn", "lstm")]
    assert all(after[2] < start[2] - 0.3 for after, start in zip(rows, before))  # 20 Adam steps already help
    assert lstm_train.after_training(None) == (gr.skip(), gr.skip())


# ----------------------------------------------------------------------------------------------------------------
# Fine-tune MiniLM


def test_finetune_head_before_training_is_the_head_training_starts_from():
    """Head (a)'s first training loss is taken before its first step: it equals the cross-entropy of initial_head
    on the training sentences' frozen vectors."""
    examples = [e for e in finetune.load_bundled(DEFAULT_LABELLED) if e.group < 20]
    data = finetune.split(examples, 3)
    *_, outcome = finetune_train.train(data, head_steps=1, unfrozen=1, epochs=1, with_baselines=False)
    frozen = finetune_train.encode([e.text for e in data.train], 1).frozen
    head = finetune_train.initial_head(frozen.shape[1], data)
    with torch.no_grad():
        loss = F.cross_entropy(head(frozen), torch.as_tensor(data.y_train)).item()
    assert abs(outcome.head_losses[0] - loss) < 1e-5


def test_finetune_view_before_training_scores_the_random_head_on_held_out_sentences():
    view = built_view(classify, "classify", "finetune")
    assert view.where.id == "classify-finetune"
    note, accuracy, sample, loss, status, answers = shown(view)
    # Recomputed independently: a Linear(384, 2) drawn after torch.manual_seed(seed), on MiniLM's frozen vectors.
    data = finetune.split(finetune.load_bundled(DEFAULT_LABELLED), 0)
    vectors = finetune_train.encode([e.text for e in data.test], 1).frozen
    torch.manual_seed(0)
    head = torch.nn.Linear(384, 2)
    with torch.no_grad():
        logits = head(vectors)
    expected_loss = F.cross_entropy(logits, torch.as_tensor(data.y_test)).item()
    expected_accuracy = float((logits.argmax(-1).numpy() == data.y_test).mean())
    assert list(accuracy.columns) == ["model", "held-out accuracy", "note"]
    last = rows_of(accuracy)[-1]
    assert last[0] == "MiniLM frozen + head (a), before training (random initialisation)"
    assert abs(last[1] - expected_accuracy) < 1e-3
    assert list(loss.data[0].x) == [0] and abs(loss.data[0].y[0] - expected_loss) < 1e-4
    assert math.isfinite(expected_loss) and f"{expected_loss:.4g}" in status
    assert status.startswith("**Before training (random initialisation).**") and "of the 56 held-out" in status
    assert list(answers.columns) == ["model", "label", "P(negative)", "P(positive)"]
    assert rows_of(answers)[-1][0] == last[0]
    np.testing.assert_allclose(answers[["P(negative)", "P(positive)"]].sum(axis=1), 1.0, atol=2e-4)
    with using_language("zh"):  # a Chinese learner starts on the Chinese set, with a Chinese sentence
        values = classify.FINETUNE_PRESETS[0].resolved()
        zh = classify.before_training_bundled(*values)
    assert "中文" in values[0] and values[2] == "服务员很热情，房间也一尘不染。"
    assert rows_of(zh[1])[-1][0] == "冻结的 MiniLM + 分类头（a），训练前（随机初始化）"
    assert zh[4].startswith(f"**{BEFORE_ZH}。**") and zh[3].layout.title.text.startswith(BEFORE_ZH)


def test_finetune_training_replaces_the_untrained_answers():
    request = types.SimpleNamespace(session_hash="before-then-after")
    sentence = "The staff were friendly and the room was spotless."
    before = classify.predict(sentence, request)
    assert rows_of(before)[-1][0].endswith("before training (random initialisation)")
    *_, (status, loss, accuracy) = list(classify.train(DEFAULT_LABELLED, "", None, 0, 5, 1, 1, request=request))
    after = rows_of(classify.predict(sentence, request))
    assert status.startswith("**Done**") and len(loss.data[0].x) == 5 and loss.data[0].x[0] == 1
    assert after[-1][0] == "MiniLM, top 1 layer(s) fine-tuned (b)"
    assert not any("before training" in row[0] for row in after)
