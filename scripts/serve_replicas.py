"""N app processes behind one nginx, for a class that outgrows one process (docs/DEPLOY.md, "Several replicas").

    python scripts/serve_replicas.py --replicas 4 --port 8080 -- --device cpu
    python scripts/serve_replicas.py --replicas 2 --class-db postgresql://plm:secret@db/classes -- --offline

Each replica is `python app.py --port P --root-path /plm --trusted-proxy 127.0.0.1` plus what follows `--`, on ports
--first-app-port, +1, …; every replica gets the same --class-db (default: the app's own SQLite file, which replicas
on one host share). nginx's configuration is written from docs/DEPLOY.md's blocks (`location`, the upstream with
its sticky cookie, and the lines the location gains), so what runs is what the page documents. A replica that exits
is started again after 1 s, then 2, 4 … up to 30 s while it keeps failing. Ctrl-C (or SIGTERM) stops everything.

One JSON line per event goes to stdout ({"event": "replica", "index": 0, "port": 7861, "pid": …}, "restart",
"serving", "nginx"), for whoever supervises this script (tests/test_replicas.py reads them).
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "DEPLOY.md"
ROOT_PATH = "/plm"


def block(name: str, text: str | None = None) -> str:
    """docs/DEPLOY.md's nginx block between <!-- name --> markers."""
    text = text if text is not None else DEPLOY.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name} -->\s*```nginx\n(.*?)```\s*<!-- /{name} -->", text, re.S)
    if not found:
        raise SystemExit(f"docs/DEPLOY.md has no <!-- {name} --> block")
    return found.group(1)


def nginx_config(prefix: Path, listen: str, app_ports: list[int]) -> str:
    """The whole nginx.conf: DEPLOY.md's upstream (one `server` line per replica) and its location, pointed at it."""
    doc = DEPLOY.read_text(encoding="utf-8")
    servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;" for port in app_ports)
    upstream = re.sub(r"(        server 127\.0\.0\.1:\d+ [^\n]*\n)+", servers + "\n", block("nginx-replicas", doc))
    location = block("nginx", doc)
    location = re.sub(r"proxy_pass http://127\.0\.0\.1:\d+/;[^\n]*", "proxy_pass http://plm_replicas/;", location)
    location = location.replace("            proxy_http_version 1.1;\n",
                                "            proxy_http_version 1.1;\n" + block("nginx-replicas-location", doc))
    # As root, nginx's workers would switch to "nobody" and lose the temporary prefix: keep them this user.
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    temp = "\n".join(f"    {kind}_temp_path {prefix / kind};" for kind in
                     ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return f"""{user}
worker_processes auto;
pid {prefix / "nginx.pid"};
error_log {prefix / "error.log"} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temp}
{upstream}
    server {{
        listen {listen};
{location}
    }}
}}
"""


def say(**event) -> None:
    print(json.dumps(event), flush=True)


class Replica:
    def __init__(self, index: int, port: int, app_args: list[str], logs: Path):
        self.index, self.port, self.app_args, self.logs = index, port, app_args, logs
        self.process: subprocess.Popen | None = None
        self.backoff, self.restart_at, self.serving = 1.0, None, False

    def start(self, event: str = "replica") -> None:
        log = open(self.logs / f"replica-{self.index}.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "app.py"), "--port", str(self.port), "--root-path", ROOT_PATH,
             "--trusted-proxy", "127.0.0.1", *self.app_args],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.serving, self.restart_at = False, None
        say(event=event, index=self.index, port=self.port, pid=self.process.pid)

    def check(self) -> None:
        """Called every 0.5 s: note when it serves; start it again when it has exited."""
        code = self.process.poll()
        if code is None:
            if not self.serving and answers(f"http://127.0.0.1:{self.port}/"):
                self.serving, self.backoff = True, 1.0
                say(event="serving", index=self.index, port=self.port, pid=self.process.pid)
            return
        if self.restart_at is None:
            self.restart_at = time.monotonic() + self.backoff
            say(event="exited", index=self.index, port=self.port, code=code)
            self.backoff = min(self.backoff * 2, 30.0)
        elif time.monotonic() >= self.restart_at:
            self.start("restart")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


def parse_args(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    argv = sys.argv[1:] if argv is None else argv
    app_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=2, help="app processes (default 2)")
    parser.add_argument("--port", type=int, default=8080, help="nginx's port (default 8080)")
    parser.add_argument("--listen", default="127.0.0.1", help="nginx's address (0.0.0.0 to serve the network)")
    parser.add_argument("--first-app-port", type=int, default=7861, help="the first replica's port (default 7861)")
    parser.add_argument("--class-db", help="every replica's class store (default: the app's own SQLite file)")
    parser.add_argument("--prefix", help="folder for nginx's files and the replicas' logs (default: a temporary one)")
    args = parser.parse_args(own)
    if not 1 <= args.replicas <= 64:
        parser.error("--replicas must be between 1 and 64")
    if args.class_db:
        app_args = [*app_args, "--class-db", args.class_db]
    return args, app_args


def main(argv: list[str] | None = None) -> int:
    args, app_args = parse_args(argv)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise SystemExit("nginx is not installed (Debian: apt-get install nginx)")
    prefix = Path(args.prefix or tempfile.mkdtemp(prefix="plm-replicas-"))
    prefix.mkdir(parents=True, exist_ok=True)
    replicas = [Replica(i, args.first_app_port + i, app_args, prefix) for i in range(args.replicas)]
    (prefix / "nginx.conf").write_text(
        nginx_config(prefix, f"{args.listen}:{args.port}", [r.port for r in replicas]), encoding="utf-8")
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    proxy = None
    try:
        for replica in replicas:
            replica.start()
        proxy = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-e",
                                  str(prefix / "error.log"), "-g", "daemon off;"], start_new_session=True)
        say(event="nginx", port=args.port, url=f"http://{args.listen}:{args.port}{ROOT_PATH}/", pid=proxy.pid)
        while not stopping:
            if proxy.poll() is not None:
                say(event="nginx_exited", code=proxy.returncode)
                return 1
            for replica in replicas:
                replica.check()
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        if proxy and proxy.poll() is None:
            proxy.terminate()
            proxy.wait(10)
        for replica in replicas:
            replica.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
