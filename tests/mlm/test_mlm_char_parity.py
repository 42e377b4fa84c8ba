"""The shipped char-BERT (assets/char_bert/): its files are what transformers writes and reads, its logits equal
transformers' BertForMaskedLM on the same weights, its training batches follow the seed's recipe, and the held-out
comparison with the char-GPT is recomputed from the shipped weights."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file

from core.transformer import gpt
from core.loading import registry
from core.loading.device import get_device
from core.mlm.char import (CHAR_BERT_ASSETS, DECODER_KEY, EMBEDDINGS_KEY, FIRST_CHAR_ID, MASK_ID, WEIGHTS,
                           char_bert_config, load_char_bert)
from core.mlm.char_heldout import (ROWS, SUBSET_POSITIONS, WINDOW, compare, compared_positions, held_out_text,
                                   load_held_out)
from core.mlm.char_train import Recipe, extend_positions, training_batch
from core.mlm.masking import MASK, RANDOM, UNCHANGED
from core.nets.bert import BertConfig, BertForMaskedLM

pytestmark = pytest.mark.usefixtures("one_torch_thread")
HF_DECODER_BIAS = "cls.predictions.decoder.bias"  # transformers ties it to cls.predictions.bias


@pytest.fixture(scope="module")
def ours():
    return load_char_bert(CHAR_BERT_ASSETS, "cpu")


@pytest.fixture(scope="module")
def reference():
    transformers.logging.set_verbosity_error()
    model, info = transformers.BertForMaskedLM.from_pretrained(str(CHAR_BERT_ASSETS), output_loading_info=True)
    return model.eval(), info


def test_the_files_are_small_and_say_what_they_are():
    config = json.loads((CHAR_BERT_ASSETS / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "bert" and config["architectures"] == ["BertForMaskedLM"]
    assert config["tokens"][:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    gpt_tokens = json.loads((gpt.GPT_ASSETS / "config.json").read_text(encoding="utf-8"))["tokens"]
    assert config["tokens"][5:] == gpt_tokens[1:]  # the char-GPT's characters, in its order
    assert (config["num_hidden_layers"], config["vocab_size"]) == (4, 81)
    assert sum(path.stat().st_size for path in CHAR_BERT_ASSETS.iterdir()) <= 3_000_000


def test_parameters_within_a_fifth_of_the_char_gpt(ours):
    bert_parameters = sum(p.numel() for p in ours.model.parameters())  # the tied decoder once
    gpt_parameters = sum(p.numel() for p in gpt.shipped_char_gpt()[0].parameters())
    assert gpt_parameters == 467_232
    assert bert_parameters == ours.info["parameters"] == 514_257
    assert 0.8 <= bert_parameters / gpt_parameters <= 1.2


def test_the_keys_are_save_pretrained_s(tmp_path, ours):
    """Exactly the tensors transformers' save_pretrained writes for this config, with the same shapes."""
    config = transformers.BertConfig.from_pretrained(str(CHAR_BERT_ASSETS))
    transformers.BertForMaskedLM(config).save_pretrained(tmp_path)
    with safe_open(str(tmp_path / WEIGHTS), "pt") as theirs, safe_open(str(CHAR_BERT_ASSETS / WEIGHTS), "pt") as mine:
        assert set(mine.keys()) == set(theirs.keys())
        assert all(mine.get_slice(k).get_shape() == theirs.get_slice(k).get_shape() for k in mine.keys())
    assert DECODER_KEY not in set(load_file(str(CHAR_BERT_ASSETS / WEIGHTS)))


