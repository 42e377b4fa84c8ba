"""The teacher's kit (issue #54): "Add to slides", "Link to this view", the deck panel and its .pptx download.

    teacher.wire(collector, tour_box, app)  # app.py, after the tabs: every preset bar gets the kit's two buttons
    head=... + teacher.head()               # the words and the script's address (assets/kit.js, served by ROUTES)
    routes=[..., *teacher.ROUTES]           # the script, the deck's download (POST) and the one-click decks' plans

How a slide is made. The kit's buttons sit in each view's preset bar (demo/kit/presets.View.buttons). A press asks
the tab's hidden kit desk (assets/kit_desk.js), which sends "<mode>:<view key>" and the inputs of the tab's views, as
they are on screen, through one event per tab (``<tab>_snapshot``); the server answers with the slide's words, read
from the view's own components (demo/kit/state_links.py: title, caption, notes, the state link), and the class marking
the view's outputs. The browser (assets/kit.js) then exports each figure among those outputs with plotly's own image
export, at the slide size and in the theme of the PNG export (demo/kit/figures.SLIDE_EXPORT), and reads each table's
cells; the slide goes into the browser's IndexedDB (a deck of 30 figures is ~15 MB: more than localStorage holds).
"Download the deck" posts the slides to :data:`DECK_PATH`, which answers the .pptx (demo/kit/deck.py); nothing is
kept on the server.

The one-click decks. The guided tour (one slide per stop, demo/kit/tour.STOPS) and a tab's "Try this" lesson (one slide
per step, demo/kit/lessons.py) are read from the app itself. No renderer of plotly figures without Chrome exists for the
server (kaleido drives a Chrome), so the server computes each stop's preset (the same cached results a click shows:
demo.server.result_cache.preset_result) and sends the figures' JSON (:data:`PLAN_PATH`); the learner's browser draws each one
off screen with plotly.js, exports it, and posts the deck as above.
"""
from __future__ import annotations

import functools
import json
import re
import threading
import time

import gradio as gr
import plotly.graph_objects as go
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.loading.paths import ASSETS_DIR
from core.text.errors import LearnerError, UserInputError
from core.text.i18n import LANGUAGES, text, using_language
from demo.kit import state_links
from demo.server.gradio_inside import plot_json
from demo.server.handlers import friendly_errors
from demo.kit.figures import PLOTLY_CHUNK, SLIDE_EXPORT
from core.text.i18n import language_of
from demo.kit.i18n import in_every_language, label
from demo.server.result_cache import preset_result
from demo.kit.presets import Registry, View, unique
from demo.kit.scripts import Served, compact, inline_json, script as kit_script


SCRIPT = Served("kit", "/plm-kit.js")
# a state link's &lang=: before anything draws, the page switches to that language (a <head> script)
LANGUAGE_SCRIPT = ASSETS_DIR / "kit_language.js"
DECK_PATH, PLAN_PATH = "/plm-deck", "/plm-deck-plan"
MAX_UPLOAD_BYTES = 48_000_000  # a deck's upload: 60 slides of ~0.6 MB PNG, base64
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
WORD_KEYS = ["added", "nothing_to_add", "link_copied", "link_too_long", "panel", "panel_empty", "download", "clear",
             "up", "down", "delete", "tour_deck", "lesson_deck", "building", "failed", "storage_missing"]
_GUIDE: dict = {}  # (tab, view key, preset slug or None) -> (lang -> what to look at): the tour's and lessons' words
_REGISTRY: list[Registry] = []  # the app's views, for the one-click decks' plans
_PLANNING = threading.Lock()  # one plan computes at a time: its presets' results are cached for the next


def spot_class(view: View) -> str:
    return f"kit-out-{view.api_prefix}"


# -- a view's snapshot ---------------------------------------------------------------------------------------------

def snapshot(view: View, mode: str, values: tuple, lang: str) -> dict:
    """What the browser needs to make a slide of ``view`` or copy its link, for the inputs ``values``."""
    out = {"mode": "link" if mode == "link" else "slide", "spots": spot_class(view), "lang": lang,
           "nonce": time.monotonic_ns()}  # the bar's watch() fires on a change: the same inputs twice still change
    try:
        out["link"] = state_links.state_link(view, values, lang)
    except UserInputError as error:
        if out["mode"] == "link":
            return {**out, "error": error.message(lang)}
        out["link"] = ""  # a slide whose inputs make too long a link still gets its caption, without the link
    out.update(title=state_links.title(view, lang), caption=state_links.caption(view, values, lang),
               notes=state_links.notes(view, lang, guide=_GUIDE))
    return out


