"""How wide and tall a label is as plotly.js draws it, estimated on the server, and what follows from it: where a long
title breaks into lines (``wrap_title``; demo/kit/figures.py gives it room below the toolbar) and where a scatter's
point labels go so that they do not cover one another (``label_positions``). Everything else about margins is
plotly's automargin.

A character's advance in em comes from a per-class table measured in Chromium: WenQuanYi Micro Hei's Latin (what our
font stack draws with on CI and on Linux machines without Inter) and Arial are within a few % of these.
"""
from __future__ import annotations

import html
import re
import string
import unicodedata

import numpy as np

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


# ----------------------------------------------------------------------------------------------------------------
# A title's lines.

# Where a title line may not break (assets/figure_head.js keeps the same rules): before closing punctuation, after
# opening punctuation, or on either side of an "=" ("τ =" / "1" read as two thoughts).
CLOSING = "，。、：；！？）」』】》〉”’…·)"
OPENING = "（「『【《〈“‘("


def breakable(line: str, piece: str) -> bool:
    """Whether a title line may end with ``line`` when ``piece`` comes next."""
    return not (piece[0] in CLOSING or piece[0] == "=" or line.rstrip()[-1:] in OPENING
                or line.rstrip().endswith("="))


def wrap_title(layout: dict, width: float, font_size: float) -> list[str]:
    """Break a figure's title (in the sent ``layout``) into lines of at most ``width`` px (at ``font_size``), at
    spaces, or between any two characters of 中文, where ``breakable`` allows; returns its lines ([] without a title).
    A title drawn on one line ran off the right edge of a half-width plot ("…per laye"). Between two characters of
    中文 a word may end or not (no segmenter here), so a line that would end inside such a run ends instead after
    the run's last "，" "：" "；", at its last space or before its last "（", where that keeps at least half a line
    ("查看词⏎元" read as two words; 17 of the 256 titles the presets draw in 中文 broke so). assets/figure_head.js
    wraps a narrower plot's title the same way."""
    title = layout.get("title")
    words = title.get("text") if isinstance(title, dict) else None
    if not words:
        return []
    lines = []
    for given in re.split(r"<br\s*/?>", words):
        line: list[str] = []
        for piece in re.findall(r"[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+|\s+", given):
            said = "".join(line)
            if said.strip() and not piece.isspace() and text_size(said + piece, font_size)[0] > width \
                    and (cut := _line_end(line, piece, width, font_size)):
                lines.append("".join(line[:cut]).rstrip())
                line = line[cut:] if not line[cut:] or not line[cut].isspace() else line[cut + 1:]
            if line or not piece.isspace():
                line.append(piece)
        lines.append("".join(line).rstrip())
    title["text"] = "<br>".join(lines)
    return lines


HAN = re.compile(r"[\u2e80-\u9fff]")
RUN_ENDS = "，。、：；！？）」』】》〉"  # a line may end after these inside a run of 中文


def _breaks(line: list[str], piece: str):
    """Where a title line of ``line``'s pieces (``piece`` next) may end before its last piece, last first: (index of
    the first piece of the next line, the line up to it)."""
    for cut in range(len(line) - 1, 0, -1):
        head, nxt = "".join(line[:cut]), next((p for p in line[cut:] if not p.isspace()), piece)
        if head.strip() and breakable(head, nxt):
            yield cut, head


def _line_end(line: list[str], piece: str, width: float, font_size: float) -> int:
    """Where a title line of ``line``'s pieces ends when ``piece`` does not fit: here (``_word_end``) where
    ``breakable`` allows, else before the glued pieces ("（τ = 0" moves to the next line whole); 0: nowhere."""
    if breakable("".join(line), piece):
        return _word_end(line, piece, width, font_size)
    return next((cut for cut, _ in _breaks(line, piece)), 0)


def _word_end(line: list[str], piece: str, width: float, font_size: float) -> int:
    """Where to end a title line of ``line``'s pieces when ``piece`` does not fit: after all of them, unless that is
    between two characters of 中文 and the run has an earlier end (after ``RUN_ENDS``, at a space, before opening
    punctuation) at half a line or more."""
    if not (HAN.fullmatch(line[-1]) and HAN.fullmatch(piece)):
        return len(line)
    for cut, head in _breaks(line, piece):
        if line[cut - 1] in RUN_ENDS or line[cut].isspace() or line[cut][0] in OPENING:
            return cut if text_size(head.rstrip(), font_size)[0] >= width / 2 else len(line)
    return len(line)


# ----------------------------------------------------------------------------------------------------------------
# Where a 2D scatter's point labels go. Plotly draws every label where it is told ("top center" by default) and never
# moves one off another, so the close words of an embedding projection (man, woman, girl, boy) were drawn over each
# other. Each point is given the one of plotly's eight positions that covers least of the other labels, the plot's
# edges and the other markers, at the sizes the plot has in a half-width column on a laptop and on a phone (a slide
# is larger, so its labels have more room, not less). In Chromium, the capitals preset's overlapping pairs: 16 → 3
# at 1440 px, 26 → 6 at 390 px (tests/e2e/test_layout.py).

