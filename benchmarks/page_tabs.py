"""What a smaller page would give: the app built with some of its tabs only, opened in Chromium.

    python benchmarks/page_tabs.py                 # 1 tab (the Overview), 2 tabs, and all of them; 5 loads each
    python benchmarks/page_tabs.py --tabs 1 3 --loads 9
    python benchmarks/page_tabs.py --tabs overview,transformer 99   # a page per chapter would send one chapter
    python benchmarks/page_tabs.py --walk transformer mlm --rounds 3   # the clicks after the page has loaded

Gradio's front end reads the whole page config (every component and event of every tab) before it draws anything,
so the time to the first drawn tab grows with the app. This measures that growth: for each N the app is started
offline with ``app.TABS[:N]`` (the tabs a page per chapter, or lazy tabs, would send first), and each load is a fresh
browser context, timed from the navigation to the tab bar on screen. No network throttle: add the bytes' own time
on a slow link (benchmarks/page_weight.py) to read it as a classroom would.

Each load also runs Chromium's sampling profiler (CDP ``Profiler``, 1 ms): the main thread's busy time, and the part
of it in Gradio's ``find_attached_events``, which looks for every block's events by scanning every event of the page
(blocks × events: the term that grows fastest with the app).

``--walk TAB …`` measures the clicks instead of the load: the lesson steps of those tabs (every "Show me", each from
another sub-tab, as tests/e2e/learner_path.py clicks them) in one page of an app built with the Overview and those
tabs only, and of the whole app, alternating, after one warm-up session on each server (the results are computed in
both; each click's cost left is the page's). Per walk: its seconds, the CPU seconds of Chromium's renderer processes
and of the app's (read from /proc), and the main thread's busy time in Gradio's
``update_state``, which every status message of every event runs for every component that has shown a loading
status in the page (a walk of the whole block tree each time).
"""
from __future__ import annotations

import argparse
import collections
import os
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


TABS_VARIABLE = "PLM_PAGE_TABS"  # set: this file is the app (load_test.start_server's script) with that many tabs


def serve() -> None:
    """This file run by load_test.start_server: app.py's own flags, with the app's first $PLM_PAGE_TABS tabs."""
    sys.path.insert(0, str(ROOT))
    import app

    app.TABS = chosen_tabs(app.TABS, os.environ[TABS_VARIABLE], app.tab_id)
    app.main(sys.argv[1:])


def chosen_tabs(tabs: list, chosen: str, tab_id) -> list:
    """``chosen``: "N" (the first N tabs) or "id,id,…" (those tabs, in the app's order)."""
    if chosen.isdigit():
        return tabs[:int(chosen)]
    wanted = chosen.split(",")
    unknown = set(wanted) - {tab_id(tab) for tab in tabs}
    if unknown:
        raise SystemExit(f"no tab {sorted(unknown)}; the tabs are {[tab_id(tab) for tab in tabs]}")
    return [tab for tab in tabs if tab_id(tab) in wanted]


