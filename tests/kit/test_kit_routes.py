"""The deck's download route (demo/kit/teacher.py, POST /plm-deck): a .pptx for good slides; for a bad upload one clear
message in the learner's language, never a traceback; the upload's size capped before it is read."""
from __future__ import annotations

import base64
import io
import json

import pytest
from pptx import Presentation
from starlette.applications import Starlette
from starlette.testclient import TestClient

from core.text.i18n import text
from demo.kit import teacher as kit
from demo.kit import deck
from tests.kit.test_deck import png


@pytest.fixture(scope="module")
def client():
    return TestClient(Starlette(routes=kit.ROUTES))


def test_good_slides_come_back_as_a_pptx(client):
    image = "data:image/png;base64," + base64.b64encode(png()).decode()
    body = {"lang": "zh", "link": "https://example.org/plm/", "title": "第三讲",
            "slides": [{"title": "注意力", "caption": "输入：我", "notes": "§8", "image": image,
                        "link": "?tab=attention&view=steps&lang=zh"}]}
    answer = client.post(kit.DECK_PATH, content=json.dumps(body))
    assert answer.status_code == 200
    assert answer.headers["content-type"] == kit.PPTX
    assert "plm-explorer-deck.pptx" in answer.headers["content-disposition"]
    slides = list(Presentation(io.BytesIO(answer.content)).slides)
    assert [s.shapes.title.text_frame.text for s in slides] == ["第三讲", "注意力", text("deck.closing_title", "zh")]


@pytest.mark.parametrize("body, key", [
    (b"not json", "deck.bad_upload"),
    (b"\xff\xfe", "deck.bad_upload"),
    (b"[1, 2]", "deck.bad_upload"),
    (json.dumps({"slides": []}).encode(), "deck.empty"),
    (json.dumps({"slides": [{"title": "x", "image": "data:image/png;base64,AAAA"}]}).encode(), "deck.bad_upload"),
    (json.dumps({"slides": [{"title": "x"}] * (deck.MAX_SLIDES + 1)}).encode(), "deck.too_many"),
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_bad_uploads_get_one_message_in_the_learners_language(client, body, key, lang):
    answer = client.post(f"{kit.DECK_PATH}?lang={lang}", content=body)
    assert answer.status_code == 400
    message = answer.json()["message"]
    fields = {"count": deck.MAX_SLIDES + 1, "limit": deck.MAX_SLIDES}
    assert message == text(key, lang, **fields) if key == "deck.too_many" else message == text(key, lang)


def test_an_upload_past_the_cap_is_refused_before_it_is_read(client):
    answer = client.post(f"{kit.DECK_PATH}?lang=zh", content=b"x" * (kit.MAX_UPLOAD_BYTES + 1))
    assert answer.status_code == 413
    assert answer.json()["message"] == text("deck.too_big", "zh", megabytes=kit.MAX_UPLOAD_BYTES / 1e6)


def test_an_unknown_plan_is_refused(client):
    answer = client.get(f"{kit.PLAN_PATH}?kind=everything&lang=en")
    assert answer.status_code == 400 and answer.json()["message"] == text("deck.bad_upload", "en")


def test_the_script_is_served_and_cached(client):
    answer = client.get(kit.SCRIPT.path)
    assert answer.status_code == 200 and "window.plmKit" in answer.text
    assert "max-age" in answer.headers["cache-control"]


def test_a_streamed_upload_without_a_length_is_cut_off_at_the_cap(client):
    chunk = b"x" * 65536
    chunks = (chunk for _ in range(kit.MAX_UPLOAD_BYTES // len(chunk) + 2))  # no content-length: sent in chunks
    answer = client.post(f"{kit.DECK_PATH}?lang=en", content=chunks)
    assert answer.status_code == 413
    assert answer.json()["message"] == text("deck.too_big", "en", megabytes=kit.MAX_UPLOAD_BYTES / 1e6)


def test_every_pages_head_carries_the_kits_words_in_both_languages_and_its_addresses():
    from core.text.i18n import LANGUAGES, table
    from demo.kit.state_links import LINK_LIMIT

    head = kit.head()
    start = head.index("window.plmKitConfig = ") + len("window.plmKitConfig = ")
    config = json.loads(head[start:head.index(";\n", start)])
    assert config["languages"] == list(LANGUAGES) and config["limit"] == LINK_LIMIT
    assert config["deck"] == kit.DECK_PATH.lstrip("/") and config["plan"] == kit.PLAN_PATH.lstrip("/")
    for lang in LANGUAGES:
        assert config["words"][lang] == {key: table(lang)[f"deck.{key}"] for key in kit.WORD_KEYS}
    script_body = head[head.index("<script>") + len("<script>"):head.index("</script>")]
    assert "</" not in script_body  # no word can close the inline script early
