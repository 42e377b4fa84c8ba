"""Modules that load on first use, so that importing and building the app does not import torch.

torch is ~1.5 s of CPU on a cold start, and the first things a learner can ask for (the page, the n-gram counts) do
not need it. The UI modules (and core/loading/families.py, for the nets files) therefore hold the torch-backed modules through
``lazy_import``, at module level where an editor and tests/test_import_graph.py see them: a stand-in whose first
attribute read imports the real module (``importlib.import_module``, whose per-module locks make two first requests
in two server threads safe; the standard library's LazyLoader is not, in Python 3.11). Once the real module is
imported, the stand-in puts it in its own place in the module that made it (that module's global of the same
value), so that module's later reads go straight to the real module instead of through the stand-in every time.
Reading an attribute while the tabs are built would defeat it: tests/test_app.py checks that building the app
leaves torch unimported.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType


class LazyModule(ModuleType):
    """Stands for the module ``name``; every attribute read, write or delete goes to the real, imported module."""

    def _module(self) -> ModuleType:
        module = importlib.import_module(self.__name__)
        importer = self.__dict__.pop("_importer", None)  # the globals of the module that called lazy_import
        if importer is not None:
            for name, value in list(importer.items()):
                if value is self:
                    importer[name] = module
        return module

    def __getattr__(self, attr: str):  # called only for names the stand-in itself lacks: all but __name__ & co.
        return getattr(self._module(), attr)

    def __setattr__(self, attr: str, value) -> None:  # monkeypatch.setattr(lazy, ...) patches the real module
        setattr(self._module(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._module(), attr)

    def __dir__(self):
        return dir(self._module())


def lazy_import(name: str) -> ModuleType:
    """The module ``name`` if it is imported already, else a stand-in that imports it on first use (and then gives
    its place in the calling module's globals to the real module)."""
    if name in sys.modules:
        return importlib.import_module(name)
    stand_in = LazyModule(name)
    ModuleType.__setattr__(stand_in, "_importer", sys._getframe(1).f_globals)  # not forwarded: the stand-in's own
    return stand_in
