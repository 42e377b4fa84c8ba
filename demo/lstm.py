"""RNN & LSTM tab (issue #5): gates, vanishing gradients, generation, ELMo's two directions, and retraining."""
from __future__ import annotations


import gradio as gr
import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core import jobs, lstm
from core.corpora import load_corpus
from core.errors import ModelUnavailableError, UserInputError
from demo import presets
from demo import elmo as elmo_layers  # the ELMo sub-tab with two layers and the weighted sum (§7)
from demo.common import (TABLE_BUTTONS, TRAIN_QUEUE, friendly_errors, gpu_handler, number_in_range, stopped_note,
                         training_run)
from demo.figures import COLORWAY, empty_figure, heatmap, lines, styled

TITLE = "RNN & LSTM"

INTRO = r"""
### Recurrent language models: a vanilla RNN and an LSTM, both live
Both models read text one token at a time and predict the next one. The shipped pair is **character-level**, trained
on *Moby-Dick*: 77 symbols instead of ~17,000 words keeps the checkpoints under 1 MB, almost any English prompt is
in-vocabulary, and the gates can be read letter by letter. Word-level models need a capped vocabulary (rarer words
become `<unk>`); train one yourself in the **Train** tab.

| | step | what it means |
|---|---|---|
| RNN | hₜ = tanh(U xₜ + W hₜ₋₁ + b) | one squashed mix of input and memory |
| LSTM gates | fₜ = σ(W_f hₜ₋₁ + U_f xₜ + b_f); iₜ and oₜ alike | forget, input, output: 0 shut, 1 open |
| candidate | C̃ₜ = tanh(W_a hₜ₋₁ + U_a xₜ + b_a) | what could be written |
| cell | Cₜ = Cₜ₋₁ ⊙ fₜ + iₜ ⊙ C̃ₜ | memory: keep some, add some |
| output | hₜ = oₜ ⊙ tanh(Cₜ) | what the rest of the network sees |
"""

SIGNALS = {"forget gate f": "forget", "input gate i": "input", "output gate o": "output",
           "candidate C̃": "candidate", "cell state C": "cell", "hidden state h": "hidden"}
SIGNED = {"candidate", "cell", "hidden"}  # values around 0: diverging colours

INSPECT_EXAMPLES = [
    ["Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse."],
    ['"Hast seen the White Whale?" cried Ahab, and the mates (all three of them) looked at him.'],
    ["I was born in Jingdezhen, the porcelain capital of China, and my mother tongue is Chinese."],
    ["我的母语是汉语 — my mother tongue."],
]
GENERATE_EXAMPLES = [
    ["Call me Ishmael. ", 200, 0.8, 0],
    ["The whale ", 200, 0.5, 1],
    ['"Hast seen the White Whale?" ', 300, 1.0, 2],
    ["Captain Ahab", 200, 0.3, 3],
]
ELMO_EXAMPLES = [
    ["bank", "He sat on the grassy bank of the river.", "She put all her money in the bank.",
     "The boat drifted toward the muddy bank of the stream."],
    ["sound", "The sound of the waves was loud.", "The ship was sound and ready for sea.",
     "We heard the sound of a distant bell."],
    ["right", "Starbuck was right about the whale.", "Turn the boat to the right.",
     "You are right, and I was wrong."],
]


# ----------------------------------------------------------------------------------------------------------------
# Helpers


def _models(state: lstm.ModelSet | None) -> lstm.ModelSet:
    if state is not None:
        return state
    try:
        return lstm.shipped_models()
    except FileNotFoundError as exc:
        raise ModelUnavailableError("The shipped RNN/LSTM weights are missing from assets/rnn/. Recreate them with "
                                    "`python scripts/train_rnn.py`, or train in this tab's Train view.") from exc


def _badge(models: lstm.ModelSet, retrained: bool) -> str:
    where = "retrained in this session" if retrained else "shipped checkpoints (assets/rnn/)"
    cfg = models.lstm.config
    text = (f"**Models:** {where} · {models.vocab.level}-level, vocabulary {len(models.vocab):,} · "
            f"embedding {cfg['embed_size']}, hidden {cfg['hidden_size']} · device {models.lstm.head.weight.device}")
    held = {name: models.info.get(name, {}).get("held_out_loss_nats") for name in ("rnn", "lstm")}
    if all(held.values()):
        text += (f" · held-out loss RNN {held['rnn']:.2f}, LSTM {held['lstm']:.2f} nats/{models.vocab.level}")
    return text


