"""The teacher's deck (issue #54): slides as a PowerPoint file (.pptx), written with python-pptx.

    from demo.kit import deck

    slides = [deck.Slide("Attention, step by step", caption="Input: …  Model: …",
                         notes="What to look at: … (§8.3)", image=png_bytes),                       # a figure, exported by plotly in the browser
              deck.Slide("Counts", table=[["w1", "w2", "count"], ["我", "是", "3"]])]   # a table, as a real table
    data = deck.build(slides, "zh", link="https://…/")           # the .pptx file's bytes

What a deck holds: a title slide, the slides in order, and one closing slide that names the app and its link. A slide
is its view's name (the slide's title, a real title placeholder: outlines and screen readers list it), the figure or
table at 16:9 in the middle, a caption under it saying what made it (input, model, settings, seed) and, when the
slide came from a view, a link that reopens that view as it was (demo/kit/state_links.py); its speaker notes say what to
look at and the seed §.

Why python-pptx: a well-kept library (MIT, since 2012, one maintainer team; the format's reference implementation
in Python), on the server, so the first page carries no JavaScript for decks at all; slide text stays real text.

Chinese: every run names an East Asian typeface (``<a:ea typeface="Microsoft YaHei">``, shipped with Office on
Windows and macOS) and the theme's font scheme names one per script ("Hans": 微软雅黑, "Hant": 微軟正黑體), so
PowerPoint, Keynote and Google Slides pick a CJK face. LibreOffice, given a face it lacks, falls back glyph by glyph
to an installed CJK font (WenQuanYi Micro Hei in the tests: tests/test_deck_libreoffice.py reads it in the PDF).

Bad uploads are :class:`core.text.errors.UserInputError` with keys in the ``deck`` section of assets/i18n.
This module does not import gradio: the route (demo/deck_route.py) and the tests call it directly.
"""
from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass, field
from typing import Sequence

from lxml import etree
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.text import MSO_ANCHOR, PP_ALIGN
from pptx.oxml.ns import qn
from pptx.util import Emu, Inches, Pt

from core.text.errors import UserInputError
from core.text.i18n import text

LATIN_FONT = "Arial"
EAST_ASIAN_FONT = "Microsoft YaHei"  # Office's CJK UI face on Windows and macOS; others fall back (theme, below)
SCRIPT_FONTS = {"Hans": "微软雅黑", "Hant": "微軟正黑體", "Jpan": "Yu Gothic", "Hang": "Malgun Gothic"}
INK = RGBColor(0x1E, 0x29, 0x3B)  # slate-800, as the figures' text
MUTED = RGBColor(0x47, 0x55, 0x69)  # slate-600
ACCENT = RGBColor(0x1D, 0x4E, 0xD8)  # blue-700, the app's primary colour

WIDTH, HEIGHT = Inches(13.333), Inches(7.5)  # 16:9, PowerPoint's widescreen
MARGIN = Inches(0.45)
TITLE_HEIGHT = Inches(0.85)
CAPTION_HEIGHT = Inches(0.95)

# Caps on what a deck may hold (a browser's upload, demo/deck_route.py): a lecture's worth, and no more.
MAX_SLIDES = 60
MAX_IMAGE_BYTES = 2_500_000  # one PNG; plotly's 3200×1800 export of a dense heatmap is ~0.6 MB
MAX_TITLE = 200
MAX_CAPTION = 1200
MAX_NOTES = 4000
MAX_TABLE_ROWS, MAX_TABLE_COLUMNS, MAX_CELL = 16, 10, 60  # a table bigger than this is cut, and says so
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass
class Slide:
    """One content slide: ``title`` (the view's name), a figure (``image``: PNG bytes) or a ``table`` (rows of
    strings, the first is the header), a ``caption`` (what made it), speaker ``notes`` and a ``link`` back to the
    live view (absolute or relative to the deck's app link)."""
    title: str
    caption: str = ""
    notes: str = ""
    image: bytes | None = None
    table: list[list[str]] | None = None
    link: str = ""
    extra: dict = field(default_factory=dict)


# -- reading a browser's upload -------------------------------------------------------------------------------------

