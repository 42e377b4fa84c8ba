"""Transformer & GPT tab, "Inside a block" and "Transformer-base numbers": the handlers, called directly and through
the built Blocks, checked against core's numbers."""
import json

import numpy as np
import pytest

import gradio as gr

from core.transformer import param_count as pc  # noqa: E402
from core.transformer import transformer as tr  # noqa: E402
from core.loading.checkpoints import MINILM_ID  # noqa: E402
from demo.transformer import transformer as tab  # noqa: E402
from demo.kit.figures import HIGHLIGHT  # noqa: E402

TEXT, TOKEN, LAYER = tab.BLOCK_DEFAULT


def has_data(fig) -> bool:
    return len(fig.data) > 0 and all(getattr(trace, "z", None) is not None or getattr(trace, "y", None) is not None
                                     for trace in fig.data)


def test_block_handler_draws_core_numbers():
    summary, token, layer, strip, residual, movement, attn, table = tab.block(MINILM_ID, TEXT, TOKEN, LAYER)
    walk = tr.walk(TEXT, MINILM_ID, TOKEN)
    assert "“bank”" in summary and "d_k = 32" in summary and "position 13" in summary
    assert token["value"] == "2 · bank" and token["choices"][13] == "13 · bank"
    assert layer == {"__type__": "update", "maximum": 6, "value": 6}
    assert all(has_data(f) for f in (strip, residual, movement, attn))
    # the step strip: the norms of layer 6's vector steps, in order
    expected = [s.norm for s in walk.layer_steps(6) if s.norm is not None]
    assert np.allclose(strip.data[0].y, expected)
    assert list(strip.data[0].marker.color).count(HIGHLIGHT) == 2  # the two LayerNorms
    # residual stream and cosine lines
    assert np.allclose(residual.data[0].y, walk.residual_norm)
    assert np.allclose(residual.data[1].y[1:], walk.attention_update) and np.isnan(residual.data[1].y[0])
    assert np.allclose(movement.data[0].y, walk.cosine_to_input)
    assert np.allclose(movement.data[3].y, walk.cosine_with(13))  # the other "bank"
    # the attention heatmap: heads × tokens, rows sum to 1
    z = np.array(attn.data[0].z)
    assert z.shape == (12, len(walk.tokens)) and np.allclose(z, walk.attention[5]) and np.allclose(z.sum(1), 1)
    assert list(table["step"])[:4] == ["Q (per head)", "K (per head)", "V (per head)", "attention weights"]
    assert list(table["shape"])[0] == f"12 × {len(walk.tokens)} × 32" and len(table) == 14
    assert table["‖vector‖"].iloc[-1] == pytest.approx(walk.residual_norm[-1], abs=1e-3)


def test_layer_zero_shows_the_embeddings_and_layer_redraw_needs_no_new_walk():
    strip, attn, table = tab.block_layer(MINILM_ID, TEXT, TOKEN, 0)
    assert list(strip.data[0].x) == ["token embedding", "segment embedding", "position embedding",
                                     "sum of embeddings", "embedding LayerNorm"]
    assert list(table["layer"]) == [0] * 5 and "Layer 1" in attn.layout.title.text


def test_a_layer_beyond_the_model_is_clamped_and_said(tiny_checkpoint):
    folder = str(tiny_checkpoint("BertModel", seed=1))
    summary, _, layer, *figures, table = tab.block(folder, "a tiny model", "tiny", 6)
    assert layer["maximum"] == 2 and layer["value"] == 2
    assert "has 2 layers, so layer 6 is shown as layer 2" in summary
    assert set(table["layer"]) == {2}


@pytest.mark.parametrize("preset", list(tab.BLOCK_PRESETS))
def test_every_block_preset_runs(preset):
    summary, token, *_ = tab.block(MINILM_ID, *tab.BLOCK_PRESETS[preset])  # what its preset button runs
    assert "Following" in summary
    assert token["value"] in token["choices"]


def test_the_pronoun_preset_shows_a_head_that_links_it_to_animal():
    _, token, layer, *_, attn, _ = tab.block(MINILM_ID, *tab.BLOCK_PRESETS["it: what does the pronoun look at?"])
    z = np.array(attn.data[0].z)  # (heads, tokens) in layer 4
    assert token["value"] == "10 · it" and layer["value"] == 4
    assert z[:, 2].max() > 0.5 and list(attn.data[0].x)[2].endswith("animal")


def test_over_long_text_says_it_was_cut():
    summary, *_ = tab.block(MINILM_ID, "the whale " * 300, 1, 1)
    assert "Truncated" in summary and "512 tokens" in summary


@pytest.mark.parametrize("text,token,match", [
    ("", 1, "Type a sentence"),
    ("a short sentence", 40, "Token 40 does not exist"),
    ("a short sentence", "whale", "not one of the text's tokens"),
])
def test_bad_input_gives_the_clear_message(text, token, match):
    with pytest.raises(gr.Error, match=match):
        tab.block(MINILM_ID, text, token, 1)


def test_unknown_checkpoint_offline_says_what_to_fetch():
    summary, *_, table = tab.block("no-such-org/no-such-model", TEXT, TOKEN, 1)
    assert "not available here" in summary and "no-such-org/no-such-model" in summary and table.empty


