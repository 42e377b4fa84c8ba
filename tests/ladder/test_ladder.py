"""core/ladder/ladder.py (issue #17): each rung equals its own tab's computation, the held-out file is what the code computes,
unknown characters are named and costed, bad input gets a message. (The Overview tab's UI: test_overview_demo.py.)"""
import math
from collections import Counter

import numpy as np
import pytest
import torch

from core.ladder import ladder, heldout as ladder_heldout
from core.recurrent import lstm
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.ngram.ngram import NgramModel

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Quotes that close far away, a name repeated far back, and characters no model knows (我, €).
TEXT = ('"Call me Ishmael," said he; and Queequeg, who had never seen a 我 or a € sign, nodded. '
        'Some years later, Queequeg said: "Ishmael, the whale!"')


@pytest.fixture(scope="module")
def rungs():
    return {rung.key: rung for rung in ladder.rungs()}


@pytest.fixture(scope="module")
def split():
    return ladder.training_split()


def test_every_shipped_character_model_is_a_rung(rungs):
    assert [key for key in rungs if key.startswith("ngram")] == [
        f"ngram-{n}-{s}" for n in range(1, 6) for s in ("add_k", "kneser_ney")]
    assert list(rungs)[-3:] == ["rnn", "lstm", "gpt"]
    for rung in rungs.values():
        assert rung.equation and rung.tab.startswith("?tab=")


def test_split_is_the_rnn_tabs_split(split):
    train, held = split
    assert (train, held) == lstm.split_text(load_corpus("moby_dick"))
    assert held == lstm.held_out_text()
    assert len(held) / (len(train) + len(held)) == pytest.approx(0.05, abs=1e-3)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_ngram_rungs_equal_core_ngram_counted_at_their_own_order(rungs, split, n):
    """The rung (one count pass at n = 5, lower_order(n)) = NgramModel counted at order n, scored by the n-gram
    tab's own NgramModel.score, factors after the first character (which no rung scores)."""
    model = NgramModel([list(split[0])], n, boundaries=False)
    for smoothing in ("add_k", "kneser_ney"):
        factors = model.score(list(TEXT), smoothing, ladder.ADD_K).factors
        assert len(factors) == len(TEXT)
        expected = sum(-math.log2(f.p) for f in factors[1:])
        got = ladder.score_rung(rungs[f"ngram-{n}-{smoothing}"], TEXT)
        assert got.total_bits == pytest.approx(expected, abs=1e-6)
        np.testing.assert_allclose(got.bits, [-math.log2(f.p) for f in factors[1:]], rtol=0, atol=1e-12)


def test_trigram_add_one_rung_by_hand(rungs, split):
    """Independent of core/ngram: (count(h c) + 1) / (count(h •) + |V|) from Python Counters over the training text."""
    train = split[0]
    trigrams = Counter(train[i:i + 3] for i in range(len(train) - 2))
    followed = Counter(train[i:i + 2] for i in range(len(train) - 2))  # bigrams that have a next character
    vocabulary = len(set(train))
    text = TEXT[:60]
    expected = [-math.log2((trigrams[text[i - 2:i + 1]] + 1) / (followed[text[i - 2:i]] + vocabulary))
                for i in range(2, len(text))]
    got = ladder.score_rung(rungs["ngram-3-add_k"], text).bits
    np.testing.assert_allclose(got[1:], expected, rtol=1e-12)
    # the second character has only one character of context: the bigram estimate
    bigrams = Counter(train[i:i + 2] for i in range(len(train) - 1))
    first = Counter(train[:-1])
    assert got[0] == pytest.approx(-math.log2((bigrams[text[:2]] + 1) / (first[text[0]] + vocabulary)), rel=1e-12)


