"""A stand-in for the `cupy` module on a machine without a GPU: just enough of CuPy's API for an
operator call to take the CuPy path (arrays on numbered devices, the current device, streams and
events), with `RawModule` recording what the loader asks NVRTC to compile and every launch.
Kernels do not run: outputs stay as `empty` made them."""
from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np
import pytest

from onnx_cupy.core import arrays, execution, loader
from onnx_cupy.resize import kernel as resize_kernel


@dataclass
class Module:
    """One `RawModule(code=..., options=..., name_expressions=...)` creation."""

    code: str
    options: tuple[str, ...]
    name_expressions: tuple[str, ...]
    device: int
    functions: list[str] = field(default_factory=list)   # get_function calls, in order


@dataclass
class Launch:
    expression: str
    device: int
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[Any, ...]


class FakeCupy:
    """The fake `cupy` module: `modules` and `launches` record the CuPy path's work;
    `compile_seconds` is how long a module's first `get_function` takes (NVRTC's stand-in)."""

    def __init__(self, compile_seconds: float = 0.0) -> None:
        self.modules: list[Module] = []
        self.launches: list[Launch] = []
        self.compile_seconds = compile_seconds
        self._local = threading.local()
        self._record = threading.Lock()
        fake = self

        class ndarray:
            """A host array that says it lives on a device."""

            def __init__(self, host: np.ndarray, device: int) -> None:
                self.host, self._device = host, device

            shape = property(lambda self: self.host.shape)
            dtype = property(lambda self: self.host.dtype)
            strides = property(lambda self: self.host.strides)
            size = property(lambda self: self.host.size)
            ndim = property(lambda self: self.host.ndim)
            flags = property(lambda self: self.host.flags)
            data = property(lambda self: _Pointer(self.host.ctypes.data))
            device = property(lambda self: fake.cuda.Device(self._device))

            def copy(self) -> ndarray:
                return ndarray(self.host.copy(), self._device)

            def __getitem__(self, key: Any) -> ndarray:
                return ndarray(self.host[key], self._device)

            def __setitem__(self, key: Any, value: Any) -> None:
                self.host[key] = value.host if isinstance(value, ndarray) else value

            def fill(self, value: Any) -> None:
                self.host.fill(value)

        class Device:
            def __init__(self, id: int | None = None) -> None:
                self.id = fake.device if id is None else id

            def __enter__(self) -> Self:
                self._previous = fake.device
                fake.device = self.id
                return self

            def __exit__(self, *exc: object) -> None:
                fake.device = self._previous

        class RawModule:
            def __init__(self, code: str, options: tuple[str, ...] = (),
                         name_expressions: Any = None) -> None:
                self.record = Module(code, tuple(options), tuple(name_expressions or ()),
                                     fake.device)
                with fake._record:
                    fake.modules.append(self.record)

            def get_function(self, name: str) -> Any:
                if not self.record.functions:
                    time.sleep(fake.compile_seconds)
                if name not in self.record.name_expressions:
                    raise KeyError(f"{name} is not among the module's name expressions")
                self.record.functions.append(name)
                return _Function(fake, name)

        class Event:
            def __init__(self, disable_timing: bool = False) -> None:
                self.recorded = False

            def record(self) -> None:
                self.recorded = True

        class Stream:
            def wait_event(self, event: Event) -> None:
                assert event.recorded

        class runtime:
            getDevice = staticmethod(lambda: fake.device)
            getDeviceCount = staticmethod(lambda: 2)

        class cuda:
            pass

        cuda.Device, cuda.Event, cuda.runtime = Device, Event, runtime
        cuda.get_current_stream = staticmethod(lambda: Stream())
        self.ndarray, self.RawModule, self.cuda = ndarray, RawModule, cuda

    @property
    def device(self) -> int:
        """The current device of the calling thread (CuPy's is per thread)."""
        return getattr(self._local, "device", 0)

    @device.setter
    def device(self, value: int) -> None:
        self._local.device = value

    def asarray(self, a: Any) -> Any:
        if isinstance(a, self.ndarray):
            return a
        return self.ndarray(np.array(a), self.device)

    def empty(self, shape: Any, dtype: Any = float) -> Any:
        return self.ndarray(np.empty(shape, dtype=dtype), self.device)

    def zeros(self, shape: Any, dtype: Any = float) -> Any:
        return self.ndarray(np.zeros(shape, dtype=dtype), self.device)

    def ascontiguousarray(self, a: Any) -> Any:
        return self.ndarray(np.ascontiguousarray(a.host), a._device)

    def asnumpy(self, a: Any) -> np.ndarray:
        return a.host.copy()

    def compiled(self, device: int | None = None) -> list[str]:
        """The name expressions of the modules created (on `device`), in creation order."""
        return [e for m in self.modules if device in (None, m.device) for e in m.name_expressions]


@dataclass
class _Pointer:
    ptr: int


@dataclass
class _Function:
    fake: FakeCupy
    name: str

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple) -> None:
        with self.fake._record:
            self.fake.launches.append(Launch(self.name, self.fake.device, tuple(grid),
                                             tuple(block), tuple(args)))


def install(monkeypatch: pytest.MonkeyPatch, compile_seconds: float = 0.0) -> FakeCupy:
    """A fresh FakeCupy as the library's `cupy` module, with the loader's compiled functions and
    Resize's device tables emptied (`monkeypatch` restores all at the end of the test)."""
    fake = FakeCupy(compile_seconds)
    monkeypatch.setattr(execution, "cupy_module", lambda: fake)
    monkeypatch.setattr(arrays, "cupy_module", lambda: fake)
    monkeypatch.setattr(loader, "_functions", {})
    monkeypatch.setattr(loader, "_compiling", {})
    monkeypatch.setattr(resize_kernel, "_device_tables", collections.OrderedDict())
    return fake
