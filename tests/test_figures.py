"""The shared figure helpers: one theme, slide-size export, readable labels."""
import json

import numpy as np

from demo import figures


def test_every_styled_figure_carries_the_slide_export_config():
    fig = figures.bar(["a", "b"], [0.7, 0.3], "Top predictions")
    payload = json.loads(fig.to_json())  # what Gradio hands to Plotly.react
    options = payload["config"]["toImageButtonOptions"]
    assert (options["width"], options["height"], options["scale"]) == (1600, 900, 2)
    assert payload["layout"]["template"]["layout"]["font"]["size"] == figures.BASE_FONT_SIZE
    assert payload["layout"]["title"]["text"] == "Top predictions"


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
