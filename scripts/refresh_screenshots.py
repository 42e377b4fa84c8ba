"""Refresh the README's screenshots (docs/screenshots/<tab>.png) on purpose.

The browser tests write their screenshots to the git-ignored tests/e2e/_artifacts/; this script runs the same
scenarios with PLM_SCREENSHOTS pointing at docs/screenshots, so the tracked images change only when asked.

    python scripts/refresh_screenshots.py
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    env = dict(os.environ, PLM_SCREENSHOTS=str(ROOT / "docs" / "screenshots"), PLM_REQUIRE_E2E="1")
    command = [sys.executable, "-m", "pytest", "tests/e2e/test_browser.py", "-m", "e2e", "-q", "-p", "no:cacheprovider",
               "-k", "test_tab_runs_its_example_and_renders"]
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
