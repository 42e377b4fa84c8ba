"""The masked LM (core/mlm/mlm.py, core/mlm/pretraining.py); the tab's handlers are tests/mlm/test_mlm_demo.py.

Reference: transformers' fill-mask pipeline (test-only) on the same tiny random checkpoints; transformers' own
models for embeddings, NSP and parameter counts; the seed's numbers for the model card; GloVe's raw file."""
import numpy as np
import pytest
import torch
import transformers

from core.mlm import mlm as fm
from core.mlm import pretraining
from core.loading import registry, resolve
from core.loading.checkpoints import MINILM_ID
from core.text.errors import ModelUnavailableError, UserInputError
from tests import chinese_checkpoints

ZH_TEXTS = chinese_checkpoints.MLM_TEXTS

@pytest.fixture(scope="module", params=["BertForMaskedLM", "BertForPreTraining", "DistilBertForMaskedLM"])
def mlm_folder(request, tiny_checkpoint):
    return str(tiny_checkpoint(request.param))


@pytest.fixture(scope="module")
def pretraining_folder(tiny_checkpoint):
    return str(tiny_checkpoint("BertForPreTraining"))


def reference_pipeline(folder):
    return transformers.pipeline("fill-mask", model=folder, tokenizer=folder, device=-1)


# ----------------------------------------------------------------------------------------------------------------
# Parity with transformers' fill-mask pipeline


def test_single_mask_matches_pipeline(mlm_folder):
    text = "my dog is [MASK] ."
    expected = reference_pipeline(mlm_folder)(text, top_k=7)
    got = fm.fill_mask(registry.load("mlm", mlm_folder), text, top_k=7)
    (blank,) = got.blanks
    assert [c.token_id for c in blank.candidates] == [e["token"] for e in expected]
    assert [c.text for c in blank.candidates] == [e["token_str"] for e in expected]
    np.testing.assert_allclose([c.probability for c in blank.candidates], [e["score"] for e in expected],
                               rtol=1e-4, atol=1e-7)
    assert got.filled == expected[0]["sequence"]  # the top prediction put back, decoded like the pipeline


def test_several_masks_and_blank_spellings_match_pipeline(mlm_folder):
    expected = reference_pipeline(mlm_folder)("the [MASK] went to the [MASK] and bought [MASK] milk .", top_k=4)
    assert len(expected) == 3  # transformers returns one list per mask, each predicted independently
    got = fm.fill_mask(registry.load("mlm", mlm_folder), "the _ went to the [mask] and bought ___ milk .", top_k=4)
    assert [b.position for b in got.blanks] == [2, 6, 9]
    for blank, reference in zip(got.blanks, expected):
        assert [c.token_id for c in blank.candidates] == [e["token"] for e in reference]
        np.testing.assert_allclose([c.probability for c in blank.candidates], [e["score"] for e in reference],
                                   rtol=1e-4, atol=1e-7)


def test_left_context_matches_pipeline_on_the_cut_text(pretraining_folder):
    text = "The weather today is very [MASK], so we had to cancel the outdoor game."
    loaded = registry.load("mlm", pretraining_folder)
    result = fm.compare_contexts(loaded, text, top_k=5)
    assert result.left_text == "The weather today is very [MASK]"
    pipe = reference_pipeline(pretraining_folder)
    for blank, reference in ((result.full, pipe(text, top_k=5)), (result.left, pipe(result.left_text, top_k=5))):
        assert [c.token_id for c in blank.candidates] == [e["token"] for e in reference]
        np.testing.assert_allclose([c.probability for c in blank.candidates], [e["score"] for e in reference],
                                   rtol=1e-4, atol=1e-7)


