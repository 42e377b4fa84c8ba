"""demo/transformer/seq2seq.py, the encoder–decoder's sub-tabs of "Transformer & GPT" (issue #52), called directly: what each
figure and table holds against the model's own forward pass (core/nets/seq2seq.py) and the shipped results, "why
this word" against captum, t5-small's download card offline and a tiny T5 from a folder, both languages, and the
sources the model cannot read."""
from __future__ import annotations

import html
import json

import gradio as gr
import numpy as np
import pytest
import torch

from core.loading import resolve
from core.seq2seq import seq2seq as core_seq2seq
from core.seq2seq import view as seq2seq_view
from core.loading.checkpoints import SEQ2SEQ_HERE_ID
from core.text.i18n import using_language
from core.seq2seq.seq2seq import BOS, EOS, SEQ2SEQ_ASSETS
from demo.transformer import seq2seq

pytestmark = pytest.mark.usefixtures("one_torch_thread")
RESULTS = json.loads((SEQ2SEQ_ASSETS / "results.json").read_text(encoding="utf-8"))
GREEDY = (0.0, 0, 1.0, 0)
HIDDEN = {"__type__": "update", "visible": False}


def forward(source: str, prefix: list[str]):
    """The shipped model's own forward pass on the source and a target prefix (after <s>): logits and attentions."""
    model, vocab = core_seq2seq.shipped()
    ids = [vocab.source_ids.get(t, vocab.folded.get(core_seq2seq.fold(t))) for t in core_seq2seq.split_source(source)]
    target = [BOS] + [vocab.target_ids[w] for w in prefix]
    with torch.inference_mode():
        return model(torch.tensor([ids]), torch.tensor([target])), vocab


def test_each_figure_is_the_step_the_learner_picks():
    """je suis étudiant, step 4 (“student”), layer 2, head 3: the masked self-attention and the cross-attention are
    that head's maps of the model's forward pass on <s> I am a; the top words its softmax; teacher forcing's rows."""
    note, self_fig, cross_fig, top_fig, why, table, shown = seq2seq.translate(
        SEQ2SEQ_HERE_ID, "je suis étudiant", "I am a student", 4, 2, 3, *GREEDY)
    assert shown == {"__type__": "update", "visible": True}
    out, vocab = forward("je suis étudiant", ["I", "am", "a"])
    expected_self = out.self_attentions[1][0, 2].numpy()  # layer 2, head 3: (4, 4)
    z = np.asarray(self_fig.data[0].z, dtype=float)
    upper = np.triu(np.ones((4, 4), dtype=bool), 1)
    assert np.isnan(z[upper]).all() and np.allclose(z[~upper], expected_self[~upper], atol=1e-6)
    assert np.allclose(expected_self[upper], 0)  # what the blank cells hide: the mask's zeros
    assert list(self_fig.data[0].y) == ["&lt;s&gt;", "I", "am", "a"]  # plotly labels are HTML: <s> escaped
    cross = np.asarray(cross_fig.data[0].z, dtype=float)
    assert np.allclose(cross, out.cross_attentions[1][0, 2].numpy(), atol=1e-6) and cross.shape == (4, 3)
    assert list(cross_fig.data[0].x) == ["je", "suis", "étudiant"] and "student" in cross_fig.layout.title.text
    probs = out.logits[0, -1].softmax(-1)
    best = probs.topk(seq2seq.TOP_K)
    assert list(top_fig.data[0].y) == [vocab.target[i] for i in best.indices.tolist()]
    assert np.allclose(top_fig.data[0].x, best.values.numpy(), atol=1e-6) and top_fig.data[0].y[0] == "student"
    assert why["visible"] is True and list(why["value"].data[0].x) == ["je", "suis", "étudiant"]
    rows = table.values.tolist()
    assert [r[2] for r in rows] == ["I", "am", "a", "student", "</s>"]  # free decoding's words
    assert [r[6] for r in rows] == ["I", "am", "a", "student", "</s>"]  # teacher forcing's most probable words
    assert rows[3][4] == "<s> I am a" and rows[3][5].startswith("student (")
    assert "I am a **student** ~~</s>~~" in note and "**Step 4:**" in note and "head 3" in self_fig.layout.title.text
    assert "5 of 5 positions" in note and "253,386 parameters" in note and "99.6%" in note


