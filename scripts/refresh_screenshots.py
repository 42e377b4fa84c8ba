"""Refresh the README's screenshots on purpose.

- docs/screenshots/<tab>.png: every tab running its example (tests/e2e/test_browser.py).
- docs/screenshots/i18n/<zh|en>-<tab>.png: a few tabs in a 中文 and in an English browser
  (tests/e2e/test_i18n_acceptance.py, which checks that no string of the other language is visible).

The browser tests write the same screenshots to the git-ignored tests/e2e/_artifacts/; this script runs the
scenarios with PLM_SCREENSHOTS pointing at docs/, so the tracked images change only when asked.

    python scripts/refresh_screenshots.py            # both sets
    python scripts/refresh_screenshots.py --i18n     # only the 中文 / English pairs

It refuses to run without a CJK font and an emoji font (.ci/run's apt line installs both): Chromium would draw the
Chinese text and the buttons' symbols (➕, 🔗, 🎞) as empty boxes, which a learner's machine does not.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"
I18N_TABS = ["overview", "ngram", "attention", "mlm"]  # the pairs the README shows


def pytest(test_file: str, selection: str, folder: Path) -> int:
    env = dict(os.environ, PLM_SCREENSHOTS=str(folder), PLM_REQUIRE_E2E="1")
    command = [sys.executable, "-m", "pytest", test_file, "-m", "e2e", "-q", "-p", "no:cacheprovider",
               "-k", selection]
    return subprocess.call(command, cwd=ROOT, env=env)


FONTS = {"a CJK font (apt-get install fonts-wqy-microhei)": ":lang=zh", "an emoji font (apt-get install "
         "fonts-noto-color-emoji)": ":charset=1f517"}  # fontconfig patterns: Chinese, and 🔗 (U+1F517)


def missing_fonts() -> list[str]:
    """The fonts of FONTS that fontconfig cannot find (all of them where fc-list itself is missing)."""
    def has(pattern: str) -> bool:
        try:
            return bool(subprocess.run(["fc-list", pattern], capture_output=True, text=True).stdout.strip())
        except FileNotFoundError:
            return False
    return [name for name, pattern in FONTS.items() if not has(pattern)]


def main(argv: list[str]) -> int:
    if missing := missing_fonts():
        print(f"not refreshing: Chromium needs {' and '.join(missing)} to draw every character", file=sys.stderr)
        return 1
    status = 0
    if "--i18n" not in argv:
        status |= pytest("tests/e2e/test_browser.py", "test_tab_runs_its_example_and_renders", SHOTS)
    tabs = " or ".join(I18N_TABS)
    status |= pytest("tests/e2e/test_i18n_acceptance.py", f"test_each_tab_speaks_the_browser_language and ({tabs})",
                     SHOTS / "i18n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
