"""The stand-in cupy's classes (onnx_cupy.core.standin): its records (ModuleRecord,
LaunchRecord, Operation, CaptureError); its ndarray, Device, Event, Graph, Stream, RawModule,
kernel Function, runtime and CPointer, made for one StandIn by `build` and bound to it; and how
a launch reads its arguments (`_pointer`)."""
from __future__ import annotations

import ctypes
import dataclasses
import itertools
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import standin_nvrtc

if TYPE_CHECKING:
    from .standin import StandIn, _Block

class CaptureError(RuntimeError):
    """An operation that CUDA refuses while a stream is being captured into a graph."""


@dataclass
class ModuleRecord:
    """One `cuda.function.Module().load(image)`: the device it was loaded on, the name
    expressions of its kernels, and its `get_function` calls in order (by name expression)."""

    device: int
    name_expressions: tuple[str, ...]
    functions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LaunchRecord:
    """One kernel launch (a graph's replay adds its launches again, `captured` False); `args`:
    the addresses the driver would read each argument from."""

    expression: str
    device: int
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[int | None, ...]
    stream: int = 0
    captured: bool = False


@dataclass(slots=True)
class Operation:
    """One device-side operation other than a launch: `kind` is "allocate", "to device" (a
    host-to-device copy), "to host", "synchronize", "wait" (a stream waiting on an event),
    "compile", "memset" or "elementwise" (one of CuPy's own kernels). `flushes`, for one of
    CuPy's own kernels: it does float arithmetic, or converts to, from or between floats (float
    operands or results, and not a copy, fill or view within one dtype), which CuPy's own
    compile (-ftz=true) flushes to zero on a GPU where an operand or result is subnormal
    (onnx_cupy.core.standin.flushing)."""

    kind: str
    device: int
    stream: int
    nbytes: int = 0
    captured: bool = False
    what: str = ""
    flushes: bool = False


DEVICES = 2   # the stand-in's devices (ordinals 0 and 1)
CHECKED = 4   # launch shapes a kernel function remembers as checked
_ARITHMETIC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
               "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power}
_COMPARISONS = {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                "eq": np.equal, "ne": np.not_equal}


