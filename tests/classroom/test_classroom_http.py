"""A class through real HTTP against `python app.py` (issue #55 §1, §2, §4, §5, §7): the cycle, each security case
attempted and refused, 200 students behind one address, two classes at once, a restart mid-class, and the sweep of
expired classes at start. The app trusts 127.0.0.1 as a proxy, so each test speaks from addresses of its own
(X-Forwarded-For) and one test's limits never meet another's. Every test runs twice (issue #56 §3): on a SQLite file
(the default), and on a PostgreSQL database (`--class-db postgresql://…`, a temporary server: tests/postgres.py)."""
from __future__ import annotations

import itertools
import json
from urllib.parse import urlsplit

import pytest

from core.classroom import guard
from sqlalchemy import func, select

from core.classroom import store as tables
from core.classroom.store import IDLE_SECONDS, Store
from core.text.i18n import text
from tests.classroom_http import Client
from tests.live_app import AppProcess, app_env

_addresses = (f"10.55.{i // 250}.{i % 250 + 1}" for i in itertools.count())


def address() -> str:
    return next(_addresses)


class Served:
    """The app (restarted by one test, on the same store) and its store file."""

    def __init__(self, db):
        self.db, self.app = db, None

    def start(self):
        self.app = AppProcess("--offline", "--device", "cpu", "--class-db", str(self.db), "--trusted-proxy",
                              "127.0.0.1", env=app_env(HF_HUB_OFFLINE="1"))
        self.app.wait_until_serving(300)

    def client(self, lang: str = "en", where: str | None = None) -> Client:
        return Client(self.app.url, where or address(), lang)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def served(request, tmp_path_factory):
    if request.param == "sqlite":
        served = Served(tmp_path_factory.mktemp("class") / "classes.sqlite")
    else:
        served = Served(request.getfixturevalue("postgres_cluster").database())
    served.start()
    yield served
    served.app.stop()


def new_class(served) -> tuple[Client, str, str]:
    teacher = served.client()
    made = teacher.ok("start")
    return teacher, made["code"], made["secret"]


def teacher_view(teacher, code, secret) -> dict:
    return teacher.ok("teacher", code=code, secret=secret)


