"""Issue #50: the page's JavaScript lives in .js files under assets/, not in Python strings (demo/kit/scripts.py reads
them). What the Python side still has to agree with is checked here; the browser tests (tests/e2e/) run the scripts."""
import ast
import shutil
import subprocess
from pathlib import Path

import pytest

from core.loading.paths import ASSETS_DIR
from demo.kit import figure_head, lessons, preset_bar, presets, scripts, static_html, tour
from demo.kit.i18n import BROWSER_LANGUAGE_JS

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted(ASSETS_DIR.glob("*.js"))


def test_the_tour_picks_the_language_as_every_other_script_does():
    assert f"const lang = {BROWSER_LANGUAGE_JS};" in (ASSETS_DIR / "tour.js").read_text(encoding="utf-8")
    assert "props.storage_key" in tour.TOUR_JS and "// " not in tour.TOUR_JS.splitlines()[0]
    assert tour.build().props["storage_key"] == tour.STORAGE_KEY
    for template in (tour.TEMPLATE, preset_bar.BAR_TEMPLATE, lessons.TEMPLATE):
        assert f"const lang = {BROWSER_LANGUAGE_JS};" in template and "LANGUAGE" not in template


def test_a_script_gets_what_the_server_fills_in_and_refuses_a_word_it_lacks():
    router = scripts.script("link_router", LIMIT="300", TAB_IDS='["ngram", "qa"]')
    assert router.startswith("() => {") and 'const tabs = ["ngram", "qa"];' in router and ".slice(0, 300)" in router
    assert "//" not in router.replace("://", "") and "LIMIT" not in router  # compact: no comment reaches the page
    assert "<svg" in preset_bar.BAR_TEMPLATE and "LINK_ICON" not in preset_bar.BAR_TEMPLATE
    assert "canvas.width = 3200;" in static_html.EXPORT_JS  # SLIDE_WIDTH, the plotly figures' PNG width
    with pytest.raises(KeyError, match="assets/lesson.js has no NOPE"):
        scripts.script("lesson", NOPE="1")


def test_no_script_is_left_in_a_python_string():
    """A string of three lines or more that holds JavaScript (an arrow function or a DOM call) in app.py or demo/."""
    files = [ROOT / "app.py", *sorted((ROOT / "demo").rglob("*.py"))]
    assert len(files) >= 60, len(files)
    found = []
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.count("\n") >= 2
                    and ("=>" in node.value or "document." in node.value)):
                found.append(f"{file.relative_to(ROOT)}:{node.lineno}")
    assert not found, found
    assert presets.QUERY_LIMIT == 2000  # a state link (demo/kit/state_links.LINK_LIMIT)


def test_the_figure_script_gets_its_words_before_it_runs():
    head = figure_head.HEAD
    assert head.startswith("<script>\nwindow.plmFigureConfig = {") and head.endswith("</script>")
    assert head.index("window.plmFigureConfig =") < head.index("const config = window.plmFigureConfig;")
    assert '"zh": "下载 SVG 矢量图（幻灯片尺寸）"' in head and "__SVG_TITLES__" not in head


def wrapped(path: Path) -> str:
    """The file as the browser runs it, by what its first comment says it is: an html_template (a template string),
    an event's js= (a function), a gr.HTML's js_on_load (a function body), or a <head> script."""
    code = path.read_text(encoding="utf-8")
    first = code.splitlines()[0]
    if "html_template" in first:  # its comments are outside the template (demo/kit/scripts.py drops them)
        body = "\n".join(line for line in code.splitlines() if not line.startswith("//"))
        return f"const template = `{body}`;"
    if first.startswith("// js= "):
        return f"const handler = (\n{code}\n);"
    if "js_on_load" in first:
        return f"function onLoad(element, props, trigger) {{\n{code}\n}}"
    return code


def test_every_script_says_where_it_runs():
    assert len(SCRIPTS) >= 16, [s.name for s in SCRIPTS]
    assert all(path.read_text(encoding="utf-8").startswith("// ") for path in SCRIPTS)


@pytest.mark.skipif(shutil.which("node") is None, reason="node checks the scripts' syntax")
@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.name)
def test_the_scripts_parse(path, tmp_path):
    script = tmp_path / path.name
    script.write_text(wrapped(path), encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