def _wire_tab(tab_id: str, views: list[View]) -> None:
    """One snapshot event per tab (not one per view: Gradio's front end pays for every event when the page opens).
    Each view's preset bar gets the kit's two buttons; a press asks the tab's hidden desk (assets/kit_desk.js), which
    sends "<mode>:<view key>" with the inputs of the tab's views, and gets the slide's words back as its value."""
    every = unique(c for view in views for c in view.inputs if state_links.linked(c))  # not what is only shown
    by_key = {view.key: view for view in views}
    for view in views:
        view.bar.props["kit"] = {"tab": tab_id, "view": view.key, **{
            key: in_every_language(label(f"deck.{key}")) for key in ("add", "add_title", "link", "link_title")}}
        for output in view.outputs:
            output.elem_classes = [*(output.elem_classes or []), spot_class(view)]
    desk = gr.HTML("", js_on_load=kit_script("kit_desk", TAB_ID=json.dumps(tab_id)), elem_classes=["kit-desk"],
                   padding=False)

    @friendly_errors
    def take(request: gr.Request, asked: str, *values):  # request first: Gradio passes it only before *args
        lang = language_of(request)
        mode, _, key = str(asked or "").partition(":")
        view = by_key.get(key.split(":")[0])
        if view is None:
            raise UserInputError("deck.bad_upload")
        given = dict(zip(map(id, every), values))
        values = tuple(given.get(id(c), d) for c, d in zip(view.inputs, state_links.defaults(view)))
        return json.dumps(snapshot(view, mode, values, lang), ensure_ascii=False)

    desk.submit(take, [desk, *every], desk, api_name=f"{tab_id}_snapshot", show_progress="hidden",
                api_visibility="undocumented")


def _guide(collector: Registry, tour_box, app: gr.Blocks) -> None:
    """What the tour and the lessons say about each view and preset: the speaker notes."""
    from demo.kit import tour

    for stop in getattr(tour_box, "tour_stops", []):
        view = collector.find(stop.tab, stop.preset) if not stop.check else None
        if view is not None:
            said = functools.partial(lambda s, lang: tour.words(s, lang)[1], stop)
            _GUIDE.setdefault((view.tab, view.key, stop.preset), said)
            _GUIDE.setdefault((view.tab, view.key, None), said)
    for box in app.blocks.values():
        for step in getattr(box, "lesson_steps", []):
            said = functools.partial(lambda s, lang: " ".join(
                [text("deck.notes_question", lang, value=state_links.words(s.question, lang)),
                 text("deck.notes_answer", lang, value=state_links.words(s.answer, lang))]), step)
            _GUIDE.setdefault((step.view.tab, step.view.key, step.slug), said)
            _GUIDE.setdefault((step.view.tab, step.view.key, None), said)


def wire(collector: Registry, tour_box, app: gr.Blocks) -> None:
    """Every view with a preset bar gets the kit's two buttons and its snapshot event."""
    _REGISTRY[:] = [collector]
    _guide(collector, tour_box, app)
    remember_lessons(app)
    for tab_id, entry in collector.tabs.items():
        views = [view for view in entry.views if getattr(view, "bar", None) is not None]
        if views:
            _wire_tab(tab_id, views)


# -- the one-click decks --------------------------------------------------------------------------------------------

def _figure_or_table(value):
    """A result's figure (its JSON, as Gradio sends it) or table (rows, header first); None for anything else."""
    if isinstance(value, dict) and "data" not in value:  # an update: gr.update(value=…, visible=…)
        if value.get("visible") is False:
            return None
        value = value.get("value", None)
    if isinstance(value, dict) and isinstance(value.get("data"), list):  # a Dataframe's {"headers", "data"}
        return {"table": [[str(c) for c in value.get("headers") or []],
                          *[[state_links._shown(v) for v in row] for row in value["data"]]]}
    if hasattr(value, "data") and hasattr(value, "export"):  # a pandas Styler (a coloured table)
        value = value.data
    if (plot := plot_json(value)) is not None:
        return {"figure": plot}
    if isinstance(value, go.Figure):
        return {"figure": value.to_json()}
    if type(value).__name__ == "DataFrame":
        return {"table": [[str(c) for c in value.columns], *[[state_links._shown(v) for v in row]
                                                            for row in value.values.tolist()]]}
    return None


def _slide(view: View, slug: str, lang: str, focus, said: str, section: str) -> dict:
    preset = view.presets[slug]
    slide = {"title": state_links.title(view, lang), "link": f"?tab={view.tab}&preset={slug}&lang={lang}",
             "notes": "\n".join(filter(None, [state_links.markdown_to_text(said),
                                              text("deck.notes_section", lang, section=section.lstrip("§"))
                                              if section else ""]))}
    try:
        values, results = preset_result(view, preset)
    except LearnerError as error:
        slide["caption"] = error.message(lang)
        return slide
    slide["caption"] = state_links.caption(view, values, lang)
    results = results if len(view.outputs) > 1 else (results,)
    # what the stop outlines first, then the view's first figure or table
    for index in [*(focus or ()), *range(len(view.outputs))]:
        found = _figure_or_table(results[index]) if index < len(results) else None
        if found:
            slide.update(found)
            break
    return slide


