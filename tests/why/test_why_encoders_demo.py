"""demo/why/encoders.py: the "Why this answer" views of the BERT tabs (masked LM, NER, QA, classification), called
directly on tiny random checkpoints written by transformers (and on the real MiniLM-L6 for the fine-tuned classifier).
What they show equals core's numbers and the tabs' own predictions; bad input and missing checkpoints get messages."""
from __future__ import annotations

import re
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

from core.tasks import classify as core_classify, finetune, finetune_train, ner as core_ner, qa as core_qa
from core.why import logit_lens
from core.loading import resolve
from core.why import why as core_why, encoders as core_encoders
from core.loading.checkpoints import CHAR_BERT_ID, FINE_TUNED_MINILM_ID, SST2_ID
from core.text.corpora import DEFAULT_LABELLED
from core.text.i18n import using_language
from demo.why import encoders as views
from tests.why.test_why_demo import strip_values

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HIDDEN = {"__type__": "update", "visible": False}
SHOWN = {"__type__": "update", "visible": True}
BANK = "I deposited my pay cheque at the [MASK]."
BERLIN = "My name is Wolfgang and I live in Berlin."
ANIMAL = "The animal didn't cross the street because it was too tired."


def ig_and_gxi(result):
    ig, gxi = result.attributions
    assert (ig.method, gxi.method) == ("integrated_gradients", "gradient_x_input")
    return ig, gxi


def assert_complete(result, share: float = 0.01):
    """Σ a = f(x) − f(x') up to a small part of the change (integrated gradients' completeness)."""
    ig, _ = ig_and_gxi(result)
    assert ig.total == pytest.approx(ig.score - ig.baseline_score, abs=share * abs(ig.score - ig.baseline_score) + 1e-7)


# ----------------------------------------------------------------------------------------------------------------
# Masked LM: a BERT checkpoint (with its logit lens) and the char-BERT through the same view


def test_masked_view_on_a_bert_equals_core_and_its_lens(mlm_folder):
    note, html, fig, shown = views.explain_masked(str(mlm_folder), BANK, 8)
    result, lens = core_encoders.explain_masked_word(BANK, str(mlm_folder), 8)
    ig, gxi = ig_and_gxi(result)
    assert shown == SHOWN and result.target == "masked_word" and result.baseline == "pad"
    assert f"the masked word: **{result.answer}**" in note and "8 steps, baseline [PAD] embeddings" in note
    assert strip_values(html, "why-mlm-integrated_gradients") == pytest.approx(ig.signed, rel=1e-6)
    assert strip_values(html, "why-mlm-gradient_x_input") == pytest.approx(gxi.signed, rel=1e-6)
    assert strip_values(html, "why-mlm-rollout") == pytest.approx(result.rollout, rel=1e-6)
    assert 'data-name="why-mlm-numbers"' in html and 'data-name="why-mlm-logit-lens"' in html
    # the lens's last row is the model's own answer, the one the attributions explain; 2 layers + the embeddings
    assert lens.answer == result.answer and lens.layers == ["embeddings", "1", "2"]
    assert lens.answer_probabilities[-1] == pytest.approx(result.probability, rel=1e-5)
    assert np.allclose(np.array(fig.data[0].z, dtype=float), lens.tracked_probabilities)
    assert ig.l2[0] == 0.0 and ig.l2[result.tokens.index("[MASK]")] == 0.0  # x = x' there: nothing to attribute
    assert_complete(result)


def test_masked_view_runs_the_char_bert_unchanged():
    text = "We had a picnic on the river ba[MASK]k."
    note, html, fig, shown = views.explain_masked(CHAR_BERT_ID, text, 8)
    expected = core_why.explain_char_bert(text, 8)
    assert shown == SHOWN and f"**{expected.answer}**" in note and "baseline zero vectors" in note
    assert strip_values(html, "why-mlm-integrated_gradients") == pytest.approx(expected.attributions[0].signed,
                                                                              rel=1e-6)
    assert np.allclose(np.array(fig.data[0].z, dtype=float), logit_lens.char_bert_lens(text).tracked_probabilities)


