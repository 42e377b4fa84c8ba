"""Presets, content on first open, deep links and "Try this" lessons: one mechanism every tab shares (issue #18).

A *view* is one input form and the results it fills (a sub-tab, or part of one). A *preset* is a named set of
input values for a view; running it sets the inputs AND runs the view's handler, so one click shows a result.

    from demo.kit import presets

    view = presets.View(
        "attention", "steps",                   # the tab's id (= its demo module's name) and a key for the view
        inputs=[tokens, mode, Q, K, V],         # components a preset sets, in the handler's parameter order
        outputs=[arithmetic, fig_scores],       # components the handler fills
        fn=step_through,                        # fn(*input values) -> output values; a plain (not generator) handler
        presets=[presets.Preset("thinking-machines", "Thinking Machines (§9)", values=(...)), ...],
        where=sub_tab,                          # the gr.Tab (with an id) the view lives in; None: the tab itself
    )
    view.buttons()                              # the preset bar: a button and a 🔗 copy link per preset
    lessons.lesson([lessons.Step("§9", "question…", "answer…", view, "thinking-machines"), ...])  # demo/kit/lessons.py

What each piece does:
- **First open.** The first preset of a view is its default. When the learner opens the tab (or the sub-tab) the
  view lives in, its default is computed and shown, once per session (a per-view ``gr.State`` remembers it), so
  nothing is computed for tabs never opened and nothing at import or build time (the cold start does not grow).
  Build an input with its default's value: the open event then sends only the results, and what the learner types
  while they compute stays. The app's first tab is filled by the page's load (``app_open``), which lists only that
  tab's views as outputs; a first tab with no view to compute (the Overview's path, drawn at build) has no load event.
- **Presets.** ``values`` is a tuple in ``inputs`` order, or a zero-argument callable returning one (for values
  that are costly to build, such as matrices). ``section`` names the seed section it reproduces.
- **Preset bar.** :meth:`View.buttons` is ONE ``gr.HTML`` holding every preset's button and 🔗 link, and ONE event
  (``<tab>_<view>_preset``, whose input is the preset's slug, so API clients call it too). Gradio's front end pays
  for every component and event when the page loads (it matches each component against each event:
  ``find_attached_events``); one Gradio button and event per preset made that 1,360 components x 336 events, most of
  a 5-9 s page open. Its text is rendered in the browser's language (demo.kit.i18n.in_every_language).
- **Deep links.** ``?tab=<tab id>&preset=<preset slug>`` selects the tab (and sub-tab) and computes the preset;
  ``?tab=<tab id>`` alone computes the tab's defaults. The browser copies the address's query into its tab's hidden
  box, whose change runs ``<tab>_deep_link`` (that tab's views as outputs): only a page opened with a query pays for
  it. Slugs are unique within a tab. The 🔗 beside each preset is a real link (:func:`preset_link`, also used in
  Markdown); a click puts it in the address bar and the clipboard.
- **Lessons.** demo/kit/lessons.py: a "Try this" box whose steps run presets of these views.
- **Slots.** A preset whose ``values`` is None is a documented slot (an example whose model lives in another issue:
  classification, Chinese QA, Chinese NER); :meth:`View.buttons` shows it disabled with its ``note``.

Wiring in the app shell (app.py): build the tabs inside ``with collector.tab(tab_id, tab):`` blocks of a
:class:`Registry`, then call ``collector.wire(app, tabs)`` once; it adds the tab-open events, the page's load and the
deep link. A tab built outside a Registry (a test building one tab) still gets its
sub-tab-open events and preset buttons.

Every string this module shows is in the ``presets`` section of assets/i18n/*.yaml.
"""
from __future__ import annotations

import contextlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Callable, Sequence
from urllib.parse import parse_qsl

import gradio as gr

