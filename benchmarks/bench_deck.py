"""How long a 30-slide deck takes to write (issue #54: under 10 s on the 2-core machine). Not a test.

    python -m benchmarks.bench_deck          (or python -m benchmarks.run --only deck: the same row in the table)

The slides are what "Download the deck" receives: 30 figures exported by plotly at the slide size (3200×1800 PNG,
demo/figures.SLIDE_EXPORT), each with a title, a 200-character caption, a state link and notes, 中文 included. The
PNGs are drawn here with Pillow (a heatmap-like grid and text-like strokes; the script prints their total size). The
reference is python-pptx itself: the same pictures added to a blank deck with no text, fonts,
links or notes, i.e. what any .pptx writer pays to zip the images. Reported: medians over repeats, the ratio, and the
machine's load (`os.getloadavg`), since a shared machine's wall times move with it.
"""
from __future__ import annotations

import base64
import io
import os
import random
import sys
import time

from PIL import Image, ImageDraw
from pptx import Presentation
from pptx.util import Inches

from benchmarks.common import alternating_medians, print_table, row
from demo.kit import deck

SLIDES = 30


def figure_png(seed: int) -> bytes:
    rng = random.Random(seed)
    image = Image.new("RGB", (3200, 1800), "white")
    draw = ImageDraw.Draw(image)
    for cell_row in range(24):  # a heatmap's cells
        for column in range(24):
            shade = rng.randrange(40, 255)
            draw.rectangle([600 + column * 80, 150 + cell_row * 60, 680 + column * 80, 210 + cell_row * 60],
                           fill=(shade // 3, shade // 2, shade))
    for line in range(40):  # tick labels and a title: short strokes
        y = 100 + line * 40
        draw.line([(100, y), (100 + rng.randrange(100, 400), y)], fill="black", width=6)
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def run(quick: bool = False) -> list[dict]:
    """demo.kit.deck building the 30 slides from the upload, against python-pptx adding the pictures alone."""
    pictures = [figure_png(seed) for seed in range(SLIDES)]
    upload = [{"title": f"注意力 · Attention step {n}", "caption": ("输入：" + "我爱自然语言处理。" * 30)[:200],
               "notes": "What to look at: the weights of each row sum to 1 (§8.3).",
               "link": f"?tab=attention&view=steps&lang=zh&in=%7B%220%22%3A%22{n}%22%7D",
               "image": "data:image/png;base64," + base64.b64encode(png).decode()} for n, png in enumerate(pictures)]

    def ours() -> bytes:
        return deck.build(deck.slides_from_upload(upload), "zh", link="https://example.org/")

    def reference() -> bytes:
        presentation = Presentation()
        blank = presentation.slide_layouts[6]
        for png in pictures:
            presentation.slides.add_slide(blank).shapes.add_picture(io.BytesIO(png), Inches(0.5), Inches(1))
        out = io.BytesIO()
        presentation.save(out)
        return out.getvalue()

    start = time.perf_counter()
    size = len(ours())
    first = time.perf_counter() - start
    ours_s, reference_s = alternating_medians([ours, reference], repeats=2 if quick else 5, warmup=1)
    name = f"{SLIDES}-slide deck ({sum(map(len, pictures)) / 1e6:.1f} MB of PNG → {size / 1e6:.1f} MB .pptx)"
    return [row(f"{name} (vs python-pptx, pictures only)", ours_s, reference_s, "s", "≤ 10 s", target_value=10.0),
            row(f"{name}: the first build (cold)", first, None, "s", "≤ 10 s", target_value=10.0),
            row("load average (1 min)", os.getloadavg()[0], None, "", "shared machine")]


if __name__ == "__main__":
    print_table(run(quick="--quick" in sys.argv))