# ----------------------------------------------------------------------------------------------------------------
# NER: one token's tag


def test_ner_view_explains_the_first_entity_token_by_default(conll_ner_checkpoint):
    folder = str(conll_ner_checkpoint)
    tags = core_ner.tag(BERLIN, folder).argmax_labels()  # what the NER tab shows for each token
    first = next((i for i, tag in enumerate(tags) if tag != "O"), 0) + 1  # [CLS] is #0
    note, html, shown = views.explain_ner(folder, BERLIN, "", 8)
    found = core_encoders.explain_tag(BERLIN, folder, "", 8)
    assert shown == SHOWN and found.position == first and found.why.answer == tags[first - 1]
    assert f"token #{first} **{found.token}**" in note and f"the token's tag: **{found.why.answer}**" in note
    assert strip_values(html, "why-ner-integrated_gradients") == pytest.approx(found.why.attributions[0].signed,
                                                                              rel=1e-6)
    strip = html.split('data-name="why-ner-integrated_gradients"', 1)[1].split("</figure>", 1)[0]
    assert re.findall(r'stroke-width="2.5" data-mark="([^"]*)"', strip) == [found.token]  # outlined: the tagged one
    assert_complete(found.why)


def test_ner_view_takes_a_word_or_a_position(conll_ner_checkpoint):
    folder = str(conll_ner_checkpoint)
    tagged = core_ner.tag(BERLIN, folder)
    berlin = next(i for i, token in enumerate(tagged.tokens) if token.piece.lower() == "berlin") + 1
    by_word = core_encoders.explain_tag(BERLIN, folder, "Berlin", 8)
    by_number = core_encoders.explain_tag(BERLIN, folder, str(berlin), 8)
    assert by_word.position == by_number.position == berlin and by_word.chosen
    assert by_word.why.answer == tagged.argmax_labels()[berlin - 1]
    assert by_word.why.attributions[0].signed == pytest.approx(by_number.why.attributions[0].signed, rel=1e-6)
    wolfgang = core_encoders.explain_tag(BERLIN, folder, "wolfgang", 4)  # a word of several pieces: its first
    assert wolfgang.token.lower() == tagged.tokens[wolfgang.position - 1].piece.lower() and wolfgang.position == 4


# ----------------------------------------------------------------------------------------------------------------
# QA: the answer's start and end


def test_qa_view_explains_the_start_and_the_end_of_the_qa_tabs_answer(tiny_checkpoint):
    folder = str(tiny_checkpoint("BertForQuestionAnswering"))
    question = "What was too tired?"
    note, html, shown = views.explain_qa(folder, question, ANIMAL, 8)
    found = core_encoders.explain_span(question, ANIMAL, folder, 8)
    best = core_qa.answer(question, ANIMAL, folder)
    window = best.windows[best.best.window]
    assert shown == SHOWN and found.answer == best.best.text and f"Answer: **{best.best.text}**" in note
    # f is the probability the QA tab shows: P_start and P_end over the context (question tokens left out)
    start, end = found.positions
    assert found.start.probability == pytest.approx(window.start_probs[start - window.context.start], rel=1e-4)
    assert found.end.probability == pytest.approx(window.end_probs[end - window.context.start], rel=1e-4)
    assert "the answer's start" in note and "the answer's end" in note
    for name, result in (("why-qa-start", found.start), ("why-qa-end", found.end)):
        assert strip_values(html, f"{name}-integrated_gradients") == pytest.approx(result.attributions[0].signed,
                                                                                  rel=1e-6)
        assert strip_values(html, f"{name}-rollout") == pytest.approx(result.rollout, rel=1e-6)
        assert_complete(result)


