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