def _string(value, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UserInputError("deck.bad_upload")
    return value[:limit]


def _png(value) -> bytes | None:
    """A data URL or bare base64 PNG (Plotly.toImage's answer), checked to be one."""
    if value in (None, ""):
        return None
    if not isinstance(value, str) or len(value) > MAX_IMAGE_BYTES * 4 // 3 + 100:
        raise UserInputError("deck.image_too_big", megabytes=MAX_IMAGE_BYTES / 1e6)
    body = value.split(",", 1)[1] if value.startswith("data:") else value
    try:
        data = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raise UserInputError("deck.bad_upload") from None
    if not data.startswith(PNG_SIGNATURE):
        raise UserInputError("deck.bad_upload")
    return data


def _table(value) -> list[list[str]] | None:
    if value in (None, []):
        return None
    if not isinstance(value, list) or not all(isinstance(row, list) for row in value):
        raise UserInputError("deck.bad_upload")
    return [[str(cell)[:MAX_CELL] for cell in row[:MAX_TABLE_COLUMNS + 1]] for row in value[:MAX_TABLE_ROWS + 2]]


def slides_from_upload(items) -> list[Slide]:
    """The slides a browser sent (a list of dicts: title, caption, notes, image, table, link), checked and capped;
    a clear :class:`UserInputError` for anything else."""
    if not isinstance(items, list):
        raise UserInputError("deck.bad_upload")
    if not items:
        raise UserInputError("deck.empty")
    if len(items) > MAX_SLIDES:
        raise UserInputError("deck.too_many", count=len(items), limit=MAX_SLIDES)
    slides = []
    for item in items:
        if not isinstance(item, dict):
            raise UserInputError("deck.bad_upload")
        slides.append(Slide(title=_string(item.get("title"), MAX_TITLE),
                            caption=_string(item.get("caption"), MAX_CAPTION), notes=_string(item.get("notes"), MAX_NOTES), image=_png(item.get("image")),
                            table=_table(item.get("table")), link=_string(item.get("link"), 2000)))
    return slides


# -- writing ---------------------------------------------------------------------------------------------------------

def _fonts(run, lang: str, size: float, bold: bool = False, colour: RGBColor = INK) -> None:
    """A run's faces: Latin, and the East Asian one a CJK character is drawn with (``a:ea``), and its language."""
    font = run.font
    font.name, font.size, font.bold = LATIN_FONT, Pt(size), bold
    font.color.rgb = colour
    properties = run._r.get_or_add_rPr()
    properties.set("lang", "zh-CN" if lang == "zh" else "en-US")
    properties.set("altLang", "en-US" if lang == "zh" else "zh-CN")
    latin = properties.find(qn("a:latin"))
    east_asian = properties.find(qn("a:ea"))
    if east_asian is None:
        east_asian = etree.SubElement(properties, qn("a:ea"))
        latin.addnext(east_asian)  # a:ea follows a:latin in CT_TextCharacterProperties
    east_asian.set("typeface", EAST_ASIAN_FONT)


def _write(frame, paragraphs: Sequence[str], lang: str, size: float, bold: bool = False, colour: RGBColor = INK,
           align=PP_ALIGN.LEFT) -> None:
    frame.clear()
    frame.word_wrap = True
    for number, line in enumerate(paragraphs):
        paragraph = frame.paragraphs[0] if number == 0 else frame.add_paragraph()
        paragraph.alignment = align
        run = paragraph.add_run()
        run.text = line
        _fonts(run, lang, size, bold, colour)


def _theme_fonts(presentation) -> None:
    """The theme's major and minor fonts name a face per East Asian script: what an app without the run's a:ea face
    uses first."""
    master = presentation.slide_masters[0]
    theme_part = next(rel.target_part for rel in master.part.rels.values() if rel.reltype.endswith("/theme"))
    root = etree.fromstring(theme_part.blob)
    for scheme in root.iter(qn("a:majorFont"), qn("a:minorFont")):
        scheme.find(qn("a:ea")).set("typeface", EAST_ASIAN_FONT)
        for old in scheme.findall(qn("a:font")):
            if old.get("script") in SCRIPT_FONTS:
                scheme.remove(old)
        for script, face in SCRIPT_FONTS.items():
            etree.SubElement(scheme, qn("a:font"), script=script, typeface=face)
    theme_part._blob = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)


def _title(slide, words: str, lang: str) -> None:
    shape = slide.shapes.title
    shape.left, shape.top, shape.width, shape.height = MARGIN, Inches(0.25), WIDTH - 2 * MARGIN, TITLE_HEIGHT
    shape.text_frame.vertical_anchor = MSO_ANCHOR.MIDDLE
    _write(shape.text_frame, [words], lang, 28, bold=True)


def _notes(slide, words: str, lang: str) -> None:
    if words:
        _write(slide.notes_slide.notes_text_frame, words.split("\n"), lang, 12)


