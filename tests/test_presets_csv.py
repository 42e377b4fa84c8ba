"""CSV export of result tables (issue #18 §5): every result table of the built app has a download button beside it,
and the file it downloads holds exactly the rows (and headers) the table shows."""
import csv

import gradio as gr
import pandas as pd
import pytest

import app
from core import registry
from demo import common


@pytest.fixture(scope="module")
def built():
    registry.set_offline(True)
    blocks = app.build_app()
    return blocks, blocks.preset_registry


def read_csv(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def test_table_csv_round_trips_text_with_commas_quotes_and_chinese():
    frame = pd.DataFrame([["的, 词性", 0.6667], ['"quoted"\nline', -1.5]], columns=["ctx, w", "P"])
    rows = read_csv(common.table_csv(frame, "t"))
    assert rows == [["ctx, w", "P"], ["的, 词性", "0.6667"], ['"quoted"\nline', "-1.5"]]
    assert common.table_csv(pd.DataFrame(columns=["a"]), "t") is None and common.table_csv(None, "t") is None


def test_every_result_table_has_a_csv_button_right_after_it(built):
    blocks, _ = built
    tables = [b for b in blocks.blocks.values() if isinstance(b, gr.Dataframe) and b.interactive is not True]
    assert len(tables) >= 25
    for table in tables:
        siblings = table.parent.children
        assert isinstance(siblings[siblings.index(table) + 1], gr.DownloadButton), table.label
    csv_events = [d for d in blocks.fns.values() if (d.api_name or "").endswith("_csv")]
    assert len(csv_events) == len(tables)


def test_adding_the_buttons_leaves_the_layout_tree_intact(built):
    """Each button sits in its table's container, and tabs keep their parents: re-entering a built container with
    `with row:` re-parented it under the block being built (a tab became its own parent, and the browser then drew
    only the first tab)."""
    blocks, reg = built
    for button in (b for b in blocks.blocks.values() if isinstance(b, gr.DownloadButton)):
        assert button in button.parent.children
    tabs = {entry.tab.parent for entry in reg.tabs.values()}
    assert len(tabs) == 1 and isinstance(tabs.pop(), gr.Tabs)
    for entry in reg.tabs.values():
        for view in entry.views:
            assert view.where is None or (isinstance(view.switcher, gr.Tabs) and view.where in view.switcher.children)


def csv_of_shown_table(blocks, table, value) -> tuple[list[list[str]], list[list[str]]]:
    """(rows the browser shows, rows of the downloaded CSV) for ``value`` returned into ``table``."""
    shown = table.postprocess(value)  # what Gradio sends to the browser
    frame = table.preprocess(shown)  # what the change event's handler receives back
    dep = next(d for d in blocks.fns.values() if d.inputs == [table] and (d.api_name or "").endswith("_csv"))
    update = dep.fn(frame)
    expected = [[str(h) for h in shown.headers]] + [[str(cell) for cell in row] for row in shown.data]
    path = update.value["path"] if isinstance(update.value, dict) else update.value  # Gradio already cached it
    return expected, read_csv(path)


@pytest.mark.parametrize("tab_id", ["ngram", "lstm", "embeddings", "attention"])
def test_the_csv_holds_the_rows_of_a_default_result_table(built, tab_id):
    blocks, reg = built
    checked = 0
    for view in reg.tabs[tab_id].views:
        tables = [c for c in view.outputs if isinstance(c, gr.Dataframe) and c.interactive is not True]
        if not tables:
            continue
        updates = view.run()
        for table in tables:
            expected, got = csv_of_shown_table(blocks, table, updates[table])
            assert len(got) > 1
            assert [[normalise(c) for c in row] for row in got] == [[normalise(c) for c in row] for row in expected]
            checked += 1
        break
    assert checked, f"no result table in {tab_id}'s views"


def normalise(cell: str) -> str:
    """Numbers compared as numbers (pandas writes 1.0 where the browser payload holds 1)."""
    try:
        return repr(round(float(cell), 9))
    except ValueError:
        return cell
