"""Issue #50: the page's JavaScript lives in .js files under assets/, not in Python strings. What the Python side
still has to agree with is checked here; the browser tests (tests/e2e/test_tour_browser.py, test_browser.py's SVG
export) run the scripts."""
import shutil
import subprocess

import pytest

from core.loading.paths import ASSETS_DIR
from demo.kit import figure_head
from demo.kit import tour
from demo.kit.i18n import BROWSER_LANGUAGE_JS


def test_the_tour_picks_the_language_as_every_other_script_does():
    assert f"const lang = {BROWSER_LANGUAGE_JS};" in (ASSETS_DIR / "tour.js").read_text(encoding="utf-8")
    assert "props.storage_key" in tour.TOUR_JS and not tour.TOUR_JS.startswith("// ")
    assert tour.build().props["storage_key"] == tour.STORAGE_KEY


def test_the_figure_script_gets_its_words_before_it_runs():
    head = figure_head.HEAD
    assert head.startswith("<script>\nwindow.plmFigureConfig = {") and head.endswith("</script>")
    assert head.index("window.plmFigureConfig =") < head.index("const config = window.plmFigureConfig;")
    assert '"zh": "下载 SVG 矢量图（幻灯片尺寸）"' in head and "__SVG_TITLES__" not in head


@pytest.mark.skipif(shutil.which("node") is None, reason="node checks the scripts' syntax")
@pytest.mark.parametrize("name, wrap", [("figure_head.js", False), ("tour.js", True)])
def test_the_scripts_parse(name, wrap, tmp_path):
    code = (ASSETS_DIR / name).read_text(encoding="utf-8")
    if wrap:  # js_on_load: the body of a function of (element, props)
        code = f"function onLoad(element, props) {{\n{code}\n}}"
    script = tmp_path / name
    script.write_text(code, encoding="utf-8")
    checked = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr
