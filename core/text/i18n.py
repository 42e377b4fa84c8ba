"""The translation tables (assets/i18n/en.yaml and zh.yaml) and the learner's language for the current call.

Gradio-free, so that core's error messages are keys into the same tables the UI uses: ``UserInputError("ngram.
empty_corpus", n=3)`` is rendered in the learner's language where it is shown (demo.server.handlers.friendly_errors).

``text(key, **fields)`` without a language uses the language of the event being handled: friendly_errors sets it
from the request (the 中文/English toggle's cookie, else the browser's Accept-Language) for the length of the call.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
import string
from functools import lru_cache
from http.cookies import CookieError, SimpleCookie

import yaml

from core.loading.paths import ASSETS_DIR

LANGUAGES = ("en", "zh")
DEFAULT_LANGUAGE = "en"
COOKIE = "plm_lang"  # set by the header's 中文/English toggle (demo/kit/i18n.py TOGGLE_JS)
I18N_DIR = ASSETS_DIR / "i18n"

_CURRENT = contextvars.ContextVar("plm_language", default=DEFAULT_LANGUAGE)


def _flatten(tree: dict, prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in (tree or {}).items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, dotted + "."))
        else:
            flat[dotted] = str(value)
    return flat


@lru_cache(maxsize=len(LANGUAGES))  # one table per language
def table(lang: str) -> dict[str, str]:
    """Every string of one language, by dotted key ("tabs.ngram")."""
    if lang not in LANGUAGES:
        raise KeyError(f"unknown language {lang!r}; one of {LANGUAGES}")
    with open(I18N_DIR / f"{lang}.yaml", encoding="utf-8") as handle:
        # libyaml's C loader when the wheel has it: the pure-Python one takes ~0.5 s of the cold start for both tables
        return _flatten(yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {})


def placeholders(template: str) -> set[str]:
    """The {named} fields a string formats (the same set must appear in every language)."""
    return {field for _, field, _, _ in string.Formatter().parse(template) if field}


def current_language() -> str:
    """The language of the event being handled ("en" outside any event)."""
    return _CURRENT.get()


@contextlib.contextmanager
def using_language(lang: str):
    """Make ``lang`` the current language inside the block (demo.server.handlers.friendly_errors does this per call)."""
    token = _CURRENT.set(lang if lang in LANGUAGES else DEFAULT_LANGUAGE)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def text(key: str, lang: str | None = None, **fields) -> str:
    """The string for ``key`` in ``lang`` (default: the current call's language; English if unknown), with
    ``fields`` filled in."""
    lang = lang or current_language()
    template = table(lang if lang in LANGUAGES else DEFAULT_LANGUAGE)[key]
    return template.format(**fields) if fields else template


_QUALITY = re.compile(r"^\s*([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9.]+))?\s*$")


def preferred_language(accept_language: str | None) -> str:
    """The first of our languages in an Accept-Language header, by quality ("zh-CN,zh;q=0.9,en;q=0.8" → "zh")."""
    ranked = []
    for position, part in enumerate((accept_language or "").split(",")):
        match = _QUALITY.match(part)
        if not match:
            continue
        try:
            quality = float(match.group(2)) if match.group(2) is not None else 1.0
        except ValueError:
            continue
        ranked.append((-quality, position, match.group(1).split("-")[0].lower()))
    for _, _, primary in sorted(ranked):
        if primary in LANGUAGES:
            return primary
    return DEFAULT_LANGUAGE


def language_of(request) -> str:
    """The learner's language for this request (anything with ``headers``, such as a gr.Request): the header
    toggle's cookie wins over the browser's Accept-Language. No request: the language of the event being handled
    (demo.server.serving sets it for every event from the event's request), so a handler Gradio calls without its
    request, or one a preset calls, keeps its learner's language."""
    if request is None:
        return current_language()
    headers = getattr(request, "headers", None) or {}
    try:
        cookie = SimpleCookie(headers.get("cookie", "") or "")
    except CookieError:
        cookie = SimpleCookie()
    chosen = cookie.get(COOKIE)
    if chosen is not None and chosen.value in LANGUAGES:
        return chosen.value
    return preferred_language(headers.get("accept-language"))
