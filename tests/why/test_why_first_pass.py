"""Issue #53 §3: the quick view of a BERT-like Why (gradient × input and rollout) takes rollout's attention maps from
its own gradient pass (core.why.why.AttentionsOfNextPass), one pass of the encoder instead of two; the QA span's start
and end share that one pass (core.why.attribution.quick_views). Its rollout equals an independent recomputation from
transformers' attentions (eager), its gradient × input still equals captum's, the hooks are gone afterwards, and
another thread's pass through the same shared model is left alone."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from core.why import why

from captum.attr import InputXGradient  # a test requirement: missing, the module fails

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = ("the bank of the [MASK] river", "where is the bank")


def numpy_rollout(maps: list[np.ndarray]) -> np.ndarray:
    """Abnar & Zuidema (2020), written independently: mean heads, + I, row-normalise, multiply up the layers."""
    result = np.eye(maps[0].shape[-1])
    for layer in maps:
        a = layer.mean(axis=0) + np.eye(layer.shape[-1])
        result = (a / a.sum(axis=-1, keepdims=True)) @ result
    return result


@pytest.fixture(scope="module")
def tiny_qa(tiny_checkpoint):
    import transformers

    from core.loading import registry
    from core.nets import bert as ours

    folder = tiny_checkpoint("BertForQuestionAnswering")
    hf = transformers.BertForQuestionAnswering.from_pretrained(str(folder), attn_implementation="eager").eval()
    model = registry.from_pretrained(str(folder), ours.BertForQuestionAnswering, device="cpu")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(folder))
    return hf, model, tokenizer


@pytest.fixture
def passes(tiny_qa):
    """Each forward pass of the tiny model's encoder, counted while the test runs."""
    calls = []
    handle = tiny_qa[1].base.register_forward_hook(lambda *_: calls.append(1))
    yield calls
    handle.remove()


@pytest.mark.parametrize("end", [False, True], ids=["start", "end"])
def test_the_quick_view_is_one_pass_with_transformers_rollout_and_captum_gradient_x_input(tiny_qa, passes, end):
    hf, model, tokenizer = tiny_qa
    encoded = tokenizer(*TEXT)
    ids, segments = encoded["input_ids"], encoded["token_type_ids"]
    position, target = 9, 11
    keep = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id}
    stages = why.explain_encoder_stages(model, "tiny", ids, tokenizer.convert_ids_to_tokens(ids),
                                        why.read_span(end), target, position, tokenizer.pad_token_id, keep, "end",
                                        "?", segments, steps=4)
    quick = next(stages)
    assert len(passes) == 1  # the gradient pass alone: before, a second pass computed the maps
    assert len(model.base._forward_hooks) == 1 and not model.base._forward_pre_hooks  # the watch is gone

    type_ids = torch.tensor([segments])
    with torch.no_grad():
        maps = [a[0].double().numpy() for a in hf(torch.tensor([ids]), token_type_ids=type_ids,
                                                   output_attentions=True).attentions]
    np.testing.assert_allclose(quick.rollout, numpy_rollout(maps)[position], rtol=1e-5, atol=1e-7)

    def forward(embeds):
        out = hf(inputs_embeds=embeds, token_type_ids=type_ids.expand(embeds.shape[0], -1))
        return (out.end_logits if end else out.start_logits).softmax(dim=-1)[:, target]

    x = hf.get_input_embeddings()(torch.tensor(ids)).detach()
    reference = InputXGradient(forward).attribute(x[None])[0]
    [gxi] = quick.attributions
    reference = reference.detach().double()
    assert float((gxi.values.double() - reference).abs().max()) <= 1e-4 * float(reference.abs().max())
    final = list(stages)[-1]
    assert final.final and final.rollout == quick.rollout and len(passes) == 1 + 1 + 1  # + f(x'), + the 4 steps


