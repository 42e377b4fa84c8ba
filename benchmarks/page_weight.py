"""The first page on classroom wifi (issue #53): its weight on the wire, and how long a learner waits to read it.

One learner: Chromium opens the app with DevTools' network emulation (``Network.emulateNetworkConditions``: 5 Mbit/s
down, 1 Mbit/s up, 40 ms round trip) in a fresh context (empty cache), three times. From the page's performance
entries (``transferSize``: headers and body as they crossed the wire, compressed when they were):

* the bytes that arrived before the Overview's text shows, by kind (HTML, config, JS, CSS, fonts, other). The
  plotly.js chunk that the Overview imports once it is on screen (demo/figures.PLOTLY_PRELOAD_JS) is reported on its
  own line and never counted: it loads behind the text;
* the time from navigation start until the Overview's heading is on screen;
* the time until the first plotted tab (N-gram, clicked as soon as the Overview shows) has its figures and tables
  filled (tests/e2e/first_open.FULL_JS), plotly.js included.

A class: 30 HTTP clients in this one process share ONE 5 Mbit/s link (a FIFO token bucket that every byte read
passes through, and 40 ms before each request's answer) and all fetch, at once, the URLs the browser fetched before
the Overview showed, with the browser's own Accept-Encoding and Accept-Language. Reported: when the first, the
median and the 30th client had all of them. Goal: the 30th within 15 s; one learner's Overview within 2 s, at most
800 KB before it.

Targets are started from a source tree (``--app NAME=DIR``, offline, the way tests/live_app.py starts app.py) or
given as running apps (``--url NAME=URL``). Several targets are measured in turn, run by run, so machine load hits
them alike. ``--nginx`` puts Debian's nginx with a tree's ``location /plm/`` block (docs/DEPLOY.md) in front of each
started app (tests/reverse_proxy.py; the block in the target's own tree).

    python -m benchmarks.page_weight                                    # this tree
    python -m benchmarks.page_weight --app main=/tmp/plm-main --app branch=.   # before / after, alternating
    python -m benchmarks.page_weight --app main=/tmp/plm-main --app branch=. --nginx
    python -m benchmarks.page_weight --url mine=http://127.0.0.1:7860/ --lang zh
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from core.text.i18n import table
from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS, VIEWPORT
from tests.e2e.first_open import FULL_JS, open_tab
from tests.live_app import app_env, free_port, serves
from tests.reverse_proxy import nginx_proxy

DOWN_BYTES_PER_S = 5_000_000 / 8  # classroom wifi: 5 Mbit/s down
UP_BYTES_PER_S = 1_000_000 / 8  # 1 Mbit/s up
RTT_S = 0.040
CLASS_SIZE = 30
GOAL_BYTES = 800_000
GOAL_ONE_S = 2.0
GOAL_CLASS_S = 15.0
KINDS = ["HTML", "config", "JS", "CSS", "fonts", "other"]
LOCALES = {"en": "en-US", "zh": "zh-CN"}

# The Overview's heading (the first line of overview.intro) once it is on screen: performance.now() then, else false.
OVERVIEW_SHOWN_JS = """heading => {
  const shown = [...document.querySelectorAll('h1, h2')].some(el => el.offsetParent !== null
      && el.innerText.trim() === heading);
  return shown && performance.now();
}"""
FULL_AT_JS = f"() => ({FULL_JS})() && performance.now()"
# Gradio's front end has drawn the app (its tab bar): before that, the Overview's text is the page's own HTML
# (demo/server/first_page.PageWords), readable but with nothing to click that runs a model.
APP_DRAWN_JS = "() => !!document.querySelector('gradio-app [role=tablist]') && performance.now()"
ENTRIES_JS = """() => [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]
  .map(e => ({url: e.name, navigation: e.entryType === 'navigation', transfer: e.transferSize,
              body: e.encodedBodySize, decoded: e.decodedBodySize, start: e.startTime, end: e.responseEnd}))"""
BIG_TIMING_BUFFER_JS = "performance.setResourceTimingBufferSize(2000);"


def overview_heading(lang: str) -> str:
    return table(lang)["overview.intro"].splitlines()[0].lstrip("#").strip()


def first_plotted_tab(lang: str) -> str:
    return table(lang)["tabs.ngram"]


def kind(entry: dict) -> str:
    """An entry's kind: HTML (the page), config (the app's JSON config or API info), JS, CSS, fonts, plotly.js."""
    path = urlsplit(entry["url"]).path
    if entry["navigation"]:
        return "HTML"
    if "/PlotlyPlot-" in path:
        return "plotly.js"
    if path.endswith(("/config", "/gradio_api/info", "/info")):
        return "config"
    if path.endswith((".js", ".mjs")):
        return "JS"
    if path.endswith(".css"):
        return "CSS"
    if path.endswith((".woff2", ".woff", ".ttf", ".otf")):
        return "fonts"
    return "other"


# ----------------------------------------------------------------------------------------------------------------
# one learner, in Chromium


def open_once(browser, url: str, lang: str) -> dict:
    """One cold page load on the emulated link: bytes by kind before the Overview shows, and the times."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale=LOCALES[lang])
    try:
        context.add_init_script(BIG_TIMING_BUFFER_JS)
        page = context.new_page()
        page.set_default_timeout(180_000)
        cdp = context.new_cdp_session(page)
        cdp.send("Network.enable")
        cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
        cdp.send("Network.emulateNetworkConditions", {
            "offline": False, "latency": RTT_S * 1000, "downloadThroughput": DOWN_BYTES_PER_S,
            "uploadThroughput": UP_BYTES_PER_S})
        response = page.goto(url, wait_until="commit")
        request_headers = response.request.all_headers()
        overview_ms = page.wait_for_function(OVERVIEW_SHOWN_JS, arg=overview_heading(lang), polling="raf").json_value()
        before = [e for e in page.evaluate(ENTRIES_JS) if e["end"] <= overview_ms]
        drawn_ms = page.wait_for_function(APP_DRAWN_JS, polling="raf").json_value()
        open_tab(page, first_plotted_tab(lang))
        plotted_ms = page.wait_for_function(FULL_AT_JS, polling="raf").json_value()
        after = page.evaluate(ENTRIES_JS)
    finally:
        context.close()
    counted = [e for e in before if kind(e) != "plotly.js"]
    by_kind = {k: sum(e["transfer"] for e in counted if kind(e) == k) for k in KINDS}
    plotly = [e for e in after if kind(e) == "plotly.js"]
    return {"overview_s": overview_ms / 1000, "drawn_s": drawn_ms / 1000, "plotted_s": plotted_ms / 1000,
            "bytes": sum(by_kind.values()),
            "by_kind": by_kind, "requests": len(counted),
            "decoded": sum(e["decoded"] for e in counted),
            "plotly_bytes": sum(e["transfer"] for e in plotly),
            "plotly_before_overview": any(kind(e) == "plotly.js" for e in before),
            "urls": [e["url"] for e in counted],
            "encoding": request_headers.get("accept-encoding", ""),
            "language": request_headers.get("accept-language", "")}