def plan(kind: str, lang: str, tab: str = "") -> dict:
    """The slides of a one-click deck, with each figure's JSON: ``kind`` "tour" or "lesson" (of ``tab``)."""
    from demo.kit import tour

    if not _REGISTRY or lang not in LANGUAGES:
        raise UserInputError("deck.bad_upload")
    collector = _REGISTRY[0]
    slides = []
    with _PLANNING, using_language(lang):
        if kind == "tour":
            for stop in tour.STOPS:
                view = collector.find(stop.tab, stop.preset) if not stop.check else None
                if view is not None:
                    slides.append(_slide(view, stop.preset, lang, stop.focus, tour.words(stop, lang)[1],
                                         stop.section))
                    slides[-1]["title"] = state_links.markdown_to_text(tour.words(stop, lang)[0])
            title = text("tour.region", lang)
        elif kind == "lesson" and tab in collector.tabs:
            steps = [s for box in _lesson_boxes(tab) for s in box.lesson_steps]
            if not steps:
                raise UserInputError("deck.empty")
            for step in steps:
                said = " ".join([text("deck.notes_question", lang, value=state_links.words(step.question, lang)),
                                 text("deck.notes_answer", lang, value=state_links.words(step.answer, lang))])
                slides.append(_slide(step.view, step.slug, lang, None, said, step.section))
            title = f"{text(f'tabs.{tab}', lang)}: {text('presets.lesson_title', lang)}"
        else:
            raise UserInputError("deck.bad_upload")
    return {"title": title, "slides": slides}


_LESSONS: dict[str, list] = {}


def _lesson_boxes(tab: str) -> list:
    return _LESSONS.get(tab, [])


def remember_lessons(app: gr.Blocks) -> None:
    """Each tab's lesson boxes (demo/kit/lessons.py tags them with their steps), for the lesson decks."""
    _LESSONS.clear()
    for box in app.blocks.values():
        steps = getattr(box, "lesson_steps", None)
        if steps:
            _LESSONS.setdefault(steps[0].view.tab, []).append(box)


# -- routes ---------------------------------------------------------------------------------------------------------

def _language(request: Request, asked: object = None) -> str:
    return asked if asked in LANGUAGES else language_of(request)


def _refuse(key: str, lang: str, status: int = 400, **fields) -> JSONResponse:
    return JSONResponse({"message": text(key, lang, **fields)}, status_code=status)


async def _download(request: Request) -> Response:
    lang = _language(request, request.query_params.get("lang"))
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_UPLOAD_BYTES:
        return _refuse("deck.too_big", lang, 413, megabytes=MAX_UPLOAD_BYTES / 1e6)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_UPLOAD_BYTES:
            return _refuse("deck.too_big", lang, 413, megabytes=MAX_UPLOAD_BYTES / 1e6)
    try:
        sent = json.loads(bytes(body).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _refuse("deck.bad_upload", lang)
    if not isinstance(sent, dict):
        return _refuse("deck.bad_upload", lang)
    lang = sent.get("lang") if sent.get("lang") in LANGUAGES else lang
    link = sent.get("link") if isinstance(sent.get("link"), str) else ""
    link = link if re.fullmatch(r"https?://[^\s\"<>]{1,300}", link or "") else ""
    title = sent.get("title") if isinstance(sent.get("title"), str) else ""
    from demo.kit import deck  # python-pptx and lxml: 0.05 s of every start, imported by the first deck instead

    try:
        slides = deck.slides_from_upload(sent.get("slides"))
        data = await run_in_threadpool(deck.build, slides, lang, link, title[:deck.MAX_TITLE])
    except UserInputError as error:
        return JSONResponse({"message": error.message(lang)}, status_code=400)
    return Response(data, media_type=PPTX,
                    headers={"Content-Disposition": 'attachment; filename="plm-explorer-deck.pptx"'})


async def _plan(request: Request) -> Response:
    query = request.query_params
    lang = _language(request, query.get("lang"))
    try:
        answer = await run_in_threadpool(plan, query.get("kind", ""), lang, query.get("tab", ""))
    except UserInputError as error:
        return JSONResponse({"message": error.message(lang)}, status_code=400)
    return JSONResponse(answer)


ROUTES = [SCRIPT.route, Route(DECK_PATH, _download, methods=["POST"]),
          Route(PLAN_PATH, _plan)]


def head() -> str:
    """Every page's <head>: the kit's words in both languages, and its script at its own address (cached)."""
    config = {"words": {lang: {key: text(f"deck.{key}", lang) for key in WORD_KEYS} for lang in LANGUAGES},
              "export": SLIDE_EXPORT, "chunk": PLOTLY_CHUNK, "deck": DECK_PATH.lstrip("/"),
              "plan": PLAN_PATH.lstrip("/"), "limit": state_links.LINK_LIMIT, "languages": LANGUAGES}
    data = inline_json(config)
    return f"<script>window.plmKitConfig = {data};\n{compact(LANGUAGE_SCRIPT)}</script>" + SCRIPT.tag(defer=True)
