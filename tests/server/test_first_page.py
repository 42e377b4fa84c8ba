"""A light first page (issue #53, demo/server/first_page.py), on a small app served as app.py serves it: the page and
its config compressed when the browser accepts it, one translation table per page, the page built once per way of
asking (PageCache), and event streams neither compressed nor held back."""
from __future__ import annotations

import gradio as gr
import pytest

from demo.server import first_page
from demo.server.gradio_inside import PerLanguage

FILLER = " ".join(f"word{i}" for i in range(400))  # each table well over the 1 KB below which nothing is compressed
TABLES = {"en": {"greeting": "Hello", "filler": FILLER}, "zh": {"greeting": "你好", "filler": FILLER + "。"}}
FIRST_TEXTS = {"en": '<div id="plm-first-page"><h2>Read me first</h2></div>',
               "zh": '<div id="plm-first-page"><h2>先读这里</h2></div>'}
# Words a gr.HTML renders itself (demo.kit.i18n.in_every_language makes them for the lessons and preset bars)
TITLE = PerLanguage(en="Try this", zh="试一试")
STEPS = [{"number": 1, "question": PerLanguage(en="Why count pairs?", zh="为什么数词对？")}]


@pytest.fixture(scope="module")
def page_app():
    """A small app served as app.py serves: its middleware and its tables sent one language per page. Its event
    "steps" yields once, then waits for the test to release it before yielding again."""
    import threading

    release = threading.Event()

    def steps():
        yield "first"
        release.wait(60)
        yield "second"

    i18n = gr.I18n(**TABLES)
    with gr.Blocks() as blocks:
        gr.Markdown(i18n("greeting"))
        gr.HTML("", html_template="${title[lang]}", title=TITLE, steps=STEPS, lang="en")
        out = gr.Textbox()
        gr.Button("go").click(steps, None, out, api_name="steps", api_description=FILLER)  # /gradio_api/info > 1 KB
    blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True, i18n=first_page.one_language(i18n),
                  app_kwargs={"middleware": first_page.middleware(FIRST_TEXTS)})
    blocks.release = release
    try:
        yield blocks
    finally:
        release.set()
        blocks.close()


def fetch(url: str, **headers) -> tuple[str | None, bytes]:
    """(content-encoding, the body decompressed) for a GET with these headers, read off the socket as sent."""
    import httpx

    with httpx.Client(timeout=60) as client, client.stream("GET", url, headers=headers) as response:
        body = b"".join(response.iter_raw())
    encoding = response.headers.get("content-encoding")
    return encoding, _decompress(encoding, body)


def _decompress(encoding: str | None, body: bytes) -> bytes:
    import gzip

    import brotli

    return {"br": brotli.decompress, "gzip": gzip.decompress, None: bytes}[encoding](body)


def page_config(html: bytes) -> dict:
    import json
    import re

    return json.loads(re.search(rb"window\.gradio_config = (.*?);</script>", html, re.S).group(1))


def test_the_page_and_its_config_are_compressed_when_the_browser_accepts_it(page_app):
    url = page_app.local_url
    for path in ("", "config"):
        assert fetch(url + path, **{"accept-encoding": "gzip, deflate, br, zstd"})[0] == "br"  # Chromium's header
        assert fetch(url + path, **{"accept-encoding": "gzip"})[0] == "gzip"
        plain, body = fetch(url + path, **{"accept-encoding": "identity"})
        assert plain is None and fetch(url + path, **{"accept-encoding": "br"})[1] == body  # the same bytes
        assert fetch(url + path, **{"accept-encoding": "br;q=0, gzip;q=0.5"})[0] == "gzip"  # q=0 refuses br
    # a JSON API answer without a file extension: Starlette's gzip
    encoding, info = fetch(url + "gradio_api/info", **{"accept-encoding": "gzip, br"})
    assert encoding == "gzip" and b'"/steps"' in info and len(info) > first_page.COMPRESS_FROM_BYTES
    # Gradio's own middleware (outside ours) still does the files, by extension: Brotli, not our gzip before it. If
    # an upgrade stops it compressing them, or starts on the page, these and the lines above say so.
    import re

    script = re.search(rb'src="\./(assets/index-[^"]+\.js)"', fetch(url)[1]).group(1).decode()
    assert fetch(url + script, **{"accept-encoding": "gzip, br"})[0] == "br"
    assert fetch(url + script, **{"accept-encoding": "gzip"})[0] == "gzip"


