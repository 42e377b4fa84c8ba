"""A class of 200 answering within 10 seconds while the teacher's view refreshes (issue #55 §6).

The app runs as a learner starts it (``app.py --offline``, its own temporary --class-db), or several app processes on
one store file (``--processes 2``: the nginx setup, students spread over them). A teacher starts a class and asks a
number check; N students join (one address, as behind a school's NAT), then each answers once at a random moment in
the window while polling its banner every 3 s, as the page does; the teacher's view polls every second throughout.
A reference client fetches the app's own static script (``GET /classroom.js``) every 100 ms in the same run.

Reported: every answer recorded exactly once (read back from the store file, each student's value the one it sent),
the p50 / p95 of an answer (and its ratio to the reference's p95), the joins' p95, and how current the teacher's
view was: for the k-th answer acknowledged, the wait until a teacher view counted k answers. Goals: p95 of an answer
≤ 1 s, the teacher's view current within 2 s. A benchmark, not a test: nothing asserts on time.

    python -m benchmarks.class_load                      # 200 students, 10 s, one app process
    python -m benchmarks.class_load --processes 2        # two app processes on one store file
    python -m benchmarks.class_load --url http://127.0.0.1:7860/ --students 150
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from core.classroom import guard
from tests.classroom_http import Client
from tests.live_app import app_env, running_app

SLUG = "ngram-add-one"  # a number check: every prediction in [0, 1] is valid
TEACHER_POLL_S, STUDENT_POLL_S, REFERENCE_EVERY_S = 1.0, 3.0, 0.1  # as assets/classroom.js polls


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


def run(urls: list[str], students: int, seconds: float, db: Path | None) -> dict:
    teacher = Client(urls[0])
    made = teacher.ok("start")
    code, secret = made["code"], made["secret"]
    teacher.ok("ask", code=code, secret=secret, slug=SLUG)

    joined, join_s = [], []
    clients = [Client(urls[i % len(urls)]) for i in range(students)]
    for client in clients:
        began = time.perf_counter()
        joined.append(client.join(code))
        join_s.append(time.perf_counter() - began)

    start = time.perf_counter() + 0.5
    end = start + seconds
    sent: dict[str, float] = {}
    answer_s, acked, errors, polls = [], [], [], [0]
    lock = threading.Lock()

    def student(i: int) -> None:
        client, token = clients[i], joined[i]
        rng = random.Random(i)
        at, value = start + rng.uniform(0, seconds), round(rng.random(), 6)
        next_poll, done = start + rng.uniform(0, STUDENT_POLL_S), False
        while time.perf_counter() < end + 2 * STUDENT_POLL_S:
            now = time.perf_counter()
            if not done and now >= at:
                began = time.perf_counter()
                status, body = client.post("answer", code=code, student=token, slug=SLUG, prediction=value)
                finished = time.perf_counter()
                with lock:
                    if status == 200:
                        answer_s.append(finished - began)
                        acked.append(finished)
                        sent[token] = value
                    else:
                        errors.append((status, body))
                done = True
            elif now >= next_poll:
                status, body = client.post("state", code=code, student=token)
                with lock:
                    polls[0] += 1
                    if status != 200:
                        errors.append((status, body))
                next_poll += STUDENT_POLL_S
            else:
                wake = next_poll if done else min(at, next_poll)
                time.sleep(max(0.0, min(0.05, wake - now)))

    views: list[tuple[float, int]] = []

    def teacher_view() -> None:
        while time.perf_counter() < end + 2 * STUDENT_POLL_S:
            view = teacher.ok("teacher", code=code, secret=secret)
            views.append((time.perf_counter(), view["answered"]))
            time.sleep(TEACHER_POLL_S)

    reference_s = []

    def reference() -> None:
        client = Client(urls[0])
        while time.perf_counter() < end:
            began = time.perf_counter()
            status, _ = client.raw("GET", "/classroom.js")
            if status == 200:
                reference_s.append(time.perf_counter() - began)
            time.sleep(REFERENCE_EVERY_S)

    load_before = os.getloadavg()
    threads = [threading.Thread(target=student, args=(i,)) for i in range(students)]
    threads += [threading.Thread(target=teacher_view), threading.Thread(target=reference)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    lags = []
    for k, at in enumerate(sorted(acked), 1):
        seen = next((received for received, count in views if count >= k and received >= at), None)
        lags.append(float("inf") if seen is None else seen - at)

    final = teacher.ok("teacher", code=code, secret=secret)
    stored = None
    if db is not None:
        with sqlite3.connect(db) as connection:
            rows = connection.execute("SELECT student, prediction FROM predictions WHERE code = ? AND slug = ?",
                                      (code, SLUG)).fetchall()
        by_digest = {guard.digest(token): value for token, value in sent.items()}
        stored = {"rows": len(rows), "distinct": len({r[0] for r in rows}),
                  "values_match": all(json.loads(value) == by_digest.get(student) for student, value in rows)
                  and len(rows) == len(by_digest)}
    return {"students": students, "seconds": seconds, "processes": len(urls), "answered": len(answer_s),
            "errors": errors[:5], "error_count": len(errors), "teacher_count": final["answered"], "stored": stored,
            "answer_p50_s": statistics.median(answer_s) if answer_s else None,
            "answer_p95_s": percentile(answer_s, 0.95), "answer_max_s": max(answer_s, default=None),
            "join_p95_s": percentile(join_s, 0.95), "reference_p95_s": percentile(reference_s, 0.95),
            "answer_p95_over_reference_p95": percentile(answer_s, 0.95) / percentile(reference_s, 0.95),
            "view_lag_p95_s": percentile(lags, 0.95), "view_lag_max_s": max(lags, default=None),
            "teacher_views": len(views), "student_polls": polls[0],
            "load_before": load_before, "load_after": os.getloadavg(), "cpus": os.cpu_count()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", action="append", help="a running app (repeat for several processes on one store)")
    parser.add_argument("--processes", type=int, default=1, help="app processes to start on one store file")
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        if args.url:
            urls, db = args.url, None
        else:
            db = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "classes.sqlite"
            apps = [stack.enter_context(running_app("--offline", "--device", "cpu", "--class-db", str(db),
                                                    env=app_env(HF_HUB_OFFLINE="1")))
                    for _ in range(args.processes)]
            urls = [app.url for app in apps]
        result = run(urls, args.students, args.seconds, db)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    ok = (result["error_count"] == 0 and result["answered"] == args.students == result["teacher_count"]
          and (result["stored"] is None or result["stored"]["values_match"]))
    print(f"every answer recorded exactly once: {ok}; p95 of an answer {result['answer_p95_s']:.3f} s (goal ≤ 1 s); "
          f"teacher's view current within {result['view_lag_max_s']:.2f} s (goal ≤ 2 s); "
          f"load {result['load_before'][0]:.1f} → {result['load_after'][0]:.1f} on {result['cpus']} cores")


if __name__ == "__main__":
    main()
