"""core.tasks.classify and core.tasks.finetune(_train): logits and pipeline outputs equal transformers' on tiny random
checkpoints; labelled-data parsing and its messages; baselines; reproducible fine-tuning that beats the majority."""
import numpy as np
import pytest
import torch

from core.tasks import classify, finetune, finetune_train
from core.loading import registry
from core.text.corpora import DEFAULT_LABELLED
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading import checkpoints
from core.text import seeds

LABELS = {0: "negative", 1: "positive", 2: "neutral"}
SINGLE = ("The soup was hot, fresh and full of flavour.", None)
PAIR = ("I like you very much.", "I am very fond of you.")


@pytest.fixture(scope="module", params=["BertForSequenceClassification", "DistilBertForSequenceClassification"])
def folder(request, tiny_checkpoint):
    return str(tiny_checkpoint(request.param, id2label=LABELS))


def reference_logits(folder, text_a, text_b, **kwargs):
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    inputs = tokenizer(text_a, text_b, return_tensors="pt", **kwargs)
    with torch.no_grad():
        return model(**inputs).logits[0].numpy(), inputs["input_ids"][0].tolist()


@pytest.mark.parametrize("texts", [SINGLE, PAIR], ids=["single", "pair"])
def test_logits_equal_transformers(folder, texts):
    result = classify.classify(*texts, folder)
    expected, ids = reference_logits(folder, *texts)
    assert result.encoding.ids == ids
    np.testing.assert_allclose(result.logits, expected, atol=1e-5)
    np.testing.assert_allclose(result.weight @ result.vector + result.bias, expected, atol=1e-5)
    assert result.encoding.segment_ids[-1] == (1 if texts[1] else 0)


@pytest.mark.parametrize("texts", [SINGLE, PAIR], ids=["single", "pair"])
def test_labels_and_scores_equal_the_pipeline(folder, texts):
    import transformers

    pipe = transformers.pipeline("text-classification", model=folder, top_k=None, device="cpu")
    expected = pipe(texts[0] if texts[1] is None else {"text": texts[0], "text_pair": texts[1]})
    expected = expected[0] if isinstance(expected[0], list) else expected  # a str input gives [[...]]
    ours = classify.classify(*texts, folder).ranked
    assert [r["label"] for r in ours] == [e["label"] for e in expected]
    np.testing.assert_allclose([r["score"] for r in ours], [e["score"] for e in expected], atol=1e-6)


def test_single_output_uses_a_sigmoid_like_the_pipeline(tiny_checkpoint):
    import transformers

    folder = str(tiny_checkpoint("BertForSequenceClassification", num_labels=1))
    expected = transformers.pipeline("text-classification", model=folder, top_k=None, device="cpu")(SINGLE[0])
    expected = expected[0] if isinstance(expected[0], list) else expected
    result = classify.classify(SINGLE[0], None, folder)
    assert result.function == "sigmoid"
    assert result.ranked[0]["label"] == expected[0]["label"]
    assert result.ranked[0]["score"] == pytest.approx(expected[0]["score"], abs=1e-6)


def test_long_pair_is_cut_longest_first_like_transformers(folder):
    long_a = "the whale swam far away " * 30
    result = classify.classify(long_a, PAIR[1], folder, max_length=32)
    expected, ids = reference_logits(folder, long_a, PAIR[1], truncation="longest_first", max_length=32)
    assert result.encoding.ids == ids and len(ids) == 32
    assert result.encoding.truncation.removed_tokens > 100
    np.testing.assert_allclose(result.logits, expected, atol=1e-5)


def test_bad_inputs_and_wrong_checkpoints_get_clear_messages(tiny_checkpoint, folder):
    with pytest.raises(UserInputError, match="Sentence B is empty"):
        classify.classify("hello", "  \r ", folder, pair=True)
    with pytest.raises(UserInputError, match="Sentence A is empty"):
        classify.classify("", None, folder)
    with pytest.raises(UserInputError, match="between 8"):
        classify.classify("hello", None, folder, max_length=3)
    tagger = str(tiny_checkpoint("BertForTokenClassification", num_labels=3))
    with pytest.raises(UserInputError, match="TokenClassification"):
        classify.classify("hello", None, tagger)
    with pytest.raises(ModelUnavailableError, match=checkpoints.SST2_ID):
        classify.classify("hello", None, checkpoints.SST2_ID)


def test_generic_labels_get_dataset_names_only_for_known_checkpoints():
    from core.nets.bert import BertConfig

    generic = BertConfig.from_dict({"id2label": {"0": "LABEL_0", "1": "LABEL_1"}})
    assert classify.label_names(checkpoints.MRPC_ID, generic)[0] == ["not paraphrase", "paraphrase"]
    assert classify.label_names("some/other", generic)[0] == ["LABEL_0", "LABEL_1"]
    named = BertConfig.from_dict({"id2label": {"0": "NEGATIVE", "1": "POSITIVE"}})
    assert classify.label_names(checkpoints.MRPC_ID, named)[0] == ["NEGATIVE", "POSITIVE"]


