"""The stand-in cupy (tests/helpers/standin.py) for a test: `install` makes a fresh one the
library's cupy for the rest of the test, with an empty NVRTC image cache; `forget_images`
makes the process forget the images it holds, as a later process would start."""
from __future__ import annotations

import contextlib
import os
import tempfile

import pytest

from helpers.standin import CaptureError, StandIn
from onnx_cupy.core import cuda_compile

__all__ = ["CaptureError", "StandIn", "forget_images", "fresh_kernel_cache", "install"]


def forget_images(monkeypatch: pytest.MonkeyPatch) -> None:
    """For the rest of the test, no NVRTC image in this process's memory (as a new process
    starts: the disk cache, if any, serves the next compile)."""
    monkeypatch.setattr(cuda_compile, "_images", {})


def fresh_kernel_cache(monkeypatch: pytest.MonkeyPatch) -> str:
    """An empty NVRTC image cache for the rest of the test, in memory and on disk
    (ONNX_CUPY_CACHE moved to a new folder, whose emulator/ is the emulator's libraries of
    before: they are not what a test of NVRTC's compiles counts); returns the folder."""
    emulator = cuda_compile.cache_root() / "emulator"
    emulator.mkdir(parents=True, exist_ok=True)
    root = tempfile.mkdtemp(prefix="onnx-cupy-cache-")
    os.symlink(emulator, os.path.join(root, "emulator"))
    monkeypatch.setenv("ONNX_CUPY_CACHE", root)
    forget_images(monkeypatch)
    return root


def install(request: pytest.FixtureRequest, compile_seconds: float = 0.0) -> StandIn:
    """A fresh stand-in as the library's cupy until the end of the test (or of the fixture
    whose `request` this is): `StandIn.installed()` entered (no prepared call, workspace or
    compiled function of before, none kept after), with a `fresh_kernel_cache`."""
    fresh_kernel_cache(request.getfixturevalue("monkeypatch"))
    stack = contextlib.ExitStack()
    request.addfinalizer(stack.close)
    return stack.enter_context(StandIn(compile_seconds).installed())