def test_next_sentence_probability_matches_transformers(pretraining_folder):
    first, second = "the man went to [MASK] store", "he bought a gallon [MASK] milk"
    tokenizer = transformers.AutoTokenizer.from_pretrained(pretraining_folder)
    reference = transformers.BertForPreTraining.from_pretrained(pretraining_folder).eval()
    with torch.inference_mode():
        logits = reference(**tokenizer(first, second, return_tensors="pt")).seq_relationship_logits
    expected = logits.softmax(-1)[0, 0].item()  # index 0 = IsNext
    assert fm.next_sentence(registry.load("mlm", pretraining_folder), first, second) == pytest.approx(expected,
                                                                                                  abs=1e-5)


def test_next_sentence_needs_the_head(tiny_checkpoint):
    with pytest.raises(UserInputError, match="next-sentence head"):
        fm.next_sentence(registry.load("mlm", str(tiny_checkpoint("BertForMaskedLM"))), "a b", "c d")


# ----------------------------------------------------------------------------------------------------------------
# Input representation


def test_input_representation_matches_transformers_embeddings(pretraining_folder):
    loaded = registry.load("mlm", pretraining_folder)
    rep = pretraining.input_representation(loaded, "my dog is cute", "he likes playing")
    tokenizer = transformers.AutoTokenizer.from_pretrained(pretraining_folder)
    batch = tokenizer("my dog is cute", "he likes playing", return_tensors="pt")
    assert rep.tokens == tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    assert rep.segment_ids == batch["token_type_ids"][0].tolist() == [0] * 6 + [1] * 4
    reference = transformers.BertModel.from_pretrained(pretraining_folder).eval()
    with torch.inference_mode():
        hidden0 = reference(**batch, output_hidden_states=True).hidden_states[0][0].numpy()
        table = reference.embeddings.word_embeddings.weight[batch["input_ids"][0]].numpy()
    np.testing.assert_allclose(rep.token, table, atol=1e-6)
    np.testing.assert_allclose(rep.total, rep.token + rep.segment + rep.position, atol=1e-6)
    np.testing.assert_allclose(rep.encoder_input, hidden0, atol=1e-5)  # LayerNorm(sum) is the encoder's input


def test_offline_views_fall_back_to_minilm_and_show_pieces():
    loaded, missing = registry.load_or_fallback("mlm", "bert-base-uncased")  # not here: tests run offline
    assert loaded.files.model_id == MINILM_ID and "bert-base-uncased" in str(missing)
    rep = pretraining.input_representation(loaded, "strawberries", "he likes playing")
    reference = transformers.BertTokenizerFast.from_pretrained(str(resolve.resolve(MINILM_ID).directory))
    assert rep.tokens == ["[CLS]", "straw", "##berries", "[SEP]", "he", "likes", "playing", "[SEP]"]
    assert rep.tokens == reference.convert_ids_to_tokens(reference("strawberries", "he likes playing")["input_ids"])
    assert rep.token.shape == rep.position.shape == (8, 384)


def test_missing_checkpoint_message_names_it_and_says_how_to_get_it():
    with pytest.raises(ModelUnavailableError, match="bert-base-uncased") as info:
        registry.load("mlm", "bert-base-uncased")
    assert "download" in str(info.value)


# ----------------------------------------------------------------------------------------------------------------
# Masking procedure


def test_masking_proportions_over_many_draws():
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    text = " ".join(["the quick brown fox jumps over the lazy dog"] * 4)  # 36 candidate tokens
    result = pretraining.bert_masking(tokenizer, text, seed=3, draws=20_000)
    assert result.candidates == 36 and result.chosen_per_draw == round(0.15 * 36)  # 5 per draw
    total = sum(result.counts.values())
    assert total == 20_000 * 5
    for name, p in (("[MASK]", 0.8), ("random token", 0.1), ("chosen, unchanged", 0.1)):
        sigma = (total * p * (1 - p)) ** 0.5
        assert abs(result.counts[name] - total * p) < 5 * sigma
    chosen = np.array(result.chosen_by_position)
    assert chosen[0] == chosen[-1] == 0  # [CLS] and [SEP] are never chosen
    expected = 20_000 * 5 / 36  # uniform over the candidates
    assert np.all(np.abs(chosen[1:-1] - expected) < 5 * expected ** 0.5)