def test_offline_layout_uses_minilm_tokenizer():
    encoding, source = classify.input_layout(*seeds.SEED_PAIR_EN, checkpoints.MRPC_ID)
    assert "not available here" in source
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens.count("[SEP]") == 2
    first_sep = encoding.tokens.index("[SEP]")
    assert set(encoding.segment_ids[:first_sep + 1]) == {0} and set(encoding.segment_ids[first_sep + 1:]) == {1}


# ------------------------------------------------------------------------------------------------------------------
# Labelled data


def test_parse_tabs_csv_header_comments_and_carriage_returns():
    text = "label\tsentence\r\n# a comment\rpositive\tGreat.\n\nnegative,\"Bad, really bad.\"\n" + \
           "positive\tFine.\nnegative\tAwful.\npositive\tNice.\nnegative\tPoor.\npositive\tLovely.\nnegative\tSad.\n"
    examples = finetune.parse_labelled(text)
    assert [(e.label, e.text, e.line) for e in examples[:2]] == [("positive", "Great.", 3),
                                                                  ("negative", "Bad, really bad.", 5)]
    assert len(examples) == 8


def test_malformed_lines_are_named_by_number():
    with pytest.raises(UserInputError, match=r"line 2: no tab.*line 3: the sentence is empty"):
        finetune.parse_labelled("positive\tok\njust a sentence\nnegative\t \n")


def test_one_class_and_rare_labels_get_messages():
    with pytest.raises(UserInputError, match="at least two classes"):
        finetune.parse_labelled("positive\ta\npositive\tb\n")
    lines = "".join(f"{label}\ts{i}\n" for i, label in enumerate(["positive", "negative"] * 4)) + "postive\ttypo\n"
    with pytest.raises(UserInputError, match=r"“postive” only on line\(s\) 9"):
        finetune.parse_labelled(lines)


