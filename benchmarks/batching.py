"""Dynamic batching of fill-mask (issue 21 §8): throughput of 16 concurrent users, batch=True vs one at a time.

One Gradio app serves the same fill-mask handlers twice: ``fill_single`` (demo.mlm.fill, as before) and
``fill_batched`` (demo.mlm.fill_batch with batch=True, as the app wires mlm_fill), both in the "bert" concurrency
group of 4. 16 gradio_client users call one endpoint for a phase of --seconds, then the other, alternating for
--rounds, so drifting machine load hits both alike; the ratio is the median batched throughput over the median
unbatched one. The model is BERT-base's architecture (BertConfig() defaults, 110 M parameters) with random weights
written by transformers in a temporary folder: the Hub is unreachable here, and weights do not change the cost.

    python benchmarks/batching.py --users 16 --seconds 20 --rounds 3
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SENTENCES = ["my dog is [MASK] .", "the man went to the [MASK] to buy milk .", "paris is the [MASK] of france .",
             "she [MASK] the piano every evening after dinner .", "the [MASK] barked at the mailman all morning .",
             "a [MASK] of students walked into the museum and looked at the old paintings ."]


def make_checkpoint(folder: str) -> str:
    import torch
    import transformers

    from core.registry import MINILM_ID, resolve

    torch.manual_seed(0)
    transformers.BertForMaskedLM(transformers.BertConfig()).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)
    return folder


def build(folder: str):
    import gradio as gr

    from core import mlm as fm
    from demo import mlm

    with gr.Blocks() as blocks:
        model_id, text, top_k = gr.Textbox(folder), gr.Textbox(), gr.Slider(1, 20, value=5, step=1)
        outputs = [gr.Markdown(), gr.Markdown(), gr.Plot(), gr.Dataframe()]
        button = gr.Button()
        button.click(mlm.fill, [model_id, text, top_k], outputs, api_name="fill_single", concurrency_id="bert",
                     concurrency_limit=4)
        button.click(mlm.fill_batch, [model_id, text, top_k], outputs, api_name="fill_batched", concurrency_id="bert",
                     concurrency_limit=4, batch=True, max_batch_size=fm.FILL_BATCH)
    blocks.queue(max_size=1024)
    return blocks


def phase(url: str, folder: str, endpoint: str, users: int, seconds: float) -> tuple[float, int]:
    from gradio_client import Client

    done, errors, lock = [0], [0], threading.Lock()
    stop_at = time.monotonic() + seconds

    def user(index: int) -> None:
        client = Client(url, verbose=False, ssl_verify=False)
        rng = random.Random(index)
        while time.monotonic() < stop_at:
            try:
                client.predict(folder, rng.choice(SENTENCES), 5, api_name=f"/{endpoint}")
                with lock:
                    done[0] += 1
            except Exception:  # noqa: BLE001 - counted
                with lock:
                    errors[0] += 1

    started = time.monotonic()
    threads = [threading.Thread(target=user, args=(i,)) for i in range(users)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0] / (time.monotonic() - started), errors[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    with tempfile.TemporaryDirectory() as folder:
        make_checkpoint(folder)
        blocks = build(folder)
        _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
        try:
            from gradio_client import Client

            for endpoint in ("fill_single", "fill_batched"):  # warm-up: the model loads once
                Client(url, verbose=False).predict(folder, SENTENCES[0], 5, api_name=f"/{endpoint}")
            rates = {"fill_single": [], "fill_batched": []}
            errors = 0
            for _ in range(args.rounds):
                for endpoint in rates:
                    rate, failed = phase(url, folder, endpoint, args.users, args.seconds)
                    rates[endpoint].append(rate)
                    errors += failed
                    print(f"{endpoint:<14} {rate:6.2f} calls/s ({failed} errors)", flush=True)
        finally:
            blocks.close()
    single, batched = statistics.median(rates["fill_single"]), statistics.median(rates["fill_batched"])
    print(f"{args.users} users, {args.rounds} alternating rounds of {args.seconds:g} s, BERT-base architecture, CPU")
    print(f"median throughput: unbatched {single:.2f} calls/s, batched {batched:.2f} calls/s, "
          f"ratio batched/unbatched {batched / single:.2f} ({errors} errors)")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
