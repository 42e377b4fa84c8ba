"""What every tab shares: clear UI messages instead of tracebacks, number-box checks, the checkpoint picker."""
from __future__ import annotations

import functools
import inspect
import logging

import gradio as gr

from core.errors import ModelUnavailableError, UserInputError

log = logging.getLogger("plm_explorer")

INTERNAL_ERROR = "Something went wrong while computing this ({name}). The server log has the details; try a shorter or simpler input."


def _to_gradio_error(exc: Exception) -> gr.Error:
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, (UserInputError, ModelUnavailableError)):
        return gr.Error(str(exc), print_exception=False)
    log.exception("handler failed")
    return gr.Error(INTERNAL_ERROR.format(name=type(exc).__name__), print_exception=False)


def friendly_errors(fn):
    """Wrap an event handler so the learner sees a clear message instead of a traceback.

    Our own UserInputError/ModelUnavailableError messages are shown as they are; anything unexpected is logged
    with its traceback on the server and shown as a short generic message. Works for generator handlers too.
    """
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - this is the UI's last line of defence
                raise _to_gradio_error(exc) from None

        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise _to_gradio_error(exc) from None

    return wrapper


def whole_number(value: object, name: str, minimum: int = 0) -> int:
    """A number box's value as an int; an emptied box (None), NaN or a value below ``minimum`` gets a clear message."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError(f"Enter a whole number for {name}.") from None
    if number < minimum:
        raise UserInputError(f"{name.capitalize()} must be at least {minimum}.")
    return number


def model_picker(task: str, label: str = "Checkpoint") -> gr.Dropdown:
    """A dropdown of the task's known checkpoints that also accepts any Hub id or local folder."""
    from core.models import CHECKPOINTS

    return gr.Dropdown(choices=CHECKPOINTS[task], value=CHECKPOINTS[task][0], label=label, allow_custom_value=True,
                       info="A Hugging Face id or a local folder with config.json and weights.")
