"""RNN & LSTM tab (issue #5): gates, vanishing gradients, generation, ELMo's two directions, and retraining."""
from __future__ import annotations

from typing import TYPE_CHECKING

import gradio as gr
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.loading import jobs
from core.text.errors import ModelUnavailableError, UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_SHORT_TEXT_CHARS, MAX_WORD_CHARS
from demo.kit import lessons, presets
from demo.recurrent import lstm_generate, lstm_train
from demo.why import why
from demo.recurrent import elmo as elmo_layers  # the ELMo sub-tab with two layers and the weighted sum (§7)
from demo.server.handlers import (TRAIN_QUEUE, TRAINER_GPU_SECONDS, friendly_errors, gpu_handler, number_in_range,
                                  stopped_error, stopped_note, training_run)
from demo.kit.widgets import TABLE_BUTTONS, sig4
from demo.kit.figures import COLORWAY, heatmap, lines, styled
from demo.kit.i18n import label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
lstm = lazy_import("core.recurrent.lstm")
if TYPE_CHECKING:  # annotations only: the module imports torch, which the app loads on first use
    from core.recurrent.lstm import ModelSet

TITLE = "RNN & LSTM"
HISTORY = [(6, "LSTM 1997 · RNN LM 2010", "RNN / LSTM", "lstm", "forget-gate"),  # the Overview's timeline
           (13, "2018", "ELMo", "pretrain", "elmo-layers-bank")]

# Dropdown values (language-free; the API takes them) → the gate's name in core/lstm. Labels: lstm.signal_<name>.
SIGNALS = {"forget gate f": "forget", "input gate i": "input", "output gate o": "output",
           "candidate C̃": "candidate", "cell state C": "cell", "hidden state h": "hidden"}
SIGNED = {"candidate", "cell", "hidden"}  # values around 0: diverging colours