@pytest.mark.parametrize("kind", ["rnn", "lstm"])
def test_recurrent_rungs_equal_the_rnn_tabs_inspect(rungs, kind):
    models = lstm.shipped_models()
    text = ladder.prepare(TEXT)
    expected = [-math.log2(p) for p in lstm.inspect(models, text).actual_prob[kind]]
    got = ladder.score_rung(rungs[kind], text)
    assert got.total_bits == pytest.approx(sum(expected), abs=1e-6)
    # and the model's plain step-by-step forward pass (not the fused one the tab uses), float32
    model = getattr(models, kind)
    ids = torch.tensor([models.vocab.encode(text)[0]], device=model.head.weight.device)
    with torch.inference_mode():
        logp = model(ids).logits[0].log_softmax(-1)  # (T, V)
    reference = -logp[torch.arange(len(text) - 1), ids[0, 1:]].double() / math.log(2)
    np.testing.assert_allclose(got.bits, reference.cpu().numpy(), atol=2e-4)


def test_gpt_rung_equals_the_char_gpts_forward_pass(rungs):
    """Within its 128-character context: the model's own logits, one forward pass. Beyond it: the sliding windows
    of core.transformer.gpt.evaluate (the tab's held-out loss), whose mean cross-entropy × characters is the rung's total."""
    from core.transformer import gpt

    model, vocab, _ = gpt.shipped_char_gpt()
    short = ladder.prepare(TEXT)[:100]
    ids = torch.tensor([vocab.encode(short)[0]], device=model.lm_head.weight.device)
    with torch.inference_mode():
        probs = model(ids).logits[0].softmax(-1)[torch.arange(len(short) - 1), ids[0, 1:]]  # (T-1,)
    got = ladder.score_rung(rungs["gpt"], short)
    assert got.total_bits == pytest.approx(sum(-math.log2(p) for p in probs.tolist()), abs=1e-6)
    long = ladder.prepare(TEXT + " " + TEXT)[:ladder.MAX_CHARS]
    assert len(long) > 2 * model.config.n_positions
    ids = torch.tensor(vocab.encode(long)[0])
    nats = gpt.evaluate(model, ids, seq_len=len(long) - 1, max_windows=1)
    got = ladder.score_rung(rungs["gpt"], long)
    assert got.total_bits == pytest.approx(nats * (len(long) - 1) / math.log(2), rel=1e-6)


def test_rows_are_aligned_and_unknown_characters_are_named_with_their_cost(rungs):
    result = ladder.score_text(TEXT + "\r\n  ")
    assert result.text == ladder.prepare(TEXT) and len(result.scores) == len(rungs)
    where = {TEXT.index("我"): "我", TEXT.index("€"): "€"}
    for score in result.scores:
        assert score.bits.shape == (len(result.text) - 1,)
        assert np.isfinite(score.bits).all() and (score.bits > 0).all()
        assert score.unknown_chars == ["我", "€"]
        assert [(i, ch) for i, ch, _ in score.unknown] == list(where.items())
        for i, _, cost in score.unknown:
            assert cost == score.bits[i - 1] > 3  # never seen: expensive for every rung
        assert score.bits_per_char == pytest.approx(score.total_bits / (len(result.text) - 1))


def test_known_characters_are_not_unknown(rungs):
    for rung in rungs.values():
        assert ladder.score_rung(rung, "Call me Ishmael.").unknown == []


@pytest.mark.parametrize("text", ["", "   \r\n\t", "a", None])
def test_too_short_text_gets_a_message(text):
    with pytest.raises(UserInputError, match="at least two characters"):
        ladder.score_text(text)


def test_over_long_text_gets_a_message():
    ladder.prepare("x" * ladder.MAX_CHARS)
    with pytest.raises(UserInputError, match=f"{ladder.MAX_CHARS + 1} characters"):
        ladder.score_text("x" * (ladder.MAX_CHARS + 1))


