"""Dynamic batching of the BERT events (issue 21 §8): throughput of 16 concurrent users, batch=True vs one at a time.

The app is built as it is served (app.build_app()). For each batched BERT event (mlm_fill, ner_tag, qa_answer) a
second, unbatched event is added on the same components with the per-request handler (mlm.fill, ner.tag_text,
qa.answer_question), in the same "bert" concurrency group of 4 and run like the app's model step
(demo.server.downloads.local_only). (attention_model is not batched: a per-request loop inside a batch, tried first,
measured 1.03x the unbatched throughput and 0.76-0.81x for NER and QA, one 6 s round on a loaded machine; it keeps
4 parallel slots until core/attention/attention.py reads many requests in one pass.) 16 gradio_client users call one endpoint for a phase of
--seconds, then the other, alternating for --rounds, so drifting machine load hits both alike; the ratio is the
median batched throughput over the median unbatched one, per event. Users call the model step only (the checkpoints
are local folders, so the download step would return at once for both).

The models are BERT-base's architecture (BertConfig() defaults, 110 M parameters) with random weights written by
transformers in a temporary folder: the Hub is unreachable here, and weights do not change the cost. Every request
carries a different sentence (a number appended), so no result cache answers for the model.

    python benchmarks/batching.py --users 16 --seconds 20 --rounds 3
    python benchmarks/batching.py --events ner_tag qa_answer --seconds 10 --rounds 2
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# The app batches up to PLM_MAX_BATCH requests per call, one by default (demo/server/result_cache.max_batch); this benchmark
# measures what batching gains, so its app batches 8 unless told otherwise. Set before the app is imported.
os.environ.setdefault("PLM_MAX_BATCH", "8")

SENTENCES = ["my dog is [MASK] .", "the man went to the [MASK] to buy milk .", "paris is the [MASK] of france .",
             "she [MASK] the piano every evening after dinner .", "the [MASK] barked at the mailman all morning .",
             "a [MASK] of students walked into the museum and looked at the old paintings ."]
NER_TEXTS = ["My name is Wolfgang and I live in Berlin.", "Angela Merkel met Emmanuel Macron in Paris on Monday.",
             "Hugging Face Inc. is a company based in New York City."]
QA = [("What causes precipitation to fall?", "In meteorology, precipitation is any product of the condensation of "
       "atmospheric water vapor that falls under gravity. The main forms of precipitation include drizzle, rain, "
       "sleet, snow, graupel and hail."),
      ("Where did Wolfgang live?", "Wolfgang was born in Salzburg and lived in Berlin for most of his life.")]

# event -> (transformers class of its checkpoint, arguments of one call given a random source and the folder)
EVENTS = {
    "mlm_fill": ("BertForMaskedLM", lambda rng, folder: (
        folder, rng.choice(SENTENCES)[:-1] + f"{rng.randrange(10**6)} .", 5)),
    "ner_tag": ("BertForTokenClassification", lambda rng, folder: (
        rng.choice(NER_TEXTS) + f" {rng.randrange(10**6)}", folder, "first")),
    "qa_answer": ("BertForQuestionAnswering", lambda rng, folder: (
        folder, *(lambda q, c: (q, f"{c} {rng.randrange(10**6)}"))(*rng.choice(QA)), 30, 3, 128, 384, False)),
}


def make_checkpoint(folder: str, class_name: str) -> str:
    import torch
    import transformers

    from core.loading.checkpoints import MINILM_ID
    from core.loading.resolve import resolve

    torch.manual_seed(0)
    config = transformers.BertConfig(num_labels=9 if class_name == "BertForTokenClassification" else 2)
    getattr(transformers, class_name)(config).eval().save_pretrained(folder)
    transformers.BertTokenizerFast.from_pretrained(str(resolve(MINILM_ID).directory)).save_pretrained(folder)
    return folder


def single_handler(event: str):
    from demo.mlm import mlm
    from demo.tasks import ner, qa

    return {"mlm_fill": mlm.fill, "ner_tag": ner.tag_text, "qa_answer": qa.answer_question}[event]


def build(events: list[str]):
    """The served app plus ``<event>_single``: the per-request handler on the same components and group."""
    import gradio as gr

    import app
    from demo.server.downloads import BERT_QUEUE, in_bert_slot, local_only

    blocks = app.build_app()
    by_name = {fn.api_name: fn for fn in blocks.fns.values()}
    with blocks:
        for event in events:
            model_step = by_name[event]
            assert model_step.batch, f"{event} is not wired with batch=True"
            single = local_only(in_bert_slot(single_handler(event)))  # as model_event wires the batched one
            gr.Button(visible=False).click(single, model_step.inputs, model_step.outputs, api_name=f"{event}_single",
                                           **BERT_QUEUE)
    return blocks


def phase(clients: list, folder: str, event: str, endpoint: str, seconds: float) -> tuple[float, int]:
    done, errors, lock = [0], [0], threading.Lock()
    stop_at = time.monotonic() + seconds
    arguments = EVENTS[event][1]

    def user(index: int) -> None:
        client = clients[index]
        rng = random.Random(index * 7919 + int(time.monotonic()))
        while time.monotonic() < stop_at:
            try:
                client.predict(*arguments(rng, folder), api_name=f"/{endpoint}")
                with lock:
                    done[0] += 1
            except Exception as exc:  # noqa: BLE001 - counted
                with lock:
                    errors[0] += 1
                    if errors[0] == 1:
                        print(f"  first error on {endpoint}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)

    started = time.monotonic()
    threads = [threading.Thread(target=user, args=(i,)) for i in range(len(clients))]
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
    parser.add_argument("--events", nargs="+", choices=sorted(EVENTS), default=list(EVENTS))
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(2)
    from gradio_client import Client

    from core.loading.device import get_device

    results, errors = {}, 0
    with tempfile.TemporaryDirectory() as root:
        folders = {event: make_checkpoint(str(Path(root) / event), EVENTS[event][0]) for event in args.events}
        blocks = build(args.events)
        _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
        try:
            # The app's config is large: users connect once, one after another, before anything is timed.
            clients = [Client(url, verbose=False, ssl_verify=False) for _ in range(args.users)]
            for event in args.events:
                endpoints = (f"{event}_single", event)
                for endpoint in endpoints:  # warm-up: the model loads once
                    clients[0].predict(*EVENTS[event][1](random.Random(0), folders[event]),
                                                       api_name=f"/{endpoint}")
                rates: dict[str, list[float]] = {endpoint: [] for endpoint in endpoints}
                for _ in range(args.rounds):
                    for endpoint in endpoints:
                        rate, failed = phase(clients, folders[event], event, endpoint, args.seconds)
                        rates[endpoint].append(rate)
                        errors += failed
                        print(f"{endpoint:<24} {rate:6.2f} calls/s ({failed} errors)", flush=True)
                results[event] = (statistics.median(rates[endpoints[0]]), statistics.median(rates[endpoints[1]]))
        finally:
            blocks.close()
    print(f"\n{args.users} users, {args.rounds} alternating rounds of {args.seconds:g} s per endpoint, BERT-base "
          f"architecture, {get_device().type}, torch threads {torch.get_num_threads()}")
    print(f"{'event':<18} {'unbatched/s':>12} {'batched/s':>10} {'ratio':>7}")
    for event, (single, batched) in results.items():
        print(f"{event:<18} {single:>12.2f} {batched:>10.2f} {batched / single:>7.2f}")
    print(f"{errors} errors")
    return 0 if errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
