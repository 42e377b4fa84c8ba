"""Figures, tables and Markdown drawn into the page when the app is built: content that is the same for every learner.

A plotly figure (demo/kit/figures.py) reaches the browser only after the page has loaded and asked the server for it, and
plotly.js (a 4.6 MB chunk) must then be fetched and evaluated before it draws. For the Overview, which the page opens, that
was most of the wait between opening the app and seeing anything (benchmarks/first_paint_results.md, run 8). What
never changes (the timeline, the held-out ladder read from its file) is therefore drawn here once, as SVG and HTML in
every language, and shown by a ``gr.HTML`` as soon as Gradio mounts the tab: no request, no plotly.js.

    html = {lang: timeline(steps, title, "overview-timeline", lang) + bars(labels, values, title, "overview-bits", lang,
                  value_title="bits per character") + table(headers, rows, "overview-held-out", lang) ...}
    gr.HTML("", html_template=TEMPLATE, js_on_load=EXPORT_JS, html=html)   # the browser shows its language

The look is demo/kit/figures.py's (colours, fonts, sizes). Like every plotly figure, each figure has a PNG button (slide
width, 3200 px) and an SVG button, and each table a "⬇ CSV" button (UTF-8 with a byte-order mark, as demo/server/handlers.py's);
EXPORT_JS makes the files in the browser. Every text is escaped here; Markdown is rendered with raw HTML off.
"""
from __future__ import annotations

import csv
import io
import math
import re
import unicodedata
from html import escape
from typing import Sequence

from markdown_it import MarkdownIt

from core.text.i18n import text
from demo.kit.figures import (BASE_FONT_SIZE, COLORWAY, FONT_FAMILY, HIGHLIGHT, SLIDE_EXPORT, TITLE_FONT_SIZE,
                          diverging_colours)
from demo.kit.i18n import BROWSER_LANGUAGE_JS
from demo.kit.scripts import script

INK, AXIS, SUBDUED = "#1f2937", "#9ca3af", "#4b5563"  # demo/kit/figures.py's text and axis colours
WIDTH = 1200  # every figure's viewBox width; it scales to the column it sits in
SLIDE_WIDTH = SLIDE_EXPORT["width"] * SLIDE_EXPORT["scale"]  # 3200 px, the plotly figures' PNG width

MARKDOWN = MarkdownIt("commonmark", {"html": False})  # our own tables, but never raw HTML from them

# The browser shows the HTML of its language (the one Gradio's own labels use); a click never re-renders it.
TEMPLATE = "${html[LANGUAGE]}".replace("LANGUAGE", BROWSER_LANGUAGE_JS)
# PNG (slide width, white background), SVG or CSV of the figure or table whose button was clicked.
EXPORT_JS = script("static_export", SLIDE_WIDTH=str(SLIDE_WIDTH))


def markdown(source: str) -> str:
    """Markdown (a translation table's text) as HTML, raw HTML off."""
    return MARKDOWN.render(source)


def markdown_inline(source: str) -> str:
    """One line of Markdown as inline HTML (a table cell, a lesson's question), raw HTML off."""
    return MARKDOWN.renderInline(source)


# ----------------------------------------------------------------------------------------------------------------
# Text measures: the SVG is laid out on the server, so widths are estimated (the browser's fonts differ a little)

_WIDE = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"  # CJK, Hangul and full-width forms
_PIECES = re.compile(f"[{_WIDE}]|[^\\s{_WIDE}]+\\s*|\\s+")  # one wide character, or a word and its spaces


def text_width(value: str, size: float) -> float:
    """Estimated width in px of ``value`` at font ``size``: wide (CJK) characters one em, the others 0.52 em."""
    return sum(size if unicodedata.east_asian_width(ch) in "WF" else 0.52 * size for ch in value)


def wrap(value: str, max_width: float, size: float) -> list[str]:
    """``value`` in lines of at most ``max_width`` px: broken at spaces, or between any two CJK characters."""
    lines, line = [], ""
    for piece in _PIECES.findall(value):
        if line and text_width((line + piece).rstrip(), size) > max_width:
            lines.append(line.rstrip())
            line = piece.lstrip()
        else:
            line += piece
    return [*lines, line.rstrip()] if line.strip() else lines


def nice_ticks(top: float, most: int = 8) -> list[float]:
    """0, step, 2·step, … up to the first tick ≥ ``top``, with step 1, 2, 2.5 or 5 × 10^k and at most ``most``."""
    if top <= 0:
        return [0.0, 1.0]
    power = 10 ** math.floor(math.log10(top / most))
    step = next(power * m for m in (1, 2, 2.5, 5, 10, 20, 25, 50) if top / (power * m) <= most)
    return [round(i * step, 10) for i in range(math.ceil(top / step - 1e-9) + 1)]


# ----------------------------------------------------------------------------------------------------------------
# SVG pieces


