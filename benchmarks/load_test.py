"""Load test: N concurrent learners against a local server for a bounded time.

Each learner opens the page, then loops over the tabs' main endpoints (round-robin, starting at a different tab per
learner) until the time is up, pausing between clicks as a reader does (--think); the script prints p50/p95 latency,
call count and errors per endpoint, calls/s, and the CPU the server and the clients used. Events the browser runs in
two steps (download, then model: demo/server/downloads.py) are called the same way and timed as one. Exit status 1
when any call failed or an endpoint's p95 is over --p95 seconds (a ramp: when no step passed).

    python benchmarks/load_test.py                          # starts `app.py --offline`; 32 users × 60 s, no pause
    python benchmarks/load_test.py --users 4 --seconds 10   # a quick check
    python benchmarks/load_test.py --url http://127.0.0.1:7860/ --endpoints ngram_counts attention_model

    python benchmarks/load_test.py --profile classroom --think 0  # 64 users × 60 s, every tab, no pause (issues 21,38)
    python benchmarks/load_test.py --profile classroom --think 0 --no-result-cache   # every click computed
    python benchmarks/load_test.py --profile classroom --think 0 --max-batch 8   # cross-learner batching (default off)
    python benchmarks/load_test.py --profile classroom --think 0 --client gradio_client   # the clients of earlier runs
    python benchmarks/load_test.py --profile classroom --think 0 --device cuda   # the server's models on the GPU
    python benchmarks/load_test.py --profile classroom --think 0 --floor    # the same events with empty handlers

    python benchmarks/load_test.py --profile classroom      # a class as it clicks: 8 s mean pause (issue 56)
    python benchmarks/load_test.py --profile classroom --app ../old/app.py   # the same class against another commit
    python benchmarks/load_test.py --profile classroom --ramp 32 64 128 256 --seconds 45   # capacity of one server
    python benchmarks/load_test.py --profile classroom --ramp 32 64 --real-size   # bert-base-sized BERT views
    python benchmarks/load_test.py --profile classroom --ramp 32 64 --open-first  # pages opened before the window

Think time (--think SECONDS, issue 56): before each click a learner waits an exponentially distributed pause of that
mean (seeded per learner, so every run makes the same pauses). The classroom profile's default is 8 s; the default
profile's is 0, so `python benchmarks/load_test.py` means what it always did. `--think 0` is the no-pause stress run
of issues 21 and 38: the runs in benchmarks/README.md before issue 56 were `--profile classroom` with no pause, which
is now `--profile classroom --think 0`.

Opening the page: every learner first GETs the app's root page (timed as the endpoint "page") and runs the page's
load event (``app_language``, timed as itself: Gradio builds the session's state then). With a pause the learners
arrive during the timed window, each after a first pause, as a class opens its pages; with --think 0 (and with
--client gradio_client) they open their pages one after another before the window (as the runs before issue 56 did),
so the window measures clicks only. --open-first does the same with a pause: the window then measures a class that
is already in, clicking and reading. calls/s counts clicks (a two-step click once), not page opens.

CPU: the clients run in this script's process (all learners on one event loop) and the server in its own
(`app.py`, started here unless --url); the report gives the CPU seconds of both over the timed window: this
process's (getrusage) and the server's session (/proc/<pid>/stat utime + stime of the server and its children;
with --url, pass --server-pid to have it). "cores" = CPU seconds / window seconds.

Ramp (--ramp 32 64 128 256): one step per class size against the same server, each --seconds long, each a new class
(new pages). One row per step (calls/s, errors, server and client cores, the worst endpoint's p95), then each step's
full table. The capacity is the largest step that passes (0 errors, p95 ≤ --p95 on every endpoint, page opens
included) with every smaller step passing too: a class that failed at 64 is not declared served at 128 by noise.

Real-size BERT views (--real-size): offline, the BERT-task views answer with their "not on this machine" view, which
computes almost nothing. --real-size writes bert-base-uncased (BertForMaskedLM), distilbert-base-cased-distilled-squad
(DistilBertForQuestionAnswering), dslim/bert-base-NER (BertForTokenClassification, the 9 CoNLL labels) and
textattack/bert-base-uncased-MRPC (BertForSequenceClassification, 2 labels) with transformers: the real configs'
shapes, random (seeded) weights, bert-base-uncased's WordPiece vocabulary (from the packaged MiniLM, as the tests'
tiny checkpoints). They are served by the tests' local Hub (tests/hub_server.py, a thread of this process), and the
app starts online (no --offline) with HF_ENDPOINT at it and an empty HF cache, so those views download, load and run
them as on a Space. Their outputs are random-weight outputs: the cost is real, the predictions meaningless.

Clients (--client): "browser" (default) speaks the queue protocol as a learner's page does, all users on one event
loop (benchmarks/browser_client.py); "gradio_client" runs a gradio_client.Client per user in its own thread (two
more threads and a 50-ms poll per call, on the server's own cores).

Target (issue #10): 32 users × 60 s, CPU, offline models, 0 errors, p95 ≤ 2 s. Classroom (issue #38): 64 users over
all tabs, half the clicks the preset of the moment and half the learner's own text, 0 errors, p95 ≤ 2 s for every
endpoint. Issue 56: the capacity of one 2-core server at an 8 s mean pause, goal ≥ 128 learners.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: benchmarks.browser_client

from benchmarks.load_report import (LOAD_EVENT, PAGE, Step, capacity, client_cpu_seconds, print_step,  # noqa: E402
                                    ramp_table, server_cpu_seconds)
from benchmarks.real_size import REAL_SIZE, serve_real_size  # noqa: E402
from benchmarks.load_clicks import CALLS, DOWNLOAD_FIRST, PROFILES, clicks, pauses  # noqa: E402

def start_server(timeout: float = 300, result_cache: bool = True, max_batch: int | None = None, device: str = "cpu",
                 script: str = "app.py", hub_url: str | None = None,
                 hub_cache: str | None = None) -> tuple[subprocess.Popen, str]:
    """Start ``script`` on a free port, offline; with ``hub_url``, online against that Hub (HF_ENDPOINT) with the HF
    cache ``hub_cache``. Returns (the process, its URL) once it serves its page."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Every simulated user calls from 127.0.0.1, where a real class comes from many addresses: lift the per-address
    # cap (demo/server/serving.py, admit) so it measures the queue, not one address's share of it.
    env = dict(os.environ, GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", PLM_MAX_EVENTS_PER_ADDRESS="100000")
    online = []
    if hub_url is not None:  # --real-size: online, against the local Hub only, with a cache of its own
        for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME"):
            env.pop(key, None)
        env.update(HF_ENDPOINT=hub_url, HF_HUB_CACHE=hub_cache or tempfile.mkdtemp(prefix="plm-hf-cache-"))
    else:
        online = ["--offline"]
    if not result_cache:  # demo/server/result_cache.py off: every click computes (the comparison of issue #38 §3)
        env["PLM_RESULT_CACHE_MB"] = "0"
    if max_batch is not None:  # demo/server/result_cache.max_batch: requests per batched call (the comparison of issue #38 §2)
        env["PLM_MAX_BATCH"] = str(max_batch)
    process = subprocess.Popen([sys.executable, script, *online, "--device", device, "--port", str(port)],
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


def connect(url: str, errors, lock, opened=None):
    """One user's client after opening the page, or None (counted as a connect error). Users connect one after another,
    before the timed window: the app's config is large, and 64 clients fetching it at once time out on 2 cores.

    Opening the page is what a browser does first: it calls ``app_language`` (demo.load), and Gradio builds the
    session's state then (~0.1 s of CPU for this app's ~1,400 components). A learner clicks after the page is up, so
    the timed window measures clicks, not 64 sessions being created in its first second."""
    from gradio_client import Client

    # gradio_client opens a new httpx client per request; for our plain-HTTP loopback server, building each one's
    # TLS context (loading the system CA bundle) is pure overhead that competes with the server for the same cores.
    opened = defaultdict(list) if opened is None else opened
    try:
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=300) as response:  # the page, as a browser GETs it first
            response.read()
        opened[PAGE].append(time.perf_counter() - start)
        client = Client(url, verbose=False, ssl_verify=not url.startswith("http://"))
        start = time.perf_counter()
        client.predict(api_name="/app_language")
        opened[LOAD_EVENT].append(time.perf_counter() - start)
        return client
    except Exception as exc:  # noqa: BLE001 - a user that cannot even connect is an error of every endpoint
        with lock:
            errors["(connect)"].append(f"{type(exc).__name__}: {exc}")
        return None


def failure(exc: Exception) -> str:
    """How a failed click is shown: every failure is counted and shown, never hidden."""
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def user(index: int, client, endpoints: list[str], stop_at: float, latencies, errors, lock,
         own_share: float = 0.0, think: float = 0.0, seed: int = 0) -> None:
    """One gradio_client learner (its page already open: ``connect``), clicking until ``stop_at``, a pause
    (``pauses``) before each click."""
    if client is None:
        return
    rests = pauses(index, think, seed)
    for name, kwargs in clicks(index, endpoints, own_share):
        pause = next(rests)
        if time.monotonic() + pause >= stop_at:
            time.sleep(max(0.0, stop_at - time.monotonic()))
            return
        time.sleep(pause)
        start = time.perf_counter()
        try:
            call(client, name, kwargs)
        except Exception as exc:  # noqa: BLE001 - see failure()
            with lock:
                errors[name].append(failure(exc))
            continue
        with lock:
            latencies[name].append(time.perf_counter() - start)


async def open_page(http, url: str, page, opened, errors) -> bool:
    """What a browser does first: GET the app's page (timed as PAGE), then run its load event (LOAD_EVENT, where
    Gradio builds the session's state: ~0.1 s of CPU for this app's ~1,400 components). False (and the failure
    counted under the step's name, never hidden) when the page did not open."""
    for name in (PAGE, LOAD_EVENT):
        start = time.perf_counter()
        try:
            if name == PAGE:
                (await http.get(url)).raise_for_status()
            else:
                await page.predict(LOAD_EVENT)
        except Exception as exc:  # noqa: BLE001 - see failure()
            errors[name].append(failure(exc))
            return False
        opened[name].append(time.perf_counter() - start)
    return True


async def browser_users(url: str, users: int, endpoints: list[str], seconds: float, latencies, errors,
                        own_share: float, think: float = 0.0, opened=None, seed: int = 0, on_start=None,
                        open_first: bool = False) -> float:
    """The same learners as ``user`` (``clicks``), as browser pages on one event loop, until ``seconds`` are up.
    Returns the timed window's length (until the last call returned).

    ``think`` 0: the learners open their pages one after another before the window (users connect one after another:
    the page is large, and 64 clients fetching it at once time out on 2 cores), then click without pausing. ``think``
    > 0: each learner waits a pause (``pauses``), opens its page, and waits a pause before each click, all inside the
    window; a pause that would end after the window ends the learner. ``open_first``: the pages open one after
    another before the window whatever the pause (the window then measures a class that is already in). Page opens
    are timed into ``opened`` (PAGE, LOAD_EVENT; not kept when None), clicks into ``latencies``; failures go to
    ``errors`` under the endpoint's name.
    ``on_start()`` is called as the window starts (the CPU readings of ``run_step``)."""
    import httpx

    from benchmarks.browser_client import Api, Page

    opened = defaultdict(list) if opened is None else opened
    limits = httpx.Limits(max_connections=4 * users, max_keepalive_connections=4 * users)
    async with httpx.AsyncClient(timeout=httpx.Timeout(300.0), limits=limits) as http:
        api = await Api.fetch(http, url)

        async def click(page: Page, name: str, kwargs: dict) -> None:
            if name in DOWNLOAD_FIRST:
                await page.predict(f"{name}_download", *(kwargs[key] for key in DOWNLOAD_FIRST[name]))
            await page.predict(name, **kwargs)

        async def arrive(page: Page) -> bool:
            return await open_page(http, url, page, opened, errors)

        pages = [Page(http, api) for _ in range(users)]
        if think == 0 or open_first:
            pages = [page for page in pages if await arrive(page)]
        stop_at = time.monotonic() + seconds

        async def wait(pause: float) -> bool:
            """Sleep ``pause`` seconds; False when the window ends first."""
            if pause > 0:
                if time.monotonic() + pause >= stop_at:
                    await asyncio.sleep(max(0.0, stop_at - time.monotonic()))
                    return False
                await asyncio.sleep(pause)
            return time.monotonic() < stop_at

        async def learner(index: int, page: Page) -> None:
            rests = pauses(index, think, seed)
            if think > 0 and not open_first and not (await wait(next(rests)) and await arrive(page)):
                return
            for name, kwargs in clicks(index, endpoints, own_share):
                if not await wait(next(rests)):
                    return
                start = time.perf_counter()
                try:
                    await click(page, name, kwargs)
                except Exception as exc:  # noqa: BLE001 - see failure()
                    errors[name].append(failure(exc))
                    continue
                latencies[name].append(time.perf_counter() - start)

        if on_start is not None:
            on_start()
        started = time.monotonic()
        await asyncio.gather(*(learner(i, page) for i, page in enumerate(pages)))
        return time.monotonic() - started


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, with the profile's defaults filled in."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="a running app; default: start `app.py --offline` on a free port")
    parser.add_argument("--server-pid", type=int, help="with --url: the server's pid (its session's CPU is read "
                        "from /proc); the started server's otherwise")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="default",
                        help="classroom: 64 users over every tab, half the clicks own text, 8 s mean pause; p95 goal "
                        "on every endpoint")
    parser.add_argument("--users", type=int, help="default: the profile's")
    parser.add_argument("--seconds", type=float, help="default: the profile's (a ramp: each step's)")
    parser.add_argument("--think", type=float, help="mean pause before each click, seconds, exponentially "
                        "distributed; 0: no pause, the stress run (default: the profile's; classroom 8, default 0)")
    parser.add_argument("--ramp", type=int, nargs="+", metavar="LEARNERS", help="class sizes, one timed step each "
                        "against the same server (e.g. 32 64 128 256); prints each step and the capacity")
    parser.add_argument("--open-first", action="store_true", help="with a pause: the learners open their pages "
                        "one after another before the window (as with --think 0), so the window measures a class "
                        "already in, clicking; default: they arrive in the window")
    parser.add_argument("--real-size", action="store_true", help="the BERT views at their real size: random-weight "
                        "bert-base / DistilBERT-SQuAD / bert-base-NER / bert-base-MRPC checkpoints from a local Hub, "
                        "the app started online against it")
    parser.add_argument("--real-size-dir", help="where --real-size writes its checkpoints (kept and reused); "
                        "default: a temporary folder, removed afterwards")
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
    parser.add_argument("--app", default="app.py", help="the app.py to start (another checkout's, for a before and "
                        "after with the same clients; default: this one's)")
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    args.users = args.users or profile["users"]
    args.seconds = args.seconds or profile["seconds"]
    args.endpoints = args.endpoints or profile["endpoints"]
    args.own_share = profile["own_share"] if args.own_share is None else args.own_share
    args.think = profile["think"] if args.think is None else args.think
    if args.think < 0:
        parser.error("--think must be ≥ 0 (0: no pause)")
    if args.ramp and any(size < 1 for size in args.ramp):
        parser.error("--ramp takes class sizes ≥ 1")
    if args.real_size and (args.url or args.floor):
        parser.error("--real-size starts the app itself (not with --url or --floor)")
    args.steps = sorted(args.ramp) if args.ramp else [args.users]
    return args


