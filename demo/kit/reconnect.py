"""The page's answer to a server that went away (issue #56 §4): a replica killed or restarted behind nginx
(docs/DEPLOY.md), or a single server restarted. The browser side is assets/reconnect.js; this puts its words, in
both languages, in the <head> (app.py passes :func:`head` to ``launch(head=...)``)."""
from __future__ import annotations


from core.text.i18n import LANGUAGES, text
from demo.kit.scripts import inline_json, script

WORDS = {"lost": "common.reconnect_lost", "moved": "common.reconnect_moved"}


def head() -> str:
    words = {lang: {key: text(name, lang) for key, name in WORDS.items()} for lang in LANGUAGES}
    data = inline_json({"words": words})
    return f"<script>window.plmReconnectConfig = {data};\n{script('reconnect')}</script>"
