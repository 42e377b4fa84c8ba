"""Every offline check's answer (issue #51) against an independent computation, and again on a perturbed corpus,
matrix, head or mask, so that an answer written into the code cannot pass: the n-gram, GloVe, attention and
parameter-count checks. The trained networks' checks (RNN/LSTM, char-GPT, char-BERT, the ladder) are
tests/checks/test_checks_networks.py; the Hub checkpoints' checks tests/checks/test_checks_hub.py.

References: counts by hand (Python Counters) on the corpus, numpy cosines on GloVe's raw matrix, transformers'
BertModel on MiniLM's files, the seed's formulas, and transformers' BertModel's and torch.nn.Transformer's own
parameter counts."""
import math
from collections import Counter

import numpy as np
import pytest
import torch

from core.attention import attention
from core.embeddings import embeddings
from core.mlm import pretraining as mlm_pretraining
from core.transformer import param_count
from core.loading.checkpoints import MINILM_ID
from core.checks import CHECKS, get
from core.checks import attention as attention_checks
from core.checks import ngram as ngram_checks
from core.checks.base import grade
from core.text.corpora import load_corpus
from tests.checks_reference import answer

# ----------------------------------------------------------------------------------------------------------------
# N-gram: counts by hand on the corpus

TOY = load_corpus("toy_zh")
CHANGED = TOY.replace("判断 单词 的 词性", "判断 单词 的 磁性").replace("北京 的 词性", "北京 的 磁性")


def sentences(corpus, unit="word"):
    return [line.split() if unit == "word" else [c for c in line if not c.isspace()]
            for line in corpus.splitlines() if line.strip()]


def hand_counts(corpus, unit="word"):
    lines = sentences(corpus, unit)
    unigrams = Counter(token for line in lines for token in line)
    bigrams = Counter(pair for line in lines for pair in zip(line, line[1:]))
    followed = Counter(a for a, _ in bigrams.elements())
    return unigrams, bigrams, followed


def hand_cixing(corpus):
    _, bigrams, followed = hand_counts(corpus)
    p = {w: bigrams["的", w] / followed["的"] for w in ("词性", "磁性")}
    return max(p, key=p.get), p


def hand_add_one(corpus):
    unigrams, bigrams, followed = hand_counts(corpus)
    return (bigrams["的", "磁性"] + 1) / (followed["的"] + len(unigrams))


def hand_perplexity(corpus, pair):
    unigrams, bigrams, followed = hand_counts(corpus)
    V, N = len(unigrams), sum(unigrams.values())
    result = {}
    for sentence in pair:
        tokens = sentence.split()
        p = [(unigrams[tokens[0]] + 1) / (N + V)]  # the first word: its own, lower order
        p += [(bigrams[a, b] + 1) / (followed[a] + V) for a, b in zip(tokens, tokens[1:])]
        result[sentence] = math.prod(p) ** (-1 / len(p))
    return min(result, key=result.get), result


def hand_char(corpus):
    _, bigrams, followed = hand_counts(corpus, "char")
    return bigrams["的", "词"] / followed["的"]


@pytest.mark.parametrize("corpus", [TOY, CHANGED], ids=["seed", "changed"])
def test_ngram_checks_equal_counts_by_hand(corpus, monkeypatch):
    monkeypatch.setattr(ngram_checks, "load_corpus", lambda name: corpus)  # a changed corpus line
    best, p = hand_cixing(corpus)
    found = answer("ngram-cixing")
    assert found.value == best and dict(found.scores) == pytest.approx(p)
    assert answer("ngram-add-one").value == pytest.approx(hand_add_one(corpus), rel=1e-12)
    best, pp = hand_perplexity(corpus, ngram_checks.PAIR)
    found = answer("ngram-perplexity")
    assert found.value == best and dict(found.scores) == pytest.approx(pp, rel=1e-9)
    assert answer("ngram-char").value == pytest.approx(hand_char(corpus), rel=1e-12)


def test_ngram_seed_numbers_and_the_perturbation_flips_the_answers(monkeypatch):
    assert answer("ngram-cixing").value == "词性" and answer("ngram-add-one").value == pytest.approx(1 / 15)
    assert answer("ngram-char").value == pytest.approx(2 / 3)
    monkeypatch.setattr(ngram_checks, "load_corpus", lambda name: CHANGED)
    assert answer("ngram-cixing").value == "磁性" and answer("ngram-add-one").value == pytest.approx(3 / 15)
    assert answer("ngram-perplexity").value == ngram_checks.PAIR[1]


