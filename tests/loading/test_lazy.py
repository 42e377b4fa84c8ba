"""core/loading/lazy.py: a stand-in imports its module on the first read, then gives its place to the real module."""
from __future__ import annotations

import sys

from core.loading.lazy import LazyModule, lazy_import


def test_a_stand_in_imports_on_first_read_then_steps_aside(tmp_path, monkeypatch):
    (tmp_path / "plm_lazy_probe.py").write_text("VALUE = 42\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "plm_lazy_probe", raising=False)
    importer = {"lazy_import": lazy_import}  # the globals of a module that holds the stand-in
    exec("probe = lazy_import('plm_lazy_probe')\nother = 1", importer)
    stand_in = importer["probe"]
    assert isinstance(stand_in, LazyModule) and "plm_lazy_probe" not in sys.modules  # nothing imported yet

    assert stand_in.VALUE == 42  # the first read imports it ...
    real = sys.modules["plm_lazy_probe"]
    assert importer["probe"] is real and not isinstance(real, LazyModule)  # ... and the importer now holds the module
    assert importer["other"] == 1  # its other globals untouched
    stand_in.VALUE = 7  # whoever still holds the stand-in reads and writes the real module
    assert real.VALUE == 7 and stand_in.VALUE == 7
    monkeypatch.delitem(sys.modules, "plm_lazy_probe")


def test_an_imported_module_is_given_as_it_is():
    assert lazy_import("core.loading.lazy") is sys.modules["core.loading.lazy"]
