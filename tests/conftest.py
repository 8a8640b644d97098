"""Shared fixtures: one test body per execution path."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_install
from helpers.standin import StandIn
from helpers.util import replan_launches

from onnx_cupy.core import calls, dtypes, execution, launcher

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


@pytest.fixture
def index_width(monkeypatch):
    """A function `use(bits)` after which every launch prepared indexes with `bits`-bit offsets,
    whatever the sizes (64: the long long instantiations run on small inputs, which reach them
    in production only past 2**31 - 1 elements); the prepared calls and every family's cached
    launch arguments are cleared at each use and after the test."""
    def use(bits: int) -> None:
        replan_launches()
        monkeypatch.setattr(dtypes, "offset_bits", lambda *extents: bits)

    yield use
    replan_launches()


@pytest.fixture
def launch_limits(monkeypatch):
    """A function `limit(**limits)` that lowers the launcher's grid limits for the launches
    prepared after it (`MAX_GRID_YZ`, `MAX_BLOCKS`: 65535 and 2**20 in production), so that
    small inputs reach the loops and grid axes that only large ones need; the prepared calls
    and every family's cached launch arguments are cleared at each use and after the test."""
    def limit(**limits: int) -> None:
        unknown = set(limits) - {"MAX_GRID_YZ", "MAX_BLOCKS"}
        assert not unknown, unknown
        replan_launches()
        for name, value in limits.items():
            monkeypatch.setattr(launcher, name, value)

    yield limit
    replan_launches()


@pytest.fixture
def fresh_family_reports():
    """The kernel report's family reports made afresh during the test and forgotten after it:
    none made before under other conditions is served, none made under the test's is kept
    (the compiles below them stay cached)."""
    from onnx_cupy.tools import kernel_report

    kernel_report.family_report.cache_clear()
    yield
    kernel_report.family_report.cache_clear()


@pytest.fixture
def no_nvdisasm(monkeypatch, fresh_family_reports):
    """As where the disassembler (nvidia-cuda-nvdisasm, or one on PATH) is not installed: the
    kernel report finds none, and its family reports are made without SASS counts."""
    from onnx_cupy.tools import kernel_report

    monkeypatch.setattr(kernel_report, "nvdisasm", lambda: None)


@pytest.fixture
def pool_gather(monkeypatch):
    """A function `gather(entries)` after which the pooling NumPy path makes a call from one
    gather where it has at most `entries` slots (taps x outputs; 2**12 in production): 0 takes
    the window passes for every call, 2**40 the gather for every small one. Prepared calls are
    cleared at each use (the choice is made when a call is prepared)."""
    from onnx_cupy.pool import numpy as numpy_pool

    def gather(entries: int) -> None:
        calls.clear()
        monkeypatch.setattr(numpy_pool, "GATHER_ENTRIES", entries)

    return gather


@pytest.fixture
def pool_whole_rows(monkeypatch):
    """A function `whole_rows(outputs)` after which the pooling NumPy path's window passes run
    over whole rows from `outputs` outputs of a pass on (2**12 in production): 0 always, 2**62
    never (row by row). Prepared calls are cleared at each use."""
    from onnx_cupy.pool import numpy_passes

    def whole_rows(outputs: int) -> None:
        calls.clear()
        monkeypatch.setattr(numpy_passes, "WHOLE_ROWS", outputs)

    return whole_rows


KERNEL_PATHS = ["emulated", "cupy"]


@pytest.fixture(params=KERNEL_PATHS)
def kernel_path(request):
    """'emulated', or 'cupy' on a fresh executing stand-in (the GPU where one is visible)."""
    if request.param == "cupy" and not execution.gpu_available():
        with StandIn().installed():
            yield "cupy"
        return
    yield request.param