def test_teacher_forcing_beside_free_decoding_on_a_wrong_reference():
    """Fed a reference the model would not write (“I love France” for 我爱中国), teacher forcing gives P of each true
    word from the true prefix, while free decoding writes its own."""
    note, *_, table, _ = seq2seq.translate(SEQ2SEQ_HERE_ID, "我爱中国", "I love France", 3, 2, 0, *GREEDY)
    rows = table.values.tolist()
    out, vocab = forward("我爱中国", ["I", "love"])
    p_france = float(out.logits[0, -1].softmax(-1)[vocab.target_ids["France"]])
    assert rows[2][2] == "China" and rows[2][5] == f"France ({seq2seq.sig4(p_france)})" and rows[2][6] == "China"
    assert p_france < 0.01 and "3 of 4 positions" in note and "“I love China”" in note


def test_why_this_word_is_gradient_times_input_as_captum_computes_it():
    from captum.attr import LayerGradientXActivation

    model, vocab = seq2seq_view.model_for_gradients()
    source, prefix = "我爱中国", ["I", "love"]
    ids = torch.tensor([[vocab.source_ids[c] for c in source]])
    target = torch.tensor([[BOS] + [vocab.target_ids[w] for w in prefix]])

    def china(src):
        return model(src, target).logits[:, -1, vocab.target_ids["China"]]

    expected = LayerGradientXActivation(china, model.src_embed.lut).attribute(ids).sum(-1)[0]
    why = seq2seq_view.why_word(source, ["I", "love", "China"], 2)
    assert why.word == "China" and why.scores == pytest.approx(expected.tolist(), abs=1e-6)
    figure = seq2seq.translate(SEQ2SEQ_HERE_ID, source, "", 3, 2, 0, *GREEDY)[4]["value"]
    assert list(figure.data[0].y) == pytest.approx(expected.tolist(), abs=1e-6)
    end = seq2seq_view.why_word(source, ["I", "love", "China"], 3)  # the last step explains </s>
    assert end.word == "</s>" and 0.9 < end.probability <= 1


def test_sampling_settings_reach_the_decoder_and_the_seed_repeats_it():
    values = (SEQ2SEQ_HERE_ID, "我今天也爱巴黎，你每天在学校读新闻", "", 1, 2, 0)
    first = seq2seq.translate(*values, 3.0, 0, 1.0, 11)
    again = seq2seq.translate(*values, 3.0, 0, 1.0, 11)
    greedy = seq2seq.translate(*values, *GREEDY)
    assert "τ = 3" in first[0] and "seed 11" in first[0] and first[0] == again[0]
    assert [r[2] for r in first[5].values.tolist()] == [r[2] for r in again[5].values.tolist()]
    free = core_seq2seq.translate("我今天也爱巴黎，你每天在学校读新闻", settings=core_seq2seq.Settings(3.0, 0, 1.0, 11))
    assert [r[2] for r in first[5].values.tolist()] == [s.word for s in free.steps]
    assert [r[2] for r in greedy[5].values.tolist()] == [s.word for s in core_seq2seq.translate(values[1]).steps]