def test_uploads_are_capped_and_must_be_utf8(tmp_path):
    big = tmp_path / "big.tsv"
    big.write_bytes(b"positive\tgood\n" * (finetune.MAX_UPLOAD_BYTES // 14 + 10))
    with pytest.raises(UserInputError, match="limit"):
        finetune.read_upload(big)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("positive,café\n".encode("latin-1"))
    with pytest.raises(UserInputError, match="UTF-8"):
        finetune.read_upload(latin)
    good = tmp_path / "good.csv"
    good.write_text("".join(f"{'ab'[i % 2]},sentence {i}\n" for i in range(10)), encoding="utf-8")
    assert len(finetune.read_upload(good)) == 10


def test_split_is_stratified_seeded_and_keeps_twins_together():
    examples = finetune.load_bundled(DEFAULT_LABELLED)
    assert len(examples) >= 200 and {e.label for e in examples} == {"positive", "negative"}
    first, again = finetune.split(examples, 3), finetune.split(examples, 3)
    assert [e.text for e in first.test] == [e.text for e in again.test]
    assert np.bincount(first.y_test).tolist() == [len(first.test) // 2] * 2
    assert {e.group for e in first.train}.isdisjoint({e.group for e in first.test})
    plain = [finetune.Example(e.label, e.text, e.line) for e in examples]
    assert abs(len(finetune.split(plain, 0).test) - 0.25 * len(plain)) <= 2


def test_bundled_chinese_set_is_balanced_and_large_enough():
    examples = finetune.load_bundled("Chinese sentiment 中文情感 (bundled)")
    counts = {label: sum(e.label == label for e in examples) for label in ("positive", "negative")}
    assert counts["positive"] == counts["negative"] >= 100
    assert len({e.text for e in examples}) == len(examples)


def test_baselines_on_a_separable_toy_set():
    words = {"positive": ["good", "great", "lovely", "fine"], "negative": ["bad", "awful", "poor", "sad"]}
    examples = [finetune.Example(label, f"it was {w} {v}", 0) for label, ws in words.items()
                for w in ws for v in ("today", "indeed", "again")]
    data = finetune.split(examples, 0)
    majority, ngram, glove = finetune.baselines(data)
    counts = np.bincount(data.y_train)
    assert majority.accuracy == float(np.mean(data.y_test == counts.argmax()))
    assert glove.accuracy == 1.0  # GloVe knows good/bad are opposite in sentiment-bearing directions
    assert ngram.accuracy <= 1.0 and "n-grams" in ngram.note


def test_units_split_chinese_into_characters():
    assert finetune.units("我很喜欢 BERT models") == ["我", "很", "喜", "欢", "bert", "models"]
    assert "很 喜" in finetune.ngrams("我很喜欢")


# ------------------------------------------------------------------------------------------------------------------
# Fine-tuning


@pytest.fixture(scope="module")
def small_split():
    """80 of the bundled English sentences (40 twin pairs): 60 to train on, 20 held out; keeps the runs short."""
    examples = [e for e in finetune.load_bundled(DEFAULT_LABELLED) if e.group < 40]
    return finetune.split(examples, 0)


def run(data, **settings):
    updates = list(finetune_train.train(data, with_baselines=False, **settings))
    assert all(isinstance(u, finetune_train.Progress) for u in updates[:-1])
    return updates[-1]


@pytest.fixture(scope="module")
def outcome(small_split):
    return run(small_split, head_steps=60, unfrozen=1, epochs=1)


def test_same_seed_same_accuracy_and_it_beats_the_majority(small_split, outcome):
    again = run(small_split, head_steps=60, unfrozen=1, epochs=1)
    assert again.head_accuracy == pytest.approx(outcome.head_accuracy, abs=1e-6)
    assert again.tuned_accuracy == pytest.approx(outcome.tuned_accuracy, abs=1e-6)
    np.testing.assert_allclose(again.layer_losses, outcome.layer_losses, atol=1e-6)
    majority = outcome.baselines[0].accuracy
    assert outcome.head_accuracy > majority + 0.2 and outcome.tuned_accuracy > majority + 0.2


def test_frozen_vectors_equal_sentence_transformers_mean_pooling(small_split):
    import transformers

    from core.loading import resolve


    from core.loading.checkpoints import MINILM_ID

    texts = [e.text for e in small_split.test[:5]]
    ours = finetune_train.encode(texts, 1).frozen
    folder = str(resolve.resolve(MINILM_ID).directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    np.testing.assert_allclose(ours.numpy(), ((hidden * mask).sum(1) / mask.sum(1)).numpy(), atol=1e-5)


def test_weight_change_and_projections(outcome):
    encoder = registry.load("encoder", finetune_train.MINILM_ID).model.base
    top = encoder.encoder.layer[-1]
    tuned_query = outcome.tuned.layers[0].attention.self.query.weight.detach()
    query = top.attention.self.query.weight.detach()
    expected = float((tuned_query - query).norm() / query.norm())
    changes = dict(outcome.weight_change)
    assert changes["layer 5: attention.self.query"] == pytest.approx(expected, rel=1e-5)
    assert len(changes) == 6 and all(0 < value < 0.5 for value in changes.values())
    assert outcome.before.shape == outcome.after.shape == (len(outcome.data.test), 2)
    # The shared MiniLM is untouched: its frozen vectors still equal what the run computed before training.
    again = finetune_train.encode([e.text for e in outcome.data.test], 1).frozen
    before, _ = finetune_train.pca(again.numpy().astype(np.float64), 2)
    np.testing.assert_allclose(before, outcome.before, atol=1e-4)


def test_the_before_picture_is_the_pca_of_frozen_vectors_and_is_encoded_once(small_split, monkeypatch):
    """"What fine-tuning changed" shows it on every open: it is computed once per held-out set and shared."""
    finetune_train._frozen_projection.cache_clear()
    finetune_train.frozen_vectors.cache_clear()  # the projection reads the held-out vectors through this cache
    calls = []
    encode = finetune_train.encode
    monkeypatch.setattr(finetune_train, "encode", lambda texts, unfrozen: calls.append(len(texts)) or
                        encode(texts, unfrozen))
    coords, variance = finetune_train.before_projection(small_split)
    again, _ = finetune_train.before_projection(small_split)
    assert calls == [len(small_split.test)] and again is coords
    frozen = encode([e.text for e in small_split.test], 1).frozen.numpy().astype(np.float64)
    expected, expected_variance = finetune_train.pca(frozen, 2)
    np.testing.assert_allclose(coords, expected, atol=1e-6)
    np.testing.assert_allclose(variance, expected_variance, atol=1e-9)
    with pytest.raises(ValueError):  # shared by every caller: nobody may change it in place
        coords[0, 0] = 0.0


def test_budget_stops_with_the_last_completed_epoch(small_split):
    stopped = run(small_split, head_steps=20, unfrozen=1, epochs=3, budget_seconds=0.0)
    assert stopped.epochs_done == 0 and len(stopped.layer_losses) == 1
    assert "budget" in stopped.notes[0]
    assert stopped.tuned_accuracy == pytest.approx(stopped.head_accuracy, abs=1e-9)  # unchanged layers, head (a)


def test_a_second_run_from_the_same_session_cancels_the_first(small_split):
    settings = dict(unfrozen=1, epochs=1, with_baselines=False)
    first = finetune_train.run_for_session("s1", small_split, head_steps=50, **settings)
    next(first)
    second = finetune_train.run_for_session("s1", small_split, head_steps=10, **settings)
    next(second)
    with pytest.raises(finetune_train.Cancelled):
        for _ in first:
            pass
    result = list(second)[-1]
    assert finetune_train.RUNS.result("s1") is result
    assert finetune_train.RUNS.result("other") is None


def test_settings_out_of_range_are_refused(small_split):
    with pytest.raises(UserInputError, match="unfrozen layers"):
        next(finetune_train.train(small_split, unfrozen=7))


def test_runs_wait_for_a_free_slot_and_can_be_replaced_while_waiting(small_split):
    runs = finetune_train.SessionRuns(slots=1)
    original, finetune_train.RUNS = finetune_train.RUNS, runs
    try:
        runs.slots.acquire()  # another learner is training
        waiting = finetune_train.run_for_session("s2", small_split, head_steps=5, unfrozen=1, epochs=1,
                                                 with_baselines=False)
        assert next(waiting).stage == "waiting"
        replacement = finetune_train.run_for_session("s2", small_split, head_steps=5, unfrozen=1, epochs=1,
                                                     with_baselines=False)
        assert next(replacement).stage == "waiting"
        with pytest.raises(finetune_train.Cancelled):
            next(waiting)
        runs.slots.release()
        assert isinstance(list(replacement)[-1], finetune_train.Outcome)
    finally:
        finetune_train.RUNS = original



# ----------------------------------------------------------------------------------------------------------------
# The Chinese checkpoints (issue #19): their label sets, through the registry, equal to transformers


@pytest.fixture
def chinese_hub(monkeypatch, tmp_path):
    """uer/roberta-base-finetuned-dianping-chinese (its id2label) and IDEA-CCNL/Erlangshen-Roberta-110M-Similarity
    (LABEL_0/LABEL_1, vocab.txt only), tiny and random, served under their real ids by a local Hub."""
    from tests import chinese_checkpoints

    folders = {
        checkpoints.DIANPING_ID: chinese_checkpoints.write(
            tmp_path / "dianping", "BertForSequenceClassification", safetensors=True, tokenizer_config=True,
            id2label=chinese_checkpoints.DIANPING_LABELS),
        checkpoints.SIMILARITY_ZH_ID: chinese_checkpoints.write(
            tmp_path / "similarity", "BertForSequenceClassification", safetensors=True, tokenizer_config=False,
            seed=1, num_labels=2),
    }
    server = chinese_checkpoints.serve(monkeypatch, tmp_path, folders)
    yield folders
    chinese_checkpoints.stop(server)


def test_chinese_checkpoints_load_through_the_registry_with_their_label_sets(chinese_hub):
    from core.text.i18n import using_language

    review = classify.classify(seeds.DIANPING_REVIEW, None, checkpoints.DIANPING_ID)
    assert review.labels == ["negative (stars 1, 2 and 3)", "positive (stars 4 and 5)"]
    assert "id2label" in review.label_note and "downloaded now (" in review.badge
    assert review.encoding.tokens[:3] == ["[CLS]", "菜", "很"]  # one token per character
    expected, ids = reference_logits(str(chinese_hub[checkpoints.DIANPING_ID]), seeds.DIANPING_REVIEW, None)
    assert review.encoding.ids == ids
    np.testing.assert_allclose(review.logits, expected, atol=1e-5)

    pair = classify.classify(*seeds.SEED_PAIR_ZH, checkpoints.SIMILARITY_ZH_ID)
    assert pair.labels == ["不相似 (not similar)", "相似 (similar)"] and "LCQMC" in pair.label_note
    assert pair.encoding.tokens == ["[CLS]", *"我很喜欢你", "[SEP]", *"我很中意你", "[SEP]"]
    assert pair.encoding.segment_ids == [0] * 7 + [1] * 6
    expected, ids = reference_logits(str(chinese_hub[checkpoints.SIMILARITY_ZH_ID]), *seeds.SEED_PAIR_ZH)
    assert pair.encoding.ids == ids
    np.testing.assert_allclose(pair.logits, expected, atol=1e-5)
    assert pair.probs.sum() == pytest.approx(1.0, abs=1e-6)
    with using_language("zh"):  # the names the model card gives, in the learner's language
        assert classify.classify(*seeds.SEED_PAIR_ZH, checkpoints.SIMILARITY_ZH_ID).labels == ["不相似", "相似"]


def test_finetune_messages_come_out_in_chinese():
    from core.text.i18n import using_language

    with using_language("zh"):
        with pytest.raises(UserInputError, match="第 2 行：标签和句子之间没有制表符"):
            finetune.parse_labelled("positive\tok\njust a sentence\n")
        with pytest.raises(UserInputError, match="分类器至少需要两个类别"):
            finetune.parse_labelled("positive\ta\npositive\tb\n")
