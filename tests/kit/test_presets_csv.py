"""CSV export of result tables (issue #18 §5): every result table of the built app has a "⬇ CSV" button right after
it, whose browser-only event reads the table's whole value. What the file holds is checked in Chromium
(tests/e2e/test_table_csv.py)."""
import gradio as gr
import pytest

import app
from demo.kit import widgets
from core.loading import resolve


@pytest.fixture(scope="module")
def built():
    resolve.set_offline(True)
    blocks = app.build_app()
    return blocks, blocks.preset_registry


def result_tables(blocks) -> list[gr.Dataframe]:
    return [b for b in blocks.blocks.values() if isinstance(b, gr.Dataframe) and b.interactive is not True]


def is_csv_button(block) -> bool:
    return isinstance(block, gr.Button) and "table-csv" in (block.elem_classes or [])


def test_every_result_table_has_a_csv_button_right_after_it(built):
    blocks, _ = built
    tables = result_tables(blocks)
    assert len(tables) >= 25
    for table in tables:
        siblings = table.parent.children
        assert is_csv_button(siblings[siblings.index(table) + 1]), table.label
    assert sum(is_csv_button(b) for b in blocks.blocks.values()) == len(tables)


def test_each_csv_button_runs_in_the_browser_only_on_its_own_table(built):
    """No request, no API endpoint, nothing that fires when a table fills: one click event, js only, whose input is
    the table (its whole value: the browser draws only the rows in view) and whose file is named after the table."""
    blocks, _ = built
    tables = result_tables(blocks)
    names = set()
    for table in tables:
        button = table.parent.children[table.parent.children.index(table) + 1]
        events = [d for d in blocks.fns.values() if (button._id, "click") in d.targets]
        assert len(events) == 1, table.label
        event = events[0]
        assert event.fn is None and event.inputs == [table] and event.outputs == []
        assert event.api_visibility == "private" and event.api_name.endswith("_csv")
        name = event.js.split("link.download = ")[1].split(";")[0]
        assert name.endswith('.csv"') and name not in names
        names.add(name)
    watched = {id(d.inputs[0]) for d in blocks.fns.values()
               if d.fn is not None and len(d.inputs) == 1 and any(t[1] == "change" for t in d.targets)}
    assert not watched & {id(t) for t in tables}, "a result table's change event runs on the server"


def test_adding_the_buttons_leaves_the_layout_tree_intact(built):
    """Each button sits in its table's container, and tabs keep their parents: re-entering a built container with
    `with row:` re-parented it under the block being built (a tab became its own parent, and the browser then drew
    only the first tab)."""
    blocks, reg = built
    for button in (b for b in blocks.blocks.values() if is_csv_button(b)):
        assert button in button.parent.children
    tabs = {entry.tab.parent for entry in reg.tabs.values()}
    assert len(tabs) == 1 and isinstance(tabs.pop(), gr.Tabs)
    for entry in reg.tabs.values():
        for view in entry.views:
            assert view.where is None or (isinstance(view.switcher, gr.Tabs) and view.where in view.switcher.children)


def test_the_csv_event_names_its_file_after_the_table():
    with gr.Blocks() as blocks:
        table = gr.Dataframe(interactive=False)
        widgets.csv_download(table, "ngram-table-2")
    (event,) = blocks.fns.values()
    assert 'link.download = "ngram-table-2.csv";' in event.js and "FILE_NAME" not in event.js