def test_held_out_file_is_what_the_code_computes(rungs, split):
    """scripts/ladder_heldout.py's file: one row per rung, in order; the subset figure recomputed for every rung,
    the full held-out figure recomputed for the (fast) n-gram rungs."""
    from core.loading.device import get_device

    facts, rows = ladder_heldout.load_held_out()
    train, held = split
    assert [row.key for row in rows] == list(rungs)
    assert (facts["training_chars"], facts["held_out_chars"]) == (len(train), len(held))
    assert facts["subset_chars"] == ladder.SUBSET_CHARS
    for row in rows:
        rung = rungs[row.key]
        subset, _ = ladder.held_out_bits(rung, held[:ladder.SUBSET_CHARS])
        # The file was computed on the CPU; cuDNN/TF32 kernels differ in the 6th decimal (seen: 8e-6 on an H100).
        assert subset == pytest.approx(row.subset_bits_per_char, abs=1e-6 if get_device().type == "cpu" else 1e-4)
        assert row.perplexity == pytest.approx(2 ** row.bits_per_char)
        assert row.characters == len(held) - 1 and row.parameters == rung.parameters
        assert row.training_seconds > 0 and row.training_data and row.equation == rung.equation
        if rung.family == "n-gram":
            assert ladder.held_out_bits(rung, held)[0] == pytest.approx(row.bits_per_char, abs=1e-9)
    by_key = {row.key: row.bits_per_char for row in rows}
    assert by_key["ngram-5-kneser_ney"] < by_key["ngram-3-kneser_ney"] < by_key["ngram-1-kneser_ney"]
    assert by_key["ngram-5-add_k"] > by_key["ngram-4-add_k"]  # add-one spreads too much mass over sparse 5-grams


def test_parameters_count_what_is_stored(rungs):
    counts = ladder.ngram_counts()
    distinct = [len(keys) for keys in counts.keys]
    assert rungs["ngram-3-add_k"].parameters == sum(distinct[:3])
    assert rungs["ngram-3-kneser_ney"].parameters == sum(distinct[:3]) + sum(distinct[:2])
    models = lstm.shipped_models()
    V, E, H = len(models.vocab), 32, 128
    assert rungs["rnn"].parameters == V * E + (E * H + H) + H * H + (H * V + V)
    assert rungs["lstm"].parameters == V * E + 4 * (E * H + H) + 4 * H * H + (H * V + V)
    C, L, P = 96, 4, 128  # char-GPT: width, layers, context; the output layer is tied to the token embedding
    per_layer = 2 * 2 * C + (C * 3 * C + 3 * C) + (C * C + C) + (C * 4 * C + 4 * C) + (4 * C * C + C)
    assert rungs["gpt"].parameters == V * C + P * C + L * per_layer + 2 * C


def test_text_no_rung_knows_is_an_error_that_names_its_characters(rungs):
    """Every rung was trained on English Moby-Dick: a Chinese text is refused with its characters named (in the
    learner's language), while a mixed text is scored and its unknown characters listed as before."""
    from core.text.errors import UserInputError
    from core.text.i18n import using_language

    with pytest.raises(UserInputError, match="knows none of these 5 characters: '今', '天', '气', '很', '好'"):
        ladder.score_text("今天天气很好", tuple(rungs.values()))
    with using_language("zh"), pytest.raises(UserInputError, match="这 5 个字符它们一个都不认识：'今', '天'"):
        ladder.score_text("今天 天气很好", tuple(rungs.values()))
    assert ladder.score_text("Call me 以实玛利.", tuple(rungs.values())).scores[0].unknown_chars == ["以", "实", "玛", "利"]


def test_bits_per_byte_in_the_file_and_on_a_text(rungs, split):
    """Per byte (issue #36): bits/byte = bits/char × chars/bytes of the scored text in UTF-8, recomputed here from the
    held-out text itself; on a text with 3-byte characters the two measures part by exactly that factor."""
    facts, rows = ladder_heldout.load_held_out()
    scored = split[1][1:]  # characters 2..T are scored
    assert facts["held_out_bytes"] == len(split[1].encode("utf-8"))
    for row in rows:
        assert row.bytes == len(scored.encode("utf-8")) == 59_805 and row.characters == 59_417
        assert row.bits_per_byte == pytest.approx(row.bits_per_char * 59_417 / 59_805, rel=1e-12)
        assert (row.tokenizer, row.vocabulary) == ("characters", len(rungs[row.key].vocabulary))
    text = "Ahab said: 我 — the whale!"
    for score in ladder.score_text(text, tuple(rungs.values())).scores:
        total = -score.rung.log2_probs(text).sum()
        assert score.bits_per_byte == pytest.approx(total / len(text[1:].encode("utf-8")))
        assert score.bits_per_byte == pytest.approx(score.bits_per_char * (len(text) - 1) / (len(text) + 3))
