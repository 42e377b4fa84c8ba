"""The class API's routes in this process (demo/kit/classroom.ROUTES on a bare Starlette app, a SQLite store in a
temporary folder): a whole class cycle, graded against the check's own live model, and the refusals a forged or
broken request gets. tests/classroom/test_classroom_http.py runs the same API against `python app.py`, restarts and
PostgreSQL included; this module runs in pytest's own process, so coverage.py sees the routes' code (issue #49)."""
from __future__ import annotations

import json
import re

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from core import checks as registry
from core.classroom.guard import Limiter
from core.text.i18n import text
from demo.kit import classroom


@pytest.fixture
def client(monkeypatch, tmp_path):
    monkeypatch.setattr(classroom, "_store", None)
    monkeypatch.setattr(classroom, "_durable", True)
    # the real limits, counted afresh: they are per process, and another test's calls must not count here
    monkeypatch.setattr(classroom, "LIMITS", {name: Limiter(old.limit, old.window)
                                              for name, old in classroom.LIMITS.items()})
    classroom.configure(str(tmp_path / "classes.sqlite"), {})
    return TestClient(Starlette(routes=classroom.ROUTES))


def accept(lang: str) -> dict:
    return {"Accept-Language": "zh-CN" if lang == "zh" else "en"}  # as the learner's browser sends it


def post(client, action: str, lang: str = "en", **body):
    answer = client.post(f"/class/api/{action}", content=json.dumps({"lang": lang, **body}), headers=accept(lang))
    assert answer.headers["cache-control"] == "no-store"
    return answer.status_code, answer.json()


def ok(client, action: str, **body) -> dict:
    status, data = post(client, action, **body)
    assert status == 200, (action, status, data)
    return data


def test_a_whole_class_in_process_is_graded_by_the_checks_live_model(client):
    made = ok(client, "start")
    teacher = {"code": made["code"].lower() + " ", "secret": made["secret"]}  # a code as typed: any case, spaces
    tokens = [ok(client, "join", code=made["code"], session=f"{'s' * 21}{i}", nickname=name)["student"]
              for i, name in enumerate(["", "Ann", "李"])]
    assert ok(client, "teacher", **teacher)["joined"] == 3
    assert ok(client, "state", code=made["code"], student=tokens[0])["check"] is None
    view = ok(client, "ask", **teacher, slug="ngram-cixing")
    assert (view["slug"], view["answered"], view["revealed"]) == ("ngram-cixing", 0, False)
    options = ok(client, "state", code=made["code"], student=tokens[1])["check"]["options"]
    assert sorted(options) == ["磁性", "词性"]
    key = registry.get("ngram-cixing").answer(None).value  # the model is the answer key
    wrong = next(option for option in options if option != key)
    picks = [wrong, key, key]
    for token, pick in zip(tokens, picks):
        assert ok(client, "answer", code=made["code"], student=token, slug="ngram-cixing", prediction=pick) == {
            "mine": pick}
    view = ok(client, "teacher", **teacher)
    assert view["answered"] == 3 and view["html"]
    assert f'data-mark="{key}" data-value="2.0"' in view["html"]
    assert f'data-mark="{wrong}" data-value="1.0"' in view["html"]
    view = ok(client, "reveal", **teacher)
    assert view["revealed"] and f"{key} ✓" in view["html"] and "Right: 2 of 3 (67%)" in view["html"]
    late = post(client, "answer", code=made["code"], student=tokens[0], slug="ngram-cixing", prediction=key)
    assert late == (400, {"error": text("classroom.err.revealed", "en")})
    mine = ok(client, "state", code=made["code"], student=tokens[0])
    assert (mine["mine"], mine["answer_text"], mine["right"]) == (wrong, key, False)
    assert ok(client, "state", code=made["code"], student=tokens[1])["right"] is True
    assert ok(client, "close", **teacher) == {"closed": True}
    assert post(client, "state", code=made["code"], student=tokens[1]) == (
        404, {"error": text("classroom.err.no_class", "en")})