def test_ngram_checks_on_own_text_follow_the_hand_counts():
    own = "的 磁性 很 强\n北京 的 磁性\n我们 的 词性"
    assert answer("ngram-cixing", own).value == hand_cixing(own)[0] == "磁性"
    assert answer("ngram-add-one", own).value == pytest.approx(hand_add_one(own))
    pair = "北京 的 磁性 是 动词\n判断 单词 的 词性"
    assert answer("ngram-perplexity", pair).value == hand_perplexity(TOY, pair.splitlines())[0]


# ----------------------------------------------------------------------------------------------------------------
# GloVe: numpy cosines on the package's raw matrix


@pytest.fixture(scope="module")
def raw_glove():
    import pyarrow.parquet as pq

    matrix, index = embeddings.glove_files()
    words = pq.read_table(index, columns=["index"]).column("index").to_pylist()
    vectors = np.load(matrix).astype(np.float64)
    return words, vectors


def reference_embeddings(words, vectors):
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    index = {w: i for i, w in enumerate(words)}

    def nearest(target, exclude):
        scores = unit @ (target / np.linalg.norm(target))
        scores[[index[w] for w in exclude]] = -np.inf
        return words[int(np.argmax(scores))]

    king, man, woman = (unit[index[w]] for w in ("king", "man", "woman"))
    first, *rest = "king queen prince castle banana".split()  # core.checks.embeddings.ORDER
    order = tuple(sorted(rest, key=lambda w: -float(unit[index[w]] @ unit[index[first]])))
    return {"embeddings-neighbour": nearest(unit[index["frog"]], ["frog"]),
            "embeddings-analogy": nearest(king - man + woman, ["king", "man", "woman"]),
            "embeddings-order": order}


def test_glove_checks_equal_numpy_on_the_raw_matrix(raw_glove):
    expected = reference_embeddings(*raw_glove)
    for slug, value in expected.items():
        found = answer(slug)
        assert found.value == value, slug
        setup = get(slug).setup(None)
        if setup.options and get(slug).kind == "choice":
            assert value in setup.options and list(setup.options) == sorted(setup.options)
    assert expected["embeddings-analogy"] == "queen"


def test_glove_checks_follow_another_matrix(raw_glove, monkeypatch):
    """Other vectors for the same words (random, seeded): every answer follows numpy on those vectors."""
    words = list(dict.fromkeys(raw_glove[0][:300] + ["frog", "king", "man", "woman", "queen", "prince", "castle",
                                                      "banana"]))
    vectors = np.random.default_rng(7).normal(size=(len(words), 20)).astype(np.float32)
    monkeypatch.setattr(embeddings, "load_glove", lambda: embeddings.WordVectors(words, vectors, "random"))
    expected = reference_embeddings(words, vectors.astype(np.float64))
    for slug, value in expected.items():
        assert answer(slug).value == value, slug
    assert expected != reference_embeddings(*raw_glove)

# ----------------------------------------------------------------------------------------------------------------
# Attention: transformers' BertModel on MiniLM's files, and the formulas


def transformers_head_row(text, layer, head):
    import transformers

    from core.loading import resolve

    folder = str(resolve.resolve(MINILM_ID).directory)
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    model = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    encoded = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        probs = model(**encoded, output_attentions=True).attentions[layer - 1][0, head - 1].double()
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])[1:-1]
    rows = probs[1:-1, 1:-1]
    rows = rows / rows.sum(-1, keepdim=True)  # [CLS]/[SEP] hidden, rows renormalised
    return tokens, rows[tokens.index("it")].numpy()


@pytest.mark.parametrize("layer, head, text", [
    (5, 1, None),
    (2, 7, "The trophy did not fit in the suitcase because it was too small."),  # another head, another text
])
def test_attention_it_equals_transformers(layer, head, text, monkeypatch):
    monkeypatch.setattr(attention_checks, "LAYER", layer)
    monkeypatch.setattr(attention_checks, "HEAD", head)
    tokens, row = transformers_head_row(text or attention_checks.IT_TEXT, layer, head)
    found = answer("attention-it", text)
    assert get("attention-it").setup(text).options == tuple(tokens)
    assert found.value == int(np.argmax(row))
    np.testing.assert_allclose([s for _, s in found.scores], row, atol=1e-5)


