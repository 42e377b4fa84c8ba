"""NER (issue #8): grouped entities equal transformers' TokenClassificationPipeline (simple/first/average/max and
per-token "none"), on the same tiny random checkpoints; windows for long text; BIO → IOBES; bad input. The tab's
handlers are tests/tasks/test_ner_demo.py."""
import json
import shutil

import numpy as np
import pytest

from core.tasks import ner
from core.loading import registry
from tests import chinese_checkpoints
from core.loading import resolve
from core.loading.checkpoints import MINILM_ID
from core.text.corpora import load_corpus
from core.text.errors import ModelUnavailableError, UserInputError
from core.text.limits import MAX_TEXT_CHARS
from core.loading import checkpoints
from core.text import limits
from core.text import seeds

import transformers

CONLL = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
LABELS = dict(num_labels=9, id2label=dict(enumerate(CONLL)), label2id={label: i for i, label in enumerate(CONLL)})
TEXTS = [
    "My name is Wolfgang and I live in Berlin.",
    "Queequeg and Tashtego met Daggoo near Nantucket; Ishmael, Starbuck, Stubb and Flask watched the Pequod.",
    "Tim Cook 🍎 showed the new iPhone in Cupertino 🎉. 爱因斯坦在柏林发表演讲。",
    "Hugging Face Inc. is a company based in New York City; its headquarters are in DUMBO.",
]


def with_conll_labels(folder, tmp_path_factory):
    """A copy of a tiny num_labels=9 checkpoint whose config names the CoNLL labels. (tiny_checkpoint keys its cache
    on the overrides, so it cannot take the id2label dict itself.)"""
    copy = tmp_path_factory.mktemp(folder.name + "_conll")
    shutil.copytree(folder, copy, dirs_exist_ok=True)
    config = json.loads((copy / "config.json").read_text())
    config.update(id2label={str(k): v for k, v in LABELS["id2label"].items()}, label2id=LABELS["label2id"])
    (copy / "config.json").write_text(json.dumps(config))
    return str(copy)


@pytest.fixture(scope="module")
def bert_dir(tiny_checkpoint, tmp_path_factory):
    return with_conll_labels(tiny_checkpoint("BertForTokenClassification", num_labels=9), tmp_path_factory)


@pytest.fixture(scope="module")
def distil_dir(tiny_checkpoint, tmp_path_factory):
    return with_conll_labels(tiny_checkpoint("DistilBertForTokenClassification", num_labels=9), tmp_path_factory)


@pytest.fixture(scope="module")
def cased_dir(bert_dir, tmp_path_factory):
    """The same weights with a cased tokenizer (as dslim/bert-base-NER has): capitals become [UNK]s and pieces."""
    folder = tmp_path_factory.mktemp("cased")
    for name in ("config.json", "model.safetensors"):
        shutil.copy(f"{bert_dir}/{name}", folder / name)
    vocab = resolve.resolve(MINILM_ID).directory / "vocab.txt"
    transformers.BertTokenizerFast(vocab_file=str(vocab), do_lower_case=False).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def quiet_dir(bert_dir, tmp_path_factory):
    """A checkpoint whose classifier always says O: text with no entities."""
    folder = tmp_path_factory.mktemp("quiet")
    model = transformers.BertForTokenClassification.from_pretrained(bert_dir)
    model.classifier.bias.data[0] = 50.0
    model.save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(bert_dir).save_pretrained(folder)
    return str(folder)


def reference(folder, max_length=None):
    pipe = transformers.pipeline("token-classification", model=folder, tokenizer=folder, device=-1)
    if max_length:
        pipe.tokenizer.model_max_length = max_length
    return pipe


