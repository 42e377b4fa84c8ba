"""core/why/attribution.py and core/why/why.py against captum (IntegratedGradients, InputXGradient) run on transformers'
own models (inputs_embeds) where transformers has the model, and on the same embeddings → score function where it
has not (the LSTM); completeness; attention rollout against a numpy recomputation."""
from __future__ import annotations

import shutil
import threading

import numpy as np
import pytest
import torch

from core.why import attribution, why

from captum.attr import InputXGradient, IntegratedGradients  # a test requirement: missing, the module fails

STEPS = 16


def assert_close(ours: torch.Tensor, reference: torch.Tensor, rtol: float = 1e-4) -> None:
    """Equal within rtol of the largest attribution (the issue's tolerance)."""
    ours, reference = ours.detach().cpu(), reference.detach().cpu().reshape(ours.shape).double()
    scale = float(reference.abs().max())
    assert scale > 0
    assert float((ours.double() - reference).abs().max()) <= rtol * scale


def captum_both(forward, x: torch.Tensor, baseline: torch.Tensor, steps: int = STEPS):
    ig = IntegratedGradients(forward).attribute(x[None], baselines=baseline[None], n_steps=steps,
                                                method="gausslegendre")
    return ig[0], InputXGradient(forward).attribute(x[None])[0]


# ----------------------------------------------------------------------------------------------------------------
# char-GPT: ours (core/nets) vs captum on transformers' GPT2LMHeadModel reading the same file


@pytest.fixture(scope="module")
def hf_char_gpt(tmp_path_factory):
    import transformers

    from core.transformer.gpt import GPT_ASSETS

    folder = tmp_path_factory.mktemp("char_gpt")
    shutil.copy(GPT_ASSETS / "char_gpt.safetensors", folder / "model.safetensors")
    shutil.copy(GPT_ASSETS / "config.json", folder / "config.json")
    return transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()


def test_char_gpt_next_token_equals_captum_on_transformers(hf_char_gpt):
    text = "The weather today is very goo"
    result = why.explain_gpt(text, steps=STEPS)
    assert result.answer == "d" and result.baseline == "zeros"
    from core.transformer import gpt

    loaded = gpt.load(None)
    ids = torch.tensor(loaded.tokenizer.encode(text).ids)
    target = loaded.tokenizer.vocab.tokens.index("d")

    def forward(embeds):  # transformers' model, fed the token embeddings directly
        return hf_char_gpt(inputs_embeds=embeds).logits[:, -1].softmax(dim=-1)[:, target]

    x = hf_char_gpt.transformer.wte(ids).detach()
    ig, ixg = captum_both(forward, x, torch.zeros_like(x))
    ours_ig, ours_ixg = result.attributions
    assert ours_ig.method == "integrated_gradients" and ours_ig.steps == STEPS
    assert_close(ours_ig.values, ig)
    assert_close(ours_ixg.values, ixg)
    assert ours_ig.l2 == pytest.approx(ig.norm(dim=-1).tolist(), rel=1e-3, abs=1e-6)
    assert ours_ig.signed == pytest.approx(ig.sum(dim=-1).tolist(), rel=1e-3, abs=1e-6)
    assert result.probability == pytest.approx(float(forward(x[None])), rel=1e-5)


def test_gpt2_next_token_equals_captum_on_transformers(tiny_gpt2_checkpoint):
    """A GPT-2 checkpoint (tiny, random, byte-level BPE) through core/gpt.load by folder, as the tab loads GPT-2."""
    import transformers

    from core.transformer import gpt

    folder = tiny_gpt2_checkpoint("bpe")
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    text = "The weather today is very"
    result = why.explain_gpt(text, str(folder), steps=STEPS)
    loaded = gpt.load(str(folder))
    ids = torch.tensor(loaded.tokenizer.encode(text).ids)
    with torch.no_grad():
        logits = hf(ids[None]).logits[0, -1]
    logits[loaded.tokenizer.banned] = float("-inf")
    target = int(logits.argmax())
    assert result.answer == loaded.tokenizer.piece(target)

    def forward(embeds):
        return hf(inputs_embeds=embeds).logits[:, -1].softmax(dim=-1)[:, target]

    x = hf.transformer.wte(ids).detach()
    ig, ixg = captum_both(forward, x, torch.zeros_like(x))
    assert_close(result.attributions[0].values, ig)
    assert_close(result.attributions[1].values, ixg)


