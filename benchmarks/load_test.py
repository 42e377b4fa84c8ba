"""Load test: N concurrent gradio_client users against a local server for a bounded time.

Each user loops over the tabs' main offline endpoints (round-robin, starting at a different tab per user) until the
time is up, then the script prints p50/p95 latency, call count and errors per endpoint. Events the browser runs in
two steps (download, then model: demo/server/downloads.py) are called the same way and timed as one. Exit status 1 when any call
failed or an endpoint's p95 is over --p95 seconds.

    python benchmarks/load_test.py                          # starts `app.py --offline` itself; 32 users × 60 s
    python benchmarks/load_test.py --users 4 --seconds 10   # a quick check
    python benchmarks/load_test.py --url http://127.0.0.1:7860/ --endpoints ngram_counts attention_model

    python benchmarks/load_test.py --profile classroom      # 64 users × 60 s over every tab (issues 21, 38)
    python benchmarks/load_test.py --profile classroom --no-result-cache   # the same, every click computed
    python benchmarks/load_test.py --profile classroom --max-batch 8    # cross-learner batching on (default off)
    python benchmarks/load_test.py --profile classroom --client gradio_client   # the clients of earlier runs
    python benchmarks/load_test.py --profile classroom --device cuda   # the server's models on the GPU
    python benchmarks/load_test.py --profile classroom --floor    # the same events with empty handlers (Gradio alone)

Clients (--client): "browser" (default) speaks the queue protocol as a learner's page does, all users on one event
loop (benchmarks/browser_client.py); "gradio_client" runs a gradio_client.Client per user in its own thread (two
more threads and a 50-ms poll per call, on the server's own cores).

Target (issue #10): 32 users × 60 s, CPU, offline models, 0 errors, p95 ≤ 2 s. Classroom (issue #38): 64 users over
all tabs, half the clicks the preset of the moment and half the learner's own text, 0 errors, p95 ≤ 2 s for every
endpoint.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: benchmarks.browser_client

# One main endpoint per tab, with arguments that work offline (bundled models). Keyword names are the handlers'
# parameter names, as gradio_client exposes them.
CALLS: dict[str, dict] = {
    "ngram_counts": dict(own_text="", upload=None, context="的", word="词性"),
    "embeddings_analogy": dict(a="king", b="man", c="woman", topn=5),
    "lstm_inspect": dict(text="Call me Ishmael. Some years ago", signal="forget gate f", units=24),
    "attention_multihead": dict(sentence="i have a dream", d_model=512, heads=8, causal=False),
    "attention_model": dict(model_id="sentence-transformers/all-MiniLM-L6-v2",
                            text="The animal didn't cross the street because it was too tired.", pair="",
                            layer=1, head=1, hide_special=False),
    "mlm_inputs": dict(model_id="bert-base-uncased", text="my dog is cute", pair="he likes playing"),
    "ner_convert": dict(line="爱/B-PER 因/I-PER 斯坦/I-PER 在/O 柏林/B-LOC 发表/O 演讲/O"),
    "qa_layout": dict(model_id="distilbert-base-cased-distilled-squad", question="What causes precipitation to fall?",
                      context="In meteorology, precipitation falls under gravity.", doc_stride=128, max_seq_len=384),
}
# The classroom profile adds every other tab's main event (issue 21 §8: "over all tabs"). Offline, the BERT-task
# checkpoints are not here: those events answer with their "not on this machine" view (NER still tokenises, QA and
# classification still show the input layout), which is what a class sees on an offline machine.
CLASSROOM_CALLS: dict[str, dict] = {
    "overview_score": dict(text="the cat sat on the mat"),
    "transformer_block": dict(model_id="sentence-transformers/all-MiniLM-L6-v2",
                              text="The animal didn't cross the street because it was too tired.", token="it",
                              layer=3),
    "transformer_gpt_next": dict(model_id="char-gpt", text="Call me Ishmael. Some years ago", temperature=1.0,
                                 top_k=10),
    "mlm_fill": dict(model_id="bert-base-uncased", text="my dog is [MASK] .", top_k=5),
    "ner_tag": dict(text="My name is Wolfgang and I live in Berlin.", model_id="dslim/bert-base-NER",
                    strategy="first"),
    "qa_answer": dict(model_id="distilbert-base-cased-distilled-squad", question="What causes precipitation to fall?",
                      context="In meteorology, precipitation falls under gravity.", max_answer_len=30, top_k=3,
                      doc_stride=128, max_seq_len=384, no_answer=False),
    "classify_run": dict(model_id="textattack/bert-base-uncased-MRPC", task="sentence pair",
                         text_a="I like you very much.", text_b="I am very fond of you.", max_length=128),
}
CALLS.update(CLASSROOM_CALLS)
# Events that the browser runs in two steps (demo/server/downloads.py): ``<name>_download`` with the checkpoint id(s),
# then ``<name>``. The load test does the same and times both together, as the learner waits for both.
DOWNLOAD_FIRST = {"attention_model": ["model_id"], "mlm_inputs": ["model_id"], "transformer_block": ["model_id"],
                  "transformer_gpt_next": ["model_id"], "mlm_fill": ["model_id"], "ner_tag": ["model_id"],
                  "qa_answer": ["model_id"], "classify_run": ["model_id"]}


# The learner's own text (issue #38 §3): in a class, half the clicks are the preset of the moment (CALLS as they
# are), half a text the learner typed. Own text: the preset's text field with two words appended that depend on the
# learner and the click, so own requests rarely repeat (and never those of the preset).
OWN_TEXT = {"ngram_counts": "context", "lstm_inspect": "text", "attention_multihead": "sentence",
            "attention_model": "text", "mlm_inputs": "text", "ner_convert": "line", "qa_layout": "question",
            "overview_score": "text", "transformer_block": "text", "transformer_gpt_next": "text",
            "mlm_fill": "text", "ner_tag": "text", "qa_answer": "question", "classify_run": "text_a"}
OWN_WORDS = ("river", "garden", "music", "winter", "doctor", "window", "letter", "summer", "market", "forest",
             "teacher", "bridge", "island", "silver", "dinner", "morning", "engine", "castle", "pocket", "planet",
             "harbor", "valley", "candle", "mirror", "rocket", "basket", "circle", "butter", "dragon", "jungle",
             "ladder", "meadow")
OWN_ANALOGIES = (("paris", "france", "italy"), ("king", "man", "woman"), ("big", "bigger", "small"),
                 ("walk", "walked", "run"), ("tokyo", "japan", "china"))


def arguments(name: str, learner: int, click: int, own: bool) -> dict:
    """The keyword arguments of one click: the preset's, or (``own``) the learner's own text."""
    kwargs = dict(CALLS[name])
    if not own:
        return kwargs
    if name == "embeddings_analogy":
        kwargs.update(zip("abc", OWN_ANALOGIES[(learner + click) % len(OWN_ANALOGIES)]))
    elif name == "ner_convert":
        kwargs["line"] += f" {OWN_WORDS[learner % len(OWN_WORDS)]}/O {OWN_WORDS[click % len(OWN_WORDS)]}/O"
    elif name in OWN_TEXT:
        field = OWN_TEXT[name]
        words = f"{OWN_WORDS[learner % len(OWN_WORDS)]} {OWN_WORDS[click % len(OWN_WORDS)]}"
        kwargs[field] = (kwargs[field].replace(" [MASK]", f" {words} [MASK]") if "[MASK]" in kwargs[field]
                         else f"{kwargs[field]} {words}")
    return kwargs


PROFILES = {"default": dict(users=32, seconds=60, endpoints=[name for name in CALLS if name not in CLASSROOM_CALLS],
                            own_share=0.0),
            "classroom": dict(users=64, seconds=60, endpoints=list(CALLS), own_share=0.5)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def start_server(timeout: float = 300, result_cache: bool = True, max_batch: int | None = None, device: str = "cpu",
                 script: str = "app.py") -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Every simulated user calls from 127.0.0.1, where a real class comes from many addresses: lift the per-address
    # cap (demo/server/admission.py) so it measures the queue, not one address's share of it.
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PLM_MAX_EVENTS_PER_ADDRESS="100000")
    if not result_cache:  # demo/server/result_cache.py off: every click computes (the comparison of issue #38 §3)
        env["PLM_RESULT_CACHE_MB"] = "0"
    if max_batch is not None:  # demo/batching.max_batch: requests per batched call (the comparison of issue #38 §2)
        env["PLM_MAX_BATCH"] = str(max_batch)
    process = subprocess.Popen([sys.executable, script, "--offline", "--device", device, "--port", str(port)],
                               cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{script} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return process, url
        except OSError:
            time.sleep(0.2)
    os.killpg(process.pid, signal.SIGTERM)
    raise SystemExit(f"{script} did not serve {url} within {timeout:.0f} s")


def call(client, name: str, kwargs: dict | None = None):
    """One learner action: the download step first where the browser runs one, then the event itself."""
    kwargs = CALLS[name] if kwargs is None else kwargs
    if name in DOWNLOAD_FIRST:
        client.predict(*(kwargs[key] for key in DOWNLOAD_FIRST[name]), api_name=f"/{name}_download")
    return client.predict(**kwargs, api_name=f"/{name}")


def connect(url: str, errors, lock):
    """One user's client after opening the page, or None (counted as a connect error). Users connect one after another,
    before the timed window: the app's config is large, and 64 clients fetching it at once time out on 2 cores.

    Opening the page is what a browser does first: it calls ``app_language`` (demo.load), and Gradio builds the
    session's state then (~0.1 s of CPU for this app's ~1,400 components). A learner clicks after the page is up, so
    the timed window measures clicks, not 64 sessions being created in its first second."""
    from gradio_client import Client

    # gradio_client opens a new httpx client per request; for our plain-HTTP loopback server, building each one's
    # TLS context (loading the system CA bundle) is pure overhead that competes with the server for the same cores.
    try:
        client = Client(url, verbose=False, ssl_verify=not url.startswith("http://"))
        client.predict(api_name="/app_language")
        return client
    except Exception as exc:  # noqa: BLE001 - a user that cannot even connect is an error of every endpoint
        with lock:
            errors["(connect)"].append(f"{type(exc).__name__}: {exc}")
        return None


def clicks(index: int, endpoints: list[str], own_share: float):
    """Learner ``index``'s clicks, in order, without end: (endpoint, its keyword arguments). Round-robin from a
    different tab per learner; seeded per learner, so every run (and either client) makes the same clicks."""
    turn, draw = index, random.Random(index)
    while True:
        name = endpoints[turn % len(endpoints)]
        turn += 1
        yield name, arguments(name, index, turn, own=draw.random() < own_share)


def failure(exc: Exception) -> str:
    """How a failed click is shown: every failure is counted and shown, never hidden."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def user(index: int, client, endpoints: list[str], stop_at: float, latencies, errors, lock,
         own_share: float = 0.0) -> None:
    if client is None:
        return
    for name, kwargs in clicks(index, endpoints, own_share):
        if time.monotonic() >= stop_at:
            return
        start = time.perf_counter()
        try:
            call(client, name, kwargs)
        except Exception as exc:  # noqa: BLE001 - see failure()
            with lock:
                errors[name].append(failure(exc))
            continue
        with lock:
            latencies[name].append(time.perf_counter() - start)


