"""Every offline check's answer (issue #51) against an independent computation, and again on a perturbed model or
corpus, so that an answer written into the code cannot pass.

References: counts by hand (Python Counters) on the corpus, numpy cosines on GloVe's raw matrix, torch.nn.RNNCell /
nn.LSTMCell / nn.LSTM holding the shipped weights, transformers' BertModel (MiniLM), GPT2LMHeadModel (char-GPT) and
BertForMaskedLM (char-BERT) reading the same files, TopPLogitsWarper, captum's IntegratedGradients, nn.Transformer's
and BertModel's own parameter counts, and the seed's formulas. Perturbations: a changed corpus line, another GloVe
matrix, noise added to the shipped weights (read back through the apps' own loaders), other heads, another mask.

The Hub checkpoints' checks (NER, QA, Hub BERT, SST-2) are tests/test_checks_hub.py."""
import math
import re
import shutil
from collections import Counter

import numpy as np
import pytest
import torch

from core import attention, embeddings, gpt, ladder, lstm, mlm_char, mlm_pretraining, param_count
from core.checkpoints import MINILM_ID
from core.checks import CHECKS, get
from core.checks import attention as attention_checks
from core.checks import ngram as ngram_checks
from core.checks.base import grade
from core.corpora import load_corpus

pytestmark = pytest.mark.usefixtures("one_torch_thread")

STEPS = 32  # integrated gradients' steps in the Why views (core.attribution.DEFAULT_STEPS)


def answer(slug, own_text=None):
    found = get(slug).answer(own_text)
    assert found.missing is None
    return found


def noisy_copy(source, folder, seed, scale=0.5):
    """The files of a shipped model with Gaussian noise (scale × each tensor's std) added to every float weight."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, folder, dirs_exist_ok=True)
    generator = torch.Generator().manual_seed(seed)
    for path in folder.glob("*.safetensors"):
        state = load_file(str(path))
        for name, tensor in state.items():
            if tensor.is_floating_point() and tensor.numel() > 1:
                noise = torch.randn(tensor.shape, generator=generator) * float(tensor.float().std()) * scale
                state[name] = (tensor.float() + noise).to(tensor.dtype).contiguous()
        save_file(state, str(path))
    return folder


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
    first, *rest = ngram_words = ("king", "queen", "prince", "castle", "banana")
    order = tuple(sorted(rest, key=lambda w: -float(unit[index[w]] @ unit[index[first]])))
    assert len(ngram_words) == 5
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
# RNN & LSTM: torch.nn cells holding the shipped weights


def cell_of(model):
    """torch.nn.RNNCell / nn.LSTMCell with our U, W, b (bias_hh = 0)."""
    U, W = model.cell.U, model.cell.W
    cell = (torch.nn.LSTMCell if model.kind == "lstm" else torch.nn.RNNCell)(U.in_features, model.cell.hidden_size)
    with torch.no_grad():
        cell.weight_ih.copy_(U.weight), cell.weight_hh.copy_(W.weight), cell.bias_ih.copy_(U.bias)
        cell.bias_hh.zero_()
    return cell.to(U.weight.device)


def run_cells(model, ids, keep_graph=False):
    """Hidden states (and, for the LSTM, forget gates) step by step through torch's cell."""
    cell, x = cell_of(model), model.embed(ids).detach()  # (B, T, E)
    B, H = ids.shape[0], model.cell.hidden_size
    h = torch.zeros(B, H, device=x.device)
    c, hs, forget = torch.zeros_like(h), [], []
    for t in range(ids.shape[1]):
        if model.kind == "lstm":
            gates = x[:, t] @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T
            forget.append(torch.sigmoid(gates.chunk(4, dim=-1)[1]))
            h, c = cell(x[:, t], (h, c))
        else:
            h = cell(x[:, t], h)
        hs.append(h)
    return hs, forget


def reference_survival(model, windows):
    windows = windows.to(model.head.weight.device)
    with torch.enable_grad():
        hs, _ = run_cells(model, windows[:, :-1])
        loss = torch.nn.functional.cross_entropy(model.head(hs[-1]), windows[:, -1])
        grads = torch.autograd.grad(loss, hs)
    norms = torch.stack([g.norm(dim=-1) for g in grads], dim=1).mean(0)  # (T,) by t
    return float(norms[0] / norms[-1])  # 50 steps back over 0 steps back