def reference_causal(mask):
    m = attention.i_have_a_dream()
    Q, K, V = (m["x"] @ m[w] for w in ("W_Q", "W_K", "W_V"))
    scores = np.where(mask, Q @ K.T / math.sqrt(K.shape[1]), -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    regions = attention_checks.regions(4)
    return next(name for name, where in regions.items() if np.all(weights[where] == 0) and where.any())


def test_the_causal_mask_answer_is_read_from_the_live_map(monkeypatch):
    assert answer("attention-causal").value == reference_causal(np.tril(np.ones((4, 4), bool))) == "above"
    anti = np.triu(np.ones((4, 4), bool))  # a mask that hides the past instead
    monkeypatch.setattr(attention, "causal_mask", lambda T: np.triu(np.ones((T, T), bool)))
    assert answer("attention-causal").value == reference_causal(anti) == "below"


@pytest.mark.parametrize("d_k", [64, 16])
def test_thinking_machines_weight_is_the_softmax_of_the_scaled_scores(d_k, monkeypatch):
    from core.text.seeds import thinking_machines

    m = thinking_machines(d_k)
    monkeypatch.setattr(attention_checks, "thinking_machines", lambda: m)
    s11, s12 = m["Q"][0] @ m["K"][0] / math.sqrt(d_k), m["Q"][0] @ m["K"][1] / math.sqrt(d_k)
    assert answer("attention-thinking").value == pytest.approx(1 / (1 + math.exp(s12 - s11)), rel=1e-12)
    if d_k == 64:
        assert answer("attention-thinking").value == pytest.approx(1 / (1 + math.exp(-2)))


# ----------------------------------------------------------------------------------------------------------------
# Parameter counts: transformers' BertModel and torch.nn.Transformer count their own


def transformers_bert_parameters(**sizes):
    import transformers

    with torch.device("meta"):
        return transformers.BertModel(transformers.BertConfig(**sizes)).num_parameters()


def test_bert_base_parameters_equal_transformers_and_follow_the_config(monkeypatch):
    assert answer("transformer-bert-params").value == transformers_bert_parameters() == 109_482_240
    assert grade(get("transformer-bert-params"), 105e6).right and not grade(get("transformer-bert-params"), 340e6).right
    from core.nets.bert_encoder import BertConfig

    sizes = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
    monkeypatch.setitem(mlm_pretraining.KNOWN_CONFIGS, "bert-base-uncased", BertConfig(**sizes))
    assert answer("transformer-bert-params").value == transformers_bert_parameters(**sizes)


def nn_transformer_parameters(d_model, heads, d_ff, encoder_layers, decoder_layers, vocab_size, **_):
    with torch.device("meta"):
        model = torch.nn.Transformer(d_model, heads, encoder_layers, decoder_layers, d_ff, batch_first=True)
    layers = [*model.encoder.layers, *model.decoder.layers]  # post-LN as in the paper: no final LayerNorms
    return sum(p.numel() for layer in layers for p in layer.parameters()) + vocab_size * d_model  # + shared table


def test_transformer_base_parameters_equal_nn_transformer(monkeypatch):
    assert answer("transformer-base-params").value == nn_transformer_parameters(**param_count.TRANSFORMER_BASE)
    small = dict(param_count.TRANSFORMER_BASE, d_model=128, heads=4, d_ff=300, encoder_layers=2, decoder_layers=3,
                 vocab_size=1000)
    monkeypatch.setattr(param_count, "TRANSFORMER_BASE", small)
    assert answer("transformer-base-params").value == nn_transformer_parameters(**small)

def test_every_check_is_answered_by_one_of_the_check_test_files():
    """The Hub checks are tests/checks/test_checks_hub.py, the networks' tests/checks/test_checks_networks.py, the
    encoder-decoder's tests/checks/test_checks_seq2seq.py, the rest above."""
    from tests.checks.test_checks_hub import HUB
    from tests.checks.test_checks_networks import NETWORKS
    from tests.checks.test_checks_seq2seq import SEQ2SEQ

    here = {"ngram-cixing", "ngram-add-one", "ngram-perplexity", "ngram-char", "embeddings-neighbour",
            "embeddings-analogy", "embeddings-order", "attention-it", "attention-causal", "attention-thinking",
            "transformer-bert-params", "transformer-base-params"}
    hub = set(HUB) | {"classify-finetune"}
    assert here | hub | NETWORKS | SEQ2SEQ == set(CHECKS)
    assert len(here) + len(hub) + len(NETWORKS) + len(SEQ2SEQ) == len(CHECKS)