async def browser_users(url: str, users: int, endpoints: list[str], seconds: float, latencies, errors,
                        own_share: float) -> float:
    """The same learners as ``user`` (``clicks``), as browser pages on one event loop: connect
    one after another (each opens its page: ``app_language``), then click until ``seconds`` are up. Returns the
    timed window's length."""
    import httpx

    from benchmarks.browser_client import Api, Page

    limits = httpx.Limits(max_connections=4 * users, max_keepalive_connections=4 * users)
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), limits=limits) as http:
        api = await Api.fetch(http, url)

        async def click(page: Page, name: str, kwargs: dict) -> None:
            if name in DOWNLOAD_FIRST:
                await page.predict(f"{name}_download", *(kwargs[key] for key in DOWNLOAD_FIRST[name]))
            await page.predict(name, **kwargs)

        pages = []
        for _ in range(users):
            page = Page(http, api)
            try:
                await page.predict("app_language")
                pages.append(page)
            except Exception as exc:  # noqa: BLE001 - a user that cannot even connect is an error of every endpoint
                errors["(connect)"].append(f"{type(exc).__name__}: {exc}")
        stop_at = time.monotonic() + seconds

        async def learner(index: int, page: Page) -> None:
            for name, kwargs in clicks(index, endpoints, own_share):
                if time.monotonic() >= stop_at:
                    return
                start = time.perf_counter()
                try:
                    await click(page, name, kwargs)
                except Exception as exc:  # noqa: BLE001 - see failure()
                    errors[name].append(failure(exc))
                    continue
                latencies[name].append(time.perf_counter() - start)

        started = time.monotonic()
        await asyncio.gather(*(learner(i, page) for i, page in enumerate(pages)))
        return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running app; default: start `app.py --offline` on a free port")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default",
                        help="classroom: 64 users over every tab, half the clicks own text; p95 goal on every endpoint")
    parser.add_argument("--users", type=int, help="default: the profile's")
    parser.add_argument("--seconds", type=float, help="default: the profile's")
    parser.add_argument("--endpoints", nargs="+", choices=sorted(CALLS), help="default: the profile's")
    parser.add_argument("--p95", type=float, default=2.0, help="p95 goal per endpoint, seconds")
    parser.add_argument("--own-share", type=float, help="share of clicks with the learner's own text "
                        "(default: the profile's; classroom 0.5)")
    parser.add_argument("--max-batch", type=int, help="start the server with cross-learner batching of up to this "
                        "many requests per call (PLM_MAX_BATCH; default: the app's, off)")
    parser.add_argument("--client", choices=("browser", "gradio_client"), default="browser",
                        help="how the users call: as a browser page (default) or with gradio_client")
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default=os.environ.get("PLM_DEVICE", "cpu"),
                        help="the started server's --device (default: PLM_DEVICE, else cpu)")
    parser.add_argument("--floor", action="store_true", help="start benchmarks/queue_floor.py instead of app.py: "
                        "the same events with empty handlers, Gradio's own cost per click (issue #38 §3)")
    parser.add_argument("--no-result-cache", action="store_true", help="start the server with its result cache "
                        "off (PLM_RESULT_CACHE_MB=0)")
    args = parser.parse_args(argv)
    args.users = args.users or PROFILES[args.profile]["users"]
    args.seconds = args.seconds or PROFILES[args.profile]["seconds"]
    args.endpoints = args.endpoints or PROFILES[args.profile]["endpoints"]
    args.own_share = PROFILES[args.profile]["own_share"] if args.own_share is None else args.own_share
    checked = set(args.endpoints)  # issue #38: every endpoint, the BERT group included

    server, url = (None, args.url) if args.url else start_server(result_cache=not args.no_result_cache,
                                                                 max_batch=args.max_batch, device=args.device,
                                                                 script="benchmarks/queue_floor.py" if args.floor
                                                                 else "app.py")
    try:
        from gradio_client import Client

        for name in args.endpoints:  # warm-up: first model loads are not what users wait for under load
            call(Client(url, verbose=False), name)
        latencies, errors, lock = defaultdict(list), defaultdict(list), threading.Lock()
        if args.client == "browser":
            elapsed = asyncio.run(browser_users(url, args.users, args.endpoints, args.seconds, latencies, errors,
                                                args.own_share))
        else:
            clients = [connect(url, errors, lock) for _ in range(args.users)]
            stop_at = time.monotonic() + args.seconds
            threads = [threading.Thread(target=user, args=(i, clients[i], args.endpoints, stop_at, latencies,
                                                            errors, lock, args.own_share)) for i in range(args.users)]
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - started
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(10)

    print(f"{args.users} users × {args.seconds:g} s against {url} ({elapsed:.0f} s incl. the last calls); "
          f"{args.own_share:.0%} of clicks with the learner's own text; {args.client} clients; result cache "
          f"{'off' if args.no_result_cache else 'on' if not args.url else 'as the server has it'}"
          + (f"; batches of up to {args.max_batch}" if args.max_batch else "")
          + ("" if args.url else "; server: benchmarks/queue_floor.py (empty handlers)" if args.floor
             else f"; server on {args.device}"))
    header = f"{'endpoint':<22} {'calls':>6} {'errors':>6} {'p50 s':>8} {'p95 s':>8} {'max s':>8} {'calls/s':>8}"
    print(header + "\n" + "-" * len(header))
    failed = False
    for name in [*args.endpoints, *(e for e in errors if e not in args.endpoints)]:
        times, errs = latencies.get(name, []), errors.get(name, [])
        p50, p95 = (statistics.median(times), percentile(times, 0.95)) if times else (float("nan"),) * 2
        print(f"{name:<22} {len(times):>6} {len(errs):>6} {p50:>8.3f} {p95:>8.3f} "
              f"{max(times, default=float('nan')):>8.3f} {len(times) / elapsed:>8.2f}")
        failed |= bool(errs) or not times or (name in checked and p95 > args.p95)
    total = sum(map(len, latencies.values()))
    print(f"total: {total} calls, {sum(map(len, errors.values()))} errors, {total / elapsed:.1f} calls/s")
    for name, errs in errors.items():
        print(f"  {name}: {len(errs)} errors, e.g. {errs[0]}")
    print("PASS" if not failed else f"FAIL (goal: 0 errors, p95 ≤ {args.p95:g} s for every endpoint)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
