"""demo/kit/classroom.py in process: where the store goes and whether the teacher is told it will not survive a restart
(issue #55 §4), and the token check's view: the text with a count under each token (§3)."""
from __future__ import annotations

import re

import pytest

from core.classroom import store as store_module
from demo.kit import classroom


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(classroom, "_store", None)
    monkeypatch.setattr(classroom, "_durable", True)
    yield


def test_a_space_without_persistent_storage_is_told_its_classes_will_not_survive_a_restart(fresh, tmp_path,
                                                                                            monkeypatch):
    monkeypatch.setattr(store_module, "SPACE_DATA_DIR", tmp_path / "no-data")
    s = classroom.configure(None, {"SPACE_ID": "me/app", "XDG_DATA_HOME": str(tmp_path)})
    assert s.url == f"sqlite:///{tmp_path / 'plm-explorer' / 'classes.sqlite'}"
    made = classroom.start({}, "10.0.0.1", "en")
    assert made["durable"] is False
    view = classroom.teacher({"code": made["code"], "secret": made["secret"]}, "10.0.0.1", "en")
    assert view["durable"] is False


def test_a_store_under_data_on_a_space_or_off_a_space_survives(fresh, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setattr(store_module, "SPACE_DATA_DIR", data)
    made = classroom.configure(None, {"SPACE_ID": "me/app"})
    assert made.url == f"sqlite:///{data / 'plm-explorer' / 'classes.sqlite'}"
    assert classroom._durable is True
    classroom.configure(str(tmp_path / "mine.sqlite"), {})
    assert classroom._durable is True
    classroom.configure(str(tmp_path / "mine.sqlite"), {"SPACE_ID": "me/app"})  # a Space's disk outside /data
    assert classroom._durable is False


@pytest.mark.slow  # runs the attention model
def test_the_token_view_shows_the_text_with_a_count_under_each_token(fresh, tmp_path):
    classroom.configure(str(tmp_path / "c.sqlite"), {})
    made = classroom.start({}, "10.0.0.2", "en")
    teacher = {"code": made["code"], "secret": made["secret"]}
    classroom.ask({**teacher, "slug": "attention-it"}, "10.0.0.2", "en")
    for pick in [1, 1, 9]:
        student = classroom.join({"code": made["code"], "session": "s" * 22}, f"10.0.1.{pick}", "en")["student"]
        classroom.answer({"code": made["code"], "student": student, "slug": "attention-it", "prediction": pick},
                         "10.0.1.1", "en")
    html = classroom.teacher(teacher, "10.0.0.2", "en")["html"]
    tokens = re.findall(r'<span class="class-token-text">([^<]*)</span><span class="class-token-count">(\d+)</span>',
                        html)
    setup = classroom._setup("attention-it", "en")[1]
    assert [t for t, _ in tokens] == [t.replace("'", "&#x27;") for t in setup.options]
    assert [int(c) for _, c in tokens] == [1 if i == 9 else 2 if i == 1 else 0 for i in range(len(setup.options))]
