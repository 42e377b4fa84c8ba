"""A class predicts together (issue #55): the HTTP side of core/classroom, and the "Class" area of the page.

A teacher starts a class and gets a code, a student link (``?class=CODE``) and a teacher link whose secret lives in
its fragment (``?class=CODE#teach=SECRET``): a browser never sends a fragment, so the secret reaches no server log
and no Referer; the page moves it into sessionStorage, takes it off the address bar (a projector shows that bar),
and posts it in request bodies. Students answer the check the teacher chose; the teacher's view polls every second
and shows how many answered and the spread, then Reveal runs the check's live model (``Check.answer``) and shows
its answer over the spread with the share right and close.

Every call is ``POST /class/api/<action>`` with a JSON body (:data:`ROUTES`), served outside Gradio's queue:
start · join · state · answer (a student's) · teacher · ask · reveal · close (the teacher's: the secret is
checked first). Bodies over ``MAX_BODY_BYTES`` are refused before they are read; every refusal is one sentence in the
caller's language (``classroom.err.*``) and changes nothing. Rate limits: core/classroom/guard.py.
"""
from __future__ import annotations

import functools
import json
import os
import threading
import time
from html import escape
from pathlib import Path

import gradio as gr
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core import checks as registry
from core.checks.base import VALIDATE, Answer, compare
from core.classroom import guard
from core.classroom import store as store_module
from core.classroom.store import ClassGone, Store, default_location
from core.classroom.tally import BINS, tally
from core.loading.paths import ASSETS_DIR
from core.text.errors import LearnerError
from core.text.i18n import LANGUAGES, text, using_language
from demo.kit import static_html
from demo.kit import your_turn
from demo.kit.scripts import Served, compact, inline_json
from demo.kit.widgets import sig4_text
from core.text.i18n import language_of

LOADER = ASSETS_DIR / "classroom_loader.js"
CLEANUP_EVERY = 600  # seconds between sweeps of expired classes
TOUCH_EVERY = 60  # a teacher's view marks its class active at most once a minute (a write)
WORDS = ["title", "start", "starting", "code", "student_link", "teacher_link", "teacher_keep", "copy", "copied",
         "pick", "ask", "ask_this", "asked", "answered", "joined", "reveal", "close", "closed", "confirm_close",
         "waiting", "your_answer", "send", "sent", "change", "nickname", "nickname_hint", "join", "revealed_student",
         "right", "wrong", "no_check", "fullscreen", "volatile", "teacher_view", "student_banner", "failed",
         "reopen", "gone"]


class Refused(Exception):
    """A request refused: ``key`` (classroom.err.*) and its HTTP status; nothing was changed."""

    def __init__(self, key: str, status: int = 400, **fields):
        super().__init__(key)
        self.key, self.status, self.fields = key, status, fields


# ----------------------------------------------------------------------------------------------------------------
# The store and the limits (one per process; app.py calls configure)

_store: Store | None = None
_durable = True
_swept = 0.0
_lock = threading.Lock()
LIMITS = {name: guard.limiter(getattr(guard, name)) for name in (
    "JOINS_PER_SESSION", "JOINS_PER_ADDRESS", "FAILED_JOINS_PER_ADDRESS", "ANSWERS_PER_STUDENT",
    "ANSWERS_PER_ADDRESS", "STARTS_PER_ADDRESS", "TEACHER_CALLS_PER_ADDRESS")}
LIMITS["FAILED_JOINS"] = guard.Limiter(guard.FAILED_JOINS_PER_MINUTE, 60)


def configure(location: str | None = None, environ=os.environ) -> Store:
    """Open (and migrate) the store: ``location`` is app.py's --class-db (a path or a database URL), else the
    default (core/classroom/store.default_location). Whether it survives a restart is shown to the teacher."""
    global _store, _durable, _swept
    if location:
        on_space = bool(environ.get("SPACE_ID"))
        data = store_module.SPACE_DATA_DIR
        outside_data = "://" not in location and not Path(location).resolve().is_relative_to(data)
        _durable = ":memory:" not in location and not (on_space and outside_data)
    else:
        location, _durable = default_location(environ)
    _store = Store(location)
    _store.cleanup()
    _swept = time.monotonic()
    return _store


def store() -> Store:
    global _swept
    with _lock:
        if _store is None:
            configure()
        if time.monotonic() - _swept > CLEANUP_EVERY:
            _swept = time.monotonic()
            _store.cleanup()
    return _store


def _allow(name: str, key: str) -> None:
    if not LIMITS[name].allow(key):
        raise Refused("classroom.err.too_many", 429)