# ----------------------------------------------------------------------------------------------------------------
# Classification: a checkpoint (softmax and sigmoid heads), and the MiniLM fine-tuned in this session


@pytest.mark.parametrize("labels", [3, 1])
def test_classify_view_explains_the_checkpoints_class(tiny_checkpoint, labels):
    folder = str(tiny_checkpoint("BertForSequenceClassification", num_labels=labels))
    note, html, shown = views.explain_classify(folder, "I like you very much.", "I am very fond of you.", 8)
    result = core_encoders.explain_class("I like you very much.", "I am very fond of you.", folder, 8)
    tab = core_classify.classify("I like you very much.", "I am very fond of you.", folder, pair=True)
    best = int(tab.probs.argmax())
    assert shown == SHOWN and result.answer == tab.labels[best] and result.tokens.count("[SEP]") == 2
    assert result.probability == pytest.approx(float(tab.probs[best]), rel=1e-4)  # sigmoid heads too
    assert strip_values(html, "why-classify-integrated_gradients") == pytest.approx(result.attributions[0].signed,
                                                                                   rel=1e-6)
    assert_complete(result)


@pytest.mark.slow  # 15-130 s in the fast lane's run (issue 49)
def test_the_fine_tuned_minilm_is_explained_per_session():
    sentence = "The staff were friendly and the room was spotless."
    session = SimpleNamespace(session_hash="why-encoders-test", headers={})
    before, _, shown = views.explain_classify(FINE_TUNED_MINILM_ID, sentence, "", 8, request=session)
    assert shown == SHOWN and "No MiniLM has been fine-tuned in this browser session yet" in before
    data = finetune.split(finetune.load_bundled(DEFAULT_LABELLED), 0)
    for update in finetune_train.run_for_session("why-encoders-test", data, head_steps=20, unfrozen=1, epochs=1,
                                                 with_baselines=False):
        outcome = update
    assert isinstance(outcome, finetune_train.Outcome)
    note, html, _ = views.explain_classify(FINE_TUNED_MINILM_ID, sentence, "", 32, request=session)
    result = core_encoders.explain_session_class(sentence, outcome, 32)  # the real MiniLM needs more than 8 steps
    tuned = outcome.predict(sentence)[-1][1]  # the fine-tuned model's probabilities, as the Fine-tune view shows
    best = int(np.argmax(tuned))
    assert "the MiniLM you fine-tuned in this session" in note and f"**“{outcome.data.labels[best]}”**" in note
    assert result.answer == outcome.data.labels[best] and result.probability == pytest.approx(tuned[best], rel=1e-4)
    assert strip_values(html, "why-classify-integrated_gradients") == pytest.approx(result.attributions[0].signed,
                                                                                   rel=1e-5)
    assert_complete(result, 0.03)
    # a preset is the same for every learner: never another session's model
    preset_note, *_ = views.explain_classify_preset(FINE_TUNED_MINILM_ID, sentence, "", 8)
    assert "No MiniLM has been fine-tuned" in preset_note


# ----------------------------------------------------------------------------------------------------------------
# Chinese, bad input, missing checkpoints


def test_chinese_rendering(conll_ner_checkpoint):
    with using_language("zh"):
        note, html, _ = views.explain_ner(str(conll_ner_checkpoint), BERLIN, "Berlin", 4)
    assert "解释第" in note and "基线为[PAD] 嵌入" in note and "4 步" in note
    assert "积分梯度" in html and "Integrated gradients" not in html


