"""Modules that load on first use, so that importing and building the app does not import torch.

torch is ~1.5 s of CPU on a cold start, and the first things a learner can ask for (the page, the n-gram counts) do
not need it. The UI modules (and core/loading/families.py, for the nets files) therefore hold the torch-backed modules through
``lazy_import``, at module level where an editor and tests/test_import_graph.py see them: a stand-in whose first
attribute read imports the real module (``importlib.import_module``, whose per-module locks make two first requests
in two server threads safe; the standard library's LazyLoader is not, in Python 3.11).
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
        return importlib.import_module(self.__name__)

    def __getattr__(self, attr: str):  # called only for names the stand-in itself lacks: all but __name__ & co.
        return getattr(self._module(), attr)

    def __setattr__(self, attr: str, value) -> None:  # monkeypatch.setattr(lazy, ...) patches the real module
        setattr(self._module(), attr, value)

    def __delattr__(self, attr: str) -> None:
        delattr(self._module(), attr)

    def __dir__(self):
        return dir(self._module())


def lazy_import(name: str) -> ModuleType:
    """The module ``name`` if it is imported already, else a stand-in that imports it on first use."""
    return importlib.import_module(name) if name in sys.modules else LazyModule(name)