# ----------------------------------------------------------------------------------------------------------------
# Transformer-base numbers


def test_the_seeds_transformer_base_preset_is_computed_from_its_config():
    *numbers, shared, summary, table, figure = tab.base_preset("the seed's Transformer-base", MINILM_ID)
    assert numbers == [6, 6, 512, 8, 2048, 37000] and shared is True
    count = pc.parameter_count(pc.transformer_shape(pc.TRANSFORMER_BASE))
    assert table["parameters (all)"].iloc[-1] == f"{count.total:,}" == "63,082,496"
    assert "63,082,496" in summary and "8 heads × d_k = 64" in summary and "1,050,624" in summary
    assert np.isclose(sum(figure.data[0].x), count.total / 1e6)
    # the same numbers typed in give the same table
    again = tab.base_params(*numbers, shared)
    assert again[1].equals(table) and again[0] == summary and "65M" in summary
    other = tab.base_params(6, 6, 512, 8, 1024, 37000, True)[0]
    assert other.startswith("**your Transformer:**") and "65M" not in other


def test_the_loaded_encoders_config_preset():
    *numbers, shared, summary, table, figure = tab.base_preset(tab.ENCODER_PRESET, MINILM_ID)
    assert numbers == [6, 0, 384, 12, 1536, 30522]
    assert table["parameters (all)"].iloc[-1] == "22,713,216" and has_data(figure)


@pytest.mark.parametrize("values,match", [
    ((6, 6, 512, 7, 2048, 37000), "multiple of the head count"),
    ((6, 6, None, 8, 2048, 37000), "whole number for d model"),
    ((0, 0, 512, 8, 2048, 37000), "at least one"),
    ((6, 6, 512, 8, 2048, 10**12), "between"),
])
def test_impossible_shapes_give_the_clear_message(values, match):
    with pytest.raises(gr.Error, match=match):
        tab.base_params(*values, True)


# ----------------------------------------------------------------------------------------------------------------
# Wiring


def test_every_event_is_prefixed_and_the_views_draw_when_opened():
    with gr.Blocks() as blocks:
        with gr.Tab(tab.TITLE):
            tab.build()
    deps = {dep.api_name: dep for dep in blocks.fns.values() if dep.api_name}
    assert all(name.startswith("transformer_") for name in deps)
    assert {"transformer_block", "transformer_base_params", "transformer_block_open", "transformer_base_open",
            "transformer_block_preset", "transformer_base_preset", "transformer_lesson"} <= set(deps)
    # opening a sub-tab (demo/kit/presets.py) runs its default preset: the two banks, and the seed's Transformer base
    updates = deps["transformer_block_open"].fn(False)
    values = list(updates.values())
    inputs = deps["transformer_block"].inputs  # built with the default preset's values
    assert {TEXT, TOKEN, LAYER} <= {c.value for c in inputs}
    results = set(map(id, deps["transformer_block"].outputs))  # the token picker's choices are a result too
    assert {id(c) for c in inputs} & set(map(id, updates)) <= results  # the open sends no input that is not one
    assert any(isinstance(v, str) and "“bank”" in v for v in values)
    updates = deps["transformer_base_open"].fn(False)
    tables = [v for v in updates.values() if hasattr(v, "iloc")]
    assert tables and tables[0]["parameters (all)"].iloc[-1] == "63,082,496"


def test_latex_is_rendered_not_shown_raw():
    """Every Markdown that holds $…$ renders inline and display maths (Gradio's default renders only $$…$$)."""
    from demo.kit.i18n import table

    with gr.Blocks() as blocks:
        tab.build()

    def shown(block):  # a label("…") key ("__i18n__{…}") is shown as its translation
        value = str(block.value or "")
        return table("en")[json.loads(value[len("__i18n__"):])["key"]] if value.startswith("__i18n__") else value

    with_maths = [block for block in blocks.blocks.values() if isinstance(block, gr.Markdown) and "$" in shown(block)]
    assert len(with_maths) == 2
    for block in with_maths:
        delimiters = block.latex_delimiters
        assert {"left": "$", "right": "$", "display": False} in delimiters
        assert {"left": "$$", "right": "$$", "display": True} in delimiters

def test_results_and_errors_come_in_the_learners_language():
    from core.text.i18n import using_language

    with using_language("zh"):
        summary, table, figure = tab.base_params(6, 6, 512, 8, 2048, 37000, True)
        assert "**合计：63,082,496 个参数**" in summary and table["参数量（全部）"].iloc[-1] == "63,082,496"
        assert table["位置"].iloc[0] == "嵌入" and "每个子层的参数量" in figure.layout.title.text
        with pytest.raises(gr.Error, match="请输入一个句子"):
            tab.block(MINILM_ID, "  ", TOKEN, LAYER)
    summary, table, _ = tab.base_params(6, 6, 512, 8, 2048, 37000, True)
    assert "**Total: 63,082,496 parameters**" in summary and table["where"].iloc[0] == "embeddings"
    with pytest.raises(gr.Error, match="Type a sentence"):
        tab.block(MINILM_ID, "  ", TOKEN, LAYER)
