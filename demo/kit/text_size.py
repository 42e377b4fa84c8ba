"""How wide and tall a label is as plotly.js draws it, estimated on the server: demo/kit/figures.py wraps a long title to
the width a plot has and gives it room below the toolbar. Everything else about margins is plotly's automargin.

A character's advance in em comes from a per-class table measured in Chromium: WenQuanYi Micro Hei's Latin (what our
font stack draws with on CI and on Linux machines without Inter) and Arial are within a few % of these.
"""
from __future__ import annotations

import html
import re
import string
import unicodedata

TAGS = re.compile(r"</?(?:b|i|em|sup|sub|s|span|a|br)(?:\s[^>]*)?/?>", re.IGNORECASE)  # plotly's pseudo-HTML
BREAKS = re.compile(r"<br\s*/?>", re.IGNORECASE)
EM_WIDTHS = [  # a character's advance in em, by the first class it is in
    (set("ilj.,:;'!| "), 0.27),
    (set("frtI()[]{}-/\"`"), 0.36),
    (set("mwMW@%"), 0.88),
    (set("bdhnopqu"), 0.59),
    (set(string.ascii_lowercase), 0.53),
    (set(string.ascii_uppercase), 0.66),
    (set(string.digits), 0.56),
]
OTHER_EM_WIDTH = 0.6  # other symbols: − × = + ~ · Greek
FULL_WIDTH_PUNCTUATION = set("“”‘’…—")  # drawn by the CJK font of our stack when Inter is missing: 1 em
LINE_HEIGHT = 1.2  # em: the height of a one-line label (18 px at 15 px)
LINE_SPACING = 1.3  # em: each further <br> line


def em_width(ch: str) -> float:
    """A character's advance in em (see EM_WIDTHS)."""
    if unicodedata.category(ch) in ("Mn", "Cf"):  # combining marks, zero-width spaces and joiners
        return 0.0
    if unicodedata.east_asian_width(ch) in "WF" or ch in FULL_WIDTH_PUNCTUATION:
        return 1.0
    return next((em for chars, em in EM_WIDTHS if ch in chars), OTHER_EM_WIDTH)


def text_size(text, font_size: float) -> tuple[float, float]:
    """(width, height) in px of a label as plotly draws it: tags dropped, ``<br>`` breaking lines."""
    lines = html.unescape(TAGS.sub("", BREAKS.sub("\n", str(text)))).split("\n")
    width = max(sum(em_width(ch) for ch in line) for line in lines) * font_size
    return width, (LINE_HEIGHT + LINE_SPACING * (len(lines) - 1)) * font_size
