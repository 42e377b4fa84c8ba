"""Classification & fine-tuning tab (seed §14.1–§14.2): classify with a fine-tuned checkpoint; fine-tune MiniLM
yourself against baselines; see what fine-tuning changed."""
from __future__ import annotations

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from gradio.context import Context

from core import classify, finetune, finetune_train
from core.errors import ModelUnavailableError, UserInputError
from demo.common import friendly_errors, gpu_handler, model_picker
from demo.downloads import model_event
from demo.figures import COLORWAY, bar, empty_figure, heatmap, styled, subplot_grid

TITLE = "Classification & fine-tuning"

INTRO = """### Sentence classification: one vector, one linear layer, one softmax (seed §14.1–§14.2)
BERT reads `[CLS] A [SEP]` (one sentence) or `[CLS] A [SEP] B [SEP]` (a pair: paraphrase, entailment); the segment
id tells the two sides apart. The classifier reads one sentence vector **v** and computes
**P(label) = softmax(W v + b)**, with one row of W per label. Fine-tuning trains W (and, if you let it, the top layers
of the encoder) on labelled sentences; everything below runs on real weights."""

SEGMENT_COLORS = {"segment 0 · A": COLORWAY[0], "segment 1 · B": COLORWAY[2], "special": "#9ca3af"}
TASKS = ["single sentence", "sentence pair"]
MY_DATA = "My data (paste or upload below)"

# (button label, checkpoint, task, sentence A, sentence B, what the learner should know)
PRESETS = [
    ("Seed §14.1: 我很喜欢你 / 我很中意你", classify.SIMILARITY_ZH_ID, "sentence pair", *classify.SEED_PAIR_ZH,
     "The seed shows [0.02, 0.98] (similar) for this pair. Those numbers illustrate the idea; they are not the "
     "output of a named checkpoint. What a real Chinese similarity model gives is shown above."),
    ("English twin (MRPC paraphrase)", classify.MRPC_ID, "sentence pair", *classify.SEED_PAIR_EN,
     "The English twin of the seed's pair, on a BERT fine-tuned for MRPC (are the two sentences paraphrases?)."),
    ("SST-2: a review", classify.SST2_ID, "single sentence",
     "A gripping story with an ending I did not see coming.", "", "DistilBERT fine-tuned on SST-2 movie reviews."),
    ("中文点评 (Dianping)", classify.DIANPING_ID, "single sentence", "菜很好吃，服务也很热情，下次还会再来。", "",
     "A Chinese BERT fine-tuned on Dianping restaurant reviews (negative = 1–3 stars, positive = 4–5)."),
    ("Seed §14.2: 海大球星饭茶吃 (CoLA twin)", classify.COLA_ID, "single sentence", classify.SEED_SINGLE_EN, "",
     f"The seed judges “{classify.SEED_SINGLE_ZH}” not a coherent sentence; this is an English twin on a BERT "
     "fine-tuned for CoLA (grammatical acceptability). No public Chinese CoLA checkpoint is wired in."),
]


# ------------------------------------------------------------------------------------------------------------------
# View 1: classify with a fine-tuned checkpoint


def _layout(encoding) -> tuple[list, list[list]]:
    entries, rows = [], []
    for position, (token, segment, special) in enumerate(zip(encoding.tokens, encoding.segment_ids,
                                                              encoding.special_tokens_mask)):
        part = "special" if special else ("segment 0 · A" if segment == 0 else "segment 1 · B")
        entries += [(token, part), (" ", None)]
        rows.append([position, token, segment, "[CLS]/[SEP]" if special else ("A" if segment == 0 else "B")])
    return entries, rows


def _layout_note(encoding, source: str) -> str:
    lines = [f"{source}.", f"{len(encoding)} tokens; segment id 0 for `[CLS] A [SEP]`"
             + (", 1 for `B [SEP]`." if 1 in encoding.segment_ids else ".")]
    if encoding.truncation:
        cut = encoding.truncation
        lines.append(f"**Truncated** to {cut.max_length} tokens (longest_first: the longer side loses tokens "
                     f"first): {cut.removed_tokens} tokens cut, “{cut.removed_text[:200]}”.")
    return "  \n".join(lines)