def test_transformers_loads_the_file_strictly(reference):
    model, info = reference
    assert not any(info[k] for k in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"))
    state = load_file(str(CHAR_BERT_ASSETS / WEIGHTS))
    fresh = transformers.BertForMaskedLM(transformers.BertConfig.from_pretrained(str(CHAR_BERT_ASSETS)))
    result = fresh.load_state_dict(state, strict=False)
    assert result.unexpected_keys == [] and set(result.missing_keys) == {DECODER_KEY, HF_DECODER_BIAS}
    tied = {DECODER_KEY: state[EMBEDDINGS_KEY], HF_DECODER_BIAS: state["cls.predictions.bias"]}
    fresh.load_state_dict({**state, **tied}, strict=True)  # the only two missing keys are the tied copies
    assert fresh.cls.predictions.decoder.weight.data_ptr() == fresh.bert.embeddings.word_embeddings.weight.data_ptr()


def test_our_registry_loads_the_folder_too():
    model = registry.from_pretrained(str(CHAR_BERT_ASSETS), BertForMaskedLM, device="cpu")
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    reference = load_char_bert(CHAR_BERT_ASSETS, "cpu").model
    for (name, mine), theirs in zip(model.state_dict().items(), reference.state_dict().values()):
        assert torch.equal(mine, theirs), name


@torch.inference_mode()
def test_logits_equal_transformers_on_held_out_strings(ours, reference):
    """Random held-out windows (10 to 256 characters, some positions masked), padded into one batch: every logit of
    every real position within 1e-5 of transformers' BertForMaskedLM."""
    rng = np.random.default_rng(4)
    ids = ours.tokenizer.encode(held_out_text())[0]
    rows, lengths = [], rng.integers(10, 257, size=8)
    for length in lengths:
        start = int(rng.integers(0, len(ids) - length))
        chars = np.array(ids[start:start + length])
        chars[rng.random(length) < 0.15] = MASK_ID
        rows.append([2, *chars.tolist(), 3])
    longest = max(map(len, rows))
    batch = torch.tensor([r + [0] * (longest - len(r)) for r in rows])  # (8, T), [PAD] = 0
    mask = torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rows])  # (8, T)
    mine = ours.model(batch, mask, output_attentions=False, output_hidden_states=False).logits  # (8, T, V)
    theirs = reference[0](input_ids=batch, attention_mask=mask).logits  # (8, T, V)
    for row, r in enumerate(rows):
        assert torch.allclose(mine[row, :len(r)], theirs[row, :len(r)], atol=1e-5, rtol=0)


def test_training_batches_follow_the_recipe():
    """Over 200 seeded training batches (32 × 128 characters): 19 chosen per window (round(0.15 · 128)), every
    window position equally often, the 80/10/10 split within 5σ, random replacements are characters only."""
    chars = 128
    size = Recipe().batch(chars)
    train = torch.arange(5, 81).repeat(200)  # every character many times
    windows, masks = torch.Generator().manual_seed(0), np.random.default_rng(0)
    counts, by_position, replaced = {MASK: 0, RANDOM: 0, UNCHANGED: 0}, np.zeros(chars + 2), []
    for _ in range(200):
        batch = training_batch(train, size, chars, 81, windows, masks)
        assert batch.positions.shape == (size, 19)
        assert all(len(set(row)) == 19 for row in batch.positions.tolist())  # without replacement
        for action in counts:
            counts[action] += int((batch.actions == action).sum())
        by_position += np.bincount(batch.positions.ravel(), minlength=chars + 2)
        rows = np.arange(size)[:, None]
        read = batch.inputs[rows, batch.positions]
        assert np.all(read[batch.actions == MASK] == MASK_ID)
        assert np.array_equal(read[batch.actions == UNCHANGED], batch.targets[batch.actions == UNCHANGED])
        replaced += read[batch.actions == RANDOM].tolist()
        assert np.all(batch.inputs[:, 0] == 2) and np.all(batch.inputs[:, -1] == 3)
    total = 200 * size * 19
    assert sum(counts.values()) == total
    for action, p in ((MASK, 0.8), (RANDOM, 0.1), (UNCHANGED, 0.1)):
        assert abs(counts[action] - total * p) < 5 * (total * p * (1 - p)) ** 0.5
    assert by_position[0] == by_position[-1] == 0  # [CLS] and [SEP] are never chosen
    expected = total / chars
    assert np.all(np.abs(by_position[1:-1] - expected) < 5 * expected ** 0.5)
    assert min(replaced) >= FIRST_CHAR_ID and len(set(replaced)) == 76


