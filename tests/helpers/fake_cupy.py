"""The stand-in cupy (tests/helpers/standin.py) for the tests: `install` makes a fresh one the
library's cupy for the rest of a test."""
from __future__ import annotations

import collections
import os
import tempfile

import pytest

from helpers.standin import CaptureError, StandIn
from onnx_cupy.core import calls, cuda_compile, execution, loader

__all__ = ["CaptureError", "StandIn", "install"]


def fresh_kernel_cache(monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty NVRTC image cache for the rest of the test, in memory and on disk
    (ONNX_CUPY_CACHE moved to a new folder, whose emulator/ is the emulator's libraries of
    before: they are not what a test of NVRTC's compiles counts); returns the folder."""
    emulator = cuda_compile.cache_root() / "emulator"
    emulator.mkdir(parents=True, exist_ok=True)
    root = tempfile.mkdtemp(prefix="onnx-cupy-cache-")
    os.symlink(emulator, os.path.join(root, "emulator"))
    monkeypatch.setenv("ONNX_CUPY_CACHE", root)
    monkeypatch.setattr(cuda_compile, "_images", {})
    return root


def install(monkeypatch: pytest.MonkeyPatch, compile_seconds: float = 0.0) -> StandIn:
    """A fresh stand-in as the library's cupy, with no prepared call, workspace, compiled
    function or NVRTC image of before (`fresh_kernel_cache`; `monkeypatch` restores the cupy
    module, workspaces, functions and the cache at the end of the test; the prepared calls are
    cleared at the next test's start)."""
    fresh_kernel_cache(monkeypatch)
    fake = StandIn(compile_seconds)
    monkeypatch.setattr(execution, "_substitutes", [fake])
    monkeypatch.setattr(calls, "_workspaces", collections.OrderedDict())
    monkeypatch.setattr(calls, "_graph_kept", [])
    monkeypatch.setattr(loader, "_functions", {})
    monkeypatch.setattr(loader, "_compiling", {})
    calls.clear()   # and conftest's fresh_calls clears them before the next test
    return fake