def assert_same_entities(ours, theirs):
    assert [(e.entity_group, e.word, e.start, e.end) for e in ours] == \
           [(e["entity_group"], e["word"], e["start"], e["end"]) for e in theirs]
    np.testing.assert_allclose([e.score for e in ours], [float(e["score"]) for e in theirs], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------------------------
# Parity with transformers' pipeline


@pytest.mark.parametrize("which", ["bert_dir", "distil_dir", "cased_dir"])
def test_grouped_entities_equal_transformers_pipeline(which, request):
    folder = request.getfixturevalue(which)
    pipe = reference(folder)
    for text in TEXTS:
        tagged = ner.tag(text, folder)
        for strategy in limits.NER_STRATEGIES:
            theirs = pipe(text, aggregation_strategy=strategy)
            assert theirs, "random weights should tag something"
            assert_same_entities(ner.entities(tagged, strategy), theirs)


def test_per_token_results_equal_pipeline_without_aggregation(bert_dir, cased_dir):
    for folder in (bert_dir, cased_dir):
        pipe = reference(folder)
        for text in TEXTS:
            tagged = ner.tag(text, folder)
            labels = tagged.argmax_labels()
            ours = [(labels[i], i + 1, token.word, token.start, token.end)  # index counts [CLS] as 0
                    for i, token in enumerate(tagged.tokens) if labels[i] != "O"]
            theirs = pipe(text)
            assert ours == [(e["entity"], e["index"], e["word"], e["start"], e["end"]) for e in theirs]
            rows = [i for i, label in enumerate(labels) if label != "O"]
            np.testing.assert_allclose(tagged.probs[rows].max(-1), [e["score"] for e in theirs], rtol=1e-5)
            np.testing.assert_allclose(tagged.probs.sum(-1), 1.0, rtol=1e-5)


def test_windows_equal_fast_tokenizer_overflow(bert_dir):
    text = load_corpus("moby_dick")[20_000:23_000]
    hf = transformers.AutoTokenizer.from_pretrained(bert_dir)
    theirs = hf(text, truncation=True, max_length=64, stride=16, return_overflowing_tokens=True)["input_ids"]
    tokenizer = registry.load("ner", bert_dir).tokenizer
    encoded = ner.encode(tokenizer, text, max_length=64, stride=16)
    ids = [token.id for token in encoded.tokens]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    assert [[cls, *ids[a:b], sep] for a, b in encoded.windows] == theirs
    assert len(encoded.windows) > 10


def test_long_text_windows_equal_pipeline_with_stride(bert_dir):
    text = load_corpus("moby_dick")[20_000:21_500]
    tagged = ner.tag(text, bert_dir, stride=16, max_length=64)
    assert len(tagged.encoded.windows) > 5
    pipe = reference(bert_dir, max_length=64)
    for strategy in limits.NER_STRATEGIES:
        ours = ner.entities(tagged, strategy)
        assert_same_entities(ours, pipe(text, aggregation_strategy=strategy, stride=16))
        assert all(text[e.start:e.end].strip() for e in ours)  # offsets point into the full text


def test_20k_characters_run_in_512_token_windows(bert_dir):
    text = load_corpus("moby_dick")[5_000:5_000 + MAX_TEXT_CHARS]
    tagged = ner.tag(text, bert_dir)
    windows = tagged.encoded.windows
    assert len(windows) > 5 and all(b - a <= 510 for a, b in windows)
    assert windows[0][0] == 0 and windows[-1][1] == len(tagged.tokens)
    assert all(next_a == b - ner.DEFAULT_STRIDE for (_, b), (next_a, _) in zip(windows, windows[1:]))
    assert_same_entities(ner.entities(tagged, "first"),
                         reference(bert_dir)(text, aggregation_strategy="first", stride=ner.DEFAULT_STRIDE))
    # the merged table takes a token in an overlap from the window where it is more central
    (a0, b0), (a1, b1) = windows[:2]
    early, late = a1 + 5, b0 - 5  # both in the overlap [a1, b0)
    np.testing.assert_allclose(tagged.probs[early], tagged.window_probs[0][early - a0])
    np.testing.assert_allclose(tagged.probs[late], tagged.window_probs[1][late - a1])


# ----------------------------------------------------------------------------------------------------------------
# Tagging schemes


def test_seed_bio_to_iobes():
    """§14: 爱 B-PER, 因 I-PER, 斯坦 E-PER, 在 O, 柏林 S-LOC, 发表 O, 演讲 O."""
    words = [word for word, _ in seeds.SEED_WORD_TAGS]
    assert words == ["爱", "因", "斯坦", "在", "柏林", "发表", "演讲"]
    assert ner.bio_to_iobes([tag for _, tag in seeds.SEED_WORD_TAGS]) == \
        ["B-PER", "I-PER", "E-PER", "O", "S-LOC", "O", "O"]


def test_bio_to_iobes_edge_cases():
    assert ner.bio_to_iobes([]) == []
    assert ner.bio_to_iobes(["B-PER", "B-PER", "I-PER"]) == ["S-PER", "B-PER", "E-PER"]
    assert ner.bio_to_iobes(["O", "I-ORG", "I-ORG", "I-LOC"]) == ["O", "B-ORG", "E-ORG", "S-LOC"]
    assert ner.bio_to_iobes(["PER", "PER", "O"]) == ["B-PER", "E-PER", "O"]  # IO labels count as inside


def test_iobes_chunks_are_the_pipelines_groups(bert_dir):
    """For any tag sequence, the spans IOBES marks (B…E, S) are the entities the pipeline's grouping forms."""
    import hypothesis
    strategies = hypothesis.strategies
    pipe = reference(bert_dir)

    @hypothesis.settings(max_examples=200, deadline=None)
    @hypothesis.given(strategies.lists(strategies.sampled_from(CONLL), max_size=12))
    def check(tags):
        groups = pipe.group_entities([{"entity": tag, "score": 1.0, "word": str(i), "start": i, "end": i + 1}
                                      for i, tag in enumerate(tags)]) if tags else []
        theirs = [(g["entity_group"], g["start"], g["end"]) for g in groups if g["entity_group"] != "O"]
        ours, start = [], None
        for i, tag in enumerate(ner.bio_to_iobes(tags)):
            if tag[0] in "BS":
                start = i
            if tag[0] in "ES":
                ours.append((tag[2:], start, i + 1))
        assert ours == theirs

    check()


def test_parse_word_tags():
    assert ner.parse_word_tags("New/B-LOC York/I-LOC 3/4/O") == [("New", "B-LOC"), ("York", "I-LOC"), ("3/4", "O")]
    for bad, words in [("", "Write some"), ("Berlin", "has no tag"), ("Berlin/LOC", "not a BIO tag"),
                       ("Berlin/B-", "not a BIO tag")]:
        with pytest.raises(UserInputError, match=words):
            ner.parse_word_tags(bad)


def test_aggregation_strategies_differ_on_split_words(bert_dir):
    """On words cut into pieces, first / average / max pick tags by different rules (checked by hand here)."""
    tagged = ner.tag(TEXTS[1], bert_dir)
    words = {s: ner.units(tagged, s) for s in ("first", "average", "max")}
    split = [i for i, word in enumerate(words["first"]) if len(word.tokens) > 1]
    assert split, "Queequeg, Tashtego, Daggoo, Pequod are several pieces each"
    for i in split:
        probs = tagged.probs[list(words["first"][i].tokens)]  # (pieces, C)
        assert words["first"][i].label == CONLL[probs[0].argmax()]
        assert words["average"][i].label == CONLL[probs.mean(0).argmax()]
        assert words["max"][i].label == CONLL[probs[probs.max(1).argmax()].argmax()]
    assert any(len({words[s][i].label for s in words}) > 1 for i in split)


# ----------------------------------------------------------------------------------------------------------------
# Bad input and offline


@pytest.mark.parametrize("text, message", [("", "empty"), ("   \n\t ", "empty"), (None, "empty"),
                                           ("x" * (MAX_TEXT_CHARS + 1), "limit"), ("\u200b\u200b", "no tokens")])
def test_bad_text_is_a_clear_error(bert_dir, text, message):
    with pytest.raises(UserInputError, match=message):
        ner.tag(text, bert_dir)


def test_no_entities_emoji_and_cjk(quiet_dir, bert_dir):
    text = "The weather was lovely, so we went for a walk."
    tagged = ner.tag(text, quiet_dir)
    for strategy in limits.NER_STRATEGIES:
        assert ner.entities(tagged, strategy) == [] == reference(quiet_dir)(text, aggregation_strategy=strategy)
    tagged = ner.tag("🙂🎉 爱因斯坦", bert_dir)
    assert tagged.tokens[0].piece == "[UNK]" and tagged.tokens[0].word == "🙂🎉"  # [UNK] stands for its characters
    assert [token.word for token in tagged.tokens] == ["🙂🎉", "爱", "因", "斯", "坦"]  # one token per CJK char
    assert [(t.start, t.end) for t in tagged.tokens] == [(0, 2), (3, 4), (4, 5), (5, 6), (6, 7)]


def test_offline_default_names_the_checkpoint_and_wrong_head_is_refused():
    with pytest.raises(ModelUnavailableError, match="dslim/bert-base-NER"):
        ner.tag("Berlin", None)
    with pytest.raises(UserInputError, match=r"encoder without a task head \(BertModel\)"):
        ner.tag("Berlin", MINILM_ID)











# ----------------------------------------------------------------------------------------------------------------
# 中文: ckiplab/bert-base-chinese-ner's label set and layout through the registry; IOBES labels; the tab in 中文

CKIP_LABELS = chinese_checkpoints.CKIP_LABELS
SEED_ZH = "爱因斯坦在柏林发表演讲。"


@pytest.fixture(scope="module")
def ckip_like_dir(tmp_path_factory):
    return str(chinese_checkpoints.write_ner(tmp_path_factory.mktemp("ckip_like"), SEED_ZH))






def test_chinese_tagger_loads_through_the_registry_and_equals_transformers(ckip_like_dir):
    assert "ckiplab/bert-base-chinese-ner" in checkpoints.CHECKPOINTS["ner"]
    tagged = ner.tag(SEED_ZH, ckip_like_dir)
    assert tagged.labels == CKIP_LABELS and len(tagged.labels) == 73
    assert [token.word for token in tagged.tokens] == list(SEED_ZH)  # one token per character
    import torch

    model = transformers.BertForTokenClassification.from_pretrained(ckip_like_dir).eval()
    ids = transformers.AutoTokenizer.from_pretrained(ckip_like_dir)(SEED_ZH, return_tensors="pt")
    with torch.no_grad():
        theirs = model(**ids).logits.softmax(-1)[0, 1:-1].numpy()
    np.testing.assert_allclose(tagged.probs, theirs, rtol=1e-5, atol=1e-6)


def iobes_of_chunks(length: int, chunks: list[tuple[int, int, str]]) -> list[str]:
    """Independent reference: IOBES tags written from chunk spans [start, end) by the scheme's definition."""
    tags = ["O"] * length
    for start, end, kind in chunks:
        if end - start == 1:
            tags[start] = f"S-{kind}"
        else:
            tags[start], tags[end - 1] = f"B-{kind}", f"E-{kind}"
            for i in range(start + 1, end - 1):
                tags[i] = f"I-{kind}"
    return tags


def bio_of_chunks(length: int, chunks: list[tuple[int, int, str]]) -> list[str]:
    tags = ["O"] * length
    for start, end, kind in chunks:
        tags[start] = f"B-{kind}"
        for i in range(start + 1, end):
            tags[i] = f"I-{kind}"
    return tags


def test_iobes_conversion_and_grouping_against_the_schemes_definition():
    """Random chunkings: BIO → IOBES equals the IOBES written from the chunks by definition, a model's IOBES tags
    pass through unchanged, and grouping IOBES-tagged units recovers exactly the chunks."""
    import hypothesis
    st = hypothesis.strategies

    @st.composite
    def chunkings(draw):
        length = draw(st.integers(0, 14))
        chunks, i = [], 0
        while i < length:
            if draw(st.booleans()):
                end = draw(st.integers(i + 1, length))
                chunks.append((i, end, draw(st.sampled_from(["PERSON", "GPE", "LOC", "ORG"]))))
                i = end
            else:
                i += 1
        return length, chunks

    @hypothesis.settings(max_examples=300, deadline=None)
    @hypothesis.given(chunkings())
    def check(case):
        length, chunks = case
        iobes = iobes_of_chunks(length, chunks)
        assert ner.bio_to_iobes(bio_of_chunks(length, chunks)) == iobes
        assert ner.bio_to_iobes(iobes) == iobes
        units = [ner.Unit(tag, 1.0, str(i), i, i + 1, range(i, i + 1)) for i, tag in enumerate(iobes)]
        found = ner.group(units, "".join)
        assert [(e.start, e.end, e.entity_group) for e in found] == chunks

    check()
    # The seed's example by hand (§14.4), and ckiplab-style character tags for it
    chars = list("爱因斯坦在柏林发表演讲")
    tags = ["B-PERSON", "I-PERSON", "I-PERSON", "E-PERSON", "O", "B-GPE", "E-GPE", "O", "O", "O", "O"]
    units = [ner.Unit(tag, 0.9, ch, i, i + 1, range(i, i + 1)) for i, (ch, tag) in enumerate(zip(chars, tags))]
    assert [(e.entity_group, e.word) for e in ner.group(units, "".join)] == [("PERSON", "爱因斯坦"), ("GPE", "柏林")]
