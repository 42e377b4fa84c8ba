"""A ZeroGPU Space, simulated (issue #48 §2): `python app.py` with SPACE_ID and SPACES_ZERO_GPU set, a stand-in
`spaces` package (tests/space_stand_in/spaces) that logs each GPU call and refuses any torch module's forward outside
one, and the checkpoints the Space preloads (README's preload_from_hub) as tiny random ones under their real ids in
the image's cache, read through PLM_PRELOADED_HUB_CACHE as core/loading/hub.py reads it on a Space with persistent storage.

Then, over raw HTTP as a browser's requests arrive: every tab's and sub-tab's open event (each view's default preset),
every preset that sets a checkpoint, and every model view's main button (learner_events). No event may fail, no
forward may run outside a GPU call, and no GPU call's arguments or result may fail to pickle (the real spaces.GPU
sends them to its worker process). The trainers are left out: each runs up to its budget (test_trainer_budgets.py).
"""
from __future__ import annotations

import json
import shutil
import time
from collections import Counter

import httpx
import pytest

from tests import app_events
from tests.live_app import ROOT, app_env, running_app

STAND_IN = ROOT / "tests" / "space_stand_in"
# Events that train for up to their work budget (minutes at the sliders' maxima); tests/test_trainer_budgets.py runs
# them. Their gpu_handler durations are checked in tests/server/test_gpu_handler.py.
TRAINERS = app_events.trainers()  # derived from the built app (issue #50)
COMMIT = "0123456789abcdef0123456789abcdef01234567"
SENTENCE = "The white whale swam by the old ship."


def preload(cache, model_id: str, folder) -> None:
    """``folder``'s files as ``model_id`` in a huggingface_hub cache, as preload_from_hub leaves them."""
    repo = cache / ("models--" + model_id.replace("/", "--"))
    shutil.copytree(folder, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)


@pytest.fixture(scope="module")
def space(tmp_path_factory, tiny_checkpoint, tiny_gpt2_checkpoint, conll_ner_checkpoint):
    """The served app, the GPU log's path."""
    image_cache = tmp_path_factory.mktemp("image-cache")
    preload(image_cache, "bert-base-uncased", tiny_checkpoint("BertForPreTraining"))
    preload(image_cache, "dslim/bert-base-NER", conll_ner_checkpoint)
    preload(image_cache, "distilbert-base-cased-distilled-squad", tiny_checkpoint("DistilBertForQuestionAnswering"))
    preload(image_cache, "distilbert-base-uncased-finetuned-sst-2-english",
            tiny_checkpoint("DistilBertForSequenceClassification", id2label={0: "NEGATIVE", 1: "POSITIVE"},
                            label2id={"NEGATIVE": 0, "POSITIVE": 1}))
    preload(image_cache, "gpt2", tiny_gpt2_checkpoint("bpe"))
    home = tmp_path_factory.mktemp("hf-home")
    log = tmp_path_factory.mktemp("gpu") / "calls.jsonl"
    log.touch()
    env = app_env(SPACE_ID="teacher/plm-explorer", SPACES_ZERO_GPU="true", PLM_TEST_GPU_LOG=str(log),
                  PYTHONPATH=f"{STAND_IN}:{ROOT}", HF_HOME=str(home), HF_HUB_CACHE=str(home / "hub"),
                  PLM_PRELOADED_HUB_CACHE=str(image_cache), HF_HUB_OFFLINE="1")
    with running_app("--host", "127.0.0.1", env=env) as served:
        yield served, log


def call(url: str, api: str, data: list) -> tuple[str, object]:
    """(kind of the event's last message: "complete" or "error", its data)."""
    with httpx.Client(timeout=300) as client:
        joined = client.post(url + f"gradio_api/call/{api}", json={"data": data})
        assert joined.status_code == 200, (api, joined.text)
        answer = client.get(url + f"gradio_api/call/{api}/{joined.json()['event_id']}")
    events = [line for line in answer.text.splitlines() if line.startswith(("event:", "data:"))]
    return events[-2].split(": ", 1)[1], json.loads(events[-1].split(": ", 1)[1])