def test_step_layer_and_head_beyond_the_model_are_shown_at_its_last():
    note, self_fig, cross_fig, *_ = seq2seq.translate(SEQ2SEQ_HERE_ID, "我爱中国", "", 40, 6, 8, *GREEDY)
    assert "**Step 4:**" in note and "layer 2, head 4" in cross_fig.layout.title.text
    assert "the step 40 is beyond" in note.lower() or "step 40 is beyond" in note
    assert "head 8 is beyond" in note and "layer 6 is beyond" in note
    assert "type the true English" not in note  # the corpus holds 我爱中国: its English is the reference


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_languages(lang):
    with using_language(lang):
        note, self_fig, cross_fig, top_fig, why, table, _ = seq2seq.translate(
            *seq2seq.TRANSLATE_PRESETS[0].values)
        mask_note, mask_fig, mask_table = seq2seq.mask_experiment()
        align_note, length_fig, *_ = seq2seq.context_vs_attention("我爱中国")
    words = {"en": ("Masked self-attention", "Cross-attention", "Teacher forcing", "training loss", "one vector C"),
             "zh": ("掩码自注意力", "交叉注意力", "教师强制", "训练损失", "一个向量 C")}[lang]
    assert words[0] in self_fig.layout.title.text and words[1] in cross_fig.layout.title.text
    assert words[2] in note and words[3] in list(mask_fig.data[0].x)[0] and words[4] in align_note
    assert table.columns[0] == ("position" if lang == "en" else "位置")


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("text, reference, words", [
    ("", "", {"en": "Type a sentence", "zh": "请输入"}),
    ("   ", "", {"en": "Type a sentence", "zh": "请输入"}),
    ("hello world", "", {"en": "None of these words", "zh": "这些词都不在"}),
    ("je " * 61, "", {"en": "has 61 tokens; the model reads at most 60", "zh": "源句有 61 个词元"}),
    ("x" * 2001, "", {"en": "2001 characters", "zh": "2001 个字符"}),
    ("我爱中国", "I adore China", {"en": "lacks: adore", "zh": "没有的词：adore"}),
])
def test_sources_it_cannot_read_get_a_message_in_the_learners_language(lang, text, reference, words):
    with using_language(lang), pytest.raises(gr.Error) as refused:
        seq2seq.translate(SEQ2SEQ_HERE_ID, text, reference, 1, 1, 0, *GREEDY)
    assert words[lang] in refused.value.message and "Traceback" not in refused.value.message
    if reference == "":
        with using_language(lang), pytest.raises(gr.Error) as again:
            seq2seq.context_vs_attention(text)
        assert words[lang] in again.value.message


def test_bad_numbers_and_settings_get_a_message():
    with pytest.raises(gr.Error, match="whole number"):
        seq2seq.translate(SEQ2SEQ_HERE_ID, "我爱中国", "", "two", 1, 0, *GREEDY)
    with pytest.raises(gr.Error, match="[Tt]emperature"):
        seq2seq.translate(SEQ2SEQ_HERE_ID, "我爱中国", "", 1, 1, 0, -1, 0, 1.0, 0)


def test_unknown_words_are_named_and_read_as_unk():
    note, *_ = seq2seq.translate(SEQ2SEQ_HERE_ID, "je suis zzz étudiant", "", 1, 1, 0, *GREEDY)
    assert "read as <unk>: zzz" in note


@pytest.fixture
def offline():
    was = resolve.is_offline()
    resolve.set_offline(True)
    yield
    resolve.set_offline(was)


@pytest.mark.parametrize("lang, words", [("en", "What it shows"), ("zh", "它会显示")])
def test_t5_small_offline_shows_the_download_card_and_hides_the_results(offline, lang, words):
    with using_language(lang):
        outputs = seq2seq.translate(*seq2seq.TRANSLATE_PRESETS[-1].values)
    card = outputs[0]
    assert "hf download t5-small" in card and words in card and outputs[-1] == HIDDEN
    assert all(o is None for o in outputs[1:-1])


def test_a_t5_from_a_folder_decodes_step_by_step(tmp_path):
    """A tiny random T5 (tests/nets/test_t5_parity.py's) typed as a folder: the same view, pieces instead of words; its
    cross-attention is core.seq2seq.seq2seq.translate_t5's (checked against transformers there); no teacher forcing or why."""
    from tests.nets.test_t5_parity import SOURCE, write_checkpoint

    write_checkpoint(tmp_path, "relu", True)
    note, self_fig, cross_fig, top_fig, why, table, shown = seq2seq.translate(str(tmp_path), SOURCE, "", 2, 9, 0,
                                                                               *GREEDY)
    expected = core_seq2seq.translate_t5(SOURCE, str(tmp_path), top_k=seq2seq.TOP_K)
    step = expected.steps[1]
    assert np.allclose(np.asarray(cross_fig.data[0].z, dtype=float), step.cross_attention[-1].mean(0).numpy(),
                       atol=1e-6)  # layer 9 → the tiny T5's last (3rd) decoder layer, mean of the heads
    assert "layer 3" in cross_fig.layout.title.text and "layer 9 is beyond" in note
    assert list(top_fig.data[0].y) == [html.escape(w.replace(" ", "␣"), quote=False) for w, _ in step.top]
    assert why["visible"] is False and why["value"] is None and shown["visible"] is True and "Teacher forcing and “why this word”" in note
    assert [r[2] for r in table.values.tolist()] == [s.word for s in expected.steps]