# ----------------------------------------------------------------------------------------------------------------
# char-BERT: ours vs captum on transformers' BertForMaskedLM loaded from assets/char_bert


def test_char_bert_masked_char_equals_captum_on_transformers():
    import transformers

    from core.mlm import char as mlm_char

    hf = transformers.BertForMaskedLM.from_pretrained(str(mlm_char.CHAR_BERT_ASSETS), attn_implementation="eager")
    hf.eval()
    text = "The weather today is very ___."
    result = why.explain_char_bert(text, steps=STEPS)
    loaded = mlm_char.shipped_char_bert()
    prepared = mlm_char.prepare(loaded, text, 1)
    ids, position = torch.tensor(prepared.ids), prepared.starts[0]
    target = loaded.tokenizer.tokens.index(result.answer)

    def forward(embeds):
        return hf(inputs_embeds=embeds).logits[:, position].softmax(dim=-1)[:, target]

    x = hf.bert.embeddings.word_embeddings(ids).detach()
    ig, ixg = captum_both(forward, x, torch.zeros_like(x))
    assert_close(result.attributions[0].values, ig)
    assert_close(result.attributions[1].values, ixg)
    assert result.tokens[position] == "[MASK]"


# ----------------------------------------------------------------------------------------------------------------
# A tiny random transformers BERT: the masked word, a token's tag, QA start and end, a class


@pytest.mark.parametrize("class_name, read_kind, overrides", [
    ("BertForMaskedLM", "masked", {}),
    ("BertForTokenClassification", "tag", {"num_labels": 5}),
    ("BertForQuestionAnswering", "start", {}),
    ("BertForQuestionAnswering", "end", {}),
    ("BertForSequenceClassification", "class", {"num_labels": 3}),
])
def test_bert_targets_equal_captum_on_transformers(tiny_checkpoint, class_name, read_kind, overrides):
    import transformers

    from core.loading import registry
    from core.nets import bert as ours

    folder = tiny_checkpoint(class_name, **overrides)
    hf = getattr(transformers, class_name).from_pretrained(str(folder), attn_implementation="eager").eval()
    model = registry.from_pretrained(str(folder), getattr(ours, class_name), device="cpu")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(folder))
    encoded = tokenizer("the bank of the [MASK] river", "where is the bank")
    ids, segments = encoded["input_ids"], encoded["token_type_ids"]
    position = ids.index(tokenizer.mask_token_id)
    read, target, hf_read = {
        "masked": (why.read_masked_word(position), 2054, lambda o: o.logits[:, position]),
        "tag": (why.read_token_tag(position), 3, lambda o: o.logits[:, position]),
        "start": (why.read_span(end=False), 9, lambda o: o.start_logits),
        "end": (why.read_span(end=True), 11, lambda o: o.end_logits),
        "class": (why.read_class, 1, lambda o: o.logits),
    }[read_kind]
    keep = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id}
    tokens = tokenizer.convert_ids_to_tokens(ids)
    result = why.explain_encoder(model, "tiny", ids, tokens, read, target, position, tokenizer.pad_token_id, keep,
                                 read_kind, "?", segments, steps=STEPS)
    type_ids = torch.tensor([segments])

    def forward(embeds):
        out = hf(inputs_embeds=embeds, token_type_ids=type_ids.expand(embeds.shape[0], -1))
        return hf_read(out).softmax(dim=-1)[:, target]

    table = hf.get_input_embeddings()
    x = table(torch.tensor(ids)).detach()
    baseline_ids = torch.tensor([i if i in keep else tokenizer.pad_token_id for i in ids])
    baseline = table(baseline_ids).detach()
    ig, ixg = captum_both(forward, x, baseline)
    assert result.baseline == "pad"
    assert_close(result.attributions[0].values, ig)
    assert_close(result.attributions[1].values, ixg)
    special = [k for k, i in enumerate(ids) if i in keep]  # x = x' there: integrated gradients gives exactly 0
    assert all(result.attributions[0].l2[k] == 0.0 for k in special)
    assert result.probability == pytest.approx(float(forward(x[None])), rel=1e-4)


