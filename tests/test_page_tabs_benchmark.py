"""benchmarks/page_tabs.py: the tabs an app is built with, and the renderers' CPU seconds it reads from /proc."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks import page_tabs

BURN = """import sys, time
while time.process_time() < 0.4:
    pass
print(time.process_time(), flush=True)
sys.stdin.read()  # stays alive (and counted) until the test closes its input
"""


def test_renderer_cpu_seconds_counts_the_renderers_below_a_process_and_nothing_else():
    before = page_tabs.renderer_cpu_seconds(os.getpid())
    children = [subprocess.Popen([sys.executable, "-c", BURN, *marker], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True) for marker in ([], ["--type=renderer"])]
    try:
        burnt = [float(child.stdout.readline()) for child in children]  # each child's own CPU seconds, >= 0.4
        renderers = page_tabs.renderer_cpu_seconds(os.getpid()) - before
    finally:
        for child in children:
            child.stdin.close()
            child.wait(30)
    assert min(burnt) >= 0.4
    # the marked child only, in clock ticks of 0.01 s (the unmarked one burnt as much: it would double the sum)
    assert burnt[1] - 0.05 <= renderers <= burnt[1] + 0.3


def test_an_app_is_built_with_the_first_n_tabs_or_the_named_ones_in_the_app_s_order():
    import app

    assert page_tabs.chosen_tabs(app.TABS, "2", app.tab_id) == app.TABS[:2]
    chosen = page_tabs.chosen_tabs(app.TABS, "transformer,overview", app.tab_id)
    assert [app.tab_id(tab) for tab in chosen] == ["overview", "transformer"]
    with pytest.raises(SystemExit, match="no tab \\['nope'\\]"):
        page_tabs.chosen_tabs(app.TABS, "overview,nope", app.tab_id)
    # --walk: a tab with no lesson steps to click is refused before any browser starts, naming the ones that have
    with pytest.raises(SystemExit, match="no lesson steps to walk in: nope \\(tabs with steps: attention, .*transformer"):
        page_tabs.walks(["transformer", "nope"], rounds=1)
