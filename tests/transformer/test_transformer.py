"""Inside a Transformer block: the walk-through against transformers' own forward pass (hooks on every LayerNorm),
and the parameter counts against torch.nn.Transformer and transformers' BertModel."""
import math

import numpy as np
import pytest
import torch

from core.transformer import param_count as pc
from core.transformer import transformer as tr
from core.loading import resolve
from core.loading.checkpoints import MINILM_ID
from core.text.errors import UserInputError

TOL = 1e-5
SENTENCE = "The bank raised interest rates, so we walked along the river bank."


def reference_layer_norms(model, text_ids: list[int]) -> dict[str, np.ndarray]:
    """Every LayerNorm output of a transformers model, caught with forward hooks: (T, H) each."""
    caught: dict[str, np.ndarray] = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LayerNorm):
            def hook(_module, _inputs, output, name=name):
                caught[name] = output[0].detach().numpy().copy()
            handles.append(module.register_forward_hook(hook))
    try:
        with torch.no_grad():
            out = model(torch.tensor([text_ids]), output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    caught["last_hidden_state"] = out.last_hidden_state[0].numpy()
    caught["attentions"] = np.stack([a[0].numpy() for a in out.attentions])  # (L, A, T, T)
    return caught


def ln_names(model_type: str, layers: int) -> dict[tuple[int, str], str]:
    """Which transformers module each of our LayerNorm steps must equal."""
    if model_type == "distilbert":
        names = {(0, "ln"): "embeddings.LayerNorm"}
        for i in range(layers):
            names[(i + 1, "ln1")] = f"transformer.layer.{i}.sa_layer_norm"
            names[(i + 1, "ln2")] = f"transformer.layer.{i}.output_layer_norm"
        return names
    names = {(0, "ln"): "embeddings.LayerNorm"}
    for i in range(layers):
        names[(i + 1, "ln1")] = f"encoder.layer.{i}.attention.output.LayerNorm"
        names[(i + 1, "ln2")] = f"encoder.layer.{i}.output.LayerNorm"
    return names


def check_against_reference(model_id: str, reference, model_type: str, text: str = SENTENCE):
    tokenized = tr.tokenize(text, model_id)
    ref = reference_layer_norms(reference, tokenized.ids)
    T = len(tokenized.ids)
    for index in sorted({0, 2, T // 2, T - 1}):
        walk = tr.walk(text, model_id, index)
        # The final hidden state, every token: equal to transformers' last_hidden_state
        assert np.abs(walk.hidden_states[-1] - ref["last_hidden_state"]).max() < TOL
        names = ln_names(model_type, walk.layers)
        for step in walk.steps:
            if (step.layer, step.key) in names:
                expected = ref[names[(step.layer, step.key)]][index]
                assert np.abs(step.vector - expected).max() < TOL, (step.layer, step.key)
        # The layer outputs for every token, and the token's attention rows
        for layer in range(walk.layers):
            expected = ref[names[(layer + 1, "ln2")]]
            assert np.abs(walk.hidden_states[layer + 1] - expected).max() < TOL
        assert np.abs(walk.attention - ref["attentions"][:, :, index]).max() < TOL
    return walk


# ----------------------------------------------------------------------------------------------------------------
# Correctness on the real MiniLM-L6


@pytest.fixture(scope="module")
def minilm_reference():
    import transformers
    folder = str(resolve.resolve(MINILM_ID).directory)
    return transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()


def test_minilm_walk_equals_transformers_hooks_at_every_layer_norm(minilm_reference):
    walk = check_against_reference(MINILM_ID, minilm_reference, "bert")
    assert (walk.layers, walk.hidden_size, walk.heads, walk.intermediate_size) == (6, 384, 12, 1536)


def test_in_float64_the_walk_equals_transformers_to_float32_rounding(minilm_reference):
    """In float32 the two forward passes differ by rounding that grows with depth (up to ~1e-5, the test above). Run
    in float64, every LayerNorm output agrees to within the final rounding of the returned float32 vectors."""
    import copy

    from core.loading import registry

    base = copy.deepcopy(registry.load("encoder", MINILM_ID).model.base).double().cpu()
    reference = copy.deepcopy(minilm_reference).double()
    tokenized = tr.tokenize(SENTENCE, MINILM_ID)
    ref = reference_layer_norms(reference, tokenized.ids)
    names = ln_names("bert", 6)
    for index in (2, 13):
        with torch.inference_mode():
            steps, hidden, _ = tr.trace(base, torch.tensor([tokenized.ids]), torch.tensor([tokenized.segment_ids]),
                                        index)
        worst = max(np.abs(s.vector - ref[names[(s.layer, s.key)]][index]).max()
                    for s in steps if (s.layer, s.key) in names)
        assert worst < 2e-6
        assert np.abs(hidden[-1] - ref["last_hidden_state"]).max() < 2e-6


def test_minilm_final_state_equals_our_encoders_own_output():
    from core.loading import registry

    loaded = registry.load("encoder", MINILM_ID)
    tokenized = tr.tokenize(SENTENCE)
    with torch.inference_mode():  # the fused attention path (no probabilities), as the other tabs run it
        out = loaded.model(torch.tensor([tokenized.ids]), output_attentions=False)
    walk = tr.walk(SENTENCE, MINILM_ID, "bank")
    for layer, hidden in enumerate(out.hidden_states):
        assert np.abs(walk.hidden_states[layer] - hidden[0].numpy()).max() < TOL
    assert np.abs(walk.steps[-1].vector - out.last_hidden_state[0, walk.index].numpy()).max() < TOL


def test_every_step_has_the_shape_the_equations_say():
    walk = tr.walk(SENTENCE, MINILM_ID, 2)
    T, H, A, d_k, I = len(walk.tokens), 384, 12, 32, 1536
    assert walk.token == "bank" and walk.index == 2
    assert [s.key for s in walk.layer_steps(0)] == ["token", "segment", "position", "sum", "ln"]
    expected = {"q": ((A, T, d_k), (A, d_k)), "k": ((A, T, d_k), (A, d_k)), "v": ((A, T, d_k), (A, d_k)),
                "probs": ((A, T, T), (A, T)), "heads": ((A, T, d_k), (A, d_k)), "concat": ((T, H), (H,)),
                "wo": ((T, H), (H,)), "add1": ((T, H), (H,)), "ln1": ((T, H), (H,)), "ffn1": ((T, I), (I,)),
                "act": ((T, I), (I,)), "ffn2": ((T, H), (H,)), "add2": ((T, H), (H,)), "ln2": ((T, H), (H,))}
    for layer in range(1, 7):
        steps = walk.layer_steps(layer)
        assert [s.key for s in steps] == list(expected)
        for step in steps:
            assert (step.shape, step.vector.shape) == expected[step.key], (layer, step.key)
    assert len(walk.steps) == 5 + 6 * 14 and walk.attention.shape == (6, A, T)
    assert np.allclose(walk.attention.sum(-1), 1, atol=1e-5)


def test_steps_chain_into_each_other_as_the_equations_say():
    """Independent arithmetic on the returned vectors: sums, the erf GELU, LayerNorm statistics, concatenation."""
    walk = tr.walk(SENTENCE, MINILM_ID, 5)
    emb = {s.key: s.vector for s in walk.layer_steps(0)}
    assert np.allclose(emb["token"] + emb["segment"] + emb["position"], emb["sum"], atol=1e-6)
    for layer in range(1, walk.layers + 1):
        s = {step.key: step.vector for step in walk.layer_steps(layer)}
        previous = walk.hidden_states[layer - 1, walk.index]
        assert np.allclose(s["heads"].reshape(-1), s["concat"])  # head h owns columns h·d_k … (h+1)·d_k
        assert np.allclose(previous + s["wo"], s["add1"], atol=1e-5)
        assert np.allclose(s["ln1"] + s["ffn2"], s["add2"], atol=1e-5)
        gelu = 0.5 * s["ffn1"] * (1 + np.vectorize(math.erf)(s["ffn1"] / math.sqrt(2)))
        assert np.allclose(gelu, s["act"], atol=1e-5)
        for step in walk.layer_steps(layer):
            assert step.norm is None if step.key == "probs" else step.norm == pytest.approx(np.linalg.norm(step.vector))


def test_residual_stream_measures_follow_from_the_hidden_states():
    walk = tr.walk(SENTENCE, MINILM_ID, "bank")
    x = walk.hidden_states[:, walk.index].astype(np.float64)  # (L+1, H)
    norms = np.linalg.norm(x, axis=1)
    assert np.allclose(walk.residual_norm, norms, rtol=1e-5)
    assert walk.cosine_to_input[0] == pytest.approx(1, abs=1e-6)
    assert np.allclose(walk.cosine_to_input, x @ x[0] / (norms * norms[0]), atol=1e-5)
    mid = np.stack([s.vector for s in walk.steps if s.key == "ln1"]).astype(np.float64)
    assert np.allclose(walk.attention_moved, np.linalg.norm(mid - x[:-1], axis=1) / norms[:-1], rtol=1e-4)
    assert np.allclose(walk.ffn_moved, np.linalg.norm(x[1:] - mid, axis=1) / np.linalg.norm(mid, axis=1), rtol=1e-4)
    wo = np.array([np.linalg.norm(s.vector) for s in walk.steps if s.key == "wo"])
    assert np.allclose(walk.attention_update, wo, rtol=1e-5)
    assert np.allclose(walk.attention_update_relative, wo / norms[:-1], rtol=1e-5)
    # The two "bank"s start from the same word embedding and drift apart with depth (context)
    second = walk.tokens.index("bank", walk.index + 1)
    token_rows = [s.vector for s in walk.steps if s.key == "token"]
    assert token_rows and np.array_equal(tr.walk(SENTENCE, MINILM_ID, second).steps[0].vector, token_rows[0])


# ----------------------------------------------------------------------------------------------------------------
# Correctness on tiny random checkpoints that transformers writes


@pytest.mark.parametrize("class_name,model_type", [("BertModel", "bert"), ("DistilBertModel", "distilbert")])
def test_tiny_random_checkpoint_equals_transformers_hooks(tiny_checkpoint, class_name, model_type):
    import transformers
    folder = tiny_checkpoint(class_name, seed=3)
    reference = getattr(transformers, class_name).from_pretrained(str(folder), attn_implementation="eager").eval()
    walk = check_against_reference(str(folder), reference, model_type)
    assert (walk.layers, walk.hidden_size, walk.heads, walk.intermediate_size) == (2, 32, 4, 37)
    keys = [s.key for s in walk.layer_steps(0)]
    assert ("segment" in keys) == (model_type == "bert")


# ----------------------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("text", ["", "   ", "\n\t", None, "\x00\x07"])
def test_empty_text_is_a_clear_error(text):
    with pytest.raises(UserInputError, match="Type a sentence"):
        tr.walk(text)


def test_text_with_nothing_the_model_reads_is_a_clear_error():
    with pytest.raises(UserInputError, match="no tokens"):
        tr.walk("\u200b\u200b")


def test_over_long_text_is_cut_to_the_model_length_and_the_cut_is_reported():
    walk = tr.walk("the whale " * 400, MINILM_ID, 3)
    assert len(walk.tokens) == 512 and walk.hidden_states.shape == (7, 512, 384)
    assert walk.truncation is not None and walk.truncation.removed_tokens == 800 - 510
    assert walk.truncation.max_length == 512


def test_text_over_the_character_cap_is_refused():
    with pytest.raises(UserInputError, match="limit"):
        tr.walk("a" * 20_001)


@pytest.mark.parametrize("choice", [99, -1, "40 · x", 1e9])
def test_token_out_of_range_is_a_clear_error(choice):
    with pytest.raises(UserInputError, match="does not exist"):
        tr.walk("a short sentence", MINILM_ID, choice)


def test_token_picker_accepts_an_index_a_listed_choice_or_the_token_itself():
    tokens = tr.tokenize(SENTENCE).tokens
    assert tr.pick_token(tokens, None) == 1
    assert tr.pick_token(tokens, "bank") == 2 and tr.pick_token(tokens, "13 · bank") == 13
    assert tr.pick_token(tokens, 13.0) == 13 and tr.token_choices(tokens)[2] == "2 · bank"
    with pytest.raises(UserInputError, match="not one of the text's tokens"):
        tr.pick_token(tokens, "whale")
    with pytest.raises(UserInputError, match="Pick a token"):
        tr.pick_token(tokens, float("nan"))


# ----------------------------------------------------------------------------------------------------------------
# Parameter counts: computed from the shape, checked against independent module counts


def numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
def test_transformer_base_counts_equal_torch_nn_transformer_submodules():
    count = pc.parameter_count(pc.transformer_shape(pc.TRANSFORMER_BASE))
    shape = count.shape
    assert (shape.encoder_layers, shape.decoder_layers, shape.d_model, shape.heads, shape.d_head, shape.d_ff,
            shape.vocab_size) == (6, 6, 512, 8, 64, 2048, 37000)
    torch.manual_seed(0)
    reference = torch.nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                                     dim_feedforward=2048)
    enc, dec = reference.encoder.layers[0], reference.decoder.layers[0]
    rows = {(row.group, row.part): row for row in count.rows}
    assert rows["encoder layer", "self-attention"].each == numel(enc.self_attn)
    assert rows["encoder layer", "FFN"].each == numel(enc.linear1) + numel(enc.linear2)
    assert rows["encoder layer", "2 LayerNorms"].each == numel(enc.norm1) + numel(enc.norm2)
    assert rows["decoder layer", "masked self-attention"].each == numel(dec.self_attn)
    assert rows["decoder layer", "cross-attention (encoder–decoder)"].each == numel(dec.multihead_attn)
    assert rows["decoder layer", "FFN"].each == numel(dec.linear1) + numel(dec.linear2)
    assert rows["decoder layer", "3 LayerNorms"].each == numel(dec.norm1) + numel(dec.norm2) + numel(dec.norm3)
    # nn.Transformer has no embeddings, and adds one final LayerNorm after each stack (2 · 2d) that the paper's
    # post-norm model does not have.
    layers = count.group_total("encoder layer") + count.group_total("decoder layer")
    assert layers + 2 * 2 * 512 == numel(reference)
    assert count.group_total("embeddings") == 37000 * 512
    assert count.total == 63_082_496  # ≈ 63M; the paper's Table 3 rounds its base model to 65M


def test_transformer_big_is_about_the_papers_213m():
    count = pc.parameter_count(pc.transformer_shape(pc.TRANSFORMER_BIG))
    assert count.total == 214_245_376 and abs(count.total - 213e6) / 213e6 < 0.01


def test_unshared_embeddings_add_a_target_table_and_an_output_projection():
    shared = pc.parameter_count(pc.transformer_shape(pc.TRANSFORMER_BASE)).total
    separate = pc.parameter_count(pc.transformer_shape(dict(pc.TRANSFORMER_BASE, shared_embeddings=False))).total
    assert separate - shared == 2 * 37000 * 512


def test_minilm_count_equals_transformers_bert_model_and_the_file(minilm_reference):
    from core.loading import registry
    from core.loading.weights import load_state_dict

    loaded = registry.load("encoder", MINILM_ID)
    count = pc.parameter_count(pc.encoder_shape(loaded.config, "MiniLM-L6"))
    rows = {(row.group, row.part): row for row in count.rows}
    layer = minilm_reference.encoder.layer[0]
    assert rows["encoder layer", "self-attention"].each == numel(layer.attention.self) + numel(layer.attention.output.dense)
    assert rows["encoder layer", "FFN"].each == numel(layer.intermediate) + numel(layer.output.dense)
    assert count.total == numel(minilm_reference) == 22_713_216
    assert count.total == pc.parameter_breakdown(loaded.config, pooler=True)["total"]  # the masked-LM tab's card
    file_total = sum(t.numel() for k, t in load_state_dict(resolve.resolve(MINILM_ID).weights).items()
                     if not k.endswith("position_ids"))
    assert count.total == file_total


@pytest.mark.parametrize("change,match", [
    (dict(heads=7), "multiple of the head count"),
    (dict(encoder_layers=0, decoder_layers=0), "at least one"),
    (dict(d_model=-4), "between"),
    (dict(d_ff=None), "whole number"),
    (dict(vocab_size=2.5), "whole number"),
    (dict(heads=10**9), "between"),
])
def test_impossible_shapes_are_clear_errors(change, match):
    with pytest.raises(UserInputError, match=match):
        pc.transformer_shape(dict(pc.TRANSFORMER_BASE, **change))