def test_the_mask_view_shows_the_shipped_experiment():
    note, figure, table = seq2seq.mask_experiment()
    measured = RESULTS["mask_experiment"]
    for trace, side in zip(figure.data, ("masked", "unmasked")):
        run = measured[side]
        assert list(trace.y) == pytest.approx([run["training_loss"], run["heldout"]["exact_match"],
                                               run["heldout"]["token_accuracy"]])
    assert measured["unmasked"]["training_loss"] < measured["masked"]["training_loss"]  # §11.1's direction
    assert measured["unmasked"]["heldout"]["exact_match"] < measured["masked"]["heldout"]["exact_match"]
    assert table.values.tolist()[1][1:] == [seq2seq.sig4(measured["unmasked"]["training_loss"]), "0.0%", "0.0%"]
    assert "unmasked 0.194" in note and "masked 57.2%" in note


def test_the_alignment_view_shows_accuracy_by_length_and_each_words_alignment():
    from core.seq2seq.compare import alignment, shipped_lstm

    text = seq2seq.ALIGN_PRESETS[0].values[0]
    note, length_fig, alpha_fig, cross_fig, table = seq2seq.context_vs_attention(text)
    measured = RESULTS["context_experiment"]
    by_name = {trace.name: list(trace.y) for trace in length_fig.data}
    assert by_name["one vector C: exact match"] == pytest.approx([r["exact_match"] for r in
                                                                  measured["vector"]["by_length"]])
    assert by_name["attention: token accuracy"] == pytest.approx([r["token_accuracy"] for r in
                                                                  measured["attention"]["by_length"]])
    source, words, alpha = alignment(*shipped_lstm("attention"), text)
    assert np.allclose(np.asarray(alpha_fig.data[0].z, dtype=float), alpha.numpy(), atol=1e-6)
    assert list(alpha_fig.data[0].y)[-1] == "&lt;/s&gt;" and len(alpha_fig.data[0].x) == len(source) == 28
    translation = core_seq2seq.translate(text)
    assert np.allclose(np.asarray(cross_fig.data[0].z, dtype=float),
                       translation.steps[-1].cross_attention[-1].mean(0).numpy(), atol=1e-6)
    assert " ".join(words[:-1]) in note and len(table) == sum(len(measured[c]["by_length"]) for c in measured
                                                               if c in ("vector", "attention"))


def test_the_alignment_puts_each_seed_word_on_its_source():
    """我爱中国 → I love China: the attention LSTM and the Transformer each align “China” mostly to 中国."""
    found = seq2seq_view.alignments("我爱中国")
    assert found.lstm_words == ["I", "love", "China", "</s>"] == found.transformer_words
    for rows in (found.lstm_alpha, found.cross):
        assert float(rows[2, 2:].sum()) > 0.5  # the row that writes “China”: most of it on 中 and 国


@pytest.mark.parametrize("preset", seq2seq.TRANSLATE_PRESETS[:-1] + seq2seq.ALIGN_PRESETS,
                         ids=lambda preset: preset.slug)
def test_every_preset_runs(preset):
    handler = seq2seq.translate if preset in seq2seq.TRANSLATE_PRESETS else seq2seq.context_vs_attention
    outputs = handler(*preset.values)
    assert outputs[0] and all(o is not None for o in outputs)


def test_the_lesson_and_the_timeline_open_the_chapter():
    from demo.transformer import transformer

    assert transformer.HISTORY[0][-1] == "je-suis-etudiant" in {p.slug for p in seq2seq.TRANSLATE_PRESETS}
    assert [row[-1] for row in seq2seq.LESSON] == ["je-suis-etudiant", "mask-experiment", "c-vs-attention"]
    assert all(row in transformer.LESSON for row in seq2seq.LESSON)
