"""Two replicas behind nginx, a class of 64 clicking, and one replica killed with SIGKILL (issue #56 §4).

    python benchmarks/replica_fault.py                      # 64 learners, 8 s mean pause, kill at 30 s, 90 s in all
    python benchmarks/replica_fault.py --learners 16 --seconds 40 --kill-at 15

scripts/serve_replicas.py starts 2 replicas (`--offline --device cpu`) and nginx. Every learner is a cookie jar (so
nginx keeps it on one replica): it opens the page, joins the class, then, after exponentially distributed pauses,
either runs the n-gram tab's counts (Gradio's /call API, the real handler through the queue) or changes its answer
to the check the teacher asked. At --kill-at, replica 0 gets SIGKILL; the script starts it again a second later.

Reported: calls and failures before and after the kill; the calls that failed (which replica they were on); for the
killed replica's learners, the time from the kill to their first answered call (failover); the page loads after the
kill; and predictions lost: the students whose answer was recorded (HTTP 200) but whom the teacher's view does not
count (expected 0).
"""
from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.live_app import free_port, two_free_ports  # noqa: E402

CHECK, PICKS = "ngram-cixing", ["词性", "磁性"]
NGRAM = {"context": "的", "word": "词性"}


class Learner:
    def __init__(self, url: str, index: int, rng: random.Random):
        self.url, self.index, self.rng = url, index, rng
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.calls: list[tuple[float, float, str, bool]] = []  # (sent, answered or failed, what, answered)
        self.sent = 0.0
        self.replica = None
        self.token = None
        self.recorded = False

    def request(self, path: str, body: dict | None = None, timeout: float = 120) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except OSError as error:
            return 0, str(error).encode()

    def timed(self, what: str, ok: bool) -> bool:
        self.calls.append((self.sent, time.monotonic(), what, ok))
        return ok

    def open_page(self) -> bool:
        self.sent = time.monotonic()
        status, _ = self.request("")
        if status == 200:
            status, body = self.request("gradio_api/app_id")
            if status == 200:
                self.replica = json.loads(body)["app_id"]
        return self.timed("page", status == 200)

    def ngram(self, info: dict) -> bool:
        self.sent = time.monotonic()
        status, body = self.request("gradio_api/call/ngram_counts", {"data": info["data"]})
        if status != 200:
            return self.timed("ngram", False)
        event = json.loads(body)["event_id"]
        status, stream = self.request(f"gradio_api/call/ngram_counts/{event}")
        return self.timed("ngram", status == 200 and b"event: complete" in stream)

    def answer(self, code: str) -> bool:
        self.sent = time.monotonic()
        status, body = self.request("class/api/answer", {"code": code, "student": self.token, "slug": CHECK,
                                                         "prediction": self.rng.choice(PICKS), "lang": "en"})
        self.recorded |= status == 200
        return self.timed("answer", status == 200)


def ngram_data(url: str) -> dict:
    with urllib.request.urlopen(url + "gradio_api/info", timeout=60) as response:
        parameters = json.loads(response.read())["named_endpoints"]["/ngram_counts"]["parameters"]
    return {"data": [NGRAM.get(p["parameter_name"], p.get("parameter_default")) for p in parameters]}