INSPECT_EXAMPLES = [
    ["Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse."],
    ['"Hast seen the White Whale?" cried Ahab, and the mates (all three of them) looked at him.'],
    ["I was born in Jingdezhen, the porcelain capital of China, and my mother tongue is Chinese."],
    ["我的母语是汉语 — my mother tongue."],
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


def _models(state: ModelSet | None) -> ModelSet:
    if state is not None:
        return state
    try:
        return lstm.shipped_models()
    except FileNotFoundError as exc:
        raise ModelUnavailableError("lstm.weights_missing") from exc


def _badge(models: ModelSet, retrained: bool) -> str:
    cfg = models.lstm.config
    text = t("lstm.badge", where=t("lstm.badge_retrained" if retrained else "lstm.badge_shipped"),
             level=t(f"lstm.level_{models.vocab.level}"), vocab=f"{len(models.vocab):,}", embed=cfg["embed_size"],
             hidden=cfg["hidden_size"], device=models.lstm.head.weight.device)
    held = {name: models.info.get(name, {}).get("held_out_loss_nats") for name in ("rnn", "lstm")}
    if all(held.values()):
        text += t("lstm.badge_held_out", rnn=f"{held['rnn']:.2f}", lstm=f"{held['lstm']:.2f}",
                  level=t(f"lstm.level_{models.vocab.level}"))
    return text


def _shown(token: str) -> str:
    return "␣" if token == " " else token


def _unknown_note(unknown: list[str]) -> str:
    if not unknown:
        return ""
    return t("lstm.unknown_note", count=len(unknown), chars=lstm.name_tokens(unknown))


def _top_units(values: np.ndarray, count: int) -> np.ndarray:
    """The count units that vary most over time (the readable ones), in unit order."""
    return np.sort(np.argsort(values.var(axis=0))[::-1][:count])


def _unit_heatmap(values: np.ndarray, tokens: list[str], count: int, title: str, signed: bool):
    units = _top_units(values, count)
    kwargs = dict(colorscale="RdBu_r", zmin=-1, zmax=1) if signed else dict(zmin=0, zmax=1)
    if signed and np.abs(values).max() > 1:  # the cell state is not bounded by 1
        bound = float(np.abs(values[:, units]).max())
        kwargs.update(zmin=-bound, zmax=bound)
    return heatmap(values[:, units].T, [_shown(token) for token in tokens], [t("lstm.unit_n", unit=u) for u in units], title,
                   x_title=t("lstm.axis_token_t"), y_title=t("lstm.axis_unit"), annotate=False, height=140 + 18 * len(units),
                   **kwargs)


# ----------------------------------------------------------------------------------------------------------------
# Handlers


@friendly_errors
@gpu_handler
def inspect_text(text: str, signal: str, units: float, state: ModelSet | None = None):
    """Gates/cell heatmaps for the LSTM, the RNN's hidden state, and next-token predictions per position."""
    models = _models(state)
    result = lstm.inspect(models, text)
    key = SIGNALS.get(signal)
    if key is None:
        raise UserInputError("lstm.pick_signal", choices=", ".join(SIGNALS))
    count = int(number_in_range(units, t("lstm.units_name"), 4, 64))
    lstm_fig = _unit_heatmap(np.array(result.lstm_gates[key]), result.tokens, count,
                             t("lstm.fig_gate", signal=t(f"lstm.signal_{key}"), count=count), key in SIGNED)
    rnn_fig = _unit_heatmap(np.array(result.rnn_hidden), result.tokens, count,
                            t("lstm.fig_rnn_hidden", count=count), True)
    positions = list(range(1, len(result.tokens)))
    prob_fig = lines(positions, {"RNN": result.actual_prob["rnn"], "LSTM": result.actual_prob["lstm"]},
                     t("lstm.fig_actual_prob"), x_title=t("lstm.axis_next_position"),
                     y_title=t("lstm.axis_actual_prob"), height=360)
    rows = []
    for step, token in enumerate(result.tokens):
        nxt = result.tokens[step + 1] if step + 1 < len(result.tokens) else "—"
        rows.append([step, _shown(token), _shown(nxt),
                     " · ".join(f"{_shown(tok)} {p:.2f}" for tok, p in result.next_token["rnn"][step]),
                     " · ".join(f"{_shown(tok)} {p:.2f}" for tok, p in result.next_token["lstm"][step])])
    note = _unknown_note(result.unknown) or t("lstm.all_known", count=len(result.tokens))
    table = pd.DataFrame(rows, columns=[t(f"lstm.col_inspect_{i}") for i in range(5)])
    return note, lstm_fig, rnn_fig, prob_fig, table


@friendly_errors
@gpu_handler
def measure_gradients(length: float, text: str, state: ModelSet | None = None):
    """‖∂loss_T/∂h_t‖ vs T−t for both models on held-out text, and the forget-gate products on the learner's text."""
    models = _models(state)
    length = int(number_in_range(length, t("lstm.sequence_length_name"), 10, 200))
    windows = lstm.corpus_windows(models.vocab, length)
    norms = {"RNN": lstm.gradient_norms(models.rnn, windows), "LSTM": lstm.gradient_norms(models.lstm, windows)}
    distance = list(range(length))
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=(t("lstm.vanilla_rnn"), "LSTM"))
    for col, (name, values) in enumerate(norms.items(), start=1):
        fig.add_trace(go.Scatter(x=distance, y=values, name=name, mode="lines", line=dict(color=COLORWAY[col - 1],
                                                                                           width=3)), 1, col)
        fig.update_xaxes(title_text=t("lstm.axis_distance"), row=1, col=col)
    fig.update_yaxes(type="log", title_text="‖∂loss_T / ∂h_t‖", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=2)
    fig.update_yaxes(exponentformat="power")
    fig.update_layout(showlegend=False)
    grad_fig = styled(fig, t("lstm.fig_gradients", windows=len(windows)), 420)

    ids, tokens, unknown = lstm.encode_prompt(models.vocab, text)
    if len(ids) < 2:
        raise UserInputError("lstm.forget_two_tokens")
    prods = np.array(lstm.forget_products(models.lstm, ids))  # (T, H), row d = distance d
    longest = np.argsort(prods[-1])[::-1][:4]
    series = {t("lstm.median_units"): np.median(prods, axis=1).tolist()}
    series.update({t("lstm.unit_n", unit=u): prods[:, u].tolist() for u in longest})
    forget_fig = lines(list(range(len(ids))), series, t("lstm.fig_forget"),
                       x_title=t("lstm.axis_distance"), y_title=t("lstm.axis_forget_product"), log_y=True)
    forget_fig.update_yaxes(exponentformat="power")

    def survive(values: list[float], d: int) -> str:
        return f"{values[d] / values[0]:.1e}"

    far = min(length - 1, 50)
    summary = t("lstm.gradients_summary", far=far, rnn=survive(norms["RNN"], far),
                lstm=survive(norms["LSTM"], far)) + " " + _unknown_note(unknown)
    return summary, grad_fig, forget_fig


