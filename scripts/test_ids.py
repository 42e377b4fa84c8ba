"""Bookkeeping for changes to the test suite (issue 49): no check may be lost when the suite is restructured.

    python scripts/test_ids.py list > ids.txt               # every collected test id, sorted (no test runs)
    python scripts/test_ids.py compare before.txt after.txt # ids removed / added; each removed id must be merged
    python scripts/test_ids.py results before.xml after.xml # junit reports: no fewer passed, no more skipped

A test that is removed must be merged into one that asserts the same thing: tests/merged_tests.txt names, for each
removed id, the id that now holds its assertions (one ``old id -> new id`` a line; ``#`` starts a comment).
``compare`` fails when a removed id is not listed there, or its new id is not among the ids after. A test whose file
moved to another folder of tests/ (same file name, same test) is counted as moved, not removed.
The junit reports come from ``python -m pytest --junitxml=FILE``.
"""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MERGED = ROOT / "tests" / "merged_tests.txt"


def collected() -> list[str]:
    """The ids pytest collects from the whole suite, browser tests included, without running any."""
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0", "-p", "no:cacheprovider"],
                         cwd=ROOT, capture_output=True, text=True)
    ids = [line.strip() for line in out.stdout.splitlines() if "::" in line and not line.startswith(" ")]
    if out.returncode != 0 or not ids:
        sys.exit(f"collection failed (exit {out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return sorted(ids)


def merged() -> dict[str, str]:
    if not MERGED.exists():
        return {}
    pairs = {}
    for line in MERGED.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            old, new = (part.strip() for part in line.split("->"))
            pairs[old] = new
    return pairs


def ids_in(file: str) -> set[str]:
    """The test ids a file lists, one a line (an id may hold spaces: its parameters); other lines are ignored."""
    return {line.strip() for line in Path(file).read_text(encoding="utf-8").splitlines() if "::" in line}


def in_any_folder(test_id: str) -> str:
    """A test id without its file's folders: the same test, moved to another folder of tests/."""
    path, sep, rest = test_id.partition("::")
    return Path(path).name + sep + rest


def compare(before_file: str, after_file: str) -> int:
    before, after = ids_in(before_file), ids_in(after_file)
    removed, added, where = sorted(before - after), sorted(after - before), merged()
    moved_to = {in_any_folder(new): new for new in added}
    moved = {old: moved_to[in_any_folder(old)] for old in removed if in_any_folder(old) in moved_to}
    removed = [old for old in removed if old not in moved]
    added = [new for new in added if new not in moved.values()]
    print(f"before: {len(before)} test ids; after: {len(after)}; kept: {len(before & after)}; "
          f"moved to another folder: {len(moved)}; removed: {len(removed)}; added: {len(added)}")
    lost = []
    for old in removed:
        new = where.get(old)
        print(f"  removed {old}\n      -> {new or 'NOT MERGED ANYWHERE'}")
        if new is None or new not in after:
            lost.append(old)
    for new in added:
        print(f"  added   {new}")
    if lost:
        print(f"{len(lost)} removed test(s) without a test that holds their assertions (tests/merged_tests.txt)")
    return 1 if lost else 0


def outcomes(junit_file: str) -> Counter:
    counts = Counter()
    for case in ET.parse(junit_file).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        counts["failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"] += 1
    return counts


def results(before_file: str, after_file: str) -> int:
    before, after = outcomes(before_file), outcomes(after_file)
    for kind in ("passed", "skipped", "failed"):
        print(f"{kind:8} before {before[kind]:5}  after {after[kind]:5}")
    worse = after["passed"] < before["passed"] or after["skipped"] > before["skipped"] or after["failed"]
    print("fewer passed, more skipped or a failure" if worse else "no fewer passed, no more skipped, none failed")
    return 1 if worse else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["list"]:
        print("\n".join(collected()))
        return 0
    if argv[:1] == ["compare"] and len(argv) == 3:
        return compare(*argv[1:])
    if argv[:1] == ["results"] and len(argv) == 3:
        return results(*argv[1:])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