def build(fake: StandIn) -> None:
    """The stand-in's classes (ndarray, RawModule, cuda.*), bound to `fake`."""

    class ndarray:
        """A host array that says it lives on a device."""

        def __init__(self, host: np.ndarray, device: int, block: _Block | None = None,
                     address: int | None = None) -> None:
            self.host, self._device, self._block = host, device, block
            self._address = address

        def address(self) -> int:
            """The address of the first element (the host array's, standing for the device's)."""
            if self._address is None:
                self._address = int(self.host.__array_interface__["data"][0])
            return self._address

        shape = property(lambda self: self.host.shape)
        dtype = property(lambda self: self.host.dtype)
        strides = property(lambda self: self.host.strides)
        size = property(lambda self: self.host.size)
        ndim = property(lambda self: self.host.ndim)
        nbytes = property(lambda self: self.host.nbytes)
        itemsize = property(lambda self: self.host.itemsize)
        flags = property(lambda self: self.host.flags)
        @property
        def data(self) -> _Pointer:
            """Its MemoryPointer (made once: CuPy's is a cheap compiled object)."""
            pointer = self.__dict__.get("_data")
            if pointer is None:
                pointer = self._data = _Pointer(self.address(), fake)
            return pointer
        device = property(lambda self: fake.cuda.Device(self._device))
        T = property(lambda self: self._view(self.host.T))

        def _view(self, host: np.ndarray) -> ndarray:
            return ndarray(host, self._device, self._block)

        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
            """NumPy's functions on device arrays as CuPy's (NEP 18)."""
            return fake.numpy_function(func.__name__, func, *args, **kwargs)

        def __array_ufunc__(self, ufunc: Any, method: str, *args: Any, **kwargs: Any) -> Any:
            """NumPy's ufuncs on device arrays as CuPy's (NEP 13)."""
            if "out" in kwargs:
                kwargs["out"] = tuple(o for o in kwargs["out"])
                if len(kwargs["out"]) == 1:
                    kwargs["out"] = kwargs["out"][0]
            return fake.numpy_function(ufunc.__name__, getattr(ufunc, method), *args, **kwargs)

        def __array__(self, *args: Any, **kwargs: Any) -> Any:
            raise TypeError("stand-in cupy: implicit conversion to a NumPy array is not "
                            "allowed (as in CuPy); use .get()")

        def get(self) -> Any:
            fake.note("to host", self.nbytes, "ndarray.get",
                      refused="a copy to host memory waits for the device")
            fake.note("synchronize", what="ndarray.get", refused="a synchronization")
            return self.host.copy()

        def copy(self) -> Any:
            return fake.elementwise("copy", np.copy, self)

        def fill(self, value: Any) -> None:
            fake.elementwise("fill", lambda a: np.asarray(value, a.dtype), self, out=self)

        def astype(self, dtype: Any, copy: bool = True) -> Any:
            if not copy and self.dtype == np.dtype(dtype):
                return self
            return fake.elementwise("astype", lambda a: a.astype(dtype), self)

        def __getattr__(self, name: str) -> Any:
            """Any other method of CuPy's arrays as NumPy's, its array results on the device."""
            method = getattr(self.host, name, None) if not name.startswith("_") else None
            if method is None or not callable(method):
                raise AttributeError(f"stand-in cupy array has no attribute {name!r}")

            def call(*args: Any, **kwargs: Any) -> Any:
                return fake.numpy_function(name, lambda *a, **k: method(*a, **k), *args,
                                           **kwargs)
            return call

        __bool__ = lambda self: bool(self.host)   # noqa: E731 (scalar conversions, as CuPy)
        __int__ = lambda self: int(self.host)   # noqa: E731
        __float__ = lambda self: float(self.host)   # noqa: E731
        __neg__ = lambda self: fake.elementwise("negative", np.negative, self)   # noqa: E731
        __abs__ = lambda self: fake.elementwise("absolute", np.absolute, self)   # noqa: E731
        __invert__ = lambda self: fake.elementwise("invert", np.invert, self)   # noqa: E731

        def view(self, dtype: Any) -> ndarray:
            return self._view(self.host.view(dtype))

        def reshape(self, *shape: Any) -> ndarray:
            return self._view(self.host.reshape(*shape))

        def transpose(self, *axes: Any) -> ndarray:
            return self._view(self.host.transpose(*axes))

        def __getitem__(self, key: Any) -> ndarray:
            return self._view(self.host[key])

        def __setitem__(self, key: Any, value: Any) -> None:
            target = self._view(self.host[key])
            if isinstance(value, np.ndarray):
                fake.note("to device", value.nbytes, "ndarray.__setitem__",
                          refused="a copy from host memory (it is not in the graph)")
                target.host[...] = value
            else:
                fake.elementwise("copy", lambda v: v, value, out=target)

        def __len__(self) -> int:
            return len(self.host)

        def __repr__(self) -> str:
            return f"stand-in cupy array on device {self._device}: {self.host!r}"

    def arithmetic(name: str, fn: Callable[..., Any]) -> None:
        setattr(ndarray, f"__{name}__", lambda a, b: fake.elementwise(name, fn, a, b))
        setattr(ndarray, f"__r{name}__", lambda a, b: fake.elementwise(name, fn, b, a))
        setattr(ndarray, f"__i{name}__", lambda a, b: fake.elementwise(name, fn, a, b, out=a))

    for name, fn in _ARITHMETIC.items():
        arithmetic(name, fn)
    for name, fn in _COMPARISONS.items():
        setattr(ndarray, f"__{name}__",
                lambda a, b, name=name, fn=fn: fake.elementwise(name, fn, a, b))

    class Device:
        __slots__ = ("_previous", "id")

        def __init__(self, id: int | None = None) -> None:
            self.id = fake._local.device if id is None else id
            if not 0 <= self.id < DEVICES:
                raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id}")

        @property
        def compute_capability(self) -> str:
            return fake.compute_capability

        def __enter__(self) -> Device:  # noqa: PYI034 (a class made per stand-in)
            local = fake._local
            self._previous, local.device = local.device, self.id
            return self

        def __exit__(self, *exc: object) -> None:
            fake._local.device = self._previous

        def use(self) -> None:
            fake.device = self.id

        def synchronize(self) -> None:
            fake.note("synchronize", what="Device.synchronize", refused="a synchronization")

    class Event:
        def __init__(self, block: bool = False, disable_timing: bool = False,
                     interprocess: bool = False) -> None:
            self.recorded_in: Any = None   # the capturing stream it was recorded in, if any
            self.recorded = False

        def record(self, stream: Any = None) -> None:
            self.recorded, self.recorded_in = True, fake.capturing()

        def synchronize(self) -> None:
            fake.note("synchronize", what="Event.synchronize", refused="a synchronization")

        @property
        def done(self) -> bool:
            return True

    class Graph:
        """A captured sequence of launches; `launch` replays them."""

        def __init__(self, launches: list[LaunchRecord], steps: list[Callable[[], None]]) -> None:
            self.steps = steps   # what runs, in capture order: kernels, copies, memsets
            self.captured = launches

        def launch(self, stream: Any = None) -> None:
            with fake._record:
                fake.launches.extend(dataclasses.replace(r, captured=False)
                                     for r in self.captured)
            for run in self.steps:   # each as its capture read it
                run()

        def upload(self, stream: Any = None) -> None:
            pass

    class Stream:
        _ptrs = itertools.count(0x7F0000001000, 0x100)   # handles as a driver's, never 0-2

        def __init__(self, null: bool = False, non_blocking: bool = False,
                     ptr: int | None = None) -> None:
            self.ptr = 0 if null else next(self._ptrs)
            self.non_blocking = non_blocking
            self.graph_launches: list[LaunchRecord] = []
            self.graph_steps: list[Callable[[], None]] = []

        def __enter__(self) -> Stream:  # noqa: PYI034 (a class made per stand-in)
            fake._local.streams = (*fake._local.streams, self)
            return self

        def __exit__(self, *exc: object) -> None:
            fake._local.streams = fake._local.streams[:-1]

        def use(self) -> Stream:
            fake._local.streams = (self,)
            return self

        def synchronize(self) -> None:
            fake.note("synchronize", what="Stream.synchronize", refused="a synchronization")

        def wait_event(self, event: Any) -> None:
            outside = event.recorded_in is not fake.capturing()
            fake.note("wait", what="Stream.wait_event", refused="a wait on an event recorded "
                      "outside the capture" if outside else "")

        def record(self, event: Any = None) -> Any:
            event = event or Event()
            event.record(self)
            return event

        def begin_capture(self, mode: Any = None) -> None:
            if self.ptr in (0, 1):   # as CuPy: the null stream and the legacy one
                raise RuntimeError("cannot capture on the default (legacy) stream")
            if fake.capturing() is not None:
                raise CaptureError("stand-in cupy: a capture is already running")
            self.graph_launches, self.graph_steps = [], []
            fake._local.capture = self
            with fake._record:
                fake.captures.add(self)

        def end_capture(self) -> Graph:
            if fake.capturing() is not self:
                raise CaptureError("stand-in cupy: end_capture on a stream not capturing")
            fake._local.capture = None
            with fake._record:
                fake.captures.discard(self)
            return Graph(self.graph_launches, self.graph_steps)

        def is_capturing(self) -> bool:
            """As cudaStreamIsCapturing: an error for the legacy null stream while a blocking
            stream is being captured (in any thread)."""
            if self.ptr == 0 and any(not c.non_blocking for c in fake.captures):
                raise RuntimeError("cudaErrorStreamCaptureImplicit: operation would make the "
                                   "legacy stream depend on a capturing blocking stream")
            return self in fake.captures

    class Module:
        """cupy.cuda.function.Module: `load` takes the bytes of an image the stand-in's NVRTC
        made (standin_nvrtc), on the current device; `get_function` a lowered name of it."""

        def __init__(self) -> None:
            self.record: ModuleRecord | None = None
            self._names: dict[str, str] = {}

        def load(self, cubin: bytes) -> None:
            if type(cubin) is not bytes:
                raise TypeError(f"Argument 'cubin' has incorrect type (expected bytes, got "
                                f"{type(cubin).__name__})")
            self._names = standin_nvrtc.image_names(cubin)
            self.record = ModuleRecord(fake.device, tuple(self._names.values()))
            with fake._record:
                fake.modules.append(self.record)

        def get_function(self, name: str) -> Function:
            expression = self._names.get(name)
            if self.record is None or expression is None:
                raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name})")
            self.record.functions.append(expression)
            return Function(expression, self.record.device, self)

    class Function:
        """A kernel loaded on one device; calling it launches: packs the arguments as CuPy's
        `_launch` does, records, and runs the instantiation on the emulator (at once, or when
        the captured graph is launched), each argument read as the driver reads it then."""

        def __init__(self, name: str, device: int, module: Module) -> None:
            from . import loader

            self.name, self.device, self.module = name, device, module
            self._kernel = loader.instantiation(name)   # its registered instantiation
            self._structs = loader.struct_parameters(self._kernel)
            self._threads = loader.max_threads(self._kernel)   # its __launch_bounds__
            # the (grid, block) tuples checked last, most recent first: a function that
            # prepared calls launch with a few shapes (one instantiation, two steps) checks each
            # once, as CuPy's compiled launch costs the same whatever shape came before
            self._checked: tuple[tuple[Any, Any], ...] = ()

        def _read(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]
                  ) -> Callable[[], None]:
            """The launch with its arguments read now: a device array as its memory (the view
            at its address), a CPointer as a copy of the bytes of the struct the kernel declares
            at its place, a size-one NumPy array as a copy, a Python scalar as CuPy converts it
            (int64, float64, bool)."""
            from . import launcher

            read: list[Any] = []
            for at, a in enumerate(args):
                kind = type(a)
                if kind is ndarray:
                    read.append(a.host)
                elif kind is CPointer:
                    struct = self._structs[at] if at < len(self._structs) else None
                    if struct is None:
                        raise TypeError(f"stand-in cupy: {self.name}: a CPointer at argument "
                                        f"{at}, where the kernel declares no parameter struct")
                    read.append(_snapshot(np.frombuffer(
                        ctypes.string_at(a.ptr, struct.itemsize), struct)))
                elif a is None or isinstance(a, np.generic):
                    read.append(a)
                elif isinstance(a, np.ndarray):
                    read.append(_snapshot(a))
                else:   # a Python scalar (_pointer checked its type)
                    read.append(np.bool_(a) if kind is bool else np.int64(a) if kind is int
                                else np.float64(a))
            kernel, taken = self._kernel, tuple(read)
            shape = cast(launcher.Shape, (grid, block))   # 3-tuples: __call__ padded them
            return lambda: launcher.launch("emulated", kernel, 0, taken, shape)

        def _check(self, grid: Any, block: Any) -> None:
            """CuPy's and the driver's rules on a launch's shape: tuples, at most three
            positive extents each, grid x below 2**31 and y, z below 2**16, a block of at most
            1024 threads (z at most 64) and at most the kernel's __launch_bounds__."""
            for name, value in (("grid", grid), ("block", block)):
                if type(value) is not tuple:
                    raise TypeError(f"Argument '{name}' has incorrect type (expected tuple, got "
                                    f"{type(value).__name__})")
                if not 1 <= len(value) <= 3 or any(type(v) is not int for v in value):
                    raise TypeError(f"stand-in cupy: {name} must be 1 to 3 ints, got {value!r}")
            g = (grid + (1, 1))[:3]
            b = (block + (1, 1))[:3]
            threads = b[0] * b[1] * b[2]
            if (min(g) < 1 or min(b) < 1 or g[0] > 2**31 - 1 or max(g[1:]) > 65535
                    or max(b[:2]) > 1024 or b[2] > 64 or threads > 1024):
                raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: invalid argument (grid {grid}, "
                                   f"block {block})")
            if threads > self._threads:
                raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: invalid argument ({self.name}: "
                                   f"{threads} threads per block past its __launch_bounds__ "
                                   f"{self._threads})")

        def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...],
                     shared_mem: int = 0, stream: Any = None,
                     enable_cooperative_groups: bool = False) -> None:
            checked = self._checked   # a prepared call launches the same tuples every time
            for seen_grid, seen_block in checked:
                if grid is seen_grid and block is seen_block:
                    break
            else:
                self._check(grid, block)
                self._checked = ((grid, block), *checked[:CHECKED - 1])
            if shared_mem and (type(shared_mem) is not int or not 0 <= shared_mem <= 48 * 1024):
                raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: shared_mem {shared_mem!r} (at "
                                   f"most 48 KiB of dynamic shared memory without opting in)")
            if stream is not None and not isinstance(stream, Stream):
                raise TypeError(f"stand-in cupy: stream must be a Stream, got {stream!r}")
            grid = (grid + (1, 1))[:3]
            block = (block + (1, 1))[:3]
            local = fake._local
            if local.device != self.device:
                raise RuntimeError(f"stand-in cupy: {self.name} was loaded on device "
                                   f"{self.device}, launched with device {fake.device} current")
            packed = []   # what the driver reads: the address of each argument's value
            for a in args:
                kind = type(a)
                if kind is ndarray:
                    if a._device != local.device:
                        raise ValueError(f"stand-in cupy: an array of device {a._device} "
                                         f"passed to a launch on device {local.device}")
                    packed.append(a.address())
                elif kind is CPointer:
                    packed.append(a.ptr)
                else:
                    packed.append(_pointer(a, fake))
            fake._launched(self.name, grid, block, tuple(packed), stream)
            if fake.executing:
                fake.deferred(self.name, self._read(grid, block, args), launch=False,
                              stream=stream)

    class runtime:
        getDevice = staticmethod(lambda: fake.device)
        getDeviceCount = staticmethod(lambda: DEVICES)
        setDevice = staticmethod(lambda device: Device(device).use())

        @staticmethod
        def deviceSynchronize() -> None:
            fake.note("synchronize", what="deviceSynchronize", refused="a synchronization")

    class CPointer:
        """A pointer to an argument's bytes, passed as it is (cupy.cuda.function.CPointer)."""

        def __init__(self, p: int = 0) -> None:
            self.ptr = p

    fake._null = Stream(null=True)
    fake.ndarray = ndarray
    fake.cuda = types.SimpleNamespace(
        Device=Device, Event=Event, Stream=Stream, Graph=Graph, runtime=runtime,
        function=types.SimpleNamespace(CPointer=CPointer, Module=Module),
        nvrtc=standin_nvrtc.StandInNVRTC(fake), get_current_stream=fake.current_stream)


