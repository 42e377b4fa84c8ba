"""Downloads in a step of their own, so that a slow first download never holds a slot that loaded models answer in.

A model view's event is two chained steps (``model_event``):

1. ``<api_name>_download``, on the "download" concurrency group: makes the view's checkpoint(s) local
   (``resolve.fetch``), showing gr.Progress in MB of MB while bytes arrive (``byte_progress``). For a checkpoint that
   is already here it returns at once, so its slots are rarely all busy; a download that fails or stalls is
   remembered by core/resolve.py and reported by step 2, in the view's own way (a view with an offline fallback falls
   back).
2. ``<api_name>``, on the "bert" group (or the queue the view asks for), with Gradio's batching when asked: the
   handler runs inside ``resolve.downloads_elsewhere()``, where a checkpoint that is still not local fails at once
   instead of downloading. So the "bert" slots only ever run models, and another user's loaded model answers while
   a download crawls. An API client calling ``<api_name>`` for a checkpoint not yet here is told so; calling
   ``<api_name>_download`` first fetches it.

The tab-open and preset events run the handlers directly (their own concurrency groups, not "bert"), and may
download there with the same byte progress.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import gradio as gr

from core import hub, resolve
from core.checkpoints import CHAR_BERT_ID, CHAR_GPT_ID
from core.errors import LearnerError, ModelUnavailableError, echo
from core.i18n import text
from demo.common import friendly_errors, log

# Downloads are I/O-bound and deduplicated per model id (core/hub.py), so the group is wide; the limit bounds the
# worker threads a crowd of different ids can hold (each download is bounded by the Hub client's deadlines).
DOWNLOAD_QUEUE = dict(concurrency_id="download", concurrency_limit=8)
BERT_QUEUE = dict(concurrency_id="bert", concurrency_limit=4)
TRIGGER_OPTIONS = ("trigger_mode", "js")  # options of the trigger (the first step), not of the model step
# Ids a task runs without the registry: the GPT views' bundled char-GPT (also what an empty picker means there), the
# masked-LM views' char-BERT.
BUNDLED = {"causal-lm": ("", CHAR_GPT_ID), "mlm": (CHAR_BERT_ID,)}


def byte_progress(progress: gr.Progress) -> resolve.Progress:
    """The registry's ``progress(fraction, message)`` -> gr.Progress: "Downloading bert-base-uncased: 12.0 of
    440.5 MB", with the true fraction, while a checkpoint downloads. The one helper every model view uses."""
    return lambda fraction, message: progress(fraction, desc=message)


def fetch_models(models: list[tuple[str, object]], progress: resolve.Progress | None = None) -> None:
    """Make each ``(task, model id)`` local. A learner's error (offline, stalled, refused) is not raised here: the
    resolver remembers it and the model step reports it, or falls back where the view can."""
    for task, model_id in models:
        if str(model_id or "").strip() in BUNDLED.get(task, ()):
            continue
        try:
            resolve.fetch(task, model_id, progress)
        except LearnerError as exc:
            log.info("download step: %s", exc.key)


def _download_step(models: dict[str, object], outputs: int) -> Callable:
    """The first step's handler: one parameter per model component (a str in ``models`` is a fixed id)."""
    unchanged = gr.skip() if outputs == 1 else tuple(gr.skip() for _ in range(outputs))

    def fetch(values, progress):
        given = iter(values)
        fetch_models([(task, source if isinstance(source, str) else next(given)) for task, source in models.items()],
                     byte_progress(progress))
        return unchanged

    inputs = sum(not isinstance(source, str) for source in models.values())
    if inputs == 0:
        def download(progress=gr.Progress()):
            return fetch((), progress)
    elif inputs == 1:
        def download(model_id, progress=gr.Progress()):
            return fetch((model_id,), progress)
    elif inputs == 2:
        def download(first_id, second_id, progress=gr.Progress()):
            return fetch((first_id, second_id), progress)
    else:
        raise ValueError("a view downloads at most two checkpoints")
    return friendly_errors(download)


def local_only(fn: Callable) -> Callable:
    """``fn`` run inside ``resolve.downloads_elsewhere()`` (generators step by step); same signature for Gradio."""
    if inspect.isgeneratorfunction(inspect.unwrap(fn)) or inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def steps(*args, **kwargs):
            running = fn(*args, **kwargs)
            while True:
                with resolve.downloads_elsewhere():
                    try:
                        item = next(running)
                    except StopIteration:
                        return
                yield item

        return steps

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with resolve.downloads_elsewhere():
            return fn(*args, **kwargs)

    return wrapper


