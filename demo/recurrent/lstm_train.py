"""RNN & LSTM tab, "Train" sub-tab: the pair before training and after it, scored the same way (issue #31).

Before training the view shows the very RNN and LSTM that ``core.recurrent.lstm.train_pair`` starts from (untrained_pair: the
same seed and initialisation), with their held-out loss at step 0 and a sample from each; a uniform guess over V
tokens scores ln V, and a random pair lands close to it. After a run, the same table holds the trained pair.
"""
from __future__ import annotations

import math
from functools import lru_cache

import gradio as gr
import pandas as pd

from core.text.corpora import load_corpus
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from demo.kit import presets, sampling
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import sig4
from demo.kit.figures import lines
from demo.kit.i18n import label, t

lstm = lazy_import("core.recurrent.lstm")  # imports torch: loaded on first use (core/loading/lazy.py)

SAMPLE_PROMPT = "Call me Ishmael. "
SAMPLE_LENGTH = {"char": 120, "word": 25}  # tokens sampled after the prompt, at temperature 1 and seed 0
MIN_COUNT = {"char": 10, "word": 3}  # a rarer token is <unk> in the vocabulary training builds
COLUMNS = ("lstm.before.col_model", "lstm.before.col_state", "lstm.before.col_loss", "lstm.before.col_sample")

PRESETS = [presets.Preset("before-training", label("lstm.before.preset_char"), ("char",), "§6"),
           presets.Preset("before-training-words", label("lstm.before.preset_word"), ("word",), "§6")]


@lru_cache(maxsize=2)  # one per level: the split and the vocabulary depend on nothing else
def corpus(level: str):
    """(training text, held-out text, vocabulary) of a run at this level: Moby-Dick minus its last 5%."""
    if level not in MIN_COUNT:
        raise UserInputError("lstm.pick_level")
    train_text, held_text = lstm.split_text(load_corpus("moby_dick"))
    return train_text, held_text, lstm.Vocab.build(train_text, level, min_count=MIN_COUNT[level])


def held_out_losses(models) -> dict[str, float]:
    """Mean cross-entropy (nats per token) of each model on the held-out text, as the badge reports it."""
    held = lstm.corpus_ids(corpus(models.vocab.level)[1], models.vocab)
    return {name: lstm.evaluate(getattr(models, name), held) for name in ("rnn", "lstm")}


def results_table(models, losses: dict[str, float], state: str) -> pd.DataFrame:
    """One row per model: its name, which weights (``state``), its held-out loss and what it writes after the
    opening words of Moby-Dick (the prompt itself is not shown)."""
    def sample(model) -> str:
        length = SAMPLE_LENGTH[models.vocab.level]
        return lstm.generate(model, models.vocab, SAMPLE_PROMPT, length, sampling.settings(1.0, 0, 1.0, 0))

    rows = [[name, state, sig4(losses[key]), sample(getattr(models, key))]
            for key, name in (("rnn", t("lstm.vanilla_rnn")), ("lstm", "LSTM"))]
    return pd.DataFrame(rows, columns=[t(key) for key in COLUMNS])


def _facts(models, losses: dict[str, float]) -> dict:
    vocab = len(models.vocab)
    return dict(vocab=f"{vocab:,}", uniform=f"{math.log(vocab):.4g}", rnn=f"{losses['rnn']:.4g}",
                lstm=f"{losses['lstm']:.4g}", level=t(f"lstm.level_{models.vocab.level}"))


@friendly_errors
@gpu_handler
def before_training(level: str):
    """The pair a run at this level starts from: held-out loss at step 0 (the figure), the table, and a note."""
    models = lstm.untrained_pair(corpus(level)[2])
    losses = held_out_losses(models)
    fig = lines([0], {t("lstm.vanilla_rnn"): [losses["rnn"]], "LSTM": [losses["lstm"]]}, t("lstm.before.fig_loss"),
                x_title=t("lstm.axis_step"), y_title=t("lstm.axis_loss", level=t(f"lstm.level_{level}")))
    return (fig, results_table(models, losses, t("lstm.before.state_before")),
            t("lstm.before.summary", **_facts(models, losses)))


@friendly_errors
@gpu_handler
def after_training(models):
    """The same table for the session's trained pair (after a run ends), next to what it started from."""
    if models is None or not models.info:  # no finished run in this session: keep what is shown
        return gr.skip(), gr.skip()
    losses = {name: models.info[name]["held_out_loss_nats"] for name in ("rnn", "lstm")}
    steps = models.info["rnn"]["steps"]
    return (results_table(models, losses, t("lstm.before.state_after", steps=steps)),
            t("lstm.before.summary_after", steps=steps, **_facts(models, losses)))
