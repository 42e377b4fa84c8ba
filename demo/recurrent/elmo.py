"""ELMo's three layers and their weighted sum (§7), a sub-tab of the RNN & LSTM tab (demo/recurrent/lstm.py calls build()).

The learner picks a word and two sentences; the shipped two-layer bidirectional LM (core/recurrent/elmo.py) gives the word three
vectors in each sentence. The figure compares the word's vectors across the two sentences, layer by layer, and for
ELMo = γ · Σ_j s_j h^(j) with s = softmax(w) and γ from the sliders.
"""
from __future__ import annotations

import gradio as gr
import pandas as pd

from core.text.errors import ModelUnavailableError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_SHORT_TEXT_CHARS, MAX_WORD_CHARS
from demo.kit import presets
from demo.server.handlers import friendly_errors, gpu_handler, number_in_range
from demo.kit.widgets import LATEX, sig4
from demo.kit.figures import bar
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
elmo = lazy_import("core.recurrent.elmo")

RIVER = "He sat on the grassy bank of the river and watched the water."
MONEY = "She put all her money in the bank and asked for a loan."
P = presets.Preset
PRESETS = [
    P("elmo-layers-bank", label("elmo.preset_bank"), ("bank", RIVER, MONEY, 0.0, 0.0, 0.0, 1.0), "§7"),
    P("elmo-layers-top", label("elmo.preset_top"), ("bank", RIVER, MONEY, -2.0, -2.0, 2.0, 1.0), "§7"),
    P("elmo-layers-same-sense", label("elmo.preset_same"),
      ("bank", RIVER, "The boat drifted toward the muddy bank of the stream.", 0.0, 0.0, 0.0, 1.0), "§7"),
    P("elmo-layers-sound", label("elmo.preset_sound"),
      ("sound", "The sound of the waves was loud in the night.", "The ship was sound and ready for the sea.",
       0.0, 0.0, 0.0, 1.0), "§7"),
]
WEIGHT_RANGE = (-5.0, 5.0)
GAMMA_RANGE = (0.0, 4.0)


def _model():
    try:
        return elmo.shipped_model()
    except FileNotFoundError as exc:
        raise ModelUnavailableError("elmo.missing") from exc


def layer_names() -> list[str]:
    return [t("elmo.layer_word"), t("elmo.layer_1"), t("elmo.layer_2"), t("elmo.layer_mix")]


@friendly_errors
@gpu_handler
def compare_layers(word: str, first: str, second: str, w0: float, w1: float, w2: float, gamma: float):
    """(note, figure, table): the word's three vectors and their weighted sum, compared across two sentences."""
    weights = [number_in_range(w, f"w{j}", *WEIGHT_RANGE) for j, w in enumerate((w0, w1, w2))]
    gamma = number_in_range(gamma, "γ", *GAMMA_RANGE)
    model, vocab, _ = _model()
    result = elmo.compare_layers(model, vocab, word, first, second, weights, gamma)
    names = layer_names()
    fig = bar(names, result.cosines, t("elmo.figure_title", word=result.word), horizontal=False,
              value_title=t("elmo.cosine"), highlight=[False, False, False, True], height=420)
    fig.update_traces(text=[f"{c:.3f}" for c in result.cosines], textposition="outside")
    fig.update_yaxes(range=[min(0.0, min(result.cosines)) - 0.05, 1.08])
    rows = [[name, sig4(s) if j < 3 else sig4(gamma), sig4(cos), sig4(na), sig4(nb)]
            for j, (name, s, cos, (na, nb)) in enumerate(zip(names, result.weights + [gamma], result.cosines,
                                                              result.norms))]
    table = pd.DataFrame(rows, columns=[t("elmo.col_layer"), t("elmo.col_weight"), t("elmo.col_cosine"),
                                        t("elmo.col_norm", n=1), t("elmo.col_norm", n=2)])
    marked = [" ".join(f"**{w}**" if k == pos else w for k, w in enumerate(words))
              for words, pos in zip(result.sentences, result.positions)]
    s0, s1, s2 = result.weights
    note = t("elmo.result", s0=f"{s0:.3f}", s1=f"{s1:.3f}", s2=f"{s2:.3f}", gamma=f"{gamma:g}",
             first=marked[0], second=marked[1], word_cos=f"{result.cosines[0]:.3f}",
             top_cos=f"{result.cosines[2]:.3f}", mix_cos=f"{result.cosines[3]:.3f}")
    return note, fig, table


def build_tab() -> presets.View:
    """The "ELMo: three layers" sub-tab, built where the caller is (inside the RNN & LSTM tab's build())."""
    with gr.Tab(label("elmo.tab"), id="elmo-layers") as where:
        return build(where)


def build(where: gr.Tab) -> presets.View:
    """The sub-tab's content; ``where`` is the gr.Tab (with an id) it lives in."""
    gr.Markdown(label("elmo.intro"), latex_delimiters=LATEX)
    default = PRESETS[0].values
    with gr.Row():
        word = gr.Textbox(label=label("elmo.word"), value=default[0], scale=1, max_length=MAX_WORD_CHARS)
        first = gr.Textbox(label=label("elmo.sentence_1"), value=default[1], scale=3, max_length=MAX_SHORT_TEXT_CHARS)
        second = gr.Textbox(label=label("elmo.sentence_2"), value=default[2], scale=3, max_length=MAX_SHORT_TEXT_CHARS)
    with gr.Row():
        sliders = [gr.Slider(*WEIGHT_RANGE, value=default[3 + j], step=0.1, label=label(f"elmo.w{j}"))
                   for j in range(3)]
        gamma = gr.Slider(*GAMMA_RANGE, value=default[6], step=0.05, label=label("elmo.gamma"))
    button = gr.Button(label("elmo.compare"), variant="primary")
    note = gr.Markdown()
    with gr.Row():
        plot = gr.Plot(show_label=False)
        table = gr.Dataframe(interactive=False)
    inputs, outputs = [word, first, second, *sliders, gamma], [note, plot, table]
    button.click(compare_layers, inputs, outputs, api_name="elmo_layers")
    for name, slider in zip(("w0", "w1", "w2", "gamma"), [*sliders, gamma]):  # releasing a slider redraws the sum
        slider.release(compare_layers, inputs, outputs, api_name=f"elmo_layers_{name}", api_visibility="private",
                       show_progress="hidden")
    view = presets.View("lstm", "elmo-layers", inputs, outputs, compare_layers, PRESETS, where=where)
    view.buttons()
    return view
