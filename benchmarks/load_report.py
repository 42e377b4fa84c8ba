"""benchmarks/load_test.py's measurements and their report (issue 56): one class size's timed window (a Step), the
ramp's capacity rule, the CPU the server and the clients spent, and the tables printed per step and per ramp."""
from __future__ import annotations

import os
import resource
import statistics
from dataclasses import dataclass
from pathlib import Path

PAGE, LOAD_EVENT = "page", "app_language"  # opening the page: GET / (timed as "page"), then the page's load event


@dataclass
class Step:
    """One class size's timed window: what its learners measured and what the two processes spent."""
    learners: int
    window: float  # seconds, from the start until the last learner's last call returned
    latencies: dict[str, list[float]]
    errors: dict[str, list[str]]
    endpoints: list[str]  # the clicks' endpoints, in order (page opens come on top)
    server_cpu: float | None = None  # CPU seconds of the server's processes over the window; None: not known
    client_cpu: float = 0.0  # CPU seconds of this process over the window
    hub_requests: int = 0  # requests the local Hub (--real-size) answered during the window
    pages_in_window: bool = True  # False: the pages opened before the window (no pause, or gradio_client)

    @property
    def checked(self) -> list[str]:
        """The endpoints the p95 goal applies to: the page opens and every click endpoint."""
        return [PAGE, LOAD_EVENT, *self.endpoints]

    @property
    def clicks(self) -> int:
        return sum(len(self.latencies.get(name, [])) for name in self.endpoints)

    @property
    def calls_per_second(self) -> float:
        return self.clicks / self.window if self.window > 0 else float("nan")

    @property
    def error_count(self) -> int:
        return sum(map(len, self.errors.values()))

    def p95(self, name: str) -> float:
        times = self.latencies.get(name, [])
        return percentile(times, 0.95) if times else float("nan")

    def worst(self) -> tuple[str, float]:
        """The endpoint with the highest p95 (an endpoint without any answered call counts as infinitely slow)."""
        return max(((name, self.p95(name) if self.latencies.get(name) else float("inf")) for name in self.checked),
                   key=lambda pair: pair[1])

    def passes(self, p95_goal: float) -> bool:
        """0 errors, and every checked endpoint answered at least once with p95 ≤ the goal."""
        return self.error_count == 0 and all(self.latencies.get(name) and self.p95(name) <= p95_goal
                                             for name in self.checked)


def capacity(steps: list[Step], p95_goal: float) -> int | None:
    """The largest class size that passes with every smaller size passing too; None when the smallest fails."""
    served = None
    for step in sorted(steps, key=lambda step: step.learners):
        if not step.passes(p95_goal):
            break
        served = step.learners
    return served


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def server_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of the server's processes: every process in the session ``pid`` leads (the
    server is started with start_new_session, so its children are in it), with the children they have already reaped
    (cutime + cstime). Linux /proc."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # a process that ended while we looked
            continue
        if int(fields[3]) == pid:  # field 6, the session id
            total += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
    return total / os.sysconf("SC_CLK_TCK")


def client_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, every thread: the clients (and --real-size's local Hub)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cores(seconds: float | None, window: float) -> str:
    return "n/a" if seconds is None else f"{seconds / window:.2f}"


def print_step(step: Step, p95_goal: float) -> None:
    """One step's full table: every endpoint's calls, errors, p50, p95, max, calls/s; then its totals."""
    header = f"{'endpoint':<22} {'calls':>6} {'errors':>6} {'p50 s':>8} {'p95 s':>8} {'max s':>8} {'calls/s':>8}"
    print(header + "\n" + "-" * len(header))
    for name in [*step.checked, *(e for e in step.errors if e not in step.checked)]:
        times, errs = step.latencies.get(name, []), step.errors.get(name, [])
        p50, p95 = (statistics.median(times), percentile(times, 0.95)) if times else (float("nan"),) * 2
        rate = ("before" if name in (PAGE, LOAD_EVENT) and not step.pages_in_window
                else f"{len(times) / step.window:.2f}")
        print(f"{name:<22} {len(times):>6} {len(errs):>6} {p50:>8.3f} {p95:>8.3f} "
              f"{max(times, default=float('nan')):>8.3f} {rate:>8}")
    print(f"total: {step.clicks} clicks, {step.error_count} errors, {step.calls_per_second:.1f} calls/s (clicks; "
          f"page opens apart) over {step.window:.1f} s; CPU: server "
          f"{float('nan') if step.server_cpu is None else step.server_cpu:.1f} s "
          f"({cores(step.server_cpu, step.window)} cores), clients {step.client_cpu:.1f} s "
          f"({cores(step.client_cpu, step.window)} cores, this process)"
          + (f"; local Hub requests in the window: {step.hub_requests}" if step.hub_requests else ""))
    for name, errs in step.errors.items():
        print(f"  {name}: {len(errs)} errors, e.g. {errs[0]}")
    print("PASS" if step.passes(p95_goal) else f"FAIL (goal: 0 errors, p95 ≤ {p95_goal:g} s for every endpoint)",
          flush=True)


def ramp_table(steps: list[Step], p95_goal: float) -> str:
    """The ramp's compact table (Markdown): one row per step."""
    lines = ["| learners | calls/s | errors | server cores (of 2) | client cores | worst p95 s (endpoint) | "
             f"page / {LOAD_EVENT} p95 s | p95 ≤ {p95_goal:g} s, 0 errors |", "|---|---|---|---|---|---|---|---|"]
    for step in steps:
        name, p95 = step.worst()
        lines.append(f"| {step.learners} | {step.calls_per_second:.1f} | {step.error_count} | "
                     f"{cores(step.server_cpu, step.window)} | {cores(step.client_cpu, step.window)} | "
                     f"{p95:.2f} ({name}) | {step.p95(PAGE):.2f} / {step.p95(LOAD_EVENT):.2f} | "
                     f"{'yes' if step.passes(p95_goal) else 'no'} |")
    return "\n".join(lines)
