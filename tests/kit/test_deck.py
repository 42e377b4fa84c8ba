"""The teacher's deck file (issue #54, demo/kit/deck.py), read back with python-pptx: the slides, their titles, captions,
links and notes, the East Asian face of every run, and the caps on what a browser may upload."""
from __future__ import annotations

import base64
import io

import pytest
from PIL import Image
from pptx import Presentation
from pptx.oxml.ns import qn

from core.text.errors import UserInputError
from core.text.i18n import text
from demo.kit import deck


def png(width: int = 320, height: int = 180, colour: str = "white") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, "PNG")
    return out.getvalue()


def slides(lang: str) -> list[deck.Slide]:
    return [deck.Slide("注意力 · 一步一步" if lang == "zh" else "Attention · step by step",
                       caption="输入：我 爱 你  ·  设置：默认值" if lang == "zh" else "Input: thinking machines",
                       notes="看注意力的权重（§8.3）" if lang == "zh" else "Look at the weights (§8.3)",
                       image=png(1600, 900), link="?tab=attention&view=steps&lang=" + lang),
            deck.Slide("计数" if lang == "zh" else "Counts", caption="词对计数" if lang == "zh" else "pair counts",
                       table=[["w1", "w2", "count"], ["的", "词性", "2"], ["的", "磁性", "1"]]),
            deck.Slide("Tall figure", image=png(400, 800))]


def texts(slide) -> list[str]:
    return [shape.text_frame.text for shape in slide.shapes if shape.has_text_frame]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_deck_holds_title_slides_in_order_and_closing(lang):
    made = slides(lang)
    presentation = Presentation(io.BytesIO(deck.build(made, lang, link="https://example.org/plm/")))
    pages = list(presentation.slides)
    assert len(pages) == len(made) + 2
    assert pages[0].shapes.title.text_frame.text == text("deck.title", lang)
    assert text("deck.subtitle", lang, count=3) in texts(pages[0])
    for page, slide in zip(pages[1:], made):
        assert page.shapes.title.text_frame.text == slide.title
        assert page.has_notes_slide == bool(slide.notes)
        if slide.notes:
            assert page.notes_slide.notes_text_frame.text == slide.notes
        body = "\n".join(texts(page))
        assert slide.caption in body
    # the link back to the live view is absolute, against the app's address
    links = [run.hyperlink.address for shape in pages[1].shapes if shape.has_text_frame
             for paragraph in shape.text_frame.paragraphs for run in paragraph.runs if run.hyperlink.address]
    assert links == [f"https://example.org/plm/?tab=attention&view=steps&lang={lang}"]
    closing = pages[-1]
    assert closing.shapes.title.text_frame.text == text("deck.closing_title", lang)
    assert "https://example.org/plm/" in "\n".join(texts(closing))


