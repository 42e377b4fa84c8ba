"""A cached model's first answer, and the app's cold start offline (issue #15).

1. In process, ratio to a reference: the first fill-mask answer from a model in the Hugging Face cache, from
   nothing loaded: ``registry.load`` + ``mlm.fill_mask`` vs transformers' ``pipeline("fill-mask", <snapshot>)``
   on the same snapshot, alternating, medians. Online (HF_ENDPOINT at tests/hub_server.py) and offline; online
   also counts the Hub requests it made (goal 0, at most 1).
2. Absolute, the way a teacher sees it: ``python app.py --offline`` spawned → first HTTP 200 → first API answer
   (/app_status), goal ≤ 8 s on 2 cores; then that app's first /mlm_fill answer from the cached model; and the same
   first answer from an app started online against the local Hub.

The checkpoint is a bert-base-sized BertForMaskedLM with random weights (costs the same to load as real ones),
served by the local Hub and downloaded once through the registry into a temporary HF cache.

    python -m benchmarks.bench_registry [--quick]

Last runs (shared 2-core machine, bert-base-sized, 7 alternating repeats):
  load ~4.7: first fill-mask answer from the cache 1.51 s online / 1.13 s offline, ratio 1.21 / 1.13 to transformers'
  pipeline; 0 Hub requests for the cached model; ``app.py --offline`` spawn → HTTP 200 8.5 s, → first answer 9.1 s
  (goal 8 s); that app's first /mlm_fill 2.4 s; online against the local Hub 3.6 s, 0 requests for the model.
  load ~11: 2.14 / 2.13 s, ratio 0.72 / 0.79; spawn → first answer 29.8 s. The ratio is noisy on this machine.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.common import row  # noqa: E402

MODEL_ID = "bench/bert-base-random"
TEXT = "The weather today is very [MASK], so we had to cancel the outdoor game."


def write_checkpoint(folder: Path, layers: int) -> None:
    import torch
    import transformers

    from core.loading.checkpoints import MINILM_ID
    from core.loading.resolve import resolve

    torch.manual_seed(0)
    config = transformers.BertConfig(num_hidden_layers=layers)  # bert-base: H=768, A=12, V=30522
    transformers.BertForMaskedLM(config).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)


def first_answer_in_process(offline: bool) -> float:
    from core.mlm import mlm
    from core.loading import registry, resolve

    registry.clear_cache()
    resolve._offline_flag = offline
    start = time.perf_counter()
    mlm.fill_mask(registry.load("mlm", MODEL_ID), TEXT, top_k=5)
    return time.perf_counter() - start


def first_answer_reference(snapshot: Path) -> float:
    import transformers

    start = time.perf_counter()
    transformers.pipeline("fill-mask", model=str(snapshot), device="cpu", top_k=5)(TEXT)
    return time.perf_counter() - start


def app_timings(env: dict[str, str], *flags: str) -> tuple[float, float, float]:
    """(spawn → HTTP 200, spawn → first /app_status answer, first /mlm_fill answer from the cached model)."""
    from gradio_client import Client

    from tests.live_app import AppProcess

    app = AppProcess(*flags, "--device", "cpu", env=env)
    try:
        serving = app.wait_until_serving(300)
        client = Client(app.url, verbose=False)
        client.predict(api_name="/app_status")
        first = time.monotonic() - app.started
        start = time.perf_counter()
        notice, *_ = client.predict(MODEL_ID, TEXT, 5, api_name="/mlm_fill")
        fill = time.perf_counter() - start
        assert "from Hugging Face cache" in notice, notice  # a real answer from the cache, not an error message
        return serving, first, fill
    finally:
        app.stop()


def run(quick: bool = False) -> list[dict]:
    from core.loading import hub, registry, resolve
    from tests.hub_server import HubServer
    from tests.live_app import app_env, closed_port

    repeats = 3 if quick else 7
    home = tempfile.mkdtemp(prefix="bench-registry-hf-")
    saved = {k: os.environ.get(k) for k in ("HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "HF_HUB_OFFLINE")}
    server = HubServer()
    os.environ.update(HF_HOME=home, HF_HUB_CACHE=os.path.join(home, "hub"), HF_ENDPOINT=server.url)
    os.environ.pop("HF_HUB_OFFLINE", None)
    offline_before = resolve._offline_flag
    rows = []
    try:
        folder = Path(home) / "checkpoint"
        write_checkpoint(folder, 2 if quick else 12)
        server.add_repo(MODEL_ID, folder)
        resolve._offline_flag = False
        registry.load("mlm", MODEL_ID)  # the one download
        snapshot = hub.cached_snapshot(MODEL_ID)

        for offline in (False, True):
            before = len(server.requests)
            ours, reference = [], []
            for _ in range(repeats):  # alternating, so machine load drifts hit both alike
                ours.append(first_answer_in_process(offline))
                reference.append(first_answer_reference(snapshot))
            mode = "offline" if offline else "online"
            rows.append(row(f"registry: cached model, first fill-mask answer, {mode} (vs transformers pipeline)",
                            statistics.median(ours), statistics.median(reference), "s", "≤ 1.0"))
            if not offline:
                rows.append(row("registry: Hub requests for a cached model, online", (len(server.requests) - before)
                                / repeats, None, "requests", "≤ 1"))
        resolve._offline_flag = offline_before
        registry.clear_cache()

        cached = dict(HF_HOME=home, HF_HUB_CACHE=os.path.join(home, "hub"), TRANSFORMERS_OFFLINE=None)
        serving, first, fill = app_timings(app_env(HF_HUB_OFFLINE=None, HF_ENDPOINT=f"http://127.0.0.1:"
                                                   f"{closed_port()}", **cached), "--offline")
        rows.append(row("app --offline: spawn → HTTP 200", serving, None, "s", ""))
        rows.append(row("app --offline: spawn → first answer (/app_status)", first, None, "s", "≤ 8"))
        rows.append(row("app --offline: first /mlm_fill from the cached model", fill, None, "s", ""))
        before = len(server.requests)
        _, _, fill = app_timings(app_env(HF_HUB_OFFLINE=None, HF_ENDPOINT=server.url, **cached))
        rows.append(row("app online (local Hub): first /mlm_fill from the cached model", fill, None, "s", ""))
        ours = [path for _, path in server.requests[before:] if MODEL_ID in path]
        others = sorted({path for _, path in server.requests[before:] if MODEL_ID not in path})
        rows.append(row(f"app online: Hub requests for the cached model (others: {others})", len(ours), None,
                        "requests", "≤ 1"))
    finally:
        server.close()
        resolve._offline_flag = offline_before
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        import shutil

        shutil.rmtree(home, ignore_errors=True)
    return rows


if __name__ == "__main__":
    for result in run(quick="--quick" in sys.argv):
        ratio = f"{result['ratio']:.2f}" if result["ratio"] else "-"
        print(f"{result['benchmark']:<80} {result['ours']:8.3f} {result['unit']:<9} ratio {ratio:>5}  "
              f"goal {result['goal']}")
