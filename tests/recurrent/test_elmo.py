"""core/recurrent/elmo.py and core/nets/elmo.py: ELMo's three layers per word (§7), the weighted sum, the shipped checkpoint."""
import json
import math

import pytest
import torch

from core.recurrent import elmo
from core.text.errors import UserInputError
from core.text.i18n import using_language
from core.nets.elmo import ElmoBiLM


@pytest.fixture(scope="module")
def shipped():
    return elmo.shipped_model()


def test_weighted_sum_equals_gamma_times_softmax_weighted_layers_computed_by_hand():
    layers = torch.randn(3, 5, 8, dtype=torch.float64)  # (J, T, 2D)
    weights, gamma = [0.5, -1.0, 2.0], 1.7
    mixed, s = elmo.scalar_mix(layers, weights, gamma)
    z = sum(math.exp(w) for w in weights)
    by_hand = [math.exp(w) / z for w in weights]
    assert s.tolist() == pytest.approx(by_hand, abs=1e-12)
    expected = gamma * (by_hand[0] * layers[0] + by_hand[1] * layers[1] + by_hand[2] * layers[2])
    torch.testing.assert_close(mixed, expected)


def test_the_shipped_checkpoint_loads_strictly_with_two_layers_per_direction(shipped):
    model, vocab, info = shipped
    assert len(model.forward_lstms) == len(model.backward_lstms) == 2
    assert model.config["num_layers"] == 2 and len(vocab.words) == model.config["vocab_size"]
    from safetensors.torch import load_file

    stored = load_file(str(elmo.ELMO_ASSETS / "elmo.safetensors"))
    assert set(stored) == set(model.state_dict())  # every stored tensor is used, none is missing
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor.cpu(), stored[name])


def test_a_checkpoint_with_a_missing_or_extra_tensor_is_refused(tmp_path):
    model = ElmoBiLM(n_chars=10, vocab_size=12, size=8)
    vocab = elmo.ElmoVocab(["<pad>", "<unk>", "<w>", "</w>", "a", "b", "c", "d", "e", "f"], ["<unk>"] + list("bcdefghijkl"))
    elmo.save_model(model, vocab, {}, tmp_path)
    elmo.load_model(tmp_path)  # the round trip works
    from safetensors.torch import load_file, save_file

    state = load_file(str(tmp_path / "elmo.safetensors"))
    state.pop("backward_lstms.1.weight_hh_l0")
    save_file(state, str(tmp_path / "elmo.safetensors"))
    with pytest.raises(RuntimeError, match="Missing key"):
        elmo.load_model(tmp_path)


def test_layer_zero_is_the_word_alone_and_each_direction_reads_only_its_side(shipped):
    model, vocab, _ = shipped
    a, tokens_a, k = elmo.word_layers(model, vocab, "the bank of the river", "bank")
    b, tokens_b, _ = elmo.word_layers(model, vocab, "the bank of the money", "bank")
    D = model.config["size"]
    assert k == 1 and tokens_a[k] == "bank"
    torch.testing.assert_close(a[0], b[0])  # h^(0): no context at all
    torch.testing.assert_close(a[0, :D], a[0, D:])  # [x; x]
    for layer in (1, 2):  # only the last word differs: forward halves agree, backward halves do not
        torch.testing.assert_close(a[layer, :D], b[layer, :D])
        assert not torch.allclose(a[layer, D:], b[layer, D:])


def test_held_out_losses_in_the_config_are_the_shipped_models_own(shipped):
    model, vocab, info = shipped
    config = json.loads((elmo.ELMO_ASSETS / "config.json").read_text(encoding="utf-8"))
    from core.text.corpora import load_corpus

    _, held = elmo.split_tokens(elmo.words(load_corpus("moby_dick")))
    fwd, bwd = elmo.evaluate(model, *elmo.corpus_tensors(held, vocab))
    assert config["info"]["held_out_loss_nats"] == {"forward": pytest.approx(fwd, abs=2e-3),
                                                    "backward": pytest.approx(bwd, abs=2e-3)}
    assert fwd < math.log(len(vocab.words)) - 1  # far better than guessing among the softmax words


def test_bad_input_is_named_in_both_languages(shipped):
    model, vocab, _ = shipped
    with pytest.raises(UserInputError, match="“bank” does not occur"):
        elmo.word_layers(model, vocab, "the river flows", "bank")
    with using_language("zh"), pytest.raises(UserInputError, match="没有作为一个词出现"):
        elmo.word_layers(model, vocab, "the river flows", "bank")
    with pytest.raises(UserInputError, match="more than one word"):
        elmo.word_layers(model, vocab, "the bank", "river bank")
    with pytest.raises(UserInputError, match="at most 60"):
        elmo.word_layers(model, vocab, "bank " * 61, "bank")
    with pytest.raises(UserInputError, match="finite"):
        elmo.compare_layers(model, vocab, "bank", "a bank", "the bank", [0, float("nan"), 0], 1.0)


# ----------------------------------------------------------------------------------------------------------------
# The vocabulary's thresholds, the input checks that come before the model, and the training loop, on tiny data

TOY_TEXT = "the cat sat on the mat . the dog ran to the log . a cat and a dog sat on a mat . "


