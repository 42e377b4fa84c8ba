"""The app's one result cache: every preset's result (first paint, ``preset_result``) and the learners' own questions
to the views that always give the same answer to the same question (issue #38; one cache since issue #50).

In a class, most clicks are the same: the teacher says "press the Thinking Machines preset" and 64 learners ask for
one result. Keyed by the event, its inputs, the learner's language and each checkpoint's revision
(``revision``: the Hub commit, the package version, a folder's file times), so a new download or a
retrained asset is never answered from an old result. Single-flight: while one learner's request computes a key,
the others with that key wait for it (core.loading.cache.BoundedCache.get_or_compute_many), and in a batched event the
identical requests of a batch are computed once. Bounded by the results' pickled size (``RESULT_CACHE_BYTES``).

Only events wired with ``model_event(..., cache_results=True)`` use it, and the light tabs' deterministic views
that cost most per click (multi-head attention, word analogies, the ladder's scores), wired with ``cached(fn,
api_name, {})``: views that train are never wired so, and a view that samples only when its draw is seeded by an
input it shows (the GPT next-token view). A checkpoint that lives in one learner's session (the MiniLM fine-tuned
here) has no revision: its requests are computed each time. Figures are kept as the JSON the browser gets
(``as_sent``).

A streaming handler (a generator, such as the Why views refining integrated gradients, issue #53) keeps its last
output: the next learner with the same question gets the final answer at once, in one step. Learners asking while
it streams follow the same stream (``_Stream``): each gets the stages computed so far, then the rest as they come,
and the question is computed once.

**Batches.** Gradio's dynamic batching (``batch=True``), for the BERT events whose model reads many requests in one
pass, is answered here too. With ``batch=True`` Gradio gathers the requests waiting for the same event into one
call: each parameter arrives as a list (one value per request) and each output must be a list. ``by_checkpoint``
does the bookkeeping a batch handler needs (demo/tasks/ner.py ``tag_batch``): requests are grouped by checkpoint,
each group runs through the core's batched function (core.tasks.ner.tag_many: the windows of all texts share forward
passes), and a request's own problem (empty text, a slip of ours) becomes that request's message in its notice
output, the other outputs left as they were, so the other requests of the batch still answer. The batch runs in the
language of its first request (Gradio passes one request per batch).

A per-request loop inside a batch is not batching: measured on 16 users it served fewer requests than the
unbatched handler on 4 slots (benchmarks/batching.py), so only events with a real batched forward pass use this.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import inspect
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go

from core.loading import resolve
from core.loading.cache import BoundedCache
from core.loading.checkpoints import CHAR_BERT_ID, CHAR_GPT_ID, FINE_TUNED_MINILM_ID, PACKAGED_MODELS, model_id_or_default
from core.text.errors import LearnerError
from core.text.i18n import current_language, language_of, text, using_language
from core.loading.paths import ASSETS_DIR
from demo.server.handlers import loaded_models, log

# PLM_RESULT_CACHE_MB=0 turns it off (benchmarks/load_test.py measures the classroom with and without it). 16 MB:
# a lesson's presets (0.1-1.4 MB each) stay, recently used; at 128 MB the soak's new texts grew RSS by +216 MB.
RESULT_CACHE_BYTES = float(os.environ.get("PLM_RESULT_CACHE_MB", "16")) * 1e6
RESULTS = BoundedCache(max_entries=4096, max_weight=RESULT_CACHE_BYTES, weight=lambda key, entry: entry[1])


# The checkpoints trained in this repository: their folder under assets/ is their revision.
TRAINED_HERE = {CHAR_GPT_ID: ASSETS_DIR / "gpt", CHAR_BERT_ID: ASSETS_DIR / "char_bert"}


def revision(task: str, model_id: object) -> str | None:
    """What a result computed with this checkpoint depends on, without loading it or using the network: the Hub
    snapshot's commit, the installed package's version, a local folder's or a trained-here asset's file times and
    sizes; ``missing: <why>`` while it is not here (the view shows its card). None for a model that lives in one
    learner's session (the MiniLM fine-tuned here): a result cache must not share it."""
    typed = model_id_or_default(task, model_id)
    if typed == FINE_TUNED_MINILM_ID:
        return None
    if typed in TRAINED_HERE:
        return "here:" + _file_stamps(TRAINED_HERE[typed])
    try:
        with resolve.downloads_elsewhere():
            files = resolve.resolve(typed, "config", task=None)
    except LearnerError as exc:
        return f"missing: {exc.key}"
    if files.source.startswith(resolve.PACKAGE_SOURCE):
        return files.source + "==" + importlib.metadata.version(PACKAGED_MODELS[typed][2])
    if files.source == "local folder":
        return "local:" + _file_stamps(files.directory)
    return "hub:" + files.directory.name  # a snapshot folder is named by its commit


