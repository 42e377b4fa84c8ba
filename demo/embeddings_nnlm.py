"""The NNLM sub-tab of the Word embeddings tab (seed §2.2): Bengio's neural LM, trained here, one prediction
stepped through with every matrix's shape. Split off demo/embeddings.py to keep files short; api names stay
`embeddings_*`."""
from __future__ import annotations

import gradio as gr

from core import nnlm
from demo import presets
from demo.common import TABLE_BUTTONS, friendly_errors
from demo.figures import bar, lines

TOY, MOBY = "Seed toy corpus (4 Chinese sentences)", "Moby-Dick words (3,000-word vocabulary)"
CORPORA = {TOY: "toy_zh", MOBY: "moby_dick"}

NOTE = r"""
### A neural language model (Bengio et al., 2003)
Instead of counting, the model learns a vector **C(w)** for every word (a row of the matrix C, the **Q** of the lookup
example) and a small network that scores every possible next word:
**x = [C(wₜ₋ₙ₊₁); …; C(wₜ₋₁)]**, **y = b + W x + U tanh(d + H x)**, **P(wₜ | context) = softmax(y)**.
Similar contexts get similar vectors, so it can share what it learned between words an n-gram model keeps apart.
"""
SUMMARY = ("**{corpus}** · |V| = {vocab:,} · context n−1 = {context} · m = {dim} · h = {hidden} · "
           "{steps:,} steps in {seconds:.1f} s · last training loss {loss:.3f} nats{held}\n\n"
           "**Prediction after “{context_words}”:** {best} with P = {p:.4f}{unknown}")
HELD = " · held-out loss {loss:.3f} nats (perplexity {ppl:.0f})"
TOY_NOTE = " (the toy corpus is too small to hold any sentences out)"
UNKNOWN = " · read as `<unk>`: {words}"


@friendly_errors
def train_and_predict(corpus: str, context: float, dim: float, hidden: float, steps: float, seconds: float,
                      text: str, progress=gr.Progress()):
    """Train (or reuse) the NNLM for these settings, then step through one prediction."""
    if corpus not in CORPORA:
        raise gr.Error(f"Pick a corpus: {', '.join(CORPORA)}.", print_exception=False)
    model = nnlm.trained(CORPORA[corpus], int(context), int(dim), int(hidden), int(steps), float(seconds),
                         progress=lambda fraction, desc: progress(fraction, desc=desc))
    prediction = nnlm.predict(model, text or "")
    held = (HELD.format(loss=model.held_out_loss, ppl=nnlm.perplexity(model.held_out_loss))
            if model.held_out_loss is not None else TOY_NOTE)
    best, p = prediction.top[0]
    summary = SUMMARY.format(corpus=corpus, vocab=len(model.vocab), context=model.model.context, dim=model.model.dim,
                             hidden=model.model.H.out_features, steps=model.steps, seconds=model.seconds,
                             loss=model.losses[-1], held=held, context_words=" ".join(prediction.context), best=best,
                             p=p, unknown=UNKNOWN.format(words=", ".join(prediction.unknown))
                             if prediction.unknown else "")
    loss_fig = lines(list(range(1, len(model.losses) + 1)), {"training loss": model.losses},
                     "Cross-entropy while training (nats per word)", x_title="step", y_title="loss")
    words, probs = zip(*prediction.top)
    probs_fig = bar(list(words), list(probs), f"P(next word | {' '.join(prediction.context)})",
                    value_title="probability")
    return summary, [list(row) for row in prediction.shapes], probs_fig, loss_fig


PRESETS = [
    presets.Preset("nnlm-toy", "toy corpus, context “的” (n = 2)", (TOY, 1, 16, 32, 150, 20, "的"), "§2.2"),
    presets.Preset("nnlm-toy-trigram", "toy corpus, context “单词 的” (n = 3)", (TOY, 2, 16, 32, 150, 20, "单词 的"),
                   "§2.2"),
    presets.Preset("nnlm-moby", "Moby-Dick, context “the white” (≈ 1 min)", (MOBY, 2, 32, 64, 600, 60, "the white"),
                   "§2.2"),
]


def build() -> tuple[list, list]:
    """The sub-tab's contents (call inside its gr.Tab); returns its inputs and outputs for a presets.View."""
    gr.Markdown(NOTE)
    with gr.Row():
        with gr.Column(scale=1):
            corpus = gr.Radio(list(CORPORA), value=TOY, label="Corpus")
            with gr.Row():
                context = gr.Slider(1, nnlm.MAX_CONTEXT, value=1, step=1, label="context words n−1")
                dim = gr.Slider(2, 128, value=16, step=2, label="vector size m")
            with gr.Row():
                hidden = gr.Slider(2, 256, value=32, step=2, label="hidden size h")
                steps = gr.Slider(10, 5000, value=150, step=10, label="training steps")
            seconds = gr.Slider(5, nnlm.MAX_SECONDS, value=20, step=5, label="time limit (seconds)")
            text = gr.Textbox("的", label="Context to predict from (its last n−1 words are used)")
            button = gr.Button("Train and predict", variant="primary")
        with gr.Column(scale=2):
            summary = gr.Markdown()
            shapes = gr.Dataframe(headers=["step", "equation", "shape"], interactive=False, label="One prediction, "
                                  "step by step", buttons=TABLE_BUTTONS)
    with gr.Row():
        probs_plot = gr.Plot(show_label=False)
        loss_plot = gr.Plot(show_label=False)
    inputs, outputs = [corpus, context, dim, hidden, steps, seconds, text], [summary, shapes, probs_plot, loss_plot]
    button.click(train_and_predict, inputs, outputs, api_name="embeddings_nnlm", concurrency_id="train",
                 concurrency_limit=1)
    return inputs, outputs