def vector_figure(result: classify.ClassifyResult) -> go.Figure:
    rows = np.vstack([result.vector[None], result.weight])  # (1 + C, H)
    names = ["v"] + [f"W row: {label}" for label in result.labels]
    limit = float(np.abs(rows).max()) or 1.0
    return heatmap(rows, [str(i) for i in range(rows.shape[1])], names,
                   f"v = {result.vector_name}, and W (logit_c = W_c · v + b_c)", colorscale="RdBu_r",
                   zmin=-limit, zmax=limit, x_title="dimension", y_title="row", annotate=False,
                   height=200 + 40 * len(names))


def _summary(result: classify.ClassifyResult, expected: str = "") -> tuple[str, list[list]]:
    best = int(np.argmax(result.probs))
    lines = [f"**{result.labels[best]}** · P = {result.probs[best]:.4f} · {result.function} over "
             f"{len(result.labels)} label(s); {result.label_note}."]
    if expected:
        lines.append(f"*Preset:* {expected}")
    lines.append(f"<span class='badge'>{result.badge}</span>")
    table = [[label, round(float(result.weight[i] @ result.vector), 4), round(float(result.bias[i]), 4),
              round(float(result.logits[i]), 4), round(float(result.probs[i]), 4)]
             for i, label in enumerate(result.labels)]
    return "  \n".join(lines), table


def _no_model(model_id: str, exc: ModelUnavailableError) -> str:
    return f"**Model not available.** {exc}  \nThe input layout below works without it."


@friendly_errors
@gpu_handler
def classify_text(model_id, task, text_a, text_b, max_length, expected=""):
    pair = task == "sentence pair"
    model_id = str(model_id or "").strip() or classify.SST2_ID
    encoding, source = classify.input_layout(text_a, text_b, model_id, int(max_length), pair)
    entries, rows = _layout(encoding)
    note = _layout_note(encoding, source)
    try:
        result = classify.classify(text_a, text_b, model_id, int(max_length), pair)
    except ModelUnavailableError as exc:
        blank = empty_figure("No model to run: see the message above.")
        return _no_model(model_id, exc), blank, blank, [], entries, note, rows
    summary, table = _summary(result, expected)
    best = int(np.argmax(result.probs))
    probs = bar(result.labels, result.probs.tolist(), f"P(label) = {result.function}(W v + b)",
                highlight=[i == best for i in range(len(result.labels))])
    return summary, probs, vector_figure(result), table, entries, note, rows


def _preset(index: int):
    _, model_id, task, text_a, text_b, expected = PRESETS[index]

    @friendly_errors
    def run(max_length):
        return (model_id, task, text_a, text_b, *classify_text(model_id, task, text_a, text_b, max_length,
                                                                expected))

    return run


# ------------------------------------------------------------------------------------------------------------------
# View 2: fine-tune MiniLM yourself


def _examples(dataset, pasted, upload) -> tuple[list[finetune.Example], str]:
    if dataset == MY_DATA:
        if upload:
            return finetune.read_upload(upload), "your uploaded file"
        return finetune.parse_labelled(pasted), "your pasted lines"
    return finetune.load_bundled(str(dataset)), str(dataset)


def _split(dataset, pasted, upload, seed) -> tuple[finetune.Split, str]:
    examples, name = _examples(dataset, pasted, upload)
    try:
        seed = int(seed)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError("Enter a whole number for the seed.") from None
    if not 0 <= seed < 2**31:
        raise UserInputError("The seed must be between 0 and 2,147,483,647.")
    return finetune.split(examples, seed), name


def _baseline_rows(found: list[finetune.Baseline]) -> list[list]:
    return [[b.name, round(b.accuracy, 4), b.note] for b in found]


def _data_summary(data: finetune.Split, name: str) -> str:
    counts = ", ".join(f"{label}: {int((data.y_train == i).sum())} + {int((data.y_test == i).sum())}"
                       for i, label in enumerate(data.labels))
    return (f"**{name}**: {len(data.train)} training and {len(data.test)} held-out sentences (train + held out per "
            f"label: {counts}); split with seed {data.seed}. Every model below is scored on the same held-out "
            "sentences.")


@friendly_errors
def show_data(dataset, pasted, upload, seed):
    data, name = _split(dataset, pasted, upload, seed)
    sample = [[e.label, e.text] for e in data.train[:8]]
    return _data_summary(data, name), _baseline_rows(finetune.cached_baselines(data)), sample


