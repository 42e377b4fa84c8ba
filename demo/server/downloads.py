"""Downloads in a step of their own, so that a slow first download never holds a slot that loaded models answer in.

A model view's event is two chained steps (``model_event``):

1. ``<api_name>_download``, on the "download" concurrency group, which has no Gradio limit: it first asks
   ``resolve.answers_here`` whether the view's checkpoints are on this machine (or refused at once, or offline); if
   so it returns at once, so a click on a checkpoint that is here never waits behind downloads. Otherwise it waits,
   holding no worker thread, for a slot of ``SLOTS`` (DOWNLOAD_SLOTS at once for the server, SESSION_DOWNLOAD_SLOTS
   of them per browser session, in arrival order), then makes them local (``resolve.fetch``) with gr.Progress in MB
   of MB (``byte_progress``). core/loading/hub.py ends a download that crawls (a rate floor, a deadline scaled to its size)
   or fills the disk; core/loading/resolve.py remembers why, and step 2 reports it in the view's own way (a view with an
   offline fallback falls back).
2. ``<api_name>``, on the "bert" group (or the queue the view asks for; "bert" computes in BERT_SLOTS slots and
   answers a cached result without one), with Gradio's batching when asked: the
   handler runs inside ``resolve.downloads_elsewhere()``, where a checkpoint that is still not local fails at once
   instead of downloading. So the "bert" slots only ever run models, and another user's loaded model answers while
   a download crawls. An API client calling ``<api_name>`` for a checkpoint not yet here is told so; calling
   ``<api_name>_download`` first fetches it.

A view that needs only a checkpoint's tokenizer (the masked LM's Masking procedure) names ``TOKENIZER`` instead of a
task, and its tokenizer comes through the same step. The tab-open and preset events run the handlers directly (their
own concurrency groups, not "bert"), and may download there through the same resolver, with the same limits, after
waiting (in their worker thread) for a slot of the same ``SLOTS``: core/loading/hub.py's gate, set by ``install_gate``.
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import threading
import time
from collections.abc import Callable

import anyio
import gradio as gr

from core.loading import hub, resolve
from core.loading.checkpoints import CHAR_BERT_ID, CHAR_GPT_ID, FINE_TUNED_MINILM_ID, SEQ2SEQ_HERE_ID, model_id_or_default
from core.text.errors import LearnerError, ModelUnavailableError, echo
from core.text.i18n import language_of, text, using_language
from demo.server import result_cache
from demo.server.handlers import event_request, log

# The step's Gradio group has no limit: what bounds the downloads is SLOTS, which only real downloads wait for.
DOWNLOAD_QUEUE = dict(concurrency_id="download", concurrency_limit=None)
DOWNLOAD_SLOTS = 8  # downloads running at once (I/O-bound; each bounded by core/loading/hub.py's floor and deadline)
SESSION_DOWNLOAD_SLOTS = 2  # of which one browser session may hold this many
SLOT_POLL_SECONDS = 0.2  # how often a waiting download looks for a free slot (it holds no thread meanwhile)
# The "bert" group admits BERT_WAITING requests at once, and BERT_SLOTS of them compute at once (the model's share of
# the CPU): a request the result cache answers (demo/server/result_cache.py) returns without waiting for a compute slot, so
# a class pressing the preset of the moment is not queued behind the learners who typed their own text.
BERT_SLOTS = 4
BERT_WAITING = 16
BERT_QUEUE = dict(concurrency_id="bert", concurrency_limit=BERT_WAITING)
_bert_slots = threading.BoundedSemaphore(BERT_SLOTS)
TRIGGER_OPTIONS = ("trigger_mode", "js")  # options of the trigger (the first step), not of the model step
# Ids a task runs without the registry: the GPT views' bundled char-GPT (also what an empty picker means there), the
# masked-LM views' char-BERT, the session's fine-tuned MiniLM (packaged weights) of the classification "Why" view.
BUNDLED = {"causal-lm": ("", CHAR_GPT_ID), "mlm": (CHAR_BERT_ID,), "classify": (FINE_TUNED_MINILM_ID,),
           "seq2seq": ("", SEQ2SEQ_HERE_ID)}
TOKENIZER = "tokenizer"  # a ``models`` key: the view needs only this checkpoint's tokenizer (no task, no weights)


class DownloadSlots:
    """At most ``total`` downloads at once, at most ``per_session`` of them one session's. Requests wait in arrival
    order; one whose session is at its cap lets the next one by. A lock guards the counts only (never held while
    anything downloads), so the tab-open and test threads can read ``state()``."""

    def __init__(self, total: int = DOWNLOAD_SLOTS, per_session: int = SESSION_DOWNLOAD_SLOTS):
        self.total, self.per_session = total, per_session
        self.held: dict[str, int] = {}  # session -> slots it holds
        self.waiting: list[tuple[str, object]] = []  # (session, ticket) in arrival order
        self._lock = threading.Lock()

    def state(self) -> dict:
        """{"running": downloads holding a slot, "waiting": requests waiting, "sessions": session -> slots held}."""
        with self._lock:
            return {"running": sum(self.held.values()), "waiting": len(self.waiting), "sessions": dict(self.held)}

    def _take(self, ticket: tuple[str, object]) -> bool:
        """Give ``ticket`` a slot if one is free and no earlier request that may take one is waiting (lock held)."""
        if sum(self.held.values()) >= self.total:
            return False
        first = next((other for other in self.waiting if self.held.get(other[0], 0) < self.per_session), None)
        if first is not ticket:
            return False
        self.waiting.remove(ticket)
        self.held[ticket[0]] = self.held.get(ticket[0], 0) + 1
        return True

    def _try(self, ticket: tuple[str, object]) -> int | None:
        """None once ``ticket`` holds a slot; else how many requests wait ahead of it."""
        with self._lock:
            return None if self._take(ticket) else self.waiting.index(ticket)

    def _join(self, session: str) -> tuple[str, object]:
        ticket = (session, object())
        with self._lock:
            self.waiting.append(ticket)
        return ticket

    def _leave(self, ticket: tuple[str, object], held: bool) -> None:
        with self._lock:
            if not held:  # cancelled while waiting (the learner left): out of the line
                if ticket in self.waiting:
                    self.waiting.remove(ticket)
                return
            self.held[ticket[0]] -= 1
            if not self.held[ticket[0]]:
                del self.held[ticket[0]]

    @contextlib.asynccontextmanager
    async def hold(self, session: str, waiting: Callable[[int], None] | None = None):
        """A slot for ``session`` while the block runs, waited for without a thread; ``waiting(requests ahead)`` is
        told while it waits."""
        ticket, held = self._join(session), False
        try:
            while (ahead := self._try(ticket)) is not None:
                if waiting is not None:
                    waiting(ahead)
                await asyncio.sleep(SLOT_POLL_SECONDS)
            held = True
            yield
        finally:
            self._leave(ticket, held)

    @contextlib.contextmanager
    def hold_here(self, session: str):
        """``hold`` for a download that starts in a worker thread (a tab-open or preset event runs its view's
        handler, which may download): waited for in that thread."""
        ticket, held = self._join(session), False
        try:
            while self._try(ticket) is not None:
                time.sleep(SLOT_POLL_SECONDS)
            held = True
            yield
        finally:
            self._leave(ticket, held)


SLOTS = DownloadSlots()


def _slot_for_this_event() -> contextlib.AbstractContextManager:
    """core/loading/hub.py's gate for a download that starts outside the download step: a slot of the event's session."""
    request = event_request()
    return SLOTS.hold_here(getattr(request, "session_hash", None) or "-")


def install_gate() -> None:
    """Every download in this process waits for SLOTS from now on: core/loading/hub.py's gate. app.build_app calls it;
    importing this module changes nothing in core/loading/hub.py."""
    hub.set_download_gate(_slot_for_this_event)


def byte_progress(progress: gr.Progress) -> resolve.Progress:
    """The registry's ``progress(fraction, message)`` -> gr.Progress: "Downloading bert-base-uncased: 12.0 of
    440.5 MB", with the true fraction, while a checkpoint downloads. The one helper every model view uses. Calls
    may come from another learner's download thread (one download per id, shared): they run in this event's
    context, so the bar shows on this learner's page."""
    context = contextvars.copy_context()
    return lambda fraction, message: context.copy().run(progress, fraction, desc=message)


