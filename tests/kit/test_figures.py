"""The shared figure helpers: one theme, slide-size export, readable labels."""
import json

import numpy as np

from demo.kit import figures


def test_every_styled_figure_carries_the_slide_export_config():
    fig = figures.bar(["a", "b"], [0.7, 0.3], "Top predictions")
    payload = json.loads(fig.to_json())  # what Gradio hands to Plotly.react
    options = payload["config"]["toImageButtonOptions"]
    assert (options["width"], options["height"], options["scale"]) == (1600, 900, 2)
    assert payload["layout"]["template"]["layout"]["font"]["size"] == figures.BASE_FONT_SIZE
    assert payload["layout"]["title"]["text"] == "Top predictions"


def test_margins_are_plotlys_automargin_and_a_long_title_gets_room_in_what_is_sent():
    """Issue #50: the server estimates no margins (plotly's automargin grows them in the browser); it only gives a
    wrapped title room below the toolbar, in what is sent, so a tab may still change the figure after building it."""
    fig = figures.bar(["a rather long category name"] * 2, [0.7, 0.3], "Top predictions")
    declared = fig.layout.margin.to_plotly_json()
    sent = json.loads(fig.to_json())
    # no side is estimated; one title line fits the template's top margin
    assert sent["layout"]["margin"] == {**declared, "t": figures.TEMPLATE.layout.margin.t}
    assert sent["layout"]["template"]["layout"]["yaxis"]["automargin"] is True
    title = " ".join(["a title long enough to wrap onto a third line"] * 3)
    tall = figures.bar(["a", "b"], [0.7, 0.3], title)
    sent = json.loads(tall.to_json())
    lines = sent["layout"]["title"]["text"].count("<br>") + 1
    assert lines >= 3 and sent["layout"]["margin"]["t"] > figures.TEMPLATE.layout.margin.t
    assert sent["layout"]["margin"]["t"] >= figures.TITLE_TOP + lines * figures.TITLE_FONT_SIZE
    assert tall.layout.margin.t is None  # the figure object keeps its own margins
    assert all("uid" not in trace for trace in sent["data"])


def test_category_labels_are_escaped_for_plotlys_pseudo_html():
    """plotly reads labels as HTML-like markup: the NNLM's end-of-sentence token "</s>" drew as nothing."""
    assert figures.unique_labels(["</s>", "a&b", "</s>", "<unk>"]) == ["&lt;/s&gt;", "a&amp;b", "&lt;/s&gt;\u200b",
                                                                      "&lt;unk&gt;"]


def test_heatmap_keeps_repeated_tokens_apart_and_annotates_small_matrices():
    values = np.array([[0.5, 0.5], [0.25, 0.75]])
    fig = figures.heatmap(values, ["the", "the"], ["the", "cat"], "Attention")
    trace = fig.data[0]
    assert len(set(trace.x)) == 2 and [label.strip("\u200b") for label in trace.x] == ["the", "the"]
    assert np.allclose(np.array(trace.z), values)
    assert trace.texttemplate  # values printed in the cells
    big = figures.heatmap(np.zeros((20, 20)), list("abcdefghijklmnopqrst"), list("abcdefghijklmnopqrst"), "big")
    assert not big.data[0].texttemplate


def test_empty_figure_says_why():
    fig = figures.empty_figure("Run a query to see neighbours")
    assert fig.layout.annotations[0].text == "Run a query to see neighbours"


def test_subplot_grid_places_panels_where_make_subplots_does():
    """Our one-pass grid layout against plotly's own make_subplots, for full and ragged grids."""
    import pytest
    from plotly.subplots import make_subplots

    for count, cols, hs, vs in [(8, 4, 0.06, 0.2), (4, 3, 0.12, 0.25), (2, 2, 0.06, 0.12), (1, 1, 0.1, 0.1)]:
        titles = [f"panel {i + 1}" for i in range(count)]
        layout, axes = figures.subplot_grid(titles, cols, horizontal_spacing=hs, vertical_spacing=vs)
        rows = -(-count // cols)
        reference = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=hs,
                                  vertical_spacing=vs).layout
        assert axes == [(f"x{i + 1}" if i else "x", f"y{i + 1}" if i else "y") for i in range(count)]
        for i in range(count):
            suffix = str(i + 1) if i else ""
            for axis in (f"xaxis{suffix}", f"yaxis{suffix}"):
                assert layout[axis]["domain"] == pytest.approx(list(reference[axis].domain), abs=1e-6)
        assert [a["text"] for a in layout["annotations"]] == titles
        for ours, theirs in zip(layout["annotations"], reference.annotations):
            assert (ours["x"], ours["y"]) == pytest.approx((theirs.x, theirs.y), abs=1e-6)