# ----------------------------------------------------------------------------------------------------------------
# a class: 30 clients, one link


class SharedLink:
    """One link for every client: bytes cross it one after another at ``rate`` bytes/s (first come, first served)."""

    def __init__(self, rate: float):
        self.rate = rate
        self.free_at = 0.0

    async def carry(self, size: int) -> None:
        now = time.monotonic()
        self.free_at = max(self.free_at, now) + size / self.rate
        await asyncio.sleep(self.free_at - now)


async def _throttled_fetch(client, link: SharedLink, url: str) -> int:
    await asyncio.sleep(RTT_S)
    async with client.stream("GET", url) as response:
        response.raise_for_status()
        size = sum(len(k) + len(v) + 4 for k, v in response.headers.raw) + 17  # status line and headers
        await link.carry(size)
        async for chunk in response.aiter_raw():
            await link.carry(len(chunk))
            size += len(chunk)
    return size


async def learner(link: SharedLink, urls: list[str], headers: dict[str, str], started: float) -> tuple[float, int]:
    """One learner's first page: the HTML, then what it loads, six at a time (a browser's connections per host).
    Returns (seconds from the class's start until its last byte, bytes it took off the link)."""
    import httpx

    limits = httpx.Limits(max_connections=6, max_keepalive_connections=0)  # uvicorn drops idle ones after 5 s
    async with httpx.AsyncClient(headers=headers, limits=limits, timeout=300) as client:
        carried = await _throttled_fetch(client, link, urls[0])
        carried += sum(await asyncio.gather(*(_throttled_fetch(client, link, url) for url in urls[1:])))
    return time.monotonic() - started, carried


async def class_opens(urls: list[str], headers: dict[str, str], size: int = CLASS_SIZE,
                      rate: float = DOWN_BYTES_PER_S) -> dict:
    """``size`` learners at once on one link of ``rate`` bytes/s (inf: the server's and this process's own pace)."""
    link = SharedLink(rate)
    started = time.monotonic()
    results = await asyncio.gather(*(learner(link, urls, headers, started) for _ in range(size)))
    done = sorted(seconds for seconds, _ in results)
    return {"first_s": done[0], "median_s": statistics.median(done), "last_s": done[-1],
            "bytes_each": statistics.median(carried for _, carried in results)}


# ----------------------------------------------------------------------------------------------------------------
# targets


