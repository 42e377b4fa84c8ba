"""Start `python app.py` as a real subprocess on a free local port, the way a user does, and stop it again.

Shared by the API-client, offline-start and browser tests. The server is a separate process so that what the
tests see (start-up, CLI flags, queue, HTTP) is exactly what a learner's browser sees.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def two_free_ports() -> int:
    """A port p with p and p + 1 both free (scripts/serve_replicas.py numbers its replicas from --first-app-port)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as other:
            try:
                other.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    raise RuntimeError("no two consecutive free ports")


def closed_port() -> int:
    """A loopback port nobody listens on: connecting to it is refused at once (an unreachable Hub)."""
    return free_port()


def app_env(**overrides: str | None) -> dict[str, str]:
    """The environment for the app process: no analytics; a None value removes the variable."""
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    if env.pop("PLM_TESTS_SET_OMP", None):  # tests/conftest.py's one thread is for the test workers, not the app
        env.pop("OMP_NUM_THREADS", None)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def serves(url: str, timeout: float = 2.0) -> bool:
    """True once the app answers its page with HTTP 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


class AppProcess:
    """`python app.py <args> --port P` (or another ``script``) in the background; `url` once it serves."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, log_path: Path | None = None,
                 script: str = "app.py"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = log_path or Path(os.environ.get("TMPDIR", "/tmp")) / f"plm-explorer-{self.port}.log"
        self._log = open(self.log_path, "wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen([sys.executable, script, *args, "--port", str(self.port)], cwd=ROOT,
                                        env=env or app_env(), stdout=self._log, stderr=subprocess.STDOUT,
                                        start_new_session=True)

    def wait_until_serving(self, limit: float) -> float:
        """Seconds from spawn to the first HTTP 200; raises with the server log if it dies or takes over `limit`."""
        while time.monotonic() - self.started < limit:
            if self.process.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.process.returncode}:\n{self.log()}")
            if serves(self.url):
                return time.monotonic() - self.started
            time.sleep(0.1)
        raise TimeoutError(f"app.py did not serve {self.url} within {limit:.0f} s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # the whole session: gradio may spawn helpers
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._log.close()


@contextmanager
def running_app(*args: str, env: dict[str, str] | None = None, limit: float = 300.0):
    """A served app for the duration of the block. `limit` is generous: it is a hang guard, not a timing check."""
    app = AppProcess(*args, env=env)
    try:
        app.wait_until_serving(limit)
        yield app
    finally:
        app.stop()
