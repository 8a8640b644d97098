"""Sphinx configuration of the onnx-cupy documentation: Markdown pages through myst-parser, the
API reference from the modules' exports and NumPy-style docstrings (the `exports` directive of
_ext/exports.py, autodoc, napoleon), the gallery's pictures drawn at each build, the furo theme
with _static/layout.css (wide tables and code blocks scroll inside the content column).

Build: ``python -m sphinx -W -b html docs <outdir>`` (warnings are errors, as in CI).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "src"))   # the source tree when the package is not installed
sys.path.insert(0, str(DOCS / "_ext"))

import onnx_cupy  # noqa: E402

project = "onnx-cupy"
author = "onnx-cupy developers"
copyright = "onnx-cupy developers"  # noqa: A001 - Sphinx's name for it
release = version = onnx_cupy.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon", "exports"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_generated/**"]   # generated tables are included by the pages
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

default_role = "code"   # docstrings write code as `name`
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_typehints_description_target = "documented_params"
# Shown by name (onnx_cupy.core.execution defines them): a NumPy array of any shape and scalar
# type ScalarT; int64 indices (MaxPool's Indices output)
autodoc_type_aliases = {"NumPyArray": "NumPyArray", "Indices": "Indices"}
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"onnx-cupy {release}"
html_static_path = ["_static"]
html_css_files = ["layout.css"]

GALLERY = DOCS / "_generated" / "gallery"   # drawn at each build (not committed)

# Pages that index.md lists and other pages link to, which may not exist yet in a given checkout:
# where one is missing, its toctree entry is dropped and links to it become plain text, so the
# build stays free of warnings.
OPTIONAL_PAGES = ("pytorch", "warmup")
MISSING = [p for p in OPTIONAL_PAGES if not (DOCS / f"{p}.md").exists()]


def _drop_missing_pages(app: Any, docname: str, source: list[str]) -> None:
    for page in MISSING:
        text = re.sub(rf"^{page}\n", "", source[0], flags=re.MULTILINE)
        source[0] = re.sub(rf"\[([^\]]*)\]\({page}\.md(#[^)]*)?\)", r"\1", text)


# Docstrings are plain text with `code` in backticks (they read the same in help()): outside
# backticks and doctest blocks, * and | are characters, not reStructuredText markup.
_MARKUP = re.compile(r"(`[^`]*`)|(?<!\\)([*|])")


def _plain_text(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    paragraphs = "\n".join(lines).split("\n\n")
    text = "\n\n".join(p if p.lstrip().startswith(">>>") else
                       _MARKUP.sub(lambda m: m.group(1) or "\\" + m.group(2), p)
                       for p in paragraphs)
    lines[:] = text.split("\n")


def _one_return_type(app: Any, domain: str, objtype: str, content: Any) -> None:
    """Where the docstring's Returns section gives the type in words ("numpy.ndarray or
    cupy.ndarray"), drop the Return type field that autodoc adds from the annotation (a bare
    type variable such as ArrayT)."""
    from docutils import nodes

    for fields in content.findall(nodes.field_list):
        named = {f[0].astext(): f for f in fields.children if isinstance(f, nodes.field)}
        if "returns" in named and "rtype" in named:   # the fields before Sphinx names them
            fields.remove(named["rtype"])


def _draw_gallery(app: Any) -> None:
    from onnx_cupy.tools import gallery

    gallery.render(GALLERY, images=f"/{GALLERY.relative_to(DOCS).as_posix()}/")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _draw_gallery)
    app.connect("autodoc-process-docstring", _plain_text, priority=400)   # before napoleon
    app.connect("object-description-transform", _one_return_type, priority=600)  # after autodoc
    app.connect("source-read", _drop_missing_pages)
    return {"parallel_read_safe": True}