def test_a_class_predicts_then_the_live_model_answers(served):
    teacher, code, secret = new_class(served)
    assert guard.CODE.fullmatch(code) and guard.TOKEN.fullmatch(secret)
    students = [served.client() for _ in range(3)]
    tokens = [s.join(code, nickname) for s, nickname in zip(students, ["", "Ann", "李"])]
    assert teacher_view(teacher, code, secret)["joined"] == 3
    assert students[0].ok("state", code=code, student=tokens[0])["check"] is None  # nothing asked yet
    view = teacher.ok("ask", code=code, secret=secret, slug="ngram-cixing")
    assert (view["slug"], view["answered"], view["revealed"]) == ("ngram-cixing", 0, False)
    state = students[1].ok("state", code=code, student=tokens[1])
    assert state["check"]["options"] == ["词性", "磁性"] and state["mine"] is None
    for s, token, pick in zip(students, tokens, ["磁性", "词性", "磁性"]):
        assert s.ok("answer", code=code, student=token, slug="ngram-cixing", prediction=pick)["mine"] == pick
    students[2].ok("answer", code=code, student=tokens[2], slug="ngram-cixing", prediction="词性")  # changed
    view = teacher_view(teacher, code, secret)
    assert view["answered"] == 3
    assert 'data-mark="词性" data-value="2.0"' in view["html"]
    assert 'data-mark="磁性" data-value="1.0"' in view["html"]
    view = teacher.ok("reveal", code=code, secret=secret)
    assert view["revealed"] and "词性 ✓" in view["html"] and "Right: 2 of 3 (67%)" in view["html"]
    assert 'class="static-export table-csv"' in view["html"] and 'data-format="png"' in view["html"]
    late = students[0].post("answer", code=code, student=tokens[0], slug="ngram-cixing", prediction="词性")
    assert late == (400, {"error": text("classroom.err.revealed", "en")})
    mine = students[0].ok("state", code=code, student=tokens[0])
    assert (mine["mine"], mine["answer_text"], mine["right"]) == ("磁性", "词性", False)
    assert students[1].ok("state", code=code, student=tokens[1])["right"] is True


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
@pytest.mark.parametrize("slug,predictions,expect", [
    ("ngram-add-one", [0.0667, 0.066, 0.072], "Right: 2 of 3 (67%) · close: 1 (33%)"),
    ("embeddings-order", [["prince", "queen", "castle", "banana"], ["queen", "prince", "castle", "banana"],
                          ["banana", "castle", "prince", "queen"]], "Right: 1 of 3 (33%) · close: 1 (33%)"),
    ("attention-it", [1, 1, 9], "Right: 2 of 3"),
])
def test_each_kind_of_check_is_tallied_and_graded(served, slug, predictions, expect):
    teacher, code, secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug=slug)
    for prediction in predictions:
        student = served.client()
        student.ok("answer", code=code, student=student.join(code), slug=slug, prediction=prediction)
    view = teacher.ok("reveal", code=code, secret=secret)
    assert view["answered"] == 3 and expect in view["html"], view["html"][:2000]


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
def test_without_the_teacher_secret_no_one_asks_reveals_closes_or_reads_the_class(served):
    teacher, code, secret = new_class(served)
    _, other_code, other_secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug="ngram-cixing")
    student = served.client()
    token = student.join(code)
    student.ok("answer", code=code, student=token, slug="ngram-cixing", prediction="磁性")
    refused = text("classroom.err.not_teacher", "en")
    for action, extra in [("teacher", {}), ("ask", {"slug": "ngram-add-one"}), ("reveal", {}), ("close", {})]:
        for forged in [secret[:-1] + ("A" if secret[-1] != "A" else "B"), token, other_secret]:
            assert student.post(action, code=code, secret=forged, **extra) == (403, {"error": refused})
        status, body = student.post(action, code=code, **extra)  # the code alone
        assert status == 400 and body == {"error": text("classroom.err.bad_request", "en")}
    assert student.post("teacher", code=other_code, secret=secret)[0] == 403  # a teacher of another class
    # a student sees their own prediction, never anyone else's nor the spread
    other = served.client()
    state = other.ok("state", code=code, student=other.join(code))
    assert state["mine"] is None and "html" not in state and "磁性" not in json.dumps(state["mine"])
    assert set(state) == {"asked", "slug", "revealed", "check", "mine"}
    # nothing changed
    view = teacher_view(teacher, code, secret)
    assert (view["slug"], view["revealed"], view["answered"]) == ("ngram-cixing", False, 1)
    # and the secret never travels in a URL: the API answers POST only
    status, _ = student.raw("GET", f"/class/api/teacher?code={code}&secret={secret}")
    assert status == 405


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_oversized_forged_and_wrongly_typed_input_is_refused_in_one_sentence_and_changes_nothing(served, lang):
    teacher, code, secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug="ngram-add-one")
    student = served.client(lang)
    token = student.join(code)
    # a 10 MB nickname: refused before it is read
    huge = json.dumps({"code": code, "session": "s" * 22, "nickname": "x" * 10_000_000}).encode()
    status, body = student.raw("POST", "/class/api/join", huge)
    assert status == 413 and json.loads(body) == {"error": text("classroom.err.too_big", lang, limit=16)}
    status, body = student.post("join", code=code, session="t" * 22, nickname="y" * 41)
    assert (status, body) == (400, {"error": text("classroom.err.nickname", lang, limit=40)})
    # a forged check slug, asked or answered
    status, body = teacher.post("ask", code=code, secret=secret, slug="ngram-add-one'; DROP TABLE classes; --",
                                lang=lang)
    forged = "ngram-add-one'; DROP TABLE classes; --"
    assert status == 400 and body["error"] == text("checks.unknown", lang, slug=forged)
    status, body = student.post("answer", code=code, student=token, slug="../../etc", prediction=0.5)
    assert status == 400 and body["error"] == text("checks.unknown", lang, slug="../../etc")
    status, body = student.post("answer", code=code, student=token, slug="ngram-cixing", prediction="词性")
    assert (status, body) == (400, {"error": text("classroom.err.not_asked", lang)})
    # a prediction of the wrong type
    for wrong, key, fields in [("abc", "checks.not_a_number", {"value": "abc"}),
                               ([1, 2], "checks.not_a_number", {"value": "[1, 2]"}),
                               (7, "checks.bad_number", {"value": "7", "low": "0", "high": "1"})]:
        status, body = student.post("answer", code=code, student=token, slug="ngram-add-one", prediction=wrong)
        assert (status, body) == (400, {"error": text(key, lang, **fields)})
    for junk in [b"[1, 2]", b"not json", b'{"code": 5}']:
        status, body = student.raw("POST", "/class/api/state", junk)
        assert status in (400, 404) and len(json.loads(body)["error"].splitlines()) == 1
    view = teacher_view(teacher, code, secret)
    assert (view["slug"], view["joined"], view["answered"]) == ("ngram-add-one", 1, 0)


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
def test_each_session_and_address_is_rate_limited_but_200_students_behind_one_address_get_in(served):
    teacher, code, secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug="ngram-add-one")
    nat = address()
    clients = [Client(served.app.url, nat) for _ in range(4)]
    tokens = [clients[i % 4].join(code) for i in range(200)]
    for i, token in enumerate(tokens):
        clients[i % 4].ok("answer", code=code, student=token, slug="ngram-add-one", prediction=i / 200)
    assert teacher_view(teacher, code, secret)["answered"] == 200
    too_many = (429, {"error": text("classroom.err.too_many", "en")})
    # joins per session
    student = served.client()
    session = "z" * 22
    limit = guard.JOINS_PER_SESSION[0]
    assert all(student.post("join", code=code, session=session)[0] == 200 for _ in range(limit))
    assert student.post("join", code=code, session=session) == too_many
    # answers per student
    token = student.join(code)
    limit = guard.ANSWERS_PER_STUDENT[0]
    assert all(student.post("answer", code=code, student=token, slug="ngram-add-one", prediction=0.1)[0] == 200
               for _ in range(limit))
    assert student.post("answer", code=code, student=token, slug="ngram-add-one", prediction=0.2) == too_many
    assert teacher_view(teacher, code, secret)["answered"] == 201


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
def test_two_classes_at_once_never_mix(served):
    (ta, a, sa), (tb, b, sb) = new_class(served), new_class(served)
    ta.ok("ask", code=a, secret=sa, slug="ngram-cixing")
    tb.ok("ask", code=b, secret=sb, slug="ngram-cixing")
    for code, pick, count in [(a, "词性", 3), (b, "磁性", 2)]:
        for _ in range(count):
            s = served.client()
            s.ok("answer", code=code, student=s.join(code), slug="ngram-cixing", prediction=pick)
    s = served.client()
    token_a = s.join(a)
    status, _ = s.post("answer", code=b, student=token_a, slug="ngram-cixing", prediction="词性")
    assert status == 403  # a token of class a is nobody in class b
    view_a, view_b = teacher_view(ta, a, sa), teacher_view(tb, b, sb)
    for view, counts in [(view_a, ("3.0", "0.0")), (view_b, ("0.0", "2.0"))]:
        assert f'data-mark="词性" data-value="{counts[0]}"' in view["html"]
        assert f'data-mark="磁性" data-value="{counts[1]}"' in view["html"]
    tb.ok("close", code=b, secret=sb)
    assert tb.post("teacher", code=b, secret=sb)[0] == 404
    assert teacher_view(ta, a, sa)["answered"] == 3


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
def test_a_restart_mid_class_loses_no_prediction_and_the_start_deletes_expired_classes(served):
    teacher, code, secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug="ngram-cixing")
    students = [served.client() for _ in range(3)]
    tokens = [s.join(code) for s in students]
    for s, token, pick in zip(students, tokens, ["词性", "磁性", "词性"]):
        s.ok("answer", code=code, student=token, slug="ngram-cixing", prediction=pick)
    # a class idle for more than 24 hours, written into the same store
    old = Store(str(served.db), clock=lambda: 1_000_000.0)
    old.start("ZZZZZZ", guard.digest("x" * 43))
    old.join("ZZZZZZ", "q" * 64, "old")
    served.app.stop()
    log = served.app.log_path.read_text(encoding="utf-8", errors="replace")
    served.start()  # on another port: the same people, new connections
    teacher = Client(served.app.url, teacher.address)
    students = [Client(served.app.url, s.address) for s in students]
    view = teacher_view(teacher, code, secret)
    assert (view["slug"], view["answered"], view["joined"]) == ("ngram-cixing", 3, 3)
    students[1].ok("answer", code=code, student=tokens[1], slug="ngram-cixing", prediction="词性")  # still a student
    view = teacher.ok("reveal", code=code, secret=secret)
    assert "Right: 3 of 3 (100%)" in view["html"]
    with old.engine.connect() as db:
        for table in (tables.classes, tables.students):
            assert db.execute(select(func.count()).select_from(table).where(table.c.code == "ZZZZZZ")).scalar() == 0
    assert teacher.post("join", code="ZZZZZZ", session="m" * 22)[0] == 404
    log += served.app.log_path.read_text(encoding="utf-8", errors="replace")
    assert secret not in log  # no server log holds a teacher's secret
    password = urlsplit(str(served.db)).password if "://" in str(served.db) else None
    assert password is None or password not in log  # nor the class database's password
    assert IDLE_SECONDS == 86_400


