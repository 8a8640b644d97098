"""Sphinx configuration of the onnx-cupy documentation: Markdown pages through myst-parser, the
API reference from the NumPy-style docstrings (autodoc + napoleon).

Build: ``python -m sphinx -W -b html docs <outdir>`` (warnings are errors, as in CI).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "src"))   # the source tree when the package is not installed

import onnx_cupy  # noqa: E402

project = "onnx-cupy"
author = "onnx-cupy developers"
copyright = "onnx-cupy developers"  # noqa: A001 - Sphinx's name for it
release = version = onnx_cupy.__version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_generated/*"]   # generated tables are included by the pages
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
napoleon_numpy_docstring = True
napoleon_google_docstring = False
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"onnx-cupy {release}"

# Pages that index.md lists and other pages link to, which may not exist yet in a given checkout:
# where one is missing, its toctree entry is dropped and links to it become plain text, so the
# build stays free of warnings.
OPTIONAL_PAGES = ("pytorch", "warmup")
MISSING = [p for p in OPTIONAL_PAGES if not (DOCS / f"{p}.md").exists()]


def _drop_missing_pages(app: Any, docname: str, source: list[str]) -> None:
    for page in MISSING:
        text = re.sub(rf"^{page}\n", "", source[0], flags=re.MULTILINE)
        source[0] = re.sub(rf"\[([^\]]*)\]\({page}\.md(#[^)]*)?\)", r"\1", text)


def setup(app: Any) -> dict[str, Any]:
    app.connect("source-read", _drop_missing_pages)
    return {"parallel_read_safe": True}