@friendly_errors
def show_upload(pasted, upload, seed):
    """An upload switches the data choice to the learner's own data and shows it."""
    return (MY_DATA, *show_data(MY_DATA, pasted, upload, seed))


def loss_figure(head_losses: list[float], layer_losses: list[float]) -> go.Figure:
    if not head_losses:
        return empty_figure("Train to see the loss curves.")
    traces = [go.Scatter(x=list(range(1, len(head_losses) + 1)), y=head_losses, mode="lines",
                         name="(a) head on frozen features (full batch)", line=dict(color=COLORWAY[0]))]
    if layer_losses:
        traces.append(go.Scatter(x=list(range(len(head_losses) + 1, len(head_losses) + len(layer_losses) + 1)),
                                 y=layer_losses, mode="lines", name="(b) top layer(s) + head (mini-batches)",
                                 line=dict(color=COLORWAY[1])))
    fig = go.Figure(traces, layout=dict(xaxis=dict(title_text="step"),
                                        yaxis=dict(title_text="cross-entropy (training)", type="log")))
    return styled(fig, "Training loss: (a) then (b)", 420)


def _accuracy_rows(outcome: finetune_train.Outcome) -> list[list]:
    rows = _baseline_rows(outcome.baselines)
    rows.append(["MiniLM frozen + head (a)", round(outcome.head_accuracy, 4), "pre-trained features, not changed"])
    rows.append([f"MiniLM, top {outcome.unfrozen} layer(s) fine-tuned (b)", round(outcome.tuned_accuracy, 4),
                 f"{outcome.epochs_done} epoch(s), {outcome.seconds:.1f} s in all"])
    return rows


def _session(request: gr.Request | None) -> str:
    return getattr(request, "session_hash", None) or "local"


@friendly_errors
@gpu_handler
def train(dataset, pasted, upload, seed, head_steps, unfrozen, epochs, request: gr.Request = None,
          progress=gr.Progress()):
    data, name = _split(dataset, pasted, upload, seed)
    settings = dict(head_steps=int(head_steps), unfrozen=int(unfrozen), epochs=int(epochs))
    finetune_train.check_settings(**settings)
    session = _session(request)
    yield (f"Training on {name}…", loss_figure([], []), gr.skip())
    shown = 0
    try:
        for update in finetune_train.run_for_session(session, data, **settings):
            if isinstance(update, finetune_train.Outcome):
                notes = "  \n".join(update.notes)
                status = (f"**Done** in {update.seconds:.1f} s. Held-out accuracy: frozen + head "
                          f"{update.head_accuracy:.3f}, fine-tuned {update.tuned_accuracy:.3f}. Classify a sentence "
                          f"with every model below, or open “What fine-tuning changed”.  \n{notes}")
                yield status, loss_figure(update.head_losses, update.layer_losses), _accuracy_rows(update)
                return
            progress(update.fraction, desc=update.message)
            steps = len(update.head_losses) + len(update.layer_losses)
            if steps - shown >= 10 or update.stage in ("waiting", "baselines", "encode"):
                shown = steps
                yield update.message, loss_figure(update.head_losses, update.layer_losses), gr.skip()
    except finetune_train.Cancelled:
        yield "This run was replaced by a newer one from this browser tab.", gr.skip(), gr.skip()


@friendly_errors
@gpu_handler
def predict(sentence, request: gr.Request = None):
    outcome = finetune_train.RUNS.result(_session(request))
    if outcome is None:
        raise UserInputError("Train first (the “Train” button above); then every model classifies your sentence.")
    text = finetune.check_sentence(sentence)
    rows = [[name, outcome.data.labels[int(np.argmax(p))], *[round(float(x), 4) for x in p]]
            for name, p in outcome.predict(text)]
    return pd.DataFrame(rows, columns=["model", "label", *[f"P({label})" for label in outcome.data.labels]])


# ------------------------------------------------------------------------------------------------------------------
# View 3: what fine-tuning changed


def projection_figure(labels: list[str], y: np.ndarray, panels: list[tuple[str, np.ndarray]]) -> go.Figure:
    layout, refs = subplot_grid([title for title, _ in panels], len(panels), horizontal_spacing=0.08,
                                vertical_spacing=0.1)
    traces = []
    for panel, ((_, coords), (xref, yref)) in enumerate(zip(panels, refs)):
        for c, label in enumerate(labels):
            rows = y == c
            traces.append(go.Scatter(x=coords[rows, 0], y=coords[rows, 1], mode="markers", name=label,
                                     legendgroup=label, showlegend=panel == 0, xaxis=xref, yaxis=yref,
                                     marker=dict(size=9, color=COLORWAY[c % len(COLORWAY)])))
    fig = go.Figure(traces, layout=dict(layout, height=520))
    return styled(fig, "Held-out sentence vectors, PCA to 2-D, coloured by their true label")


