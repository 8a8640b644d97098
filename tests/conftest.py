"""Shared fixtures: one test body per execution path."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_install
from helpers.standin import StandIn

from onnx_cupy.core import calls, execution, launcher

BACKENDS = ["numpy", "emulated", "cupy"]
GPU = execution.gpu_available()   # a real GPU, seen before any stand-in is installed


def pytest_report_header(config):
    header = [f"onnx-cupy default backend: {execution.default_backend()}"]
    if not GPU:
        header.append("no GPU is visible: every test's cupy case runs on the executing stand-in "
                      "cupy (tests/helpers/standin.py: the kernels on the emulator)")
    return header


@pytest.fixture(autouse=True)
def fresh_calls():
    """Each test starts with no prepared call (onnx_cupy.core.calls): its first call of a
    configuration plans it, whatever ran before."""
    calls.clear()


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each execution path; 'cupy' on the GPU where one is visible, else on a fresh executing
    stand-in cupy installed for the test (its arrays, streams and launches: the CuPy path's own
    host code, its kernels run on the emulator)."""
    if request.param == "cupy" and not GPU:
        with StandIn().installed():
            yield request.param
        return
    yield request.param


@pytest.fixture
def no_gpu(monkeypatch):
    """As on a machine without a usable GPU: the library's cupy is a CuPy 14.2 with NVRTC and
    the CUDA headers whose runtime raises the driver's error (tests/helpers/fake_install.py);
    gives that error's text."""
    fake_install.headers(monkeypatch)
    with execution.cupy_substitute(fake_install.cupy()):
        yield fake_install.DRIVER_TEXT


@pytest.fixture(params=["numpy", "emulated"])
def cpu_backend(request):
    return request.param


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test's name so failures reproduce."""
    import zlib

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def launches(monkeypatch):
    """(instantiation record, shape) of every kernel launch of a prepared call during the test
    (shape: (grid, block), None for a grid-stride grid; the launches still run)."""
    seen: list[tuple[object, object]] = []
    real = launcher.Launch.__call__

    def spy(self, *arrays):
        seen.append((self.kernel, self.shape))
        return real(self, *arrays)

    monkeypatch.setattr(launcher.Launch, "__call__", spy)
    return seen
