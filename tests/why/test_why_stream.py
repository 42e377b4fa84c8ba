"""Issue #53 §3: "Why this answer" streams. Gradient × input and rollout come first, then integrated gradients at 4,
8, 16 and 32 Gauss–Legendre steps, each stage against captum at its own step count, each with its completeness gap;
the view's streaming handler yields the quick view first; the result cache keeps the last stage."""
from __future__ import annotations

import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor

import gradio as gr
import pytest
import torch

from core.why import attribution, logit_lens, why as core_why
from core.transformer import gpt
from core.loading.checkpoints import CHAR_GPT_ID
from core.text.i18n import using_language
from demo.server import result_cache
from demo.why import why
from demo.kit.widgets import sig4_text

from captum.attr import InputXGradient, IntegratedGradients  # a test requirement: missing, the module fails

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = "The weather today is very goo"
STAGES = [4, 8, 16, 32]


def assert_close(ours: torch.Tensor, reference: torch.Tensor, rtol: float = 1e-4) -> None:
    """Equal within rtol of the largest attribution (the issue's tolerance)."""
    ours, reference = ours.detach().cpu().double(), reference.detach().cpu().reshape(ours.shape).double()
    scale = float(reference.abs().max())
    assert scale > 0 and float((ours - reference).abs().max()) <= rtol * scale


@pytest.fixture(scope="module")
def hf_char_gpt(tmp_path_factory):
    """transformers' GPT2LMHeadModel reading the shipped char-GPT's file: the reference model."""
    import transformers

    folder = tmp_path_factory.mktemp("char_gpt")
    shutil.copy(gpt.GPT_ASSETS / "char_gpt.safetensors", folder / "model.safetensors")
    shutil.copy(gpt.GPT_ASSETS / "config.json", folder / "config.json")
    return transformers.GPT2LMHeadModel.from_pretrained(str(folder), attn_implementation="eager").eval()


def reference_function(hf_char_gpt, target: int):
    def forward(embeds):  # transformers' model, fed the token embeddings directly
        return hf_char_gpt(inputs_embeds=embeds).logits[:, -1].softmax(dim=-1)[:, target]

    return forward


def test_the_step_counts_a_stream_shows():
    assert attribution.stage_steps(32) == [4, 8, 16, 32]
    assert attribution.stage_steps(20) == [4, 8, 16, 20]
    assert attribution.stage_steps(128) == [4, 8, 16, 32, 64, 128]
    assert attribution.stage_steps(3) == [3] and attribution.stage_steps(4) == [4]
    assert attribution.stage_steps(32, stream=False) == [32]


def test_every_stage_equals_captum_at_its_own_steps(hf_char_gpt):
    """The char-GPT's next token: the quick view is captum's InputXGradient, then each stage is captum's
    IntegratedGradients (Gauss–Legendre) at 4, 8, 16, 32 steps on transformers' model; f(x), f(x') too."""
    stages = list(core_why.explain_gpt_stages(TEXT, None, 32))
    assert len(stages) == 1 + len(STAGES)
    loaded = gpt.load(None)
    ids = torch.tensor(loaded.tokenizer.encode(TEXT).ids)
    target = loaded.tokenizer.vocab.tokens.index(stages[0].answer)
    forward = reference_function(hf_char_gpt, target)
    x = hf_char_gpt.transformer.wte(ids).detach()
    baseline = torch.zeros_like(x)

    quick = stages[0]
    assert quick.integrated is None and not quick.final and quick.rollout is not None
    [gxi] = quick.attributions
    assert gxi.method == "gradient_x_input"
    assert_close(gxi.values, InputXGradient(forward).attribute(x[None])[0])
    with torch.no_grad():
        f_x, f_base = float(forward(x[None])), float(forward(baseline[None]))
    for stage, steps in zip(stages[1:], STAGES):
        ig, again = stage.attributions
        assert ig.steps == steps and again is gxi and stage.rollout == quick.rollout
        reference, delta = IntegratedGradients(forward).attribute(
            x[None], baselines=baseline[None], n_steps=steps, method="gausslegendre",
            return_convergence_delta=True)
        assert_close(ig.values, reference[0])
        assert ig.score == pytest.approx(f_x, rel=1e-5) and ig.baseline_score == pytest.approx(f_base, abs=1e-6)
        # captum's convergence delta is the same gap: Σ a − (f(x) − f(x'))
        assert ig.gap == pytest.approx(float(delta), abs=1e-4 * abs(f_x - f_base))
    assert stages[-1].final and [s.final for s in stages[:-1]] == [False] * len(STAGES)


