"""A small Hugging Face Hub on 127.0.0.1 for tests: the API subset that core/loading/hub.py and huggingface_hub 2.4 use.

    GET  /api/models/{id}[/revision/{rev}]      repo info: {"id", "sha", "siblings": [{"rfilename", "size", "blobId",
                                                "lfs": {"sha256", "size", "pointerSize"}}]}
    GET  /api/models/{id}/tree/{rev}[?recursive] [{"type": "file", "path", "size", "oid", "lfs": {"oid", "size",
                                                "pointerSize"}}] (one page, no Link header)
    HEAD/GET /{id}/resolve/{rev}/{file}          small files: 200 with ETag (git oid), Content-Length, X-Repo-Commit;
                                                LFS files (weights): 302 to localhost/lfs/{sha256} with X-Linked-Etag and
                                                X-Linked-Size, as the Hub redirects to its CDN
    GET  /lfs/{sha256}                           the LFS bytes

Knobs for the failure modes: ``stall`` (send half a file, then nothing until ``release()``), ``trickle`` (64 bytes
every 0.25 s, 256 B/s, until ``release()`` cuts the body short and closes the connection), ``hang_listing`` (never answer repo info), ``fake_sizes`` (a listing that claims huge files),
``down()`` / ``up()`` (the port refuses connections). ``requests`` logs (method, path) of every request.
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin")


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, files: dict[str, bytes], fake_sizes: dict[str, int] | None = None):
        self.files = files
        self.fake_sizes = fake_sizes or {}
        self.commit = hashlib.sha1(b"".join(k.encode() + v for k, v in sorted(files.items()))).hexdigest()
        self.sha256 = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}

    def is_lfs(self, name: str) -> bool:
        return name.endswith(LFS_SUFFIXES)

    def size(self, name: str) -> int:
        return self.fake_sizes.get(name, len(self.files[name]))


class HubServer:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[tuple[str, str]] = []
        self.stall: set[str] = set()  # file names whose GET sends half the body, then waits for release()
        self.trickle: set[str] = set()  # file names sent 64 bytes every 0.25 s
        self.hang_listing = False
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.port = 0
        self.up()

    # ---- control
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_repo(self, model_id: str, folder: Path | None = None, files: dict[str, bytes] | None = None,
                 fake_sizes: dict[str, int] | None = None) -> Repo:
        """Serve every file of ``folder`` (and/or ``files``) as repo ``model_id``."""
        content = dict(files or {})
        if folder is not None:
            for path in sorted(Path(folder).rglob("*")):
                if path.is_file():
                    content.setdefault(path.relative_to(folder).as_posix(), path.read_bytes())
        repo = self.repos[model_id] = Repo(content, fake_sizes)
        return repo

    def count(self, suffix: str, method: str | None = None) -> int:
        """How many requests asked for a path ending in ``suffix``."""
        return sum(1 for m, path in self.requests if urlsplit(path).path.endswith(suffix)
                   and (method is None or m == method))

    def release(self) -> None:
        self._release.set()

    def up(self) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        server.daemon_threads = True
        self._server, self.port = server, server.server_address[1]
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def down(self) -> None:
        """The Hub goes away: the port refuses connections until up()."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def close(self) -> None:
        self.release()
        self.down()

    # ---- routing
    def find(self, path: str) -> tuple[str, Repo, str] | None:
        """(model id, repo, rest of the path) for the longest repo id that prefixes ``path``."""
        for model_id in sorted(self.repos, key=len, reverse=True):
            prefix = model_id + "/"
            if path.startswith(prefix) or path == model_id:
                return model_id, self.repos[model_id], path[len(prefix):]
        return None


