"""The class store (issue #55 §4, #56 §3): schema version and migrations, WAL, expiry with an injected clock, two
processes writing one store, and the rule that a prediction changes in place until the reveal.

The tests that are not about SQLite's file run twice: on a SQLite file, and on a PostgreSQL database of a temporary
server (tests/postgres.py), through the same code; the database a course's replicas share across hosts."""
from __future__ import annotations

import multiprocessing
import sqlite3

import pytest
from sqlalchemy import func, inspect, select

from core.classroom import store as store_module
from core.classroom.store import (IDLE_SECONDS, SCHEMA_VERSION, ClassGone, Store, default_location, metadata,
                                  url_of)


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path) -> str:
    """A new store's location, as ``--class-db`` takes it: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "c.sqlite")
    return request.getfixturevalue("postgres_cluster").database()


def rows(s: Store, table: str) -> int:
    with s.engine.connect() as c:
        return c.execute(select(func.count()).select_from(metadata.tables[table])).scalar()


def test_a_postgresql_url_is_served_by_psycopg_3_and_a_path_by_sqlite(tmp_path):
    assert url_of("postgresql://u:p@db:5432/classes") == "postgresql+psycopg://u:p@db:5432/classes"
    assert url_of("postgres://u@db/classes") == "postgresql+psycopg://u@db/classes"
    assert url_of(str(tmp_path / "a" / "c.sqlite")) == f"sqlite:///{tmp_path / 'a' / 'c.sqlite'}"
    assert (tmp_path / "a").is_dir()


def test_a_new_file_is_migrated_to_the_current_version_in_wal_mode(tmp_path):
    path = tmp_path / "classes.sqlite"
    s = Store(str(path))
    assert s.version() == SCHEMA_VERSION == 1
    assert set(inspect(s.engine).get_table_names()) == {"schema_version", "classes", "students", "predictions"}
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
    Store(str(path))  # opening again runs no step twice
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT version FROM schema_version").fetchall() == [(1,)]


def test_a_later_version_migrates_an_existing_store_and_keeps_its_rows(where, monkeypatch):
    s = Store(where)
    assert s.start("ABCDEF", "d" * 64)
    s.ask("ABCDEF", "ngram-cixing")
    s.join("ABCDEF", "s" * 64, None)
    assert s.answer("ABCDEF", "ngram-cixing", "s" * 64, "词性") == "ok"

    def v2(connection):
        connection.exec_driver_sql("ALTER TABLE classes ADD COLUMN room INTEGER")

    monkeypatch.setattr(store_module, "SCHEMA_VERSION", 2)
    monkeypatch.setitem(store_module.MIGRATIONS, 2, v2)
    again = Store(where)
    assert again.version() == 2
    assert "room" in {c["name"] for c in inspect(again.engine).get_columns("classes")}
    assert again.snapshot("ABCDEF", "ngram-cixing") == (1, ["词性"])


def test_a_prediction_is_recorded_once_per_student_and_changes_until_the_reveal(where):
    s = Store(where)
    s.start("ABCDEF", "d" * 64)
    s.join("ABCDEF", "a" * 64, None)
    s.join("ABCDEF", "b" * 64, None)
    assert s.answer("ABCDEF", "ngram-cixing", "a" * 64, "词性") == "not_asked"  # nothing asked yet
    s.ask("ABCDEF", "ngram-cixing")
    assert s.answer("ABCDEF", "ngram-cixing", "a" * 64, "词性") == "ok"
    assert s.answer("ABCDEF", "ngram-cixing", "a" * 64, "磁性") == "ok"  # changed in place
    assert s.answer("ABCDEF", "ngram-cixing", "b" * 64, "词性") == "ok"
    assert s.answer("ABCDEF", "ngram-cixing", "c" * 64, "词性") == "stranger"  # never joined
    assert s.answer("GHJKMN", "ngram-cixing", "a" * 64, "词性") == "gone"
    assert s.answer("ABCDEF", "ngram-add-one", "a" * 64, 0.5) == "not_asked"  # not the check being asked
    assert s.snapshot("ABCDEF", "ngram-cixing") == (2, ["磁性", "词性"])  # in the order of their last change
    s.reveal("ABCDEF")
    assert s.answer("ABCDEF", "ngram-cixing", "a" * 64, "词性") == "revealed"  # closed by the reveal
    row, mine = s.student_view("ABCDEF", "a" * 64)
    assert (row["check_slug"], row["revealed"], mine) == ("ngram-cixing", True, "磁性")
    with pytest.raises(PermissionError):
        s.student_view("ABCDEF", "c" * 64)


def test_a_closed_class_leaves_no_row(where):
    s = Store(where)
    s.start("ABCDEF", "d" * 64)
    s.start("GHJKMN", "e" * 64)
    for code in ("ABCDEF", "GHJKMN"):
        s.ask(code, "ngram-cixing")
        s.join(code, "a" * 64, "Ann")
        s.answer(code, "ngram-cixing", "a" * 64, "词性")
    s.close("ABCDEF")
    with pytest.raises(ClassGone):
        s.get("ABCDEF")
    assert (rows(s, "classes"), rows(s, "students"), rows(s, "predictions")) == (1, 1, 1)
    assert s.snapshot("GHJKMN", "ngram-cixing") == (1, ["词性"])


def test_classes_idle_for_24_hours_expire_and_their_rows_are_deleted(where):
    clock = Clock()
    s = Store(where, clock=clock)
    s.start("ABCDEF", "d" * 64)   # idle from now on
    s.start("GHJKMN", "e" * 64)   # kept active
    for code in ("ABCDEF", "GHJKMN"):
        s.ask(code, "ngram-cixing")
        s.join(code, code.lower() * 10, None)
        s.answer(code, "ngram-cixing", code.lower() * 10, "词性")
    clock.now += IDLE_SECONDS - 60
    s.touch("GHJKMN")
    assert s.cleanup() == 0
    s.get("ABCDEF")  # still live a minute before its 24 hours
    clock.now += 61
    with pytest.raises(ClassGone):
        s.get("ABCDEF")  # expired even before the sweep
    assert s.live_count() == 1
    assert s.cleanup() == 1
    assert (rows(s, "classes"), rows(s, "students"), rows(s, "predictions")) == (1, 1, 1)
    assert s.get("GHJKMN")["code"] == "GHJKMN"
    clock.now += IDLE_SECONDS + 1
    assert s.cleanup() == 1
    assert (rows(s, "classes"), rows(s, "students"), rows(s, "predictions")) == (0, 0, 0)


def _answer_many(path: str, offset: int, count: int) -> None:
    s = Store(path)
    for i in range(offset, offset + count):
        student = f"{i:064d}"
        s.join("ABCDEF", student, None)
        assert s.answer("ABCDEF", "ngram-add-one", student, i / 1000) == "ok"
        assert s.answer("ABCDEF", "ngram-add-one", "shared" + "0" * 58, i / 1000) == "ok"  # the same student from both


@pytest.mark.slow  # two Python processes start
def test_two_processes_share_one_store_and_every_answer_is_recorded_exactly_once(where):
    path = where
    s = Store(path)
    s.start("ABCDEF", "d" * 64)
    s.ask("ABCDEF", "ngram-add-one")
    s.join("ABCDEF", "shared" + "0" * 58, None)
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_answer_many, args=(path, offset, 150)) for offset in (0, 150)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    joined, values = s.snapshot("ABCDEF", "ngram-add-one")
    assert joined == 301 and len(values) == 301  # 300 students once each, and the shared one once
    assert {round(v * 1000) for v in values} == set(range(300))  # the shared one holds one of those values


def _open_after(barrier, location: str, out) -> None:
    barrier.wait(60)
    out.put(Store(location).version())


@pytest.mark.slow  # two Python processes start
def test_two_processes_opening_a_new_store_at_the_same_moment_migrate_it_once(where):
    context = multiprocessing.get_context("spawn")
    barrier, out = context.Barrier(2), context.Queue()
    workers = [context.Process(target=_open_after, args=(barrier, where, out)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    assert [out.get(timeout=5), out.get(timeout=5)] == [SCHEMA_VERSION, SCHEMA_VERSION]
    s = Store(where)
    with s.engine.connect() as c:
        assert c.execute(select(metadata.tables["schema_version"].c.version)).scalars().all() == [1]


def test_the_default_store_is_on_persistent_storage_on_a_space_and_in_the_data_folder_elsewhere(tmp_path,
                                                                                              monkeypatch):
    assert default_location({"XDG_DATA_HOME": str(tmp_path)}) == (
        str(tmp_path / "plm-explorer" / "classes.sqlite"), True)
    space_data = tmp_path / "data"
    space_data.mkdir()
    monkeypatch.setattr(store_module, "SPACE_DATA_DIR", space_data)
    assert default_location({"SPACE_ID": "me/app"}) == (str(space_data / "plm-explorer" / "classes.sqlite"), True)
    monkeypatch.setattr(store_module, "SPACE_DATA_DIR", tmp_path / "absent")
    location, durable = default_location({"SPACE_ID": "me/app", "XDG_DATA_HOME": str(tmp_path)})
    assert (location, durable) == (str(tmp_path / "plm-explorer" / "classes.sqlite"), False)
