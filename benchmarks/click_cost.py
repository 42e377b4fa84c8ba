"""Server CPU per click: one browser-like page calls each load-test endpoint N times in a row, with the preset and
then with the learner's own text, and the server's CPU time (user + system, /proc/<pid>/stat) is read around each
series. A model view's click is its download step and its model step, as the page sends them.

    python benchmarks/click_cost.py              # starts `app.py --offline` itself; 30 clicks per series
    python benchmarks/click_cost.py --clicks 10 --endpoints attention_multihead embeddings_analogy

Under a class the server is bound by its one interpreter lock (benchmarks/README.md, issue #38), so its CPU per
click is what sets how many clicks a second it can answer. Linux only (/proc). Issue #38, third round.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
from benchmarks.load_clicks import CALLS, DOWNLOAD_FIRST, arguments  # noqa: E402
from benchmarks.load_test import start_server  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


async def measure(url: str, pid: int, endpoints: list[str], clicks: int) -> dict[tuple[str, bool], float]:
    import httpx

    from benchmarks.browser_client import Api, Page

    async with httpx.AsyncClient(timeout=300) as http:
        page = Page(http, await Api.fetch(http, url))

        async def click(name: str, kwargs: dict) -> None:
            if name in DOWNLOAD_FIRST:
                await page.predict(f"{name}_download", *(kwargs[key] for key in DOWNLOAD_FIRST[name]))
            await page.predict(name, **kwargs)

        costs = {}
        for name in endpoints:
            await click(name, arguments(name, 0, 0, False))  # first loads are not what a click costs
            for own in (False, True):
                before = cpu_seconds(pid)
                for i in range(clicks):
                    await click(name, arguments(name, 1, 100 + i, own))
                costs[(name, own)] = (cpu_seconds(pid) - before) / clicks * 1e3
            print(f"{name:<22} preset {costs[(name, False)]:6.1f} ms   own text {costs[(name, True)]:6.1f} ms",
                  flush=True)
        return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=30, help="clicks per endpoint and kind (default 30)")
    parser.add_argument("--endpoints", nargs="+", choices=list(CALLS), default=list(CALLS))
    args = parser.parse_args(argv)
    server, url = start_server()
    try:
        costs = asyncio.run(measure(url, server.pid, args.endpoints, args.clicks))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
    print(f"mean over {len(args.endpoints)} endpoints, half own text: {sum(costs.values()) / len(costs):.1f} ms "
          "of server CPU per click")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