def test_the_last_stage_alone_is_the_same_answer():
    """explain_* computes the last stage without the ones before it: the same numbers as the stream's end."""
    streamed = list(core_why.explain_char_bert_stages("The weather today is very goo[MASK].", 16))
    alone = core_why.explain_char_bert("The weather today is very goo[MASK].", 16)
    assert [a.steps for a in alone.attributions] == [16, 0]
    for ours, theirs in zip(streamed[-1].attributions, alone.attributions):
        assert torch.equal(ours.values, theirs.values)


@pytest.mark.parametrize("explain, last_share", [
    (lambda: core_why.explain_gpt_stages(TEXT, None, 32), 0.01),
    (lambda: core_why.explain_char_bert_stages("The weather today is very goo[MASK], so we stayed in.", 32), 0.01),
    (lambda: core_why.explain_lstm_stages("Call me Ishmae", 32), 0.02),  # the LSTM's is 1.7 % at 32 steps
], ids=["char-gpt", "char-bert", "lstm"])
def test_the_completeness_gap_is_reported_at_every_stage_and_shrinks(explain, last_share):
    """Each stage's gap is Σ a − (f(x) − f(x')) of its own values, and on these inputs it shrinks at every doubling
    (43.6 → 23.0 → 1.3 → 0.05 % of the change for the char-GPT; Gauss–Legendre on a smooth score)."""
    gaps = []
    for stage in list(explain())[1:]:
        ig = stage.integrated
        change = ig.score - ig.baseline_score
        assert ig.gap == pytest.approx(float(ig.values.double().sum()) - change, abs=1e-6)
        gaps.append(abs(ig.gap) / abs(change))
    assert len(gaps) == len(STAGES)
    assert all(later < earlier for earlier, later in zip(gaps, gaps[1:])) and gaps[-1] < last_share


# ----------------------------------------------------------------------------------------------------------------
# The view: the quick view first, then each stage with its gap


def strip_values(html: str, name: str) -> list[float]:
    figure = html.split(f'data-name="{name}"', 1)[1].split("</figure>", 1)[0]
    return [float(v) for v in re.findall(r'data-mark="[^"]*" data-value="([^"]+)"', figure)]


def direct_gradient_x_input(hf_char_gpt, text: str) -> tuple[str, list[float]]:
    """x ⊙ ∂p(answer)/∂x with torch.autograd on transformers' GPT-2 reading the char-GPT's weights (the token
    embeddings as a leaf, fed as inputs_embeds), for its most probable next character, summed over the embedding."""
    tokenizer = gpt.load(None).tokenizer
    ids = torch.tensor(tokenizer.encode(text).ids)
    x = hf_char_gpt.transformer.wte(ids).detach().requires_grad_(True)
    probs = hf_char_gpt(inputs_embeds=x[None]).logits[0, -1].softmax(dim=-1)
    target = int(probs.argmax())
    (grad,) = torch.autograd.grad(probs[target], x)
    return tokenizer.piece(target), (x * grad).sum(dim=-1).tolist()


def test_the_streamed_view_shows_gradient_x_input_and_rollout_first_then_refines(hf_char_gpt):
    steps = list(why.stream_gpt(CHAR_GPT_ID, TEXT, 32))
    assert len(steps) == 1 + len(STAGES)
    note, html, figure, shown = steps[0]
    answer, expected = direct_gradient_x_input(hf_char_gpt, TEXT)
    assert f"**{answer}**" in note and "Shown first: gradient × input and attention rollout" in note
    assert "4, 8, 16, 32 steps" in note and "f(x) =" not in note  # no integrated gradients yet
    assert strip_values(html, "why-gpt-gradient_x_input") == pytest.approx(expected, rel=1e-4, abs=1e-7)
    assert 'data-name="why-gpt-rollout"' in html and "why-gpt-integrated_gradients" not in html
    assert figure.data and shown["visible"] is True  # the logit lens comes with the first view

    final = core_why.explain_gpt(TEXT, None, 32)
    for k, (note, html, figure, shown) in enumerate(steps[1:]):
        n = STAGES[k]
        assert f"Integrated gradients, {n} steps" in note
        shares = re.findall(r"(\d+) steps: gap ([^%]+) %", note)
        assert [int(s) for s, _ in shares] == STAGES[:k + 1]  # every stage so far, with its gap
        assert ("Next: more steps, up to 32" in note) == (n < 32)
        assert figure == gr.skip() if n < 32 else figure.data  # the unchanged lens is sent first and last only
        assert len(strip_values(html, "why-gpt-integrated_gradients")) == len(TEXT)
    # the last stage shows what the answer in one go shows
    assert strip_values(html, "why-gpt-integrated_gradients") == pytest.approx(final.integrated.signed, rel=1e-6)
    assert html == why.explain_gpt(CHAR_GPT_ID, TEXT, 32)[1]
    ig = final.integrated
    assert shares[-1][1] == sig4_text(100 * abs(ig.gap) / abs(ig.score - ig.baseline_score))


