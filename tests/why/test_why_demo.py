"""demo/why/why.py: the "Why this answer" views' handlers, called directly; what they show equals core's numbers."""
import re

import gradio as gr
import numpy as np
import pytest

from core.why import logit_lens, why as core_why
from core.loading.checkpoints import CHAR_GPT_ID
from core.text.i18n import using_language
from demo.why import why

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = "The weather today is very goo"
MASKED = "The weather today is very goo[MASK], so we had to cancel the outdoor game."


def strip_values(html: str, name: str) -> list[float]:
    """The data-value of every token box in the strip whose figure is named ``name``."""
    figure = html.split(f'data-name="{name}"', 1)[1].split("</figure>", 1)[0]
    return [float(v) for v in re.findall(r'data-mark="[^"]*" data-value="([^"]+)"', figure)]


def test_gpt_view_shows_cores_attributions_and_lens():
    note, html, fig, shown = why.explain_gpt(CHAR_GPT_ID, TEXT, 16)
    expected = core_why.explain_gpt(TEXT, None, 16)
    lens = logit_lens.gpt_lens(TEXT)
    assert shown["visible"] is True
    assert "**d** with probability 0.9842" in note and "16 steps, baseline zero vectors" in note
    ig, gxi = expected.attributions
    assert strip_values(html, "why-gpt-integrated_gradients") == pytest.approx(ig.signed, rel=1e-6)
    assert strip_values(html, "why-gpt-gradient_x_input") == pytest.approx(gxi.signed, rel=1e-6)
    assert strip_values(html, "why-gpt-rollout") == pytest.approx(expected.rollout, rel=1e-6)
    assert len(strip_values(html, "why-gpt-integrated_gradients")) == len(TEXT)  # one box per character
    assert 'data-name="why-gpt-numbers"' in html and 'data-name="why-gpt-logit-lens"' in html
    assert "␣" in html  # spaces are shown
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (5, 5) and np.allclose(z, lens.tracked_probabilities)
    assert list(fig.data[0].x)[0] == "d" and z[-1, 0] == pytest.approx(0.9842, abs=1e-4)


def test_char_bert_view_and_chinese():
    with using_language("zh"):
        note, html, fig = why.explain_char_bert(MASKED, 8)
    expected = core_why.explain_char_bert(MASKED, 8)
    assert f"**{expected.answer}**" in note and "基线为全零向量" in note and "8 步" in note
    assert strip_values(html, "why-char-bert-integrated_gradients") == pytest.approx(
        expected.attributions[0].signed, rel=1e-6)
    assert "嵌入层" in html and list(fig.data[0].y)[0] == "嵌入层"  # the lens's first row: the embeddings


def test_completeness_line_reports_the_gap():
    note, *_ = why.explain_char_bert(MASKED, 64)
    ig = core_why.explain_char_bert(MASKED, 64).attributions[0]
    gap = re.search(r"the gap is (−?[0-9.]+)(?: × 10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+))? \(", note)
    power = int((gap.group(2) or "⁰").translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")))
    assert float(gap.group(1).replace("−", "-")) * 10.0 ** power == pytest.approx(ig.gap, rel=1e-3)
    assert abs(ig.gap) < 0.01 * abs(ig.score - ig.baseline_score)


@pytest.mark.parametrize("text, steps, fragment", [
    ("", 32, "blank"),
    ("no blank here", 32, "blank"),
    (MASKED, 0, "integration steps"),
    (MASKED, 10_000, "integration steps"),
])
def test_bad_input_gets_a_message(text, steps, fragment):
    with pytest.raises(gr.Error) as caught:
        why.explain_char_bert(text, steps)
    assert fragment in str(caught.value.message) and "Traceback" not in str(caught.value.message)


def test_a_missing_gpt2_shows_the_download_card(monkeypatch):
    from core.loading import resolve

    monkeypatch.setattr(resolve, "is_offline", lambda: True)
    note, html, fig, shown = why.explain_gpt("gpt2", "The animal", 8)
    assert "hf download gpt2" in note and shown["visible"] is False


def test_presets_run_and_are_from_the_seed():
    slugs = [p.slug for p in why.GPT_PRESETS + why.CHAR_BERT_PRESETS]
    assert len(set(slugs)) == len(slugs)
    for preset in why.CHAR_BERT_PRESETS:
        note, html, _ = why.explain_char_bert(*preset.values)
        assert "f(x) =" in note and "data-value" in html
    note, *_ = why.explain_gpt(*why.GPT_PRESETS[1].values)  # "it" and the animal, on the char-GPT
    assert "char-gpt" in note


def test_lstm_view_has_no_rollout_and_no_lens():
    note, html = why.explain_lstm("Call me Ishmae", 16)
    expected = core_why.explain_lstm("Call me Ishmae", 16)
    assert "**LSTM** — the next character: **l**" in note and "Logit lens" not in note
    assert strip_values(html, "why-lstm-integrated_gradients") == pytest.approx(expected.attributions[0].signed,
                                                                               rel=1e-6)
    assert "why-lstm-rollout" not in html and "why-lstm-logit-lens" not in html
    with pytest.raises(gr.Error) as caught:
        why.explain_lstm("今天天气很", 16)
    assert "今" in str(caught.value.message)  # the characters the LSTM never saw are named