def _masking_all_at_once(tokenizer, text, seed, draws):
    """The simulation written the direct way, every draw materialised: (draws, candidates) floats at once."""
    encoding = fm.encode(tokenizer, fm.with_mask_tokens(fm.clean_text(text), tokenizer.mask_token))
    candidates = np.array([i for i, special in enumerate(encoding.special_tokens_mask) if not special])
    n = max(1, round(len(candidates) * 0.15))
    rng = np.random.default_rng(seed)
    chosen = candidates[np.argpartition(rng.random((draws, len(candidates))), n - 1, axis=1)[:, :n]]
    u = rng.random((draws, n))
    action = np.where(u < 0.8, pretraining.MASK, np.where(u < 0.9, pretraining.RANDOM, pretraining.UNCHANGED))
    vocabulary = pretraining.replacement_ids(tokenizer)
    random_ids = vocabulary[rng.integers(len(vocabulary), size=(draws, n))]
    counts = {pretraining.ACTION_NAMES[a]: int((action == a).sum())
              for a in (pretraining.MASK, pretraining.RANDOM, pretraining.UNCHANGED)}
    return chosen[0], action[0], random_ids[0], counts, np.bincount(chosen.ravel(), minlength=len(encoding))


@pytest.mark.parametrize("seed,draws", [(0, 1), (3, 2047), (5, 2049), (11, 6000)])
def test_masking_counts_equal_the_materialised_simulation(seed, draws):
    """Counting chunk by chunk reads the generator in the same order: same first draw, same totals."""
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    text = "the [MASK] sat on the mat while the dog was sleeping " * 6
    result = pretraining.bert_masking(tokenizer, text, seed=seed, draws=draws)
    chosen, action, random_ids, counts, by_position = _masking_all_at_once(tokenizer, text, seed, draws)
    assert result.counts == counts and result.chosen_by_position == by_position.tolist()
    for position, act, random_id in zip(chosen, action, random_ids):
        assert result.actions[position] == act
        if act == pretraining.RANDOM:
            assert result.corrupted[position] == tokenizer.id_to_token(int(random_id))


