"""The stand-in cupy (onnx_cupy.core.standin, the one the benchmark's host section uses) for
the tests: `install` makes a fresh one the library's cupy for the rest of a test."""
from __future__ import annotations

import collections

import pytest

from onnx_cupy.core import calls, execution, loader
from onnx_cupy.core.standin import CaptureError, StandIn

__all__ = ["CaptureError", "StandIn", "install"]


def install(monkeypatch: pytest.MonkeyPatch, compile_seconds: float = 0.0) -> StandIn:
    """A fresh stand-in as the library's cupy, with no prepared call, workspace or compiled
    function of before (`monkeypatch` restores the cupy module, workspaces and functions at the
    end of the test; the prepared calls are cleared at the next test's start)."""
    fake = StandIn(compile_seconds)
    monkeypatch.setattr(execution, "_substitutes", [fake])
    monkeypatch.setattr(calls, "_workspaces", collections.OrderedDict())
    monkeypatch.setattr(calls, "_graph_kept", [])
    monkeypatch.setattr(loader, "_functions", {})
    monkeypatch.setattr(loader, "_compiling", {})
    calls.clear()   # and conftest's fresh_calls clears them before the next test
    return fake
