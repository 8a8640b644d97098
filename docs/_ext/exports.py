"""The `exports` directive: the API reference of a module's public names, read at build time.

```{exports} onnx_cupy.dask
```
documents every name of the module's `__all__` (or, without one, every public function and
class the module defines) with autodoc, in that order, so that a new export appears on the page
without an edit, after a list of links to them. With `:defined-in: onnx_cupy.pool
onnx_cupy.unpool`, only the names whose objects those modules (or their submodules) define: one
family's page. `public_names(module)` (public_names.py, free of Sphinx) is the list, shared
with the tests.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from public_names import defined_in  # docs/_ext, on the path (conf.py)
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def directive(module_name: str, name: str) -> list[str]:
    """The autodoc directive (reStructuredText) documenting `module_name.name`."""
    obj = getattr(importlib.import_module(module_name), name)
    if inspect.isclass(obj):
        return [f".. autoclass:: {module_name}.{name}", "   :members:", ""]
    if not callable(obj):   # a constant: its value
        return [f".. autodata:: {module_name}.{name}", ""]
    return [f".. autofunction:: {module_name}.{name}", ""]


def contents(module_name: str, names: list[str]) -> list[str]:
    """A list of links to the documented names (reStructuredText), by their short names."""
    return [*(f"- :py:obj:`~{module_name}.{name}`" for name in names), ""]


class Exports(SphinxDirective):
    required_arguments = 1
    has_content = False
    option_spec = {"defined-in": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        module_name = self.arguments[0]
        names = defined_in(module_name, self.options.get("defined-in", "").split())
        rst = contents(module_name, names)
        rst += [line for name in names for line in directive(module_name, name)]
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
