"""The tokenizer lab's core (core/transformer/tokenizer_lab.py) and the teaching BPE trainer (core/transformer/bpe.py): on the bundled
corpora and the same settings, core/transformer/bpe.py's merges, their order and the vocabulary's ids equal the tokenizers
library's BpeTrainer (the reference, used directly); a trained BPE encodes text as tokenizers' BPE model does; every
tokenizer's pieces cover the text's bytes, with byte fragments ("�") marked; bad input gets a message."""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

from core.transformer import bpe
from core.loading import resolve
from core.transformer import tokenizer_lab as lab
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from tests import chinese_checkpoints


def reference(lines: list[str], vocab_size: int, min_frequency: int = 0, special_tokens=()) -> Tokenizer:
    """tokenizers' BpeTrainer with core/transformer/bpe.py's conventions: GPT-2's byte-level words, the 256 byte symbols."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=list(special_tokens), show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tokenizer


def merges_of(tokenizer: Tokenizer) -> list[tuple[str, str]]:
    return [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
            for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def ours(lines: list[str], vocab_size: int, **options) -> bpe.BPE:
    return bpe.train(bpe.count_words(lines), vocab_size, **options)


@pytest.mark.parametrize("corpus, vocab_size", [("toy_zh", 300), ("tang_poems", 400), ("tang_poems", 5000),
                                                ("moby_dick", 1000), ("moby_dick", 3000)])
def test_merges_and_their_order_equal_tokenizers_bpe_trainer(corpus, vocab_size):
    lines = load_corpus(corpus).splitlines()
    theirs, mine = reference(lines, vocab_size), ours(lines, vocab_size)
    assert [(m.left, m.right) for m in mine.merges] == merges_of(theirs)
    assert {symbol: i for i, symbol in enumerate(mine.vocab)} == theirs.get_vocab()  # the same ids, in order
    assert len(mine.vocab) == min(vocab_size, theirs.get_vocab_size())
    if corpus == "moby_dick":
        assert mine.merges[0].left + mine.merges[0].right == "Ġt" and len(mine.merges) == vocab_size - 256


@pytest.mark.parametrize("min_frequency, special_tokens", [(2, ()), (25, ["<|endoftext|>"]), (0, ["<s>", "</s>"])])
def test_min_frequency_and_special_tokens(min_frequency, special_tokens):
    lines = load_corpus("moby_dick")[:60_000].splitlines()
    theirs = reference(lines, 2000, min_frequency, special_tokens)
    mine = ours(lines, 2000, min_frequency=min_frequency, special_tokens=special_tokens)
    assert [(m.left, m.right) for m in mine.merges] == merges_of(theirs)
    assert mine.vocab[:len(special_tokens)] == list(special_tokens) and len(mine.vocab) == theirs.get_vocab_size()
    assert all(m.count >= min_frequency for m in mine.merges)


# Lines over a small alphabet: many pairs with equal counts, repeated words, overlapping runs ("aaaa")
LINES = st.lists(st.text(alphabet="ab cé我", min_size=1, max_size=12), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(LINES, st.integers(257, 320), st.integers(0, 3))
def test_ties_and_overlapping_pairs_merge_as_tokenizers_does(lines, vocab_size, min_frequency):
    theirs = reference(lines, vocab_size, min_frequency)
    mine = ours(lines, vocab_size, min_frequency=min_frequency)
    assert [(m.left, m.right) for m in mine.merges] == merges_of(theirs)


def test_each_merge_is_the_most_frequent_pair_then():
    """The counts the step view shows: recounted from scratch over the words as they were before each merge."""
    counts = bpe.count_words(load_corpus("tang_poems").splitlines())
    learned = bpe.train(counts, 300, watch=10)
    words = {word: list(word) for word in counts}
    for merge in learned.merges[:10]:
        pairs: dict = {}
        for word, symbols in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + counts[word]
        assert pairs[(merge.left, merge.right)] == merge.count == max(pairs.values())
        assert merge.rivals[0] == (merge.left, merge.right, merge.count)
        assert [n for *_, n in merge.rivals] == sorted((n for *_, n in merge.rivals), reverse=True)
        assert all(pairs[(a, b)] == n for a, b, n in merge.rivals)
        for symbols in words.values():
            i = 0
            while i < len(symbols) - 1:
                if (symbols[i], symbols[i + 1]) == (merge.left, merge.right):
                    symbols[i:i + 2] = [merge.token]
                i += 1


def test_a_trained_bpe_encodes_as_tokenizers_bpe_model_does():
    trained = lab.train_bpe("moby_dick", load_corpus("moby_dick"), 1000)
    assert trained.trainer == "core/transformer/bpe.py" and trained.vocab_size == 1000 and len(trained.steps) == lab.STEPS_SHOWN
    model = reference(load_corpus("moby_dick").splitlines(), 1000)
    for text in ("Call me Ishmael. Some years ago", "strawberries and whales", "我学中文", "  two  spaces\nnew line"):
        assert trained.encode(text) == model.encode(text).tokens


def test_above_the_threshold_tokenizers_trains_and_the_steps_are_the_same():
    text = load_corpus("moby_dick")[:300_000]
    ours_trained = lab.train_bpe("moby_dick", text, 800, ours_max_bytes=10**9)
    library = lab.train_bpe("moby_dick", text, 800, ours_max_bytes=1000)
    assert (ours_trained.trainer, library.trainer) == ("core/transformer/bpe.py", "tokenizers")
    assert library.merges == ours_trained.merges and library.vocab_size == ours_trained.vocab_size == 800
    assert [(m.left, m.right, m.count) for m in library.steps] == [(m.left, m.right, m.count)
                                                                  for m in ours_trained.steps]


def test_the_six_cuts_of_one_text():
    lab_result = lab.cut("strawberries 我学中文", "tang_poems", 400)
    cuts = {cut.key: cut for cut in lab_result.segmentations}
    assert (lab_result.chars, lab_result.bytes) == (17, 13 + 4 * 3)
    data = lab_result.text.encode("utf-8")
    for cut in cuts.values():
        if cut.pieces is None:
            continue
        starts = [p.start for p in cut.pieces]
        assert starts == sorted(starts) and all(p.end <= len(data) for p in cut.pieces)
        for piece in cut.pieces:  # a fragment is exactly a piece whose bytes are not whole characters
            try:
                data[piece.start:piece.end].decode("utf-8")
                assert not piece.fragment
            except UnicodeDecodeError:
                assert piece.fragment and piece.shown.startswith("�")
    assert len(cuts["characters"].pieces) == 17 and cuts["characters"].fragments == 0
    assert len(cuts["bytes"].pieces) == 25 and cuts["bytes"].fragments == 12  # 3 per Chinese character
    assert cuts["bytes"].per_char(17) == pytest.approx(25 / 17) and cuts["bytes"].chars_per_token(17) == 17 / 25
    wordpiece = [p.token for p in cuts["wordpiece"].pieces]
    assert wordpiece == ["straw", "##berries", "我", "学", "中", "文"]  # the seed's straw ##berries; 中文 per character
    assert cuts["wordpiece"].vocab_size == 30522
    assert b"".join(data[p.start:p.end] for p in cuts["bpe"].pieces) == data  # byte-level: the whole text, in order
    for key in ("wordpiece_zh", "gpt2"):  # not on this machine (the tests' HF cache is empty): a card, no pieces
        assert cuts[key].pieces is None and cuts[key].missing.key == "registry.offline"


def test_gpt2_and_bert_base_chinese_when_they_are_in_the_cache(monkeypatch, tmp_path, tiny_gpt2_checkpoint):
    """Served under their real ids by the local Hub, fetched once into the (temporary) HF cache: the lab then reads
    them from the cache, and never downloads itself."""
    zh = chinese_checkpoints.write(tmp_path / "zh", "BertForMaskedLM", safetensors=True, tokenizer_config=True)
    server = chinese_checkpoints.serve(monkeypatch, tmp_path, {"gpt2": tiny_gpt2_checkpoint("bpe"),
                                                               "bert-base-chinese": zh})
    try:
        text = "我很喜欢你, the weather"
        assert lab.gpt2_bpe(text).missing.key == "registry.not_downloaded"  # online, not cached: the lab waits
        assert server.count("tokenizer.json") == 0  # it downloaded nothing
        resolve.fetch("causal-lm", "gpt2")
        resolve.fetch("mlm", "bert-base-chinese")
        gpt2 = lab.gpt2_bpe(text)
        reference_tokens = Tokenizer.from_file(str(tiny_gpt2_checkpoint("bpe") / "tokenizer.json")).encode(text).tokens
        assert [p.token for p in gpt2.pieces] == reference_tokens
        assert gpt2.fragments > 0 and all(p.shown.startswith("�") for p in gpt2.pieces if p.fragment)
        zh_cut = lab.wordpiece(text, "bert-base-chinese")
        assert zh_cut.key == "wordpiece_zh" and [p.token for p in zh_cut.pieces[:5]] == list("我很喜欢你")
    finally:
        chinese_checkpoints.stop(server)


@pytest.mark.parametrize("call, message", [
    (lambda: lab.cut("", "moby_dick", 1000), "empty"),
    (lambda: lab.cut("  \r\n\t ", "moby_dick", 1000), "empty"),
    (lambda: lab.cut("x" * 2001, "moby_dick", 1000), "at most 2,000"),
    (lambda: lab.cut("abc", "wikipedia", 1000), "Pick a corpus"),
    (lambda: lab.cut("abc", "moby_dick", 100), "from 260 to 5000"),
    (lambda: lab.cut("abc", "moby_dick", 10**6), "from 260 to 5000"),
])
def test_bad_input_gets_a_clear_message(call, message):
    with pytest.raises(UserInputError, match=message):
        call()


def test_uploads_are_capped_and_cleaned(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n\n ", encoding="utf-8")
    with pytest.raises(UserInputError, match="no text"):
        lab.cut("abc", "moby_dick", 1000, str(empty))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(UserInputError, match="binary|not valid UTF-8"):
        lab.cut("abc", "moby_dick", 1000, str(binary))
    odd = tmp_path / "odd.txt"
    odd.write_text("the cafe\u0301 \u0007 whale\r\nthe whale\u2028我学中文\n" * 50, encoding="utf-8")
    result = lab.cut("the café", "tang_poems", 300, str(odd))
    assert result.trained.corpus == "upload" and result.trained.merges  # NFC, controls dropped, \r\n and \u2028 lines
    assert "\u0007" not in "".join(a + b for a, b in result.trained.merges)