def _handler_for(hub: HubServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # keep test output quiet
            pass

        def do_HEAD(self):
            self.route(head=True)

        def do_GET(self):
            self.route(head=False)

        def route(self, head: bool):
            hub.requests.append((self.command, self.path))
            path = unquote(urlsplit(self.path).path)
            try:
                if path.startswith("/api/models/"):
                    return self.api(path[len("/api/models/"):])
                if path.startswith("/lfs/"):
                    return self.lfs(path[len("/lfs/"):], head)
                found = hub.find(path.lstrip("/"))
                if found and found[2].startswith("resolve/"):
                    _, rev, name = found[2].split("/", 2)
                    return self.resolve(found[1], rev, name, head)
                self.send_json({"error": "Repository not found"}, 404, {"X-Error-Code": "RepoNotFound"})
            except (BrokenPipeError, ConnectionResetError):
                pass

        def api(self, rest: str):
            found = hub.find(rest)
            if found is None:
                return self.send_json({"error": "Repository not found"}, 404, {"X-Error-Code": "RepoNotFound"})
            model_id, repo, tail = found
            if tail.startswith("tree/"):
                entries = [{"type": "file", "path": name, "size": repo.size(name), "oid": git_oid(data),
                            **({"lfs": {"oid": repo.sha256[name], "size": repo.size(name), "pointerSize": 134}}
                               if repo.is_lfs(name) else {})} for name, data in sorted(repo.files.items())]
                return self.send_json(entries)
            if hub.hang_listing:
                hub._release.wait(120)  # never answers (until the test ends)
                return
            siblings = [{"rfilename": name, "size": repo.size(name), "blobId": git_oid(data),
                         **({"lfs": {"sha256": repo.sha256[name], "size": repo.size(name), "pointerSize": 134}}
                            if repo.is_lfs(name) else {})} for name, data in sorted(repo.files.items())]
            self.send_json({"id": model_id, "modelId": model_id, "sha": repo.commit, "private": False,
                            "siblings": siblings})

        def resolve(self, repo: Repo, rev: str, name: str, head: bool):
            if rev not in ("main", repo.commit) or name not in repo.files:
                return self.send_json({"error": "Entry not found"}, 404, {"X-Error-Code": "EntryNotFound"})
            headers = {"X-Repo-Commit": repo.commit}
            if repo.is_lfs(name):
                # Another host name for the same server, as the Hub's CDN is another host: huggingface_hub's HEAD
                # then reads the X-Linked-* headers here instead of following the redirect.
                headers.update({"Location": f"http://localhost:{hub.port}/lfs/{repo.sha256[name]}",
                                "X-Linked-Etag": f'"{repo.sha256[name]}"', "X-Linked-Size": str(repo.size(name)),
                                "ETag": f'"{git_oid(repo.files[name])}"', "Content-Length": "0"})
                self.send_response(302)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                return
            headers["ETag"] = f'"{git_oid(repo.files[name])}"'
            self.send_bytes(repo.files[name], head, headers, name)

        def lfs(self, sha: str, head: bool):
            for repo in hub.repos.values():
                for name, digest in repo.sha256.items():
                    if digest == sha:
                        return self.send_bytes(repo.files[name], head, {"ETag": f'"{sha}"'}, name)
            self.send_json({"error": "not found"}, 404)

        # ---- writing
        def send_json(self, payload, status: int = 200, headers: dict | None = None):
            body = json.dumps(payload).encode()
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_bytes(self, data: bytes, head: bool, headers: dict, name: str):
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if head:
                return
            if name in hub.stall:
                half = len(data) // 2
                self.wfile.write(data[:half])
                self.wfile.flush()
                hub._release.wait(120)  # then nothing, until the test releases it
                self.wfile.write(data[half:])
            elif name in hub.trickle:
                for start in range(0, len(data), 64):
                    if hub._release.is_set():
                        self.close_connection = True  # released: the body ends short, the client hears it at once
                        break
                    self.wfile.write(data[start:start + 64])
                    self.wfile.flush()
                    time.sleep(0.25)
            else:
                self.wfile.write(data)

    return Handler