def test_masking_memory_does_not_grow_with_draws():
    """510 tokens × 40,000 draws: all at once that is a 163 MB float64 array (plus its argpartition); counted in
    chunks the peak stays a few MB whatever the number of draws."""
    import tracemalloc

    tokenizer, _ = registry.tokenizer(MINILM_ID)
    text = " ".join(["word"] * 510)
    tracemalloc.start()
    try:
        pretraining.bert_masking(tokenizer, text, seed=0, draws=40_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6


def test_masking_one_draw_is_seeded_and_consistent():
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    a = pretraining.bert_masking(tokenizer, "my dog is hairy", seed=7, draws=100)
    b = pretraining.bert_masking(tokenizer, "my dog is hairy", seed=7, draws=100)
    assert a.corrupted == b.corrupted and a.counts == b.counts
    assert a.tokens == ["[CLS]", "my", "dog", "is", "hairy", "[SEP]"] and a.chosen_per_draw == 1
    changed = [i for i, action in enumerate(a.actions) if action != pretraining.KEEP]
    assert len(changed) == 1
    for i, (before, after, action) in enumerate(zip(a.tokens, a.corrupted, a.actions)):
        if action == pretraining.MASK:
            assert after == "[MASK]"
        elif action == pretraining.RANDOM:
            assert not (after.startswith("[") and after.endswith("]"))  # a real word piece, never [PAD]/[unused]
        else:
            assert after == before


# ----------------------------------------------------------------------------------------------------------------
# Model card: transformers' own parameter counts, and the seed's numbers


def meta_count(model_class, config):
    with torch.device("meta"):  # shapes only: no memory for bert-base
        return sum(p.numel() for p in getattr(transformers, model_class)(config).parameters())


def test_model_card_bert_base_against_seed_and_transformers():
    card = pretraining.model_card("bert-base-uncased")  # offline: the published config
    assert card.breakdown["total"] == 109_482_240 == meta_count("BertModel", transformers.BertConfig())
    assert card.seed_formula == 108_808_704  # seed-examples.md §6
    assert card.omitted_biases == 82_944 and card.pooler == 590_592
    assert card.breakdown["total"] - card.seed_formula == card.omitted_biases + card.pooler
    assert card.breakdown["total"] + sum(card.heads.values()) == meta_count("BertForPreTraining",
                                                                            transformers.BertConfig())


def test_model_card_other_checkpoints_against_transformers(tiny_checkpoint):
    distil = pretraining.model_card("distilbert-base-uncased")
    assert distil.breakdown["total"] == meta_count("DistilBertModel", transformers.DistilBertConfig())
    chinese = pretraining.model_card("bert-base-chinese")
    assert chinese.breakdown["total"] == meta_count("BertModel", transformers.BertConfig(vocab_size=21128))
    folder = tiny_checkpoint("BertForMaskedLM")
    card = pretraining.model_card(str(folder))  # read from the folder's config.json
    config = transformers.BertConfig.from_pretrained(folder)
    assert card.source == pretraining.CONFIG_FILE
    assert card.breakdown["total"] == meta_count("BertModel", config)


# ----------------------------------------------------------------------------------------------------------------
# Contextual vs static


def test_contextual_vectors_match_transformers_and_glove_is_constant():
    sentences = ["I deposited cash at the bank.", "We sat on the river Bank.", "The bank raised its rates."]
    loaded = registry.load("encoder", MINILM_ID)
    result = pretraining.contextual_vs_static(loaded, "bank", sentences)
    folder = str(resolve.resolve(MINILM_ID).directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    reference = transformers.AutoModel.from_pretrained(folder).eval()
    vectors = []
    for sentence in sentences:
        batch = tokenizer(sentence, return_tensors="pt")
        position = tokenizer.convert_ids_to_tokens(batch["input_ids"][0]).index("bank")
        with torch.inference_mode():
            vectors.append(reference(**batch).last_hidden_state[0, position].numpy())
    unit = np.stack(vectors) / np.linalg.norm(vectors, axis=1, keepdims=True)
    np.testing.assert_allclose(result.contextual, unit @ unit.T, atol=1e-5)
    assert result.contextual[0, 1] < 0.95  # context moves the vector
    np.testing.assert_allclose(result.static, np.ones((3, 3)), atol=1e-6)  # one table row for every sentence
    with pytest.raises(UserInputError, match="sentence 2"):
        pretraining.contextual_vs_static(loaded, "bank", ["the bank", "the banking sector"])


# ----------------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("text,message", [
    ("", "Type a sentence"),
    ("   \n ", "Type a sentence"),
    ("my dog is hairy", r"Put \[MASK\]"),
    (" ".join(["[MASK]"] * 11), "limit is 10"),
    ("word " * 600 + "[MASK]", "at most 512"),
    ("\u200b\u0007\u200d", "no tokens"),
    ("x" * 20_001, "limit is 20,000"),
])
def test_bad_input_is_refused_with_a_clear_message(tiny_checkpoint, text, message):
    loaded = registry.load("mlm", str(tiny_checkpoint("BertForMaskedLM")))
    with pytest.raises(UserInputError, match=message):
        fm.fill_mask(loaded, text)


def test_odd_unicode_is_named_not_fatal(tiny_checkpoint):
    loaded = registry.load("mlm", str(tiny_checkpoint("BertForMaskedLM")))
    result = fm.fill_mask(loaded, "😀 naïve [MASK] \u0007 café 🙂", top_k=3)
    assert result.unknown == ["😀", "🙂"] and len(result.blanks) == 1
    with pytest.raises(UserInputError, match="between 1 and"):
        fm.fill_mask(loaded, "a [MASK]", top_k=0)