def _toy_model_and_data(repeats: int = 20, size: int = 16):
    tokens = elmo.words(TOY_TEXT * repeats)
    vocab = elmo.ElmoVocab.build(tokens, min_word_count=1, min_char_count=1)
    torch.manual_seed(0)
    model = ElmoBiLM(n_chars=len(vocab.chars), vocab_size=len(vocab.words), size=size, dropout=0.0)
    return model, vocab, tokens


def test_the_vocabulary_keeps_the_words_and_characters_counted_often_enough():
    from collections import Counter

    tokens = ["whale"] * 6 + ["ship"] * 5 + ["sea"] * 4 + ["ahab"] * 1 + ["ox"] * 7
    vocab = elmo.ElmoVocab.build(tokens, min_word_count=5, min_char_count=12)
    word_counts, char_counts = Counter(tokens), Counter("".join(tokens))
    assert vocab.words == ["<unk>"] + sorted(w for w, n in word_counts.items() if n >= 5)
    assert vocab.words[1:] == ["ox", "ship", "whale"]
    assert vocab.chars[:4] == ["<pad>", "<unk>", "<w>", "</w>"]
    assert vocab.chars[4:] == sorted(c for c, n in char_counts.items() if n >= 12)
    assert vocab.chars[4:] == ["a", "h"]  # a: 6 + 4 + 2 = 12, h: 6 + 5 + 2 = 13; e (10) and the rest fall short
    assert vocab.encode_words(["sea", "whale"]).tolist() == [0, vocab.words.index("whale")]  # sea: 4 < 5
    ids = vocab.char_ids("hoax")  # o and x fall short: the unknown character, id 1
    assert ids == [2, 5, 1, 4, 1, 3] + [0] * (elmo.MAX_WORD_CHARS - 4)


def test_an_empty_sentence_or_word_and_a_wrong_number_of_weights_are_refused_before_the_model_runs():
    model, vocab, _ = _toy_model_and_data(repeats=1)
    with pytest.raises(UserInputError, match="Type the word to compare") as raised:
        elmo.word_layers(model, vocab, "the cat sat", "   ")
    assert raised.value.key == "elmo.no_word"
    with pytest.raises(UserInputError, match="A sentence is empty") as raised:
        elmo.word_layers(model, vocab, "   ", "cat")
    assert raised.value.key == "elmo.empty_sentence"
    with pytest.raises(ValueError, match="one weight per layer"):
        elmo.compare_layers(model, vocab, "cat", "the cat", "a cat", [0.0, 1.0], 1.0)


def test_training_starts_the_softmax_bias_at_the_add_one_log_unigram_frequencies():
    """With lr = 0 the one Adam step changes nothing, so the bias is what training set before its first step."""
    model, vocab, tokens = _toy_model_and_data()
    chars, targets = elmo.corpus_tensors(tokens, vocab)
    steps = list(elmo.train_steps(model, chars, targets, steps=1, batch_size=2, seq_len=8, lr=0.0))
    assert [s for s, _, _ in steps] == [1]
    counts = [1 + sum(1 for t in tokens if vocab.word_index.get(t, 0) == i) for i in range(len(vocab.words))]
    expected = torch.tensor([math.log(n / sum(counts)) for n in counts])
    torch.testing.assert_close(model.head.bias.detach(), expected)
    assert not model.training  # back in eval mode once the steps are done


def test_the_learning_rate_follows_a_cosine_from_lr_down_towards_a_tenth(monkeypatch):
    real_adam, seen = torch.optim.Adam, []

    class RecordingAdam(real_adam):
        def step(self, closure=None):
            seen.append(self.param_groups[0]["lr"])
            return super().step(closure)

    monkeypatch.setattr(torch.optim, "Adam", RecordingAdam)
    model, vocab, tokens = _toy_model_and_data(repeats=2, size=8)
    chars, targets = elmo.corpus_tensors(tokens, vocab)
    lr, steps = 0.01, 4
    for _ in elmo.train_steps(model, chars, targets, steps=steps, batch_size=2, seq_len=6, lr=lr):
        pass
    low = lr / 10
    expected = [low + (lr - low) * (1 + math.cos(math.pi * k / steps)) / 2 for k in range(steps)]
    assert seen == pytest.approx(expected, rel=1e-12)
    assert seen[0] == pytest.approx(lr) and seen[2] == pytest.approx(0.55 * lr)


def test_a_few_training_steps_lower_the_loss_on_a_tiny_repetitive_corpus(one_torch_thread):
    """Both directions' held-out losses fall after 30 steps, and the last steps' training loss is below the first's."""
    model, vocab, tokens = _toy_model_and_data()
    train, held = elmo.split_tokens(tokens, held_out=0.2)
    held_tensors = elmo.corpus_tensors(held, vocab)
    before = elmo.evaluate(model, *held_tensors, seq_len=20)
    history = list(elmo.train_steps(model, *elmo.corpus_tensors(train, vocab), steps=30, batch_size=8, seq_len=12,
                                    lr=1e-2))
    after = elmo.evaluate(model, *held_tensors, seq_len=20)
    assert [s for s, _, _ in history] == list(range(1, 31))
    first, last = history[0], history[-5:]
    assert sum(f for _, f, _ in last) / 5 < first[1] and sum(b for _, _, b in last) / 5 < first[2]
    assert after[0] < before[0] - 0.3 and after[1] < before[1] - 0.3