# ----------------------------------------------------------------------------------------------------------------
# LSTM (no transformers model): captum on the same embeddings → score function


def test_lstm_next_char_equals_captum_on_the_same_function():
    from core.recurrent import lstm

    text = "Call me Ishmae"
    result = why.explain_lstm(text, steps=STEPS)
    models = lstm.shipped_models()
    ids = torch.tensor(lstm.encode_prompt(models.vocab, text)[0], device=models.lstm.embed.weight.device)
    target = models.vocab.tokens.index(result.answer)
    f = attribution.embedding_function(models.lstm.embed, ids, lambda batch: models.lstm(batch).logits[:, -1]
                                       .softmax(dim=-1)[:, target])
    x = attribution.token_embeddings(models.lstm.embed, ids)
    ig, ixg = captum_both(f, x, torch.zeros_like(x))
    assert_close(result.attributions[0].values, ig)
    assert_close(result.attributions[1].values, ixg)
    assert result.answer == "l" and result.rollout is None


# ----------------------------------------------------------------------------------------------------------------
# Completeness and rollout


@pytest.mark.parametrize("explain, text", [(why.explain_gpt, "Call me Ishmael. Some years ago, never mi"),
                                           (why.explain_char_bert, "The bank of the ___ was muddy."),
                                           (why.explain_lstm, "It was the best of tim")])
def test_completeness_gap_is_small_at_64_steps(explain, text):
    ig = explain(text, steps=64).attributions[0]
    change = ig.score - ig.baseline_score
    assert abs(change) > 0.05  # the check is not vacuous
    assert abs(ig.gap) <= 0.01 * abs(change)
    coarse = explain(text, steps=2).attributions[0]  # two steps miss more of the integral
    assert abs(coarse.gap) > abs(ig.gap)


def test_completeness_holds_exactly_for_a_linear_function():
    """f(x) = Σ w ⊙ x: every rule integrates a constant gradient exactly, so the gap is rounding only."""
    torch.manual_seed(0)
    w = torch.randn(5, 3, dtype=torch.float64)
    x, baseline = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    result = attribution.attribute(lambda e: (e * w).sum(dim=(1, 2)), x, baseline, list("abcde"), steps=3)
    assert torch.allclose(result.values.double(), (w * (x - baseline)).float().double(), atol=1e-6)
    assert abs(result.gap) < 1e-5


def numpy_rollout(maps: list[np.ndarray]) -> np.ndarray:
    """Abnar & Zuidema (2020), written independently: mean heads, + I, row-normalise, multiply up the layers."""
    result = np.eye(maps[0].shape[-1])
    for layer in maps:
        a = layer.mean(axis=0) + np.eye(layer.shape[-1])
        a = a / a.sum(axis=-1, keepdims=True)
        result = a @ result
    return result


def test_attention_rollout_equals_a_numpy_recomputation():
    rng = np.random.default_rng(0)
    maps = [rng.random((4, 6, 6)) for _ in range(3)]
    maps = [m / m.sum(axis=-1, keepdims=True) for m in maps]
    ours = attribution.attention_rollout([torch.tensor(m)[None] for m in maps])
    np.testing.assert_allclose(ours, numpy_rollout(maps), rtol=1e-12)
    np.testing.assert_allclose(ours.sum(axis=-1), 1.0, rtol=1e-12)  # rows stay distributions


def test_char_gpt_rollout_is_causal_and_matches_numpy():
    from core.transformer import gpt

    loaded = gpt.load(None)
    text = "Call me Ishmael."
    ids = torch.tensor([loaded.tokenizer.encode(text).ids], device=loaded.model.lm_head.weight.device)
    with torch.no_grad():
        maps = [a[0].double().cpu().numpy() for a in loaded.model(ids).attentions]
    expected = numpy_rollout(maps)
    result = why.explain_gpt(text, steps=4)
    np.testing.assert_allclose(result.rollout, expected[-1], rtol=1e-6)
    assert np.allclose(np.triu(expected, 1), 0.0)  # nothing flows from the future