def _body_box() -> tuple[int, int, int, int]:
    """The 16:9 box between title and caption, centred: where a figure goes."""
    top = Inches(0.25) + TITLE_HEIGHT
    height = HEIGHT - top - CAPTION_HEIGHT - Inches(0.2)
    width = min(WIDTH - 2 * MARGIN, height * 16 // 9)
    height = width * 9 // 16
    return (WIDTH - width) // 2, top, width, height


def _picture(slide, png: bytes) -> None:
    left, top, width, height = _body_box()
    picture = slide.shapes.add_picture(io.BytesIO(png), left, top)
    scale = min(width / picture.width, height / picture.height)  # keep its own aspect inside the 16:9 box
    picture.width, picture.height = Emu(int(picture.width * scale)), Emu(int(picture.height * scale))
    picture.left = Emu(int((WIDTH - picture.width) // 2))


def _table_shape(slide, rows: list[list[str]], lang: str) -> None:
    cut_rows = len(rows) > MAX_TABLE_ROWS + 1
    cut_columns = any(len(row) > MAX_TABLE_COLUMNS for row in rows)
    rows = [row[:MAX_TABLE_COLUMNS] for row in rows[:MAX_TABLE_ROWS + 1]]
    columns = max(len(row) for row in rows)
    left, top, width, _ = _body_box()
    size = 14 if len(rows) <= 8 else 11
    shape = slide.shapes.add_table(len(rows), columns, Inches(0.6), top, WIDTH - Inches(1.2),
                                   Emu(int(Pt(size * 2.1) * len(rows))))
    for r, row in enumerate(rows):
        for c in range(columns):
            cell = shape.table.cell(r, c)
            _write(cell.text_frame, [row[c] if c < len(row) else ""], lang, size, bold=r == 0,
                   colour=RGBColor(0xFF, 0xFF, 0xFF) if r == 0 else INK)
    if cut_rows or cut_columns:
        note = slide.shapes.add_textbox(Inches(0.6), top - Inches(0.35), WIDTH - Inches(1.2), Inches(0.3))
        _write(note.text_frame, [text("deck.table_cut", lang, rows=MAX_TABLE_ROWS, columns=MAX_TABLE_COLUMNS)],
               lang, 11, colour=MUTED)


def _caption(slide, slide_data: Slide, lang: str, app_link: str) -> None:
    box = slide.shapes.add_textbox(MARGIN, HEIGHT - CAPTION_HEIGHT - Inches(0.1), WIDTH - 2 * MARGIN, CAPTION_HEIGHT)
    frame = box.text_frame
    _write(frame, [slide_data.caption] if slide_data.caption else [], lang, 12, colour=MUTED)
    if slide_data.link:
        paragraph = frame.add_paragraph() if slide_data.caption else frame.paragraphs[0]
        run = paragraph.add_run()
        run.text = text("deck.open_live", lang)
        _fonts(run, lang, 12, colour=ACCENT)
        run.hyperlink.address = absolute(slide_data.link, app_link)


def absolute(link: str, app_link: str) -> str:
    """``link`` (a relative ``?tab=…``) made absolute against the app's own address, for a file opened elsewhere."""
    if link.startswith(("http://", "https://")) or not app_link:
        return link
    return app_link.split("?", 1)[0] + link


def build(slides: Sequence[Slide], lang: str, link: str = "", title: str = "", subtitle: str = "") -> bytes:
    """The .pptx file: a title slide (``title``, default the app's deck title, and ``subtitle``), ``slides`` in order,
    and a closing slide naming the app and ``link`` (its address)."""
    presentation = Presentation()
    presentation.slide_width, presentation.slide_height = WIDTH, HEIGHT
    _theme_fonts(presentation)
    layouts = presentation.slide_layouts
    opening = presentation.slides.add_slide(layouts[0])
    opening.shapes.title.width = opening.placeholders[1].width = WIDTH - 2 * MARGIN
    opening.shapes.title.left = opening.placeholders[1].left = MARGIN
    _write(opening.shapes.title.text_frame, [title or text("deck.title", lang)], lang, 40, bold=True,
           align=PP_ALIGN.CENTER)
    _write(opening.placeholders[1].text_frame, [subtitle or text("deck.subtitle", lang, count=len(slides))], lang, 20,
           colour=MUTED, align=PP_ALIGN.CENTER)
    for slide_data in slides:
        slide = presentation.slides.add_slide(layouts[5])  # "Title Only"
        _title(slide, slide_data.title, lang)
        if slide_data.image is not None:
            _picture(slide, slide_data.image)
        elif slide_data.table:
            _table_shape(slide, slide_data.table, lang)
        _caption(slide, slide_data, lang, link)
        _notes(slide, slide_data.notes, lang)
    closing = presentation.slides.add_slide(layouts[5])
    _title(closing, text("deck.closing_title", lang), lang)
    box = closing.shapes.add_textbox(MARGIN, Inches(2.2), WIDTH - 2 * MARGIN, Inches(3))
    _write(box.text_frame, [text("deck.closing_text", lang)], lang, 22, align=PP_ALIGN.CENTER)
    if link:
        paragraph = box.text_frame.add_paragraph()
        paragraph.alignment = PP_ALIGN.CENTER
        run = paragraph.add_run()
        run.text = link
        _fonts(run, lang, 20, colour=ACCENT)
        run.hyperlink.address = link
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()