def test_words_and_mask_word():
    tokenizer, _ = registry.tokenizer(MINILM_ID)
    words = fm.words_of(tokenizer, "My dog is hairy, 天气很好!")
    assert [w.text for w in words] == ["My", "dog", "is", "hairy", "天", "气", "很", "好"]
    assert fm.mask_word(tokenizer, "My dog is hairy, 天气很好!", 3) == "My dog is [MASK], 天气很好!"
    assert [w.text for w in fm.words_of(tokenizer, "my _ is [mask] hairy")] == ["my", "is", "hairy"]  # blanks skipped
    assert fm.mask_word(tokenizer, "my _ is hairy", 2) == "my [MASK] is [MASK]"
    with pytest.raises(UserInputError, match="pick one"):
        fm.mask_word(tokenizer, "my dog", 5)










# ----------------------------------------------------------------------------------------------------------------
# Dynamic batching (issue 21 §8): requests read together in one padded pass give what they give one at a time


BATCH_TEXTS = ["my dog is [MASK] .", "the man went to the [MASK] to buy a gallon of milk .", "no blank here",
               "paris is the [MASK] of france , and [MASK] is the capital of germany .", "[MASK] !"]


def test_batched_fill_mask_equals_one_at_a_time(mlm_folder):
    loaded = registry.load("mlm", mlm_folder)
    batched = fm.fill_mask_batch(loaded, [(text, 5) for text in BATCH_TEXTS])
    for text, got in zip(BATCH_TEXTS, batched):
        if "[MASK]" not in text:
            assert isinstance(got, UserInputError) and "no blank" in str(got)
            continue
        alone = fm.fill_mask(loaded, text, 5)
        assert got.filled == alone.filled and got.tokens == alone.tokens
        for mine, ref in zip(got.blanks, alone.blanks):
            assert [c.token for c in mine.candidates] == [c.token for c in ref.candidates]
            assert [c.probability for c in mine.candidates] == pytest.approx(
                [c.probability for c in ref.candidates], abs=1e-5)




# ----------------------------------------------------------------------------------------------------------------
# 中文: a Chinese-character checkpoint through the registry, and the tab in the learner's language (issue #19)



@pytest.fixture(scope="module")
def chinese_mlm_folder(tmp_path_factory):
    return str(chinese_checkpoints.write_mlm(tmp_path_factory.mktemp("bert_chinese_tiny"), ZH_TEXTS))


def test_chinese_checkpoint_loads_through_the_registry_and_matches_the_pipeline(chinese_mlm_folder):
    loaded = registry.load("mlm", chinese_mlm_folder)
    assert type(loaded.model).__name__ == "BertForPreTraining"
    result = fm.fill_mask(loaded, ZH_TEXTS[0], top_k=5)
    assert result.tokens == ["[CLS]", "今", "天", "天", "气", "很", "[MASK]", "。", "[SEP]"]  # one token a character
    theirs = reference_pipeline(chinese_mlm_folder)(ZH_TEXTS[0], top_k=5)
    assert [c.token_id for c in result.blanks[0].candidates] == [p["token"] for p in theirs]
    assert [c.probability for c in result.blanks[0].candidates] == pytest.approx([p["score"] for p in theirs],
                                                                                 abs=1e-5)
    assert 0.0 <= fm.next_sentence(loaded, "今天天气很好", "我学中文") <= 1.0  # the NSP head loads too










def test_tokenizer_messages_are_keys_rendered_in_chinese():
    from core.text.i18n import using_language

    tokenizer, _ = registry.tokenizer(MINILM_ID)
    with pytest.raises(UserInputError) as error:
        tokenizer.encode("中文", "北京", max_length=2)
    assert error.value.key == "tokenizer.no_room"
    with using_language("zh"):
        assert str(error.value) == "长度上限 2 个词元，连特殊词元都放不下；请至少设为 3。"