@friendly_errors
def show_changes(dataset, pasted, upload, seed, request: gr.Request = None):
    outcome = finetune_train.RUNS.result(_session(request))
    if outcome is None:
        data, name = _split(dataset, pasted, upload, seed)
        before, variance = finetune_train.before_projection(data)
        title = f"before: frozen MiniLM ({variance.sum():.0%} of variance shown)"
        note = (f"Before fine-tuning, on {name}. Train in the “Fine-tune” view to see the after picture and how "
                "much each unfrozen weight matrix moved.")
        return (note, projection_figure(data.labels, data.y_test, [(title, before)]),
                empty_figure("Train to see the weight changes."))
    data = outcome.data
    before_var, after_var = outcome.variance
    panels = [(f"before: frozen MiniLM ({before_var.sum():.0%} of variance)", outcome.before),
              (f"after: top {outcome.unfrozen} layer(s) fine-tuned ({after_var.sum():.0%})", outcome.after)]
    names, values = zip(*outcome.weight_change)
    changes = bar(list(names), list(values), "Relative change of each unfrozen weight matrix, ‖ΔW‖ / ‖W‖",
                  value_title="‖W_after − W_before‖ / ‖W_before‖", value_format=".4f")
    note = (f"Your latest run: {len(data.test)} held-out sentences. Fine-tuning pulls the two labels apart along "
            "the directions the head reads; the weights move by a few per cent at most (the learning rate is small, "
            "and the pre-trained weights are a good start).")
    return note, projection_figure(data.labels, data.y_test, panels), changes


# ------------------------------------------------------------------------------------------------------------------
# Layout


