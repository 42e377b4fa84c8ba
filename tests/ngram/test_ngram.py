"""N-gram model (issue #3): the seed's numbers, parity with nltk.lm, Kneser-Ney by hand, sampling, bad input."""
import math
from fractions import Fraction

import numpy as np
import pytest
from nltk.lm import MLE, Laplace
from nltk.lm.preprocessing import pad_both_ends, padded_everygram_pipeline
from nltk.util import everygrams, ngrams

from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.ngram.ngram import BOS, EOS, KN_DISCOUNT, SMOOTHINGS, NgramModel, tokenize_sentences
from core.text.sampling import Settings

TOY = tokenize_sentences(load_corpus("toy_zh"))
TOY_CHARS = tokenize_sentences(load_corpus("toy_zh"), "char")
MOBY = tokenize_sentences(load_corpus("moby_dick"), lowercase=True)
MOBY_TRAIN, MOBY_TEST = MOBY[:300], MOBY[300:320]


# ----------------------------------------------------------------------------------------------------------------
# The seed's worked example (§2.1)


def test_toy_corpus_is_the_seed_corpus():
    assert TOY == [["词性", "是", "动词"], ["判断", "单词", "的", "词性"], ["磁性", "很", "强", "的", "磁铁"],
                   ["北京", "的", "词性", "是", "名词"]]


def test_seed_bigram_mle_word_tokens():
    model = NgramModel(TOY, n=2)
    assert model.count(("的",)) == 3 and model.count(("的", "词性")) == 2
    assert model.prob("词性", ["的"], "mle") == 2 / 3


def test_seed_bigram_mle_character_tokens():
    model = NgramModel(TOY_CHARS, n=2)
    assert model.count(("的",)) == 3 and model.count(("的", "词")) == 2
    assert model.prob("词", ["的"], "mle") == 2 / 3


def test_seed_add_one_without_boundary_tokens_has_V_12():
    model = NgramModel(TOY, n=2, boundaries=False)
    assert model.vocab_size == 12
    assert model.prob("词性", ["的"], "add_k", k=1) == pytest.approx(0.2, abs=1e-15)  # (2+1)/(3+12)


def test_boundary_tokens_count_in_V_like_nltk():
    model = NgramModel(TOY, n=2, boundaries=True)
    assert model.vocab_size == 12 + 3  # + <s>, </s>, <UNK>
    assert model.prob("词性", ["的"], "add_k") == pytest.approx(3 / 18)
    assert model.prob("词性", ["的"], "mle") == 2 / 3  # 的 never ends a sentence, so MLE is unchanged


def test_motivating_pair_词性_beats_磁性_once_smoothed():
    model = NgramModel(TOY, n=2)
    good, bad = "判断 这个 词 的 词性".split(), "判断 这个 词 的 磁性".split()
    assert model.score(good, "mle").probability == 0 == model.score(bad, "mle").probability  # 这个, 词 unseen
    for smoothing in ("add_k", "kneser_ney"):
        assert model.score(good, smoothing).probability > model.score(bad, smoothing).probability
    # They differ only in the last factor: (2+1)/15 against (0+1)/15 under add-one.
    ratio = model.score(good, "add_k").probability / model.score(bad, "add_k").probability
    assert ratio == pytest.approx(3.0)


def test_chain_rule_factors_and_perplexity():
    model = NgramModel(TOY, n=2)
    score = model.score("判断 单词 的 词性".split(), "mle")
    assert [(f.context, f.word, f.count, f.context_count) for f in score.factors] == [
        ((), "判断", 1, 17), (("判断",), "单词", 1, 1), (("单词",), "的", 1, 1), (("的",), "词性", 2, 3)]
    expected = Fraction(1, 17) * Fraction(2, 3)
    assert score.probability == pytest.approx(float(expected))
    assert score.log2_prob == pytest.approx(math.log2(expected))
    assert score.perplexity == pytest.approx(float(expected) ** (-1 / 4))
    unseen = model.score("判断 单词 的 磁性".split(), "mle")
    assert unseen.factors[-1].p == 0 and unseen.probability == 0 and math.isinf(unseen.perplexity)