@dataclass
class _Pointer:
    """An array's `data`: its address, and the memset CuPy's MemoryPointer gives (recorded as
    one operation of the array's stand-in; it sets the bytes where the stand-in executes)."""

    ptr: int
    owner: StandIn | None = None

    def memset_async(self, value: int, size: int, stream: Any = None) -> None:
        if self.owner is not None:
            self.owner.note("memset", size, "MemoryPointer.memset_async")
            if size and self.owner.executing:
                at = self.ptr

                def run() -> None:
                    ctypes.memset(at, value, size)
                self.owner.deferred("memset", run)


def _pointer(arg: Any, fake: StandIn) -> int:
    """A kernel argument as CuPy's launch reads it: a device array's address (on the current
    device), a CPointer's address as it is, a size-one NumPy array's data (a struct by value,
    through its __array_interface__ as CuPy reads it), a scalar's value."""
    if arg is None:
        return 0
    if isinstance(arg, fake.ndarray):
        if arg._device != fake._local.device:
            raise ValueError(f"stand-in cupy: an array of device {arg._device} passed to a "
                             f"launch on device {fake.device}")
        return int(arg.address())
    if isinstance(arg, fake.cuda.function.CPointer):
        return int(arg.ptr)
    if isinstance(arg, np.ndarray):
        if arg.size != 1:
            raise TypeError(f"stand-in cupy: a numpy.ndarray of shape {arg.shape} as a kernel "
                            f"argument (only size one passes by value)")
        return int(arg.__array_interface__["data"][0])
    if isinstance(arg, np.void):   # CuPy's scalars are of its kernels' types, no structs
        raise TypeError(f"Unsupported type {type(arg)}")
    if isinstance(arg, (np.generic, int, float, bool, complex)):
        return int(np.asarray(arg).ctypes.data)
    raise TypeError(f"stand-in cupy: unsupported kernel argument {type(arg).__name__}")


def _snapshot(a: np.ndarray) -> np.ndarray:
    """A by-value argument's bytes as the launch read them: a read-only copy."""
    copy: np.ndarray = np.array(a, copy=True)
    copy.flags.writeable = False
    return copy
