"""Presets, content on first open, deep links and "Try this" lessons: one mechanism every tab shares (issue #18).

A *view* is one input form and the results it fills (a sub-tab, or part of one). A *preset* is a named set of
input values for a view; running it sets the inputs AND runs the view's handler, so one click shows a result.

    from demo import presets

    view = presets.View(
        "attention", "steps",                   # the tab's id (= its demo module's name) and a key for the view
        inputs=[tokens, mode, Q, K, V],         # components a preset sets, in the handler's parameter order
        outputs=[arithmetic, fig_scores],       # components the handler fills
        fn=step_through,                        # fn(*input values) -> output values; a plain (not generator) handler
        presets=[presets.Preset("thinking-machines", "Thinking Machines (§9)", values=(...)), ...],
        where=sub_tab,                          # the gr.Tab (with an id) the view lives in; None: the tab itself
    )
    view.buttons()                              # a row of preset buttons, each with a 🔗 copy-link button
    presets.lesson([presets.Step("§9", "question…", "answer…", view, "thinking-machines"), ...])

What each piece does:
- **First open.** The first preset of a view is its default. When the learner opens the tab (or the sub-tab) the
  view lives in, its default is computed and shown, once per session (a per-view ``gr.State`` remembers it), so
  nothing is computed for tabs never opened and nothing at import or build time (the cold start does not grow).
  The app's first tab is filled by ``demo.load``.
- **Presets.** ``values`` is a tuple in ``inputs`` order, or a zero-argument callable returning one (for values
  that are costly to build, such as matrices). ``section`` names the seed section it reproduces.
- **Deep links.** ``?tab=<tab id>&preset=<preset slug>`` selects the tab (and sub-tab) and computes the preset;
  ``?tab=<tab id>`` alone computes the tab's defaults. Slugs are unique within a tab. The 🔗 button beside each
  preset copies its link; :func:`preset_link` gives the same relative link for Markdown.
- **Lessons.** :func:`lesson` renders a closed "Try this" accordion: each step names its seed §, asks a question,
  has a button that runs a preset (switching to its sub-tab) and a hidden answer to reveal.
- **Slots.** A preset whose ``values`` is None is a documented slot (an example whose model lives in another issue:
  classification, Chinese QA, Chinese NER); :meth:`View.buttons` shows it disabled with its ``note``.

Wiring in the app shell (app.py): build the tabs inside ``with collector.tab(tab_id, tab):`` blocks of a
:class:`Registry`, then call ``collector.wire(app, tabs)`` once; it adds the tab-open events and the one
``demo.load`` that reads the URL. A tab built outside a Registry (a test building one tab) still gets its
sub-tab-open events and preset buttons.

Every string this module shows is in the ``presets`` section of assets/i18n/*.yaml (``demo.i18n.label``).
"""
from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Sequence

import gradio as gr
from gradio.context import Context

from demo.common import csv_download, friendly_errors
from demo.i18n import label as i18n_label

COPY_LINK = "🔗"
LESSON_STEP = "**{number}.** ({section})"  # language-free; the question (a string or an i18n key) follows it

# One listener for every 🔗 button (app.py adds it to the page's <head>): a button's classes name its link, so the
# 127 buttons need no Gradio event each. Events are not free in Gradio's front end: at page load it matches every
# component against every event (find_attached_events), ~0.3 s of the page's start for these 127 alone.
LINK_CLASS = "preset-link--"  # + "<tab>--<slug>"
COPY_LINK_HEAD = """<script>
document.addEventListener("click", (event) => {
  const button = event.target.closest && event.target.closest(".copy-link");
  const name = button && [...button.classList].find((c) => c.startsWith("%s"));
  if (!name) return;
  const [tab, slug] = name.slice(%d).split("--");
  const url = new URL(window.location.href);
  url.search = "?tab=" + tab + "&preset=" + slug;
  url.hash = "";
  if (navigator.clipboard) navigator.clipboard.writeText(url.href).catch(() => {});
  window.history.replaceState(null, "", url.href);
}, true);
</script>""" % (LINK_CLASS, len(LINK_CLASS))


