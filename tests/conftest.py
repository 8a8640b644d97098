"""Shared fixtures: one test body per execution path."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_cupy.core import calls, execution, launcher

BACKENDS = ["numpy", "emulated", "cupy"]


CUPY_SKIP = "cupy backend: no GPU visible"


def pytest_report_header(config):
    header = [f"onnx-cupy default backend: {execution.default_backend()}"]
    if not execution.gpu_available():
        header.append("every test's cupy-backend case is skipped: no GPU is visible "
                      "(numpy and emulated run everywhere)")
    return header


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    cupy = sum(1 for r in skipped if "GPU" in str(r.longrepr) or "device CUDA" in str(r.longrepr))
    if cupy:
        terminalreporter.write_line(f"{cupy} cases skipped: they need a GPU and none is visible")


@pytest.fixture(autouse=True)
def fresh_calls():
    """Each test starts with no prepared call (onnx_cupy.core.calls): its first call of a
    configuration plans it, whatever ran before."""
    calls.clear()


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each execution path; 'cupy' is skipped, with the reason, where no GPU is visible."""
    if request.param == "cupy" and not execution.gpu_available():
        pytest.skip(CUPY_SKIP)
    return request.param


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
    """(instantiation record, shape) of every kernel launch during the test (the launches still
    run)."""
    seen: list[tuple[object, object]] = []
    real = launcher.launch

    def spy(backend, kernel, work_items, args, shape=None):
        seen.append((kernel, shape))
        return real(backend, kernel, work_items, args, shape)

    monkeypatch.setattr(launcher, "launch", spy)
    return seen
