"""demo/kit/i18n.py: both languages complete, the learner's language picked from the toggle or the browser, and the
page served in the toggled language."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.text import i18n as core_i18n
from demo.kit import i18n
from demo.server import first_page

ROOT = Path(__file__).resolve().parents[2]
# Literal keys passed to label("…") / text("…") / t("…") in app.py and demo/: each must exist in the tables.
# (A call inside ``double backticks`` is a docstring's example.)
KEY_CALL = re.compile(r"""(?<!`)\b(?:label|text|t)\(\s*f?["']([a-z_]+\.[a-z_.{}]+)["']""")


def test_both_languages_have_the_same_keys_and_placeholders():
    en, zh = i18n.table("en"), i18n.table("zh")
    assert set(en) == set(zh), f"only in en: {set(en) - set(zh)}; only in zh: {set(zh) - set(en)}"
    for key in en:
        assert i18n.placeholders(en[key]) == i18n.placeholders(zh[key]), key
        assert zh[key].strip(), f"empty 中文 string for {key}"


def test_the_words_we_give_gradios_front_end_are_its_own_keys_its_chinese_table_lacks():
    """demo/kit/i18n.GRADIOS_OWN: each key is one Gradio's front end translates (its English table, built into the
    package) and its zh-CN table has not: so ours reach its UI, and none is kept once Gradio ships its own."""
    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    english = "".join(path.read_text(encoding="utf-8") for path in assets.glob("core-*.js"))
    chinese = "".join(path.read_text(encoding="utf-8") for path in assets.glob("zh-CN-*.js"))
    assert "annotated_image:`Annotated Image`" in english and "使用 Gradio 构建" in chinese  # the tables were read
    for key in i18n.GRADIOS_OWN:
        name = re.escape(key.split(".", 1)[1])
        assert re.search(rf"[{{,]{name}:`", english), f"Gradio's front end has no {key}"
        assert not re.search(rf"[{{,]{name}:`", chinese), f"Gradio's zh-CN table has {key} now: drop ours"
        assert key in i18n.LABELLED and core_i18n.table("zh")[key] != core_i18n.table("en")[key], key


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_bold_phrase_renders_bold(lang):
    """CommonMark (markdown-it-py, as the browser's Markdown renders it) closes ``**`` only where it is right-flanking:
    ``**模型：**在`` (a full-width colon inside, a letter after) stays literal asterisks on the page. Each string is
    rendered with every placeholder filled by a letter, the worst case, and inline code dropped."""
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark").renderInline
    table = i18n.table(lang)
    checked = [key for key, value in table.items() if "**" in value]
    literal = [key for key in checked
               if "**" in re.sub(r"<code>.*?</code>|<[^>]+>", "", render(re.sub(r"\{\w+\}", "X", table[key])))]
    assert len(checked) >= 100 and literal == [], literal


def test_every_key_the_code_uses_exists():
    used = set()
    paths = [ROOT / "app.py", *sorted((ROOT / "demo").rglob("*.py"))]
    assert len(paths) >= 55, f"the scan read {len(paths)} files: demo/'s packages were not walked"
    for path in paths:
        used |= set(KEY_CALL.findall(path.read_text(encoding="utf-8")))
    assert used, "the key scan found nothing: the pattern is broken"
    table = i18n.table("en")
    for key in used:
        if "{" in key:  # f"tabs.{name}": every tab module must have its title
            prefix = key.split("{")[0]
            assert any(k.startswith(prefix) for k in table), key
        else:
            assert key in table, key
    import app

    for module in app.TABS:
        assert f"tabs.{module.__name__.rsplit('.', 1)[-1]}" in table


def test_text_fills_fields_in_each_language():
    assert i18n.text("errors.at_least", "en", name="Order n", minimum=1) == "Order n must be at least 1."
    assert i18n.text("errors.at_least", "zh", name="阶数 n", minimum=1) == "阶数 n至少为 1。"
    assert i18n.text("tabs.attention", "xx") == "Attention"  # an unknown language falls back to English


@pytest.mark.parametrize("header, expected", [
    ("zh-CN,zh;q=0.9,en;q=0.8", "zh"),
    ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
    ("fr-FR,fr;q=0.9,zh-TW;q=0.5", "zh"),  # the first of OUR languages, by quality
    ("de;q=0.9, en;q=0.1, zh;q=0.5", "zh"),
    ("fr", "en"), ("", "en"), (None, "en"), ("zh;q=abc, ,;;,en", "en"),
])
def test_accept_language(header, expected):
    assert core_i18n.preferred_language(header) == expected


def request(**headers):
    return SimpleNamespace(headers=headers)


def test_the_toggle_cookie_wins_over_the_browser():
    assert core_i18n.language_of(request(**{"accept-language": "zh-CN"})) == "zh"
    assert core_i18n.language_of(request(**{"accept-language": "zh-CN", "cookie": "a=1; plm_lang=en"})) == "en"
    assert core_i18n.language_of(request(**{"accept-language": "en", "cookie": "plm_lang=zh"})) == "zh"
    assert core_i18n.language_of(request(**{"accept-language": "en", "cookie": "plm_lang=klingon"})) == "en"
    assert core_i18n.language_of(request(cookie='bad"cookie;;=')) == "en"
    assert core_i18n.language_of(None) == "en"  # outside any event
    with core_i18n.using_language("zh"):  # inside one: the event's language (demo.server.serving set it)
        assert core_i18n.language_of(None) == "zh"
        assert core_i18n.language_of(request(**{"accept-language": "en"})) == "en"


def test_header_and_status_follow_the_request_language():
    import app

    intro, badge, toggle = app.page_language(request(**{"accept-language": "zh-CN"}))
    assert intro == i18n.text("app.intro", "zh") and "设备" in badge and toggle == "中文"
    intro, badge, toggle = app.page_language(request(**{"accept-language": "en"}))
    assert intro.startswith("# PLM Explorer") and "device" in badge and toggle == "English"
    assert "网络" in app.app_status(request(cookie="plm_lang=zh"))


def test_middleware_serves_the_page_in_the_learners_language():
    """The toggle's cookie, else Accept-Language: the front end is told the language whose table the page carries
    (demo/first_page.OneLanguage)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    page = "<!doctype html><html><head><title>t</title></head><body>héllo</body></html>"
    routes = [Route("/", lambda r: HTMLResponse(page)), Route("/config", lambda r: JSONResponse({"a": 1}))]
    client = TestClient(Starlette(routes=routes, middleware=[Middleware(first_page.PageWords)]))

    head = "<!doctype html><html><head>"
    plain = client.get("/", headers={"accept-language": "zh-TW,zh;q=0.9"})  # no cookie: the browser's language
    assert plain.text.startswith(head + "<script>") and '"zh-CN"' in plain.text
    assert plain.text.endswith(page[len(head):])
    assert '"en"' in client.get("/", headers={"accept-language": "fr-FR"}).text  # none of ours: English
    toggled = client.get("/", headers={"cookie": "plm_lang=zh"})
    assert toggled.text.startswith('<!doctype html><html><head><script>') and '"zh-CN"' in toggled.text
    assert toggled.text.endswith(page[len("<!doctype html><html><head>"):])
    assert int(toggled.headers["content-length"]) == len(toggled.content)
    assert '"en"' in client.get("/", headers={"cookie": "plm_lang=en"}).text
    forged = client.get("/", headers={"cookie": "plm_lang=<script>", "accept-language": "en"}).text
    assert forged.count("<script>") == 1 and '"en"' in forged  # only our two languages
    assert client.get("/config", headers={"cookie": "plm_lang=zh"}).json() == {"a": 1}  # other routes untouched


def _zh_request():
    import gradio as gr
    from starlette.requests import Request as StarletteRequest

    scope = {"type": "http", "method": "POST", "path": "/", "query_string": b"",
             "headers": [(b"cookie", b"plm_lang=zh"), (b"accept-language", b"en-US")]}
    return gr.Request(request=StarletteRequest(scope))


@pytest.mark.parametrize("generator", [False, True])
def test_friendly_errors_runs_the_handler_in_the_requests_language(generator):
    """Gradio finds the request parameter friendly_errors adds (special_args), and the handler's text() and our
    errors' messages come out in the cookie's language; without a request, English."""
    import gradio as gr
    from gradio.helpers import special_args

    from core.text.errors import UserInputError
    from demo.server.handlers import friendly_errors

    seen = []

    def order(n):
        seen.append(i18n.text("tabs.attention"))
        raise UserInputError("errors.at_least", name="n", minimum=int(n) + 1)

    def order_steps(n):
        seen.append(i18n.text("tabs.attention"))
        yield n
        raise UserInputError("errors.at_least", name="n", minimum=int(n) + 1)

    handler = friendly_errors(order_steps if generator else order)
    args, *_ = special_args(handler, [1], request=_zh_request())
    assert len(args) == 2, "Gradio did not see the request parameter"

    def run(call_args):
        if generator:
            return list(handler(*call_args))
        return handler(*call_args)

    with pytest.raises(gr.Error) as zh:
        run(args)
    assert zh.value.message == "n至少为 2。" and seen[-1] == "注意力"
    with pytest.raises(gr.Error) as en:
        run([1])
    assert en.value.message == "n must be at least 2." and seen[-1] == "Attention"


def test_the_page_carries_one_table_per_language():
    """Every page load downloads the config with Gradio's tables: one zh table serves zh-CN and zh-TW browsers
    (tests/e2e/test_i18n_browser.py opens both), where four copies made 1.28 MB of a 2.19 MB config."""
    import json

    tables = i18n.I18N.translations
    assert sorted(tables) == ["en", "zh"]
    assert tables["zh"]["tabs.ngram"] == i18n.text("tabs.ngram", "zh") != tables["en"]["tabs.ngram"]
    assert len(json.dumps(tables).encode()) < 600_000