def _file_stamps(folder: Path) -> str:
    return ";".join(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in sorted(folder.iterdir())
                    if f.is_file())


def fresh_updates(results):
    """A copy of a cached result's update dicts (gr.update(...)): Gradio pops "value" out of an update dict as it
    sends it, so the second learner served from a cache would get a shown plot without its figure."""
    if isinstance(results, dict):
        return dict(results)
    if isinstance(results, (tuple, list)):
        return type(results)(dict(r) if isinstance(r, dict) else r for r in results)
    return results


_PLOT = gr.Plot(render=False)  # its postprocess is the one that turns a figure into what is sent


def as_sent(outputs):
    """``outputs`` with each plotly figure (also one inside an update dict) replaced by the JSON that Gradio sends
    for it: gr.Plot passes a PlotData through unchanged. A cached answer's figures are then serialised once, not for
    every learner it answers: a SlideFigure's to_json fitted its margins to its labels (before issue #50), and for the
    attention view's three figures that was most of a cached click's server CPU (issue #38)."""
    def sent(value):
        if isinstance(value, go.Figure):
            return _PLOT.postprocess(value)  # what gr.Plot sends: the figure's JSON, in Gradio's PlotData
        if isinstance(value, dict) and isinstance(value.get("value"), go.Figure):  # gr.update(value=figure, ...)
            return {**value, "value": sent(value["value"])}
        return value

    return type(outputs)(sent(value) for value in outputs) if isinstance(outputs, (tuple, list)) else sent(outputs)


UNPICKLABLE_BYTES = 2_000_000  # the most any answer weighs on the wire (tests/server/test_bounded_responses.py)