@dataclass(frozen=True)
class Preset:
    """Named input values for a view. ``values``: a tuple in the view's ``inputs`` order, a zero-argument callable
    returning one, or None for a slot (an example that belongs to another issue; ``note`` says which)."""
    slug: str
    label: str
    values: tuple | Callable[[], tuple] | None
    section: str = ""
    note: str = ""

    def resolved(self) -> tuple:
        return tuple(self.values() if callable(self.values) else self.values)


def preset_link(tab: str, slug: str) -> str:
    """The relative deep link that opens ``tab`` with preset ``slug`` computed."""
    return f"?tab={tab}&preset={slug}"


class _Asked:
    """Per session and view: has the learner asked for a result (a preset, a lesson step, a deep link)?

    A default computed on open must never overwrite such a result. Gradio snapshots each event's inputs when it is
    sent, so a ``gr.State`` cannot tell a slow open event that a preset was clicked after it: this server-side record
    can. The open event skips the default when the learner asked before it started, and drops its result when the
    learner asked while it was computing. Bounded: the oldest sessions are forgotten first."""

    def __init__(self, limit: int = 20_000):
        self._seen: OrderedDict[tuple, int] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    @staticmethod
    def key(view: "View", request) -> tuple:
        return getattr(request, "session_hash", None), view.tab, view.key

    def mark(self, view: "View", request) -> None:
        with self._lock:
            key = self.key(view, request)
            self._seen[key] = self._seen.get(key, 0) + 1
            self._seen.move_to_end(key)
            while len(self._seen) > self._limit:
                self._seen.popitem(last=False)

    def count(self, view: "View", request) -> int:
        with self._lock:
            return self._seen.get(self.key(view, request), 0)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()


ASKED = _Asked()


class _Results:
    """A preset's values and results, computed once per process for each language (issue #18: first paint ≤ 1 s).

    A preset's result does not depend on the learner, only on its fixed values, the language (figure titles, notes)
    and which checkpoints the server can use (offline views show an "hf download" note until the model is there),
    so all three are in the key. The LSTM gradients default took 4–9 s and the bank sentences 4–7 s per open under
    load; now only the first open in a process pays. One lock per key: sessions opening the same tab at once wait
    for one computation instead of each running it. Bounded (LRU); results are treated as read-only."""

    def __init__(self, limit: int = 512):
        self._done: OrderedDict[tuple, tuple] = OrderedDict()
        self._locks: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._limit = limit

    @staticmethod
    def key(view: "View", preset: Preset) -> tuple:
        from core import registry
        from core.i18n import current_language

        return (view.fn, view.tab, view.key, preset.slug, current_language(), registry.is_offline(),
                tuple(sorted(set(registry.loaded_models()))))

    def get(self, view: "View", preset: Preset) -> tuple[tuple, tuple]:
        key = self.key(view, preset)
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._done:
                    self._done.move_to_end(key)
                    return self._done[key]
            values = preset.resolved()
            results = view.fn(*values)  # an error propagates and nothing is stored
            with self._lock:
                self._done[key] = values, results
                while len(self._done) > self._limit:
                    old, _ = self._done.popitem(last=False)
                    self._locks.pop(old, None)
            return values, results

    def clear(self) -> None:
        with self._lock:
            self._done.clear()


RESULTS = _Results()


