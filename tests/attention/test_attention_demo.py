"""Attention tab, UI handlers: called directly, and through the built Blocks."""
import math
import numpy as np
import pytest

import gradio as gr

from core.loading.checkpoints import MINILM_ID  # noqa: E402
from demo.attention import attention as tab  # noqa: E402
from demo.attention import views as attention_views  # noqa: E402


def has_data(fig) -> bool:
    return len(fig.data) > 0 and all(getattr(trace, "z", None) is not None or getattr(trace, "y", None) is not None
                                     for trace in fig.data)


def run_preset(name: str):
    values = tab.load_preset(name)
    tokens, mode, *matrices, score, causal, note = values
    return values, tab.step_through(tokens, mode, *[m.values.tolist() for m in matrices], score, causal)


def test_thinking_machines_preset_shows_the_seed_arithmetic():
    values, (text, *figs) = run_preset("Thinking Machines (seed §9, d_k = 64)")
    assert values[2].shape == (2, 64) and "constructed" in values[-1]
    assert "[112, 96]" in text and "÷ 8" in text and "[14, 12]" in text and "0.8808" in text and "0.1192" in text
    assert len(figs) == 4 and all(has_data(f) for f in figs)
    probs = np.array(figs[2].data[0].z)
    assert probs[0, 0] == pytest.approx(1 / (1 + np.exp(-2)))


def test_dream_preset_masks_before_softmax():
    values, (text, scores, masked, probs, out) = run_preset("i have a dream: masked self-attention")
    assert values[10] is True and values[0] == "i have a dream"
    assert "−∞" in text and "before softmax" in masked.layout.title.text
    assert masked.data[0].text[0][1] == "−∞"
    p = np.array(probs.data[0].z)
    assert np.allclose(np.triu(p, 1), 0) and np.allclose(p.sum(1), 1)
    assert list(probs.data[0].y)[0].startswith("i (Σ=1.00)")


@pytest.mark.parametrize("score", list(tab.SCORES))
def test_every_score_function_runs(score):
    values = tab.load_preset("Tiny: x with W_Q, W_K, W_V (3 tokens, d = 3)")
    tokens, mode, *matrices, _, causal, _ = values
    text, *figs = tab.step_through(tokens, mode, *[m.values.tolist() for m in matrices], score, causal)
    assert "Shapes" in text and all(has_data(f) for f in figs)


@pytest.mark.parametrize("Q,match", [([["1", "x"], ["2", "3"]], "row 1, column 2"), ([["1"]], "d_k")])
def test_step_through_bad_cells_raise_a_clear_gr_error(Q, match):
    K, V = [[1, 2], [3, 4]], [[1], [2]]
    with pytest.raises(gr.Error, match=match):
        tab.step_through("a b", tab.MODES[0], Q, K, V, [], [], [], [], list(tab.SCORES)[0], False)


def test_unknown_preset_is_a_clear_error():
    with pytest.raises(gr.Error, match="Pick one of the presets"):
        tab.load_preset("nope")


def test_multi_head_lists_every_shape():
    summary, rows, heads_fig, concat_fig = tab.multi_head("i have a dream", 512, 8, False)
    rows = rows.values.tolist()  # a table with headers in the learner's language
    assert "512 = 8 heads × 64" in summary
    shapes = {row[0]: row[2] for row in rows}
    assert shapes["split into heads"] == "8 × 4 × 64" and shapes["concatenate"] == "4 × 512"
    assert shapes["W_O"] == "512 × 512" and shapes["output"] == "4 × 512"
    assert len(heads_fig.data) == 8 and np.array(concat_fig.data[0].z).shape == (4, 512)
    with pytest.raises(gr.Error, match="divide"):
        tab.multi_head("i have a dream", 64, 3, False)
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.multi_head("   ", 512, 8, False)


def test_positional_encoding_views():
    heat, curves = attention_views.positional(100, 128, "0, 1, 10")
    assert np.array(heat.data[0].z).shape == (100, 128) and len(curves.data) == 3
    for dims in ("0, 500", "a, b", ""):
        with pytest.raises(gr.Error, match="dimension|Dimension"):
            attention_views.positional(100, 128, dims)


def test_permutation_view_and_bad_input():
    summary, rows, fig = tab.permutation("the dog bit the man", 0)
    rows = rows.values.tolist()  # a table whose headers are in the learner's language
    assert "equal up to floating-point rounding" in summary and len(rows) == 5
    assert all(float(row[3]) < 1e-9 and float(row[4]) > 1e-3 for row in rows)
    with pytest.raises(gr.Error, match="at least two"):
        tab.permutation("alone", 0)


