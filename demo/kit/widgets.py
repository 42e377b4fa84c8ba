"""The pieces every tab builds with: the checkpoint picker, the result tables' buttons and CSV download, Markdown's
LaTeX delimiters, moving a block made elsewhere into place, and how a number is shown (``sig4``: the one place the
app rounds what it shows).
"""
from __future__ import annotations

import json
import math
import numbers

import gradio as gr

from core.loading.checkpoints import CHECKPOINTS
from core.text.i18n import DEFAULT_LANGUAGE, table
from demo.kit.i18n import label as i18n_label
from demo.kit.scripts import script


def sig4(value):
    """A number as tables and messages show it: 4 significant digits (0.058823529411764705 → 0.05882, 814.6712 →
    814.7), still a number, so a table column keeps sorting and its CSV stays numeric. Whole numbers (counts) and
    non-finite values (−∞ for log₂ 0) come back unchanged. The one place the app rounds what it shows."""
    if isinstance(value, numbers.Integral) or not isinstance(value, numbers.Real):  # bools and numpy ints too
        return value
    number = float(value)
    return float(f"{number:.4g}") if math.isfinite(number) else number


SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def sig4_text(value) -> str:
    """sig4 written out for a sentence: positional between 10⁻⁴ and 10⁶ (0.05882, 814.7, 12350), else with a typeset
    power of ten (1.235 × 10⁻⁵, never 1.235e-05); a true minus sign."""
    number = sig4(value)
    if not isinstance(number, float) or not math.isfinite(number) or number == 0:
        shown = {math.inf: "∞", -math.inf: "−∞"}.get(number, str(number) if number else "0")
    elif 1e-4 <= abs(number) < 1e6:
        shown = f"{number:.{max(0, 3 - math.floor(math.log10(abs(number))))}f}"
        shown = shown.rstrip("0").rstrip(".") if "." in shown else shown
    else:
        mantissa, exponent = f"{number:.3e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        shown = f"{mantissa} × 10" + str(int(exponent)).translate(SUPERSCRIPT)
    return shown.replace("-", "−")


def model_picker(task: str, label: str = "common.checkpoint", first: tuple[str, ...] = ()) -> gr.Dropdown:
    """A dropdown of the task's known checkpoints that also accepts any Hub id or local folder. ``label`` is a
    table key (or an already made gr.I18n label); ``first``: ids offered before them (a model bundled with the app),
    not the default."""
    shown = i18n_label(label) if isinstance(label, str) and label in table(DEFAULT_LANGUAGE) else label
    # min_width: wide enough for the longest id offered (distilbert-base-uncased-finetuned-sst-2-english); a row too
    # narrow for it puts the picker on a line of its own instead of cutting the id.
    picker = gr.Dropdown(choices=[*first, *CHECKPOINTS[task]], value=CHECKPOINTS[task][0], label=shown,
                         allow_custom_value=True, info=i18n_label("common.checkpoint_info"), min_width=400,
                         elem_classes=["checkpoint-picker"])
    picker.checkpoint_task = task  # what a preset that sets it fetches before its GPU call (demo.kit.presets.View.run)
    return picker


# Result tables get a copy button (the rows as comma-separated text, ready for a spreadsheet or a slide) and a
# full-screen view, beside the figures' PNG/SVG export.
TABLE_BUTTONS = ["copy", "fullscreen"]

# Markdown with inline $…$ and display $$…$$ maths (Gradio's default renders only $$…$$, leaving "$\sqrt{d_k}$" raw).
LATEX = [{"left": "$$", "right": "$$", "display": True}, {"left": "$", "right": "$", "display": False}]

# ----------------------------------------------------------------------------------------------------------------
# CSV export of result tables (issue #18 §5). Gradio 6's Dataframe offers only "copy" and "fullscreen" buttons, so
# each result table gets a download button beside it. The file is made in the browser from the value the table
# holds: no server round trip, and nothing runs when a table fills. (A DownloadButton refreshed by each table's
# change event cost a request and a component update per table on every result, page open included: measured
# 0.1-0.2 s of the Overview's first paint.) The browser's table only draws the rows in view, so its DOM cannot be
# read; the event's input is the table's whole value, {headers, data} (assets/csv_download.js).


def csv_download(table: gr.Dataframe, name: str) -> gr.Button:
    """A small "⬇ CSV" button for ``table`` (created where the caller is in the layout): it downloads the rows the
    table holds as ``<name>.csv``. A browser-only event (``js``, no ``fn``): no API endpoint, no request."""
    button = gr.Button(i18n_label("presets.csv"), size="sm", scale=0, min_width=90, elem_classes=["table-csv"])
    button.click(None, table, None, js=script("csv_download", FILE_NAME=json.dumps(f"{name}.csv")),
                 api_name=f"{name.replace('-', '_')}_csv", api_visibility="private", queue=False,
                 show_progress="hidden")
    return button


def add_csv_downloads(root: gr.Blocks | gr.Tab, prefix: str) -> list[gr.Button]:
    """Give every result table (a gr.Dataframe not made for input) under ``root`` a CSV download button, placed
    right after it in its row or column (csv_download). The Registry calls it on each built tab, so a
    tab needs no code of its own for it."""
    tables = [block for block in _descendants(root)
              if isinstance(block, gr.Dataframe) and block.interactive is not True]
    buttons = []
    for number, frame in enumerate(tables, 1):
        button = csv_download(frame, f"{prefix}-table-{number}")
        move_block(button, frame.parent, after=frame)
        buttons.append(button)
    return buttons


def move_block(block, parent, after=None) -> None:
    """Move ``block`` from the layout block it was made in into ``parent``: right after its child ``after``, or
    last. A block is made where the build is now and then moved, because re-entering a built layout block (`with
    parent:`) re-parents that block under the current one, which broke the page's tab bar."""
    block.parent.children.remove(block)
    if after is None:
        parent.add(block)
    else:
        parent.children.insert(parent.children.index(after) + 1, block)
        block.parent = parent


def _descendants(block):
    for child in getattr(block, "children", []):
        yield child
        yield from _descendants(child)


def shows_already(component, value) -> bool:
    """Does the page show ``value`` in ``component`` before any event: is it the value the component was built with?
    Compared as the browser receives them (postprocessed; "" and None alike). A gr.State is never "shown" (an
    event sets it), nor a value the component cannot take (the event that sets it shows the error)."""
    if isinstance(component, gr.State):
        return False
    try:
        sent = component.postprocess(value)
    except Exception:  # noqa: BLE001 - any refusal means "not shown": the event sets it and reports
        return False
    return _as_sent(sent) == _as_sent(component.value)


def _as_sent(value):
    value = value.model_dump() if hasattr(value, "model_dump") else value
    return None if isinstance(value, str) and value == "" else value
