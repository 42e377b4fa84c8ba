"""Gradio's dynamic batching (``batch=True``) for the BERT events whose model reads many requests in one pass.

With ``batch=True`` Gradio gathers the requests waiting for the same event into one call: each parameter arrives as
a list (one value per request) and each output must be a list. ``by_checkpoint`` does the bookkeeping a batch
handler needs (demo/tasks/ner.py ``tag_batch``): requests are grouped by checkpoint, each group runs through the core's
batched function (core.tasks.ner.tag_many: the windows of all texts share forward passes), and a request's own problem
(empty text, a slip of ours) becomes that request's message in its notice output, the other outputs left as they
were, so the other requests of the batch still answer. The batch runs in the language of its first request (Gradio
passes one request per batch).

A per-request loop inside a batch is not batching: measured on 16 users it served fewer requests than the
unbatched handler on 4 slots (benchmarks/batching.py), so only events with a real batched forward pass use this.
"""
from __future__ import annotations

import os
from collections.abc import Callable

import gradio as gr

from core.loading.checkpoints import model_id_or_default
from core.text.errors import LearnerError
from core.text.i18n import text, using_language
from demo.server.handlers import log


def max_batch(size: int) -> int:
    """Requests per call: PLM_MAX_BATCH of them, at most ``size``; one when it is not set.

    Off by default, because a class waits less without it (benchmarks/README.md, issue #38). Gradio pre- and
    post-processes a batch's requests one after another and answers them all at its end, and a request the result
    cache could answer at once waits for the batch's others. In the classroom profile the batched three (fill-mask,
    NER, QA) had a p95 of 4.0-7.3 s batched and 3.1-3.3 s not, and the class 33-35 calls/s against 37 (two runs
    each, alternating). A batched forward pass gains 1.02-1.16x on CPU (benchmarks/batching.py) and, on an H100,
    1.44x for fill-mask but 0.90-0.92x for NER and QA: ``PLM_MAX_BATCH=8`` is for a GPU server whose learners type
    their own masked sentences."""
    cap = os.environ.get("PLM_MAX_BATCH", "").strip()
    return max(1, min(size, int(cap))) if cap.isdigit() else 1


BATCH = dict(batch=True, max_batch_size=max_batch(8))  # pass to demo.server.downloads.model_event with a batch handler
REFUSED = "⚠️ {message}"


def by_checkpoint(task: str, model_ids: list, run: Callable[[str, list[int]], list], *, outputs: int, notice: int,
                  request: gr.Request | None = None) -> tuple[list, ...]:
    """The output lists of a batch. ``run(checkpoint, indices)`` answers the requests at ``indices`` (all for one
    checkpoint) with one entry each: that request's outputs, or the LearnerError that refuses it. ``notice`` is the
    index of the output that shows a refused request's message."""
    from demo.kit.i18n import language_of  # demo.kit.i18n imports demo.server.handlers; keep the import local, as common does

    groups: dict[str, list[int]] = {}
    for index, model_id in enumerate(model_ids):
        groups.setdefault(model_id_or_default(task, model_id), []).append(index)
    answers: list[tuple] = [()] * len(model_ids)
    with using_language(language_of(request)):
        for checkpoint, indices in groups.items():
            try:
                results = run(checkpoint, indices)
            except Exception as exc:  # noqa: BLE001 - shown per request, never as a traceback
                results = [exc] * len(indices)
            for index, result in zip(indices, results):
                answers[index] = _refused(result, outputs, notice) if isinstance(result, Exception) else result
    return tuple(list(column) for column in zip(*answers))


def _refused(error: Exception, outputs: int, notice: int) -> tuple:
    if isinstance(error, LearnerError):
        message = error.message()
    else:
        log.error("batch handler failed", exc_info=error)
        message = text("errors.internal", name=type(error).__name__)
    return tuple(REFUSED.format(message=message) if index == notice else gr.skip() for index in range(outputs))
