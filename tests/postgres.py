"""A throwaway PostgreSQL server for the class store's tests (issue #56 §3), from Debian's ``pg_virtualenv``.

``pg_virtualenv CMD`` creates a temporary cluster on a free port, runs CMD with PGHOST/PGPORT/PGUSER/PGPASSWORD
set, and drops the cluster when CMD exits; it runs the server as the ``postgres`` user when started by root (the
server refuses root). With ``-t`` and a free PGPORT, each test worker gets a cluster of its own. Here CMD prints that environment and then waits on its stdin, so the cluster lives as long
as this process keeps the pipe open: one cluster per test process, one fresh database per test.

Without ``pg_virtualenv`` the tests skip, except under PLM_REQUIRE_POSTGRES=1 (CI, .ci/run), where they fail.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from urllib.parse import quote

import pytest

from tests.live_app import free_port

READY = "plm-postgres-ready"


class Cluster:
    def __init__(self):
        # -t: the cluster in a temporary folder of its own, even as root (else every cluster is /etc's "15/regress",
        # and a second test worker's pg_virtualenv refuses to overwrite the first's); PGPORT: a port of its own
        self.process = subprocess.Popen(
            ["pg_virtualenv", "-t", "sh", "-c", f"env; echo {READY}; exec cat"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/tmp",
            env=dict(os.environ, PGPORT=str(free_port())))
        seen, env = [], {}
        for line in self.process.stdout:
            if line.strip() == READY:
                break
            seen.append(line)
            key, _, value = line.rstrip("\n").partition("=")
            if key.startswith("PG"):
                env[key] = value
        else:
            raise RuntimeError("pg_virtualenv did not start a cluster:\n" + "".join(seen[-20:]))
        self.base = "postgresql://{user}:{password}@{host}:{port}".format(
            user=quote(env.get("PGUSER", "postgres")), password=quote(env.get("PGPASSWORD", "")),
            host=env.get("PGHOST", "localhost"), port=env.get("PGPORT", "5432"))

    def database(self) -> str:
        """A new, empty database; its URL in the form ``--class-db`` takes."""
        import psycopg

        name = "plm_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.base + "/postgres", autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        return f"{self.base}/{name}"

    def stop(self) -> None:
        self.process.stdin.close()  # `cat` ends, and pg_virtualenv drops the cluster
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def start_or_skip() -> Cluster:
    reason = None
    if shutil.which("pg_virtualenv") is None:
        reason = "Debian's pg_virtualenv (package postgresql) is not installed"
    else:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            reason = "psycopg is not installed (requirements.txt)"
    if reason is None:
        try:
            return Cluster()
        except (OSError, RuntimeError) as error:
            reason = str(error)
    if os.environ.get("PLM_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"PLM_REQUIRE_POSTGRES=1 but {reason}", pytrace=False)
    pytest.skip(reason)