def sized(outputs) -> tuple[object, int]:
    """(outputs as sent, their pickled size in bytes): the weight the cache's bound counts. Outputs that cannot be
    pickled (a styled table's functions) are counted as the largest answer, never refused."""
    outputs = as_sent(outputs)
    try:
        return outputs, len(pickle.dumps(outputs, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001 - the learner's answer matters more than an exact weight
        return outputs, UNPICKLABLE_BYTES


def weighed(entry) -> tuple[object, int]:
    """(entry, its pickled size in bytes), kept as it is: a preset's (values, results), whose figures the tests and
    the views read as figures. A styled table (the n-gram scores' pandas Styler holds a lambda) weighs as its data;
    any other unpicklable part as the largest answer, as in ``sized``."""
    return entry, _pickled_size(entry)


def _pickled_size(value) -> int:
    try:
        return len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # noqa: BLE001 - the learner's answer matters more than an exact weight
        pass
    if isinstance(value, (tuple, list)):
        return sum(_pickled_size(part) for part in value)
    if isinstance(value, dict):
        return sum(_pickled_size(part) for part in value.values())
    data = getattr(value, "data", None)  # a pandas Styler: its DataFrame
    if data is not None and data is not value and not callable(data):
        return _pickled_size(data)
    return UNPICKLABLE_BYTES


def preset_result(view, preset) -> tuple[tuple, tuple]:
    """A preset's (values, results) from RESULTS, computed once per key (issue #18: first paint ≤ 1 s; issue #50:
    one cache for presets and learners' own questions). ``view``: a demo.kit.presets.View; ``preset``: one of its
    presets.

    A preset's result does not depend on the learner, only on its fixed values, the language (figure titles, notes)
    and which checkpoints the server can use (offline views show an "hf download" note until the model is there),
    so all three are in the key. The LSTM gradients default took 4–9 s and the bank sentences 4–7 s per open under
    load; now only the first open in a process pays, and sessions opening the same tab at once wait for that one
    computation. Results are treated as read-only; each caller gets its own copy of the update dicts."""
    key = ("preset", view.fn, view.tab, view.key, preset.slug, current_language(), resolve.is_offline(),
           tuple(sorted(set(loaded_models()))))

    def compute() -> tuple[tuple, int]:
        values = preset.resolved()
        return weighed((values, view.fn(*values)))  # an error propagates and nothing is stored

    (values, results), _ = RESULTS.get_or_compute(key, compute)
    return values, fresh_updates(results)


def request_key(api_name: str, args: tuple, language: str, models: dict) -> tuple | None:
    """The key of one request, or None when it must not be shared (a session's model, unpicklable inputs).
    ``models``: {task: the position of its checkpoint among ``args``, or the fixed id}."""
    revisions = []
    for task, where in models.items():
        if isinstance(where, int):  # a position; an input left out is the task's default checkpoint
            where = args[where] if where < len(args) else None
        revisions.append(revision(task, where))
    if None in revisions or RESULT_CACHE_BYTES <= 0:
        return None
    try:
        asked = hashlib.sha256(pickle.dumps(args, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except Exception:  # noqa: BLE001 - an input that cannot be pickled is computed, not cached
        return None
    return api_name, language, asked, tuple(revisions)


def cached(fn: Callable, api_name: str, models: dict, batch: bool = False) -> Callable:
    """``fn`` answering from RESULTS (same signature, so Gradio passes it the same arguments). ``models`` as in
    ``request_key``; ``batch``: fn takes a list per input and returns a list per output (wired with batch=True)."""
    signature = inspect.signature(fn)
    # Gradio passes the request and the progress tracker among the positional arguments, at their parameter's place
    special = [name for name, p in signature.parameters.items()
               if p.annotation in (gr.Request, "gr.Request") or isinstance(p.default, gr.Progress)
               or name == "request"]

    def split(args, kwargs) -> tuple[list, dict]:
        """(the inputs, in order; the special arguments by name)."""
        binding = signature.bind_partial(*args, **kwargs)
        binding.apply_defaults()  # fn(a) and fn(a, its default) are one question
        bound = dict(binding.arguments)
        extra = {name: bound.pop(name) for name in special if name in bound}
        return list(bound.values()), extra

    if batch:
        return _cached_batch(fn, api_name, models, split)
    if inspect.isgeneratorfunction(inspect.unwrap(fn)):
        return _cached_stream(fn, api_name, models, split)

    @functools.wraps(fn)
    def answer(*args, **kwargs):
        inputs, extra = split(args, kwargs)
        key = request_key(api_name, tuple(inputs), language_of(extra.get("request")), models)
        if key is None:
            return fn(*inputs, **extra)
        [(outputs, _)] = RESULTS.get_or_compute_many([key], lambda keys: [sized(fn(*inputs, **extra))])
        return fresh_updates(outputs)

    answer.result_cache = RESULTS  # tests/server/test_result_cache.py: which events share results
    return answer


class _Stream:
    """One question being streamed: the outputs of each stage as sent (read-only copies), for the learners who ask
    the same question meanwhile."""

    def __init__(self):
        self.stages: list = []
        self.finished = False  # the stream ended
        self.complete = False  # … with its last stage (not an error, not a learner who left)
        self.changed = threading.Condition()

    def publish(self, outputs) -> None:
        with self.changed:
            self.stages.append(outputs)
            self.changed.notify_all()

    def finish(self, complete: bool) -> None:
        with self.changed:
            self.finished, self.complete = True, complete
            self.changed.notify_all()

    def follow(self) -> Iterator:
        """Each newest stage as it comes (a follower late by several stages gets the newest only)."""
        shown = 0
        while True:
            with self.changed:
                self.changed.wait_for(lambda: len(self.stages) > shown or self.finished)
                if len(self.stages) == shown:
                    return
                shown, outputs = len(self.stages), self.stages[-1]
            yield fresh_updates(outputs)


_STREAMS: dict[tuple, _Stream] = {}  # the questions streaming now
_STREAMS_LOCK = threading.Lock()


def _cached_stream(fn: Callable, api_name: str, models: dict, split: Callable) -> Callable:
    """``fn``, a generator, answering from RESULTS: a cached question's last outputs in one step; else the stream
    of one computation, shared with the learners who ask the same meanwhile, whose last outputs are then kept."""
    missing = object()

    @functools.wraps(fn)
    def answer(*args, **kwargs):
        inputs, extra = split(args, kwargs)
        key = request_key(api_name, tuple(inputs), language_of(extra.get("request")), models)
        if key is None:
            yield from fn(*inputs, **extra)
            return
        while True:
            found = RESULTS.get(key, missing)
            if found is not missing:
                yield fresh_updates(found[0])
                return
            with _STREAMS_LOCK:
                stream = _STREAMS.get(key)
                leading = stream is None
                if leading:
                    stream = _STREAMS[key] = _Stream()
            if leading:
                break
            yield from stream.follow()
            if stream.complete:
                return
            # the stream stopped before its end (an error, or its learner left): go round, and compute it here
        last, complete = missing, False
        try:
            for outputs in fn(*inputs, **extra):
                last = fresh_updates(as_sent(outputs))  # a copy: Gradio pops the values of what it sends
                stream.publish(last)
                yield fresh_updates(last)
            if last is not missing:
                RESULTS.put(key, sized(last))
            complete = True
        finally:
            with _STREAMS_LOCK:
                del _STREAMS[key]
            stream.finish(complete)

    answer.result_cache = RESULTS
    return answer


def _cached_batch(fn: Callable, api_name: str, models: dict, split: Callable) -> Callable:
    @functools.wraps(fn)
    def answer(*args, **kwargs):
        columns, extra = split(args, kwargs)
        request = extra.pop("request", None)
        count = len(columns[0]) if columns else 0
        if not count:
            return fn(*columns, request=request, **extra)
        requests = list(request) if isinstance(request, (list, tuple)) else [request] * count
        samples = [tuple(column[i] for column in columns) for i in range(count)]
        keys = [request_key(api_name, sample, language_of(requests[i]), models)
                for i, sample in enumerate(samples)]

        def compute(indices: list[int]) -> list[tuple]:  # one batched call for these samples: a row each
            picked = [[column[i] for i in indices] for column in columns]
            outputs = fn(*picked, request=[requests[i] for i in indices], **extra)
            return [tuple(column[j] for column in outputs) for j in range(len(indices))]

        rows: list = [None] * count
        first: dict = {}  # each key's first request: identical requests are computed once
        for i, key in enumerate(keys):
            if key is not None:
                first.setdefault(key, i)
        if first:
            found = RESULTS.get_or_compute_many(
                list(first), lambda missing: [sized(row) for row in compute([first[key] for key in missing])])
            by_key = {key: outputs for key, (outputs, _) in zip(first, found)}
            rows = [by_key.get(key) for key in keys]
        alone = [i for i, key in enumerate(keys) if key is None]
        for i, row in zip(alone, compute(alone) if alone else []):
            rows[i] = row
        return tuple([fresh_updates(row[j]) for row in rows] for j in range(len(rows[0])))

    answer.result_cache = RESULTS
    return answer


# ----------------------------------------------------------------------------------------------------------------
# Batches (module docstring)


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
    index of the output that shows a refused request's message. ``request`` is the batch's list of requests (one
    each); each group runs in its requests' language."""
    requests = list(request) if isinstance(request, (list, tuple)) else [request] * len(model_ids)
    groups: dict[tuple[str, str], list[int]] = {}
    for index, model_id in enumerate(model_ids):
        key = (model_id_or_default(task, model_id), language_of(requests[index] if index < len(requests) else None))
        groups.setdefault(key, []).append(index)
    answers: list[tuple] = [()] * len(model_ids)
    for (checkpoint, lang), indices in groups.items():
        with using_language(lang):
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
