"""A light first page (issue #53): what a learner's browser downloads before the Overview shows.

* ``middleware()`` compresses every text answer over COMPRESS_FROM_BYTES that the browser accepts compressed: the
  page and ``/config`` with Gradio's own Brotli middleware, JSON API answers with Starlette's gzip; event streams
  pass untouched and unbuffered.
* ``one_language(I18N)`` makes the page and ``/config`` carry only the learner's translation table.

Both reach inside Gradio (a private method of its Brotli middleware; the config's ``translations_dict``), each
named in tests/test_serving.py, which fails with a message if a Gradio upgrade changes them. Measured by
benchmarks/page_weight.py.
"""
from __future__ import annotations

import contextvars

import gradio as gr
from gradio.brotli_middleware import BrotliMiddleware
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware


# The page and its config: Gradio's own BrotliMiddleware (gradio/routes.py adds it, quality 4, gzip for a browser
# without br) picks what it compresses by the path's file extension (.js, .css, .json, …), so these two, which have
# none, went out uncompressed: 2.25 MB of HTML and 1.59 MB of JSON (issue #53).
PAGES = ("", "/config")
COMPRESS_FROM_BYTES = 1024  # smaller answers go as they are
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


class _PagesToo(BrotliMiddleware):
    """Gradio's BrotliMiddleware for the page and its config only (Gradio's own instance, outside ours, does the
    files with extensions). Reaches inside Gradio: it overrides ``_is_compressible_file_type(scope)``, the method
    that picks by extension (tests/test_serving.py names it)."""

    def _is_compressible_file_type(self, scope) -> bool:
        return _path(scope) in PAGES


class Compression:
    """ASGI middleware: every text answer over COMPRESS_FROM_BYTES compressed when the browser accepts it.

    * the page and ``/config``: Brotli at quality 4 (gzip for a browser without br), Gradio's own middleware;
    * the files Gradio's BrotliMiddleware compresses (by extension): left to it;
    * everything else (JSON API answers, ``/gradio_api/info``): Starlette's GZipMiddleware, which passes event
      streams (``text/event-stream``) through untouched and unbuffered, and any answer already compressed."""

    def __init__(self, app):
        self.app = app
        self.pages = _PagesToo(app, quality=4, minimum_size=COMPRESS_FROM_BYTES)
        self.gradio_compresses = BrotliMiddleware(app)._is_compressible_file_type
        self.rest = GZipMiddleware(app, minimum_size=COMPRESS_FROM_BYTES, compresslevel=GZIP_LEVEL,
                                   exclude_content_types=NOT_COMPRESSED)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or self.gradio_compresses(scope):
            return await self.app(scope, receive, send)
        if _path(scope) in PAGES:
            return await self.pages(scope, receive, send)
        return await self.rest(scope, receive, send)


# The learner's language while Gradio builds the page or /config for them (PageLanguage sets it); None elsewhere.
_PAGE_LANGUAGE: contextvars.ContextVar[str | None] = contextvars.ContextVar("plm_page_language", default=None)


class PageLanguage:
    """ASGI middleware: while the page or its config is made, the learner's language (demo.kit.i18n.language_of: the
    toggle's cookie, then Accept-Language) is the one whose table goes into it (``one_language``)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or _path(scope) not in PAGES:
            return await self.app(scope, receive, send)
        from demo.kit.i18n import language_of

        token = _PAGE_LANGUAGE.set(language_of(_HeadersOnly(Headers(scope=scope))))
        try:
            return await self.app(scope, receive, send)
        finally:
            _PAGE_LANGUAGE.reset(token)


class _HeadersOnly:
    def __init__(self, headers: Headers):
        self.headers = headers


class _TablesPerPage(dict):
    """Every language's table, as Gradio stores them in the app's config when it launches; a page's copy of that
    config (``get_page_config`` deep-copies it for each page load) holds only the page's language."""

    def __deepcopy__(self, memo):
        lang = _PAGE_LANGUAGE.get()
        return {code: dict(strings) for code, strings in self.items() if lang is None or code == lang}


class OneLanguage(gr.I18n):
    """``gr.I18n`` whose tables, in a page or /config made for a learner, are that learner's language only.

    The browser needs one table: LanguageMiddleware (demo/kit/i18n.py) tells Gradio's front end the language the server
    chose, and svelte-i18n falls back to Gradio's own English strings, never to another of our tables. The zh table
    was 200 KB of each page (61 KB gzipped).

    Reaches inside Gradio: ``translations_dict`` is what both routes read. ``/config`` puts it into its answer;
    ``Blocks.get_config_file`` stores it in the app's config at launch, and the page route (``get_page_config``)
    deep-copies that config for each load (tests/test_serving.py names both)."""

    @property
    def translations_dict(self) -> dict[str, dict[str, str]]:
        lang = _PAGE_LANGUAGE.get()
        if lang is None:  # the config stored at launch
            return _TablesPerPage(self.translations)
        return {lang: self.translations[lang]}


def one_language(i18n: gr.I18n) -> OneLanguage:
    """``i18n``'s tables, sent one language per page; pass it to ``launch(i18n=...)``."""
    return OneLanguage(**i18n.translations)


def middleware() -> list[Middleware]:
    """For ``launch(app_kwargs={"middleware": middleware()})``, outermost first: compression sees the finished page;
    LanguageMiddleware puts the chosen language into it; PageLanguage picks the table Gradio puts into it."""
    from demo.kit.i18n import LanguageMiddleware

    return [Middleware(Compression), Middleware(LanguageMiddleware), Middleware(PageLanguage)]