class View:
    """One form of a tab and its presets; see the module docstring."""

    def __init__(self, tab: str, key: str, inputs: Sequence[gr.components.Component],
                 outputs: Sequence[gr.components.Component], fn: Callable, presets: Sequence[Preset],
                 where: gr.Tab | None = None):
        if not presets or presets[0].values is None:
            raise ValueError("a view needs a runnable first preset (its default)")
        self.tab, self.key = tab, key
        self.inputs, self.outputs, self.fn = list(inputs), list(outputs), fn
        self.presets = {p.slug: p for p in presets}
        self.default = presets[0].slug
        self.where = where
        # Inside its own sub-tab: a State left directly in a gr.Tabs counts as one of its children, so Gradio's
        # front end numbered the tabs after it one too far, and selecting a tab wrote its label over a neighbour's.
        in_tabs = where is not None and isinstance(Context.block, gr.Tabs)  # built right after its `with gr.Tab`
        with where if in_tabs else contextlib.nullcontext():
            self.done = gr.State(False)  # this session saw the result: opening the view again keeps the learner's work
        if where is not None:
            if where.id is None:
                raise ValueError(f"give the sub-tab of view {tab}/{key} an id")
            self.wire(where.select, self._open, f"{tab}_{key}_open", api_visibility="undocumented",
                      show_progress="minimal")
        if _CURRENT is not None:
            _CURRENT.add(self)

    # -- running -------------------------------------------------------------------------------------------------

    @property
    def switcher(self) -> gr.Tabs | None:
        """The gr.Tabs that holds this view's sub-tab (to select it from a lesson or a deep link)."""
        return None if self.where is None else self.where.parent

    @property
    def progress_on(self) -> gr.components.Component:
        """Where this view's events show their progress: its first result, never all of ``components()``.

        Gradio's front end keeps a loading status for every progress target of every event that has run, and on
        each status message of any event it updates all of them, each by a walk of the whole layout (plus, for a
        container such as the sub-tabs' gr.Tabs, a copy of every value inside it). With the default (all outputs)
        the statuses grew to most of the app's ~1,400 components and a tab switch cost 0.5-1 s of the browser's
        main thread (1.5 of 3.8 s of JS in one profile of four re-opens; 0.1-0.25 s per re-open with one leaf)."""
        return self.outputs[0]

    def wire(self, trigger: Callable, fn: Callable, api_name: str, **options) -> None:
        """Every event of this view (open, preset, lesson step): it reads ``done``, may set any of ``components()``
        and shows its progress on ``progress_on`` only."""
        trigger(fn, [self.done], self.components(), show_progress_on=self.progress_on, api_name=api_name, **options)

    def components(self) -> list:
        extra = [self.switcher] if self.switcher is not None else []
        return unique([self.done, *extra, *self.inputs, *self.outputs])

    def run(self, slug: str | None = None, select: bool = False) -> dict:
        """The updates that show preset ``slug`` (default: the view's default): its inputs and its results."""
        preset = self.presets.get(slug or self.default)
        if preset is None or preset.values is None:
            preset = self.presets[self.default]
        values, results = RESULTS.get(self, preset)
        if len(self.outputs) == 1:
            results = (results,)
        updates: dict = dict(zip(self.inputs, values))
        updates.update(zip(self.outputs, results))
        updates[self.done] = True
        if select and self.switcher is not None:
            updates[self.switcher] = gr.Tabs(selected=self.where.id)
        return updates

    def run_default(self, request=None) -> dict:
        """:meth:`run` for an open event: nothing if the learner has asked this view for a result in this session
        (before the default started, or while it was computing; see :class:`_Asked`)."""
        asked = ASKED.count(self, request)
        if asked:
            return {self.done: True}
        updates = self.run()
        return updates if ASKED.count(self, request) == asked else {self.done: True}

    def run_asked(self, slug: str, select: bool = False, request=None) -> dict:
        """:meth:`run` for a learner's request (preset button, lesson step, deep link): recorded first, so a default
        still computing does not overwrite it."""
        ASKED.mark(self, request)
        return self.run(slug, select)

    @friendly_errors
    def _open(self, done: bool = False, request: gr.Request = None):
        # Already shown: change nothing. (An empty dict would be read as one output value, not as "no updates".)
        return {self.done: True} if done else self.run_default(request)

    def runner(self, slug: str, select: bool = False) -> Callable:
        @friendly_errors
        def run_preset(done: bool = False, request: gr.Request = None):
            return self.run_asked(slug, select, request)

        run_preset.__name__ = f"run_{self.tab}_{self.key}_{slug}".replace("-", "_")
        return run_preset

    # -- layout --------------------------------------------------------------------------------------------------

    def buttons(self, label=None) -> None:
        """A row of preset buttons; each runs its preset, and its 🔗 copies the deep link."""
        with gr.Row(elem_classes=["preset-bar"]):
            gr.Markdown(label if label is not None else i18n_label("presets.label"), elem_classes=["preset-label"])
            for preset in self.presets.values():
                if preset.values is None:  # a slot: shown disabled, with what it waits for
                    gr.Button(preset.label, size="sm", interactive=False, scale=0)
                    gr.Markdown(i18n_label("presets.slot"), elem_classes=["preset-label"])
                    if preset.note:
                        gr.Markdown(preset.note, elem_classes=["preset-label"])
                    continue
                button = gr.Button(preset.label, size="sm", scale=0, elem_id=f"preset-{self.tab}-{preset.slug}")
                self.wire(button.click, self.runner(preset.slug),
                          f"{self.tab}_preset_{preset.slug}".replace("-", "_"))
                gr.Button(COPY_LINK, size="sm", scale=0, min_width=36,  # COPY_LINK_HEAD handles its click
                          elem_classes=["copy-link", f"{LINK_CLASS}{self.tab}--{preset.slug}"])


