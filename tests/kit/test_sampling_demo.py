"""demo/kit/sampling.py, the sampling controls and next-token figure every generating tab shares (N-gram, RNN & LSTM,
Transformer & GPT), and the seed in a preset's link (demo/kit/presets.py's ``&seed=``)."""
from __future__ import annotations

import gradio as gr
import pytest

from core.text.i18n import using_language
from demo.transformer import gpt
from demo.recurrent import lstm_generate
from demo.ngram import ngram
from demo.kit import presets, sampling
from demo.kit.token_figures import next_token_figure


def test_the_kept_set_is_not_told_by_colour_alone():
    fig = next_token_figure(["a", "b", "c"], [0.5, 0.3, 0.1], [0.625, 0.375, 0.0], [True, True, False], "title",
                            original=[0.4, 0.3, 0.2], rest=("others", 0.1, 0.0))
    before, after, diamonds = fig.data
    assert list(before.y) == ["a", "b", "c", "others"] and list(before.x) == [0.5, 0.3, 0.1, 0.1]
    assert list(before.marker.pattern.shape) == ["", "", "/", "."]  # the cut token hatched, the rest dotted
    assert list(after.text) == ["✓ 0.625", "✓ 0.375", "✗", "Σ 0.000"]  # every bar labelled kept / cut
    assert list(before.marker.line.color)[:3] == ["#1f2937", "#1f2937", "#9ca3af"]  # kept outlined dark
    assert list(diamonds.x) == [0.4, 0.3, 0.2] and diamonds.marker.symbol == "diamond"


@pytest.mark.parametrize("handler, args", [
    (lambda *s: gpt.next_token("char-gpt", "The White Wha", *s), ()),
    (lambda *s: lstm_generate.generate_both("Call me ", 5, *s)[2:4], ()),
    (lambda *s: ngram.generate_text(ngram.MOBY, "", None, ngram.WORDS, True, 3, True, "kneser_ney", 1, "the white", 5,
                                    *s)[::2], ()),
])
def test_the_same_controls_and_the_same_figure_in_every_generating_tab(handler, args):
    """τ 0.7, top-k 8, top-p 0.9, seed 3 mean the same in the three tabs: one figure, titled alike, ≤ 8 kept."""
    outputs = handler(0.7, 8, 0.9, 3)
    figure = next(o for o in outputs if hasattr(o, "data"))
    note = next(o for o in outputs if isinstance(o, str))
    assert "τ = 0.7 · top-k 8 · top-p 0.9 · seed 3" in figure.layout.title.text + note
    assert figure.data[0].name == "before the cut" and figure.data[1].name.startswith("after the cut")
    kept = [text for text in figure.data[1].text if text.startswith("✓")]
    assert 1 <= len(kept) <= 8 and "the cut keeps" in figure.layout.title.text.lower()
    assert len(figure.data) == 3  # τ ≠ 1: the model's own distribution as diamonds


def test_the_table_and_the_summary_in_both_languages():
    from core.text.sampling import Sampler, Settings

    cut = Sampler(Settings(0, 0, 1.0, 0)).draw([1.0, 2.0, 2.0, 0.5], lambda i: "abcd"[i]).cut
    table = sampling.table(cut)
    assert table.iloc[:, 1].tolist() == ["b", "c", "a", "d"] and table.iloc[:, 5].tolist() == [0.5, 0.5, 0, 0]
    assert table.iloc[:, 4].tolist() == ["✓ kept", "✓ kept", "✗ cut", "✗ cut"]
    assert "keeps **2** of 4" in sampling.summary(cut) and "τ = 0 is the limit" in sampling.summary(cut)
    with using_language("zh"):
        assert sampling.table(cut).columns[1] == "词元" and "τ → 0" in sampling.summary(cut)
        assert "贪心" in sampling.describe(cut.settings)


@pytest.fixture(scope="module")
def small_app():
    """The N-gram and RNN & LSTM tabs in a Registry, as app.py builds every tab."""
    with gr.Blocks() as blocks:
        collector = presets.Registry()
        with gr.Tabs() as tabs:
            for module, tab_id in ((ngram, "ngram"), (lstm_generate, "lstm")):
                with gr.Tab(tab_id, id=tab_id) as tab, collector.tab(tab_id, tab):
                    if module is ngram:
                        ngram.build()
                    else:
                        with gr.Tabs():
                            lstm_generate.build_tab(gr.State(None))
        collector.wire(blocks, tabs)
    return blocks, collector


def test_a_preset_link_carries_its_seed_and_another_seed_reproduces_its_result(small_app):
    blocks, collector = small_app
    view = collector.find("lstm", "generate-1")
    links = [item.get("link") for c in blocks.blocks.values()
             if isinstance(c, gr.HTML) and "preset-bar" in (c.elem_classes or []) for item in c.props["items"]]
    assert {"?tab=lstm&preset=generate-1&seed=0", "?tab=lstm&preset=generate-2&seed=1",
            "?tab=ngram&preset=moby-trigram&seed=7"} <= set(links)
    updates = collector.deep_link({"tab": "lstm", "preset": "generate-1", "seed": "42"}, "ngram")
    seed_box = view.inputs[view.seed_index]
    assert updates[seed_box] == 42
    rnn_text = updates[view.outputs[0]]
    assert rnn_text == lstm_generate.generate_both(*lstm_generate.EXAMPLES[0][:-1], 42)[0]
    assert rnn_text != lstm_generate.generate_both(*lstm_generate.EXAMPLES[0])[0]
    assert "?tab=lstm&preset=generate-1&seed=42" in updates[view.outputs[2]]
    ngram_view = collector.find("ngram", "moby-trigram")
    updates = collector.deep_link({"tab": "ngram", "preset": "moby-trigram", "seed": "8"}, "ngram")
    assert updates[ngram_view.inputs[ngram_view.seed_index]] == 8
    assert "seed 8" in updates[ngram_view.outputs[-3]] and "preset=moby-trigram&seed=8" in updates[ngram_view.outputs[-3]]
    for bad in ("-1", "x", "99999999999", "1e3"):
        with pytest.raises(Exception, match="whole number from 0 to 4,294,967,295"):
            collector.deep_link({"tab": "lstm", "preset": "generate-1", "seed": bad}, "ngram")
