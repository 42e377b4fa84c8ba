"""core/recurrent/lstm.py and core/nets/recurrent.py: parity with torch.nn.LSTM / torch.nn.RNN, BPTT gradients, sampling, ELMo vectors, checkpoints."""
import math

import numpy as np
import pytest
import torch

from core.recurrent import lstm
from core.nets.recurrent import GATES
from core.text.errors import UserInputError
from core.text.sampling import Settings

CORPUS = "the cat sat on the mat. the dog sat on the log. a cat and a dog. " * 40


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def vocab():
    return lstm.Vocab.build(CORPUS, "char", min_count=1)


def random_lm(kind, vocab_size=12, embed=5, hidden=7, seed=0):
    torch.manual_seed(seed)
    model = lstm.RecurrentLM(kind, vocab_size, embed, hidden)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.6, 0.6)  # larger than the default init so the nonlinearities are exercised
    return model.eval()


def torch_reference(model):
    """torch.nn.LSTM / torch.nn.RNN holding our weights: U → weight_ih, W → weight_hh, b → bias_ih, bias_hh = 0."""
    cell = model.cell
    cls = torch.nn.LSTM if model.kind == "lstm" else torch.nn.RNN
    ref = cls(cell.U.in_features, cell.hidden_size, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(cell.U.weight)
        ref.weight_hh_l0.copy_(cell.W.weight)
        ref.bias_ih_l0.copy_(cell.U.bias)
        ref.bias_hh_l0.zero_()
    return ref


def test_lstm_matches_torch_nn_lstm():
    model = random_lm("lstm")
    ids = torch.randint(0, 12, (3, 9), generator=torch.Generator().manual_seed(1))
    h0, c0 = torch.randn(3, 7), torch.randn(3, 7)
    with torch.no_grad():
        ours = model(ids, (h0, c0))
        ref_out, (ref_h, ref_c) = torch_reference(model)(model.embed(ids), (h0[None], c0[None]))
    torch.testing.assert_close(ours.gates["hidden"], ref_out, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.state[0], ref_h[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.gates["cell"][:, -1], ref_c[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.logits, model.head(ref_out), atol=1e-5, rtol=0)


def test_lstm_gates_follow_the_equations_stepwise():
    """Each step's C_t and h_t equal torch.nn.LSTMCell's on the previous step's state (gate order i, f, g, o)."""
    model = random_lm("lstm")
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        trace = model(ids)
        ref = torch.nn.LSTMCell(5, 7)
        ref.load_state_dict({"weight_ih": model.cell.U.weight, "weight_hh": model.cell.W.weight,
                             "bias_ih": model.cell.U.bias, "bias_hh": torch.zeros(28)})
        x = model.embed(ids)[0]
        h = c = torch.zeros(1, 7)
        for t in range(ids.shape[1]):
            z = x[t:t + 1] @ model.cell.U.weight.T + model.cell.U.bias + h @ model.cell.W.weight.T
            f = torch.sigmoid(z[:, 7:14])
            h, c = ref(x[t:t + 1], (h, c))
            torch.testing.assert_close(trace.gates["forget"][:, t], f, atol=1e-6, rtol=0)
            torch.testing.assert_close(trace.gates["cell"][:, t], c, atol=1e-5, rtol=0)
            torch.testing.assert_close(trace.gates["hidden"][:, t], h, atol=1e-5, rtol=0)
    for name in ("input", "forget", "output"):
        assert 0 < trace.gates[name].min() and trace.gates[name].max() < 1
    assert trace.gates["candidate"].abs().max() < 1


def test_fused_forward_equals_the_step_by_step_forward():
    """forward_fused (torch's fused cell kernels, gates recomputed for all steps at once) gives forward()'s numbers."""
    ids = torch.randint(0, 12, (2, 11), generator=torch.Generator().manual_seed(3))
    for kind in ("rnn", "lstm"):
        model = random_lm(kind)
        with torch.no_grad():
            stepwise = model(ids)
        fused = model.forward_fused(ids)
        torch.testing.assert_close(fused.logits, stepwise.logits, atol=1e-5, rtol=0)
        torch.testing.assert_close(fused.hidden, torch.stack(stepwise.hs, 1), atol=1e-5, rtol=0)
        assert fused.gates.keys() == stepwise.gates.keys()
        for name in fused.gates:
            torch.testing.assert_close(fused.gates[name], stepwise.gates[name], atol=1e-5, rtol=0)
        assert (set(GATES) == set(fused.gates)) == (kind == "lstm")


def test_fused_gates_of_long_texts_and_the_logits_only_pass():
    """A batch of long texts (the tab's length, several rows): every gate and the last cell state equal the
    step-by-step numbers; so do the logits of the ladder's pass without gates."""
    ids = torch.randint(0, 12, (3, 150), generator=torch.Generator().manual_seed(5))
    model = random_lm("lstm", seed=6)
    with torch.no_grad():
        stepwise = model(ids)
    fused = model.forward_fused(ids)
    for name in GATES:
        torch.testing.assert_close(fused.gates[name], stepwise.gates[name], atol=1e-5, rtol=0)
    torch.testing.assert_close(fused.state[1], stepwise.state[1], atol=1e-5, rtol=0)
    logits_only = model.forward_fused(ids, keep_gates=False)
    assert not logits_only.gates
    torch.testing.assert_close(logits_only.logits, stepwise.logits, atol=1e-5, rtol=0)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="the workspace is oneDNN's")
@pytest.mark.parametrize("batch, steps, hidden", [(1, 40, 7), (3, 25, 16), (2, 9, 64)])  # 4H = 256: padded rows
def test_gates_and_cells_come_from_the_kernels_workspace(monkeypatch, batch, steps, hidden):
    """On the CPU nothing is recomputed: with the scan and the recovery disabled, every gate and C_t still equals
    the step-by-step forward pass (so torch's oneDNN still lays its workspace out as workspace_cells reads it)."""
    from core.nets import recurrent

    def refused(*args):
        raise AssertionError("recomputed instead of read from the workspace")

    monkeypatch.setattr(recurrent, "cell_scan", refused)
    monkeypatch.setattr(recurrent.RecurrentLM, "recover_gates", refused)
    model = random_lm("lstm", embed=5, hidden=hidden, seed=batch)
    ids = torch.randint(0, 12, (batch, steps), generator=torch.Generator().manual_seed(steps))
    with torch.no_grad():
        stepwise = model(ids)
    fused = model.forward_fused(ids)
    for name in GATES:
        torch.testing.assert_close(fused.gates[name], stepwise.gates[name], atol=1e-5, rtol=0)


def test_a_misread_workspace_is_caught_and_the_gates_recovered(monkeypatch):
    """A wrong row length (another oneDNN's layout) fails the checks against the kernel's own C_T and h_T; the
    gates are then recomputed from the inputs and h_t, and still equal the step-by-step numbers."""
    from core.nets import recurrent

    monkeypatch.setattr(recurrent, "good_ld", lambda n: n + 16)
    recovered = []
    recover = recurrent.RecurrentLM.recover_gates
    monkeypatch.setattr(recurrent.RecurrentLM, "recover_gates",
                        lambda self, x, hidden: recovered.append(1) or recover(self, x, hidden))
    model = random_lm("lstm", seed=4)
    ids = torch.randint(0, 12, (2, 30), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        stepwise = model(ids)
    fused = model.forward_fused(ids)
    assert recovered == [1]
    for name in GATES:
        torch.testing.assert_close(fused.gates[name], stepwise.gates[name], atol=1e-5, rtol=0)


def test_rnn_matches_torch_nn_rnn():
    model = random_lm("rnn")
    ids = torch.randint(0, 12, (2, 11), generator=torch.Generator().manual_seed(2))
    h0 = torch.randn(2, 7)
    with torch.no_grad():
        ours = model(ids, h0)
        ref_out, ref_h = torch_reference(model)(model.embed(ids), h0[None])
    torch.testing.assert_close(torch.stack(ours.hs, 1), ref_out, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours.state, ref_h[0], atol=1e-5, rtol=0)


def test_rnn_gradient_norms_match_hand_written_bptt():
    """§6.2: ∂L/∂h_{t-1} = Wᵀ (tanh′(z_t) ⊙ ∂L/∂h_t), starting from headᵀ (softmax − onehot) at t = T."""
    model = random_lm("rnn", seed=3)
    windows = torch.randint(0, 12, (4, 13), generator=torch.Generator().manual_seed(4))
    ours = lstm.gradient_norms(model, windows)
    with torch.no_grad():
        W, head = model.cell.W.weight.numpy(), model.head.weight.numpy()
        norms = []
        for row in windows:
            hs = torch.stack(model(row[None, :-1]).hs, 1)[0].numpy().astype(np.float64)  # (T, H)
            p = torch.softmax(model(row[None, :-1]).logits[0, -1].double(), -1).numpy()
            p[row[-1]] -= 1
            g = head.T.astype(np.float64) @ p / len(windows) * len(windows)  # per-window loss (mean over 1 item)
            per_distance = [np.linalg.norm(g)]
            for t in range(hs.shape[0] - 1, 0, -1):
                g = W.T @ ((1 - hs[t] ** 2) * g)
                per_distance.append(np.linalg.norm(g))
            norms.append(per_distance)
    # gradient_norms uses the batch-mean loss, so each window's gradient carries a 1/B factor
    np.testing.assert_allclose(ours, np.mean(norms, axis=0) / len(windows), rtol=1e-4)


def test_forget_products_are_cumulative_products_from_the_end():
    model = random_lm("lstm")
    ids = [1, 2, 3, 4, 5, 6]
    prods = np.array(lstm.forget_products(model, ids))
    with torch.no_grad():
        f = model(torch.tensor([ids])).gates["forget"][0].numpy()
    T = len(ids)
    for d in range(T):
        np.testing.assert_allclose(prods[d], np.prod(f[T - d:], axis=0), rtol=1e-5)


def test_vocab_unknown_and_word_level(vocab):
    ids, tokens, unknown = vocab.encode("the  cat\nZé")
    assert tokens == list("the cat Zé") and unknown == ["Z", "é"]
    assert ids[-2:] == [0, 0] and vocab.decode(ids[:7]) == "the cat"
    words = lstm.Vocab.build(CORPUS, "word", min_count=1)
    ids, tokens, unknown = words.encode("The cat ate")
    assert tokens == ["the", "cat", "ate"] and unknown == ["ate"]
    assert words.decode(ids[:2]) == "the cat"


def test_bad_input_is_refused(vocab):
    model = lstm.RecurrentLM("lstm", len(vocab))
    with pytest.raises(UserInputError, match="empty"):
        lstm.generate(model, vocab, "   ", 5)
    with pytest.raises(UserInputError, match="limit"):
        lstm.encode_prompt(vocab, "a" * (lstm.MAX_PROMPT_CHARS + 1))
    with pytest.raises(UserInputError, match="Length"):
        lstm.generate(model, vocab, "the", lstm.MAX_GENERATE + 1)
    with pytest.raises(UserInputError, match="temperature"):
        lstm.generate(model, vocab, "the", 5, Settings(temperature=-0.1))
    with pytest.raises(UserInputError, match="top-p"):
        lstm.generate(model, vocab, "the", 5, Settings(top_p=2))


def test_generation_is_seeded_and_equals_torch_lstm_sampling(vocab):
    model = random_lm("lstm", vocab_size=len(vocab))
    out = lstm.generate(model, vocab, "the cat", 40, Settings(0.7, seed=5))
    assert out == lstm.generate(model, vocab, "the cat", 40, Settings(0.7, seed=5))
    assert len(out) == 40 and out != lstm.generate(model, vocab, "the cat", 40, Settings(0.7, seed=6))
    # the same sampling loop on torch.nn.LSTM with the same weights and seed gives the same text
    ref, gen = torch_reference(model), torch.Generator().manual_seed(5)
    with torch.no_grad():
        x = model.embed(torch.tensor([vocab.encode("the cat")[0]]))
        y, state = ref(x)
        picked = []
        for _ in range(40):
            logits = model.head(y[0, -1])
            logits[0] = -math.inf  # <unk> is never sampled
            nxt = torch.multinomial((logits / 0.7).softmax(-1), 1, generator=gen)
            picked.append(int(nxt))
            y, state = ref(model.embed(nxt.view(1, 1)), state)
    assert out == vocab.decode(picked)


def test_training_lowers_the_loss_and_checkpoints_round_trip(vocab, tmp_path):
    losses = {"rnn": [], "lstm": []}
    for step, rnn_loss, lstm_loss, models in lstm.train_pair(vocab, CORPUS, steps=60, seq_len=24, batch_size=16,
                                                            lr=1e-2):
        losses["rnn"].append(rnn_loss)
        losses["lstm"].append(lstm_loss)
    uniform = math.log(len(vocab))
    for name, values in losses.items():
        assert values[0] > 0.9 * uniform and np.mean(values[-10:]) < 0.6 * uniform, name
    models.lstm_backward = models.lstm
    lstm.save_models(models, tmp_path)
    loaded = lstm.load_models(tmp_path)
    assert loaded.vocab.tokens == vocab.tokens
    ids = torch.tensor([vocab.encode("the dog sat")[0]])
    with torch.no_grad():
        for name in ("rnn", "lstm", "lstm_backward"):
            torch.testing.assert_close(getattr(loaded, name)(ids).logits, getattr(models, name)(ids).logits)
    held = lstm.corpus_ids(CORPUS[:500], vocab)
    assert lstm.evaluate(models.lstm, held, seq_len=50) < 0.6 * uniform


def test_context_vectors_concatenate_forward_and_backward_states(vocab):
    fwd, bwd = random_lm("lstm", len(vocab), seed=1), random_lm("lstm", len(vocab), seed=2)
    models = lstm.ModelSet(vocab, random_lm("rnn", len(vocab)), fwd, bwd)
    v = lstm.context_vector(models, "a cat sat on the mat", "Cat")
    assert v.span == (2, 5) and v.both.shape == (14,)
    ids = torch.tensor([vocab.encode("a cat sat on the mat")[0]])
    with torch.no_grad():
        torch.testing.assert_close(v.forward, fwd(ids[:, :5]).state[0][0])  # read "a cat"
        torch.testing.assert_close(v.backward, bwd(ids[:, 2:].flip(1)).state[0][0])  # read "tam eht no tas tac"
        alone = ids[:, 2:5]  # "cat"
        torch.testing.assert_close(v.static, torch.cat([fwd(alone).state[0][0], bwd(alone.flip(1)).state[0][0]]))
    torch.testing.assert_close(v.context, v.both - v.static)
    same = lstm.context_vector(models, "a cat sat on the mat", "cat")
    assert lstm.cosine(v.both, same.both) == pytest.approx(1.0)
    with pytest.raises(UserInputError, match="does not occur"):
        lstm.context_vector(models, "a cat sat", "ca")


def test_shipped_checkpoints_load_and_show_vanishing_gradients():
    models = lstm.shipped_models()
    assert models.vocab.level == "char" and models.lstm_backward is not None
    for name in ("rnn", "lstm", "lstm_backward"):
        assert models.info[name]["held_out_loss_nats"] < 2.0  # uniform over 77 characters would be 4.34
    windows = lstm.corpus_windows(models.vocab, 60, count=8)
    decay = {name: np.array(lstm.gradient_norms(getattr(models, name), windows)) for name in ("rnn", "lstm")}
    # relative gradient 40 steps back: the RNN's has fallen much further than the LSTM's
    rel = {name: d[40] / d[0] for name, d in decay.items()}
    assert rel["rnn"] < 0.01 * rel["lstm"], rel


def test_shipped_elmo_pair_separates_word_senses():
    """In each preset, sentences 1 and 3 use the word in the same sense: their context parts are the most alike."""
    from demo.recurrent.lstm import ELMO_EXAMPLES

    models = lstm.shipped_models()
    for word, *sentences in ELMO_EXAMPLES:
        a, b, c = (lstm.context_vector(models, s, word).context for s in sentences)
        assert lstm.cosine(a, c) > max(lstm.cosine(a, b), lstm.cosine(b, c)), word