@friendly_errors
@gpu_handler
def compare_contexts(word: str, first: str, second: str, third: str):
    """Cosine similarity of one word's ELMo-style vector (forward ⊕ backward LSTM states) across sentences."""
    models = _models(None)  # the shipped pair: a retrained session has no backward LSTM
    sentences = [s for s in (first, second, third) if (s or "").strip()]
    if len(sentences) < 2:
        raise UserInputError("lstm.two_sentences")
    vectors = [lstm.context_vector(models, s, word) for s in sentences]
    labels = [f"S{k + 1}" for k in range(len(vectors))]  # S1, S2, S3 in both languages
    sims = np.array([[lstm.cosine(a.context, b.context) for b in vectors] for a in vectors])
    fig = heatmap(sims, labels, labels, t("lstm.fig_elmo", word=word.strip()),
                  zmin=-1, zmax=1, colorscale="RdBu_r", value_format=".3f", height=380)
    rows = []
    for a in range(len(vectors)):
        for b in range(a + 1, len(vectors)):
            va, vb = vectors[a], vectors[b]
            rows.append([f"{labels[a]} – {labels[b]}", sig4(lstm.cosine(va.both, vb.both)),
                         sig4(lstm.cosine(va.context, vb.context))])
    note = "\n".join(f"- **{label}**: {v.sentence[:v.span[0]]}**{v.sentence[v.span[0]:v.span[1]]}**"
                     f"{v.sentence[v.span[1]:]}" for label, v in zip(labels, vectors))
    return note, fig, pd.DataFrame(rows, columns=[t(f"lstm.col_elmo_{i}") for i in range(3)])


@friendly_errors
@gpu_handler(duration=TRAINER_GPU_SECONDS)
def train_models(level: str, steps: float, seconds: float, progress=gr.Progress(), request: gr.Request = None):
    """Retrain an RNN and an LSTM from scratch on Moby-Dick, streaming the loss curves; the result is this session's.
    The run stops at its time limit (at most the server's budget, core.loading.jobs) or when this session starts another."""
    if level not in ("char", "word"):
        raise UserInputError("lstm.pick_level")
    steps = int(number_in_range(steps, t("lstm.steps_name"), 10, 5000))
    seconds = number_in_range(seconds, t("lstm.time_limit_name"), 10, jobs.TRAIN_SECONDS)
    with training_run(request, seconds) as budget:
        yield from _train(level, steps, budget, progress)


def _train(level: str, steps: int, budget: jobs.Budget, progress):
    progress(0, desc=t("lstm.progress_vocab"))
    train_text, held_text, vocab = lstm_train.corpus(level)
    history = {"RNN": [], "LSTM": []}
    models = None
    stopped = None
    for step, rnn_loss, lstm_loss, models in lstm.train_pair(vocab, train_text, steps=steps, seconds=budget.seconds,
                                                            seq_len=64):
        history["RNN"].append(rnn_loss)
        history["LSTM"].append(lstm_loss)
        progress(step / steps, desc=t("lstm.progress_step", step=step, steps=steps))
        if step % 10 == 0 or step == steps:
            yield _loss_figure(history, level), t("lstm.training_step", step=step, steps=steps), gr.skip()
        stopped = budget.stop_reason()
        if stopped:
            break
    if stopped == jobs.REPLACED:
        raise stopped_error(stopped, budget.elapsed, len(history["RNN"]), steps)
    held = lstm.corpus_ids(held_text, vocab)
    models.info = {name: {"steps": len(history["RNN"]), "held_out_loss_nats": lstm.evaluate(getattr(models, name), held)}
                   for name in ("rnn", "lstm")}
    note = stopped_note(stopped, budget.elapsed, len(history["RNN"]), steps)
    yield _loss_figure(history, level), _badge(models, retrained=True) + (f"\n\n{note}" if note else ""), models


def _loss_figure(history: dict[str, list[float]], level: str):
    return lines(list(range(1, len(history["RNN"]) + 1)), history, t("lstm.fig_loss"),
                 x_title=t("lstm.axis_step"), y_title=t("lstm.axis_loss", level=t(f"lstm.level_{level}")))


