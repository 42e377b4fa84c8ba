"""Attention tab, core: the equations against torch's own attention, the seed's numbers, and real-model attention
probabilities against transformers' output_attentions (eager) on the same weights."""
import functools
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st

from core.attention import attention as att
from core.text.seeds import thinking_machines
from core.loading import resolve
from core.loading.checkpoints import MINILM_ID
from core.text.errors import UserInputError

import transformers

ATOL = 1e-5


@pytest.fixture(scope="module")
def minilm_dir():
    return str(resolve.resolve(MINILM_ID).directory)


# ------------------------------------------------------------------------------------------------------------------
# The seed's worked examples


def test_thinking_machines_reproduces_the_seed_numbers_exactly():
    p = thinking_machines()
    assert p["Q"].shape == p["K"].shape == p["V"].shape == (2, 64)
    q1, k1, k2 = p["Q"][0], p["K"][0], p["K"][1]
    assert float(q1 @ k1) == 112.0 and float(q1 @ k2) == 96.0
    steps = att.scaled_dot_product_attention(p["Q"], p["K"], p["V"])
    assert steps.d_k == 64 and steps.scale == 8.0
    assert steps.scores[0].tolist() == [112.0, 96.0]
    assert steps.scaled[0].tolist() == [14.0, 12.0]
    assert steps.probs[0, 0] == pytest.approx(1 / (1 + math.exp(-2)), abs=1e-15)
    assert round(steps.probs[0, 0], 2) == 0.88 and round(steps.probs[0, 1], 2) == 0.12
    w = 1 / (1 + math.exp(-2))
    np.testing.assert_allclose(steps.output[0], w * p["V"][0] + (1 - w) * p["V"][1], atol=1e-12)


def test_i_have_a_dream_causal_map_is_lower_triangular_and_rows_sum_to_one():
    p = att.i_have_a_dream()
    Q, K, V = att.project(p["x"], p["W_Q"], p["W_K"], p["W_V"])
    steps = att.scaled_dot_product_attention(Q, K, V, causal=True)
    assert steps.probs.shape == (4, 4)
    upper = ~np.tril(np.ones((4, 4), dtype=bool))
    assert np.isneginf(steps.masked[upper]).all() and np.isfinite(steps.masked[~upper]).all()
    assert (steps.probs[upper] == 0).all() and (steps.probs[~upper] > 0).all()
    np.testing.assert_allclose(steps.row_sums, 1.0, atol=1e-12)
    # the masked scores below the diagonal are the same scores as without the mask
    unmasked = att.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(steps.masked[~upper], unmasked.scaled[~upper])


# ------------------------------------------------------------------------------------------------------------------
# Parity with torch's attention


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 6), d_k=st.integers(1, 9), d_v=st.integers(1, 5),
       causal=st.booleans(), seed=st.integers(0, 10_000))
def test_scaled_dot_product_matches_torch_sdpa(n, m, d_k, d_v, causal, seed):
    if causal:
        m = n
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(0, 2, (n, d_k)), rng.normal(0, 2, (m, d_k)), rng.normal(0, 2, (m, d_v))
    steps = att.scaled_dot_product_attention(Q, K, V, causal=causal)
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a)[None] for a in (Q, K, V)), is_causal=causal)[0]
    np.testing.assert_allclose(steps.output, expected.numpy(), atol=1e-10)
    np.testing.assert_allclose(steps.scores, Q @ K.T, atol=1e-12)
    np.testing.assert_allclose(steps.row_sums, 1.0, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_matches_torch_multihead_attention(causal):
    T, d_model, heads = 4, 512, 8
    x = np.random.default_rng(0).normal(0, 1, (T, d_model))
    w = att.random_weights(d_model, seed=3)
    ours = att.multi_head_attention(x, w, heads, causal=causal)
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch stores weights transposed: y = x Wᵀ
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([w.W_Q.T, w.W_K.T, w.W_V.T])))
        mha.out_proj.weight.copy_(torch.from_numpy(w.W_O.T))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1) if causal else None
        xt = torch.from_numpy(x)[None]
        out, weights = mha(xt, xt, xt, attn_mask=mask, need_weights=True, average_attn_weights=False)
    np.testing.assert_allclose(ours.output, out[0].numpy(), atol=1e-10)
    np.testing.assert_allclose(ours.head_probs, weights[0].numpy(), atol=1e-12)
    assert ours.d_head == 64 and ours.head_outputs.shape == (8, 4, 64) and ours.concat.shape == (4, 512)
    shapes = {s.name: s.shape for s in ours.steps}
    assert shapes["split into heads"] == (8, 4, 64)
    assert shapes["per-head W_Qⁱ"] == (512, 64)
    assert shapes["concatenate"] == (4, 512) and shapes["W_O"] == (512, 512) and shapes["output"] == (4, 512)