from core.text.errors import UserInputError, as_sent
from demo.server.handlers import friendly_errors, on_zero_gpu
from demo.kit.widgets import add_csv_downloads, move_block, shows_already
from demo.server.downloads import fetch_models
from demo.kit.i18n import in_every_language, label
from demo.kit.preset_bar import BAR_JS, BAR_TEMPLATE
from demo.kit.scripts import script
from demo.kit.preset_records import ASKED, OPENED
from demo.server.result_cache import preset_result
from demo.kit import state_links


@dataclass(frozen=True)
class Preset:
    """Named input values for a view. ``values``: a tuple in the view's ``inputs`` order, a zero-argument callable
    returning one, or None for a slot (an example that belongs to another issue; ``note`` says which)."""
    slug: str
    label: str
    values: tuple | Callable[[], tuple] | None
    section: str = ""
    note: str = ""
    shows: str = ""  # the id of the sub-tab (beside the view's own) a lesson or link selects; "": the view's own

    def resolved(self) -> tuple:
        return tuple(self.values() if callable(self.values) else self.values)


def preset_link(tab: str, slug: str, seed: int | None = None) -> str:
    """The relative deep link that opens ``tab`` with preset ``slug`` computed (with ``seed`` in its seed box, for a
    view that samples: the seed is part of what the link reproduces)."""
    return f"?tab={tab}&preset={slug}" + (f"&seed={seed}" if seed is not None else "")