@pytest.mark.parametrize("headers, lang", [({"accept-language": "zh-CN,zh;q=0.9"}, "zh"),
                                           ({"accept-language": "en-US,en;q=0.9"}, "en"),
                                           ({"accept-language": "zh-CN", "cookie": "plm_lang=en"}, "en"),
                                           ({"accept-language": "en", "cookie": "plm_lang=zh"}, "zh"),
                                           ({}, "en")])
def test_the_page_and_its_config_carry_only_the_learners_table(page_app, headers, lang):
    """Reaches inside Gradio (demo/first_page.OneLanguage): if this fails after a Gradio upgrade, check that
    ``I18n.translations_dict`` is still what ``Blocks.get_config_file`` stores in the app's config and what the
    /config route sends, and that the page route still deep-copies the stored config (``get_page_config``)."""
    import json

    url = page_app.local_url
    _, html = fetch(url, **headers, **{"accept-encoding": "br"})
    assert page_config(html)["i18n_translations"] == {lang: TABLES[lang]}
    _, config = fetch(url + "config", **headers, **{"accept-encoding": "gzip"})
    assert json.loads(config)["i18n_translations"] == {lang: TABLES[lang]}
    # Gradio's front end is told the same language (it reads navigator.language), so it looks in that one table
    assert f'const lang = "{"zh-CN" if lang == "zh" else "en"}"'.encode() in html.split(b"</head>")[0]
    # the app's own config still holds every table (the next page may be in the other language)
    assert sorted(page_app.config["i18n_translations"]) == ["en", "zh"]


@pytest.mark.parametrize("headers, lang", [({"accept-language": "zh-CN,zh;q=0.9"}, "zh"),
                                           ({"accept-language": "zh-CN", "cookie": "plm_lang=en"}, "en"),
                                           ({}, "en")])
def test_the_words_a_page_renders_itself_are_in_the_learners_language_only(page_app, headers, lang):
    """demo/server/gradio_inside.PerLanguage: a gr.HTML's props in every language reach a page and /config in its
    learner's language only (the page's script reads that language), nested in lists and dicts too; the app's own
    config keeps them all. If this fails after a Gradio upgrade, check that the page and /config routes still
    deep-copy the stored config (``get_page_config``) and that a gr.HTML still keeps its props as given."""
    import json

    def props(config: dict) -> dict:
        return next(c["props"]["props"] for c in config["components"] if c["type"] == "html")  # a gr.HTML's own

    url = page_app.local_url
    from_page = props(page_config(fetch(url, **headers, **{"accept-encoding": "br"})[1]))
    from_config = props(json.loads(fetch(url + "config", **headers, **{"accept-encoding": "gzip"})[1]))
    for shown in (from_page, from_config):
        assert shown["title"] == {lang: TITLE[lang]}
        assert shown["steps"] == [{"number": 1, "question": {lang: STEPS[0]["question"][lang]}}]
    stored = props(page_app.config)
    assert stored["title"] == {"en": "Try this", "zh": "试一试"} and sorted(stored["steps"][0]["question"]) == ["en", "zh"]


@pytest.mark.parametrize("query", ["", "?class=AB12CD", "?deep_link=x"])
@pytest.mark.parametrize("headers, lang", [({"accept-language": "zh-CN,zh;q=0.9"}, "zh"),
                                           ({"accept-language": "zh-CN", "cookie": "plm_lang=en"}, "en")])
