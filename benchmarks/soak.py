"""Soak: a few users call every tab's endpoints for minutes; the server's RSS is printed over time.

Each user loops (bounded by --minutes) over the load test's endpoints plus heavier ones that fill caches (varied
text, so every call is new: attention maps, n-gram models, masking at many draws), against a server on loopback.
RSS is read from /proc/<pid>/status every --every seconds.

    python benchmarks/soak.py --users 8 --minutes 10         # issue 38's goal: RSS within +100 MB of minute 1
    python benchmarks/soak.py --users 8 --minutes 3

Issues 21 §4 and 38 §5. Before the users start, every tab's main event is called once and the RSS read (goal:
≤ --rss MB). Exit status 1 when a call failed, that RSS is over --rss, or RSS grew more than --growth MB after the
first minute.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.load_test import CALLS, call, start_server  # noqa: E402

WORDS = ("the whale ship sea captain harpoon storm island sailor deck rope wind night morning ocean voyage "
         "Ishmael Ahab Queequeg Nantucket").split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def heavy_calls(rng: random.Random) -> dict[str, dict]:
    """Endpoints whose results are cached or large, with new inputs on every call."""
    return {
        "ngram_counts": dict(own_text="\n".join(sentence(rng, 12) for _ in range(200)), upload=None, context="the",
                             word="whale"),
        "attention_model": dict(model_id="sentence-transformers/all-MiniLM-L6-v2", text=sentence(rng, 120),
                                pair=sentence(rng, 60), layer=1, head=1, hide_special=False),
        "mlm_masking": dict(model_id="bert-base-uncased", text=sentence(rng, 300), seed=rng.randrange(1000),
                            draws=100_000),
        "lstm_inspect": dict(text=sentence(rng, 30), signal="forget gate f", units=24),
        "mlm_inputs": dict(model_id="bert-base-uncased", text=sentence(rng, 40), pair=sentence(rng, 20)),
        "qa_layout": dict(model_id="distilbert-base-cased-distilled-squad", question="Where is the whale?",
                          context=sentence(rng, 900), doc_stride=64, max_seq_len=256),
    }


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def user(index: int, url: str, stop_at: float, counts: Counter, errors: list, lock) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False, ssl_verify=False)
    rng = random.Random(index)
    names = list(CALLS) + [f"heavy:{name}" for name in heavy_calls(rng)]
    turn = index
    while time.monotonic() < stop_at:
        name = names[turn % len(names)]
        turn += 1
        endpoint = name.removeprefix("heavy:")
        kwargs = heavy_calls(rng)[endpoint] if name.startswith("heavy:") else CALLS[endpoint]
        try:
            client.predict(**kwargs, api_name=f"/{endpoint}")
        except Exception as exc:  # noqa: BLE001 - counted and shown
            with lock:
                errors.append(f"{name}: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        with lock:
            counts[name] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--every", type=float, default=15, help="seconds between RSS readings")
    parser.add_argument("--growth", type=float, default=100, help="allowed MB over the RSS after the first minute")
    parser.add_argument("--rss", type=float, default=1000, help="allowed MB after every tab was used once")
    args = parser.parse_args(argv)

    server, url = start_server()
    try:
        from gradio_client import Client

        for name in CALLS:  # every tab used once, as one learner would, download steps included
            call(Client(url, verbose=False), name)
        used_once = rss_mb(server.pid)
        print(f"RSS after every tab's main event once: {used_once:.0f} MB (goal ≤ {args.rss:g} MB)", flush=True)
        counts, errors, lock = Counter(), [], threading.Lock()
        began = time.monotonic()
        stop_at = began + args.minutes * 60
        threads = [threading.Thread(target=user, args=(i, url, stop_at, counts, errors, lock), daemon=True)
                   for i in range(args.users)]
        for thread in threads:
            thread.start()
        readings = [(0.0, rss_mb(server.pid))]
        print(f"{args.users} users × {args.minutes:g} min against {url} (server pid {server.pid})")
        print(f"{'minute':>7} {'RSS MB':>8} {'calls':>7} {'errors':>7}", flush=True)
        print(f"{0:>7.2f} {readings[0][1]:>8.0f} {0:>7} {0:>7}", flush=True)
        while any(thread.is_alive() for thread in threads):
            time.sleep(args.every)
            minute = (time.monotonic() - began) / 60
            readings.append((minute, rss_mb(server.pid)))
            with lock:
                print(f"{minute:>7.2f} {readings[-1][1]:>8.0f} {sum(counts.values()):>7} {len(errors):>7}",
                      flush=True)
        for thread in threads:
            thread.join(60)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(10)

    after_first = next((rss for minute, rss in readings if minute >= 1), readings[-1][1])
    peak, last = max(rss for _, rss in readings), readings[-1][1]
    print(f"calls: {dict(counts)}")
    print(f"RSS after the first minute {after_first:.0f} MB, peak {peak:.0f} MB, last {last:.0f} MB: "
          f"growth {peak - after_first:+.0f} MB (goal ≤ +{args.growth:g} MB)")
    for error in errors[:10]:
        print("  error:", error)
    ok = not errors and peak - after_first <= args.growth and used_once <= args.rss
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