def unique(components) -> list:
    seen, out = set(), []
    for component in components:
        if id(component) not in seen:
            seen.add(id(component))
            out.append(component)
    return out


# ----------------------------------------------------------------------------------------------------------------
# Lessons


@dataclass(frozen=True)
class Step:
    """One "Try this" step: the seed § it comes from, a question, the answer revealed on demand, and the preset of
    ``view`` that shows it."""
    section: str
    question: str
    answer: str
    view: View
    slug: str


def lesson_table(rows: Sequence[tuple], views: "View | dict[str, View]") -> None:
    """:func:`lesson` from a tab's LESSON table: rows (section, question, answer, slug) for a tab with one view, or
    (section, question, answer, view key, slug) with ``views`` a dict of the tab's views by key."""
    if isinstance(views, dict):
        lesson([Step(section, question, answer, views[key], slug) for section, question, answer, key, slug in rows])
    else:
        lesson([Step(section, question, answer, views, slug) for section, question, answer, slug in rows])


def lesson(steps: Sequence[Step], title=None, open: bool = False) -> None:
    """A "Try this" accordion: each step is a question, a button that runs its preset, and a hidden answer.
    Questions and answers may be plain strings or i18n keys (``demo.i18n.label``)."""
    with gr.Accordion(title if title is not None else i18n_label("presets.lesson_title"), open=open,
                      elem_classes=["lesson"]):
        for number, step in enumerate(steps, 1):
            with gr.Row():
                if isinstance(step.question, str):
                    gr.Markdown(f"{LESSON_STEP.format(number=number, section=step.section)} {step.question}")
                else:  # an i18n key: the browser translates it, so it cannot be joined to the prefix here
                    with gr.Column(scale=5, min_width=200):
                        gr.Markdown(LESSON_STEP.format(number=number, section=step.section))
                        gr.Markdown(step.question)
                button = gr.Button(i18n_label("presets.show_me"), size="sm", scale=0, min_width=90)
            with gr.Accordion(i18n_label("presets.answer"), open=False):
                gr.Markdown(step.answer)
            step.view.wire(button.click, step.view.runner(step.slug, select=True), f"{step.view.tab}_lesson_{number}")


def add_csv_downloads(root: gr.blocks.BlockContext, prefix: str) -> list[gr.DownloadButton]:
    """Give every result table (a gr.Dataframe not made for input) under ``root`` a CSV download button, placed
    right after it in its row or column (demo.common.csv_download). The Registry calls it on each built tab, so a
    tab needs no code of its own for it."""
    tables = [block for block in _descendants(root)
              if isinstance(block, gr.Dataframe) and block.interactive is not True]
    buttons = []
    for number, table in enumerate(tables, 1):
        parent = table.parent
        # Created as a child of the table's container, without `with parent:` (re-entering a built layout block
        # re-parents it under the current block, which broke the page's tab bar), then moved right after the table.
        outer, Context.block = Context.block, parent
        try:
            button = csv_download(table, f"{prefix}-table-{number}")
        finally:
            Context.block = outer
        parent.children.remove(button)
        parent.children.insert(parent.children.index(table) + 1, button)
        buttons.append(button)
    return buttons


def _descendants(block):
    for child in getattr(block, "children", []):
        yield child
        yield from _descendants(child)


# ----------------------------------------------------------------------------------------------------------------
# The app-wide registry: tab-open events and deep links

_CURRENT: "Registry | None" = None


@dataclass
class _TabEntry:
    tab: gr.Tab
    views: list[View] = field(default_factory=list)