def test_bad_arguments_are_refused():
    f = lambda e: e.sum(dim=(1, 2))  # noqa: E731
    x = torch.ones(2, 2)
    with pytest.raises(ValueError):
        attribution.attribute(f, x, x * 0, ["a", "b"], "saliency")
    with pytest.raises(ValueError):
        attribution.attribute(f, x, x * 0, ["a", "b"], steps=0)


def test_the_swap_applies_only_in_its_own_thread():
    """The models are shared: while one session's attribution runs, another thread's forward pass through the same
    embedding table reads the real embeddings, not the attribution's."""
    table = torch.nn.Embedding(5, 3)
    ids = torch.tensor([1, 2])
    seen = {}

    def score(batch):
        other = threading.Thread(target=lambda: seen.update(other=table(batch)))
        other.start()
        other.join()
        seen["own"] = table(batch)
        return seen["own"].sum(dim=(1, 2))

    embeds = torch.full((1, 2, 3), 7.0)
    attribution.embedding_function(table, ids, score)(embeds)
    assert torch.equal(seen["own"], embeds)
    assert torch.equal(seen["other"], table.weight[ids][None])


def test_long_inputs_run_in_chunks_with_the_same_result(monkeypatch):
    torch.manual_seed(1)
    w = torch.randn(6, 4, dtype=torch.float64)
    f = lambda e: torch.tanh(e * w).sum(dim=(1, 2)) ** 2  # noqa: E731
    x, baseline = torch.randn(6, 4, dtype=torch.float64), torch.zeros(6, 4, dtype=torch.float64)
    whole = attribution.integrated_gradients(f, x, baseline, 10)
    monkeypatch.setattr(attribution, "BATCH_TOKENS", 13)  # 2 steps of 6 tokens per pass: 5 passes
    torch.testing.assert_close(attribution.integrated_gradients(f, x, baseline, 10), whole)


def test_too_much_work_is_refused_with_a_message():
    from core.text.errors import UserInputError

    with pytest.raises(UserInputError) as caught:
        why.explain_gpt("Call me Ishmael. " * 7, steps=256)
    assert "steps" in str(caught.value)


def test_models_first_loaded_inside_an_inference_mode_view_still_explain(tiny_checkpoint, monkeypatch):
    """A learner who opens GPT's next token (an inference-mode view) before Why: the char-GPT, char-BERT, LSTM and a
    registry checkpoint are loaded there first, and their weights must still take gradients (found by test order:
    "Inference tensors cannot be saved for backward")."""
    from core.transformer import gpt
    from core.recurrent import lstm
    from core.mlm import char as mlm_char
    from core.loading import registry

    monkeypatch.setattr(registry, "_models", registry.BoundedCache(8))
    for cached in (gpt.shipped_char_gpt, mlm_char.shipped_char_bert, lstm.shipped_models):
        cached.cache_clear()
    folder = tiny_checkpoint("BertForMaskedLM")
    with torch.inference_mode():
        gpt.load(None), mlm_char.shipped_char_bert(), lstm.shipped_models()
        loaded = registry.load("mlm", str(folder))
    params = [*gpt.shipped_char_gpt()[0].parameters(), *mlm_char.shipped_char_bert().model.parameters(),
              *lstm.shipped_models().lstm.parameters(), *loaded.model.parameters()]
    assert not any(p.is_inference() for p in params)
    assert why.explain_gpt("Call me Ishmael", steps=4).target and why.explain_char_bert("Call me [MASK].", steps=4)
    assert why.explain_lstm("Call me Ishmael", steps=4).target
    for cached in (gpt.shipped_char_gpt, mlm_char.shipped_char_bert, lstm.shipped_models):
        cached.cache_clear()  # the next test loads them afresh, outside inference mode
