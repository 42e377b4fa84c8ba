"""The NNLM sub-tab of the Word embeddings tab (seed §2.2): Bengio's neural LM, trained here, one prediction
stepped through with every matrix's shape. Split off demo/embeddings/embeddings.py to keep files short; api names stay
`embeddings_*`; its strings are the nnlm section of assets/i18n."""
from __future__ import annotations

import gradio as gr
import pandas as pd

from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_LIST_CHARS, NNLM_MAX_CONTEXT, NNLM_MAX_SECONDS
from demo.kit import presets
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import TABLE_BUTTONS
from demo.kit.figures import bar, lines
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
nnlm = lazy_import("core.embeddings.nnlm")

# Language-free choice values (the corpus keys of core.text.corpora); the browser shows their labels.
TOY, MOBY = "toy_zh", "moby_dick"
CORPORA = {TOY: "nnlm.corpus_toy", MOBY: "nnlm.corpus_moby"}


@friendly_errors
@gpu_handler(duration=NNLM_MAX_SECONDS + 20)  # its own budget, up to NNLM_MAX_SECONDS, plus setup
def train_and_predict(corpus: str, context: float, dim: float, hidden: float, steps: float, seconds: float,
                      text: str, progress=gr.Progress()):
    """Train (or reuse) the NNLM for these settings, then step through one prediction."""
    if corpus not in CORPORA:
        raise UserInputError("nnlm.err.corpus", choices=", ".join(t(key) for key in CORPORA.values()))
    model = nnlm.trained(corpus, int(context), int(dim), int(hidden), int(steps), float(seconds),
                         progress=lambda fraction, desc: progress(fraction, desc=desc))
    prediction = nnlm.predict(model, text or "")
    held = (t("nnlm.held", loss=f"{model.held_out_loss:.3f}", ppl=f"{nnlm.perplexity(model.held_out_loss):.0f}")
            if model.held_out_loss is not None else t("nnlm.toy_note"))
    best, p = prediction.top[0]
    summary = t("nnlm.summary", corpus=t(CORPORA[corpus]), vocab=f"{len(model.vocab):,}", context=model.model.context,
                dim=model.model.dim, hidden=model.model.H.out_features, steps=f"{model.steps:,}",
                seconds=f"{model.seconds:.1f}", loss=f"{model.losses[-1]:.3f}", held=held,
                context_words=" ".join(prediction.context), best=best, p=f"{p:.4f}",
                unknown=t("nnlm.unknown", words=", ".join(prediction.unknown)) if prediction.unknown else "")
    loss_fig = lines(list(range(1, len(model.losses) + 1)), {t("nnlm.loss_name"): model.losses}, t("nnlm.fig_loss"),
                     x_title=t("nnlm.axis_step"), y_title=t("nnlm.axis_loss"))
    words, probs = zip(*prediction.top)
    probs_fig = bar(list(words), list(probs), t("nnlm.fig_next", context=" ".join(prediction.context)),
                    value_title=t("nnlm.axis_probability"))
    shapes = pd.DataFrame([[t(f"nnlm.step.{step}"), equation, shape] for step, equation, shape in prediction.shapes],
                          columns=[t("nnlm.col_step"), t("nnlm.col_equation"), t("nnlm.col_shape")])
    return summary, shapes, probs_fig, loss_fig


PRESETS = [
    presets.Preset("nnlm-toy", label("nnlm.preset.toy"), (TOY, 1, 16, 32, 150, 20, "的"), "§2.2"),
    presets.Preset("nnlm-toy-trigram", label("nnlm.preset.toy_trigram"), (TOY, 2, 16, 32, 150, 20, "单词 的"), "§2.2"),
    presets.Preset("nnlm-moby", label("nnlm.preset.moby"), (MOBY, 2, 32, 64, 600, 60, "the white"), "§2.2"),
]


def build() -> tuple[list, list]:
    """The sub-tab's contents (call inside its gr.Tab); returns its inputs and outputs for a presets.View."""
    gr.Markdown(label("nnlm.intro"))
    with gr.Row():
        with gr.Column(scale=1):
            corpus = gr.Radio([(label(key), value) for value, key in CORPORA.items()], value=TOY,
                              label=label("nnlm.corpus"))
            with gr.Row():
                context = gr.Slider(1, NNLM_MAX_CONTEXT, value=1, step=1, label=label("nnlm.context"))
                dim = gr.Slider(2, 128, value=16, step=2, label=label("nnlm.dim"))
            with gr.Row():
                hidden = gr.Slider(2, 256, value=32, step=2, label=label("nnlm.hidden"))
                steps = gr.Slider(10, 5000, value=150, step=10, label=label("nnlm.steps"))
            seconds = gr.Slider(5, NNLM_MAX_SECONDS, value=20, step=5, label=label("nnlm.seconds"))
            text = gr.Textbox("的", label=label("nnlm.text"), max_length=MAX_LIST_CHARS)
            button = gr.Button(label("nnlm.button"), variant="primary")
        with gr.Column(scale=2):
            summary = gr.Markdown()
            shapes = gr.Dataframe(interactive=False, label=label("nnlm.shapes"), buttons=TABLE_BUTTONS)
    with gr.Row():
        probs_plot = gr.Plot(show_label=False)
        loss_plot = gr.Plot(show_label=False)
    inputs, outputs = [corpus, context, dim, hidden, steps, seconds, text], [summary, shapes, probs_plot, loss_plot]
    button.click(train_and_predict, inputs, outputs, api_name="embeddings_nnlm", concurrency_id="train",
                 concurrency_limit=1)
    return inputs, outputs