def main_thread(profile: dict, function: str = "find_attached_events") -> tuple[float, float]:
    """(busy seconds, seconds under ``function``) in one CDP CPU profile: every sample but idle ones, and the samples
    with that function anywhere on their stack."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent = {child: node["id"] for node in profile["nodes"] for child in node.get("children", [])}
    spent = collections.Counter()
    for sample, micros in zip(profile["samples"], profile["timeDeltas"][1:] + [0]):
        if nodes[sample]["callFrame"]["functionName"] == "(idle)":
            continue
        spent["busy"] += micros
        node = sample
        while node is not None and nodes[node]["callFrame"]["functionName"] != function:
            node = parent.get(node)
        spent["scan"] += micros if node is not None else 0
    return spent["busy"] / 1e6, spent["scan"] / 1e6


def first_paints(browser, url: str, loads: int) -> tuple[list[float], list[tuple[float, float]], int, int]:
    from tests.e2e.conftest import VIEWPORT

    seconds, threads, components, events = [], [], 0, 0
    for _ in range(loads):
        context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US")
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Profiler.enable")
        cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
        cdp.send("Profiler.start")
        began = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.get_by_role("tab").first.wait_for(timeout=120_000)
        seconds.append(time.perf_counter() - began)
        threads.append(main_thread(cdp.send("Profiler.stop")["profile"]))
        components, events = page.evaluate("[window.gradio_config.components.length, "
                                           "window.gradio_config.dependencies.length]")
        context.close()
    return seconds, threads, components, events


def renderer_cpu_seconds(root: int) -> float:
    """CPU seconds so far of Chromium's renderer processes below process ``root`` (Linux /proc). The app's own are
    load_report.server_cpu_seconds': it leads a session of its own, the browser does not."""
    tick, parents, spent = os.sysconf("SC_CLK_TCK"), {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue  # /proc/self, /proc/cpuinfo, …
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()  # after "pid (name)"
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue  # not a process, or one that ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        if "--type=renderer" in command:
            spent[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    tree, grew = {root}, True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree, grew = tree | more, bool(more)
    return sum(seconds for pid, seconds in spent.items() if pid in tree)


def walk(browser, url: str, steps: dict, app_process) -> tuple[int, float, float, float, float, float]:
    """One page, every lesson step of ``steps``: (clicks, seconds, renderer CPU s, app CPU s, main thread busy s, of it
    in update_state s)."""
    from benchmarks.load_report import server_cpu_seconds
    from tests.e2e import learner_path

    page = learner_path.new_page(browser, url, "en-US")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
    renderer, server = renderer_cpu_seconds(os.getpid()), server_cpu_seconds(app_process.pid)
    cdp.send("Profiler.start")
    began = time.perf_counter()
    clicks, problems = learner_path.walk_lessons(page, steps)
    seconds = time.perf_counter() - began
    busy, status = main_thread(cdp.send("Profiler.stop")["profile"], "update_state")
    renderer, server = renderer_cpu_seconds(os.getpid()) - renderer, server_cpu_seconds(app_process.pid) - server
    page.context.close()
    if problems:
        raise RuntimeError("\n".join(problems))
    return clicks, seconds, renderer, server, busy, status


def walks(tabs: list[str], rounds: int) -> None:
    from playwright.sync_api import sync_playwright

    from benchmarks.load_test import start_server
    from tests.e2e import learner_path
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    every = learner_path.catalogue("en-US")[1]  # {tab: its lesson steps}
    if set(tabs) - set(every):
        raise SystemExit(f"no lesson steps to walk in: {', '.join(sorted(set(tabs) - set(every)))} "
                         f"(tabs with steps: {', '.join(sorted(every))})")
    steps = {tab: targets for tab, targets in every.items() if tab in tabs}
    pages = {"the Overview and " + ", ".join(tabs): "overview," + ",".join(tabs), "the whole app": "99"}
    rows = {name: [] for name in pages}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        servers = {}
        try:
            for name, chosen in pages.items():
                os.environ[TABS_VARIABLE] = chosen
                servers[name] = start_server(script=__file__)
                walk(browser, servers[name][1], steps, servers[name][0])  # warm-up: the results computed once
            for _ in range(rounds):
                for name, (process, url) in servers.items():
                    rows[name].append(walk(browser, url, steps, process))
        finally:
            for process, _ in servers.values():
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)
            browser.close()
    print(f"| page | clicks | walk, median of {rounds} | Chromium renderer CPU | app CPU | main thread busy "
          "| of it in update_state |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, runs in rows.items():
        median = [statistics.median(run[i] for run in runs) for i in range(1, 6)]
        print(f"| {name} | {runs[0][0]} | {median[0]:.1f} s | {median[1]:.1f} s | {median[2]:.1f} s "
              f"| {median[3]:.1f} s | {median[4]:.1f} s ({median[4] / median[3]:.0%}) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tabs", nargs="+", default=["1", "2", "99"],
                        help="first N tabs (99: all), or tab ids joined by commas (overview,transformer)")
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--walk", nargs="+", metavar="TAB", help="time these tabs' lesson steps instead")
    parser.add_argument("--rounds", type=int, default=3, help="walks per page with --walk (alternating)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.walk:
        walks(args.walk, args.rounds)
        return
    from playwright.sync_api import sync_playwright

    from benchmarks.load_test import start_server
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    print("| tabs in the page | components | events | to the tab bar on screen, median (min–max) of loads "
          "| main thread busy | of it in find_attached_events |")
    print("|---|---:|---:|---:|---:|---:|")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        for tabs in args.tabs:
            os.environ[TABS_VARIABLE] = tabs
            process, url = start_server(script=__file__)
            try:
                seconds, threads, components, events = first_paints(browser, url, args.loads)
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)
            busy = statistics.median(busy for busy, _ in threads)
            scan = statistics.median(scan for _, scan in threads)
            print(f"| {'all' if tabs == '99' else tabs} | {components:,} | {events} | {statistics.median(seconds):.2f} s "
                  f"({min(seconds):.2f}–{max(seconds):.2f}) | {busy:.2f} s | {scan:.2f} s ({scan / busy:.0%}) |")
        browser.close()


if __name__ == "__main__":
    serve() if TABS_VARIABLE in os.environ else main()