def test_figures_are_pictures_at_16_9_and_tables_are_real_tables():
    presentation = Presentation(io.BytesIO(deck.build(slides("zh"), "zh")))
    assert (presentation.slide_width, presentation.slide_height) == (deck.WIDTH, deck.HEIGHT)
    assert abs(presentation.slide_width / presentation.slide_height - 16 / 9) < 0.01
    figure, table, tall = list(presentation.slides)[1:4]
    [picture] = [s for s in figure.shapes if s.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE
    assert abs(picture.width / picture.height - 16 / 9) < 0.01
    assert picture.left + picture.width / 2 == pytest.approx(deck.WIDTH / 2, abs=2)
    [tall_picture] = [s for s in tall.shapes if s.shape_type == 13]
    assert tall_picture.width / tall_picture.height == pytest.approx(0.5, abs=0.01)  # its own aspect, kept
    assert tall_picture.top + tall_picture.height <= deck.HEIGHT - deck.CAPTION_HEIGHT
    [grid] = [s for s in table.shapes if s.has_table]
    cells = [[cell.text for cell in row.cells] for row in grid.table.rows]
    assert cells == [["w1", "w2", "count"], ["的", "词性", "2"], ["的", "磁性", "1"]]


def test_every_run_names_an_east_asian_face_and_the_theme_one_per_script():
    data = deck.build(slides("zh"), "zh", link="https://example.org/")
    presentation = Presentation(io.BytesIO(data))
    runs = [run for slide in presentation.slides for shape in slide.shapes if shape.has_text_frame
            for paragraph in shape.text_frame.paragraphs for run in paragraph.runs]
    runs += [run for slide in presentation.slides for shape in slide.shapes if shape.has_table
             for row in shape.table.rows for cell in row.cells for paragraph in cell.text_frame.paragraphs
             for run in paragraph.runs]
    assert len(runs) > 15
    for run in runs:
        properties = run._r.find(qn("a:rPr"))
        assert properties.find(qn("a:ea")).get("typeface") == deck.EAST_ASIAN_FONT
        assert properties.get("lang") == "zh-CN"
        names = [child.tag for child in properties]
        assert names.index(qn("a:latin")) + 1 == names.index(qn("a:ea"))  # the schema's order
    master = presentation.slide_masters[0]
    theme = next(rel.target_part for rel in master.part.rels.values() if rel.reltype.endswith("/theme")).blob
    assert 'script="Hans" typeface="微软雅黑"'.encode() in theme
    assert f'<a:ea typeface="{deck.EAST_ASIAN_FONT}"/>'.encode() in theme


def test_a_long_table_is_cut_and_says_so():
    rows = [["a", "b"]] + [[str(i), str(i * i)] for i in range(40)]
    page = list(Presentation(io.BytesIO(deck.build([deck.Slide("T", table=rows)], "en"))).slides)[1]
    [grid] = [s for s in page.shapes if s.has_table]
    assert len(grid.table.rows) == deck.MAX_TABLE_ROWS + 1
    assert text("deck.table_cut", "en", rows=deck.MAX_TABLE_ROWS, columns=deck.MAX_TABLE_COLUMNS) in texts(page)


def upload(**fields) -> dict:
    return {"title": "A", "caption": "c", "notes": "n", **fields}


def test_upload_reads_data_urls_and_rows():
    image = "data:image/png;base64," + base64.b64encode(png()).decode()
    [figure, table] = deck.slides_from_upload([upload(image=image), upload(table=[["x", 1], ["y", 2]])])
    assert figure.image == png() and figure.table is None
    assert table.table == [["x", "1"], ["y", "2"]] and table.image is None


@pytest.mark.parametrize("items, key", [
    ("not a list", "deck.bad_upload"),
    ([], "deck.empty"),
    ([upload()] * (deck.MAX_SLIDES + 1), "deck.too_many"),
    ([42], "deck.bad_upload"),
    ([upload(title=["no"])], "deck.bad_upload"),
    ([upload(image="data:image/png;base64,!!!not base64")], "deck.bad_upload"),
    ([upload(image=base64.b64encode(b"GIF89a" + b"\0" * 20).decode())], "deck.bad_upload"),  # not a PNG
    ([upload(image="A" * (deck.MAX_IMAGE_BYTES * 2))], "deck.image_too_big"),
    ([upload(table="x")], "deck.bad_upload"),
    ([upload(table=[1, 2])], "deck.bad_upload"),
])
def test_bad_uploads_get_one_clear_message_in_both_languages(items, key):
    with pytest.raises(UserInputError) as raised:
        deck.slides_from_upload(items)
    assert raised.value.key == key
    for lang in ("en", "zh"):
        message = raised.value.message(lang)
        assert message and "{" not in message and "Traceback" not in message
    assert raised.value.message("zh") != raised.value.message("en")


def test_long_text_is_capped():
    [slide] = deck.slides_from_upload([upload(title="x" * 10_000, caption="y" * 10_000, notes="z" * 10_000)])
    assert (len(slide.title), len(slide.caption), len(slide.notes)) == (deck.MAX_TITLE, deck.MAX_CAPTION,
                                                                        deck.MAX_NOTES)
