"""Public functions carry NumPy-style docstrings whose examples run; the generated tables the
documentation includes match what their commands produce."""
from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import onnx_cupy
from onnx_cupy import onnx_backend
from onnx_cupy.tools import kernel_report

DOCS = Path(__file__).resolve().parents[1] / "docs"

MODULES = ["onnx_cupy.pool.api", "onnx_cupy.hardmax.api", "onnx_cupy.resize.api",
           "onnx_cupy.interop.dask", "onnx_cupy.interop.onnx_backend", "onnx_cupy.interop.nodes",
           "onnx_cupy.core.execution"]
SECTIONS = ("Parameters\n", "Returns\n", "Raises\n", "Examples\n")


@pytest.mark.parametrize("module", MODULES)
def test_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


@pytest.mark.parametrize("fn", [
    onnx_cupy.average_pool, onnx_cupy.lp_pool, onnx_cupy.hardmax, onnx_cupy.resize,
    *(getattr(importlib.import_module("onnx_cupy.dask"), n)
      for n in ("average_pool", "lp_pool", "hardmax", "resize")),
    onnx_backend.prepare, onnx_backend.run_node, onnx_cupy.run_node,
], ids=lambda f: f"{f.__module__}.{f.__qualname__}")
def test_numpy_style_sections(fn):
    doc = fn.__doc__ or ""
    assert all(s in doc for s in SECTIONS), [s.strip() for s in SECTIONS if s not in doc]


def _without_run_details(markdown: str) -> list[str]:
    """A generated page's lines but its header ("- date: ...", host, versions): the tables and
    the lines below them."""
    return [line for line in markdown.splitlines() if not line.startswith("- ")]


def test_generated_kernel_report_is_current():
    """docs/_generated/kernels.md is what `onnx-cupy kernels --markdown` writes now (the families
    compiled once per process: the kernel report tests' compilations are reused)."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda.bindings (cuda-python) is not installed")
    if kernel_report.nvdisasm() is None:
        pytest.skip(f"{kernel_report.NVDISASM_WHEEL} is not installed: no SASS counts")
    committed = (DOCS / "_generated" / "kernels.md").read_text(encoding="utf-8")
    fresh = kernel_report.markdown(kernel_report.report())
    assert "| kernel | regs |" in fresh and fresh.count("\n|") > 100
    assert _without_run_details(committed) == _without_run_details(fresh), (
        "docs/_generated/kernels.md is stale: run "
        "onnx-cupy kernels --markdown docs/_generated/kernels.md")