# ----------------------------------------------------------------------------------------------------------------
# Parity with nltk.lm
#
# NLTK's conventions: padded_everygram_pipeline pads every sentence with n-1 "<s>" and n-1 "</s>"
# (pad_both_ends) and counts every k-gram, k = 1..n, of the padded sentence; its vocabulary holds the padded
# tokens plus "<UNK>", and len(vocab) is the |V| of Laplace. Our boundaries=True mode follows exactly that, so we
# compare on NLTK's own pipeline. A sentence's perplexity is NLTK's over ngrams(pad_both_ends(sentence, n), n).


def _nltk(model_cls, n, sentences):
    train, vocab = padded_everygram_pipeline(n, sentences)
    lm = model_cls(n)
    lm.fit(train, vocab)
    return lm


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("corpus", ["toy", "moby"])
def test_probabilities_and_perplexity_equal_nltk(n, corpus):
    train, test = (TOY, TOY) if corpus == "toy" else (MOBY_TRAIN, MOBY_TEST)
    ours = NgramModel(train, n, boundaries=True)
    for smoothing, cls in (("mle", MLE), ("add_k", Laplace)):
        ref = _nltk(cls, n, train)
        assert len(ref.vocab) == ours.vocab_size
        vocab = sorted(ref.vocab)
        contexts = sorted({g[:-1] for s in train[:30] for g in ngrams(pad_both_ends(s, n), n)})
        for context in contexts[:12] + [("的",) * (n - 1)]:  # a few contexts against the whole vocabulary
            ours_p = ours.distribution(context, smoothing)
            for word in vocab:
                assert ours_p[ours.stoi[word]] == pytest.approx(ref.score(word, context), rel=1e-12, abs=1e-15)
            assert ours.prob("never-seen-word", context, smoothing) == pytest.approx(
                ref.score("never-seen-word", context), abs=1e-15)
        for sentence in test:
            expected = ref.perplexity(list(ngrams(pad_both_ends(sentence, n), n)))
            got = ours.score(sentence, smoothing).perplexity
            assert got == pytest.approx(expected, rel=1e-9) or (math.isinf(got) and math.isinf(expected))
        train_pp = ref.perplexity([g for s in train[:20] for g in ngrams(pad_both_ends(s, n), n)])
        ours_pp = 2 ** -np.mean([math.log2(f.p) for s in train[:20] for f in ours.score(s, smoothing).factors])
        assert ours_pp == pytest.approx(train_pp, rel=1e-9)  # finite even under MLE: every n-gram was seen


@pytest.mark.parametrize("n", [2, 3])
def test_counts_and_mle_without_boundaries_equal_nltk(n):
    """Boundaries off: NLTK fitted on the unpadded everygrams of each sentence; its counts and MLE match ours, and
    add-k matches the formula on NLTK's counts with our |V| (NLTK's own |V| always adds an <UNK> slot)."""
    ours = NgramModel(MOBY_TRAIN, n, boundaries=False)
    ref = MLE(n)
    ref.fit([everygrams(s, max_len=n) for s in MOBY_TRAIN], [w for s in MOBY_TRAIN for w in s])
    assert len(ref.vocab) == ours.vocab_size + 1
    for order in range(2, n + 1):
        for context, dist in list(ref.counts[order].items())[:300]:
            for word, count in dist.items():
                assert ours.count(context + (word,)) == count
                assert ours.prob(word, context, "mle") == pytest.approx(ref.score(word, context), rel=1e-12)
                assert ours.prob(word, context, "add_k") == pytest.approx((count + 1) / (dist.N() + ours.vocab_size))
    for sentence in MOBY_TEST:  # the first tokens are scored with the shorter contexts they have
        text_ngrams = [tuple(sentence[max(0, i - n + 1):i + 1]) for i in range(len(sentence))]
        expected, got = ref.perplexity(text_ngrams), ours.score(sentence, "mle").perplexity
        assert got == pytest.approx(expected, rel=1e-9) or (math.isinf(got) and math.isinf(expected))


# ----------------------------------------------------------------------------------------------------------------
# Kneser-Ney