def test_a_page_opened_without_a_link_carries_the_first_text_in_the_learners_language(page_app, headers, lang, query):
    """demo/server/first_page.PageWords: the text sits in the body right before Gradio's <gradio-app>, once, in the
    language the page's table is in; compressed or not, the page is the same."""
    html = fetch(page_app.local_url + query, **headers, **{"accept-encoding": "br"})[1]
    head, body = html.split(b"</head>")
    mine = FIRST_TEXTS[lang].encode()
    assert body.count(b'id="plm-first-page"') == 1 and body.index(mine) + len(mine) == body.index(b"<gradio-app")
    assert b"plm-first-page" not in head and page_config(html)["i18n_translations"] == {lang: TABLES[lang]}
    assert fetch(page_app.local_url + query, **headers, **{"accept-encoding": "identity"})[1] == html


@pytest.mark.parametrize("query", ["?tab=ngram", "?tab=overview&preset=x", "?tour=3", "?view=a&tab=qa", "?x=1&tab="])
def test_a_page_opened_by_a_link_elsewhere_carries_no_first_text(page_app, query):
    """A link opens another tab, a tour stop or a saved view: the Overview's text would show the wrong screen."""
    html = fetch(page_app.local_url + query, **{"accept-encoding": "gzip"})[1]
    assert b"<gradio-app" in html and b"plm-first-page" not in html


def test_a_page_s_table_holds_the_needed_keys_only_and_sees_keys_added_while_the_app_is_built():
    """OneLanguage(needed=…): the app passes demo.kit.i18n.LABELLED, the keys its labels use, a set that grows while
    the app is built; each table is filtered when a page (or the config stored at launch) is made."""
    import copy

    needed = {"greeting"}
    tables = first_page.one_language(gr.I18n(**TABLES), needed)
    stored = tables.translations_dict  # at launch: no page language
    assert stored == {"en": {"greeting": "Hello"}, "zh": {"greeting": "你好"}}
    needed.add("filler")
    token = first_page.PAGE_LANGUAGE.set("zh")
    try:
        assert copy.deepcopy(stored) == {"zh": TABLES["zh"]} == tables.translations_dict
    finally:
        first_page.PAGE_LANGUAGE.reset(token)
    assert first_page.one_language(gr.I18n(**TABLES)).translations_dict == TABLES  # nothing named: every key


def test_a_page_is_built_once_per_way_of_asking_then_served_from_memory(page_app, monkeypatch):
    """demo/server/first_page.PageCache. Counts Gradio's page renders through ``gradio.routes.templates``, the
    Jinja2Templates instance its page route calls (if a Gradio upgrade renames it, this test says so)."""
    import uuid

    from gradio import routes

    assert hasattr(routes, "templates"), "gradio.routes no longer has its module-level `templates`"
    rendered = []
    render = routes.templates.TemplateResponse
    monkeypatch.setattr(routes.templates, "TemplateResponse",
                        lambda *args, **kwargs: rendered.append(1) or render(*args, **kwargs))
    url, probe = page_app.local_url, f"?probe={uuid.uuid4().hex}"
    chromium = {"accept-encoding": "gzip, deflate, br, zstd", "accept-language": "en-US"}
    first = fetch(url + probe, **chromium)
    assert fetch(url + probe, **chromium) == first and len(rendered) == 1  # the second from memory, the same bytes
    assert first[0] == "br" and page_config(first[1])["i18n_translations"] == {"en": TABLES["en"]}
    chinese = fetch(url + probe, **{**chromium, "accept-language": "zh-CN"})
    assert page_config(chinese[1])["i18n_translations"] == {"zh": TABLES["zh"]} and len(rendered) == 2
    assert fetch(url + probe, **{**chromium, "accept-encoding": "gzip"})[0] == "gzip" and len(rendered) == 3
    proxied = fetch(url + probe, **chromium, **{"x-forwarded-host": "school.example", "x-forwarded-proto": "https"})
    assert len(rendered) == 4 and proxied != first  # another address: Gradio's URLs are built from it
    fetch(url + probe, **chromium, authorization="Basic eDp5")
    fetch(url + probe, **chromium, authorization="Basic eDp5")
    assert len(rendered) == 6  # with credentials: never from memory
    monkeypatch.setattr(first_page, "PAGES_KEPT", 2)
    for other in ("a", "b", "c"):
        fetch(url + probe + other, **chromium)
    assert len(rendered) == 9
    fetch(url + probe + "c", **chromium)
    fetch(url + probe + "a", **chromium)  # the least recently asked: dropped
    assert len(rendered) == 10


