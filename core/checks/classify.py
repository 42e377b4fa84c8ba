"""Checks of the Classification tab (seed §14.1–§14.2): a fine-tuned SST-2 checkpoint through core/tasks/classify.py and
its Why view (core/why_encoders.explain_class), which need the checkpoint from the Hub (offline: the download card);
and fine-tuning MiniLM-L6 here against the GloVe baseline (core/tasks/finetune.py, core/tasks/finetune_train.py), offline."""
from __future__ import annotations

from core.loading.checkpoints import SST2_ID
from core.checks.base import Answer, Check, Say, Setup, missing, own, shown
from core.text.corpora import DEFAULT_LABELLED
from core.text.errors import ModelUnavailableError
from core.loading.lazy import lazy_import

classify = lazy_import("core.tasks.classify")
finetune = lazy_import("core.tasks.finetune")
finetune_train = lazy_import("core.tasks.finetune_train")
registry = lazy_import("core.loading.registry")
why_encoders = lazy_import("core.why.encoders")

MODEL_ID = SST2_ID
TEXT = "The film was slow at first, but the ending left me smiling for days."
# A short run: the head, then one epoch of the top layer (the tab's defaults run 4 epochs under a 110 s budget)
HEAD_STEPS, UNFROZEN, EPOCHS, BUDGET_SECONDS = 150, 1, 1, 60.0
SIDES = ("fine-tuned", "glove")
SIDE_LABELS = ("checks.classify-finetune.tuned", "checks.classify-finetune.glove")


# -- the class ---------------------------------------------------------------------------------------------------

def labels() -> tuple[str, ...]:
    """The checkpoint's class names, as the tab shows them; () when it is not on this machine."""
    try:
        loaded = registry.load("classify", MODEL_ID)
    except ModelUnavailableError:
        return ()
    return tuple(classify.label_names(loaded.files.model_id, loaded.config)[0])


def class_setup(own_text):
    return Setup(own(own_text, TEXT), MODEL_ID, shown(classes="softmax"), labels())


def class_answer(own_text):
    try:
        result = classify.classify(own(own_text, TEXT), None, MODEL_ID)
    except ModelUnavailableError:
        return missing(MODEL_ID)
    scores = tuple(zip(result.labels, map(float, result.probs)))
    return Answer(result.labels[int(result.probs.argmax())], scores, MODEL_ID)


# -- Why: which token integrated gradients credits most for the class -------------------------------------------

def why_setup(own_text):
    text = own(own_text, TEXT)
    if not labels():  # the checkpoint is not here: the download card stands in
        return Setup(text, MODEL_ID, shown(method=Say("integrated_gradients")))
    tokens = classify.input_layout(text, None, MODEL_ID)[0].tokens
    return Setup(text, MODEL_ID, shown(method=Say("integrated_gradients"), baseline="[PAD]"), tuple(tokens))


def why_answer(own_text):
    try:
        found = why_encoders.explain_class(own(own_text, TEXT), None, MODEL_ID)
    except ModelUnavailableError:
        return missing(MODEL_ID)
    signed = found.attributions[0].signed
    return Answer(max(range(len(signed)), key=signed.__getitem__), tuple(zip(found.tokens, signed)), MODEL_ID)


# -- did fine-tuning beat the GloVe baseline? --------------------------------------------------------------------

def labelled(own_text: str | None):
    """The split the tab trains on: the bundled English sentiment set, or the learner's label<TAB>sentence lines."""
    examples = (finetune.load_bundled(DEFAULT_LABELLED) if own_text is None
                else finetune.check_examples(finetune.parse_labelled(own(own_text, "")), "classify.source_pasted"))
    return finetune.split(examples)


def finetune_setup(own_text):
    data = labelled(own_text)
    lines = "\n".join(f"{e.label}\t{e.text}" for e in data.train[:4]) + "\n…"
    return Setup(lines, "sentence-transformers/all-MiniLM-L6-v2",
                 shown(train=len(data.train), held_out=len(data.test), head_steps=HEAD_STEPS,
                       unfrozen_layers=UNFROZEN, epochs=EPOCHS), SIDES,
                 option_labels=SIDE_LABELS)


def finetune_answer(own_text):
    data = labelled(own_text)
    outcome = list(finetune_train.train(data, HEAD_STEPS, UNFROZEN, EPOCHS, BUDGET_SECONDS))[-1]
    glove = next(b for b in outcome.baselines if b.name_key == "classify.baseline_glove")
    scores = (("fine-tuned", float(outcome.tuned_accuracy)), ("glove", float(glove.accuracy)))
    return Answer(max(scores, key=lambda s: s[1])[0], scores, "sentence-transformers/all-MiniLM-L6-v2")


CHECKS = [
    Check("classify-class", "classify", "choice", "14.1", class_setup, class_answer, own_hint="checks.own.sentence"),
    Check("classify-finetune", "classify", "choice", "14.2", finetune_setup, finetune_answer,
          own_hint="checks.own.labelled"),
    Check("classify-why", "classify", "token", "14.1", why_setup, why_answer, own_hint="checks.own.sentence"),
]