class Registry:
    """Collects every view while the app is built; :meth:`wire` adds tab-open events and the deep-link load."""

    def __init__(self):
        self.tabs: dict[str, _TabEntry] = {}
        self._tab: str | None = None
        self._opening: dict[str, list[View]] = {}

    @contextlib.contextmanager
    def tab(self, tab_id: str, tab: gr.Tab):
        global _CURRENT
        self.tabs[tab_id] = _TabEntry(tab)
        previous, _CURRENT, self._tab = _CURRENT, self, tab_id
        try:
            yield self
            add_csv_downloads(tab, tab_id)
        finally:
            _CURRENT, self._tab = previous, None

    def add(self, view: View) -> None:
        if self._tab is not None:
            self.tabs[self._tab].views.append(view)

    def find(self, tab_id: str, slug: str | None) -> View | None:
        entry = self.tabs.get(tab_id)
        if entry is None:
            return None
        return next((v for v in entry.views if slug in v.presets), None)

    def opening(self, tab_id: str) -> list[View]:
        """The views shown when the tab itself is opened: tab-level ones and those in the first sub-tab.

        Fixed when the app is wired: the layout's ``children``/``parent`` links are build-time facts, and components
        created while serving (``gr.Tabs(selected=...)`` updates) must not change which views an open event fills."""
        if tab_id in self._opening:
            return self._opening[tab_id]
        return [v for v in self.tabs[tab_id].views
                if v.where is None or (v.switcher is not None and v.switcher.children
                                       and v.switcher.children[0] is v.where
                                       and v.switcher.parent is self.tabs[tab_id].tab)]

    def open_tab(self, tab_id: str, done: Sequence[bool], request=None) -> dict:
        views = self.opening(tab_id)
        updates: dict = {view.done: True for view in views}  # never empty: {} would count as one output value
        for view, seen in zip(views, done):
            if not seen:
                updates.update(view.run_default(request))
        return updates

    def deep_link(self, query: dict, first_tab: str, request=None) -> dict:
        """Updates for a URL's query: select the tab, (sub-tab,) and compute the preset or the tab's defaults."""
        tab_id = query.get("tab") if query.get("tab") in self.tabs else first_tab
        view = self.find(tab_id, query.get("preset")) if query.get("preset") else None
        updates: dict = {}
        if view is not None:
            updates.update(view.run_asked(query.get("preset"), select=True, request=request))
        else:
            for opened in self.opening(tab_id):
                updates.update(opened.run_default(request))
        return updates

    def wire(self, app: gr.Blocks, tabs: gr.Tabs) -> None:
        """Tab-open events for every tab, and one demo.load that reads ``?tab=…&preset=…`` (default: first tab)."""
        first_tab = next(iter(self.tabs))
        app.preset_registry = self  # for tests and tools: every view and preset of the built app
        self._opening = {tab_id: self.opening(tab_id) for tab_id in self.tabs}
        everything = [tabs]
        for tab_id, entry in self.tabs.items():
            views = self.opening(tab_id)
            outputs = unique(c for v in views for c in v.components())
            everything += [c for v in entry.views for c in v.components()]
            if not views:
                continue

            # request first: Gradio passes gr.Request only to parameters before *args (the session, the language)
            def open_tab(request: gr.Request, *done, tab_id=tab_id):
                return self.open_tab(tab_id, done, request)

            entry.tab.select(friendly_errors(open_tab), [v.done for v in views], outputs,
                             show_progress_on=[v.progress_on for v in views], api_name=f"{tab_id}_open",
                             api_visibility="undocumented", show_progress="minimal")

        @friendly_errors
        def load_from_url(request: gr.Request = None):
            query = dict(request.query_params) if request is not None else {}
            updates = self.deep_link(query, first_tab, request)
            tab_id = query.get("tab")
            if tab_id in self.tabs:
                updates[tabs] = gr.Tabs(selected=tab_id)
            return updates or {tabs: gr.skip()}  # never {}: Gradio would read it as one output value

        app.load(load_from_url, None, unique(everything), api_name="app_open", api_visibility="undocumented",
                 show_progress_on=[v.progress_on for v in self.opening(first_tab)] or None)
