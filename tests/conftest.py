"""Shared fixtures: one test body per execution path."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_cupy import backends

BACKENDS = ["numpy", "emulated", "cupy"]


def pytest_report_header(config):
    return f"onnx-cupy default backend: {backends.default_backend()} (GPU visible: {backends.gpu_available()})"


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Each execution path; 'cupy' is skipped, with the reason, where no GPU is visible."""
    if request.param == "cupy" and not backends.gpu_available():
        pytest.skip("cupy backend: no GPU visible")
    return request.param


@pytest.fixture(params=["numpy", "emulated"])
def cpu_backend(request):
    return request.param


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the test's name so failures reproduce."""
    import zlib

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
