"""The trained networks' checks (issue #51) against independent computations, on the shipped weights and on noisy
ones read back through the app's own loaders (every answer must move with them): RNN & LSTM (torch.nn.RNNCell /
LSTMCell / LSTM holding the shipped weights, captum), the char-GPT (transformers' GPT2LMHeadModel reading the same
file, TopPLogitsWarper, captum), the char-BERT (transformers' BertForMaskedLM, captum) and the Overview's ladder
(add-one counts by hand, the cells, GPT2LMHeadModel)."""
import math
import re
import shutil

import numpy as np
import pytest
import torch

from core.transformer import gpt
from core.ladder import ladder
from core.recurrent import lstm
from core.mlm import char as mlm_char
from core.checks import get
from tests.checks_reference import STEPS, answer, noisy_copy

pytestmark = pytest.mark.usefixtures("one_torch_thread")

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


def run_cells(model, ids):
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

    if slug in ("lstm-next-char", "lstm-rnn-next-char"):
        model = models.lstm if slug == "lstm-next-char" else models.rnn
        ids = torch.tensor([vocab.encode(lstm_checks.NEXT)[0]])
        with torch.no_grad():
            hs, _ = run_cells(model, ids.to(model.head.weight.device))
            probs = model.head(hs[-1]).softmax(-1)[0]
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


LSTM_SLUGS = ["lstm-gradient", "lstm-next-char", "lstm-rnn-next-char", "lstm-forget", "lstm-why"]


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
# char-GPT: transformers' GPT2LMHeadModel on the same file, TopPLogitsWarper, captum


@pytest.fixture(scope="module")
def gpt_folders(tmp_path_factory):
    """(our folder, transformers' folder) for the shipped weights and for noisy ones."""
    folders = {}
    for name, source in (("shipped", gpt.GPT_ASSETS),
                         ("noisy", noisy_copy(gpt.GPT_ASSETS, tmp_path_factory.mktemp("gpt_noisy"), 5, scale=0.3))):
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
def ngram_bits():
    """The add-one rungs' bits/char on the check's text, counted by hand once (they do not depend on any weights)."""
    from core.checks import overview

    train, text = ladder.training_split()[0], ladder.prepare(overview.TEXT)
    return {f"ngram-{n}-add_k": hand_add_one_bits(train, text, n) for n in (1, 2, 3)}


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
def test_ladder_checks_equal_counts_cells_and_transformers(weights, ngram_bits, gpt_folders, noisy_rnn_models,
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
    bits = {**ngram_bits, "rnn": recurrent_bits(models.rnn, models.vocab, text),
            "lstm": recurrent_bits(models.lstm, models.vocab, text),
            "gpt": gpt_bits(hf, gpt.shipped_char_gpt()[1], text)}
    found = answer("overview-ladder-best")
    assert dict(found.scores) == pytest.approx({k: bits[k] for k in overview.BEST}, rel=1e-4)
    assert found.value == min(overview.BEST, key=bits.get)
    assert answer("overview-ladder-order").value == tuple(sorted(overview.ORDER, key=bits.get))
    assert answer("overview-gpt-bits").value == pytest.approx(bits["gpt"], rel=1e-4)
    assert (answer("overview-gpt-bits").value != shipped_bits) == (weights == "noisy")


NETWORKS = {*LSTM_SLUGS, *GPT_SLUGS, "mlm-char-fill", "mlm-char-why", "mlm-sides", "overview-ladder-best",
            "overview-ladder-order", "overview-gpt-bits"}