# ----------------------------------------------------------------------------------------------------------------
# Checks as a class sees them (the example only, never a student's own text)


_setups: dict[tuple[str, str], tuple] = {}


def _setup(slug: str, lang: str):
    """(the check, its Setup, the page's setup dict) in ``lang``: the same for every student, so computed once; not
    kept while its checkpoint is missing (no options yet: they come once it is downloaded)."""
    if (slug, lang) in _setups:
        return _setups[(slug, lang)]
    check = registry.get(slug)
    with using_language(lang):
        found = check, check.setup(None), your_turn.setup_of(check, None)
    if check.kind == "number" or found[1].options:
        _setups[(slug, lang)] = found
    return found


_answers: dict[tuple[str, int, str], Answer] = {}


def _answer(code: str, asked: int, slug: str) -> Answer:
    """The live model's answer to the check asked (computed at the reveal, then kept for this round)."""
    key = (code, asked, slug)
    if key not in _answers:
        if len(_answers) > 512:
            _answers.clear()
        _answers[key] = registry.get(slug).answer(None)
    return _answers[key]


def _code(code) -> str:
    """A class code as typed (any case, spaces around it), or no class."""
    if not isinstance(code, str) or not guard.CODE.fullmatch(code.strip().upper()):
        raise Refused("classroom.err.no_class", 404)
    return code.strip().upper()


def _class(code, digest: str | None = None) -> dict:
    """The live class ``code``; with ``digest`` (a secret), only for its teacher."""
    try:
        row = store().get(_code(code))
    except ClassGone:
        raise Refused("classroom.err.no_class", 404) from None
    if digest is not None and not guard.same_secret(digest, row["teacher"]):
        raise Refused("classroom.err.not_teacher", 403)
    return row