@contextmanager
def started_app(tree: Path, root_path: str = ""):
    """``python app.py --offline`` from a source tree on a free port; yields (URL, port)."""
    port = free_port()
    args = [sys.executable, "app.py", "--offline", "--device", "cpu", "--port", str(port)]
    if root_path:
        args += ["--root-path", root_path, "--trusted-proxy", "127.0.0.1"]
    log = tempfile.NamedTemporaryFile(prefix="page-weight-", suffix=".log", delete=False)
    process = subprocess.Popen(args, cwd=tree, env=app_env(HF_HUB_OFFLINE="1"), stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        began = time.monotonic()
        while not serves(url):
            if process.poll() is not None or time.monotonic() - began > 300:
                raise RuntimeError(f"{tree}/app.py did not serve {url}: see {log.name}")
            time.sleep(0.5)
        yield url, port
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(20)
        log.close()


def nginx_block_file(tree: Path) -> Path:
    """Where a tree keeps its nginx block: docs/DEPLOY.md, or README.md in a tree from before issue #50."""
    deploy = tree / "docs" / "DEPLOY.md"
    return deploy if deploy.exists() else tree / "README.md"


def targets(args, stack: ExitStack) -> dict[str, str]:
    found = {}
    for spec in args.app or ([] if args.url else ["this=."]):
        name, _, tree = spec.partition("=")
        tree = Path(tree).resolve()
        url, port = stack.enter_context(started_app(tree, "/plm" if args.nginx else ""))
        if args.nginx:
            url = stack.enter_context(nginx_proxy(port, Path(stack.enter_context(tempfile.TemporaryDirectory())),
                                                  readme=nginx_block_file(tree)))
        found[name] = url
    for spec in args.url or []:
        name, _, url = spec.partition("=")
        found[name] = url
    return found


def kb(size: float) -> str:
    return f"{size / 1000:,.0f} KB"


def report(name: str, runs: list[dict]) -> None:
    median = lambda key: statistics.median(run[key] for run in runs)  # noqa: E731
    print(f"\n== {name}: {runs[0]['requests']} requests before the Overview; Accept-Encoding: {runs[0]['encoding']!r}; "
          f"Accept-Language: {runs[0]['language']!r}")
    print(f"  bytes before the Overview's text (median of {len(runs)}): {kb(median('bytes'))} "
          f"(goal <= {kb(GOAL_BYTES)}; decoded {kb(median('decoded'))})")
    for k in KINDS:
        print(f"    {k:<7} {kb(statistics.median(run['by_kind'][k] for run in runs)):>10}")
    print(f"    plotly.js preload, not counted: {kb(median('plotly_bytes'))}"
          f"{' (finished before the Overview)' if any(r['plotly_before_overview'] for r in runs) else ''}")
    seconds = lambda key: ", ".join(f"{run[key]:.2f}" for run in runs)  # noqa: E731
    print(f"  Overview's text shows: {seconds('overview_s')} s "
          f"(median {median('overview_s'):.2f}; goal <= {GOAL_ONE_S:g} s)")
    print(f"  the app drawn (its tab bar on screen): {seconds('drawn_s')} s (median {median('drawn_s'):.2f})")
    print(f"  first plotted tab answers: {seconds('plotted_s')} s "
          f"(median {median('plotted_s'):.2f}, from navigation start)")


def report_class(name: str, crowd: dict) -> None:
    if crowd:
        print(f"\n== {name}: class of {CLASS_SIZE} on one link: first {crowd['first_s']:.1f} s, "
              f"median {crowd['median_s']:.1f} s, 30th {crowd['last_s']:.1f} s (goal <= {GOAL_CLASS_S:g} s); {kb(crowd['bytes_each'])} each")
        print(f"    the link alone: {CLASS_SIZE * crowd['bytes_each'] / DOWN_BYTES_PER_S:.1f} s for the 30th; "
              f"without the throttle (server and clients only): {crowd['unthrottled_s']:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--app", action="append", metavar="NAME=DIR", help="start app.py from this source tree")
    parser.add_argument("--url", action="append", metavar="NAME=URL", help="a running app")
    parser.add_argument("--nginx", action="store_true", help="behind docs/DEPLOY.md's nginx block (started apps only)")
    parser.add_argument("--lang", choices=sorted(LOCALES), default="en", help="the browser's language")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-class", action="store_true", help="skip the 30 clients")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with ExitStack() as stack:
        found = targets(args, stack)
        print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}; targets: {found}")
        runs: dict[str, list[dict]] = {name: [] for name in found}
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
            for name, url in found.items():  # one untimed open each: the server's first page and model loads
                open_once(browser, url, args.lang)
            for _ in range(args.runs):
                for name, url in found.items():
                    runs[name].append(open_once(browser, url, args.lang))
            browser.close()
        for name in found:
            report(name, runs[name])
        for name in found:
            if not args.no_class:
                first = runs[name][0]
                headers = {"Accept-Encoding": first["encoding"], "Accept-Language": first["language"]}
                crowd = asyncio.run(class_opens(first["urls"], headers))
                crowd["unthrottled_s"] = asyncio.run(class_opens(first["urls"], headers, rate=float("inf")))["last_s"]
                report_class(name, crowd)


if __name__ == "__main__":
    main()
