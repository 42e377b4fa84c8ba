"""Downloads in a step of their own, so that a slow first download never holds a slot that loaded models answer in.

A model view's event is two chained steps (``model_event``):

1. ``<api_name>_download``, on the "download" concurrency group: makes the view's checkpoint(s) local
   (``registry.fetch``), showing gr.Progress in MB of MB while bytes arrive (``byte_progress``). For a checkpoint that
   is already here it returns at once, so its slots are rarely all busy; a download that fails or stalls is
   remembered by the registry and reported by step 2, in the view's own way (a view with an offline fallback falls
   back).
2. ``<api_name>``, on the "bert" group (or the queue the view asks for), with Gradio's batching when asked: the
   handler runs inside ``registry.downloads_elsewhere()``, where a checkpoint that is still not local fails at once
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

from core import registry
from core.errors import LearnerError
from demo.common import friendly_errors, log

# Downloads are I/O-bound and deduplicated per model id (core/hub.py), so the group is wide; the limit bounds the
# worker threads a crowd of different ids can hold (each download is bounded by the Hub client's deadlines).
DOWNLOAD_QUEUE = dict(concurrency_id="download", concurrency_limit=8)
BERT_QUEUE = dict(concurrency_id="bert", concurrency_limit=4)
TRIGGER_OPTIONS = ("trigger_mode", "js")  # options of the trigger (the first step), not of the model step
# Ids a task runs without the registry: the GPT views' bundled char-GPT (also what an empty picker means there).
BUNDLED = {"causal-lm": ("", registry.CHAR_GPT_ID)}


def byte_progress(progress: gr.Progress) -> registry.Progress:
    """The registry's ``progress(fraction, message)`` -> gr.Progress: "Downloading bert-base-uncased: 12.0 of
    440.5 MB", with the true fraction, while a checkpoint downloads. The one helper every model view uses."""
    return lambda fraction, message: progress(fraction, desc=message)


def fetch_models(models: list[tuple[str, object]], progress: registry.Progress | None = None) -> None:
    """Make each ``(task, model id)`` local. A learner's error (offline, stalled, refused) is not raised here: the
    registry remembers it and the model step reports it, or falls back where the view can."""
    for task, model_id in models:
        if str(model_id or "").strip() in BUNDLED.get(task, ()):
            continue
        try:
            registry.fetch(task, model_id, progress)
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
    """``fn`` run inside ``registry.downloads_elsewhere()`` (generators step by step); same signature for Gradio."""
    if inspect.isgeneratorfunction(inspect.unwrap(fn)) or inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def steps(*args, **kwargs):
            running = fn(*args, **kwargs)
            while True:
                with registry.downloads_elsewhere():
                    try:
                        item = next(running)
                    except StopIteration:
                        return
                yield item

        return steps

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with registry.downloads_elsewhere():
            return fn(*args, **kwargs)

    return wrapper


def model_event(trigger: Callable, models: dict[str, object], fn: Callable, inputs, outputs, *, api_name: str,
                queue: dict | None = None, **options):
    """``trigger`` (a bound event listener such as ``button.click``) runs the download step for ``models``
    ({task: the component holding its checkpoint id, or a fixed id}), then ``fn`` on ``queue`` (default: the
    "bert" group) with ``options`` (batch=True, max_batch_size, api_visibility, ...). Returns the model step."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    first = {key: options.pop(key) for key in TRIGGER_OPTIONS if key in options}
    sources = [source for source in models.values() if not isinstance(source, str)]
    download = trigger(_download_step(models, len(outputs)), sources, outputs,
                       api_name=f"{api_name}_download", api_visibility="undocumented", **DOWNLOAD_QUEUE, **first)
    return download.then(local_only(fn), inputs, outputs, api_name=api_name,
                         **(BERT_QUEUE if queue is None else queue), **options)