def opening_value(component: dict):
    """What an input holds when its view opens; an empty text box gets a sentence (empty text is refused, rightly)."""
    value = component["props"].get("value")
    return SENTENCE if component["type"] == "textbox" and not value else value


def checkpoint_presets() -> set[tuple[str, str]]:
    """(preset event, slug) of every preset that sets a checkpoint the app offers (core/loading/checkpoints.py)."""
    from core.loading.checkpoints import CHECKPOINTS

    offered = {model_id for ids in CHECKPOINTS.values() for model_id in ids}
    return {(f"{view.api_prefix}_preset", preset.slug) for view in app_events.views()
            for preset in view.presets.values()
            if preset.values is not None and offered & {value for value in preset.resolved() if isinstance(value, str)}}


def learner_events(config: dict) -> list[tuple[str, list]]:
    """(api name, data) for every tab's and sub-tab's open event (each view's default preset), every model view's main
    event (one with a ``_download`` step: demo.server.downloads.model_event) with its view's default preset's values (or
    the values its inputs open with), and every preset that sets a checkpoint. A session's States are the server's: a
    client omits them. (The other presets change a view's text or numbers, not which model runs;
    tests/kit/test_figure_palettes.py and the browser's learner path run every preset.)"""
    components = {c["id"]: c for c in config["components"]}
    names = {dep["api_name"] for dep in config["dependencies"]}
    chosen = checkpoint_presets()
    defaults = {view.api_prefix: view.presets[view.default].resolved() for view in app_events.views()}
    events = []
    for dep in config["dependencies"]:
        api = dep["api_name"]
        if not dep["backend_fn"] or not api or api in TRAINERS:
            continue
        inputs = [components[i] for i in dep["inputs"] if components[i]["type"] != "state"]
        if api.endswith("_open"):
            events.append((api, []))
        elif api.endswith("_preset"):
            events += [(api, [item["slug"]]) for item in inputs[0]["props"]["props"]["items"]
                       if (api, item["slug"]) in chosen]
        elif f"{api}_download" in names:
            default = defaults.get(api)  # the view's default preset, where the button is the view's own
            events.append((api, list(default) if default and len(default) == len(inputs)
                           else [opening_value(component) for component in inputs]))
    return events


def test_every_event_runs_its_models_inside_a_gpu_call(space):
    served, log = space
    config = httpx.get(served.url + "config", timeout=60).json()
    events = learner_events(config)
    kinds = Counter(api.rsplit("_", 1)[-1] if api.endswith(("_open", "_preset")) else "main" for api, _ in events)
    assert kinds["open"] >= 50 and kinds["preset"] >= 30 and kinds["main"] >= 15, kinds
    failed, seconds = [], {}
    for api, data in events:
        started = time.monotonic()
        kind, answer = call(served.url, api, data)
        seconds[(api, *data[:1])] = time.monotonic() - started
        if kind != "complete":
            failed.append((api, data, answer))
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    calls = [r for r in records if r["kind"] == "end"]
    outside = [r for r in records if r["kind"] == "forward_outside"]
    unpicklable = [r for r in records if r["kind"] == "unpicklable"]
    forwards = sum(r["forwards"] for r in calls)
    by_handler = Counter(r["fn"].rsplit(".", 1)[-1] for r in calls)
    print(f"\nsimulated ZeroGPU Space: {len(events)} events ({dict(kinds)}), {len(calls)} GPU calls, "
          f"{forwards} module forwards inside them, {len(outside)} outside, {len(unpicklable)} unpicklable, "
          f"{len(failed)} failed, {sum(seconds.values()):.0f} s in all; GPU calls by handler: {dict(by_handler)}; "
          f"slowest: {sorted(seconds.items(), key=lambda item: -item[1])[:5]}")
    assert not outside, outside[:5]
    assert not unpicklable, unpicklable[:5]
    assert not failed, failed[:5]
    assert all(r["error"] is None for r in calls), [r for r in calls if r["error"]][:5]
    # The BERT tabs' main buttons ran their batched handlers on the GPU, on the preloaded checkpoints.
    assert {"fill_batch", "tag_batch", "answer_batch"} <= set(by_handler), by_handler
    assert forwards > 100
