"""The two one-click decks, built the way a teacher builds them and opened by a real client (issue #54 §6).

In Chromium, in English and in 中文: the guided tour's deck and the N-gram tab's "Try this" deck (assets/kit.js: the
server's plan, each figure drawn and exported by plotly.js in the page, the .pptx written by the server). LibreOffice
Impress then converts all four to PDF in one start: each PDF has one page per slide (title, content, closing), each
content page's text (pdftotext) holds its slide's title and caption, and in 中文 its Chinese; the Chinese pages embed
a CJK font. Two pages are rendered to PNG (docs/TEACHERS.md shows them; PLM_DECK_PNG_DIR keeps them for a look)."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from core.text.i18n import text
from tests.e2e.conftest import fresh_page

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
POPPLER = shutil.which("pdftotext") and shutil.which("pdftoppm") and shutil.which("pdffonts")
CJK = re.compile(r"[\u4e00-\u9fff]")
pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def office():
    if not SOFFICE or not POPPLER:
        if os.environ.get("PLM_REQUIRE_E2E") == "1":
            pytest.fail("LibreOffice (soffice) and poppler-utils are required (.ci/run installs them)", pytrace=False)
        pytest.skip("LibreOffice or poppler-utils missing (apt-get install libreoffice-impress poppler-utils)")
    return SOFFICE


def squash(value: str) -> str:
    """Text without its whitespace: pdftotext breaks lines where the slide wraps them."""
    return re.sub(r"\s+", "", value)


def build_deck(browser, served_app, lang: str, kind: str, tab: str, folder: Path) -> Path:
    page = fresh_page(browser, served_app.url, "zh-CN" if lang == "zh" else "en-US", {"width": 1280, "height": 900},
                      cookies={"plm_lang": lang}, wait=False)
    page.set_default_timeout(420_000)
    try:
        page.wait_for_function("() => !!window.plmKit")
        with page.expect_download(timeout=420_000) as download:
            page.evaluate("([kind, tab]) => window.plmKit.oneClick(kind, tab)", [kind, tab])
        path = folder / f"{kind}-{lang}.pptx"
        download.value.save_as(path)
        return path
    finally:
        page.close()


@pytest.mark.slow
# the tour's examples (demo/kit/tour.STOPS) computed once per language, then LibreOffice's one start
@pytest.mark.timeout(1500)
def test_one_click_decks_open_in_libreoffice(browser, served_app, office, tmp_path):
    from pptx import Presentation

    decks = {(kind, lang): build_deck(browser, served_app, lang, kind, "ngram", tmp_path)
             for kind in ("lesson", "tour") for lang in ("en", "zh")}
    subprocess.run([office, "--headless", "--norestore", f"-env:UserInstallation=file://{tmp_path}/profile",
                    "--convert-to", "pdf", "--outdir", str(tmp_path), *map(str, decks.values())],
                   check=True, capture_output=True, timeout=600)
    for (kind, lang), path in decks.items():
        presentation = Presentation(io.BytesIO(path.read_bytes()))
        slides = list(presentation.slides)
        pdf = path.with_suffix(".pdf")
        info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert int(re.search(r"Pages:\s+(\d+)", info).group(1)) == len(slides)
        pages = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True,
                               check=True).stdout.split("\f")
        assert squash(text("deck.closing_title", lang)) in squash(pages[len(slides) - 1])
        content = slides[1:-1]
        # the N-gram lesson has 3 steps; the tour a slide per stop with an example
        assert len(content) >= (3 if kind == "lesson" else 20)
        pictures = 0
        for number, slide in enumerate(content, 2):
            page_text = squash(pages[number - 1])
            title = slide.shapes.title.text_frame.text
            assert squash(title) in page_text, (kind, lang, number, title)
            caption = next(shape.text_frame.paragraphs[0].text for shape in slide.shapes
                           if shape.has_text_frame and shape != slide.shapes.title
                           and shape.text_frame.text.strip() and shape.top > presentation.slide_height // 2)
            assert squash(caption)[:60] in page_text, (kind, lang, number, caption)
            assert slide.notes_slide.notes_text_frame.text.strip()
            picture = any(shape.shape_type == 13 for shape in slide.shapes)
            assert picture or any(shape.has_table for shape in slide.shapes), (kind, lang, number)
            pictures += picture
            if lang == "zh":
                assert CJK.search(pages[number - 1]), (kind, number)
        if kind == "tour":
            assert pictures >= len(content) // 2  # most stops show figures, the rest tables
        if lang == "zh":
            fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
            assert re.search(r"WenQuanYi|Noto.*CJK|Droid.*Fallback", fonts), fonts
    keep = Path(os.environ.get("PLM_DECK_PNG_DIR", tmp_path))
    keep.mkdir(parents=True, exist_ok=True)
    for (kind, lang), page_number in [(("tour", "zh"), 15), (("lesson", "en"), 3)]:
        prefix = keep / f"deck-{kind}-{lang}"
        subprocess.run(["pdftoppm", "-png", "-r", "48", "-f", str(page_number), "-l", str(page_number), "-singlefile",
                        str(decks[(kind, lang)].with_suffix(".pdf")), str(prefix)], check=True, timeout=120)
        assert prefix.with_suffix(".png").stat().st_size > 5_000