def test_the_stream_speaks_chinese_and_the_lstm_has_no_rollout():
    with using_language("zh"):
        first, *_, last = list(why.stream_lstm("Call me Ishmae", 8))
    assert "先显示：梯度 × 输入（一次反向传播）" in first[0] and "why-lstm-rollout" not in first[1]
    assert "4 步：差值" in last[0] and "8 步：差值" in last[0] and "积分梯度，8 步" in last[0]


def test_a_streamed_bad_input_gets_the_message():
    with pytest.raises(gr.Error) as caught:
        list(why.stream_gpt(CHAR_GPT_ID, TEXT, 10_000))
    assert "integration steps" in str(caught.value.message)


# ----------------------------------------------------------------------------------------------------------------
# The result cache keeps the final answer; a question asked while it streams follows that stream


@pytest.fixture
def cached_stream(monkeypatch):
    """The GPT Why view's streaming handler behind the result cache, as model_event wires it, counting the
    computations (core's streams started)."""
    result_cache.RESULTS.clear()
    started, real = [], core_why.explain_gpt_stages

    def counted(*args, **kwargs):
        started.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(core_why, "explain_gpt_stages", counted)
    yield result_cache.cached(why.stream_gpt, "transformer_why", {"causal-lm": 0}), started
    result_cache.RESULTS.clear()


def test_the_cache_keeps_the_last_stage_and_answers_the_next_learner_at_once(cached_stream):
    ask, started = cached_stream
    first = list(ask(CHAR_GPT_ID, TEXT, 16))
    assert len(first) == 4 and len(started) == 1  # quick view, 4, 8, 16 steps
    again = list(ask(CHAR_GPT_ID, TEXT, 16))
    assert len(again) == 1 and len(started) == 1  # one step: the final answer, nothing computed
    note, html, figure, shown = again[0]
    assert note == first[-1][0] and html == first[-1][1] and shown == first[-1][3]
    assert figure == gr.Plot().postprocess(why.lens_figure(logit_lens.gpt_lens(TEXT)))  # the lens as sent
    list(ask(CHAR_GPT_ID, TEXT, 8))  # another step count is another question
    assert len(started) == 2


def test_learners_asking_while_it_streams_follow_the_one_computation(cached_stream, monkeypatch):
    ask, started = cached_stream
    gate, real = threading.Event(), core_why.explain_gpt_stages  # (the counted one)

    def slow(*args, **kwargs):
        for stage in real(*args, **kwargs):
            yield stage
            gate.wait(10)  # every learner has asked before the stream goes on

    monkeypatch.setattr(core_why, "explain_gpt_stages", slow)
    with ThreadPoolExecutor(4) as pool:
        answers = [pool.submit(lambda: list(ask(CHAR_GPT_ID, TEXT, 8))) for _ in range(4)]
        while len(started) < 1 or len(result_cache._STREAMS) < 1:
            threading.Event().wait(0.05)
        threading.Event().wait(0.5)
        gate.set()
        streams = [a.result(60) for a in answers]
    assert len(started) == 1  # computed once for the four
    finals = {(s[-1][0], s[-1][1]) for s in streams}
    assert len(finals) == 1 and all(len(s) >= 1 for s in streams)
    assert "8 steps: gap" in streams[0][-1][0]


# ----------------------------------------------------------------------------------------------------------------
# Through Gradio: the served app's queue streams the stages, and the cache answers the repeat in one step


def test_the_served_app_streams_the_stages_and_answers_a_repeat_from_the_cache(offline_app):
    """`python app.py --offline` driven by gradio_client, as a script uses the app: every stage reaches the client
    (the event's wrappers: friendly_errors, gpu_handler, the missing-model card, the result cache, local_only)."""
    from gradio_client import Client

    client = Client(offline_app.url, verbose=False)  # the worker's shared offline app (tests/conftest.py)
    job = client.submit(CHAR_GPT_ID, TEXT, 16, api_name="/transformer_why")
    job.result(timeout=300)
    notes = [outputs[0] for outputs in job.outputs()]
    assert len(notes) == 4 and "Shown first" in notes[0]  # the quick view, then 4, 8 and 16 steps
    assert [re.findall(r"(\d+) steps: gap", note) for note in notes[1:]] == [["4"], ["4", "8"], ["4", "8", "16"]]
    again = client.submit(CHAR_GPT_ID, TEXT, 16, api_name="/transformer_why")
    again.result(timeout=300)
    assert [outputs[0] for outputs in again.outputs()] == [notes[-1]]  # the final answer, in one step
    lstm = client.submit("Call me Ishmae", 8, api_name="/lstm_why")
    lstm.result(timeout=300)
    assert [n for n in (o[0] for o in lstm.outputs()) if "Shown first" in n] and len(lstm.outputs()) == 3
