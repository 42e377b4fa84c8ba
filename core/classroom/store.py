"""Where classes, the checks they were asked and their predictions are kept (issue #55).

One layer, SQLAlchemy Core, that SQLite and PostgreSQL both serve: by default a SQLite file in WAL mode (readers
never wait for the writer; ``busy_timeout`` makes a writer wait its turn), which several app processes on one host
share safely; ``--class-db postgresql://…`` when classes must span hosts. Every write is one short transaction
(SQLite: ``BEGIN IMMEDIATE`` for writes, so two processes never both hold a read lock and then both wait to write;
reads are plain transactions, which WAL serves beside a writer).

Tables (schema version :data:`SCHEMA_VERSION`, migrated at start by :data:`MIGRATIONS`):
- classes: code, the SHA-256 of the teacher's secret, the check being asked, whether it is revealed, last activity;
- students: a student's token digest and optional nickname, per class;
- predictions: one per (class, check, student), changed in place until the teacher reveals.

A class ends when its teacher closes it or after :data:`IDLE_SECONDS` without activity: its rows are deleted
(:meth:`Store.cleanup`, run at start and every few minutes by the server).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from sqlalchemy import (Boolean, Column, Float, Integer, MetaData, String, Table, Text, and_, create_engine, delete,
                        event, func, insert, select, update)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

IDLE_SECONDS = 24 * 3600
SCHEMA_VERSION = 1
SCHEMA_LOCK = 560055  # PostgreSQL: the advisory lock that lets one process at a time migrate
SPACE_DATA_DIR = Path("/data")  # a Space's persistent storage (core/loading/hub.py)

metadata = MetaData()
schema_version = Table("schema_version", metadata, Column("version", Integer, nullable=False))
classes = Table(
    "classes", metadata,
    Column("code", String(16), primary_key=True),
    Column("teacher", String(64), nullable=False),         # SHA-256 of the teacher's secret
    Column("created", Float, nullable=False),
    Column("active", Float, nullable=False, index=True),  # last activity: the 24-hour expiry counts from it
    Column("check_slug", String(80)),                     # the check being asked (None before the first)
    Column("asked", Integer, nullable=False, default=0),  # counts the checks asked, so a page sees a new one
    Column("revealed", Boolean, nullable=False, default=False),
)
students = Table(
    "students", metadata,
    Column("code", String(16), primary_key=True),
    Column("student", String(64), primary_key=True),      # SHA-256 of the student's token
    Column("nickname", String(80)),
    Column("joined", Float, nullable=False),
)
predictions = Table(
    "predictions", metadata,
    Column("code", String(16), primary_key=True),
    Column("slug", String(80), primary_key=True),
    Column("student", String(64), primary_key=True),
    Column("prediction", Text, nullable=False),            # JSON
    Column("at", Float, nullable=False),
)


def _v1(connection) -> None:
    for table in (classes, students, predictions):
        table.create(connection, checkfirst=True)


MIGRATIONS = {1: _v1}  # version -> the step that brings the schema from version-1 to it


def default_location(environ=os.environ) -> tuple[str, bool]:
    """The default store and whether it survives a restart: /data on a Space with persistent storage; elsewhere the
    user's data folder (XDG_DATA_HOME, else ~/.local/share), which a Space without persistent storage loses."""
    space = bool(environ.get("SPACE_ID"))
    if space and SPACE_DATA_DIR.is_dir() and os.access(SPACE_DATA_DIR, os.W_OK | os.X_OK):
        return str(SPACE_DATA_DIR / "plm-explorer" / "classes.sqlite"), True
    base = Path(environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return str(base / "plm-explorer" / "classes.sqlite"), not space


def url_of(location: str) -> str:
    """A database URL for ``location``: a path as a SQLite file (its folder created); a URL as it is, except that
    ``postgresql://`` is served by psycopg 3 (requirements.txt), SQLAlchemy's default driver being psycopg2."""
    if location.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + location.split("://", 1)[1]
    if "://" in location:
        return location
    path = Path(location).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def _sqlite_engine(url: str) -> Engine:
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we say BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # WAL: a commit survives the app's crash or restart
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection):  # a writer takes the write lock at once; readers (WAL) never wait for it
        connection.exec_driver_sql("BEGIN IMMEDIATE" if connection.get_execution_options().get("write") else "BEGIN")

    return engine