def _shown(token: str) -> str:
    return "␣" if token == " " else token


def _unknown_note(unknown: list[str]) -> str:
    if not unknown:
        return ""
    listed = ", ".join(f"'{tok}'" for tok in unknown[:20])
    return (f"⚠️ Never seen in training, read as `<unk>`: {listed}. The models know nothing about them, "
            "so predictions right after them are guesses.")


def _top_units(values: np.ndarray, count: int) -> np.ndarray:
    """The count units that vary most over time (the readable ones), in unit order."""
    return np.sort(np.argsort(values.var(axis=0))[::-1][:count])


def _unit_heatmap(values: np.ndarray, tokens: list[str], count: int, title: str, signed: bool):
    units = _top_units(values, count)
    kwargs = dict(colorscale="RdBu_r", zmin=-1, zmax=1) if signed else dict(zmin=0, zmax=1)
    if signed and np.abs(values).max() > 1:  # the cell state is not bounded by 1
        bound = float(np.abs(values[:, units]).max())
        kwargs.update(zmin=-bound, zmax=bound)
    return heatmap(values[:, units].T, [_shown(t) for t in tokens], [f"unit {u}" for u in units], title,
                   x_title="token (input at step t)", y_title="unit", annotate=False, height=140 + 18 * len(units),
                   **kwargs)


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def inspect_text(text: str, signal: str, units: float, state: lstm.ModelSet | None = None):
    """Gates/cell heatmaps for the LSTM, the RNN's hidden state, and next-token predictions per position."""
    models = _models(state)
    result = lstm.inspect(models, text)
    key = SIGNALS.get(signal)
    if key is None:
        raise UserInputError(f"Pick one of: {', '.join(SIGNALS)}.")
    count = int(number_in_range(units, "The number of units", 4, 64))
    lstm_fig = _unit_heatmap(np.array(result.lstm_gates[key]), result.tokens, count,
                             f"LSTM {signal} over time ({count} most active units)", key in SIGNED)
    rnn_fig = _unit_heatmap(np.array(result.rnn_hidden), result.tokens, count,
                            f"RNN hidden state h over time ({count} most active units)", True)
    positions = list(range(1, len(result.tokens)))
    prob_fig = lines(positions, {"RNN": result.actual_prob["rnn"], "LSTM": result.actual_prob["lstm"]},
                     "Probability each model gave to the token that really came next",
                     x_title="position of the next token", y_title="p(actual next token)", height=360)
    rows = []
    for t, token in enumerate(result.tokens):
        nxt = result.tokens[t + 1] if t + 1 < len(result.tokens) else "—"
        rows.append([t, _shown(token), _shown(nxt),
                     " · ".join(f"{_shown(tok)} {p:.2f}" for tok, p in result.next_token["rnn"][t]),
                     " · ".join(f"{_shown(tok)} {p:.2f}" for tok, p in result.next_token["lstm"][t])])
    note = _unknown_note(result.unknown) or f"{len(result.tokens)} tokens read; no unknown characters."
    return note, lstm_fig, rnn_fig, prob_fig, rows