class View:
    """One form of a tab and its presets; see the module docstring."""

    def __init__(self, tab: str, key: str, inputs: Sequence[gr.components.Component],
                 outputs: Sequence[gr.components.Component], fn: Callable, presets: Sequence[Preset],
                 where: gr.Tab | None = None, seed: gr.components.Component | None = None):
        if not presets or presets[0].values is None:
            raise ValueError("a view needs a runnable first preset (its default)")
        self.tab, self.key = tab, key
        self.inputs, self.outputs, self.fn = list(inputs), list(outputs), fn
        self.presets = {p.slug: p for p in presets}
        self.default = presets[0].slug
        # The input that seeds sampling, if any: a link's ``&seed=`` goes there (demo/kit/sampling.py, issue #36)
        self.seed_index = next((i for i, c in enumerate(self.inputs) if c is seed), None) if seed is not None else None
        self.where = where
        # The gr.Tabs that holds the sub-tab, to select it from a lesson or a deep link. Read now: Gradio wraps
        # loose sub-tabs in a gr.Tabs of its own only when the tab around them closes (after the lesson's events
        # are wired with the wrong parent: "Returned component Tabs not specified as output"), and the served app
        # no longer links a tab to its parent (`where.parent` was None inside events: sub-tabs never switched).
        self.switcher = where.parent if where is not None else None
        if where is not None and not isinstance(self.switcher, gr.Tabs):
            raise ValueError(f"build the sub-tab of view {tab}/{key} inside an explicit `with gr.Tabs():`")
        # Inside its own sub-tab: a State left directly in a gr.Tabs counts as one of its children, so Gradio's
        # front end numbered the tabs after it one too far, and selecting a tab wrote its label over a neighbour's.
        self.done = gr.State(False)  # this session saw the result: opening the view again keeps the learner's work
        self.shared: set[int] = set()  # ids of inputs other views also set (a tab's checkpoint picker): Registry.wire
        if where is not None and isinstance(self.done.parent, gr.Tabs):  # built right after its `with gr.Tab`
            move_block(self.done, where)
        if where is not None:
            if where.id is None:
                raise ValueError(f"give the sub-tab of view {tab}/{key} an id")
            self.wire(where.select, self._open, f"{self.api_prefix}_open", api_visibility="undocumented",
                      show_progress="minimal")
        if _CURRENT is not None:
            _CURRENT.add(self)

    # -- running -------------------------------------------------------------------------------------------------

    @property
    def api_prefix(self) -> str:
        """The start of this view's event names: ``<tab>_<view>_open``, ``<tab>_<view>_preset``."""
        return f"{self.tab}_{self.key}".replace("-", "_")

    @property
    def progress_on(self) -> gr.components.Component:
        """Where this view's events show their progress: its first result, never all of ``components()``.

        Gradio's front end keeps a loading status for every progress target of every event that has run, and on
        each status message of any event it updates all of them, each by a walk of the whole layout (plus, for a
        container such as the sub-tabs' gr.Tabs, a copy of every value inside it). With the default (all outputs)
        the statuses grew to most of the app's ~1,400 components and a tab switch cost 0.5-1 s of the browser's
        main thread (1.5 of 3.8 s of JS in one profile of four re-opens; 0.1-0.25 s per re-open with one leaf)."""
        return self.outputs[0]

    def wire(self, trigger: Callable, fn: Callable, api_name: str, inputs: Sequence = (), **options) -> None:
        """Every event of this view (open, preset): it reads ``inputs`` and ``done``, may set any of
        ``components()`` and shows its progress on ``progress_on`` only."""
        trigger(fn, [*inputs, self.done], self.components(), show_progress_on=self.progress_on, api_name=api_name,
                **options)

    def components(self) -> list:
        extra = [self.switcher] if self.switcher is not None else []
        return unique([self.done, *extra, *self.inputs, *self.outputs])

    def run(self, slug: str | None = None, select: bool = False, seed: object = None) -> dict:
        """The updates that show preset ``slug`` (default: the view's default): its inputs and its results."""
        return self.run_preset(self.with_seed(self.presets[self.runnable(slug or self.default)], seed), select)

    def run_preset(self, preset: Preset, select: bool = False) -> dict:
        """The updates that show ``preset`` (one of the view's, or one a state link made: demo/kit/state_links.py)."""
        if on_zero_gpu():
            self.fetch_checkpoints(preset)
        values, results = preset_result(self, preset)
        if len(self.outputs) == 1:
            results = (results,)
        updates: dict = dict(zip(self.inputs, values))
        updates.update(zip(self.outputs, results))
        updates[self.done] = True
        if select and self.switcher is not None:  # the sub-tab the preset's results are about
            updates[self.switcher] = gr.Tabs(selected=preset.shows or self.where.id)
        return updates

    def fetch_checkpoints(self, preset: Preset) -> None:
        """Make the checkpoints ``preset`` sets in the view's pickers (demo.kit.widgets.model_picker) local, before the
        handler's GPU call: on ZeroGPU that call never downloads (demo.server.handlers.gpu_handler). Errors are the handler's
        to show (demo.server.downloads.fetch_models)."""
        models = [(component.checkpoint_task, value) for component, value in zip(self.inputs, preset.resolved())
                  if hasattr(component, "checkpoint_task")]
        if models:
            fetch_models(models)

    def with_seed(self, preset: Preset, seed: object) -> Preset:
        """``preset`` with ``seed`` in the view's seed input (a link's ``&seed=``); as it is without a seed."""
        if seed is None or self.seed_index is None:
            return preset
        if not str(seed).isdigit() or int(str(seed)) > 2**32 - 1:
            raise UserInputError("presets.bad_seed", seed=str(seed)[:20])
        values = list(preset.resolved())
        values[self.seed_index] = int(str(seed))
        return replace(preset, slug=f"{preset.slug}&seed={values[self.seed_index]}", values=tuple(values))

    def runnable(self, slug: str) -> str:
        """``slug`` if it names a runnable preset of this view; else a clear error naming the ones that run."""
        preset = self.presets.get(slug) if isinstance(slug, str) else None
        if preset is None or preset.values is None:
            choices = ", ".join(p.slug for p in self.presets.values() if p.values is not None)
            raise UserInputError("presets.unknown", slug=as_sent(slug)[:60], choices=choices)
        return slug

    def run_default(self, request=None) -> dict:
        """:meth:`run` for an open event: nothing if the learner has asked this view for a result in this session
        (before the default started, or while it was computing), or if another open event of the session claimed
        the default first (see :class:`demo.kit.preset_records.SessionViews`). Inputs the page already shows with the
        default's value are left out: what the learner typed while it computed stays (empty ones are filled)."""
        asked = ASKED.count(self, request)
        if asked or not OPENED.claim(self, request):
            return {self.done: True}
        try:
            updates = self.run()
        except Exception:
            OPENED.forget(self, request)  # nothing was shown: the next open tries again
            raise
        if ASKED.count(self, request) != asked:
            return {self.done: True}
        # Not sent: an input of this view alone that the page shows as built (another view may have set a shared one)
        own = {id(component) for component in self.inputs} - self.shared
        return {c: v for c, v in updates.items() if id(c) not in own or not shows_already(c, v)}

    def run_asked(self, slug: str, select: bool = False, request=None, seed: object = None) -> dict:
        """:meth:`run` for a learner's request (preset button, lesson step, deep link): recorded first, so a default
        still computing does not overwrite it."""
        self.runnable(slug)
        ASKED.mark(self, request)
        return self.run(slug, select, seed)

    @friendly_errors
    def _open(self, done: bool = False, request: gr.Request = None):
        # Already shown: change nothing. (An empty dict would be read as one output value, not as "no updates".)
        return {self.done: True} if done else self.run_default(request)

    @friendly_errors
    def _run_clicked(self, slug: str, done: bool = False, request: gr.Request = None):
        return self.run_asked(slug, request=request)

    # -- layout --------------------------------------------------------------------------------------------------

    def buttons(self) -> gr.HTML:
        """The preset bar (see the module docstring): a button and a 🔗 link per preset, one event for them all."""
        items = []
        for preset in self.presets.values():
            item = {"slug": preset.slug, "label": in_every_language(preset.label)}
            if preset.values is None:  # a slot: shown disabled, with what it waits for
                item["note"] = in_every_language(preset.note)
            else:
                seeded = self.seed_index is not None and isinstance(preset.values, tuple)
                item["link"] = preset_link(self.tab, preset.slug, preset.values[self.seed_index] if seeded else None)
            items.append(item)
        bar = gr.HTML("", html_template=BAR_TEMPLATE, js_on_load=BAR_JS, elem_classes=["preset-bar"], items=items,
                      title=in_every_language(label("presets.label")),
                      copy=in_every_language(label("presets.copy_link")),
                      slot=in_every_language(label("presets.slot")), kit=None)  # demo/kit/teacher.py fills kit
        self.wire(bar.click, self._run_clicked, f"{self.api_prefix}_preset", inputs=[bar])
        self.bar = bar  # the teacher's kit adds "Add to slides" and "Link to this view" to it (demo/kit/teacher.py)
        return bar