class ClassGone(LookupError):
    """No live class has this code (never started, closed, or expired)."""


class Store:
    """The classes' tables. ``clock`` (seconds) is injectable, for the expiry's tests."""

    def __init__(self, location: str, clock=time.time):
        self.url = url_of(location)
        self.clock = clock
        self.engine = _sqlite_engine(self.url) if self.url.startswith("sqlite") else create_engine(
            self.url, pool_pre_ping=True)
        self.writer = self.engine.execution_options(write=True)  # the same pool; its transactions write
        self.migrate()

    # -- the schema -------------------------------------------------------------------------------------------------
    def version(self) -> int:
        with self.engine.begin() as c:
            schema_version.create(c, checkfirst=True)
            return c.execute(select(func.max(schema_version.c.version))).scalar() or 0

    def migrate(self) -> int:
        """Bring the schema to SCHEMA_VERSION, one step per version, each in one transaction (a second process that
        starts at the same moment waits, then finds the work done)."""
        with self.writer.begin() as c:
            if c.dialect.name == "postgresql":  # SQLite's BEGIN IMMEDIATE already makes a second process wait here
                c.execute(select(func.pg_advisory_xact_lock(SCHEMA_LOCK)))
            schema_version.create(c, checkfirst=True)
            current = c.execute(select(func.max(schema_version.c.version))).scalar() or 0
            for version in range(current + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](c)
                c.execute(insert(schema_version).values(version=version))
        return self.version()

    # -- classes ----------------------------------------------------------------------------------------------------
    def start(self, code: str, teacher_digest: str) -> bool:
        """A new class; False when the code is taken (the caller draws another)."""
        now = self.clock()
        try:
            with self.writer.begin() as c:
                c.execute(insert(classes).values(code=code, teacher=teacher_digest, created=now, active=now,
                                                 check_slug=None, asked=0, revealed=False))
            return True
        except IntegrityError:
            return False

    def live_count(self) -> int:
        with self.engine.begin() as c:
            return c.execute(select(func.count()).select_from(classes)
                             .where(classes.c.active >= self.clock() - IDLE_SECONDS)).scalar()

    def get(self, code: str) -> dict:
        """The class's row; ClassGone when there is none or it expired."""
        with self.engine.begin() as c:
            row = c.execute(select(classes).where(classes.c.code == code)).mappings().first()
        if row is None or row["active"] < self.clock() - IDLE_SECONDS:
            raise ClassGone(code)
        return dict(row)

    def ask(self, code: str, slug: str) -> None:
        """Ask ``slug`` now: students see it, and may answer until it is revealed. Asking a check again reopens it
        (its predictions stay)."""
        with self.writer.begin() as c:
            c.execute(update(classes).where(classes.c.code == code).values(
                check_slug=slug, asked=classes.c.asked + 1, revealed=False, active=self.clock()))

    def reveal(self, code: str) -> None:
        with self.writer.begin() as c:
            c.execute(update(classes).where(classes.c.code == code).values(revealed=True, active=self.clock()))

    def touch(self, code: str) -> None:
        with self.writer.begin() as c:
            c.execute(update(classes).where(classes.c.code == code).values(active=self.clock()))

    def close(self, code: str) -> None:
        """The teacher closed the class: every row of it is deleted."""
        with self.writer.begin() as c:
            self._delete(c, [code])

    def cleanup(self) -> int:
        """Delete every class idle for IDLE_SECONDS, with its students and predictions; the number deleted."""
        with self.writer.begin() as c:
            idle = classes.c.active < self.clock() - IDLE_SECONDS
            old = c.execute(select(classes.c.code).where(idle)).scalars().all()
            self._delete(c, old)
        return len(old)

    @staticmethod
    def _delete(c, codes: list[str]) -> None:
        if not codes:
            return
        for table in (predictions, students, classes):
            c.execute(delete(table).where(table.c.code.in_(codes)))

    # -- students and their predictions -------------------------------------------------------------------------------
    def join(self, code: str, student_digest: str, nickname: str | None) -> None:
        with self.writer.begin() as c:
            c.execute(insert(students).values(code=code, student=student_digest, nickname=nickname or None,
                                              joined=self.clock()))

    def is_student(self, code: str, student_digest: str) -> bool:
        with self.engine.begin() as c:
            return c.execute(select(students.c.student).where(and_(
                students.c.code == code, students.c.student == student_digest))).first() is not None

    def answer(self, code: str, slug: str, student_digest: str, prediction) -> str:
        """Record (or change) a student's prediction for the check being asked, in one transaction. Returns "ok", or
        why nothing was written: "gone" (no live class), "stranger" (not a student of it), "not_asked" (another
        check is asked), "revealed" (its answer is out)."""
        now, value = self.clock(), json.dumps(prediction)
        with self.writer.begin() as c:
            # FOR UPDATE (PostgreSQL; SQLite's write lock already covers it): one answer per class at a time, so a
            # student's two answers from two replicas cannot both find no row and both insert one
            row = c.execute(select(classes.c.check_slug, classes.c.revealed, classes.c.active)
                            .where(classes.c.code == code).with_for_update()).first()
            if row is None or row.active < now - IDLE_SECONDS:
                return "gone"
            if c.execute(select(students.c.student).where(and_(
                    students.c.code == code, students.c.student == student_digest))).first() is None:
                return "stranger"
            if row.check_slug != slug:
                return "not_asked"
            if row.revealed:
                return "revealed"
            changed = c.execute(update(predictions).where(and_(
                predictions.c.code == code, predictions.c.slug == slug, predictions.c.student == student_digest))
                .values(prediction=value, at=now)).rowcount
            if not changed:
                c.execute(insert(predictions).values(code=code, slug=slug, student=student_digest, prediction=value,
                                                     at=now))
            c.execute(update(classes).where(classes.c.code == code).values(active=now))
        return "ok"

    def student_view(self, code: str, student_digest: str) -> tuple[dict, object]:
        """What a student's banner needs, in one read: the class's row and their own prediction for the check being
        asked. ClassGone when the class is not live, PermissionError when they are not its student."""
        with self.engine.begin() as c:
            row = c.execute(select(classes).where(classes.c.code == code)).mappings().first()
            if row is None or row["active"] < self.clock() - IDLE_SECONDS:
                raise ClassGone(code)
            if c.execute(select(students.c.student).where(and_(
                    students.c.code == code, students.c.student == student_digest))).first() is None:
                raise PermissionError(code)
            mine = c.execute(select(predictions.c.prediction).where(and_(
                predictions.c.code == code, predictions.c.slug == row["check_slug"],
                predictions.c.student == student_digest))).scalar()
        return dict(row), None if mine is None else json.loads(mine)

    def snapshot(self, code: str, slug: str | None) -> tuple[int, list]:
        """What the teacher's view needs, in one read: how many joined, and every prediction for ``slug`` in the
        order of their last change (no student is named)."""
        with self.engine.begin() as c:
            joined = c.execute(select(func.count()).select_from(students).where(students.c.code == code)).scalar()
            rows = c.execute(select(predictions.c.prediction).where(and_(
                predictions.c.code == code, predictions.c.slug == slug)).order_by(predictions.c.at)).scalars().all()
        return joined, [json.loads(value) for value in rows]
