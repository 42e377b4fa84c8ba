"""Cold start to first answer: `python app.py --offline` from spawn to the first answered request, and where the time
goes (interpreter, imports, building the tabs, launching the server, the first answer).

The measured request is the N-gram tab's "Show counts" (`/ngram_counts`, with the tab's default inputs): the
first event a learner can ask for that needs no model. (The first tab, Overview, opens on the perplexity ladder,
which needs torch and the shipped models; the app imports torch for the first request that needs it, after the
server is up: core/loading/lazy.py.)

Two measurements, alternating:
- end to end: the real `python app.py --offline --device cpu` in a subprocess (tests/live_app.AppProcess); the clock
  runs from spawn to the first HTTP 200 (served) and then to the first answer of `/ngram_counts`; the same for the
  bare app (benchmarks/bare_app.py), as Gradio starts it and as app.py starts (`--collector-like-app`);
- breakdown: a child process that does what app.main does, step by step, timing each step (wall and the process's
  CPU time, which the load of other processes barely moves), then asks its own server for the same first answer,
  and says whether anything in the start imported torch (it should not).

    python -m benchmarks.bench_startup [--quick]
    python -m benchmarks.bench_startup --against ../old-checkout [--repeats 6]   # before/after, starts alternating

``--against DIR``: this checkout's app.py and DIR's (another commit, run with this interpreter and its packages),
started in turn, each to its first answer; medians of both and of the paired ratio.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from benchmarks.common import print_table, row
from tests.live_app import ROOT, AppProcess, app_env

FIRST_EVENT = "/ngram_counts"  # the N-gram tab's "Show counts", with the tab's default inputs (needs no model)
TARGET_S = 8.0
BARE_APP, OVER_BARE_S = "benchmarks/bare_app.py", 1.0  # issue #38 §4: within 1 s of a bare Gradio app

BREAKDOWN = r"""
import gc, json, time, sys
gc.disable()  # as app.py does when run as the app, until settle_collector
marks = [(time.perf_counter(), time.process_time())]
def mark():
    marks.append((time.perf_counter(), time.process_time()))
import gradio
mark()
import app
mark()
from core.loading import resolve
from core.loading.device import choose_device
resolve.set_offline(True)
choose_device("cpu")
blocks = app.build_app()
app.settle_collector()
mark()
blocks.launch(server_name="127.0.0.1", server_port=int(sys.argv[1]), prevent_thread_lock=True, theme=app.THEME,
              css_paths=[app.CSS_PATH], head=app.figure_head.HEAD, quiet=True)
mark()
from benchmarks.bench_startup import first_answer
first_answer(f"http://127.0.0.1:{sys.argv[1]}/")
mark()
names = ["import gradio", "import app (our modules, plotly theme; not torch)", "build the tabs", "launch",
         "first answer"]
