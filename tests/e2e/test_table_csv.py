"""The "⬇ CSV" beside each result table (issue #18 §5), in Chromium: the file is made in the browser from the table's
value, so it must hold every row (the browser draws only the rows in view) and survive commas, quotes, line breaks
and 中文, as Python's csv module reads them back."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import gradio as gr
import pandas as pd
import pytest

from demo.kit.widgets import csv_download
from tests.e2e.first_open import FULL_JS, open_tab, visible

pytestmark = pytest.mark.e2e

TRICKY = [["的, 词性", 0.6667, "plain"], ['"quoted"', -1.5, "two\nlines"], ["中文 ⟨unk⟩", 2, "cr\rhere"],
          ["", 1e-07, "[link](?tab=ngram)"]]


def download_rows(page, button) -> tuple[str, list[list[str]]]:
    with page.expect_download() as info:
        button.click()
    download = info.value
    raw = Path(download.path()).read_bytes()
    assert raw.startswith("\ufeff".encode()), "no byte-order mark: spreadsheets misread 中文"
    return download.suggested_filename, list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline="")))


def same_cell(got: str, expected) -> bool:
    if isinstance(expected, (int, float)):
        return float(got) == pytest.approx(float(expected), rel=1e-12)
    return got == expected


def test_the_file_holds_every_row_with_commas_quotes_line_breaks_and_chinese(browser):
    rows = [TRICKY[i % len(TRICKY)] for i in range(300)]  # far more than the table draws
    frame = pd.DataFrame(rows, columns=["ctx, w", "P", 'say "x"'])
    with gr.Blocks() as blocks:
        table = gr.Dataframe(frame, interactive=False, max_height=400)
        csv_download(table, "ngram-table-1")
    blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        page = browser.new_page()
        page.goto(blocks.local_url)
        name, got = download_rows(page, page.locator(".table-csv"))
        page.close()
    finally:
        blocks.close()
    assert name == "ngram-table-1.csv"
    assert got[0] == ["ctx, w", "P", 'say "x"']
    assert len(got) == 301
    for shown, expected in zip(got[1:], rows):
        assert all(same_cell(g, e) for g, e in zip(shown, expected, strict=True)), (shown, expected)


def test_a_tabs_csv_matches_the_table_it_shows(page):
    """In the app: the N-gram counts table's file has the headers and the row count the browser shows."""
    open_tab(page, "N-gram")
    page.wait_for_function(FULL_JS)
    grid = visible(page.locator('[role="grid"].table-wrap'))
    headers = [h.strip() for h in grid.locator("thead th").all_inner_texts() if h.strip()]
    shown_rows = int(grid.get_attribute("aria-rowcount")) - 1
    name, got = download_rows(page, visible(page.locator(".table-csv")))
    assert name == "ngram-table-1.csv"
    assert got[0] == headers
    assert len(got) - 1 == shown_rows > 0