def run_step(args: argparse.Namespace, url: str, learners: int, server_pid: int | None, hub=None) -> Step:
    """One timed window of ``learners`` new learners, with the CPU both processes spent in it."""
    latencies, errors, opened, lock = defaultdict(list), defaultdict(list), defaultdict(list), threading.Lock()
    before = {}

    def read_before() -> None:  # as the window starts: after the page opens of a no-pause run
        before.update(server=server_cpu_seconds(server_pid) if server_pid else None, client=client_cpu_seconds(),
                      hub=len(hub.requests) if hub is not None else 0)

    if args.client == "browser":
        elapsed = asyncio.run(browser_users(url, learners, args.endpoints, args.seconds, latencies, errors,
                                            args.own_share, think=args.think, opened=opened, on_start=read_before,
                                            open_first=args.open_first))
    else:
        clients = [connect(url, errors, lock, opened) for _ in range(learners)]
        read_before()
        stop_at = time.monotonic() + args.seconds
        threads = [threading.Thread(target=user, args=(i, clients[i], args.endpoints, stop_at, latencies, errors,
                                                        lock, args.own_share, args.think)) for i in range(learners)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    server1, client1 = (server_cpu_seconds(server_pid) if server_pid else None), client_cpu_seconds()
    latencies.update(opened)
    return Step(learners, elapsed, dict(latencies), dict(errors), list(args.endpoints),
                None if server1 is None else server1 - before["server"], client1 - before["client"],
                (len(hub.requests) - before["hub"]) if hub is not None else 0,
                pages_in_window=args.client == "browser" and args.think > 0 and not args.open_first)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    checkpoints = hub = None
    if args.real_size:
        started = time.monotonic()
        checkpoints = Path(args.real_size_dir) if args.real_size_dir else Path(tempfile.mkdtemp(prefix="plm-real-"))
        hub = serve_real_size(checkpoints / "checkpoints")
        print(f"--real-size: {len(REAL_SIZE)} random-weight checkpoints at their real shapes served from {hub.url} "
              f"({time.monotonic() - started:.0f} s to write and serve)", flush=True)
    server = None
    try:
        if args.url:
            url, server_pid = args.url, args.server_pid
        else:
            server, url = start_server(result_cache=not args.no_result_cache, max_batch=args.max_batch,
                                       device=args.device,
                                       script="benchmarks/queue_floor.py" if args.floor else args.app,
                                       hub_url=hub.url if hub else None,
                                       hub_cache=str(checkpoints / "hf-cache") if hub else None)
            server_pid = server.pid
        from gradio_client import Client

        started = time.monotonic()
        for name in args.endpoints:  # warm-up: first model loads are not what users wait for under load
            call(Client(url, verbose=False), name)
        print(f"server at {url}; warm-up (every endpoint once{', the downloads and loads' if hub else ''}): "
              f"{time.monotonic() - started:.0f} s", flush=True)
        steps = []
        for learners in args.steps:
            step = run_step(args, url, learners, server_pid, hub)
            steps.append(step)
            print(f"\n{learners} learners × {args.seconds:g} s against {url} ({step.window:.0f} s incl. the last "
                  f"calls); think {args.think:g} s mean; {args.own_share:.0%} of clicks with the learner's own text; "
                  f"{args.client} clients; result cache "
                  f"{'off' if args.no_result_cache else 'on' if not args.url else 'as the server has it'}"
                  + (f"; batches of up to {args.max_batch}" if args.max_batch else "")
                  + ("" if args.url else "; server: benchmarks/queue_floor.py (empty handlers)" if args.floor
                     else f"; server on {args.device}")
                  + ("; BERT views real-size (random weights, local Hub)" if hub else ""))
            print_step(step, args.p95)
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(10)
        if hub is not None:
            hub.close()
        if checkpoints is not None and not args.real_size_dir:
            shutil.rmtree(checkpoints, ignore_errors=True)
        elif checkpoints is not None:
            shutil.rmtree(checkpoints / "hf-cache", ignore_errors=True)  # the app's downloads: the next run downloads

    if not args.ramp:
        return 0 if steps[0].passes(args.p95) else 1
    served = capacity(steps, args.p95)
    print(f"\nramp: think {args.think:g} s mean, {args.seconds:g} s per step, "
          + ("BERT views real-size" if hub else "offline models") + "\n" + ramp_table(steps, args.p95))
    print(f"capacity: {served if served is not None else 'none (the smallest step failed)'} learners "
          f"(the largest step with 0 errors and p95 ≤ {args.p95:g} s on every endpoint, every smaller step too)")
    return 0 if served is not None else 1


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` ends a run: stop the server it started too
    sys.exit(main())