def test_multi_head_refuses_heads_that_do_not_divide_d_model():
    with pytest.raises(UserInputError, match="divide"):
        att.multi_head_attention(np.zeros((2, 10)), att.random_weights(10), heads=3)


# ------------------------------------------------------------------------------------------------------------------
# Score functions


def test_score_functions_follow_their_formulas():
    rng = np.random.default_rng(1)
    Q, K = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    np.testing.assert_allclose(att.score_matrix("dot", Q, K), Q @ K.T)
    # general with W = I is the dot product
    np.testing.assert_allclose(att.score_matrix("general", Q, K, att.ScoreParams(W=np.eye(4))), Q @ K.T)
    add = att.random_score_params("additive", 4, 4, d_a=6, seed=2)
    got = att.score_matrix("additive", Q, K, add)
    for i in range(3):
        for j in range(5):  # vᵀ tanh(W qᵢ + U kⱼ), one pair at a time
            assert got[i, j] == pytest.approx(float(add.v @ np.tanh(add.W @ Q[i] + add.U @ K[j])), abs=1e-12)
    # concat with W = [W_a U_a] is the additive score: W [q; k] = W_a q + U_a k
    concat = att.ScoreParams(W=np.concatenate([add.W, add.U], axis=1), v=add.v)
    np.testing.assert_allclose(att.score_matrix("concat", Q, K, concat), got, atol=1e-12)
    steps = att.scaled_dot_product_attention(Q, K, rng.normal(size=(5, 2)), kind="additive", params=add)
    assert steps.scale == 1.0 and np.allclose(steps.row_sums, 1)


# ------------------------------------------------------------------------------------------------------------------
# Bad toy input


@pytest.mark.parametrize("Q,K,V,match", [
    ([["a", 1]], [[1, 2]], [[1]], "row 1, column 1"),
    ([[1, 2]], [[1, 2, 3]], [[1]], "d_k"),
    ([[1, 2]], [[1, 2], [3, 4]], [[1]], "every key needs exactly one value"),
    ([[1, float("inf")]], [[1, 2]], [[1]], "infinite"),
    ([], [[1, 2]], [[1]], "empty"),
    ([[1] * 600], [[1] * 600], [[1]], "limit"),
])
def test_bad_matrices_are_refused_with_a_message(Q, K, V, match):
    with pytest.raises(UserInputError, match=match):
        att.scaled_dot_product_attention(Q, K, V)


def test_causal_mask_needs_square_self_attention():
    with pytest.raises(UserInputError, match="causal"):
        att.scaled_dot_product_attention([[1.0], [2.0]], [[1.0]], [[1.0]], causal=True)


def test_project_checks_shapes():
    x = np.ones((2, 3))
    with pytest.raises(UserInputError, match="W_K needs 3 rows"):
        att.project(x, np.ones((3, 2)), np.ones((2, 2)), np.ones((3, 2)))


# ------------------------------------------------------------------------------------------------------------------
# Positional encoding and permutation equivariance


@pytest.mark.parametrize("P,d", [(50, 128), (7, 512), (3, 6)])
def test_positional_encoding_matches_transformers_sinusoids(P, d):
    from transformers.models.distilbert.modeling_distilbert import _create_sinusoidal_embeddings

    expected = _create_sinusoidal_embeddings(P, d, torch.empty(P, d)).numpy()
    np.testing.assert_allclose(att.positional_encoding(P, d), expected, atol=1e-6)
    assert att.positional_encoding(P, d)[5 % P, 1] == pytest.approx(math.cos(5 % P), abs=1e-6)


def test_permutation_equivariance_without_positions_only():
    result = att.permutation_demo("the dog bit the man", seed=0)
    assert sorted(result.order) == list(range(5)) and result.order != list(range(5))
    assert result.shuffled == [result.words[i] for i in result.order]
    np.testing.assert_allclose(result.plain_shuffled, result.plain[result.order], atol=1e-12)
    assert result.word_change(False).max() < 1e-12
    assert result.word_change(True).min() > 1e-3  # positions make every word's output change


@given(T=st.integers(2, 16), seed=st.integers(0, 1000))
def test_shuffle_order_is_a_non_identity_permutation(T, seed):
    order = att.shuffle_order(T, seed)
    assert sorted(order) == list(range(T)) and order != list(range(T))


@pytest.mark.parametrize("sentence,match", [("", "Type a sentence"), ("   ", "Type a sentence"),
                                            ("alone", "at least two"), ("w " * 17, "at most 16")])
def test_permutation_bad_input(sentence, match):
    with pytest.raises(UserInputError, match=match):
        att.permutation_demo(sentence)


# ------------------------------------------------------------------------------------------------------------------
# Real model: parity with transformers' output_attentions


@functools.lru_cache(maxsize=None)
def reference_model(folder: str, distil: bool):
    cls = transformers.DistilBertModel if distil else transformers.BertModel
    return transformers.AutoTokenizer.from_pretrained(folder), cls.from_pretrained(folder, attn_implementation="eager")