@friendly_errors
@gpu_handler
def measure_gradients(length: float, text: str, state: lstm.ModelSet | None = None):
    """‖∂loss_T/∂h_t‖ vs T−t for both models on held-out text, and the forget-gate products on the learner's text."""
    models = _models(state)
    length = int(number_in_range(length, "The sequence length", 10, 200))
    windows = lstm.corpus_windows(models.vocab, length)
    norms = {"RNN": lstm.gradient_norms(models.rnn, windows), "LSTM": lstm.gradient_norms(models.lstm, windows)}
    distance = list(range(length))
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=("Vanilla RNN", "LSTM"))
    for col, (name, values) in enumerate(norms.items(), start=1):
        fig.add_trace(go.Scatter(x=distance, y=values, name=name, mode="lines", line=dict(color=COLORWAY[col - 1],
                                                                                           width=3)), 1, col)
        fig.update_xaxes(title_text="distance T − t (steps back)", row=1, col=col)
    fig.update_yaxes(type="log", title_text="‖∂loss_T / ∂h_t‖", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_yaxes(exponentformat="power")
    fig.update_layout(showlegend=False)
    grad_fig = styled(fig, f"Gradient reaching h_t from the loss at step T (mean of {len(windows)} held-out windows)",
                      420)

    ids, tokens, unknown = lstm.encode_prompt(models.vocab, text)
    if len(ids) < 2:
        raise UserInputError("The forget-gate text needs at least two tokens.")
    prods = np.array(lstm.forget_products(models.lstm, ids))  # (T, H), row d = distance d
    longest = np.argsort(prods[-1])[::-1][:4]
    series = {"median over units": np.median(prods, axis=1).tolist()}
    series.update({f"unit {u}": prods[:, u].tolist() for u in longest})
    forget_fig = lines(list(range(len(ids))), series,
                       "Product of forget gates f_T ⋯ f_{t+1}: how much of C_t reaches C_T",
                       x_title="distance T − t (steps back)", y_title="∏ f (log scale)", log_y=True)
    forget_fig.update_yaxes(exponentformat="power")

    def survive(values: list[float], d: int) -> str:
        return f"{values[d] / values[0]:.1e}"

    far = min(length - 1, 50)
    summary = (f"At distance {far}, the RNN's gradient is **{survive(norms['RNN'], far)}** of its size at distance 0; "
               f"the LSTM's is **{survive(norms['LSTM'], far)}**. In the RNN every step multiplies the gradient by "
               "tanh′(z_k)·W (§6.2), which shrinks it geometrically; the LSTM's cell path multiplies by f_k instead, "
               "and forget gates near 1 let it through. Below: for the text you typed, the forget-gate "
               f"product of the units that remember longest. " + _unknown_note(unknown))
    return summary, grad_fig, forget_fig


@friendly_errors
@gpu_handler
def generate_both(prompt: str, length: float, temperature: float, seed: float, state: lstm.ModelSet | None = None):
    """Sample a continuation from each model with the same temperature and seed."""
    models = _models(state)
    unknown = lstm.encode_prompt(models.vocab, prompt)[2]
    sep = "" if models.vocab.level == "char" else " "
    length = int(number_in_range(length, "Length", 1, lstm.MAX_GENERATE))
    temperature = number_in_range(temperature, "Temperature", 0.05, 3)
    seed = int(number_in_range(seed, "The seed", 0, 2**32 - 1))
    outputs = [lstm.clean_text(prompt) + sep + lstm.generate(model, models.vocab, prompt, length, temperature, seed)
               for model in (models.rnn, models.lstm)]
    return outputs[0], outputs[1], _unknown_note(unknown)


@friendly_errors
@gpu_handler
def compare_contexts(word: str, first: str, second: str, third: str):
    """Cosine similarity of one word's ELMo-style vector (forward ⊕ backward LSTM states) across sentences."""
    models = _models(None)  # the shipped pair: a retrained session has no backward LSTM
    sentences = [s for s in (first, second, third) if (s or "").strip()]
    if len(sentences) < 2:
        raise UserInputError("Give at least two sentences that contain the word.")
    vectors = [lstm.context_vector(models, s, word) for s in sentences]
    labels = [f"S{k + 1}" for k in range(len(vectors))]
    sims = np.array([[lstm.cosine(a.context, b.context) for b in vectors] for a in vectors])
    fig = heatmap(sims, labels, labels, f"What the context added to '{word.strip()}': cosine similarity",
                  zmin=-1, zmax=1, colorscale="RdBu_r", value_format=".3f", height=380)
    rows = []
    for a in range(len(vectors)):
        for b in range(a + 1, len(vectors)):
            va, vb = vectors[a], vectors[b]
            rows.append([f"{labels[a]} vs {labels[b]}", round(lstm.cosine(va.both, vb.both), 3),
                         round(lstm.cosine(va.context, vb.context), 3)])
    note = "\n".join(f"- **{label}**: {v.sentence[:v.span[0]]}**{v.sentence[v.span[0]:v.span[1]]}**"
                     f"{v.sentence[v.span[1]:]}" for label, v in zip(labels, vectors))
    return note, fig, rows


@friendly_errors
@gpu_handler
def train_models(level: str, steps: float, seconds: float, progress=gr.Progress(), request: gr.Request = None):
    """Retrain an RNN and an LSTM from scratch on Moby-Dick, streaming the loss curves; the result is this session's.
    The run stops at its time limit (at most the server's budget, core.jobs) or when this session starts another."""
    if level not in ("char", "word"):
        raise UserInputError("Choose character-level or word-level.")
    steps = int(number_in_range(steps, "Steps", 10, 5000))
    seconds = number_in_range(seconds, "The time limit", 10, jobs.TRAIN_SECONDS)
    with training_run(request, seconds) as budget:
        yield from _train(level, steps, budget, progress)


def _train(level: str, steps: int, budget: jobs.Budget, progress):
    progress(0, desc="building the vocabulary")
    train_text, held_text = lstm.split_text(load_corpus("moby_dick"))
    vocab = lstm.Vocab.build(train_text, level, min_count=10 if level == "char" else 3)
    history = {"RNN": [], "LSTM": []}
    models = None
    stopped = None
    for step, rnn_loss, lstm_loss, models in lstm.train_pair(vocab, train_text, steps=steps, seconds=budget.seconds,
                                                            seq_len=64):
        history["RNN"].append(rnn_loss)
        history["LSTM"].append(lstm_loss)
        progress(step / steps, desc=f"step {step}/{steps}")
        if step % 10 == 0 or step == steps:
            yield _loss_figure(history, level), f"Training… step {step}/{steps}", gr.skip()
        stopped = budget.stop_reason()
        if stopped:
            break
    if stopped == jobs.REPLACED:
        raise UserInputError(stopped_note(stopped, budget.elapsed, len(history["RNN"]), steps))
    held = lstm.corpus_ids(held_text, vocab)
    models.info = {name: {"steps": len(history["RNN"]), "held_out_loss_nats": lstm.evaluate(getattr(models, name), held)}
                   for name in ("rnn", "lstm")}
    note = stopped_note(stopped, budget.elapsed, len(history["RNN"]), steps)
    yield _loss_figure(history, level), _badge(models, retrained=True) + (f"\n\n{note}" if note else ""), models


def _loss_figure(history: dict[str, list[float]], level: str):
    return lines(list(range(1, len(history["RNN"]) + 1)), history, "Training loss (same batches for both models)",
                 x_title="step", y_title=f"cross-entropy (nats per {level})")


@friendly_errors
def use_shipped():
    return _badge(_models(None), retrained=False), None


# ----------------------------------------------------------------------------------------------------------------
# Layout


# Presets always run on the shipped checkpoints (a session's retrained pair is used by the buttons).
def inspect_shipped(text: str, signal: str, units: float):
    return inspect_text(text, signal, units, None)


def gradients_shipped(length: float, text: str):
    return measure_gradients(length, text, None)


def generate_shipped(prompt: str, length: float, temperature: float, seed: float):
    return generate_both(prompt, length, temperature, seed, None)


P = presets.Preset
INSPECT_PRESETS = [
    P("forget-gate", "Forget gate on Call me Ishmael", (INSPECT_EXAMPLES[0][0], "forget gate f", 24), "§6"),
    P("cell-state", "Cell state on Hast seen the White Whale", (INSPECT_EXAMPLES[1][0], "cell state C", 24), "§6"),
    P("input-gate-unknown", "Input gate on unseen words", (INSPECT_EXAMPLES[2][0], "input gate i", 24), "§6"),
]
GRADIENT_PRESETS = [
    P("rnn-vs-lstm-gradients", "RNN vs LSTM gradients, T = 100",
      (100, "The whale, which Ahab had chased for years across every ocean, was white."), "§6"),
    P("long-gradients", "T = 200", (200, "Call me Ishmael. Some years ago, never mind how long precisely."), "§6"),
]
GENERATE_PRESETS = [P(f"generate-{i + 1}", f"“{row[0].strip()}” T = {row[2]}", tuple(row), "§6")
                    for i, row in enumerate(GENERATE_EXAMPLES)]
ELMO_PRESETS = [P(f"elmo-{row[0]}", f"ELMo: {row[0]}", tuple(row), "§7") for row in ELMO_EXAMPLES]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§6", "Where does the LSTM's forget gate close (values near 0) while it reads “Call me Ishmael…”?",
     "Mostly it stays open: the mean f is about 0.73. Closing is a per-unit decision, only loosely tied to word "
     "boundaries: at spaces and punctuation about 19% of the units drop below 0.2, inside words about 14%. Switch "
     "the signal to the cell state C to see what the open gates keep.", "inspect", "forget-gate"),
    ("§6", "The loss at step T is back-propagated to every earlier step. Which model still gets gradient from 50 "
     "steps back?", "The LSTM. At distance 50 the RNN keeps about 7.5e-10 of its gradient, the LSTM "
     "about 2.7e-6, some 3,600 times more: the RNN multiplies tanh′(z)·W at every step, the LSTM's cell path "
     "multiplies forget gates (∂Cₖ/∂Cₖ₋₁ ≈ fₖ), which are often close to 1.", "gradients", "rnn-vs-lstm-gradients"),
    ("§7", "Does a bidirectional LSTM give “bank” the same vector by a river and in a money sentence?",
     "No. The whole vectors are nearly equal (a character LSTM is dominated by the word's own letters), but the "
     "context part differs: the two river sentences score 0.994, each river sentence against the money one "
     "0.92–0.93.", "elmo", "elmo-bank"),
]