def enclosing_tab(block) -> gr.Tab | None:
    """The gr.Tab a block sits in (its sub-tabs may be nested in rows and columns), read while the app is built."""
    parent = block.parent
    while parent is not None and not isinstance(parent, gr.Tab):
        parent = parent.parent
    return parent


def unique(components) -> list:
    return list({id(component): component for component in components}.values())  # in first-seen order


# ----------------------------------------------------------------------------------------------------------------
# The app-wide registry: tab-open events and deep links

# characters of a deep link's query read (?tab=…&preset=… needs under 100; a state link of the teacher's kit up to
# 2,000); the page's link router (assets/link_router.js) reads as many
QUERY_LIMIT = 2000

_CURRENT: "Registry | None" = None


@dataclass
class _TabEntry:
    tab: gr.Tab
    views: list[View] = field(default_factory=list)


def app_tabs() -> list:
    """The demo modules of the app being built (app.TABS, handed to its Registry); none outside a build."""
    return _CURRENT.modules if _CURRENT is not None else []


class Registry:
    """Collects every view while the app is built; :meth:`wire` adds tab-open events and the deep-link load."""

    def __init__(self, modules: Sequence = ()):
        self.modules = list(modules)  # the tabs' demo modules, as app.TABS lists them (app_tabs)
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
        return next((v for v in entry.views if slug in v.presets and v.presets[slug].values is not None), None)

    def opening(self, tab_id: str) -> list[View]:
        """The views shown when the tab itself is opened: tab-level ones and those in the first sub-tab.

        Fixed when the app is wired: the layout's ``children``/``parent`` links are build-time facts, and components
        created while serving (``gr.Tabs(selected=...)`` updates) must not change which views an open event fills."""
        if tab_id in self._opening:
            return self._opening[tab_id]
        return [v for v in self.tabs[tab_id].views
                if v.where is None or (v.switcher is not None and v.switcher.children
                                       and v.switcher.children[0] is v.where
                                       and enclosing_tab(v.switcher) is self.tabs[tab_id].tab)]

    def open_tab(self, tab_id: str, done: Sequence[bool], request=None) -> dict:
        views = self.opening(tab_id)
        updates: dict = {view.done: True for view in views}  # never empty: {} would count as one output value
        for view, seen in zip(views, done):
            if seen:
                continue
            if self.shares_an_asked_input(view, request):
                updates[view.done] = False  # computed when its own sub-tab is opened
                continue
            updates.update(view.run_default(request))
        return updates

    def shares_an_asked_input(self, view: View, request=None) -> bool:
        """Did the learner ask another view of this tab for a result, one that shares an input with ``view`` (the
        tab's checkpoint picker)? Then ``view``'s default must not run when the tab opens: a link to the MLM tab's
        "GPT vs BERT" with bert-base-chinese opens the tab, and the Fill view's default set the shared picker back
        to bert-base-uncased under the learner's Chinese sentence."""
        return any(other is not view and ASKED.count(other, request) and view.shared & {id(c) for c in other.inputs}
                   for other in self.tabs[view.tab].views)

    def deep_link(self, query: dict, first_tab: str, request=None) -> dict:
        """Updates for a URL's query: select the tab, (sub-tab,) and compute the preset or the tab's defaults."""
        tab_id = query.get("tab") if query.get("tab") in self.tabs else first_tab
        view = self.find(tab_id, query.get("preset")) if query.get("preset") else None
        updates: dict = {}
        if query.get("view") is not None and not query.get("preset"):  # a state link
            return state_links.open_link(self, tab_id, query, request)
        if view is not None:
            updates.update(view.run_asked(query.get("preset"), select=True, request=request, seed=query.get("seed")))
        else:
            for opened in self.opening(tab_id):
                updates.update(opened.run_default(request))
        return updates

    def wire(self, app: gr.Blocks, tabs: gr.Tabs) -> None:
        """Tab-open events for every tab, the page's load (the first tab's defaults) and the deep link."""
        first_tab = next(iter(self.tabs))
        app.preset_registry = self  # for tests and tools: every view and preset of the built app
        self._opening = {tab_id: self.opening(tab_id) for tab_id in self.tabs}
        setting = Counter(id(c) for entry in self.tabs.values() for view in entry.views for c in unique(view.inputs))
        for entry in self.tabs.values():
            for view in entry.views:
                view.shared = {id(c) for c in view.inputs if setting[id(c)] > 1}  # also shares_an_asked_input's
        for tab_id, entry in self.tabs.items():
            views = self.opening(tab_id)
            outputs = unique(c for v in views for c in v.components())
            if not views:
                continue

            # request first: Gradio passes gr.Request only to parameters before *args (the session, the language)
            def open_tab(request: gr.Request, *done, tab_id=tab_id):
                return self.open_tab(tab_id, done, request)

            entry.tab.select(friendly_errors(open_tab), [v.done for v in views], outputs,
                             show_progress_on=[v.progress_on for v in views], api_name=f"{tab_id}_open",
                             api_visibility="undocumented", show_progress="minimal")

        # Opening the page fills the first tab, and only that: its load lists just those views as outputs. Gradio
        # turns every output a handler leaves out into a skip() and builds a fresh component for each skip, so a
        # load listing all 344 components a deep link can fill cost 0.24 s of the server, and an update of each
        # in the browser, on every page open. A deep link is the second event below, paid only when there is one.
        first_views = self.opening(first_tab)

        @friendly_errors
        def open_first_tab(request: gr.Request = None):
            query = dict(request.query_params) if request is not None else {}
            if (query.get("tab", first_tab) != first_tab or self.find(first_tab, query.get("preset")) is not None
                    or query.get("view") is not None):
                return {view.done: False for view in first_views}  # <tab>_deep_link fills the page instead
            return self.open_tab(first_tab, [False] * len(first_views), request)

        if first_views:  # a first tab drawn when the app is built (the Overview's path) needs no load event
            app.load(open_first_tab, None, unique(c for v in first_views for c in v.components()),
                     api_name="app_open", api_visibility="undocumented",
                     show_progress_on=[v.progress_on for v in first_views])

        # ?tab=…&preset=…: the browser copies the address's query into its tab's hidden box; the box's change selects
        # the tab and sub-tab and computes the preset, or the tab's defaults. One box and one event per tab, whose
        # outputs are that tab's views: Gradio's front end updates every output of an event (a skip too); with one
        # event listing the whole app's 400 components a link took the browser 1.12-1.60 s, now 0.94-1.14 s
        # (benchmarks/README.md, "The test suite").
        linked = [tab_id for tab_id, entry in self.tabs.items() if entry.views]
        boxes = {tab_id: gr.Textbox("", visible="hidden", max_length=QUERY_LIMIT, elem_classes=["deep-link-query"])
                 for tab_id in linked}
        tab_ids = json.dumps(linked)
        router = script("link_router", LIMIT=str(QUERY_LIMIT), TAB_IDS=tab_ids)
        app.load(None, None, list(boxes.values()), js=router, api_name=False)
        # A link inside the page (the Overview's path, a lesson's Markdown, window.plmOpenLink) is opened without
        # reloading the page: the browser puts its query in its tab's box through this hidden button's event, and
        # gives every other box its own value back (unchanged: no event).
        follow = gr.Button("", visible="hidden", elem_id="deep-link-follow")
        follow.click(None, list(boxes.values()), list(boxes.values()), api_name=False,
                     js=script("link_follow", TAB_IDS=tab_ids))
        for tab_id, box in boxes.items():
            views = self.tabs[tab_id].views

            @friendly_errors
            def open_deep_link(search: str, request: gr.Request = None, tab_id=tab_id):
                query = dict(parse_qsl(str(search or "").lstrip("?")[:QUERY_LIMIT]))  # at most ~1,000 fields
                if query.get("tab") != tab_id:
                    return {tabs: gr.skip()}  # another tab's link (the browser sends each to its own tab's box)
                updates = self.deep_link(query, first_tab, request)
                updates[tabs] = gr.Tabs(selected=tab_id)
                return updates

            @friendly_errors
            def select(search: str, request: gr.Request = None):
                return state_links.where_to(self, tabs, search, request)

            # First, at once, the link's tab and sub-tab; then its view computes (a minute, for a trainer).
            switchers = unique(v.switcher for v in views if v.switcher is not None)
            box.change(select, box, [tabs, *switchers],
                       api_name=f"{tab_id}_deep_link_select", api_visibility="undocumented",
                       show_progress="hidden", show_progress_on=[box]).then(  # no loading status on a layout
                open_deep_link, box, unique([tabs] + [c for v in views for c in v.components()]),
                api_name=f"{tab_id}_deep_link", api_visibility="undocumented", show_progress="minimal",
                show_progress_on=[v.progress_on for v in views])