def reference_attentions(folder: str, text: str, pair: str | None = None, distil: bool = False):
    tokenizer, model = reference_model(folder, distil)
    model.eval()
    enc = tokenizer(text, pair, return_tensors="pt", truncation=True, max_length=512)
    if distil:
        enc.pop("token_type_ids", None)
    with torch.inference_mode():
        out = model(**enc, output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"][0])
    return tokens, torch.cat(out.attentions).numpy()  # (L, A, T, T)


@pytest.mark.parametrize("text,pair", [
    ("The animal didn't cross the street because it was too tired.", None),
    ("The cat sat on the mat.", "It was very happy."),
])
def test_minilm_attention_matches_transformers_eager(minilm_dir, text, pair):
    maps = att.extract_attention(text, pair, MINILM_ID)
    tokens, expected = reference_attentions(minilm_dir, text, pair)
    assert maps.tokens == tokens
    assert maps.probs.shape == expected.shape == (6, 12, len(tokens), len(tokens))
    np.testing.assert_allclose(maps.probs, expected, atol=ATOL)
    assert maps.segment_ids[-1] == (1 if pair else 0)
    assert maps.special.tolist() == [t in ("[CLS]", "[SEP]") for t in tokens]
    assert not maps.probs.flags.writeable  # shared through the cache


@pytest.mark.parametrize("class_name", ["BertModel", "DistilBertModel"])
def test_tiny_checkpoint_attention_matches_transformers(tiny_checkpoint, class_name):
    folder = str(tiny_checkpoint(class_name))
    text, pair = "Attention is all you need.", "Positions matter."
    maps = att.extract_attention(text, pair, folder)
    tokens, expected = reference_attentions(folder, text, pair, distil=class_name.startswith("Distil"))
    assert maps.tokens == tokens and maps.probs.shape == (2, 4, len(tokens), len(tokens))
    np.testing.assert_allclose(maps.probs, expected, atol=ATOL)


def test_over_512_tokens_is_truncated_and_reported(tiny_checkpoint):
    folder = str(tiny_checkpoint("BertModel"))
    text = " ".join(f"word{i % 50}" for i in range(400))  # 800 word-pieces
    maps = att.extract_attention(text, None, folder)
    tokens, expected = reference_attentions(folder, text)
    assert len(maps.tokens) == 512 and maps.tokens == tokens
    np.testing.assert_allclose(maps.probs, expected, atol=ATOL)
    untruncated = len(reference_model(folder, False)[0](text, add_special_tokens=False)["input_ids"])
    assert maps.truncation is not None and maps.truncation.removed_tokens == untruncated - 510
    assert text.endswith(maps.truncation.removed_text) and maps.truncation.removed_text.startswith("word")


@pytest.mark.parametrize("text,match", [("", "Type a sentence"), ("  \n ", "Type a sentence"),
                                        ("\u200b\u0301", "no tokens"), ("x" * 20_001, "limit")])
def test_bad_model_input(text, match):
    with pytest.raises(UserInputError, match=match):
        att.extract_attention(text, None, MINILM_ID)


def test_single_token_and_hiding_special_tokens():
    maps = att.extract_attention("hello", None, MINILM_ID)
    assert maps.tokens == ["[CLS]", "hello", "[SEP]"]
    kept, share = att.drop_special(maps.probs, maps.special)
    assert kept.shape == (6, 12, 1, 1) and np.allclose(kept, 1.0)
    np.testing.assert_allclose(share[..., 0], maps.probs[:, :, 1, [0, 2]].sum(-1), atol=1e-6)


def test_drop_special_renormalises_rows_and_reports_the_hidden_share():
    maps = att.extract_attention("The cat sat on the mat.", "It was happy.", MINILM_ID)
    kept, share = att.drop_special(maps.probs, maps.special)
    t = int((~maps.special).sum())
    assert kept.shape == (6, 12, t, t)
    np.testing.assert_allclose(kept.sum(-1), 1.0, atol=1e-5)
    content = maps.probs[..., ~maps.special, :]
    np.testing.assert_allclose(share, content[..., maps.special].sum(-1), atol=1e-5)
    # renormalising keeps the ratios between the remaining weights
    raw = content[..., ~maps.special]
    np.testing.assert_allclose(kept * raw.sum(-1, keepdims=True), raw, atol=1e-6)


def test_a_huge_pasted_matrix_is_refused_by_its_size_before_any_cell_is_read():
    rows = [[1.0, 2.0, 3.0]] * 9_999 + [["x", 2.0, 3.0]]  # a bad cell too: the size is named, not the cell
    with pytest.raises(UserInputError, match=r"Q is 10000×3; the limit is \d+×\d+"):
        att.as_matrix(rows, "Q")
    with pytest.raises(UserInputError, match=r"row 1, column 1"):  # within the size, the cell is named
        att.as_matrix([["x", 2.0], [1.0, 2.0]], "Q")
