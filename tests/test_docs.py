"""Public functions carry NumPy-style docstrings whose examples run."""
from __future__ import annotations

import doctest
import importlib

import pytest

import onnx_cupy
from onnx_cupy import onnx_backend

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