def test_real_model_views_on_minilm():
    notice, head_fig, mean_fig, grid_fig, layer, head = tab.explore(MINILM_ID, "The cat sat on the mat.", "",
                                                                    3, 5, False)
    assert "6 layers × 12 heads" in notice and layer["maximum"] == 6 and head["maximum"] == 12
    assert list(head_fig.data[0].x)[0] == "[CLS]" and "Layer 3, head 5" in head_fig.layout.title.text
    assert np.allclose(np.array(head_fig.data[0].z).sum(1), 1, atol=1e-5)
    assert np.allclose(np.array(mean_fig.data[0].z).sum(1), 1, atol=1e-5)
    tiles = np.array(grid_fig.data[0].z, dtype=float)
    T = 9  # [CLS] the cat sat on the mat . [SEP]
    assert tiles.shape == (6 * (T + 1) - 1, 12 * (T + 1) - 1)
    assert np.isnan(tiles[T]).all() and np.isfinite(tiles[:T, :T]).all()


def test_real_model_hide_special_and_layer_clamp():
    notice, head_fig, mean_fig, grid_fig, layer, head = tab.explore(MINILM_ID, "The cat sat on the mat.",
                                                                    "It was happy.", 12, 12, True)
    assert "renormalised" in notice and layer["value"] == 6
    labels = [label.replace("\u200b", "") for label in head_fig.data[0].x]
    assert "[CLS]" not in labels and "[SEP]" not in labels and "cat" in labels
    assert np.allclose(np.array(head_fig.data[0].z).sum(1), 1, atol=1e-5)
    head_again, mean_again = tab.show_head(MINILM_ID, "The cat sat on the mat.", "It was happy.", 2, 1, True)
    assert "Layer 2, head 1" in head_again.layout.title.text


def test_real_model_truncation_single_token_and_empty():
    long_text = "word " * 700
    notice, *_ = tab.explore(MINILM_ID, long_text, "", 1, 1, False)
    assert "Truncated" in notice and "last 190 tokens were cut" in notice  # 700 words, 510 kept
    notice, *_ = tab.explore(MINILM_ID, "hello", "", 1, 1, True)
    assert "Only one word-piece" in notice
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.explore(MINILM_ID, "  ", "", 1, 1, False)


def test_unavailable_model_is_a_notice_not_a_traceback(tmp_path):
    notice, head_fig, *_ = tab.explore(str(tmp_path / "missing-model"), "hello there", "", 1, 1, False)
    assert "not available" in notice and "MiniLM" in notice
    assert len(head_fig.data) == 0


def test_tab_builds_with_unique_api_names():
    with gr.Blocks() as blocks:
        tab.build()
    names = [dep.api_name for dep in blocks.fns.values()]
    assert {"attention_steps", "attention_steps_preset", "attention_multihead", "attention_pe", "attention_permutation",
            "attention_model", "attention_head", "attention_layer"} <= set(names)
    assert len(names) == len(set(names)) and None not in names


def test_presets_run_and_show_the_seed_numbers():
    """One click computes: 0.8808 (§9), 512 = 8 × 64 (§10), and the PE formula at d_model = 512 (§11)."""
    steps = {p.slug: p for p in tab.STEP_PRESETS}
    text, *figs = tab.steps_with_note(*steps["thinking-machines"].resolved())
    assert "0.8808" in text and "112" in text and "96" in text and all(f.data for f in figs)
    summary, rows, heads_fig, concat_fig = tab.multi_head(*tab.MULTIHEAD_PRESETS[0].resolved())
    assert "d_model = 512 = 8 heads × 64" in summary and len(heads_fig.data) == 8 and len(rows)
    worked, heat, curves = tab.positional_view(*tab.PE_PRESETS[0].resolved())
    assert "PE(1, 0) = sin(1 / 10000<sup>0/512</sup>) = 0.8415" in worked  # sin(1)
    assert "PE(1, 1) = cos(1 / 10000<sup>0/512</sup>) = 0.5403" in worked  # cos(1)
    assert f"{math.sin(1 / 10000 ** (2 / 512)):.4f}" in worked and heat.data and curves.data


def test_results_and_errors_come_in_the_learners_language():
    """Under 中文 the arithmetic, the figure titles and the errors are Chinese; English stays the default."""
    from core.text.i18n import using_language

    values = tab.load_preset(list(tab.PRESETS)[0])
    tokens, mode, *matrices, score, causal, note = values
    args = (tokens, mode, *[m.values.tolist() for m in matrices], score, causal)
    text, scores, *_ = tab.step_through(*args)
    assert text.startswith("**Shapes:**") and "every query" in scores.layout.title.text
    with using_language("zh"):
        text, scores, *_ = tab.step_through(*args)
        assert text.startswith("**形状：**") and "0.8808" in text and "每个查询" in scores.layout.title.text
        assert "构造" in tab.load_preset(list(tab.PRESETS)[0])[-1]
        with pytest.raises(gr.Error, match="请输入一个句子"):
            tab.multi_head("   ", 512, 8, False)
        summary, rows, *_ = tab.multi_head("i have a dream", 512, 8, False)
        assert "512 = 8 个头 × 64" in summary and list(rows.columns) == ["步骤", "公式", "形状"]
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.multi_head("   ", 512, 8, False)