def test_the_window_curriculum():
    recipe = Recipe(steps=1000)
    assert recipe.boundaries() == [60, 120, 180, 240, 580, 780]
    assert [recipe.window(step) for step in (0, 59, 60, 239, 240, 579, 580, 780, 999)] == [
        (512, 8), (512, 8), (256, 16), (64, 64), (32, 128), (32, 128), (16, 256), (8, 510), (8, 510)]
    assert sum(share for share, _ in recipe.phases) == pytest.approx(1.0)


def test_a_longer_window_starts_its_new_position_rows_as_copies():
    model = BertForMaskedLM(BertConfig.from_dict(char_bert_config(81)))
    table = model.bert.embeddings.position_embeddings.weight
    before = table.detach().clone()
    extend_positions(model, 128, 256)  # rows 130 … 257 were never read by 128-character windows
    assert torch.equal(table[:130], before[:130]) and torch.equal(table[258:], before[258:])
    assert torch.equal(table[130:258], before[2:130])


def test_training_batches_are_seeded():
    train = torch.arange(5, 81).repeat(50)
    first, second = (training_batch(train, 4, 64, 81, torch.Generator().manual_seed(3), np.random.default_rng(3))
                     for _ in range(2))
    assert np.array_equal(first.inputs, second.inputs) and np.array_equal(first.positions, second.positions)


@pytest.mark.slow
def test_held_out_comparison_recomputed_from_the_shipped_weights(ours):
    """scripts/char_bert_heldout.py's figures: the first SUBSET_POSITIONS chosen positions scored again for all
    three rows equal the stored subset figures; the protocol's counts follow from the split."""
    stored = load_held_out()
    text = held_out_text()
    positions = compared_positions(len(text))
    assert stored["protocol"]["positions"] == len(positions) == round(0.15 * (len(text) - 1))
    assert stored["protocol"]["window"] == WINDOW and stored["split"]["held_out_chars"] == len(text)
    gpt_model, gpt_vocab, _ = gpt.shipped_char_gpt()
    scores = compare(ours, gpt_model, gpt_vocab, text, positions[:SUBSET_POSITIONS])
    rows = {row["model"]: row for row in stored["rows"]}
    assert list(rows) == list(ROWS)
    on_cpu = get_device().type == "cpu"  # the char-GPT runs on core's device; a GPU rounds differently
    for name in ROWS:
        summary = scores[name].summary()
        assert summary["bits_per_char"] == pytest.approx(rows[name]["subset_bits_per_char"],
                                                         abs=2e-6 if on_cpu else 1e-4)
        assert summary["accuracy"] == pytest.approx(rows[name]["subset_accuracy"],
                                                    abs=1e-9 if on_cpu else 1 / SUBSET_POSITIONS)
    assert "pseudo-log-likelihood" in stored["note"]


def test_the_readmes_quote_the_stored_held_out_figures():
    """README.md and assets/README.md state heldout.json's three rows (the test above recomputes them from the
    shipped weights), and say that the masked LM's bits are not a probability of the text."""
    rows = {row["model"]: row for row in load_held_out()["rows"]}
    figures = [f"{rows[name]['accuracy']:.1%} / {rows[name]['bits_per_char']:.3f}" for name in
               ("char-GPT, left only", "char-BERT, left only")]
    both = rows["char-BERT, both sides"]
    root = CHAR_BERT_ASSETS.parent.parent
    for path in (root / "README.md", root / "assets" / "README.md"):
        text = " ".join(path.read_text(encoding="utf-8").split())
        assert all(figure in text for figure in figures), path
        assert f"{both['accuracy']:.1%}" in text and f"{both['bits_per_char']:.3f} bits per masked character" in text
        assert f"{load_held_out()['protocol']['positions']:,} held-out" in text, path
        assert "pseudo-log-likelihood, not a probability of the text" in text, path