@friendly_errors
def shipped_badge() -> str:
    try:
        return _badge(lstm.shipped_models(), retrained=False)
    except FileNotFoundError:
        return t("lstm.badge_missing")


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


P = presets.Preset
INSPECT_PRESETS = [
    P("forget-gate", label("lstm.preset_forget_gate"), (INSPECT_EXAMPLES[0][0], "forget gate f", 24), "§6"),
    P("cell-state", label("lstm.preset_cell_state"), (INSPECT_EXAMPLES[1][0], "cell state C", 24), "§6"),
    P("input-gate-unknown", label("lstm.preset_input_gate"), (INSPECT_EXAMPLES[2][0], "input gate i", 24), "§6"),
    P("chinese-unknown", label("lstm.preset_chinese"), (INSPECT_EXAMPLES[3][0], "forget gate f", 24), "§6"),
]
GRADIENT_PRESETS = [
    P("rnn-vs-lstm-gradients", label("lstm.preset_gradients_100"),
      (100, "The whale, which Ahab had chased for years across every ocean, was white."), "§6"),
    P("long-gradients", label("lstm.preset_gradients_200"),
      (200, "Call me Ishmael. Some years ago, never mind how long precisely."), "§6"),
]
ELMO_PRESETS = [P(f"elmo-{row[0]}", f"ELMo: {row[0]}", tuple(row), "§7") for row in ELMO_EXAMPLES]
# (seed §, question, answer, view key, preset)
LESSON = [
    ("§6", label("lstm.lesson_1_q"), label("lstm.lesson_1_a"), "inspect", "forget-gate"),
    ("§6", label("lstm.lesson_2_q"), label("lstm.lesson_2_a"), "gradients", "rnn-vs-lstm-gradients"),
    ("§7", label("lstm.lesson_3_q"), label("lstm.lesson_3_a"), "elmo", "elmo-bank"),
]


