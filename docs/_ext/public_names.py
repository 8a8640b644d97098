"""The names a module exports, as the API reference lists them (`public_names`), and those of
them a page documents (`defined_in`): shared by the `exports` directive (exports.py, which needs
Sphinx) and the tests, which need neither Sphinx nor docutils.
"""
from __future__ import annotations

import importlib
import inspect
import types

SKIPPED = {"__version__"}   # data, given by the page's title instead


def public_names(module_name: str) -> list[str]:
    """The names a user imports from `module_name`: its `__all__`, else the public functions
    (bound class methods too) and classes defined in it (submodules and data left out)."""
    module = importlib.import_module(module_name)
    listed = getattr(module, "__all__", None)
    if listed is None:
        listed = [n for n, v in vars(module).items() if not n.startswith("_")
                  and (inspect.isroutine(v) or inspect.isclass(v))
                  and getattr(v, "__module__", None) == module.__name__]
    return [n for n in listed if n not in SKIPPED
            and not isinstance(getattr(module, n), types.ModuleType)]


def defined_in(module_name: str, prefixes: list[str]) -> list[str]:
    """The public names of `module_name` whose objects are defined under one of `prefixes`
    (module names, e.g. onnx_cupy.pool: a family's page); all of them for no prefix."""
    module = importlib.import_module(module_name)

    def home(name: str) -> str:   # where the object is defined (data: the module itself)
        return getattr(getattr(module, name), "__module__", None) or module_name

    return [n for n in public_names(module_name) if not prefixes
            or any(home(n) == p or home(n).startswith(p + ".") for p in prefixes)]