def test_the_watch_reads_and_changes_only_its_own_threads_pass(tiny_qa):
    _, model, tokenizer = tiny_qa
    ids = torch.tensor([tokenizer(*TEXT)["input_ids"]])
    other = {}

    def elsewhere():
        other["out"] = model.base(ids, None, None, output_attentions=False, output_hidden_states=False)

    with why.AttentionsOfNextPass(model.base) as seen:
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        assert other["out"].attentions == () and seen.maps is None  # the other session's pass: as it asked
        out = model.base(ids, None, None, output_attentions=False, output_hidden_states=False)
        assert len(seen.maps) == len(out.attentions) == model.config.num_hidden_layers
        assert all(torch.equal(ours, theirs) for ours, theirs in zip(seen.maps, out.attentions))
        again = model.base(ids, None, None, output_attentions=False, output_hidden_states=False)
        assert again.attentions == ()  # only the next pass
    assert seen.maps[0].shape == (1, model.config.num_attention_heads, ids.shape[1], ids.shape[1])


def test_a_model_without_a_watchable_encoder_gets_its_maps_from_a_pass_of_their_own():
    """The session classifier's ``base`` is a method, not a module: nothing is watched, rollout still comes."""
    assert why.AttentionsOfNextPass(None).maps is None and why.AttentionsOfNextPass(None).handles == []
    assert why.AttentionsOfNextPass(lambda ids: ids).handles == []


def test_the_qa_spans_start_and_end_share_one_gradient_pass_and_equal_captum(tiny_qa, tiny_checkpoint):
    """Before: the start's gradient pass, then the end's (two forward passes after the QA tab's own). Now one forward
    pass and two backward passes; each end's gradient × input equals captum's on transformers' model, its rollout
    transformers' maps read at its own position."""
    from core.loading import registry
    from core.why import encoders

    hf, _, tokenizer = tiny_qa
    folder = str(tiny_checkpoint("BertForQuestionAnswering"))
    model = registry.load("qa", folder).model
    question, context = "Who was too tired?", "The animal didn't cross the street because it was too tired."
    calls = []
    handle = model.base.register_forward_hook(lambda *_: calls.append(1))
    try:
        stages = encoders.explain_span_stages(question, context, folder, steps=4)
        quick = next(stages)
        assert len(calls) == 2  # the QA tab's answer, then one gradient pass for both ends
        assert len(model.base._forward_hooks) == 1 and not model.base._forward_pre_hooks  # the watch is gone
    finally:
        handle.remove()
    encoded = tokenizer(question, context)
    assert quick.start.tokens == tokenizer.convert_ids_to_tokens(encoded["input_ids"])  # one window, as encoded
    ids, type_ids = torch.tensor([encoded["input_ids"]]), torch.tensor([encoded["token_type_ids"]])
    allowed = torch.tensor([i == 0 or side == 1 for i, side in enumerate(encoded.sequence_ids())])  # [CLS] + context
    with torch.no_grad():
        out = hf(ids, token_type_ids=type_ids, output_attentions=True)
    maps = [a[0].double().numpy() for a in out.attentions]
    x = hf.get_input_embeddings()(ids[0]).detach()
    for why_end, end in ((quick.start, False), (quick.end, True)):
        logits = (out.end_logits if end else out.start_logits)[0].masked_fill(~allowed, -10000.0)
        position = quick.positions[end]
        assert why_end.answer == quick.start.tokens[position] and why_end.target == ("end" if end else "start")
        np.testing.assert_allclose(why_end.rollout, numpy_rollout(maps)[position], rtol=1e-5, atol=1e-7)

        def forward(embeds, end=end, position=position):
            out = hf(inputs_embeds=embeds, token_type_ids=type_ids.expand(embeds.shape[0], -1))
            chosen = (out.end_logits if end else out.start_logits).masked_fill(~allowed, -10000.0)
            return chosen.softmax(dim=-1)[:, position]

        reference = InputXGradient(forward).attribute(x[None])[0].detach().double()
        [gxi] = why_end.attributions
        assert gxi.score == pytest.approx(float(logits.softmax(dim=-1)[position]), rel=1e-5)
        assert float((gxi.values.double() - reference).abs().max()) <= 1e-4 * float(reference.abs().max())
    final = list(stages)[-1]
    assert final.start.final and final.end.final and final.end.rollout == quick.end.rollout
