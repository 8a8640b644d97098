"""Array interop (CuPy conventions): zero-copy acceptance of __cuda_array_interface__ and DLPack
inputs, thread-safe one-time kernel compilation, streams and devices (on the GPU where one is
visible, else on the executing stand-in cupy)."""
from __future__ import annotations

import threading
from typing import ClassVar

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import assert_close, random, record_builds, to_numpy

import onnx_cupy as oc
from onnx_cupy.core import execution

POOL = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}


class FakeCupy:
    """Records how a CUDA-array input would be handed to CuPy."""

    class ndarray:
        pass

    def __init__(self):
        self.calls = []

    def asarray(self, x):
        self.calls.append(("asarray", x))
        return "as-cupy"

    def from_dlpack(self, x):
        self.calls.append(("from_dlpack", x))
        return "from-dlpack"


class CudaInterface:
    __cuda_array_interface__: ClassVar[dict] = {"shape": (1,), "typestr": "<f4",
                                                "data": (0, False), "version": 3}


class DLPack:
    def __init__(self, device_type):
        self.device_type = device_type

    def __dlpack__(self, **kwargs):
        raise AssertionError("not read in this test")

    def __dlpack_device__(self):
        return (self.device_type, 0)


@pytest.fixture
def fake_cupy():
    with execution.cupy_substitute(FakeCupy()) as fake:
        yield fake


def test_cuda_array_interface_goes_to_cupy_asarray(fake_cupy):
    x = CudaInterface()
    assert execution.as_array(x, "AveragePool") == "as-cupy"
    assert fake_cupy.calls == [("asarray", x)]


@pytest.mark.parametrize("device_type", [2, 13])  # kDLCUDA, kDLCUDAManaged
def test_cuda_dlpack_goes_to_cupy_from_dlpack(fake_cupy, device_type):
    x = DLPack(device_type)
    assert execution.as_array(x, "Hardmax") == "from-dlpack"
    assert fake_cupy.calls == [("from_dlpack", x)]


def test_cpu_dlpack_becomes_numpy_without_copy(rng):
    x = random(rng, (2, 3, 7, 9), np.float32)

    class CpuTensor:  # a CPU DLPack producer that is not an ndarray
        def __dlpack__(self, **kwargs):
            return x.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return x.__dlpack_device__()

    got = execution.as_array(CpuTensor(), "AveragePool")
    assert isinstance(got, np.ndarray) and np.shares_memory(got, x)
    np.testing.assert_array_equal(oc.average_pool(CpuTensor(), **POOL), oc.average_pool(x, **POOL))


def test_cuda_input_without_cupy_is_a_clear_type_error():
    with execution.cupy_substitute(None), pytest.raises(
            TypeError, match=r"AveragePool: X is a CUDA array \(CudaInterface\); install CuPy "
                             r"to run on it: pip install \"cupy-cuda12x"):
        oc.average_pool(CudaInterface(), kernel_shape=[1])


@pytest.mark.parametrize("bad", [[[1.0]], 3.0, DLPack(device_type=4)])  # list, scalar, OpenCL
def test_unsupported_array_types(bad):
    with pytest.raises(TypeError, match=r"Hardmax: X must be a numpy.ndarray, a cupy.ndarray or "
                                        r"an array exposing __cuda_array_interface__ or DLPack"):
        oc.hardmax(bad)


def test_concurrent_calls_compile_each_kernel_once(monkeypatch, tmp_path, rng):
    """Threads racing on a cold emulator cache build the library once and all get right answers."""
    builds = record_builds(monkeypatch, tmp_path)
    inputs = [random(rng, (1, 2, 9, 11), np.float32) for _ in range(8)]
    results = [None] * len(inputs)
    barrier = threading.Barrier(len(inputs))

    def work(i):
        barrier.wait()
        with oc.backend("emulated"):
            results[i] = oc.average_pool(inputs[i], **POOL)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len([cmd for cmd in builds if cmd[-1].endswith(".so")]) == 1
    for x, y in zip(inputs, results):
        assert_close(y, oc.average_pool(x, **POOL))   # the NumPy path, summed in its own order


@pytest.fixture
def cp():
    """The cupy module on the GPU where one is visible, else a fresh executing stand-in cupy
    (tests/helpers/standin.py: two devices, its launches recorded) installed for the test."""
    if execution.gpu_available():
        yield execution.cupy_module()
        return
    with StandIn().installed() as fake:
        yield fake


def assert_pooled(y, x):
    """`y` is the pooling of `x` (POOL): the bits of the same kernels on the emulated backend,
    and within float32's tolerance of the NumPy path (which sums in its own order)."""
    host = to_numpy(x)
    with oc.backend("emulated"):
        assert to_numpy(y).tobytes() == oc.average_pool(host, **POOL).tobytes()
    assert_close(y, oc.average_pool(host, **POOL))


def test_non_default_stream_is_used(cp):
    x = cp.asarray(random(np.random.default_rng(1), (4, 8, 33, 35), np.float32))
    before = len(getattr(cp, "launches", ()))
    with cp.cuda.Stream(non_blocking=True) as stream:
        y = oc.average_pool(x, **POOL)
        h = oc.hardmax(x, axis=1)
        stream.synchronize()
    if isinstance(cp, StandIn):   # what only the stand-in records: the launches on the stream
        inside = cp.launches[before:]
        assert len(inside) >= 2 and all(r.stream == stream.ptr != 0 for r in inside)
    assert_pooled(y, x)
    np.testing.assert_array_equal(to_numpy(h), oc.hardmax(to_numpy(x), axis=1))


def test_output_on_the_input_device(cp):
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs a second GPU")
    with cp.cuda.Device(1):
        x = cp.asarray(random(np.random.default_rng(2), (2, 3, 17, 19), np.float32))
    with cp.cuda.Device(0):
        y = oc.average_pool(x, **POOL)
    assert y.device.id == 1
    assert_pooled(y, x)
