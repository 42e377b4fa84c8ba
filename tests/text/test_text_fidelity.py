"""Text fidelity (issue 21 §6): line and paragraph separators are whitespace, pair truncation is BertTokenizerFast's
``longest_first`` to the token, and the offsets the learner sees point into the text they typed."""
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from core.loading.checkpoints import MINILM_ID
from core.text.textio import clean_text, decode_text, normalize_text
from core.text.tokenizer import WordPieceTokenizer, longest_first
from core.loading import resolve
from core.text import limits

SEPARATORS = ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"]


@pytest.fixture(scope="module")
def minilm():
    return resolve.resolve(MINILM_ID).directory


@pytest.fixture(scope="module")
def reference(minilm):
    import transformers
    return transformers.BertTokenizerFast.from_pretrained(str(minilm))


@pytest.fixture(scope="module")
def ours(minilm):
    return WordPieceTokenizer.from_directory(minilm)


@pytest.mark.parametrize("separator", SEPARATORS)
def test_separators_are_whitespace_not_deleted(separator, ours):
    text = f"Paris{separator}London"
    assert normalize_text(text) == "Paris\nLondon"
    assert decode_text(text.encode("utf-8")) == "Paris\nLondon"
    assert ours.tokenize(normalize_text(text)) == ["paris", "london"]  # not the glued "parisl ##ond ##on"


def test_other_controls_are_still_dropped_and_nfc_applied():
    assert normalize_text("a\x00b\x07c\u200bd") == "abc\u200bd"  # U+200B is a format char (Cf), kept as is
    assert normalize_text("Cafe\u0301") == "Café"
    assert normalize_text("\ud800x") == "x"


# Text that exercises the map back to the original: decomposed accents, Hangul jamo, \r\n, dropped controls.
PIECES = st.sampled_from(["a", "Z", " ", "\r\n", "\r", "\n", "\u2028", "\x00", "e\u0301", "\u1100\u1161\u11a8",
                          "가\u11a8", "東", "🙂", "\u0301", "x\u0323\u0307", "\x85", "ﬁ", "."])


@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_clean_text_maps_every_character_back_to_its_source(text):
    clean = clean_text(text)
    assert clean.text == normalize_text(text)
    assert len(clean.starts) == len(clean.ends) == len(clean.text)
    for i, ch in enumerate(clean.text):
        a, b = clean.span(i, i + 1)
        source = text[a:b]
        assert 0 <= a < b <= len(text)
        # the source span, cleaned on its own, produces the character (NFC composes within the span)
        assert ch in normalize_text(source) or ch == "\n" and source in SEPARATORS
    assert list(clean.starts) == sorted(clean.starts)


@pytest.mark.parametrize("n_first,n_second,budget,expected", [
    (11, 10, 15, (8, 7)),  # both cut: the odd token stays with the segment that was longer (the first)
    (10, 11, 15, (7, 8)),
    (10, 10, 15, (7, 8)),  # equally long: the second keeps it
    (3, 20, 15, (3, 12)),  # only the longer one is cut
    (40, 0, 15, (15, 0)),
    (30, 30, 200, (30, 30)),
])
def test_longest_first_arithmetic(n_first, n_second, budget, expected):
    assert longest_first(n_first, n_second, budget) == expected


TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60) | st.lists(
    st.sampled_from(["the", "cat", "Straße", "naïve", "東京", "playing", ",", " ", "\r", "\u2028", "\r\n", "x\u0301",
                     "unbelievably", "🙂", "\t", "\x00", "42"]), max_size=40).map(" ".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, pair=st.none() | TEXT.filter(bool), max_length=st.integers(3, 40))
def test_encode_matches_bert_tokenizer_fast_with_truncation(ours, reference, text, pair, max_length):
    # (an empty pair is left out: transformers treats "" as no pair at all, a Python-side quirk)
    if max_length < 3 + (pair is not None):
        max_length = 3 + (pair is not None)
    expected = reference(text, pair, truncation="longest_first", max_length=max_length, return_offsets_mapping=True,
                         return_token_type_ids=True)
    got = ours.encode(text, pair, max_length=max_length)
    assert got.ids == expected["input_ids"]
    assert got.segment_ids == expected["token_type_ids"]
    assert got.offsets == [tuple(o) for o in expected["offset_mapping"]]


def _plain(text):
    """Lower case without accents, as the uncased tokenizer sees it."""
    return "".join(ch for ch in unicodedata.normalize("NFD", normalize_text(text).lower())
                   if unicodedata.category(ch) != "Mn")


def test_ner_offsets_point_into_the_typed_text(tiny_checkpoint):
    from core.tasks import ner

    folder = tiny_checkpoint("BertForTokenClassification", num_labels=5,
                             id2label={0: "O", 1: "B-PER", 2: "I-PER", 3: "B-LOC", 4: "I-LOC"},
                             label2id={"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3, "I-LOC": 4})
    typed = "Cafe\u0301\x00 Ang\r\nela\u2028Merkel vi\u0301sited Paris\r\nand Berlin."
    tagged = ner.tag(typed, str(folder))
    assert tagged.text == typed
    for token in tagged.tokens:  # each token covers the characters the learner typed for it
        covered = _plain(typed[token.start:token.end])
        assert covered.strip() and _plain(token.word.replace("##", "")) in covered or token.piece == "[UNK]"
    for strategy in limits.NER_STRATEGIES:
        for entity in ner.entities(tagged, strategy):
            assert 0 <= entity.start < entity.end <= len(typed)


def test_qa_answer_offsets_point_into_the_typed_context(tiny_checkpoint):
    from core.tasks import qa

    folder = tiny_checkpoint("BertForQuestionAnswering")
    typed = "Cafe\u0301 au lait\r\nis served\u2028in Paris\x00 every morning.\r\nIt costs two euros."
    result = qa.answer("Where is it served?", typed, str(folder), top_k=5)
    assert result.context == typed
    for answer in result.answers:
        assert answer.text == typed[answer.start:answer.end]
        assert normalize_text(answer.text).strip() == normalize_text(answer.text) != ""