wall = {name: b[0] - a[0] for name, a, b in zip(names, marks, marks[1:])}
cpu = {name: b[1] - a[1] for name, a, b in zip(names, marks, marks[1:])}
print("BREAKDOWN", json.dumps({"wall": wall, "cpu": cpu, "torch": "torch" in sys.modules}))
blocks.close()
"""


def first_answer(url: str) -> None:
    """The N-gram counts, through the client a learner's script would use, with the tab's default inputs."""
    from gradio_client import Client

    Client(url, verbose=False).predict(own_text="", upload=None, api_name=FIRST_EVENT)


def end_to_end(script: str = "app.py", *flags: str) -> tuple[float, float]:
    """(seconds to serve, seconds to the first answer), both from spawning `python app.py --offline` (or the bare
    reference app, benchmarks/bare_app.py, with its ``flags``)."""
    app = AppProcess("--offline", "--device", "cpu", *flags, env=app_env(), script=script)
    try:
        served = app.wait_until_serving(300)
        first_answer(app.url)
        return served, time.monotonic() - app.started
    finally:
        app.stop()


def breakdown() -> tuple[dict[str, float], dict[str, float], bool]:
    """(wall seconds, CPU seconds of the app's process) per step of a start, and whether the start imported torch;
    CPU time barely moves with the load of other processes, so its sum estimates a start on a quiet machine (the
    server's threads are included, the client's first request is not)."""
    from tests.live_app import free_port

    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", BREAKDOWN, str(free_port())], cwd=ROOT, env=app_env(),
                         capture_output=True, text=True, timeout=300, check=True)
    line = next(line for line in out.stdout.splitlines() if line.startswith("BREAKDOWN "))
    steps = json.loads(line.removeprefix("BREAKDOWN "))
    rest = time.perf_counter() - started - sum(steps["wall"].values())
    steps["wall"]["interpreter start, server close, exit (not part of a real start)"] = rest
    return steps["wall"], steps["cpu"], steps["torch"]


def run(quick: bool = False) -> list[dict]:
    repeats = 2 if quick else 20
    served, answered, bare, bare_like_app, walls, cpus, failed, torch_imported = [], [], [], [], [], [], [], []
    for _ in range(repeats):  # alternating: a real start, two bare Gradio starts, an instrumented start
        try:
            s, a = end_to_end()
            served.append(s)
            answered.append(a)
            bare.append(end_to_end(BARE_APP)[1])
            bare_like_app.append(end_to_end(BARE_APP, "--collector-like-app")[1])
            wall, cpu, torch = breakdown()
        except (RuntimeError, subprocess.CalledProcessError) as exc:  # e.g. Gradio's 3 s localhost check under load
            failed.append(str(exc).strip().splitlines()[-1][:100])
            continue
        walls.append(wall)
        cpus.append(cpu)
        torch_imported.append(torch)
    median = statistics.median
    if failed:
        print(f"{len(failed)} of {repeats} starts failed; last: {failed[-1]}", file=sys.stderr)
    if not answered:
        raise RuntimeError(f"no start reached its first answer ({failed[-1]})")
    spread = f"{min(answered):.1f}–{max(answered):.1f} s over {len(answered)}" + (f", {len(failed)} failed" if failed else "")
    rows = [row(f"cold start to first answer, app.py --offline ({spread})", median(answered), None, "s",
                f"≤ {TARGET_S:g} s", target_value=TARGET_S),
            row("  spawn to serving (first HTTP 200)", median(served), None, "s", ""),
            row("  a bare Gradio app, one plot and one table (benchmarks/bare_app.py), to its first answer",
                median(bare), None, "s", ""),
            row("  app.py minus the bare app, paired starts (median of the differences)",
                median(a - b for a, b in zip(answered, bare)), None, "s", f"≤ {OVER_BARE_S:g} s",
                target_value=OVER_BARE_S),
            # app.py starts with the cyclic collector off until its tabs are built (app.settle_collector); any app
            # could, so this is what app.py adds beyond a bare app given the same settings
            row("  the bare app started like app.py (collector off until built), to its first answer",
                median(bare_like_app), None, "s", ""),
            row("  app.py minus that bare start, paired", median(a - b for a, b in zip(answered, bare_like_app)), None,
                "s", "")]
    for name in walls[0]:
        rows.append(row(f"  breakdown (wall): {name}", median(w[name] for w in walls), None, "s", ""))
    for name in cpus[0]:
        rows.append(row(f"  breakdown (CPU time): {name}", median(c[name] for c in cpus), None, "s", ""))
    rows.append(row("  CPU time of a start, all steps (≈ a quiet machine's wall time, less interpreter start)",
                    median(sum(c.values()) for c in cpus), None, "s", f"≤ {TARGET_S:g} s"))
    rows.append(row("  instrumented starts that imported torch before the first answer", sum(torch_imported), None,
                    "starts", "0", target_value=0))
    return rows


def against(other: str, repeats: int = 6) -> list[dict]:
    """This checkout's start against ``other``'s (a folder holding another commit's app.py), alternating."""
    from pathlib import Path

    script = str(Path(other).resolve() / "app.py")
    ours, theirs = [], []
    for _ in range(repeats):
        theirs.append(end_to_end(script)[1])
        ours.append(end_to_end()[1])
    median = statistics.median
    return [row(f"cold start to first answer: this checkout ({min(ours):.1f}–{max(ours):.1f} s) against {other} "
                f"({min(theirs):.1f}–{max(theirs):.1f} s), {repeats} each", median(ours), median(theirs), "s",
                "≤ 1.0× (not worse)", target_ratio=1.0),
            row("  the same, median of the paired ratios", median(a / b for a, b in zip(ours, theirs)), None, "×",
                "≤ 1.0", target_value=1.0)]


if __name__ == "__main__":
    if "--against" in sys.argv:
        arguments = sys.argv[sys.argv.index("--against") + 1:]
        count = int(arguments[arguments.index("--repeats") + 1]) if "--repeats" in arguments else 6
        print_table(against(arguments[0], count))
    else:
        print_table(run(quick="--quick" in sys.argv))
