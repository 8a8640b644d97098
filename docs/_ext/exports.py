"""The `exports` directive: the API reference of a module's public names, read at build time.

```{exports} onnx_cupy.dask
```
documents every name of the module's `__all__` (or, without one, every public function and
class the module defines) with autodoc, in that order, so that a new export appears on the page
without an edit. `public_names(module)` is the list, shared with the test that checks the built
site.
"""
from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

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


def directive(module_name: str, name: str) -> list[str]:
    """The autodoc directive (reStructuredText) documenting `module_name.name`."""
    obj = getattr(importlib.import_module(module_name), name)
    if inspect.isclass(obj):
        return [f".. autoclass:: {module_name}.{name}", "   :members:", ""]
    if not callable(obj):   # a constant: its value
        return [f".. autodata:: {module_name}.{name}", ""]
    return [f".. autofunction:: {module_name}.{name}", ""]


class Exports(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0]
        rst = [line for name in public_names(module_name) for line in directive(module_name, name)]
        # autodoc writes reStructuredText: on a Markdown page it goes through MyST's eval-rst
        lines = ["```{eval-rst}", *rst, "```"] if self.env.doc2path(self.env.docname).suffix \
            == ".md" else rst
        self.env.note_dependency(importlib.import_module(module_name).__file__ or "")
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source=f"<exports {module_name}>"),
                                 container)
        return list(container.children)


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("exports", Exports)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
