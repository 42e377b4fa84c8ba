"""The page's JavaScript lives in assets/*.js, one file per job; this is how the Python side gets a script.

Each file starts with comments saying where it runs: ``js=`` of an event (a function), ``js_on_load`` of a gr.HTML
(statements over ``element``, ``props`` and ``trigger``), an ``html_template`` (a template string's ``${…}``), or a
<head> script. Values the server knows (a limit, a file name, the list of tabs) are words in capitals in the file,
filled in here by :func:`script`; tests/test_assets_js.py parses every file with node.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path

from starlette.responses import Response
from starlette.routing import Route

from core.loading.paths import ASSETS_DIR


def compact(path: Path) -> str:
    """A script as the page gets it: without comments and indentation (its code holds no " // " in a string)."""
    lines = (re.sub(r"\s+// .*$", "", line.strip()) for line in path.read_text(encoding="utf-8").splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


def inline_json(value) -> str:
    """``value`` as JSON to write inside a <script> in the page's <head> (``window.plm… = …;``): its words as they
    are (ensure_ascii off), and no "</" that could end the script early."""
    return json.dumps(value, ensure_ascii=False).replace("</", "<\\/")


@functools.lru_cache(maxsize=64)  # a few dozen files, read once each
def _read(name: str) -> str:
    return compact(ASSETS_DIR / f"{name}.js")


def script(name: str, **fill: str) -> str:
    """assets/<name>.js, compacted, each ``KEY`` of ``fill`` replaced by its value (every one must be in the file)."""
    code = _read(name)
    for key, value in fill.items():
        if key not in code:
            raise KeyError(f"assets/{name}.js has no {key} to fill")
        code = code.replace(key, value)
    return code


class Served:
    """A script of assets/ at an address of its own (the class's, the checks', the kit's): the browser fetches it
    once and keeps it for a day; the page names it with its version (a hash of its text) in the address, so a
    changed script is fetched anew. Inline in every page, it would be sent (escaped) with every page load.

        KIT = Served("kit", "/plm-kit.js")
        routes=[KIT.route]            # app.py: launch(app_kwargs={"routes": [...]})
        head=... + KIT.tag()          # <script src="plm-kit.js?v=…">
    """

    def __init__(self, name: str, path: str):
        self.name, self.path = name, path

    @functools.cached_property
    def code(self) -> str:
        return compact(ASSETS_DIR / f"{self.name}.js")

    @functools.cached_property
    def version(self) -> str:
        return hashlib.sha256(self.code.encode()).hexdigest()[:12]

    def tag(self, defer: bool = False) -> str:
        return f'<script src="{self.path.lstrip("/")}?v={self.version}"{" defer" if defer else ""}></script>'

    async def _serve(self, request) -> Response:
        return Response(self.code, media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=86400"})

    @property
    def route(self) -> Route:
        return Route(self.path, self._serve)
