"""What a smaller page would give the first paint: the app built with its first N tabs only, opened in Chromium.

    python benchmarks/page_tabs.py                 # 1 tab (the Overview), 2 tabs, and all of them; 5 loads each
    python benchmarks/page_tabs.py --tabs 1 3 --loads 9

Gradio's front end reads the whole page config (every component and event of every tab) before it draws anything,
so the time to the first drawn tab grows with the app. This measures that growth: for each N the app is started
offline with ``app.TABS[:N]`` (the tabs a page per chapter, or lazy tabs, would send first), and each load is a fresh
browser context, timed from the navigation to the tab bar on screen. No network throttle: add the bytes' own time
on a slow link (benchmarks/page_weight.py) to read it as a classroom would.

Each load also runs Chromium's sampling profiler (CDP ``Profiler``, 1 ms): the main thread's busy time, and the part
of it in Gradio's ``find_attached_events``, which looks for every block's events by scanning every event of the page
(blocks × events: the term that grows fastest with the app).
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

    app.TABS = app.TABS[:int(os.environ[TABS_VARIABLE])]
    app.main(sys.argv[1:])


def main_thread(profile: dict) -> tuple[float, float]:
    """(busy seconds, seconds under find_attached_events) in one CDP CPU profile: every sample but idle ones, and the
    samples with that function anywhere on their stack."""
    nodes = {node["id"]: node for node in profile["nodes"]}
    parent = {child: node["id"] for node in profile["nodes"] for child in node.get("children", [])}
    spent = collections.Counter()
    for sample, micros in zip(profile["samples"], profile["timeDeltas"][1:] + [0]):
        if nodes[sample]["callFrame"]["functionName"] == "(idle)":
            continue
        spent["busy"] += micros
        node = sample
        while node is not None and nodes[node]["callFrame"]["functionName"] != "find_attached_events":
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tabs", type=int, nargs="+", default=[1, 2, 99], help="first N tabs (99: all)")
    parser.add_argument("--loads", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from benchmarks.load_test import start_server
    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    print("| tabs in the page | components | events | to the tab bar on screen, median (min–max) of loads "
          "| main thread busy | of it in find_attached_events |")
    print("|---|---:|---:|---:|---:|---:|")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        for tabs in args.tabs:
            os.environ[TABS_VARIABLE] = str(tabs)
            process, url = start_server(script=__file__)
            try:
                seconds, threads, components, events = first_paints(browser, url, args.loads)
            finally:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(30)
            busy = statistics.median(busy for busy, _ in threads)
            scan = statistics.median(scan for _, scan in threads)
            print(f"| {tabs if tabs < 99 else 'all'} | {components:,} | {events} | {statistics.median(seconds):.2f} s "
                  f"({min(seconds):.2f}–{max(seconds):.2f}) | {busy:.2f} s | {scan:.2f} s ({scan / busy:.0%}) |")
        browser.close()


if __name__ == "__main__":
    serve() if TABS_VARIABLE in os.environ else main()
