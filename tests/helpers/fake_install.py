"""An installed CuPy as the cupy path's checks see it (onnx_cupy.core.cupy_path), for the tests
of what the library and the command line say where the cupy backend cannot run: a module named
cupy with a version, a runtime that counts devices or raises the driver's error, and NVRTC
found or not; and cuda.pathfinder's look-up of the CUDA headers. `execution.cupy_substitute`
makes such a module the library's cupy."""
from __future__ import annotations

import sys
import types

import pytest

DRIVER_TEXT = ("cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA "
               "runtime version")
HEADERS = "/opt/cuda/include"


class CUDARuntimeError(RuntimeError):
    """As cupy_backends.cuda.api.runtime.CUDARuntimeError reads: the error's name, then text."""


class DynamicLibNotFoundError(RuntimeError):
    """cuda.pathfinder's error when a library is nowhere to be loaded (CuPy's, without NVRTC)."""


def cupy(version: str = "14.2.0", devices: int | None = None, nvrtc: bool = True
         ) -> types.ModuleType:
    """A module `cupy` of `version` whose runtime counts `devices` GPUs (None: raises the
    driver's error, as on a machine without a usable GPU) and whose NVRTC is found or not."""
    module = types.ModuleType("cupy")
    module.__version__ = version

    def count() -> int:
        module.device_counts += 1
        if devices is None:
            raise CUDARuntimeError(DRIVER_TEXT)
        return devices

    def nvrtc_version() -> tuple[int, int]:
        if not nvrtc:
            raise DynamicLibNotFoundError('Failure finding "libnvrtc.so.13 or libnvrtc.so.12"')
        return 12, 9

    module.device_counts = 0   # how often the runtime was asked
    module.ndarray = type("ndarray", (), {})   # no array is one of these
    runtime = types.SimpleNamespace(
        getDeviceCount=count, getDevice=lambda: 0, runtimeGetVersion=lambda: 12090,
        driverGetVersion=lambda: 12080,
        getDeviceProperties=lambda i: {"name": b"Fake GPU", "major": 9, "minor": 0})
    module.cuda = types.SimpleNamespace(runtime=runtime,
                                        nvrtc=types.SimpleNamespace(getVersion=nvrtc_version))
    return module


def headers(monkeypatch: pytest.MonkeyPatch, found: str | None = HEADERS) -> None:
    """cuda.pathfinder, as CuPy finds the CUDA headers with it, finds them at `found` (None:
    nowhere) for the rest of the test."""
    pathfinder = types.ModuleType("cuda.pathfinder")

    def find_nvidia_header_directory(name: str) -> str | None:
        assert name == "cudart", name   # cuda_runtime.h's directory, as CuPy 14 asks it
        return found

    pathfinder.find_nvidia_header_directory = find_nvidia_header_directory
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", pathfinder)
