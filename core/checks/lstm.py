"""Checks of the RNN & LSTM tab (seed §6): the shipped Moby-Dick character models through core/recurrent/lstm.py and the
LSTM's Why view (core/why/why.py), as the tab runs them."""
from __future__ import annotations

from core.checks.base import Answer, Check, Say, Setup, own, shown, top_options
from core.text.errors import UserInputError
from core.loading.lazy import lazy_import

lstm = lazy_import("core.recurrent.lstm")
torch = lazy_import("torch")
why = lazy_import("core.why.why")

MODEL = "RNN + LSTM (assets/rnn, Moby-Dick)"
STEPS = 50  # how far back the gradient travels
NEXT = "Call me Ishmael. Some years ago, never mind how long precisely, having little or no money in my purs"
WHY_TEXT = "the white whal"


# -- whose gradient survives 50 steps ----------------------------------------------------------------------------

def windows(own_text: str | None):
    models = lstm.shipped_models()
    if own_text is None:
        return lstm.corpus_windows(models.vocab, STEPS + 1)  # the tab's view: 16 held-out windows
    ids = lstm.encode_prompt(models.vocab, own(own_text, ""))[0]
    if len(ids) < STEPS + 2:
        raise UserInputError("checks.too_short", chars=STEPS + 2)
    return torch.tensor([ids[-(STEPS + 2):]])  # (1, 52): one window of 51 steps and the target


def survival(model, batch) -> float:
    """‖∂loss_T/∂h_{T−50}‖ / ‖∂loss_T/∂h_T‖: the share of the gradient left after 50 steps back."""
    norms = lstm.gradient_norms(model, batch)
    return norms[STEPS] / norms[0]


def gradient_setup(own_text):
    batch = windows(own_text)  # refuses a text too short before the learner commits
    text = lstm.shipped_models().vocab.decode(batch[0].tolist())  # the first of the windows the gradient runs on
    return Setup(text, MODEL, shown(steps_back=STEPS, windows=len(batch)), ("RNN", "LSTM"))


def gradient_answer(own_text):
    models, batch = lstm.shipped_models(), windows(own_text)
    scores = (("RNN", survival(models.rnn, batch)), ("LSTM", survival(models.lstm, batch)))
    return Answer(max(scores, key=lambda s: s[1])[0], scores, MODEL)


# -- the LSTM's next character -----------------------------------------------------------------------------------

def candidates(own_text, kind: str):
    inspection = lstm.inspect(lstm.shipped_models(), own(own_text, NEXT), top_k=4)
    return inspection.next_token[kind][-1]  # [(char, p)] at the last position, best first


def next_setup(kind: str):
    def setup(own_text):
        return Setup(own(own_text, NEXT), MODEL, shown(model=kind.upper(), shown=Say("top_4")),
                     top_options(candidates(own_text, kind)))
    return setup


def next_answer(kind: str):
    def answer(own_text):
        found = candidates(own_text, kind)
        return Answer(found[0][0], tuple(sorted(found)), MODEL)
    return answer


# -- how much of the cell state survives the forget gates ------------------------------------------------------

FORGET_TEXT = "Call me Ishmael. Some years ago, never mind how long"


def forget_setup(own_text):
    text = own(own_text, FORGET_TEXT)
    ids = lstm.encode_prompt(lstm.shipped_models().vocab, text)[0]
    return Setup(text, MODEL, shown(model="LSTM", steps=len(ids) - 1, units=Say("mean")), low=0.0, high=1.0)


def forget_answer(own_text):
    models = lstm.shipped_models()
    ids = lstm.encode_prompt(models.vocab, own(own_text, FORGET_TEXT))[0]
    if len(ids) < 2:
        raise UserInputError("lstm.forget_two_tokens")
    products = lstm.forget_products(models.lstm, ids)  # row d: ∏ f over the last d steps, per unit
    mean = sum(products[-1]) / len(products[-1])
    return Answer(mean, tuple((str(d), sum(row) / len(row)) for d, row in enumerate(products)), MODEL)


# -- Why: which character integrated gradients credits most ------------------------------------------------------

def why_setup(own_text):
    text = own(own_text, WHY_TEXT)
    pieces = lstm.encode_prompt(lstm.shipped_models().vocab, text)[1]
    return Setup(text, MODEL, shown(model="LSTM", method=Say("integrated_gradients"), baseline=Say("zeros")),
                 tuple(pieces))


def why_answer(own_text):
    result = why.explain_lstm(own(own_text, WHY_TEXT))
    signed = result.attributions[0].signed  # integrated gradients, Σ over the embedding per character
    best = max(range(len(signed)), key=signed.__getitem__)
    return Answer(best, tuple(zip(result.tokens, signed)), MODEL)


CHECKS = [
    Check("lstm-gradient", "lstm", "choice", "6.2", gradient_setup, gradient_answer, own_hint="checks.own.long_text"),
    Check("lstm-next-char", "lstm", "choice", "6", next_setup("lstm"), next_answer("lstm"),
          own_hint="checks.own.prompt"),
    Check("lstm-rnn-next-char", "lstm", "choice", "6.1", next_setup("rnn"), next_answer("rnn"),
          own_hint="checks.own.prompt"),
    Check("lstm-forget", "lstm", "number", "6.4", forget_setup, forget_answer, own_hint="checks.own.prompt",
          tolerance=0.25, abs_tolerance=0.02),
    Check("lstm-why", "lstm", "token", "6", why_setup, why_answer, own_hint="checks.own.prompt"),
]
