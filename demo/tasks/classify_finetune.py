"""Classification tab, "Fine-tune MiniLM yourself": the data, the baselines, and the state before training.

Before training the view shows head (a) as training starts it (core.tasks.finetune_train.initial_head: random weights from
the split's seed) on MiniLM's frozen vectors of the held-out sentences: its accuracy and cross-entropy there (an even
guess over C labels scores ln C), and every model's probabilities for the learner's sentence, labelled "before
training (random initialisation)". Training (demo/tasks/classify.py) then replaces them with the trained models.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.text.corpora import DEFAULT_LABELLED, LABELLED, LABELLED_NAMES
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import
from core.text.limits import DEFAULT_SEED
from demo.kit import presets
from demo.server.handlers import friendly_errors, gpu_handler
from demo.kit.widgets import sig4
from demo.kit.figures import lines
from demo.kit.i18n import current_language, label, t

# torch-backed core modules load on first use, not when the app starts (core/loading/lazy.py)
finetune = lazy_import("core.tasks.finetune")
finetune_train = lazy_import("core.tasks.finetune_train")

MY_DATA = "My data (paste or upload below)"  # the data radio's value for the learner's own lines
DATA_CHOICES = [*((label(LABELLED_NAMES[name]), name) for name in LABELLED),
                (label("classify.my_data"), MY_DATA)]
ACCURACY_COLUMNS = ["classify.col_model", "classify.col_accuracy", "classify.col_note"]
SAMPLE_COLUMNS = ["classify.col_label", "classify.col_sentence"]


def _table(rows: list[list], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=[t(key) for key in columns])


def _examples(dataset, pasted, upload) -> tuple[list[finetune.Example], str]:
    if dataset == MY_DATA:
        if upload:
            return finetune.read_upload(upload), t("classify.source_upload")
        return finetune.parse_labelled(pasted), t("classify.source_pasted")
    examples = finetune.load_bundled(str(dataset))
    return examples, t(LABELLED_NAMES[str(dataset)])


def split_data(dataset, pasted, upload, seed) -> tuple[finetune.Split, str]:
    """The chosen data, split with the learner's seed, and its name in the learner's language."""
    examples, name = _examples(dataset, pasted, upload)
    try:
        seed = int(seed)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError("errors.whole_number", name=t("classify.seed_name")) from None
    if not 0 <= seed < 2**31:
        raise UserInputError("classify.error_seed_range")
    return finetune.split(examples, seed), name


def baseline_rows(found: list[finetune.Baseline]) -> list[list]:
    return [[b.name, sig4(b.accuracy), b.note] for b in found]


def accuracy_table(rows: list[list]) -> pd.DataFrame:
    return _table(rows, ACCURACY_COLUMNS)


def _data_summary(data: finetune.Split, name: str) -> str:
    counts = ", ".join(f"{name}: {int((data.y_train == i).sum())} + {int((data.y_test == i).sum())}"
                       for i, name in enumerate(data.labels))
    return t("classify.data_summary", name=name, train=len(data.train), test=len(data.test), counts=counts,
             seed=data.seed)


def _sample(data: finetune.Split) -> pd.DataFrame:
    return _table([[e.label, e.text] for e in data.train[:8]], SAMPLE_COLUMNS)


@friendly_errors
def show_data(dataset, pasted, upload, seed):
    data, name = split_data(dataset, pasted, upload, seed)
    return _data_summary(data, name), accuracy_table(baseline_rows(finetune.cached_baselines(data))), _sample(data)


@friendly_errors
def show_upload(pasted, upload, seed, sentence=""):
    """An upload switches the data choice to the learner's own data and shows it, before training."""
    return (MY_DATA, *before_training(MY_DATA, pasted, upload, seed, sentence or t("classify.sentence_value", "en")))


def models_table(rows: list[tuple[str, np.ndarray]], labels: list[str]) -> pd.DataFrame:
    """Every model's label probabilities for one sentence: (model, probabilities) rows under their headers."""
    shown = [[name, labels[int(np.argmax(p))], *[sig4(float(x)) for x in p]] for name, p in rows]
    return pd.DataFrame(shown, columns=[t("classify.col_model"), t("classify.col_label"),
                                        *[t("classify.col_p", label=name) for name in labels]])


@friendly_errors
@gpu_handler
def before_training(dataset, pasted, upload, seed, sentence):
    """The view before training: the data and baselines, head (a) with its random initial weights on the held-out
    sentences (accuracy, cross-entropy: the loss figure's step 0), and every model's answer for the sentence."""
    data, name = split_data(dataset, pasted, upload, seed)
    state = finetune_train.untrained(data)
    rows = baseline_rows(finetune.cached_baselines(data))
    rows.append([t("classify.before.model"), sig4(state.accuracy), t("classify.before.model_note", seed=data.seed)])
    loss = lines([0], {t("classify.before.loss_name"): [state.loss]}, t("classify.before.fig_loss"),
                 x_title=t("classify.loss_x"), y_title=t("classify.before.loss_y"))
    classes = len(data.labels)
    status = t("classify.before.summary", seed=data.seed, count=len(data.test),
               right=int((state.probs.argmax(1) == data.y_test).sum()), accuracy=f"{sig4(state.accuracy)}",
               loss=f"{state.loss:.4g}", classes=classes, uniform=f"{math.log(classes):.4g}")
    answers = models_table(state.predict(finetune.check_sentence(sentence)), data.labels)
    return _data_summary(data, name), accuracy_table(rows), _sample(data), loss, status, answers


def before_training_bundled(dataset, seed, sentence):
    """:func:`before_training` on a bundled set: what the view's presets set (no pasted lines, no upload)."""
    return before_training(dataset, "", None, seed, sentence)


def _bundled_in_the_learners_language() -> tuple:
    """The preset's (data set, seed, sentence): the bundled set in the learner's language (its sentences are listed
    in the view) and a sentence in that language to classify; made when the preset runs."""
    key = f"classify.data_{current_language()}"
    dataset = next((name for name, name_key in LABELLED_NAMES.items() if name_key == key), DEFAULT_LABELLED)
    return dataset, DEFAULT_SEED, t("classify.before.sentence")


PRESETS = [presets.Preset("before-fine-tuning", label("classify.before.preset"), _bundled_in_the_learners_language,
                          "§14.2")]
