"""Talking to a running app's class API (demo/kit/classroom.py) the way the page does: POST /class/api/<action> with a
JSON body. Shared by tests/classroom/test_classroom_http.py, tests/e2e/test_classroom_browser.py and benchmarks/class_load.py.
"""
from __future__ import annotations

import http.client
import json
import secrets
from urllib.parse import urlsplit


class Client:
    """One keep-alive connection to the app (one per thread). ``address``: the X-Forwarded-For the app sees, when it
    trusts 127.0.0.1 as a proxy (``--trusted-proxy 127.0.0.1``): many addresses from one test."""

    def __init__(self, url: str, address: str | None = None, lang: str = "en"):
        parts = urlsplit(url)
        self.host, self.port, self.root = parts.hostname, parts.port, parts.path.rstrip("/")
        self.address, self.lang = address, lang
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def raw(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        headers = {"Content-Type": "application/json", "Accept-Language": "zh-CN" if self.lang == "zh" else "en",
                   **(headers or {})}
        if self.address:
            headers["X-Forwarded-For"] = self.address
        for attempt in range(2):
            try:
                self.connection.request(method, self.root + path, body=body, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
                if attempt:
                    raise

    def post(self, action: str, **body) -> tuple[int, dict]:
        status, data = self.raw("POST", f"/class/api/{action}", json.dumps({"lang": self.lang, **body}).encode())
        return status, json.loads(data or b"{}")

    def ok(self, action: str, **body) -> dict:
        status, data = self.post(action, **body)
        assert status == 200, (action, status, data)
        return data

    def join(self, code: str, nickname: str = "") -> str:
        return self.ok("join", code=code, session=secrets.token_urlsafe(16), nickname=nickname)["student"]
