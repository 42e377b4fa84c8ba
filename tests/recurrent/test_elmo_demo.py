"""demo/recurrent/elmo.py: the ELMo sub-tab's handler, presets and wiring."""
import math

import gradio as gr
import pytest

from types import SimpleNamespace
from demo.recurrent import elmo
from demo.kit.widgets import sig4


def test_the_bank_preset_shows_layers_that_differ_across_contexts():
    note, fig, table = elmo.compare_layers(*elmo.PRESETS[0].values)
    cosines = list(fig.data[0].y)
    assert len(cosines) == 4 and all(math.isfinite(c) for c in cosines)  # three layers and the weighted sum
    assert cosines[0] == pytest.approx(1.0, abs=1e-6)  # the word vector ignores the sentence
    assert cosines[1] < 0.99 and cosines[2] < 0.99  # the LSTM layers do not
    assert list(table.iloc[:, 2]) == [sig4(c) for c in cosines]
    assert sum(table.iloc[:3, 1]) == pytest.approx(1.0, abs=2e-3)  # s = softmax(0, 0, 0) = (1/3, 1/3, 1/3)
    assert "**bank**" in note


def test_the_top_layer_separates_the_two_senses_of_bank():
    """Two river sentences stay closer in layer 2 than a river and a money sentence (and closer than in layer 0's
    terms, where every pair is 1): the context, not the spelling, moves the vector."""
    _, different, _ = elmo.compare_layers(*elmo.PRESETS[0].values)
    _, same, _ = elmo.compare_layers(*elmo.PRESETS[2].values)
    assert same.data[0].y[2] > different.data[0].y[2] + 0.1


def test_gamma_scales_the_sum_but_leaves_its_cosine_alone():
    word, first, second, *_ = elmo.PRESETS[0].values
    _, fig1, table1 = elmo.compare_layers(word, first, second, 0.0, 1.0, 2.0, 1.0)
    _, fig2, table2 = elmo.compare_layers(word, first, second, 0.0, 1.0, 2.0, 2.0)
    assert fig1.data[0].y[3] == pytest.approx(fig2.data[0].y[3], abs=1e-6)
    assert table2.iloc[3, 3] == pytest.approx(2 * table1.iloc[3, 3], rel=1e-2)


def test_weighting_the_top_layer_moves_the_sum_towards_it():
    word, first, second, *_ = elmo.PRESETS[0].values
    _, fig, _ = elmo.compare_layers(word, first, second, -5.0, -5.0, 5.0, 1.0)
    assert fig.data[0].y[3] == pytest.approx(fig.data[0].y[2], abs=0.01)


def test_result_and_errors_in_chinese():
    zh = SimpleNamespace(headers={"cookie": "plm_lang=zh"}, session_hash="zh")  # what language_of reads
    note, fig, table = elmo.compare_layers(*elmo.PRESETS[0].values, request=zh)
    assert "余弦" in note and "余弦" in fig.layout.title.text and "向量" in table.columns[0]
    with pytest.raises(gr.Error, match="没有作为一个词出现"):
        elmo.compare_layers("bank", "the river", "the bank", 0, 0, 0, 1, request=zh)
    with pytest.raises(gr.Error, match="between"):
        elmo.compare_layers("bank", "a bank", "the bank", 99, 0, 0, 1)


def test_the_sub_tab_is_wired_with_its_presets():
    from demo.kit import presets

    with gr.Blocks() as blocks:
        registry = presets.Registry()
        with gr.Tabs(), gr.Tab("lstm", id="lstm") as tab, registry.tab("lstm", tab), gr.Tabs():
            view = elmo.build_tab()  # a sub-tab of the lstm tab's own gr.Tabs, as app.py builds it
    deps = {d.api_name: d for d in blocks.fns.values()}
    assert {"elmo_layers", "lstm_elmo_layers_open", "lstm_elmo_layers_preset"} <= set(deps)
    shown = deps["lstm_elmo_layers_preset"].fn("elmo-layers-bank", False)  # the preset bar sends the slug
    assert any(isinstance(v, str) and "**bank**" in v for v in shown.values())
    assert registry.find("lstm", "elmo-layers-top") is view and view.where.id == "elmo-layers"