def _token(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not guard.TOKEN.fullmatch(value):
        raise Refused("classroom.err.bad_request")
    return value


# ----------------------------------------------------------------------------------------------------------------
# The actions (each runs in a worker thread: the store's calls block)


def start(body: dict, address: str, lang: str) -> dict:
    _allow("STARTS_PER_ADDRESS", address)
    s = store()
    if s.live_count() >= guard.MAX_LIVE_CLASSES:
        raise Refused("classroom.err.full", 503)
    secret = guard.new_secret()
    while not s.start(code := guard.new_code(), guard.digest(secret)):
        pass
    return {"code": code, "secret": secret, "durable": _durable}


def join(body: dict, address: str, lang: str) -> dict:
    _allow("JOINS_PER_SESSION", _token(body, "session"))
    _allow("JOINS_PER_ADDRESS", address)
    nickname = body.get("nickname") or ""
    if not isinstance(nickname, str) or len(nickname) > guard.MAX_NICKNAME_CHARS:
        raise Refused("classroom.err.nickname", limit=guard.MAX_NICKNAME_CHARS)
    # Over the wrong-code limits, every join is refused before the code is looked up: a guesser learns nothing
    # (under a guessing attack on the whole server, new joins pause for a minute; joined students go on answering).
    if LIMITS["FAILED_JOINS_PER_ADDRESS"].full(address) or LIMITS["FAILED_JOINS"].full("all"):
        raise Refused("classroom.err.too_many", 429)
    try:
        row = _class(body.get("code"))
    except Refused:
        LIMITS["FAILED_JOINS_PER_ADDRESS"].allow(address)
        LIMITS["FAILED_JOINS"].allow("all")
        raise
    student = guard.new_token()
    store().join(row["code"], guard.digest(student), nickname.strip() or None)
    return {"code": row["code"], "student": student, **_student_state(row, None, lang)}


def _student_state(row: dict, mine, lang: str) -> dict:
    """A student's banner: the check asked (its setup, no answer), their own prediction, and after the reveal the
    model's answer and whether theirs was right. Never anyone else's prediction."""
    slug = row["check_slug"]
    out = {"asked": row["asked"], "slug": slug, "revealed": bool(row["revealed"]), "check": None, "mine": mine}
    if slug is None:
        return out
    check, setup, shown = _setup(slug, lang)
    out["check"] = shown
    if row["revealed"]:
        answer = _answer(row["code"], row["asked"], slug)
        if not answer.missing:
            out["answer_text"] = your_turn._answer_text(check, setup, answer.value)
            if mine is not None:
                out["right"] = compare(check, setup, tuple(mine) if check.kind == "order" else mine, answer).right
    return out


def state(body: dict, address: str, lang: str) -> dict:
    code = _code(body.get("code"))
    try:
        row, mine = store().student_view(code, guard.digest(_token(body, "student")))
    except ClassGone:
        raise Refused("classroom.err.no_class", 404) from None
    except PermissionError:
        raise Refused("classroom.err.not_joined", 403) from None
    return _student_state(row, mine, lang)


ANSWER_REFUSALS = {"gone": ("classroom.err.no_class", 404), "stranger": ("classroom.err.not_joined", 403),
                   "not_asked": ("classroom.err.not_asked", 400), "revealed": ("classroom.err.revealed", 400)}


def answer(body: dict, address: str, lang: str) -> dict:
    """Validate the prediction against the check named, then record it in one transaction, which refuses a stranger,
    a check that is not the one asked, and a revealed one."""
    _allow("ANSWERS_PER_ADDRESS", address)
    code, student = _code(body.get("code")), _token(body, "student")
    _allow("ANSWERS_PER_STUDENT", student)
    check, setup, _ = _setup(registry.get(body.get("slug")).slug, lang)  # a forged slug: "there is no check …"
    prediction = VALIDATE[check.kind](body.get("prediction"), setup)  # against the cached setup: no model runs
    value = list(prediction) if isinstance(prediction, tuple) else prediction
    outcome = store().answer(code, check.slug, guard.digest(student), value)
    if outcome != "ok":
        raise Refused(*ANSWER_REFUSALS[outcome])
    return {"mine": value}


def _teacher(body: dict, address: str) -> dict:
    _allow("TEACHER_CALLS_PER_ADDRESS", address)
    return _class(body.get("code"), _token(body, "secret"))


def teacher(body: dict, address: str, lang: str) -> dict:
    row = _teacher(body, address)
    if store().clock() - row["active"] > TOUCH_EVERY:  # the view being open keeps the class alive
        store().touch(row["code"])
    joined, predictions = store().snapshot(row["code"], row["check_slug"])
    out = {"code": row["code"], "slug": row["check_slug"], "asked": row["asked"], "revealed": bool(row["revealed"]),
           "joined": joined, "answered": len(predictions), "durable": _durable, "html": ""}
    if row["check_slug"]:
        out["html"] = view_html(row, predictions, lang)
    return out


def ask(body: dict, address: str, lang: str) -> dict:
    row = _teacher(body, address)
    slug = body.get("slug")
    check, setup, _ = _setup(registry.get(slug).slug, lang)
    if check.kind != "number" and not setup.options:
        raise Refused("classroom.err.no_model")
    store().ask(row["code"], slug)
    return teacher(body, address, lang)


def reveal(body: dict, address: str, lang: str) -> dict:
    row = _teacher(body, address)
    if not row["check_slug"]:
        raise Refused("classroom.err.nothing_asked")
    if _answer(row["code"], row["asked"], row["check_slug"]).missing:
        raise Refused("classroom.err.no_model")
    store().reveal(row["code"])
    return teacher(body, address, lang)


def close(body: dict, address: str, lang: str) -> dict:
    row = _teacher(body, address)
    store().close(row["code"])
    return {"closed": True}


ACTIONS = {f.__name__: f for f in (start, join, state, answer, teacher, ask, reveal, close)}


# ----------------------------------------------------------------------------------------------------------------
# The teacher's view: the spread, then the answer over it (server-drawn SVG and tables, PNG / SVG / CSV buttons)


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


def view_html(row: dict, predictions: list, lang: str) -> str:
    check, setup, shown = _setup(row["check_slug"], lang)
    answer = _answer(row["code"], row["asked"], check.slug) if row["revealed"] else None
    t = tally(check, setup, predictions, answer)
    w = functools.partial(text, lang=lang)
    name = f"class-{row['code'].lower()}-{check.slug}"
    title = w("classroom.figure_title", n=t["answered"])
    revealed = "answer" in t
    headers, rows = [w("classroom.col_item"), w("classroom.col_count")], []
    if check.kind in ("choice", "token"):
        labels = [s + (f" ({i + 1})" if check.kind == "token" else "") for i, s in enumerate(shown["shown"])]
        marks = [revealed and (i == t["answer"] if check.kind == "token" else o == t["answer"])
                 for i, o in enumerate(setup.options)]
        labels = [label + (" ✓" if mark else "") for label, mark in zip(labels, marks)]
        values = t["counts"]
        rows = list(zip(labels, values))
    elif check.kind == "number":
        e = t["edges"]
        labels = [f"{sig4_text(e[i])} – {sig4_text(e[i + 1])}" for i in range(BINS)]
        marks = [revealed and i == t["answer_bin"] for i in range(BINS)]
        labels = [label + (" ✓" if mark else "") for label, mark in zip(labels, marks)]
        values = t["counts"]
        rows = list(zip(labels, values))
    else:
        labels = shown["shown"]
        order = t.get("answer") or []
        marks = [False] * len(labels)
        values = [places[0] for places in t["places"]]
        headers = [w("classroom.col_item")] + [w("classroom.col_place", k=k + 1) for k in range(len(labels))]
        rows = [[label + (f" ✓{order.index(o) + 1}" if o in order else ""), *places]
                for label, o, places in zip(labels, setup.options, t["places"])]
        title = w("classroom.figure_first", n=t["answered"])
    parts = [static_html.bars(labels, [float(v) for v in values], title, name, lang,
                              value_title=w("classroom.figure_axis"), highlight=marks, value_format=".0f")]
    if check.kind == "token":
        counts = t["counts"]
        parts.insert(0, '<p class="class-tokens">' + "".join(
            f'<span class="class-token{" class-token-answer" if marks[i] else ""}">'
            f'<span class="class-token-text">{escape(tok)}</span>'
            f'<span class="class-token-count">{counts[i]}</span></span>'
            for i, tok in enumerate(setup.options)) + "</p>")
    parts.append(static_html.table(headers, rows, name, lang))
    if revealed:
        answered = t["answered"]
        said = your_turn._answer_text(check, setup, answer.value)
        share = w("classroom.share", right=t["right"], close=t["close"], n=answered,
                  right_pct=_percent(t["right"], answered), close_pct=_percent(t["close"], answered))
        parts.insert(0, f'<p class="class-answer">{escape(w("classroom.model_says", answer=said))}</p>'
                     f'<p class="class-share">{escape(share)}</p>')
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------------------
# HTTP


async def _read(request: Request) -> dict:
    """The JSON body, refused unread past MAX_BODY_BYTES."""
    if int(request.headers.get("content-length") or 0) > guard.MAX_BODY_BYTES:
        raise Refused("classroom.err.too_big", 413, limit=guard.MAX_BODY_BYTES // 1024)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > guard.MAX_BODY_BYTES:
            raise Refused("classroom.err.too_big", 413, limit=guard.MAX_BODY_BYTES // 1024)
        chunks.append(chunk)
    try:
        body = json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        raise Refused("classroom.err.bad_request") from None
    if not isinstance(body, dict):
        raise Refused("classroom.err.bad_request")
    return body


async def _serve(request: Request) -> Response:
    action = ACTIONS.get(request.path_params.get("action", ""))
    lang = language_of(request)
    try:
        if action is None:
            raise Refused("classroom.err.bad_request", 404)
        body = await _read(request)
        lang = body.get("lang") if body.get("lang") in LANGUAGES else lang
        address = request.client.host if request.client else "?"

        def run():
            with using_language(lang):
                return action(body, address, lang)

        return JSONResponse(await run_in_threadpool(run), headers={"Cache-Control": "no-store"})
    except Refused as refused:
        message = text(refused.key, lang, **refused.fields)
        return JSONResponse({"error": message}, status_code=refused.status, headers={"Cache-Control": "no-store"})
    except LearnerError as error:
        return JSONResponse({"error": error.message(lang)}, status_code=400, headers={"Cache-Control": "no-store"})


SCRIPT = Served("classroom", "/classroom.js")
ROUTES = [Route("/class/api/{action}", _serve, methods=["POST"]), SCRIPT.route]


# ----------------------------------------------------------------------------------------------------------------
# The page: <head> (words, the loader that takes the secret off the address) and the "Class" area above the tabs


def head() -> str:
    """Before your_turn.head() in app.py: the loader must read the fragment before any script rewrites the address."""
    words = {lang: {key: text(f"classroom.{key}", lang) for key in WORDS} for lang in LANGUAGES}
    data = inline_json({"words": words})
    return (f"<script>window.plmClassConfig = {data};\n{compact(LOADER)}</script>"
            + SCRIPT.tag())


TEMPLATE = ('<details class="class-area"><summary class="class-summary"></summary>'
            '<div class="class-body"></div></details>')
MOUNT_JS = static_html.EXPORT_JS + "\nwindow.plmClass && window.plmClass.mount(element);"


def build() -> gr.HTML:
    """The "Class" area: above the tabs, so a teacher and the students reach it from any tab."""
    return gr.HTML("", html_template=TEMPLATE, js_on_load=MOUNT_JS, elem_classes=["class-box"], padding=False)