def _wanted(task: str, model_id: object) -> tuple[str, str | None, str] | None:
    """(id, task or None, what it needs) for one of a view's checkpoints; None when nothing is to be fetched."""
    typed = str(model_id or "").strip()
    if task == TOKENIZER:  # a bundled model (the char-BERT) has its own vocabulary: nothing to fetch
        return (typed, None, "tokenizer") if typed and not any(typed in ids for ids in BUNDLED.values()) else None
    if typed in BUNDLED.get(task, ()):
        return None
    return model_id_or_default(task, typed), task, "model"


def fetch_models(models: list[tuple[str, object]], progress: resolve.Progress | None = None) -> None:
    """Make each ``(task, model id)`` local (``(TOKENIZER, id)``: its tokenizer). A learner's error (offline,
    stalled, refused) is not raised here: the resolver remembers it and the model step reports it, or falls back
    where the view can."""
    for task, model_id in models:
        wanted = _wanted(task, model_id)
        if wanted is None:
            continue
        try:
            resolve.resolve(wanted[0], wanted[2], progress, wanted[1])
        except LearnerError as exc:
            log.info("download step: %s", exc.key)


def not_here(models: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """The ``(task, id)`` pairs that need the network (``resolve.answers_here`` says no): no network asked."""
    return [(task, model_id) for task, model_id in models
            if (wanted := _wanted(task, model_id)) is not None and not resolve.answers_here(wanted[0], wanted[2])]


def _download_step(models: dict[str, object]) -> Callable:
    """The first step's handler: one parameter per model component (a str in ``models`` is a fixed id). It has no
    outputs: its progress is shown on the model step's (``show_progress_on``). Each output, even an unchanged one
    (gr.skip()), would cost Gradio a new component and a config rebuild per click: 13 for NER, about a fifth of the
    server's CPU under benchmarks/load_test.py's classroom profile (py-spy)."""

    async def fetch(values, request: gr.Request | None, progress: gr.Progress):
        given = iter(values)
        pairs = [(task, source if isinstance(source, str) else next(given)) for task, source in models.items()]
        missing = await anyio.to_thread.run_sync(not_here, pairs)
        if not missing:
            return  # here (or refused at once): no slot, no wait
        lang = language_of(request)
        report = byte_progress(progress)

        def waiting(ahead: int) -> None:
            progress(0.0, desc=text("downloads.waiting_slot", lang, ahead=ahead + 1, slots=SLOTS.total,
                                   per=SLOTS.per_session))

        def run() -> None:
            with using_language(lang), hub.gate_passed():  # this step holds its slot already
                fetch_models(missing, report)

        session = getattr(request, "session_hash", None) or "-"
        try:
            async with SLOTS.hold(session, waiting):
                await anyio.to_thread.run_sync(run)
        except Exception:  # noqa: BLE001 - never a traceback here: the model step says what is wrong
            log.exception("download step")

    inputs = sum(not isinstance(source, str) for source in models.values())
    if inputs == 0:
        async def download(request: gr.Request = None, progress=gr.Progress()):
            return await fetch((), request, progress)
    elif inputs == 1:
        async def download(model_id, request: gr.Request = None, progress=gr.Progress()):
            return await fetch((model_id,), request, progress)
    elif inputs == 2:
        async def download(first_id, second_id, request: gr.Request = None, progress=gr.Progress()):
            return await fetch((first_id, second_id), request, progress)
    else:
        raise ValueError("a view downloads at most two checkpoints")
    return download


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


def in_bert_slot(fn: Callable) -> Callable:
    """``fn`` run while holding one of the BERT_SLOTS compute slots (a generator: for all its steps)."""
    if inspect.isgeneratorfunction(inspect.unwrap(fn)) or inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def steps(*args, **kwargs):
            with _bert_slots:
                yield from fn(*args, **kwargs)

        return steps

    @functools.wraps(fn)
    def computed(*args, **kwargs):
        with _bert_slots:
            return fn(*args, **kwargs)

    return computed


def model_event(trigger: Callable, models: dict[str, object], fn: Callable, inputs, outputs, *, api_name: str,
                queue: dict | None = None, cache_results: bool = False, **options):
    """``trigger`` (a bound event listener such as ``button.click``) runs the download step for ``models``
    ({task: the component holding its checkpoint id, or a fixed id}), then ``fn`` on ``queue`` (default: the
    "bert" group, computing in one of its BERT_SLOTS) with ``options`` (batch=True, max_batch_size,
    api_visibility, ...). Returns the model step.
    ``cache_results``: fn gives the same answer to the same inputs and checkpoints (no sampling, no training), so
    identical requests share one result (demo/server/result_cache.py)."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if queue is None:
        fn = in_bert_slot(fn)
    if cache_results:  # outside the slot: a cached answer takes no compute slot
        where = {task: inputs.index(source) if not isinstance(source, str) else source
                 for task, source in models.items()}
        fn = result_cache.cached(fn, api_name, where, batch=options.get("batch", False))
    first = {key: options.pop(key) for key in TRIGGER_OPTIONS if key in options}
    # A results column among the outputs (hidden while a card stands in) is no progress target: the browser would
    # walk and copy the whole column on every status message (tests/test_app.py: loading statuses stay small).
    leaves = [output for output in outputs if isinstance(output, gr.components.Component)]  # no Row, Column
    if len(leaves) < len(outputs):
        options.setdefault("show_progress_on", leaves)
    first.setdefault("show_progress_on", options.get("show_progress_on", leaves))
    sources = [source for source in models.values() if not isinstance(source, str)]
    download = trigger(_download_step(models), sources, None,
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
