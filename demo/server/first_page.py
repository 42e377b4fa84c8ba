"""A light first page (issue #53): what a learner's browser downloads before the Overview shows.

* ``middleware()`` compresses every text answer over COMPRESS_FROM_BYTES that the browser accepts compressed: the
  page and ``/config`` whole, with Brotli (gzip for a browser without br); JSON API answers with Starlette's gzip;
  files with Gradio's own middleware. Event streams pass untouched and unbuffered.
* ``one_language(I18N, LABELLED)`` makes the page and ``/config`` carry only the learner's translation table, and
  only the keys of the app's labels.
* ``PageLanguage`` tells both, and gradio_inside.PerLanguage (the words a gr.HTML carries in every language:
  lessons, preset bars, the tour), the language of the page being made.
* ``PageWords`` puts the learner's language into the page, and the Overview's words as its own HTML: readable
  before Gradio's front end has loaded and drawn the app.
* ``PageCache`` keeps the finished page (compressed) per way of asking for it, so a class opening the same link
  costs the server one page, not one each: Gradio builds each page anew (it deep-copies the app's config, renders
  2.2 MB of HTML and compresses it), about 0.25 s of CPU, so that one server opened about 2 pages a second for a
  class arriving at once (benchmarks/README.md, "A class as it clicks"). A HEAD of the page (launch()'s check of its
  own server) is answered without building it.

``one_language`` reaches inside Gradio (the config's ``translations_dict``), named in tests/server/test_first_page.py,
which fails with a message if a Gradio upgrade changes it. Measured by benchmarks/page_weight.py.
"""
from __future__ import annotations

import gzip
from collections.abc import Collection
from types import SimpleNamespace
from urllib.parse import parse_qsl

import gradio as gr
import brotli
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware

from core.text.i18n import language_of
from core.loading.cache import BoundedCache
from demo.server.gradio_inside import PAGE_LANGUAGE


# The page and its config: Gradio's own BrotliMiddleware (gradio/routes.py adds it outside ours, quality 4, gzip for a
# browser without br) picks what it compresses by the path's file extension (.js, .css, .json, …), so these two, which
# have none, went out uncompressed: 2.25 MB of HTML and 1.59 MB of JSON (issue #53).
PAGES = ("", "/config")
COMPRESS_FROM_BYTES = 1024  # smaller answers go as they are
BROTLI_QUALITY = 4  # Gradio's own: the page in about 10 ms, 214 KB where gzip makes 294 KB
GZIP_LEVEL = 6  # zlib's default: the page in 49 ms (level 9: 74 ms for 2% less)
# Already compressed, or binary: not worth a gzip pass. Event streams stay out (Starlette's default list has them):
# a compressor would hold each event back until it had enough bytes to be worth sending.
NOT_COMPRESSED = (*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream", "application/pdf",
                  "application/vnd.openxmlformats-officedocument.presentationml.presentation")