@pytest.mark.slow  # the app over HTTP; the fast lane keeps the first test of this module
def test_guessing_codes_is_limited_per_address_and_for_everyone_together(served):  # last: joins pause
    """The bound docs/TEACHERS.md's arithmetic uses: FAILED_JOINS_PER_MINUTE wrong codes from all addresses."""
    teacher, code, secret = new_class(served)
    teacher.ok("ask", code=code, secret=secret, slug="ngram-cixing")
    joined = served.client().join(code)
    wrong = "22222" + ("3" if code != "222223" else "4")
    no_class = (404, {"error": text("classroom.err.no_class", "en")})
    too_many = (429, {"error": text("classroom.err.too_many", "en")})
    per_address = guard.FAILED_JOINS_PER_ADDRESS[0]
    guesser = served.client()
    assert all(guesser.post("join", code=wrong, session=f"g{i:021d}") == no_class for i in range(per_address))
    assert guesser.post("join", code=code, session="h" * 22) == too_many  # even the right code, once over
    tried = per_address  # earlier tests' few wrong codes count too: the total stops at most a few short
    while True:
        another = served.client()
        answers = [another.post("join", code=wrong, session=f"g{i:021d}") for i in range(per_address + 1)]
        refused = answers.index(too_many) if too_many in answers else len(answers)
        assert answers[:refused] == [no_class] * refused and refused <= per_address
        tried += refused
        if refused < per_address:
            break
    assert guard.FAILED_JOINS_PER_MINUTE - 10 <= tried <= guard.FAILED_JOINS_PER_MINUTE
    assert served.client().post("join", code=wrong, session="k" * 22) == too_many  # a fresh address, over the total
    assert served.client().post("join", code=code, session="n" * 22) == too_many  # joins pause for everyone
    student = served.client()
    assert student.ok("answer", code=code, student=joined, slug="ngram-cixing", prediction="词性")  # answers go on