def build() -> None:
    gr.Markdown(INTRO)
    lesson_slot = gr.Column()
    models = gr.State(None)  # None: the shipped checkpoints; a ModelSet after "Train"
    try:
        badge_text = _badge(lstm.shipped_models(), retrained=False)
    except FileNotFoundError:
        badge_text = "**Models:** the shipped weights are missing; run `python scripts/train_rnn.py` or use Train."
    badge = gr.Markdown(badge_text)

    with gr.Tab("Gates & predictions", id="gates") as gates_tab:
        with gr.Row():
            text = gr.Textbox(label=f"Text (up to {lstm.MAX_PROMPT_CHARS} characters)", lines=2, scale=4,
                              value=INSPECT_EXAMPLES[0][0])
            with gr.Column(scale=1):
                signal = gr.Dropdown(list(SIGNALS), value="forget gate f", label="LSTM signal to show")
                units = gr.Slider(4, 64, value=24, step=1, label="units shown (most active)")
        inspect_button = gr.Button("Look inside", variant="primary")
        note = gr.Markdown()
        lstm_plot = gr.Plot(empty_figure("Press “Look inside” to see the LSTM's gates."), show_label=False)
        rnn_plot = gr.Plot(empty_figure("The RNN's hidden state appears here."), show_label=False)
        prob_plot = gr.Plot(empty_figure("Next-token probabilities appear here."), show_label=False)
        table = gr.Dataframe(headers=["t", "input", "actual next", "RNN top-3", "LSTM top-3"], interactive=False,
                             max_height=360, buttons=TABLE_BUTTONS)
        inspect_button.click(inspect_text, [text, signal, units, models], [note, lstm_plot, rnn_plot, prob_plot, table],
                             api_name="lstm_inspect")
        inspect_view = presets.View("lstm", "inspect", [text, signal, units], [note, lstm_plot, rnn_plot, prob_plot, table],
                                    inspect_shipped, INSPECT_PRESETS, where=gates_tab)
        inspect_view.buttons()

    with gr.Tab("Vanishing gradients", id="gradients") as gradients_tab:
        gr.Markdown("The loss at the last step T is back-propagated to every earlier hidden state h_t. How much "
                    "gradient arrives after T − t steps decides how far back a model can learn from. Measured with "
                    "autograd on held-out Moby-Dick text (never trained on). On next-character loss the shipped "
                    "pair is about level (see the badge): a character's odds depend mostly on the last few letters. "
                    "Where they differ is how far back the training signal reaches.")
        with gr.Row():
            length = gr.Slider(10, 200, value=100, step=1, label="sequence length T")
            forget_text = gr.Textbox(label="text for the forget-gate product", scale=3,
                                     value="The whale, which Ahab had chased for years across every ocean, was white.")
        grad_button = gr.Button("Measure", variant="primary")
        summary = gr.Markdown()
        grad_plot = gr.Plot(empty_figure("Press “Measure”."), show_label=False)
        forget_plot = gr.Plot(empty_figure("The forget-gate products appear here."), show_label=False)
        grad_button.click(measure_gradients, [length, forget_text, models], [summary, grad_plot, forget_plot],
                          api_name="lstm_gradients")
        gradients_view = presets.View("lstm", "gradients", [length, forget_text], [summary, grad_plot, forget_plot],
                                      gradients_shipped, GRADIENT_PRESETS, where=gradients_tab)
        gradients_view.buttons()

    with gr.Tab("Generate", id="generate") as generate_tab:
        with gr.Row():
            prompt = gr.Textbox(label="Prompt", value="Call me Ishmael. ", scale=3)
            gen_length = gr.Slider(1, lstm.MAX_GENERATE, value=200, step=1, label="tokens to generate")
            temperature = gr.Slider(0.05, 2.0, value=0.8, step=0.05, label="temperature")
            seed = gr.Number(value=0, precision=0, minimum=0, maximum=2**32 - 1, label="seed")
        gen_button = gr.Button("Generate with both", variant="primary")
        gen_note = gr.Markdown()
        with gr.Row():
            rnn_out = gr.Textbox(label="Vanilla RNN", lines=8)
            lstm_out = gr.Textbox(label="LSTM", lines=8)
        gen_button.click(generate_both, [prompt, gen_length, temperature, seed, models], [rnn_out, lstm_out, gen_note],
                         api_name="lstm_generate")
        presets.View("lstm", "generate", [prompt, gen_length, temperature, seed], [rnn_out, lstm_out, gen_note],
                     generate_shipped, GENERATE_PRESETS, where=generate_tab).buttons()

    with gr.Tab("ELMo: both directions", id="elmo") as elmo_tab:
        gr.Markdown("ELMo (§7) runs a forward LSTM (left → right) and a backward LSTM (right → left) over the "
                    "sentence and concatenates their states, so the same word gets a different vector in each "
                    "context. Here: the shipped character LSTM and a second one trained on reversed text; a word's "
                    "vector is [forward state at its last letter ⊕ backward state at its first letter]. A character "
                    "LSTM's state is dominated by the letters just read, so whole vectors of one word look ~0.99 "
                    "alike; the heatmap compares the **context part**: the vector minus the same word read alone "
                    "(a static embedding would have no context part at all). Same-sense pairs should score higher.")
        with gr.Row():
            word = gr.Textbox(label="word", value=ELMO_EXAMPLES[0][0], scale=1)
            first = gr.Textbox(label="sentence 1", value=ELMO_EXAMPLES[0][1], scale=3)
        with gr.Row():
            second = gr.Textbox(label="sentence 2", value=ELMO_EXAMPLES[0][2])
            third = gr.Textbox(label="sentence 3 (optional)", value=ELMO_EXAMPLES[0][3])
        elmo_button = gr.Button("Compare", variant="primary")
        elmo_note = gr.Markdown()
        with gr.Row():
            elmo_plot = gr.Plot(empty_figure("Press “Compare”."), show_label=False)
            elmo_table = gr.Dataframe(headers=["pair", "whole vector", "context part"], interactive=False,
                buttons=TABLE_BUTTONS)
        elmo_button.click(compare_contexts, [word, first, second, third], [elmo_note, elmo_plot, elmo_table],
                          api_name="lstm_elmo")
        elmo_view = presets.View("lstm", "elmo", [word, first, second, third], [elmo_note, elmo_plot, elmo_table],
                                 compare_contexts, ELMO_PRESETS, where=elmo_tab)
        elmo_view.buttons()
    elmo_layers.build_tab()

    with gr.Tab("Train", id="train"):
        gr.Markdown("Train a fresh RNN and LSTM (embedding 32, hidden 128) on Moby-Dick, on the same batches, and "
                    "use them in every view of this tab for your session (ELMo keeps the shipped pair). The shipped "
                    "models had 5,000 steps; a short run shows the curves but writes worse text. Word-level keeps the "
                    "3,000 most frequent of Moby-Dick's ~17,000 words; the rest (about 11% of running text) become "
                    "`<unk>`, and generation never writes `<unk>`.")
        with gr.Row():
            level = gr.Radio([("characters", "char"), ("words", "word")], value="char", label="tokens")
            steps = gr.Slider(10, 5000, value=600, step=10, label="steps (batch 32 × 64 tokens)")
            seconds = gr.Slider(10, jobs.TRAIN_SECONDS, value=jobs.TRAIN_SECONDS, step=10, label="time limit (seconds)",
                                info="At most the server's budget for one training run.")
        with gr.Row():
            train_button = gr.Button("Train", variant="primary")
            reset_button = gr.Button("Back to the shipped models")
        loss_plot = gr.Plot(empty_figure("The loss curves appear here while training."), show_label=False)
        train_button.click(train_models, [level, steps, seconds], [loss_plot, badge, models], api_name="lstm_train", **TRAIN_QUEUE)
        reset_button.click(use_shipped, None, [badge, models], api_name="lstm_reset")

    views = {"inspect": inspect_view, "gradients": gradients_view, "elmo": elmo_view}
    with lesson_slot:
        presets.lesson_table(LESSON, views)
