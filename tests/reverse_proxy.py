"""Debian's nginx on loopback in front of the app, serving it under a sub-path the way docs/DEPLOY.md's configuration
does.

nginx runs as the test's own user from a temporary prefix (its config, pid, logs and temp folders all there; nothing
under /etc or /var). The `location` block is docs/DEPLOY.md's, read between `<!-- nginx -->` markers, so the
documented configuration is the one the browser test goes through.
"""
from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from tests.live_app import ROOT, free_port, serves

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


DEPLOY = ROOT / "docs" / "DEPLOY.md"


def readme_location(readme: Path = DEPLOY) -> str:
    """docs/DEPLOY.md's nginx `location /plm/ { … }` block (between the <!-- nginx --> markers). ``readme``: the file
    that holds it in another tree (before issue #50 moved it: README.md)."""
    text = readme.read_text(encoding="utf-8")
    block = re.search(r"<!-- nginx -->\s*```nginx\n(.*?)```\s*<!-- /nginx -->", text, re.S)
    assert block, f"{readme.name} has no <!-- nginx --> block"
    return block.group(1)


def config(prefix: Path, port: int, app_port: int, readme: Path = DEPLOY) -> str:
    location = readme_location(readme).replace("127.0.0.1:7860", f"127.0.0.1:{app_port}")
    # As root, nginx's workers would switch to "nobody" and lose the temp prefix: keep them this user.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    temp = "\n".join(f"    {kind}_temp_path {prefix / kind};" for kind in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{user}
worker_processes 1;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} info;
events {{ worker_connections 1024; }}  # a class: 30 browsers × 6 connections, each proxied
http {{
    access_log {prefix / "access.log"};
{temp}
    server {{
        listen 127.0.0.1:{port};
{location}
    }}
}}
"""


@contextmanager
def nginx_proxy(app_port: int, tmp: Path, limit: float = 30.0, readme: Path = DEPLOY):
    """nginx on a free loopback port proxying docs/DEPLOY.md's /plm/ to the app; yields the proxy's base URL.
    ``readme``: another tree's file holding the block (benchmarks/page_weight.py measures main's beside this one's)."""
    prefix = tmp / "nginx"
    prefix.mkdir(parents=True, exist_ok=True)
    port = free_port()
    (prefix / "nginx.conf").write_text(config(prefix, port, app_port, readme), encoding="utf-8")
    process = subprocess.Popen([NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-e",
                                str(prefix / "error.log"), "-g", "daemon off;"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/plm/"
    try:
        began = time.monotonic()
        while not serves(url):
            if process.poll() is not None or time.monotonic() - began > limit:
                log = (prefix / "error.log").read_text(errors="replace") if (prefix / "error.log").exists() else ""
                said = process.stdout.read().decode(errors="replace") if process.poll() is not None else ""
                raise RuntimeError(f"nginx did not serve {url}: {said}\n{log[-3000:]}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