def test_launch_s_check_of_its_own_server_is_answered_without_building_the_page(page_app, monkeypatch):
    """launch() asks its own server once whether the page answers (a HEAD, which Gradio answers by building the whole
    page, with a 3 s timeout) and refuses to start when it does not. PageCache answers a HEAD of the page without
    building it: with a kept page, with that page's headers; before one, a bare 200. A second app whose page takes 4 s
    to build still starts; without the HEAD answer it fails with "localhost is not accessible"."""
    import asyncio

    import httpx
    from gradio import routes
    from starlette.middleware import Middleware

    rendered = []
    render = routes.templates.TemplateResponse
    monkeypatch.setattr(routes.templates, "TemplateResponse",
                        lambda *args, **kwargs: rendered.append(1) or render(*args, **kwargs))
    url, chromium = page_app.local_url + "?head-probe", {"accept-encoding": "br", "accept-language": "en-US"}
    head = httpx.head(url, headers=chromium, timeout=60)
    assert head.status_code == 200 and head.content == b"" and rendered == []  # no page kept yet: a bare 200
    with httpx.Client(timeout=60) as client, client.stream("GET", url, headers=chromium) as got:
        body = b"".join(got.iter_raw())
    head = httpx.head(url, headers=chromium, timeout=60)
    assert len(rendered) == 1 and head.content == b""  # the HEAD after the GET: the kept page's headers
    assert head.headers["content-encoding"] == "br" and int(head.headers["content-length"]) == len(body)

    class SlowPage:  # the page takes longer to build than launch() waits
        def __init__(self, app):
            self.app = app

        async def __call__(self, scope, receive, send):
            if scope["type"] == "http" and scope.get("path") == "/":
                await asyncio.sleep(4)
            await self.app(scope, receive, send)

    with gr.Blocks() as slow:
        gr.Markdown("slow")
    slow.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True,
                app_kwargs={"middleware": [first_page.middleware()[0], Middleware(SlowPage)]})  # PageCache outside
    try:
        assert httpx.get(slow.local_url, timeout=60).status_code == 200
    finally:
        slow.close()


def test_an_event_stream_is_neither_compressed_nor_held_back(page_app):
    """An event's updates reach the browser one by one: the first arrives while the handler still waits, and the
    stream goes uncompressed even to a client that accepts br and gzip."""
    import json

    import httpx

    url = page_app.local_url
    headers = {"accept-encoding": "gzip, deflate, br, zstd"}
    with httpx.Client(timeout=60, headers=headers) as client:
        event_id = client.post(url + "gradio_api/call/steps", json={"data": []}).json()["event_id"]
        with client.stream("GET", f"{url}gradio_api/call/steps/{event_id}") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert "content-encoding" not in stream.headers
            lines = stream.iter_lines()
            seen = []
            for line in lines:  # the first update arrives while the handler is held
                if line.startswith("data:") and "first" in line:
                    break
                seen.append(line)
            else:
                pytest.fail(f"no first update before the handler was released: {seen}")
            assert not page_app.release.is_set()
            page_app.release.set()
            rest = [line for line in lines if line.startswith("data:")]
    assert json.loads(rest[-1][len("data:"):]) == ["second"]