def build() -> None:
    gr.Markdown(INTRO)
    with gr.Tabs():
        with gr.Tab("Classify with a fine-tuned checkpoint"):
            with gr.Row():
                model_id = model_picker("classify")
                task = gr.Radio(TASKS, value="single sentence", label="Task")
            text_a = gr.Textbox(label="Sentence A", lines=2, value=PRESETS[2][3])
            text_b = gr.Textbox(label="Sentence B (pair tasks)", lines=2)
            max_length = gr.Slider(16, 512, value=128, step=1, label="Maximum length (tokens; longer input is cut "
                                                                         "longest_first)")
            run_button = gr.Button("Classify", variant="primary")
            gr.Markdown("**Presets** (one click fills the inputs and runs):")
            with gr.Row():
                preset_buttons = [gr.Button(p[0], size="sm") for p in PRESETS]
            summary = gr.Markdown()
            gr.Markdown("**1. The input:** `[CLS] A [SEP] B [SEP]`, with segment ids")
            layout_note = gr.Markdown()
            layout = gr.HighlightedText(label="What the model reads (colour = segment id)", color_map=SEGMENT_COLORS,
                                        show_legend=True, show_inline_category=False)
            with gr.Accordion("Token table", open=False):
                layout_table = gr.Dataframe(headers=["position", "token", "segment id", "part"], label="Tokens",
                                            interactive=False, max_height=320)
            gr.Markdown("**2. The probabilities:** P = softmax(W v + b), one row of W per label")
            with gr.Row():
                probs = gr.Plot(label="Probability per label")
                logits = gr.Dataframe(headers=["label", "W_c · v", "b_c", "logit", "probability"],
                                      label="Logits, term by term", interactive=False)
            gr.Markdown("**3. The vector the classifier reads (v) and its weights (W)**")
            vector = gr.Plot(label="The sentence vector v and the classifier's W")
        with gr.Tab("Fine-tune MiniLM yourself") as tune_tab:
            gr.Markdown("Train a classifier on MiniLM-L6's real pre-trained weights, offline: **(a)** a linear head "
                        "on frozen sentence vectors, then **(b)** the head plus the top layer(s) of the encoder. The "
                        "baselines use the same split. MiniLM's vocabulary is English (bert-base-uncased), so on "
                        "Chinese most characters are [UNK]: there the character n-grams win, which shows that a "
                        "pre-trained model helps only with text its vocabulary can read.")
            with gr.Row():
                dataset = gr.Radio([*finetune.BUNDLED, MY_DATA], value=finetune.DEFAULT_DATASET, label="Data")
                seed = gr.Number(finetune.DEFAULT_SEED, precision=0, label="Seed (split, head, batches)")
            with gr.Accordion("My data: label<TAB>sentence lines, or a .tsv/.csv file (UTF-8, ≤ 1 MB)", open=False):
                pasted = gr.Textbox(lines=6, label="Pasted lines",
                                    placeholder="positive\tWhat a lovely day.\nnegative\tThe bus never came.")
                upload = gr.File(label="Upload (.tsv, .csv, .txt)", file_types=[".tsv", ".csv", ".txt"],
                                 type="filepath")
            with gr.Row():
                head_steps = gr.Slider(1, finetune_train.MAX_HEAD_STEPS, value=finetune_train.DEFAULT_HEAD_STEPS,
                                       step=1, label="(a) head steps")
                unfrozen = gr.Slider(1, finetune_train.MAX_LAYERS, value=finetune_train.DEFAULT_LAYERS, step=1,
                                     label="(b) top layers unfrozen")
                epochs = gr.Slider(1, finetune_train.MAX_EPOCHS, value=finetune_train.DEFAULT_EPOCHS, step=1,
                                   label="(b) epochs")
            train_button = gr.Button("Train", variant="primary")
            gr.Markdown("With the default settings a run takes about 15–25 s on 2 CPU cores (baselines, MiniLM "
                        "reading every sentence once, (a), then (b)); the sliders' maxima stop at a 120 s budget.")
            data_note = gr.Markdown()
            accuracy = gr.Dataframe(headers=["model", "held-out accuracy", "note"], label="Held-out accuracy",
                                    interactive=False, wrap=True)
            status = gr.Markdown()
            loss = gr.Plot(loss_figure([], []), label="Loss")
            sample = gr.Dataframe(headers=["label", "sentence"], label="A few training sentences", interactive=False,
                                  wrap=True, max_height=260)
            sentence = gr.Textbox(label="Your sentence", value="The staff were friendly and the room was spotless.")
            predict_button = gr.Button("Classify with every model")
            side_by_side = gr.Dataframe(label="Every model on your sentence", interactive=False)
        with gr.Tab("What fine-tuning changed") as change_tab:
            change_note = gr.Markdown()
            projection = gr.Plot(label="Held-out vectors before and after")
            weights = gr.Plot(label="Weight change per matrix")

    view1_outputs = [summary, probs, vector, logits, layout, layout_note, layout_table]
    view1_inputs = [model_id, task, text_a, text_b, max_length]
    model_event(run_button.click, {"classify": model_id}, classify_text, view1_inputs, view1_outputs,
                api_name="classify_run")
    for index, button in enumerate(preset_buttons):
        model_event(button.click, {"classify": PRESETS[index][1]}, _preset(index), [max_length],
                    [model_id, task, text_a, text_b, *view1_outputs], api_name=f"classify_preset_{index}")
    # Content on first open: the tab's own select event (or page load when built outside a tab).
    parent = Context.block
    opener = parent.select if isinstance(parent, gr.Tab) else Context.root_block.load
    model_event(opener, {"classify": model_id}, classify_text, view1_inputs, view1_outputs, api_name="classify_open")

    data_inputs = [dataset, pasted, upload, seed]
    data_outputs = [data_note, accuracy, sample]
    tune_tab.select(show_data, data_inputs, data_outputs, api_name="classify_data")
    dataset.input(show_data, data_inputs, data_outputs, api_name="classify_data_change")
    upload.upload(show_upload, [pasted, upload, seed], [dataset, *data_outputs], api_name="classify_upload")
    # A second click starts a new run at once (trigger_mode="multiple", no queue limit), which cancels this
    # session's first one; core bounds how many runs train at a time (finetune_train.RUNS.slots).
    train_button.click(train, [*data_inputs, head_steps, unfrozen, epochs], [status, loss, accuracy],
                       api_name="classify_train", concurrency_limit=None, trigger_mode="multiple")
    predict_button.click(predict, [sentence], [side_by_side], api_name="classify_predict")
    change_tab.select(show_changes, data_inputs, [change_note, projection, weights], api_name="classify_changed")