def model_event(trigger: Callable, models: dict[str, object], fn: Callable, inputs, outputs, *, api_name: str,
                queue: dict | None = None, **options):
    """``trigger`` (a bound event listener such as ``button.click``) runs the download step for ``models``
    ({task: the component holding its checkpoint id, or a fixed id}), then ``fn`` on ``queue`` (default: the
    "bert" group) with ``options`` (batch=True, max_batch_size, api_visibility, ...). Returns the model step."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    first = {key: options.pop(key) for key in TRIGGER_OPTIONS if key in options}
    # A results column among the outputs (hidden while a card stands in) is no progress target: the browser would
    # walk and copy the whole column on every status message (tests/test_app.py: loading statuses stay small).
    leaves = [output for output in outputs if not isinstance(output, gr.blocks.BlockContext)]
    if len(leaves) < len(outputs):
        options.setdefault("show_progress_on", leaves)
        first.setdefault("show_progress_on", options["show_progress_on"])
    sources = [source for source in models.values() if not isinstance(source, str)]
    download = trigger(_download_step(models, len(outputs)), sources, outputs,
                       api_name=f"{api_name}_download", api_visibility="undocumented", **DOWNLOAD_QUEUE, **first)
    return download.then(local_only(fn), inputs, outputs, api_name=api_name,
                         **(BERT_QUEUE if queue is None else queue), **options)


# ----------------------------------------------------------------------------------------------------------------
# A view whose checkpoint is not here: one card instead of empty boxes (issue #31 §3)

# The reasons that one `hf download <id>` cures: the checkpoint is simply not on this machine (offline, the Hub out of
# reach, not downloaded yet, a download that stalled or broke). Other refusals (no such repo, the wrong head, too
# large) keep their own message: downloading would not help.
MISSING_KEYS = frozenset(f"registry.{key}" for key in (
    "offline", "unreachable", "not_downloaded", "hub_timeout", "hub_unreachable", "hub_http", "stalled_silent",
    "too_slow", "past_deadline", "ended_early", "corrupt"))


def needs_download(exc: BaseException) -> bool:
    """True when ``exc`` says a checkpoint is not on this machine and `hf download` would bring it."""
    return isinstance(exc, ModelUnavailableError) and exc.key in MISSING_KEYS


# Why a checkpoint is not here, in a few words: the registry's own messages for these repeat the `hf download` line
# that the card already gives. (A stalled or broken download keeps its full message: it says what happened.)
SHORT_REASONS = {"registry.offline": "downloads.why_offline", "registry.unreachable": "downloads.why_unreachable",
                 "registry.not_downloaded": "downloads.why_not_downloaded"}


def missing_model_card(model_id: str, shows_key: str, reason: BaseException | str = "") -> str:
    """The one card a view shows in place of results it cannot compute, in the learner's language: what the view
    would show (``shows_key``), the exact command that fetches the checkpoint, and why it is not here."""
    model = str(model_id or "").strip()[:100]
    # `hf download` only for what is a Hub id: a typed folder or an odd string gets no command that cannot work
    card = text("downloads.card" if hub.HUB_ID.fullmatch(model) else "downloads.card_no_command", model=echo(model),
                shows=text(shows_key))
    key = getattr(reason, "key", None)
    why = text(SHORT_REASONS[key]) if key in SHORT_REASONS else str(reason)
    return card + ("\n\n" + text("downloads.card_reason", reason=why) if why else "")


def results_visible(shown: bool) -> dict:
    """The update for the column that holds a view's model results: hidden while its card stands in for them, so
    the learner never meets an empty table or figure; shown again with the next real result."""
    return gr.update(visible=bool(shown))


def card_when_missing(shows_key: str, outputs: int, card_at: int = 0) -> Callable:
    """Decorate a handler whose first argument is a checkpoint id and whose results sit in one column, the output
    after its ``outputs``: the column is shown with its results, or, when the checkpoint is not on this machine,
    hidden, with the card in output ``card_at`` (the view's note) instead. Generators: every step gets the column."""
    def fallback(model_id, exc: ModelUnavailableError) -> tuple:
        if not needs_download(exc):
            raise exc
        shown = [None] * outputs
        shown[card_at] = missing_model_card(model_id, shows_key, exc)
        return (*shown, results_visible(False))

    def decorate(fn: Callable) -> Callable:
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def steps(model_id, *args, **kwargs):
                try:
                    for item in fn(model_id, *args, **kwargs):
                        yield (*item, results_visible(True))
                except ModelUnavailableError as exc:
                    yield fallback(model_id, exc)
            return steps

        @functools.wraps(fn)
        def run(model_id, *args, **kwargs):
            try:
                return (*fn(model_id, *args, **kwargs), results_visible(True))
            except ModelUnavailableError as exc:
                return fallback(model_id, exc)
        return run
    return decorate
