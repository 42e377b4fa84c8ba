"""Issue #50: presets and the learners' own questions go through one result cache (demo/server/result_cache.py RESULTS):
keyed, bounded by the results' measured size, single-flight."""
import threading

import gradio as gr

from core.text import i18n
from demo.kit import presets
from demo.server import result_cache


def counting_view(calls: list, started: threading.Event | None = None, release: threading.Event | None = None):
    def fn(text: str) -> str:
        calls.append(text)
        if started is not None:
            started.set()
            assert release.wait(30)
        return f"{text} computed"

    with gr.Blocks():
        return presets.View("x", "cached", [gr.Textbox()], [gr.Textbox()], fn,
                            [presets.Preset("a", "A", ("hello",), "§1"), presets.Preset("b", "B", ("bye",), "§1")])


def test_a_preset_s_result_is_kept_in_the_one_result_cache_with_its_measured_size():
    calls = []
    view = counting_view(calls)
    assert view.run("a")[view.outputs[0]] == "hello computed"
    assert len(result_cache.RESULTS) == 1
    [key] = result_cache.RESULTS.keys()
    (values, results), size = result_cache.RESULTS.get(key)
    assert (values, results) == (("hello",), "hello computed") and size == result_cache.weighed((values, results))[1]
    assert view.run("a")[view.outputs[0]] == "hello computed" and calls == ["hello"]
    with i18n.using_language("zh"):  # the language is in the key: the result's texts are in the learner's language
        view.run("a")
    assert calls == ["hello", "hello"] and len(result_cache.RESULTS) == 2


def test_sessions_opening_the_same_preset_at_once_compute_it_once():
    calls, started, release = [], threading.Event(), threading.Event()
    view = counting_view(calls, started, release)
    shown = []
    threads = [threading.Thread(target=lambda: shown.append(view.run("a")[view.outputs[0]])) for _ in range(6)]
    for thread in threads:
        thread.start()
    assert started.wait(30)
    release.set()
    for thread in threads:
        thread.join(30)
    assert shown == ["hello computed"] * 6 and calls == ["hello"]


def test_presets_and_questions_share_one_bound(monkeypatch):
    """Room for one preset's result: the next one pushes it out (least recently used), as a question's would."""
    calls = []
    view = counting_view(calls)
    view.run("a")
    [key] = result_cache.RESULTS.keys()
    monkeypatch.setattr(result_cache.RESULTS, "max_weight", 1.5 * result_cache.RESULTS.get(key)[1])
    view.run("b")
    assert len(result_cache.RESULTS) == 1 and result_cache.RESULTS.keys()[0][4] == "b"
    view.run("a")
    assert calls == ["hello", "bye", "hello"]


def test_a_styled_table_weighs_as_its_data_not_as_the_largest_answer():
    """The n-gram scores come as a pandas Styler, which pickle refuses (it holds a lambda): counted as the largest
    answer (2 MB), a few of them would push every other preset out of the 16 MB."""
    import pickle

    import pandas as pd

    frame = pd.DataFrame({"word": ["call", "me"], "p": [0.5, 0.25]})
    styled = frame.style.apply(lambda row: [""] * len(row), axis=1)
    with_table = (("call me",), ("a note", styled))
    weight = result_cache.weighed(with_table)[1]
    size = lambda value: len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))  # noqa: E731
    parts = size(("call me",)) + size("a note") + size(frame)
    assert weight == parts < 10_000
    assert result_cache.weighed((lambda: 0,))[1] == result_cache.UNPICKLABLE_BYTES  # nothing to measure: the most