def _text(x: float, y: float, value: str, size: float = BASE_FONT_SIZE, anchor: str = "start", fill: str = INK,
          extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{extra}>'
            f"{escape(value)}</text>")


def _svg(height: float, title: str, body: Sequence[str], role: str = "img") -> str:
    """A figure's SVG: the theme's font and white background, its title at the top left (as plotly's). Its <title>
    names it for screen readers; ``role`` is "group" for a figure holding links (an image has no parts to reach)."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height:.0f}" width="100%" role="{role}" '
            f'font-family="{escape(FONT_FAMILY)}" style="display:block;height:auto;background:white">'
            f'<title>{escape(title)}</title><rect width="{WIDTH}" height="{height:.0f}" fill="white"/>'
            + _text(24, 38, title, TITLE_FONT_SIZE) + "".join(body) + "</svg>")


def _figure(svg: str, name: str, lang: str) -> str:
    """A figure with its PNG and SVG buttons (top right, like plotly's modebar)."""
    buttons = "".join(f'<button type="button" class="static-export" data-format="{fmt}" '
                      f'title="{escape(text(key, lang))}">{fmt.upper()}</button>'
                      for fmt, key in (("png", "common.png_button"), ("svg", "common.svg_button")))
    return f'<figure class="static-figure" data-name="{escape(name)}"><div class="static-tools">{buttons}</div>{svg}</figure>'


def timeline(steps: Sequence[tuple[str, str, str, str]], title: str, name: str, lang: str) -> str:
    """Steps along a horizontal line, in order: each (when, name, what it brought, link). Names are links; labels
    alternate above and below the line so that neighbours never overlap, and stay inside the figure at its ends."""
    size, height, line_y, stem = BASE_FONT_SIZE - 1, 420, 230, 64
    margin = 90
    spacing = (WIDTH - 2 * margin) / max(len(steps) - 1, 1)
    body = [f'<line x1="{margin}" y1="{line_y}" x2="{WIDTH - margin}" y2="{line_y}" stroke="{AXIS}" stroke-width="3"/>']
    for i, (when, step, what, link) in enumerate(steps):
        x, above = margin + i * spacing, i % 2 == 0
        lines = [when, *wrap(what, 2 * spacing - 24, size)]
        block = max(text_width(step, size) * 1.08, *(text_width(line, size) for line in lines))
        centre = min(max(x, block / 2 + 12), WIDTH - block / 2 - 12)  # the end labels stay inside the figure
        end = line_y - stem if above else line_y + stem
        body.append(f'<line x1="{x:.1f}" y1="{line_y}" x2="{x:.1f}" y2="{end}" stroke="{AXIS}" stroke-width="1.5"/>')
        body.append(f'<circle cx="{x:.1f}" cy="{line_y}" r="9" fill="{COLORWAY[i % len(COLORWAY)]}" stroke="white" '
                    f'stroke-width="2" data-mark="{escape(step)}"><title>{escape(f"{when}: {step} — {what}")}</title>'
                    f"</circle>")
        rows = len(lines) + 1
        first = end - 8 - (rows - 1) * (size + 4) if above else end + size + 6  # baseline of the name
        name_text = _text(centre, first, step, size, "middle", COLORWAY[0], ' font-weight="bold"')
        body.append(f'<a href="{escape(link)}" target="_self">{name_text}</a>' if link else name_text)
        for row, line in enumerate(lines, 1):
            italic = ' font-style="italic"' if row > 1 else ""
            body.append(_text(centre, first + row * (size + 4), line, size, "middle", SUBDUED if row > 1 else INK,
                              italic))
    return _figure(_svg(height, title, body, role="group"), name, lang)


def bars(labels: Sequence[str], values: Sequence[float], title: str, name: str, lang: str, *, value_title: str,
         highlight: Sequence[bool] | None = None, value_format: str = ".3f") -> str:
    """A horizontal bar chart, first label on top; highlighted bars in the accent colour, each value at its bar's
    end. Each bar carries its value (``data-value``), and its length is proportional to it from a zero baseline."""
    size, row, bar = BASE_FONT_SIZE, 30, 22
    left = 24 + max(text_width(label, size) for label in labels) + 14
    right = 70  # room for the last bar's value
    top = 70
    ticks = nice_ticks(max(values))
    scale = (WIDTH - left - right) / ticks[-1]
    bottom = top + row * len(labels)
    height = bottom + 70
    # A highlighted bar is hatched as well as coloured, so that it stands out without colour (issue #37).
    hatch = f"hatch-{re.sub(r'[^A-Za-z0-9_-]', '-', name)}"
    body = [f'<defs><pattern id="{hatch}" width="8" height="8" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="8" stroke="white" stroke-width="3" '
            f'stroke-opacity="0.6"/></pattern></defs>']
    for tick in ticks:
        x = left + tick * scale
        body.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{bottom}" stroke="#e5e7eb"/>')
        body.append(_text(x, bottom + 22, f"{tick:g}", size - 1, "middle", SUBDUED))
    for i, (label, value) in enumerate(zip(labels, values)):
        y = top + i * row + (row - bar) / 2
        colour = HIGHLIGHT if highlight and highlight[i] else COLORWAY[0]
        body.append(_text(left - 10, y + bar / 2 + size * 0.35, label, size, "end"))
        body.append(f'<rect x="{left}" y="{y:.1f}" width="{value * scale:.2f}" height="{bar}" fill="{colour}" '
                    f'data-mark="{escape(label)}" data-value="{value!r}"><title>{escape(label)}: '
                    f"{format(value, value_format)}</title></rect>")
        if highlight and highlight[i]:
            body.append(f'<rect x="{left}" y="{y:.1f}" width="{value * scale:.2f}" height="{bar}" '
                        f'fill="url(#{hatch})" class="hatch"/>')
        body.append(_text(left + value * scale + 6, y + bar / 2 + size * 0.35, format(value, value_format),
                          size - 1, "start", INK))
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{WIDTH - right}" y2="{bottom}" stroke="{AXIS}"/>')
    body.append(_text(left + (WIDTH - left - right) / 2, bottom + 52, value_title, size, "middle"))
    return _figure(_svg(height, title, body), name, lang)


def table(headers: Sequence[str], rows: Sequence[Sequence], name: str, lang: str,
          markdown_columns: Sequence[int] = ()) -> str:
    """A table (cells escaped, or inline Markdown in ``markdown_columns``) and its "⬇ CSV" button, whose file holds
    the cells as they are (RFC 4180, what demo/server/handlers.py's CSV buttons write)."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows([list(headers), *[[str(cell) for cell in r] for r in rows]])
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(
        f"<td>{markdown_inline(str(cell)) if column in markdown_columns else escape(str(cell))}</td>"
        for column, cell in enumerate(r)) + "</tr>" for r in rows)
    button = (f'<button type="button" class="static-export table-csv" data-format="csv" '
              f'data-csv="{escape(buffer.getvalue()).replace(chr(13), "&#13;")}">'  # an HTML parser drops a bare CR
              f'{escape(text("presets.csv", lang))}</button>')
    return (f'<div class="static-table" data-name="{escape(name)}"><div class="static-table-scroll"><table>'
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{button}</div>")


def coloured_tokens(tokens: Sequence[str], values: Sequence[float], title: str, name: str, lang: str, *,
                    legend: tuple[str, str], marked: int | None = None) -> str:
    """Tokens in reading order, each on a box of the diverging scale (0 white, symmetric about 0), wrapped into
    lines; each box carries its value (``data-value``) and a tooltip. The sign is also written under the box
    (+ / −), so colour never carries it alone. ``marked`` (an index) is outlined: the position being predicted."""
    size, pad, gap, line = BASE_FONT_SIZE, 8, 6, 58
    limit = max((abs(v) for v in values), default=0.0) or 1.0
    body, x, y = [], 24.0, 70.0
    colours = diverging_colours(values, limit)
    for i, (token, value, colour) in enumerate(zip(tokens, values, colours)):
        width = max(text_width(token, size) + 2 * pad, 22)
        if x + width > WIDTH - 24:
            x, y = 24.0, y + line
        dark = abs(value) / limit > 0.6
        outline = f' stroke="{INK}" stroke-width="2.5"' if i == marked else f' stroke="{AXIS}" stroke-width="0.5"'
        body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{size + 14}" rx="4" '
                    f'fill="{colour}"{outline} data-mark="{escape(token)}" '
                    f'data-value="{value!r}"><title>{escape(token)}: {value:.4g}</title></rect>')
        body.append(_text(x + width / 2, y + size + 3, token, size, "middle", "white" if dark else INK,
                          "" if dark else ' class="on-fill"'))  # dark ink on a pale box, in dark mode too
        sign = "+" if value > 0 else "−" if value < 0 else ""
        body.append(_text(x + width / 2, y + size + 30, sign, size - 3, "middle", SUBDUED))
        x += width + gap
    bottom = y + line + 10
    scale = diverging_colours([(2 * j / 10 - 1) * limit for j in range(11)], limit)  # −limit … 0 … +limit
    for j, colour in enumerate(scale):
        body.append(f'<rect x="{24 + j * 40}" y="{bottom}" width="40" height="14" fill="{colour}"/>')
    body.append(_text(24, bottom + 34, f"−{limit:.3g}  {legend[0]}", size - 3, "start", SUBDUED))
    body.append(_text(24 + 11 * 40, bottom + 34, f"{legend[1]}  +{limit:.3g}", size - 3, "end", SUBDUED))
    return _figure(_svg(bottom + 50, title, body), name, lang)