def build() -> None:
    gr.Markdown(label("lstm.intro"))
    lesson_slot = gr.Column()
    models = gr.State(None)  # None: the shipped checkpoints; a ModelSet after "Train"
    badge = gr.Markdown()
    # Filled on page load, in the learner's language: what gr.Markdown(shipped_badge) does, without also calling it
    # while the app is built (which would load the models, and torch with them: core/loading/lazy.py).
    badge.attach_load_event(shipped_badge, None)

    with gr.Tabs(overflow_behavior="wrap"):
        with gr.Tab(label("lstm.tab_gates"), id="gates") as gates_tab:
            with gr.Row():
                text = gr.Textbox(label=label("lstm.text_label"), lines=2, scale=4, value=INSPECT_EXAMPLES[0][0],
                                  info=label("lstm.text_info"), max_length=MAX_SHORT_TEXT_CHARS)
                with gr.Column(scale=1):
                    signal = gr.Dropdown([(label(f"lstm.signal_{key}"), value) for value, key in SIGNALS.items()],
                                         value="forget gate f", label=label("lstm.signal"))
                    units = gr.Slider(4, 64, value=24, step=1, label=label("lstm.units"))
            inspect_button = gr.Button(label("lstm.look_inside"), variant="primary")
            note = gr.Markdown()
            lstm_plot = gr.Plot(show_label=False)
            rnn_plot = gr.Plot(show_label=False)
            prob_plot = gr.Plot(show_label=False)
            table = gr.Dataframe(headers=[""] * 5, interactive=False,
                                 max_height=360, buttons=TABLE_BUTTONS)
            inspect_button.click(inspect_text, [text, signal, units, models], [note, lstm_plot, rnn_plot, prob_plot, table],
                                 api_name="lstm_inspect")
            inspect_view = presets.View("lstm", "inspect", [text, signal, units], [note, lstm_plot, rnn_plot, prob_plot, table],
                                        inspect_shipped, INSPECT_PRESETS, where=gates_tab)
            inspect_view.buttons()

        with gr.Tab(label("lstm.tab_gradients"), id="gradients") as gradients_tab:
            gr.Markdown(label("lstm.gradients_intro"))
            with gr.Row():
                length = gr.Slider(10, 200, value=100, step=1, label=label("lstm.sequence_length"))
                forget_text = gr.Textbox(label=label("lstm.forget_text"), scale=3,
                                         value="The whale, which Ahab had chased for years across every ocean, was white.",
                                         max_length=MAX_SHORT_TEXT_CHARS)
            grad_button = gr.Button(label("lstm.measure"), variant="primary")
            summary = gr.Markdown()
            grad_plot = gr.Plot(show_label=False)
            forget_plot = gr.Plot(show_label=False)
            grad_button.click(measure_gradients, [length, forget_text, models], [summary, grad_plot, forget_plot],
                              api_name="lstm_gradients")
            gradients_view = presets.View("lstm", "gradients", [length, forget_text], [summary, grad_plot, forget_plot],
                                          gradients_shipped, GRADIENT_PRESETS, where=gradients_tab)
            gradients_view.buttons()

        lstm_generate.build_tab(models)

        with gr.Tab(label("lstm.tab_elmo"), id="elmo") as elmo_tab:
            gr.Markdown(label("lstm.elmo_intro"))
            with gr.Row():
                word = gr.Textbox(label=label("lstm.word"), value=ELMO_EXAMPLES[0][0], scale=1, max_length=MAX_WORD_CHARS)
                first = gr.Textbox(label=label("lstm.sentence_1"), value=ELMO_EXAMPLES[0][1], scale=3,
                                   max_length=MAX_SHORT_TEXT_CHARS)
            with gr.Row():
                second = gr.Textbox(label=label("lstm.sentence_2"), value=ELMO_EXAMPLES[0][2],
                                    max_length=MAX_SHORT_TEXT_CHARS)
                third = gr.Textbox(label=label("lstm.sentence_3"), value=ELMO_EXAMPLES[0][3],
                                   max_length=MAX_SHORT_TEXT_CHARS)
            elmo_button = gr.Button(label("lstm.compare"), variant="primary")
            elmo_note = gr.Markdown()
            with gr.Row():
                elmo_plot = gr.Plot(show_label=False)
                elmo_table = gr.Dataframe(headers=[""] * 3, interactive=False,
                                          buttons=TABLE_BUTTONS)
            elmo_button.click(compare_contexts, [word, first, second, third], [elmo_note, elmo_plot, elmo_table],
                              api_name="lstm_elmo")
            elmo_view = presets.View("lstm", "elmo", [word, first, second, third], [elmo_note, elmo_plot, elmo_table],
                                     compare_contexts, ELMO_PRESETS, where=elmo_tab)
            elmo_view.buttons()
        elmo_layers.build_tab()

        with gr.Tab(label("lstm.tab_train"), id="train") as train_tab:
            gr.Markdown(label("lstm.train_intro"))
            before_bar = gr.Column()
            with gr.Row():
                level = gr.Radio([(label("lstm.characters"), "char"), (label("lstm.words"), "word")], value="char",
                                 label=label("lstm.tokens"))
                steps = gr.Slider(10, 5000, value=600, step=10, label=label("lstm.steps"))
                seconds = gr.Slider(10, jobs.TRAIN_SECONDS, value=jobs.TRAIN_SECONDS, step=10,
                                    label=label("lstm.time_limit"), info=label("lstm.time_limit_info"))
            with gr.Row():
                train_button = gr.Button(label("lstm.train"), variant="primary")
                reset_button = gr.Button(label("lstm.back_to_shipped"))
            loss_plot = gr.Plot(show_label=False)
            results_note = gr.Markdown()
            results = gr.Dataframe(headers=[label(key) for key in lstm_train.COLUMNS], interactive=False, wrap=True,
                                   buttons=TABLE_BUTTONS)
            train_button.click(train_models, [level, steps, seconds], [loss_plot, badge, models], api_name="lstm_train",
                               **TRAIN_QUEUE).success(lstm_train.after_training, [models], [results, results_note],
                                                      api_name="lstm_trained", api_visibility="undocumented")
            reset_button.click(use_shipped, None, [badge, models], api_name="lstm_reset")
            # Before training (first open, or a preset): the pair a run starts from, random weights and all.
            before = presets.View("lstm", "train", [level], [loss_plot, results, results_note],
                                  lstm_train.before_training, lstm_train.PRESETS, where=train_tab)
            with before_bar:
                before.buttons()
        why.build_lstm()  # why this next character: attributions on the shipped LSTM (issue #35)

    views = {"inspect": inspect_view, "gradients": gradients_view, "elmo": elmo_view}
    with lesson_slot:
        lessons.lesson_table(LESSON, views)