@pytest.mark.slow  # runs the GloVe model behind the order check
def test_an_order_check_shows_each_items_places_and_the_answer(client):
    made = ok(client, "start")
    teacher = {"code": made["code"], "secret": made["secret"]}
    ok(client, "ask", **teacher, slug="embeddings-order")
    check = registry.get("embeddings-order")
    key = list(check.answer(None).value)
    backwards = key[::-1]
    for number, order in enumerate([key, key, backwards]):
        student = ok(client, "join", code=made["code"], session=f"{'o' * 21}{number}")["student"]
        ok(client, "answer", code=made["code"], student=student, slug="embeddings-order", prediction=order)
    html = ok(client, "reveal", **teacher)["html"]
    assert "Right: 2 of 3 (67%)" in html
    for place, item in enumerate(key, 1):  # each item marked with its place in the model's order
        assert f"{item} ✓{place}" in html
    # the bars: how many put each item first (two put the model's first first, one its last)
    first = {mark: float(value) for mark, value in re.findall(r'data-mark="([^"]+)" data-value="([\d.]+)"', html)}
    assert (first[key[0]], first[key[-1]]) == (2.0, 1.0) and sum(first.values()) == 3.0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_forged_and_broken_requests_get_one_sentence_and_change_nothing(client, lang):
    made = ok(client, "start")
    teacher = {"code": made["code"], "secret": made["secret"]}
    ok(client, "ask", **teacher, slug="ngram-add-one")
    student = ok(client, "join", code=made["code"], session="t" * 22)["student"]
    forged_secret = made["secret"][:-1] + ("A" if made["secret"][-1] != "A" else "B")
    cases = [
        (post(client, "reveal", lang, code=made["code"], secret=forged_secret), 403, "classroom.err.not_teacher", {}),
        (post(client, "teacher", lang, code=made["code"]), 400, "classroom.err.bad_request", {}),
        (post(client, "join", lang, code="NOPE99", session="u" * 22), 404, "classroom.err.no_class", {}),
        (post(client, "join", lang, code=made["code"], session="v" * 22, nickname="y" * 41), 400,
         "classroom.err.nickname", {"limit": 40}),
        (post(client, "state", lang, code=made["code"], student="w" * 22), 403, "classroom.err.not_joined", {}),
        (post(client, "answer", lang, code=made["code"], student=student, slug="ngram-cixing", prediction="词性"),
         400, "classroom.err.not_asked", {}),
        (post(client, "answer", lang, code=made["code"], student=student, slug="../../etc", prediction=0.5), 400,
         "checks.unknown", {"slug": "../../etc"}),
        (post(client, "answer", lang, code=made["code"], student=student, slug="ngram-add-one", prediction=7), 400,
         "checks.bad_number", {"value": "7", "low": "0", "high": "1"}),
        (post(client, "everything", lang), 404, "classroom.err.bad_request", {}),
    ]
    for (status, body), want_status, key, fields in cases:
        assert (status, body) == (want_status, {"error": text(key, lang, **fields)})
    headers = accept(lang)
    for junk in [b"[1, 2]", b"not json"]:
        answer = client.post("/class/api/state", content=junk, headers=headers)
        assert (answer.status_code, answer.json()) == (400, {"error": text("classroom.err.bad_request", lang)})
    huge = client.post("/class/api/join", content=b"x" * (classroom.guard.MAX_BODY_BYTES + 1), headers=headers)
    assert (huge.status_code, huge.json()) == (
        413, {"error": text("classroom.err.too_big", lang, limit=classroom.guard.MAX_BODY_BYTES // 1024)})
    view = ok(client, "teacher", **teacher)
    assert (view["slug"], view["joined"], view["answered"], view["revealed"]) == ("ngram-add-one", 1, 0, False)