def post(url: str, action: str, body: dict) -> dict:
    request = urllib.request.Request(f"{url}class/api/{action}", data=json.dumps({**body, "lang": "en"}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=64)
    parser.add_argument("--think", type=float, default=8.0, help="mean pause between a learner's clicks, seconds")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--kill-at", type=float, default=30.0)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="plm-fault-"))
    port, first = free_port(), two_free_ports()  # the replicas on first and first + 1
    url = f"http://127.0.0.1:{port}/plm/"
    script = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "serve_replicas.py"), "--replicas", "2", "--port", str(port),
         "--first-app-port", str(first), "--prefix", str(tmp), "--class-db", str(tmp / "classes.sqlite"), "--",
         "--offline", "--device", "cpu", "--max-events-per-address", "1000"],
        cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1", GRADIO_ANALYTICS_ENABLED="False"),
        stdout=subprocess.PIPE, text=True, start_new_session=True)
    events, pids = [], {}

    def read():
        for line in script.stdout:
            event = json.loads(line)
            events.append((time.monotonic(), event))
            if "pid" in event and "index" in event:
                pids[event["index"]] = event["pid"]

    threading.Thread(target=read, daemon=True).start()
    try:
        while sum(e["event"] == "serving" for _, e in events) < 2:
            if script.poll() is not None:
                raise SystemExit("serve_replicas.py exited")
            time.sleep(0.2)
        info = ngram_data(url)
        made = post(url, "start", {})
        code, secret = made["code"], made["secret"]
        post(url, "ask", {"code": code, "secret": secret, "slug": CHECK})
        ids = []
        for port_ in (first, first + 1):
            with urllib.request.urlopen(f"http://127.0.0.1:{port_}/plm/gradio_api/app_id", timeout=30) as r:
                ids.append(json.loads(r.read())["app_id"])

        began = time.monotonic()
        stop_at, kill_at = began + args.seconds, began + args.kill_at
        learners = [Learner(url, i, random.Random(i)) for i in range(args.learners)]
        cpu_before = time.process_time()

        def run(learner: Learner) -> None:
            time.sleep(learner.rng.uniform(0, min(args.think, 5)))  # the class arrives over a few seconds
            learner.open_page()
            status, body = learner.request("class/api/join", {"code": code, "session": secrets.token_urlsafe(16),
                                                              "nickname": "", "lang": "en"})
            if status == 200:
                learner.token = json.loads(body)["student"]
            while time.monotonic() < stop_at:
                if learner.rng.random() < 0.5:
                    learner.ngram(info)
                else:
                    learner.answer(code)
                time.sleep(learner.rng.expovariate(1 / args.think) if args.think > 0 else 0)

        threads = [threading.Thread(target=run, args=(learner,), daemon=True) for learner in learners]
        for thread in threads:
            thread.start()
        time.sleep(max(0.0, kill_at - time.monotonic()))
        killed_at = time.monotonic()
        os.kill(pids[0], signal.SIGKILL)
        late = [Learner(url, 1000 + i, random.Random(1000 + i)) for i in range(8)]
        for learner in late:  # new page loads right after the kill
            learner.open_page()
        for thread in threads:
            thread.join(args.seconds + 180)
        client_cpu = time.process_time() - cpu_before

        view = post(url, "teacher", {"code": code, "secret": secret})
        recorded = sum(learner.recorded for learner in learners)
        on_killed = [learner for learner in learners if learner.replica == ids[0]]
        failover = []  # the killed replica's learners: their first call sent after the kill, sent → answered
        for learner in on_killed:
            first_after = next(((end - sent, ok) for sent, end, _, ok in learner.calls if sent > killed_at), None)
            if first_after:
                failover.append(first_after)
        rows = [(sent, end, what, ok, learner.replica) for learner in learners
                for sent, end, what, ok in learner.calls]
        before = [r for r in rows if r[0] <= killed_at]
        after = [r for r in rows if r[0] > killed_at]
        failed = [r for r in rows if not r[3]]
        in_flight = [r for r in rows if r[0] <= killed_at < r[1]]
        latencies = sorted(r[1] - r[0] for r in after if r[3])
        page_loads = [(end - killed_at, ok) for l in late for sent, end, _, ok in l.calls]
        restarted = next((when - killed_at for when, e in events if e["event"] == "serving" and e["index"] == 0
                          and when > killed_at), None)
        print(f"learners {args.learners}, think {args.think} s, {args.seconds:.0f} s, kill at {args.kill_at:.0f} s; "
              f"{len(on_killed)} learners were on the killed replica")
        print(f"calls sent before the kill: {len(before)} ({sum(not r[3] for r in before)} failed; {len(in_flight)} "
              f"in flight at the kill); after: {len(after)} ({sum(not r[3] for r in after)} failed)")
        print("failed calls: " + (", ".join(f"{r[2]} sent at {r[0] - killed_at:+.1f} s on replica "
                                             f"{ids.index(r[4]) if r[4] in ids else '?'}" for r in failed) or "none"))
        if failover:
            waits = [wait for wait, _ in failover]
            print(f"the killed replica's learners, first call after the kill: {sum(ok for _, ok in failover)}/"
                  f"{len(failover)} answered, in median {statistics.median(waits):.2f} s, max {max(waits):.2f} s")
        if latencies:
            print(f"calls after the kill: p50 {latencies[len(latencies) // 2]:.2f} s, "
                  f"p95 {latencies[int(0.95 * (len(latencies) - 1))]:.2f} s")
        print(f"page loads right after the kill: {sum(ok for _, ok in page_loads)}/{len(page_loads)} answered, the "
              f"last {max(t for t, _ in page_loads):.2f} s after the kill")
        print(f"predictions: {recorded} students recorded, teacher's view counts {view['answered']}; lost: "
              f"{recorded - view['answered']}")
        print(f"replica 0 serving again {restarted:.1f} s after the kill" if restarted else "replica 0 not back")
        print(f"client CPU {client_cpu:.1f} s")
        return 0 if not (recorded - view["answered"]) else 1
    finally:
        script.send_signal(signal.SIGTERM)
        try:
            script.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(script.pid, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