def _path(scope) -> str:
    """The request's path inside the app (a mount's root_path taken off), without a trailing slash."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root):]
    return path.rstrip("/")


def accepted_encoding(headers: Headers) -> str | None:
    """The encoding to send a whole answer in: "br" when the request accepts it, else "gzip", else None ("identity"
    only, or a refusal with q=0)."""
    accepted = set()
    for part in headers.get("accept-encoding", "").lower().split(","):
        name, _, params = part.partition(";")
        quality = params.strip().removeprefix("q=").strip() if params.strip().startswith("q=") else "1"
        try:
            if float(quality) > 0:
                accepted.add(name.strip())
        except ValueError:
            pass
    return "br" if "br" in accepted else "gzip" if "gzip" in accepted else None


async def rewrite_whole(app, scope, receive, send, rewrite) -> None:
    """Run ``app`` with its answer gathered whole, then sent as ``rewrite(headers, body)`` returns it: ``headers``
    (the start message's, to change in place) and the body; the content-length follows the body sent."""
    start, body = {}, bytearray()

    async def gathered(message):
        if message["type"] == "http.response.start":
            start.update(message)
            return
        if message["type"] != "http.response.body":
            return await send(message)
        body.extend(message.get("body", b""))
        if message.get("more_body"):
            return
        headers = MutableHeaders(raw=list(start.get("headers", [])))
        data = rewrite(headers, bytes(body))
        headers["content-length"] = str(len(data))
        start["headers"] = headers.raw
        await send(start)
        await send({"type": "http.response.body", "body": data})

    await app(scope, receive, gathered)


class WholeCompression:
    """ASGI middleware for the page and ``/config``: the answer is gathered whole (both are built whole anyway) and
    compressed in the encoding ``accepted_encoding`` picks, Brotli at BROTLI_QUALITY or gzip at GZIP_LEVEL."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        encoding = accepted_encoding(Headers(scope=scope))
        if encoding is None:
            return await self.app(scope, receive, send)

        def compressed(headers: MutableHeaders, data: bytes) -> bytes:
            if len(data) < COMPRESS_FROM_BYTES or "content-encoding" in headers:
                return data
            headers["content-encoding"] = encoding
            headers.add_vary_header("Accept-Encoding")
            return (brotli.compress(data, mode=brotli.MODE_TEXT, quality=BROTLI_QUALITY) if encoding == "br"
                    else gzip.compress(data, GZIP_LEVEL, mtime=0))

        await rewrite_whole(self.app, scope, receive, send, compressed)


class Compression:
    """ASGI middleware: every text answer over COMPRESS_FROM_BYTES compressed when the browser accepts it.

    * a file (a path with an extension: Gradio's scripts, styles, uploads): left to Gradio's own BrotliMiddleware,
      which wraps this one and compresses the text files among them;
    * the page and ``/config``: ``WholeCompression``, Brotli (gzip for a browser without br);
    * everything else (JSON API answers, ``/gradio_api/info``): Starlette's GZipMiddleware, which passes event
      streams (``text/event-stream``) through untouched and unbuffered, and any answer already compressed."""

    def __init__(self, app):
        self.app = app
        self.pages = WholeCompression(app)
        self.rest = GZipMiddleware(app, minimum_size=COMPRESS_FROM_BYTES, compresslevel=GZIP_LEVEL,
                                   exclude_content_types=NOT_COMPRESSED)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or "." in scope.get("path", "").rsplit("/", 1)[-1]:
            return await self.app(scope, receive, send)
        if _path(scope) in PAGES:
            return await self.pages(scope, receive, send)
        return await self.rest(scope, receive, send)


class PageLanguage:
    """ASGI middleware: while the page or its config is made, the learner's language (core.text.i18n.language_of: the
    toggle's cookie, then Accept-Language) is the one whose table goes into it (``one_language``)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or _path(scope) not in PAGES:
            return await self.app(scope, receive, send)
        token = PAGE_LANGUAGE.set(scope_language(scope))
        try:
            return await self.app(scope, receive, send)
        finally:
            PAGE_LANGUAGE.reset(token)


def scope_language(scope) -> str:
    """The learner's language for an ASGI request: core.text.i18n.language_of reads its headers."""
    return language_of(SimpleNamespace(headers=Headers(scope=scope)))


class _TablesPerPage(dict):
    """Every language's table, as Gradio stores them in the app's config when it launches; a page's copy of that
    config (``get_page_config`` deep-copies it for each page load) holds only the page's language."""

    def __init__(self, owner: "OneLanguage"):
        super().__init__(owner.tables())
        self.owner = owner

    def __deepcopy__(self, memo):
        return self.owner.tables(PAGE_LANGUAGE.get())


class OneLanguage(gr.I18n):
    """``gr.I18n`` whose tables, in a page or /config made for a learner, are that learner's language only, and only
    the keys the browser can be asked to translate (``needed``, when given).

    The browser needs one table: PageWords tells Gradio's front end the language the server chose, and svelte-i18n
    falls back to Gradio's own English strings, never to another of our tables. The zh table was 200 KB of each page
    (61 KB gzipped). And it needs only the keys of the labels the app gave its components (demo.kit.i18n.LABELLED:
    753 of the 2,224 keys): the rest are texts the server renders itself. Trimmed, the zh table went from 351 KB to
    130 KB of each page (85 to 35 KB with Brotli).

    Reaches inside Gradio: ``translations_dict`` is what both routes read. ``/config`` puts it into its answer;
    ``Blocks.get_config_file`` stores it in the app's config at launch, and the page route (``get_page_config``)
    deep-copies that config for each load (tests/server/test_first_page.py names both)."""

    def __init__(self, needed: Collection[str] | None = None, **translations):
        super().__init__(**translations)
        self.needed = needed  # read when a page is made: a set that grows while the app is built

    def tables(self, lang: str | None = None) -> dict[str, dict[str, str]]:
        """``lang``'s table (every language's for None), holding the needed keys only."""
        return {code: {key: value for key, value in strings.items() if self.needed is None or key in self.needed}
                for code, strings in self.translations.items() if lang is None or code == lang}

    @property
    def translations_dict(self) -> dict[str, dict[str, str]]:
        lang = PAGE_LANGUAGE.get()
        return _TablesPerPage(self) if lang is None else self.tables(lang)  # None: the config stored at launch


def one_language(i18n: gr.I18n, needed: Collection[str] | None = None) -> OneLanguage:
    """``i18n``'s tables, sent one language per page (with the ``needed`` keys only); pass it to
    ``launch(i18n=...)``."""
    return OneLanguage(needed, **i18n.translations)


class PageWords:
    """ASGI middleware for the page itself ("/"); every other request passes through untouched. It puts into the page:

    * as the first thing in <head>, the learner's language (``language_of``: the toggle's cookie, else
      Accept-Language) presented as the browser's (demo.kit.i18n.NAVIGATOR_SCRIPT): Gradio's front end reads
      ``navigator.language`` before any script of ours could run;
    * on a page opened without a link, right before Gradio's ``<gradio-app>``, ``first_texts[language]``
      (demo/ladder/overview.first_page: the Overview's words as plain HTML). The browser shows it once the page's
      HTML is in (about 200 KB, compressed), instead of after Gradio's front end has loaded and drawn the whole app.
      A page opened with ``?tab=``, ``?tour=``, ``?preset=`` or ``?view=`` opens elsewhere: it gets none."""

    LINKS = ("tab", "tour", "preset", "view")

    def __init__(self, app, first_texts: dict[str, str] | None = None):
        self.app = app
        self.first_texts = {lang: text.encode() for lang, text in (first_texts or {}).items()}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET" or _path(scope) != "":
            return await self.app(scope, receive, send)
        from demo.kit.i18n import NAVIGATOR_SCRIPT

        lang = scope_language(scope)
        script = NAVIGATOR_SCRIPT.format(locale="zh-CN" if lang == "zh" else "en").encode()
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        text = b"" if any(name in self.LINKS for name, _ in query) else self.first_texts.get(lang, b"")

        def rewritten(headers: MutableHeaders, page: bytes) -> bytes:
            if headers.get("content-type", "").startswith("text/html"):
                page = page.replace(b"<head>", b"<head>" + script, 1).replace(b"<gradio-app", text + b"<gradio-app", 1)
            return page

        await rewrite_whole(self.app, scope, receive, send, rewritten)


# What a page depends on, besides the learner's language: the address Gradio builds its URLs from (the Host and the
# proxy's X-Forwarded-* headers, the mount's root_path), the encoding the browser accepts, and the query (Gradio's
# own ?deep_link=). A request with credentials is never served from the cache.
PAGE_KEY_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-port", b"x-forwarded-prefix",
                    b"accept-encoding")
PAGES_KEPT = 32  # × about 180 KB compressed (2.2 MB for a client that accepts none: 70 MB at most)


class PageCache:
    """ASGI middleware, outermost: the page (GET /) answered once per key (PAGE_KEY_HEADERS, the language, the
    query) and then from memory, the least recently asked of PAGES_KEPT dropped first. Only a complete 200 answer
    without Set-Cookie is kept. The app's config does not change once it is launched, so a kept page stays right.

    A HEAD of the page (launch()'s own check that the server answers, a proxy's health check) is answered with a
    kept page's headers, or a bare 200, without building the page: Gradio would render all of it for a HEAD, and on
    two busy cores that took longer than the 3 s launch() waits, so the app refused to start ("localhost is not
    accessible")."""

    def __init__(self, app):
        self.app = app
        self.pages = BoundedCache(PAGES_KEPT)  # key -> (the answer's start message, its body)

    def key(self, scope) -> tuple | None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD") or _path(scope) != "":
            return None
        headers = dict(scope["headers"])
        if b"authorization" in headers:
            return None
        return (scope.get("scheme"), scope.get("root_path", ""), scope.get("query_string", b""),
                scope_language(scope), *(headers.get(name) for name in PAGE_KEY_HEADERS))

    async def __call__(self, scope, receive, send):
        key = self.key(scope)
        if key is None:
            return await self.app(scope, receive, send)
        kept = self.pages.get(key)
        if scope["method"] == "HEAD":
            start = kept[0] if kept is not None else {"type": "http.response.start", "status": 200,
                                                      "headers": [(b"content-type", b"text/html; charset=utf-8")]}
            await send(start)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if kept is not None:
            start, body = kept
            await send(start)
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        start, chunks = None, []

        async def keep(message):
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                cookie = any(name.lower() == b"set-cookie" for name, _ in start["headers"])
                if not message.get("more_body") and start["status"] == 200 and not cookie:
                    self.pages.max_entries = PAGES_KEPT  # read here: a test lowers it
                    self.pages.put(key, (start, b"".join(chunks)))
            await send(message)

        await self.app(scope, receive, keep)


def middleware(first_texts: dict[str, str] | None = None) -> list[Middleware]:
    """For ``launch(app_kwargs={"middleware": middleware(...)})``, outermost first: the page cache keeps what
    compression made of the finished page; compression sees the finished page; PageWords puts the learner's language
    and the first page's text (``first_texts``, one per language) into it; PageLanguage picks the table Gradio puts
    into it."""
    return [Middleware(PageCache), Middleware(Compression), Middleware(PageWords, first_texts=first_texts),
            Middleware(PageLanguage)]