POSITIONS = ("top center", "bottom center", "middle right", "middle left",
             "top right", "top left", "bottom right", "bottom left")
# The points' extent in px (a plot area less its padding): a half-width column at 1440 px, and a phone's (390 px)
PLOTS_PX = ((400.0, 450.0), (220.0, 450.0))
GAP = 2.0  # px between a marker and its label
EDGE_PX = 8.0  # how far past the outermost points the axes reach (plotly pads its autorange for the markers)
# More points than a plot can label apart (a 40-word list with 20 neighbours each is 840) keep plotly's "top center":
# placing 420 close ones took 6 s, and left them over one another all the same.
PLACED_AT_MOST = 150


def _label_box(position: str, x: float, y: float, w: float, h: float, r: float) -> tuple[float, float, float, float]:
    """(left, bottom, right, top) in px, y up, of a w × h label at ``position`` around a marker of radius r at (x, y):
    beside, above or below it, or diagonally off a corner (half a radius in)."""
    vertical, horizontal = position.split()
    near = r / 2 if vertical != "middle" and horizontal != "center" else r
    left = {"center": x - w / 2, "right": x + near + GAP, "left": x - near - GAP - w}[horizontal]
    bottom = {"middle": y - h / 2, "top": y + near + GAP, "bottom": y - near - GAP - h}[vertical]
    return left, bottom, left + w, bottom + h


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def label_positions(points, labels, marker_px, font_size: float, plots=PLOTS_PX, rounds: int = 4) -> list[str]:
    """A plotly ``textposition`` for each of the 2D ``points`` (data units): of POSITIONS, the one whose label box
    covers least of the other labels and of the plot's edges (in full: plotly cuts a label off at the axes) and of
    the other markers (at half weight), summed over the plot sizes ``plots`` (px); ties go to the earlier position.
    Placed in order first (the query words come first), then each label moved to its best place given all the
    others, until none moves (``rounds`` at most). ``marker_px``: each marker's diameter. Over PLACED_AT_MOST points,
    each keeps "top center"."""
    coords = [(float(x), float(y)) for x, y in points]
    if not coords:
        return []
    lows = [min(c[axis] for c in coords) for axis in (0, 1)]
    spans = [(max(c[axis] for c in coords) - lows[axis]) or 1.0 for axis in (0, 1)]
    sizes = [text_size(label, font_size) for label in labels]
    if len(coords) > PLACED_AT_MOST:
        return [POSITIONS[0]] * len(coords)
    # Per plot size: the plot's box (with plotly's autorange padding), the markers, each label's 8 boxes, and each
    # point's near ones: those whose marker or label boxes can touch its own, the only ones a cost need sum over
    # (200 close points: 1.3 s with them, 4.4 s summing over all).
    layouts = []
    for plot_px in plots:
        px = [tuple((c[axis] - lows[axis]) / spans[axis] * plot_px[axis] for axis in (0, 1)) for c in coords]
        markers = [(x - d / 2, y - d / 2, x + d / 2, y + d / 2) for (x, y), d in zip(px, marker_px)]
        options = [[_label_box(position, x, y, *size, d / 2) for position in POSITIONS]
                   for (x, y), size, d in zip(px, sizes, marker_px)]
        hulls = np.array([[min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                           max(b[3] for b in boxes)] for boxes in options])
        dots = np.array(markers)  # each hull takes in its own marker too
        hulls[:, :2], hulls[:, 2:] = np.minimum(hulls[:, :2], dots[:, :2]), np.maximum(hulls[:, 2:], dots[:, 2:])
        touch = (hulls[:, None, 0] < hulls[None, :, 2]) & (hulls[None, :, 0] < hulls[:, None, 2]) \
            & (hulls[:, None, 1] < hulls[None, :, 3]) & (hulls[None, :, 1] < hulls[:, None, 3])
        np.fill_diagonal(touch, False)
        near = [np.flatnonzero(row).tolist() for row in touch]
        layouts.append(((-EDGE_PX, -EDGE_PX, plot_px[0] + EDGE_PX, plot_px[1] + EDGE_PX), markers, options, near))
    chosen: list[int | None] = [None] * len(coords)

    def cost(index: int, at: int) -> float:
        total = 0.0
        for plot, markers, options, near in layouts:
            box = options[index][at]
            total += (box[2] - box[0]) * (box[3] - box[1]) - _overlap(box, plot) + sum(
                _overlap(box, options[other][chosen[other]]) for other in near[index]
                if chosen[other] is not None) + sum(_overlap(box, markers[other]) for other in near[index]) / 2
        return total

    for _ in range(rounds + 1):
        moved = False
        for index in range(len(coords)):
            best = min(range(len(POSITIONS)), key=lambda at: (cost(index, at), at))
            moved |= best != chosen[index]
            chosen[index] = best
        if not moved:
            break
    return [POSITIONS[at] for at in chosen]