def reference_lstm(models, slug):
    vocab = models.vocab
    if slug == "lstm-gradient":
        windows = lstm.corpus_windows(vocab, 51)
        scores = {"RNN": reference_survival(models.rnn, windows), "LSTM": reference_survival(models.lstm, windows)}
        return max(scores, key=scores.get), scores
    from core.checks import lstm as lstm_checks

    if slug == "lstm-next-char":
        ids = torch.tensor([vocab.encode(lstm_checks.NEXT)[0]])
        with torch.no_grad():
            hs, _ = run_cells(models.lstm, ids.to(models.lstm.head.weight.device))
            probs = models.lstm.head(hs[-1]).softmax(-1)[0]
        return vocab.tokens[int(probs.argmax())], None
    if slug == "lstm-forget":
        ids = torch.tensor([vocab.encode(lstm_checks.FORGET_TEXT)[0]])
        with torch.no_grad():
            _, forget = run_cells(models.lstm, ids.to(models.lstm.head.weight.device))
        return float(torch.stack(forget[1:]).prod(0).mean()), None  # f_T ⋯ f_2: back to the first character
    if slug == "lstm-why":
        return captum_lstm(models, lstm_checks.WHY_TEXT), None


def captum_lstm(models, text):
    """captum's integrated gradients on torch.nn.LSTM fed the embeddings (zeros baseline), the most probable next
    character's probability (<unk> never explained)."""
    from captum.attr import IntegratedGradients

    model = models.lstm
    ref = torch.nn.LSTM(model.cell.U.in_features, model.cell.hidden_size, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(model.cell.U.weight), ref.weight_hh_l0.copy_(model.cell.W.weight)
        ref.bias_ih_l0.copy_(model.cell.U.bias), ref.bias_hh_l0.zero_()
    ref = ref.to(model.head.weight.device)
    ids = torch.tensor(models.vocab.encode(text)[0], device=model.head.weight.device)
    x = model.embed(ids).detach()
    with torch.no_grad():
        probs = model.head(ref(x[None])[0][:, -1]).softmax(-1)[0]
    probs[0] = 0
    target = int(probs.argmax())

    def forward(embeds):
        return model.head(ref(embeds)[0][:, -1]).softmax(-1)[:, target]

    ig = IntegratedGradients(forward).attribute(x[None], baselines=torch.zeros_like(x)[None], n_steps=STEPS,
                                                method="gausslegendre")[0]
    return int(ig.sum(-1).argmax())


LSTM_SLUGS = ["lstm-gradient", "lstm-next-char", "lstm-forget", "lstm-why"]


@pytest.fixture(scope="module")
def noisy_rnn_models(tmp_path_factory):
    return lstm.load_models(noisy_copy(lstm.RNN_ASSETS, tmp_path_factory.mktemp("rnn"), seed=3))


@pytest.mark.parametrize("perturbed", [False, True])
def test_lstm_checks_equal_torch_cells_and_captum(perturbed, noisy_rnn_models, monkeypatch):
    shipped = {slug: answer(slug).value for slug in LSTM_SLUGS}
    if perturbed:  # other weights, read back through the tab's own loader
        monkeypatch.setattr(lstm, "shipped_models", lambda: noisy_rnn_models)
    models = lstm.shipped_models()
    for slug in LSTM_SLUGS:
        value, scores = reference_lstm(models, slug)
        found = answer(slug)
        if slug == "lstm-forget":
            assert found.value == pytest.approx(value, rel=1e-4, abs=1e-7)
        else:
            assert found.value == value, slug
        if scores:
            assert dict(found.scores) == pytest.approx(scores, rel=1e-3)
        if perturbed:  # every answer moved with the weights: none of them can be written in the code
            assert found.value != shipped[slug], slug


def test_the_gradient_answer_follows_the_models_not_their_names(monkeypatch):
    real = lstm.shipped_models()
    assert answer("lstm-gradient").value == "LSTM"
    swapped = lstm.ModelSet(real.vocab, real.lstm, real.rnn)  # the RNN slot holds the LSTM and back
    monkeypatch.setattr(lstm, "shipped_models", lambda: swapped)
    assert answer("lstm-gradient").value == "RNN"


# ----------------------------------------------------------------------------------------------------------------
# Attention: transformers' BertModel on MiniLM's files, and the formulas


def transformers_head_row(text, layer, head):
    import transformers

    from core import resolve

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
    from core.seeds import thinking_machines

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
        model = torch.nn.Transformer(d_model, heads, encoder_layers, decoder_layers, d_ff)
    layers = [*model.encoder.layers, *model.decoder.layers]  # post-LN as in the paper: no final LayerNorms
    return sum(p.numel() for layer in layers for p in layer.parameters()) + vocab_size * d_model  # + shared table


def test_transformer_base_parameters_equal_nn_transformer(monkeypatch):
    assert answer("transformer-base-params").value == nn_transformer_parameters(**param_count.TRANSFORMER_BASE)
    small = dict(param_count.TRANSFORMER_BASE, d_model=128, heads=4, d_ff=300, encoder_layers=2, decoder_layers=3,
                 vocab_size=1000)
    monkeypatch.setattr(param_count, "TRANSFORMER_BASE", small)
    assert answer("transformer-base-params").value == nn_transformer_parameters(**small)


# ----------------------------------------------------------------------------------------------------------------
# char-GPT: transformers' GPT2LMHeadModel on the same file, TopPLogitsWarper, captum


@pytest.fixture(scope="module")
def gpt_folders(tmp_path_factory):
    """(our folder, transformers' folder) for the shipped weights and for noisy ones."""
    folders = {}
    for name, source in (("shipped", gpt.GPT_ASSETS),
                         ("noisy", noisy_copy(gpt.GPT_ASSETS, tmp_path_factory.mktemp("gpt_noisy"), seed=5, scale=0.3))):
        hf = tmp_path_factory.mktemp(f"hf_{name}")
        shutil.copy(source / "char_gpt.safetensors", hf / "model.safetensors")
        shutil.copy(source / "config.json", hf / "config.json")
        folders[name] = (source, hf)
    return folders


def reference_gpt(hf_folder, vocab, slug):
    import transformers
    from captum.attr import IntegratedGradients

    from core.checks import transformer as t

    model = transformers.GPT2LMHeadModel.from_pretrained(str(hf_folder), attn_implementation="eager").eval()
    text = {"transformer-gpt-next": t.NEXT_TEXT, "transformer-top-p": t.TOP_P_TEXT,
            "transformer-temperature": t.NEXT_TEXT, "transformer-gpt-why": t.WHY_TEXT}[slug]
    ids = torch.tensor([vocab.encode(text)[0]])
    with torch.no_grad():
        logits = model(ids).logits[0, -1].clone()
    logits[0] = -math.inf  # <unk> is never written
    if slug == "transformer-gpt-next":
        return vocab.tokens[int(logits.argmax())]
    if slug == "transformer-top-p":
        kept = transformers.TopPLogitsWarper(t.TOP_P)(ids, logits[None])
        return float(torch.isfinite(kept).sum())
    if slug == "transformer-temperature":
        return float((logits / t.TEMPERATURE).softmax(-1).max())
    target = int(logits.argmax())
    x = model.transformer.wte(ids[0]).detach()

    def forward(embeds):
        return model(inputs_embeds=embeds).logits[:, -1].softmax(-1)[:, target]

    ig = IntegratedGradients(forward).attribute(x[None], baselines=torch.zeros_like(x)[None], n_steps=STEPS,
                                                method="gausslegendre")[0]
    return int(ig.sum(-1).argmax())


GPT_SLUGS = ["transformer-gpt-next", "transformer-top-p", "transformer-temperature", "transformer-gpt-why"]


@pytest.mark.parametrize("weights", ["shipped", "noisy"])
def test_char_gpt_checks_equal_transformers(weights, gpt_folders, monkeypatch):
    ours, hf = gpt_folders[weights]
    shipped = {slug: answer(slug).value for slug in GPT_SLUGS}
    if weights == "noisy":
        loaded = gpt.load_char_gpt(ours)
        monkeypatch.setattr(gpt, "shipped_char_gpt", lambda: loaded)
    vocab = gpt.shipped_char_gpt()[1]
    for slug in GPT_SLUGS:
        expected, found = reference_gpt(hf, vocab, slug), answer(slug).value
        if slug == "transformer-temperature":
            assert found == pytest.approx(expected, rel=1e-4)
        else:
            assert found == expected, slug
        if weights == "noisy":
            assert found != shipped[slug], slug
    options = get("transformer-gpt-next").setup(None).options
    assert reference_gpt(hf, vocab, "transformer-gpt-next") in options and len(options) == 4


# ----------------------------------------------------------------------------------------------------------------
# char-BERT: transformers' BertForMaskedLM on the same file, captum


@pytest.fixture(scope="module")
def char_bert_folders(tmp_path_factory):
    return {"shipped": mlm_char.CHAR_BERT_ASSETS,
            "noisy": noisy_copy(mlm_char.CHAR_BERT_ASSETS, tmp_path_factory.mktemp("char_bert"), seed=4, scale=0.6)}


def reference_char_bert(folder, slug):
    import transformers
    from captum.attr import IntegratedGradients

    from core.checks import mlm as m

    model = transformers.BertForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    tokens = mlm_char.load_char_bert(folder, "cpu").tokenizer.tokens
    index = {token: i for i, token in enumerate(tokens)}
    first = mlm_char.FIRST_CHAR_ID

    def encode(text, blank, length):
        start = text.index(blank)
        ids = [index["[CLS]"], *(index.get(c, index["[UNK]"]) for c in text[:start]), *[index["[MASK]"]] * length,
               *(index.get(c, index["[UNK]"]) for c in text[start + len(blank):]), index["[SEP]"]]
        return torch.tensor([ids]), start + 1

    if slug in ("mlm-char-fill", "mlm-char-why"):
        ids, position = encode(m.FILL_TEXT, "_", 1)
        with torch.no_grad():
            probs = model(ids).logits[0, position].softmax(-1)
        target = first + int(probs[first:].argmax())
        if slug == "mlm-char-fill":
            return tokens[target]
        x = model.bert.embeddings.word_embeddings(ids[0]).detach()

        def forward(embeds):
            return model(inputs_embeds=embeds).logits[:, position].softmax(-1)[:, target]

        ig = IntegratedGradients(forward).attribute(x[None], baselines=torch.zeros_like(x)[None], n_steps=STEPS,
                                                    method="gausslegendre")[0]
        return int(ig.sum(-1).argmax())
    word = "bad"
    text = m.SIDES_TEXT.replace(f"[{word}]", "_" * len(word))
    scores = {}
    for side, read in (("both", text), ("left", text[:text.index("_") + len(word)])):
        ids, start = encode(read, "_" * len(word), len(word))
        log_p = 0.0
        for offset, char in enumerate(word):
            with torch.no_grad():
                probs = model(ids).logits[0, start + offset].softmax(-1)
            log_p += math.log(float(probs[index[char]]))
            ids[0, start + offset] = index[char]
        scores[side] = math.exp(log_p / len(word))
    return max(scores, key=scores.get), scores


@pytest.mark.parametrize("weights", ["shipped", "noisy"])
def test_char_bert_checks_equal_transformers(weights, char_bert_folders, monkeypatch):
    folder = char_bert_folders[weights]
    shipped = {slug: answer(slug).value for slug in ("mlm-char-fill", "mlm-char-why", "mlm-sides")}
    if weights == "noisy":
        loaded = mlm_char.load_char_bert(folder)
        monkeypatch.setattr(mlm_char, "shipped_char_bert", lambda: loaded)
    assert answer("mlm-char-fill").value == reference_char_bert(folder, "mlm-char-fill")
    assert answer("mlm-char-why").value == reference_char_bert(folder, "mlm-char-why")
    best, scores = reference_char_bert(folder, "mlm-sides")
    found = answer("mlm-sides")
    assert found.value == best and dict(found.scores) == pytest.approx(scores, rel=1e-4)
    if weights == "noisy":
        assert all(answer(slug).value != value for slug, value in shipped.items())


# ----------------------------------------------------------------------------------------------------------------
# The ladder: add-one counts by hand, torch cells, transformers' GPT-2 on the char-GPT's file


@pytest.fixture(scope="module")
def train_text():
    return ladder.training_split()[0]


def occurrences(train, gram):
    """How often ``gram`` occurs in the text, overlaps included."""
    return sum(1 for _ in re.finditer(f"(?={re.escape(gram)})", train))


def hand_add_one_bits(train, text, n):
    """Mean −log2 (count(h c) + 1) / (count(h •) + |V|) over characters 2..T, h the up to n − 1 characters before."""
    V, bits = len(set(train)), []
    for i in range(1, len(text)):
        h = text[max(0, i - n + 1):i]
        context = occurrences(train[:-1], h) if h else len(train)  # h followed by a character
        bits.append(-math.log2((occurrences(train, h + text[i]) + 1) / (context + V)))
    return float(np.mean(bits))


def recurrent_bits(model, vocab, text):
    ids = torch.tensor([vocab.encode(text)[0]], device=model.head.weight.device)
    with torch.no_grad():
        hs, _ = run_cells(model, ids)
        logp = torch.stack([model.head(h)[0] for h in hs[:-1]]).log_softmax(-1)  # (T-1, V)
    return float(-logp[torch.arange(len(text) - 1), ids[0, 1:]].mean() / math.log(2))


def gpt_bits(hf_folder, vocab, text):
    import transformers

    model = transformers.GPT2LMHeadModel.from_pretrained(str(hf_folder), attn_implementation="eager").eval()
    ids = torch.tensor([vocab.encode(text)[0]])
    with torch.no_grad():
        logp = model(ids).logits[0, :-1].log_softmax(-1)
    return float(-logp[torch.arange(len(text) - 1), ids[0, 1:]].mean() / math.log(2))


@pytest.mark.slow
@pytest.mark.parametrize("weights", ["shipped", "noisy"])
def test_ladder_checks_equal_counts_cells_and_transformers(weights, train_text, gpt_folders, noisy_rnn_models,
                                                           monkeypatch):
    from core.checks import overview

    shipped_bits = answer("overview-gpt-bits").value
    if weights == "noisy":  # other RNN, LSTM and char-GPT weights; the n-gram rungs keep their counts
        loaded = gpt.load_char_gpt(gpt_folders["noisy"][0])
        monkeypatch.setattr(gpt, "shipped_char_gpt", lambda: loaded)
        monkeypatch.setattr(lstm, "shipped_models", lambda: noisy_rnn_models)
        rungs = tuple(r for r in ladder.rungs() if r.key.startswith("ngram")) + tuple(
            ladder.recurrent_rungs() + ladder.gpt_rungs())
        monkeypatch.setattr(ladder, "rungs", lambda: rungs)
    models, hf = lstm.shipped_models(), gpt_folders[weights][1]
    text = ladder.prepare(overview.TEXT)
    bits = {"ngram-1-add_k": hand_add_one_bits(train_text, text, 1),
            "ngram-2-add_k": hand_add_one_bits(train_text, text, 2),
            "ngram-3-add_k": hand_add_one_bits(train_text, text, 3),
            "rnn": recurrent_bits(models.rnn, models.vocab, text), "lstm": recurrent_bits(models.lstm, models.vocab, text),
            "gpt": gpt_bits(hf, gpt.shipped_char_gpt()[1], text)}
    found = answer("overview-ladder-best")
    assert dict(found.scores) == pytest.approx({k: bits[k] for k in overview.BEST}, rel=1e-4)
    assert found.value == min(overview.BEST, key=bits.get)
    assert answer("overview-ladder-order").value == tuple(sorted(overview.ORDER, key=bits.get))
    assert answer("overview-gpt-bits").value == pytest.approx(bits["gpt"], rel=1e-4)
    assert (answer("overview-gpt-bits").value != shipped_bits) == (weights == "noisy")


def test_every_offline_check_is_answered_here():
    """The Hub checks are tests/test_checks_hub.py; every other check has a reference above."""
    hub = {"mlm-hub-fill", "ner-bio", "ner-iobes", "ner-entities", "qa-start", "qa-end", "qa-why", "classify-class",
           "classify-why", "classify-finetune"}
    here = {"ngram-cixing", "ngram-add-one", "ngram-perplexity", "ngram-char", "embeddings-neighbour",
            "embeddings-analogy", "embeddings-order", *LSTM_SLUGS, "attention-it", "attention-causal",
            "attention-thinking", "transformer-bert-params", "transformer-base-params", *GPT_SLUGS, "mlm-char-fill",
            "mlm-char-why", "mlm-sides", "overview-ladder-best", "overview-ladder-order", "overview-gpt-bits"}
    assert here | hub == set(CHECKS) and not here & hub