def test_kneser_ney_by_hand_on_the_toy_corpus():
    model = NgramModel(TOY, n=2)
    d = KN_DISCOUNT
    # Unigram level, continuation counts: 11 distinct bigram types; 9 words end one; 词性 ends one (的 词性).
    p_uni = max(1 - d, 0) / 11 + d * 9 / 11 / 12
    # Bigram level, raw counts: count(的, 词性) = 2, count(的) = 3, two distinct followers (词性, 磁铁).
    expected = max(2 - d, 0) / 3 + d * 2 / 3 * p_uni
    assert model.prob("词性", ["的"], "kneser_ney") == pytest.approx(expected, rel=1e-12)
    assert model.prob("词性", [], "kneser_ney") == pytest.approx(p_uni, rel=1e-12)


@pytest.mark.parametrize("boundaries", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_every_distribution_sums_to_one_and_smoothing_leaves_no_zero(n, boundaries):
    model = NgramModel(MOBY_TRAIN, n, boundaries)
    contexts = [(), ("the",), ("of", "the"), ("the", "white", "whale"), ("zzz", "qqq", "xxx")]
    for context in contexts:
        for smoothing in SMOOTHINGS:
            p = model.distribution(context, smoothing)[: model.vocab_size]
            assert (p >= 0).all()
            if smoothing != "mle":
                assert p.sum() == pytest.approx(1.0, abs=1e-9) and (p > 0).all()
            elif p.any():
                assert p.sum() == pytest.approx(1.0, abs=1e-9)


def test_continuation_counts_prefer_words_that_follow_many_contexts():
    """KN's point: 'Francisco' is frequent but follows only 'San', so its unigram continuation mass is small."""
    sentences = [["san", "francisco"]] * 20 + [[w, "glasses"] for w in ("reading", "my", "new", "old", "sun")]
    model = NgramModel(sentences, n=2)
    assert model.count(("francisco",)) > model.count(("glasses",))
    assert model.prob("glasses", [], "kneser_ney") > model.prob("francisco", [], "kneser_ney")


# ----------------------------------------------------------------------------------------------------------------
# Counts view and sampling


def test_context_counts_table():
    counts = NgramModel(TOY, n=2).context_counts(["的"], "add_k")
    assert counts.context == ("的",) and counts.context_count == 3
    assert [(f.word, f.count, f.p_mle, f.p) for f in counts.followers] == [
        ("词性", 2, 2 / 3, pytest.approx(3 / 15)), ("磁铁", 1, 1 / 3, pytest.approx(2 / 15))]
    assert counts.n_unseen == 10 and counts.p_unseen == pytest.approx(1 / 15)
    assert counts.top[0][0] == "词性"


def test_generation_is_seeded_and_respects_top_k_and_temperature():
    model = NgramModel(MOBY_TRAIN, n=2, boundaries=True)
    a = model.generate(["the"], 15, "kneser_ney", settings=Settings(1.0, 5, seed=3))
    b = model.generate(["the"], 15, "kneser_ney", settings=Settings(1.0, 5, seed=3))
    assert a.tokens == b.tokens and a.tokens[0] == "the"
    assert model.generate(["the"], 15, "kneser_ney", settings=Settings(1.0, 5, seed=4)).tokens != a.tokens
    for step in a.steps:
        assert len(step.candidates) <= 5 and sum(p for _, p in step.candidates) == pytest.approx(1.0, abs=1e-6)
        assert step.chosen in {w for w, _ in step.candidates} and step.chosen not in (BOS, "<UNK>")
        assert step.cut.kept_count == 5  # Kneser-Ney gives every word some mass: exactly five are kept
    greedy = model.generate(["the"], 5, "mle", settings=Settings(1.0, 1))
    for step in greedy.steps:  # top-1 keeps the MLE argmax of the context, and every count tied with it
        p = model.distribution(step.context, "mle")
        best = {model.itos[i] for i in np.flatnonzero(p == p.max())}
        assert step.chosen in best and {w for w, _ in step.candidates} == best
        assert step.p_chosen == pytest.approx(1 / len(best))
    cold = model.generate(["the"], 1, "mle", settings=Settings(0.1, 50)).steps[0]
    warm = model.generate(["the"], 1, "mle", settings=Settings(2.0, 50)).steps[0]
    assert cold.candidates[0][1] > warm.candidates[0][1]  # low T sharpens, high T flattens
    # temperature applies to log P: the kept probabilities are P^(1/τ), renormalised
    p = model.distribution(warm.context, "mle")[[model.stoi[w] for w, _ in warm.candidates]] ** (1 / 2.0)
    assert [q / warm.candidates[0][1] for _, q in warm.candidates] == pytest.approx(list(p / p[0]), rel=1e-5)
    if a.steps[-1].chosen == EOS:
        assert EOS not in a.tokens


def test_mle_generation_stops_at_a_dead_end():
    gen = NgramModel(TOY, n=2).generate(["名词"], 5, "mle")  # 名词 only ends a sentence
    assert gen.steps == [] and "never followed" in gen.notes[0]


# ----------------------------------------------------------------------------------------------------------------
# Bad input


def test_empty_corpus():
    for text in ("", "   \n\n  "):
        with pytest.raises(UserInputError, match="empty"):
            NgramModel(tokenize_sentences(text), 2)


def test_sentence_of_only_unknown_words():
    model = NgramModel(TOY, n=2)
    with pytest.raises(UserInputError, match="None of the tokens.*apple"):
        model.score(["apple", "pie"], "add_k")
    with pytest.raises(UserInputError, match="empty"):
        model.score([], "mle")


def test_n_larger_than_the_sentence():
    with pytest.raises(UserInputError, match="longest sentence"):
        NgramModel([["a", "b"], ["b", "c"]], n=3)
    model = NgramModel(TOY, n=4, boundaries=True)
    score = model.score(["北京"], "add_k")  # shorter than n: padded with <s>, and said so
    assert len(score.factors) == 1 + 3 and "fewer than n" in score.notes[0]
    off = NgramModel(TOY, n=4).score(["北京", "的"], "mle")
    assert [len(f.context) for f in off.factors] == [0, 1] and off.notes


def test_out_of_range_settings():
    with pytest.raises(UserInputError, match="between 1 and 5"):
        NgramModel(TOY, n=6)
    model = NgramModel(TOY, n=2)
    with pytest.raises(UserInputError, match="k must be positive"):
        model.prob("的", ["北京"], "add_k", k=0)
    with pytest.raises(UserInputError, match="temperature"):
        model.generate([], 3, settings=Settings(-1))
    greedy = model.generate(["北京"], 3, "mle", settings=Settings(0.0))  # τ = 0: the most probable, ties shared
    assert greedy.steps[0].candidates == [("的", 1.0)]


@pytest.mark.parametrize("unit", ["word", "char"])
def test_five_megabytes_of_one_character(unit):
    text = "的" * (5 * 1024 * 1024 // 3)  # 5 MB of UTF-8
    with pytest.raises(UserInputError, match="only one distinct token"):
        NgramModel(tokenize_sentences(text, unit), 5)


def test_errors_are_keys_rendered_in_the_learners_language():
    """core.ngram.ngram and core.text.textio raise keys with named fields: the same error reads in English or 中文."""
    from core.text import i18n, textio
    from core.text.errors import UserInputError

    with pytest.raises(UserInputError) as order:
        NgramModel([["a", "b"]], n=9)
    assert order.value.key == "ngram.err.order_range" and order.value.fields == {"max_order": 5, "n": 9}
    assert str(order.value) == "The order n must be between 1 and 5 (got 9)."
    with i18n.using_language("zh"):
        assert str(order.value) == "阶数 n 必须在 1 到 5 之间（当前为 9）。"
        with pytest.raises(UserInputError) as binary:
            textio.decode_text(b"\x00\x01")
        assert str(binary.value) == "这看起来是一个二进制文件。请上传 UTF-8 编码的纯文本文件（.txt）。"
    model = NgramModel(tokenize_sentences("北 京\n北 海\n"), n=2)
    with pytest.raises(UserInputError) as unknown:
        model.score(["上", "山"])
    assert unknown.value.message("zh").startswith("这个句子中没有一个词元在语料中出现过（上, 山）")
