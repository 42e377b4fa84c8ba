"""BERT masked LM tab, "Retrain the char-BERT" sub-tab: a short masked-LM run from scratch, as the RNN & LSTM tab's
Train sub-tab does for its pair (issue #34 item 6). core/mlm/char_retrain.py sets up the run with the shipped
recipe at a smaller scale; the run takes the session's training slot and the server's time budget (core/loading/jobs.py) and
draws its loss curve as it goes. Before any run (first open, or the preset) the view shows the model a run starts
from: its held-out loss at step 0, next to what a uniform guess scores.
"""
from __future__ import annotations

from functools import lru_cache

import gradio as gr

from core.loading import jobs
from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import MAX_CHAR_BERT_STEPS
from core.text.textio import read_text_upload
from demo.kit import presets
from demo.server.handlers import (TRAIN_QUEUE, TRAINER_GPU_SECONDS, friendly_errors, gpu_handler, number_in_range,
                         stopped_error, training_run)
from demo.kit.figures import lines
from demo.kit.i18n import label, t

retrain = lazy_import("core.mlm.char_retrain")  # imports torch: loaded on first use (core/loading/lazy.py)

MOBY, UPLOAD = "moby_dick", "upload"  # language-free choice values; the browser shows their labels
DEFAULT_STEPS = 300
PRESETS = [presets.Preset("char-bert-before-training", label("mlm.train.preset_before"), (MOBY, DEFAULT_STEPS), "§13")]


def corpus_text(source: str, upload: str | None) -> str:
    if source == UPLOAD:
        if not upload:
            raise UserInputError("mlm.train.no_upload")
        return read_text_upload(upload)
    if source != MOBY:
        raise UserInputError("mlm.train.pick_corpus")
    return load_corpus(MOBY)


def _steps(steps) -> int:
    return int(number_in_range(steps, "mlm.train.steps_name", 10, MAX_CHAR_BERT_STEPS))


def _figure(steps: list[int], losses: list[float], uniform: float, held: tuple[int, float] | None = None):
    """The training loss per step beside a uniform guess's; the held-out loss as one point where it was measured."""
    x = steps or [held[0]]
    series = {t("mlm.train.series_train"): losses} if losses else {}
    series[t("mlm.train.series_uniform")] = [uniform] * len(x)
    if held is not None:
        series[t("mlm.train.series_held_out")] = [None] * (len(x) - 1) + [held[1]]
    return lines(x, series, t("mlm.train.fig_title"), x_title=t("mlm.train.axis_step"),
                 y_title=t("mlm.train.axis_loss"))


@lru_cache(maxsize=1)  # seeded: a run on this corpus always starts from the same model
def _start(source: str) -> tuple[int, float, float, int]:
    """(characters, held-out loss at step 0 in windows of 8, ln V, training characters) of a run's starting model."""
    short = retrain.prepare_run(corpus_text(source, None), DEFAULT_STEPS)
    return (len(short.loaded.tokenizer.characters), retrain.held_out(short, 8)["loss_nats"], short.uniform_nats,
            short.loaded.info["corpus_chars"])


@friendly_errors
@gpu_handler
def before_training(source: str, steps):
    """The model a run starts from: its held-out masked-LM loss at step 0 (windows of 8 characters)."""
    _steps(steps)
    vocab, loss, uniform, chars = _start(str(source))  # a failure (no text) is raised, never cached
    note = t("mlm.train.before", vocab=vocab, loss=f"{loss:.4g}", uniform=f"{uniform:.4g}", chars=f"{chars:,}")
    return _figure([], [], uniform, (0, loss)), note


@friendly_errors
@gpu_handler(duration=TRAINER_GPU_SECONDS)
def train(source: str, upload: str | None, steps, progress=gr.Progress(), request: gr.Request = None):
    """Train a char-BERT from scratch on the chosen text, streaming its loss curve; then score the held-out split."""
    steps = _steps(steps)
    progress(0, desc=t("mlm.train.progress_setup"))
    short = retrain.prepare_run(corpus_text(source, upload), steps)
    done, losses, window, stopped = [], [], 8, None
    with training_run(request) as budget:
        for step, loss, window in retrain.run(short):
            done.append(step)
            losses.append(loss)
            progress(step / steps, desc=t("mlm.train.progress_step", step=step, steps=steps))
            if step % 20 == 0 or step == steps:
                yield _figure(done, losses, short.uniform_nats), t("mlm.train.running", step=step, steps=steps,
                                                                   loss=f"{loss:.4g}", window=window)
            stopped = budget.stop_reason()
            if stopped:
                break
    if stopped == jobs.REPLACED:
        raise stopped_error(stopped, budget.elapsed, len(done), steps)
    progress(1, desc=t("mlm.train.progress_held_out"))
    scores = retrain.held_out(short, window)
    note = t("mlm.train.done", steps=len(done), seconds=f"{budget.elapsed:.0f}", loss=f"{scores['loss_nats']:.4g}",
             accuracy=f"{scores['accuracy']:.2%}", window=window, uniform=f"{short.uniform_nats:.4g}",
             vocab=len(short.loaded.tokenizer.characters))
    stop = t("mlm.train.stopped_budget", seconds=f"{budget.seconds:.0f}", done=len(done), planned=steps) \
        if stopped == jobs.BUDGET else ""
    yield (_figure(done, losses, short.uniform_nats, (done[-1] if done else 0, scores["loss_nats"])),
           note + (f"\n\n{stop}" if stop else ""))


def build() -> presets.View:
    """The sub-tab's layout and events (inside the tab's gr.Tabs)."""
    with gr.Tab(label("mlm.train.tab"), id="train") as train_tab:
        gr.Markdown(label("mlm.train.intro"))
        bar = gr.Column()
        with gr.Row():
            source = gr.Radio([(label("mlm.train.corpus_moby"), MOBY), (label("mlm.train.corpus_upload"), UPLOAD)],
                              value=MOBY, label=label("mlm.train.corpus"))
            upload = gr.File(label=label("mlm.train.upload"), file_types=[".txt"], type="filepath")
            steps = gr.Slider(10, MAX_CHAR_BERT_STEPS, value=DEFAULT_STEPS, step=10, label=label("mlm.train.steps"),
                              info=label("mlm.train.steps_info"))
        button = gr.Button(label("mlm.train.button"), variant="primary")
        plot = gr.Plot(show_label=False)
        note = gr.Markdown()
        button.click(train, [source, upload, steps], [plot, note], api_name="mlm_train", **TRAIN_QUEUE)
        view = presets.View("mlm", "train", [source, steps], [plot, note], before_training, PRESETS, where=train_tab)
        with bar:
            view.buttons()
    return view
