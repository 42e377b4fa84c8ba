"""The documents say what the repository holds: every file or folder they name exists (a `module.name` names
something defined in that module), and what README.md and docs/TEACHERS.md count or list is the built app's: the
tour's stops and deck, the checks per tab, every flag with its default, the tabs in order. A move, a new stop or a
new flag that the docs did not follow fails here, not in a reader's hands."""
from __future__ import annotations

import re
from pathlib import Path

import app
from core import checks
from demo.kit import tour

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
        "benchmarks/README.md", "assets/README.md"]
# a path of ours: one of the top-level folders, not inside a URL or another path (huggingface.co/docs/… is not docs/)
REFERENCE = re.compile(r"(?<![\w/.-])((?:core|demo|tests|assets|scripts|benchmarks|docs)/[\w./-]*\w\*?)")


def ignored_prefixes() -> list[str]:
    """The folders of ours .gitignore keeps out of the repository, which the docs name as outputs
    (tests/e2e/_artifacts/, benchmarks/results/)."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [entry for line in lines if "/" in (entry := line.strip().strip("/"))]


def found(reference: str) -> bool:
    """A file or folder, a module without its .py (``core/tasks/qa``), a glob (``assets/kit*``), or
    ``path/module.name`` (``demo/server/first_page.PageCache``) whose module defines name."""
    if reference.endswith("*") and any(ROOT.glob(reference)):
        return True
    reference = reference.rstrip("*")  # or Markdown's bold after a name: **core/tasks/qa.answer_many**
    if (ROOT / reference).exists() or (ROOT / f"{reference}.py").is_file():
        return True
    module, _, name = reference.rpartition(".")
    source = ROOT / f"{module}.py"
    if not module or not source.is_file():
        return False
    return re.search(rf"^\s*(?:async def|def|class)\s+{re.escape(name)}\b|^{re.escape(name)}\s*[:=]",
                     source.read_text(encoding="utf-8"), re.MULTILINE) is not None


def test_every_path_the_docs_name_exists():
    outputs = ignored_prefixes()
    checked, missing = 0, []
    for doc in DOCS:
        for reference in sorted(set(REFERENCE.findall((ROOT / doc).read_text(encoding="utf-8")))):
            if reference.startswith(tuple(outputs)):
                continue
            checked += 1
            if not found(reference):
                missing.append(f"{doc}: {reference}")
    assert len(DOCS) >= 6 and checked >= 120, (DOCS, checked)  # a scan that read nothing would pass
    assert missing == []


def said(words: str, document: str) -> re.Match:
    """``words`` (a pattern whose spaces may be any whitespace: the docs are wrapped at 120 columns) in ``document``."""
    found_ = re.search(words.replace(" ", r"\s+"), document)
    assert found_, f"the docs no longer say {words!r}"
    return found_


def table_rows(document: str, header: str) -> list[str]:
    """The rows of the Markdown table whose header line starts with ``header`` (its separator line left out)."""
    return document[document.index(header):].split("\n\n", 1)[0].splitlines()[2:]


def test_the_readme_and_the_teachers_guide_count_what_the_app_has():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    teachers = (ROOT / "docs" / "TEACHERS.md").read_text(encoding="utf-8")
    asking = sum(1 for stop in tour.STOPS if stop.check)
    assert int(said(r"walks the whole arc in (\d+) stops", readme).group(1)) == len(tour.STOPS)
    assert int(said(r"at (\d+) of them you predict first", readme).group(1)) == asking
    # the tour's deck: a slide for each stop with an example
    assert int(said(r"one slide per stop that shows an example, (\d+) in all", teachers).group(1)) == \
        len(tour.STOPS) - asking
    per_tab = [len(checks.checks_for(app.tab_id(module))) for module in app.TABS]
    fewest, most = said(r"(\d+)–(\d+) checks where the learner predicts", readme).groups()
    assert (int(fewest), int(most)) == (min(per_tab), max(per_tab)), per_tab


def shown_default(value) -> str:
    """A flag's default as README's table writes it."""
    if value is True or value is False:
        return "on" if value else "off"
    if value in (None, ""):
        return "none"
    return f"{value:g}" if isinstance(value, float) else str(value).strip("`")


def test_the_readme_lists_every_flag_of_the_app_with_its_default(monkeypatch):
    for name in ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "PLM_DEVICE", "PLM_MAX_EVENTS_PER_ADDRESS",
                 "GRADIO_ROOT_PATH", "PLM_TRUSTED_PROXY", "PLM_CLASS_DB"):
        monkeypatch.delenv(name, raising=False)  # the defaults a learner gets, not this machine's
    defaults = vars(app.parse_args([]))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = table_rows(readme, "| flag | default |")
    listed = {}
    for row in table:
        flags_cell, default_cell = row.split(" | ")[:2]
        flags, shown = re.findall(r"`(--[\w-]+)`", flags_cell), [d.strip().strip("`") for d in default_cell.split(",")]
        listed.update(zip(flags, shown if len(shown) == len(flags) else shown * len(flags)))
    assert len(table) >= 10 and sorted(listed) == sorted(f"--{key.replace('_', '-')}" for key in defaults)
    for key, value in defaults.items():
        flag = f"--{key.replace('_', '-')}"
        if listed[flag] != "see below":  # --class-db: a default that depends on the host, told in words
            assert listed[flag] == shown_default(value), (flag, listed[flag], value)


def test_the_readme_teaches_the_tabs_the_app_has_in_its_order():
    from core.text.i18n import text

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = table_rows(readme, "| tab | what you do |")
    assert [row.split(" | ")[0].lstrip("| ") for row in table] == [text(f"tabs.{app.tab_id(module)}", "en")
                                                                   for module in app.TABS]
