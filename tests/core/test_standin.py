"""The emulated device, and the stand-in cupy the tests build on it (tests/helpers/standin.py),
refuse what CuPy and the driver refuse (so that the CuPy path, tested on them, holds on a GPU):
the rules of CuPy's `Function.__call__` and `_launch`
(cupy/cuda/function.pyx: tuples for grid and block, scalars of its kernel types), the driver's
launch limits and a kernel's `__launch_bounds__`, `Stream.begin_capture`'s refusal of the null
and legacy streams and `is_capturing`'s error where CUDA's query fails (cupy/cuda/stream.pyx),
and CuPy's NVRTC binding and `Module` (cupy_backends/cuda/libs/nvrtc.pyx): str sources and
options, a CUBIN only for a real architecture, bytes to load, names it holds."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.standin import StandIn

from onnx_cupy.core import cuda_compile, emulated_device, loader


@pytest.fixture
def fake(request):
    return fake_cupy.install(request)


def _kernel(fake, template="pool_global", dtype="float32"):
    """A loaded function of `template` and its parameter struct (zeros: no work)."""
    k = next(k for k in loader.instantiations() if k.template == template
             and k.dtypes == (dtype,) and k["index"] == 32)
    return loader.cuda_function(k), k


def _global_args(fake, planes=0):
    """Arguments of pool_global<float, float, int>: x, y and its struct by address."""
    struct = np.zeros(1, loader.struct_parameters(_kernel(fake)[1])[2])
    struct["planes"], struct["channels"], struct["length"], struct["step"] = planes, 1, 4, 1
    x, y = fake.asarray(np.arange(4, dtype=np.float32)), fake.empty((1,), np.float32)
    return (x, y, fake.cuda.function.CPointer(struct.ctypes.data)), struct, y


@pytest.mark.parametrize("grid, block, error", [
    ([1, 1, 1], (256, 1, 1), "Argument 'grid' has incorrect type"),
    ((1, 1, 1), [256, 1, 1], "Argument 'block' has incorrect type"),
    ((0, 1, 1), (256, 1, 1), "CUDA_ERROR_INVALID_VALUE"),
    ((2**31, 1, 1), (256, 1, 1), "CUDA_ERROR_INVALID_VALUE"),
    ((1, 65536, 1), (256, 1, 1), "CUDA_ERROR_INVALID_VALUE"),
    ((1, 1, 1), (1025, 1, 1), "CUDA_ERROR_INVALID_VALUE"),
    ((1, 1, 1), (1, 1, 65), "CUDA_ERROR_INVALID_VALUE"),
    ((1, 1, 1), (512, 1, 1), "past its __launch_bounds__ 256"),
    ((1, 1, 1), (1.0, 1, 1), "must be 1 to 3 ints"),
])
def test_launch_shapes_cuda_refuses(fake, grid, block, error):
    fn, _ = _kernel(fake)
    args, _, _ = _global_args(fake)
    with pytest.raises((TypeError, RuntimeError), match=error):
        fn(grid, block, args)
    assert not fake.launches   # refused before anything ran


def test_launch_bounds_come_from_the_source():
    """A kernel's bound is its __launch_bounds__ (a define of its family), else CUDA's 1024."""
    bounded = next(k for k in loader.instantiations("pool") if k.template == "pool_global")
    free = next(k for k in loader.instantiations("pool") if k.template == "pool")
    assert loader.max_threads(bounded) == loader.BLOCK == 256
    assert loader.max_threads(free) == loader.MAX_THREADS == 1024


def test_a_launch_within_the_rules_runs_on_the_given_stream(fake):
    fn, _ = _kernel(fake)
    args, _, y = _global_args(fake, planes=1)
    stream = fake.cuda.Stream(non_blocking=True)
    assert stream.ptr not in (0, 1, 2)   # handles as a driver's
    fn((1,), (256,), args, stream=stream)
    (launch,) = fake.launches
    assert launch.stream == stream.ptr and launch.grid == (1, 1, 1)
    assert y.get()[0] == 1.5   # mean of 0, 1, 2, 3: it ran
    with pytest.raises(TypeError, match="stream must be a Stream"):
        fn((1,), (256,), args, stream=stream.ptr)
    with pytest.raises(RuntimeError, match="shared_mem"):
        fn((1,), (256,), args, shared_mem=48 * 1024 + 1)


def test_a_launch_on_a_capturing_stream_is_captured_whatever_is_current(fake):
    fn, _ = _kernel(fake)
    args, _, y = _global_args(fake, planes=1)
    y.host[...] = 0
    capturing = fake.cuda.Stream(non_blocking=True)
    with capturing:
        capturing.begin_capture()
    fn((1,), (256,), args, stream=capturing)   # the null stream is current
    assert y.host[0] == 0   # captured, not run
    with capturing:
        graph = capturing.end_capture()
    graph.launch()
    assert y.host[0] == 1.5


def test_structured_scalars_are_refused(fake):
    fn, _ = _kernel(fake)
    args, struct, _ = _global_args(fake)
    with pytest.raises(TypeError, match="Unsupported type"):
        fn((1,), (256,), (*args[:2], struct[0]))


@pytest.mark.parametrize("null", [True, False])
def test_capture_on_the_default_streams_is_refused(fake, null):
    stream = fake.cuda.Stream(null=True) if null else fake.cuda.Stream()
    if not null:
        stream.ptr = 1   # cudaStreamLegacy's handle
    with pytest.raises(RuntimeError, match="cannot capture on the default"):
        stream.begin_capture()


@pytest.mark.parametrize("non_blocking", [False, True])
def test_is_capturing_on_the_null_stream_fails_while_a_blocking_stream_captures(fake,
                                                                                non_blocking):
    s = fake.cuda.Stream(non_blocking=non_blocking)
    null = fake.cuda.get_current_stream()
    assert null.ptr == 0 and not null.is_capturing()
    with s:
        s.begin_capture()
        assert s.is_capturing()
    if non_blocking:
        assert not null.is_capturing()
    else:
        with pytest.raises(RuntimeError, match="cudaErrorStreamCaptureImplicit"):
            null.is_capturing()
    with s:
        s.end_capture()
    assert not null.is_capturing()


def test_nvrtc_rules(fake):
    nvrtc = fake.cuda.nvrtc
    k = loader.instantiations("unpool")[0]
    prog = nvrtc.createProgram(loader.source("unpool"), "unpool.cu", [], [])
    nvrtc.addNameExpression(prog, k.expression)
    with pytest.raises(Exception, match="NAME_EXPRESSION_NOT_VALID"):
        nvrtc.getLoweredName(prog, k.expression)   # before the compile
    with pytest.raises(TypeError, match="options are str"):
        nvrtc.compileProgram(prog, [b"-std=c++17"])
    nvrtc.compileProgram(prog, [*loader.options("unpool"), "--gpu-architecture=compute_90"])
    assert fake.compiled() == [k.expression]
    with pytest.raises(RuntimeError, match="the real arch"):
        nvrtc.getCUBIN(prog)
    with pytest.raises(Exception, match="NO_NAME_EXPRESSIONS_AFTER_COMPILATION"):
        nvrtc.addNameExpression(prog, k.expression)
    image = nvrtc.getPTX(prog)
    module = fake.cuda.function.Module()
    with pytest.raises(TypeError, match="expected bytes"):
        module.load(bytearray(image))
    module.load(image)
    with pytest.raises(RuntimeError, match="CUDA_ERROR_NOT_FOUND"):
        module.get_function(k.expression)   # the lowered name, not the expression
    assert module.get_function(nvrtc.getLoweredName(prog, k.expression)).name == k.expression
    nvrtc.destroyProgram(prog)
    with pytest.raises(Exception, match="INVALID_PROGRAM"):
        nvrtc.getPTX(prog)
    stranger = nvrtc.createProgram("__global__ void other() {}", "other.cu", [], [])
    nvrtc.addNameExpression(stranger, k.expression)
    with pytest.raises(Exception, match="NVRTC_ERROR_COMPILATION"):
        nvrtc.compileProgram(stranger, ["--gpu-architecture=sm_90"])


def test_an_image_the_stand_in_did_not_make_is_refused(fake):
    with pytest.raises(ValueError, match="CUDA_ERROR_INVALID_IMAGE"):
        fake.cuda.function.Module().load(b"\x7fELF not ours")


def test_the_loader_compiles_for_the_devices_architecture(fake):
    fake.compute_capability = "86"   # not among the stand-in NVRTC's: PTX of the newest below
    k = loader.instantiations("unpool")[0]
    loader.cuda_function(k)
    (program,) = fake.compiles
    assert program.options[-1] == "--gpu-architecture=compute_80"
    assert cuda_compile.target(90, (80, 90)) == "sm_90"


def test_invalid_devices_are_refused():
    fake = StandIn(executing=False)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        fake.cuda.Device(2)


def test_the_package_device_is_device_0_without_records_or_capture():
    """The emulated backend's device and the host section's: one device, no records, no
    stream capture (the tests' stand-in adds those)."""
    device = emulated_device.emulated_device()
    assert device is emulated_device.emulated_device() and device.executing
    for d in (device, emulated_device.EmulatedDevice(executing=False)):
        assert d.cuda.runtime.getDeviceCount() == 1 and d.cuda.Device().id == 0
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            d.cuda.Device(1)
        stream = d.cuda.Stream(non_blocking=True)
        assert not stream.is_capturing() and not hasattr(stream, "begin_capture")
        assert not any(hasattr(d, name) for name in ("launches", "operations", "modules",
                                                      "compiles", "capturing"))


@pytest.mark.parametrize("executing", [True, False])
def test_the_package_device_launches_with_cupys_rules(executing):
    """A launch on the emulated device itself: CuPy's rules hold, it runs where the device
    executes, and computes nothing where it does not (the host section's device)."""
    device = emulated_device.EmulatedDevice(executing)
    with device.installed():
        fn, _ = _kernel(device)
        args, _, y = _global_args(device, planes=1)
        y.host[...] = -1
        with pytest.raises(TypeError, match="Argument 'grid' has incorrect type"):
            fn([1], (256,), args)
        fn((1,), (256,), args)
    assert y.get()[0] == (1.5 if executing else -1)
