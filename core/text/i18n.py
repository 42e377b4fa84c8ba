"""The translation tables (assets/i18n/en.yaml and zh.yaml) and the learner's language for the current call.

Gradio-free, so that core's error messages are keys into the same tables the UI uses: ``UserInputError("ngram.
empty_corpus", n=3)`` is rendered in the learner's language where it is shown (demo.server.handlers.friendly_errors).

``text(key, **fields)`` without a language uses the language of the event being handled: friendly_errors sets it
from the request (the 中文/English toggle's cookie, else the browser's Accept-Language) for the length of the call.
"""
from __future__ import annotations

import contextlib
import contextvars
import string
from functools import lru_cache

import yaml

from core.loading.paths import ASSETS_DIR

LANGUAGES = ("en", "zh")
DEFAULT_LANGUAGE = "en"
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