@pytest.mark.parametrize("call, english", [
    (lambda f: views.explain_masked(f["mlm"], "", 8), "Type a sentence first"),
    (lambda f: views.explain_masked(f["mlm"], "no blank here", 8), "There is no blank to fill"),
    (lambda f: views.explain_masked(f["mlm"], "[MASK] " + "a" * 20_001, 8), "the limit is 20,000"),
    (lambda f: views.explain_masked(f["mlm"], "word " * 400 + "[MASK]", 128), "steps is more than this view"),
    (lambda f: views.explain_ner(f["ner"], BERLIN, "99", 8), "There is no token #99 here: pick 1 to"),
    (lambda f: views.explain_ner(f["ner"], BERLIN, "Paris", 8), "“Paris” is not a word or token of this text"),
    (lambda f: views.explain_ner(f["ner"], "Berlin " * 600, "", 2), "the explanation reads one window of at most"),
    (lambda f: views.explain_ner(f["ner"], "   ", "", 8), "The text is empty"),
    (lambda f: views.explain_qa(f["qa"], "", ANIMAL, 8), "The question is empty"),
    (lambda f: views.explain_classify(f["cls"], "", "", 8), "empty"),
    (lambda f: views.explain_classify(FINE_TUNED_MINILM_ID, "", "", 8), "empty"),
    (lambda f: views.explain_masked(f["mlm"], BANK, 0), "integration steps"),
])
def test_bad_input_gets_a_message_in_both_languages(tiny_checkpoint, mlm_folder, conll_ner_checkpoint, call,
                                                    english):
    folders = {"mlm": str(mlm_folder), "ner": str(conll_ner_checkpoint),
               "qa": str(tiny_checkpoint("BertForQuestionAnswering")),
               "cls": str(tiny_checkpoint("BertForSequenceClassification", num_labels=3))}
    messages = {}
    for lang in ("en", "zh"):
        with using_language(lang), pytest.raises(gr.Error) as caught:
            call(folders)
        messages[lang] = str(caught.value.message)
    assert english in messages["en"] and "Traceback" not in messages["en"]
    assert any("\u4e00" <= ch <= "\u9fff" for ch in messages["zh"]) and english not in messages["zh"]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("call, model, outputs", [
    (lambda: views.explain_masked("bert-base-uncased", BANK, 8), "bert-base-uncased", 3),
    (lambda: views.explain_ner(views.NER_ID, BERLIN, "", 8), views.NER_ID, 2),
    (lambda: views.explain_qa(views.QA_ID, "What was too tired?", ANIMAL, 8), views.QA_ID, 2),
    (lambda: views.explain_classify(SST2_ID, "A gripping film.", "", 8), SST2_ID, 2),
], ids=["masked", "ner", "qa", "classify"])
def test_a_missing_checkpoint_shows_the_card_offline(monkeypatch, call, model, outputs, lang):
    monkeypatch.setattr(resolve, "is_offline", lambda: True)
    with using_language(lang):
        result = call()
    assert len(result) == outputs + 1 and result[-1] == HIDDEN  # the results column is hidden, the note is the card
    assert f"hf download {model}\n" in result[0] and ("它会显示" if lang == "zh" else "What it shows") in result[0]
    assert ("which tokens push" if lang == "en" else "哪些词元") in result[0]


def test_presets_are_from_the_seed_and_unique():
    for presets in (views.MASKED_PRESETS, views.NER_PRESETS, views.QA_PRESETS, views.CLASSIFY_PRESETS):
        slugs = [p.slug for p in presets]
        assert len(set(slugs)) == len(slugs) and all(p.section.startswith("§") for p in presets)
    every = [value for p in views.MASKED_PRESETS + views.QA_PRESETS + views.CLASSIFY_PRESETS for value in p.values
             if isinstance(value, str)]
    for seed in ("bank", "animal", "Thinking", "今天天气很[MASK]"):
        assert any(seed in value for value in every), seed
    assert views.MASKED_PRESETS[0].values[0] == CHAR_BERT_ID  # defaults that run offline
    assert views.CLASSIFY_PRESETS[0].values[0] == FINE_TUNED_MINILM_ID
    assert views.QA_PRESETS[0].values[-1] == views.QA_OPEN_STEPS == 8  # it runs when the QA tab opens
    assert all(p.values[-1] == 32 for p in views.QA_PRESETS[1:])
