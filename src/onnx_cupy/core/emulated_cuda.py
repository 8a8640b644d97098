"""The emulated device's `cuda` namespace (`Cuda`, as `cupy.cuda`): `Device` (the current device,
per host thread), `Stream` (the null stream and streams made current), `Event`, `runtime`,
`function.CPointer` and `function.Module`, `nvrtc` (onnx_cupy.core.emulated_nvrtc); and a loaded
kernel, `Function`, whose call is a launch with CuPy's and the driver's rules, its arguments
read as the driver reads them at launch time and run on the emulator.

Every object here belongs to one device object, its `owner` (onnx_cupy.core.emulated_device),
whose per-thread state (current device, streams made current) it reads and whose hooks (`note`,
`note_launch`, `deferred`) it calls."""
from __future__ import annotations

import ctypes
import functools
import itertools
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from . import emulated_nvrtc, loader
from .emulated_arrays import ndarray

if TYPE_CHECKING:
    from .emulated_device import EmulatedDevice


CHECKED = 4   # launch shapes a kernel function remembers as checked

class Cuda:
    """`cupy.cuda` of one device object: its classes made for it (`Device`, `Stream`, `Event`,
    `function.Module`: the owner's class attributes of those names), `runtime`, `nvrtc` and
    `get_current_stream`."""

    def __init__(self, owner: EmulatedDevice) -> None:
        self.owner = owner
        self.runtime = Runtime(owner)
        self.nvrtc = owner.NVRTC(owner)
        self.function = types.SimpleNamespace(CPointer=CPointer,
                                              Module=functools.partial(owner.Module, owner))
        self.get_current_stream = owner.current_stream

    def Device(self, id: int | None = None) -> Device:
        return self.owner.Device(self.owner, id)

    def Stream(self, null: bool = False, non_blocking: bool = False, ptr: int | None = None
               ) -> Stream:
        return self.owner.Stream(self.owner, null, non_blocking)

    def Event(self, block: bool = False, disable_timing: bool = False,
              interprocess: bool = False) -> Event:
        return self.owner.Event(self.owner)


class Device:
    """cupy.cuda.Device: device `id` (default: the current one) of `owner`; as a context, the
    current device of the calling thread inside the block."""

    __slots__ = ("_previous", "id", "owner")

    def __init__(self, owner: EmulatedDevice, id: int | None = None) -> None:
        self.owner = owner
        self.id = owner._local.device if id is None else id
        if not 0 <= self.id < owner.DEVICES:
            raise RuntimeError(f"cudaErrorInvalidDevice: invalid device ordinal {self.id}")

    @property
    def compute_capability(self) -> str:
        return self.owner.compute_capability

    def __enter__(self) -> Device:
        local = self.owner._local
        self._previous, local.device = local.device, self.id
        return self

    def __exit__(self, *exc: object) -> None:
        self.owner._local.device = self._previous

    def use(self) -> None:
        self.owner._local.device = self.id

    def synchronize(self) -> None:
        self.owner.note("synchronize", what="Device.synchronize", refused="a synchronization")


class Stream:
    """cupy.cuda.Stream of `owner`: handle `ptr` (0: the null stream; others as a driver's,
    never 0-2); as a context, the current stream of the calling thread inside the block. Work
    runs on it at once, in order: no capture here (`is_capturing` is False)."""

    _handles = itertools.count(0x7F0000001000, 0x100)

    def __init__(self, owner: EmulatedDevice, null: bool = False,
                 non_blocking: bool = False) -> None:
        self.owner = owner
        self.ptr = 0 if null else next(self._handles)
        self.non_blocking = non_blocking

    def __enter__(self) -> Stream:
        local = self.owner._local
        local.streams = (*local.streams, self)
        return self

    def __exit__(self, *exc: object) -> None:
        local = self.owner._local
        local.streams = local.streams[:-1]

    def use(self) -> Stream:
        self.owner._local.streams = (self,)
        return self

    def synchronize(self) -> None:
        self.owner.note("synchronize", what="Stream.synchronize", refused="a synchronization")

    def wait_event(self, event: Event) -> None:
        self.owner.note("wait", what="Stream.wait_event")

    def record(self, event: Event | None = None) -> Event:
        event = event or self.owner.Event(self.owner)
        event.record(self)
        return event

    def is_capturing(self) -> bool:
        return False


class Event:
    """cupy.cuda.Event of `owner`: work is done when it is recorded (`done`)."""

    def __init__(self, owner: EmulatedDevice) -> None:
        self.owner = owner

    def record(self, stream: Stream | None = None) -> None:
        pass

    def synchronize(self) -> None:
        self.owner.note("synchronize", what="Event.synchronize", refused="a synchronization")

    @property
    def done(self) -> bool:
        return True


class Runtime:
    """cupy.cuda.runtime of `owner`: its current device and device count."""

    def __init__(self, owner: EmulatedDevice) -> None:
        self.owner = owner

    def getDevice(self) -> int:
        return self.owner._local.device

    def getDeviceCount(self) -> int:
        return self.owner.DEVICES

    def setDevice(self, device: int) -> None:
        self.owner.Device(self.owner, device).use()

    def deviceSynchronize(self) -> None:
        self.owner.note("synchronize", what="deviceSynchronize", refused="a synchronization")


class CPointer:
    """A pointer to an argument's bytes, passed as it is (cupy.cuda.function.CPointer)."""

    __slots__ = ("ptr",)

    def __init__(self, p: int = 0) -> None:
        self.ptr = p


class Module:
    """cupy.cuda.function.Module of `owner`: `load` takes the bytes of an image its NVRTC made
    (onnx_cupy.core.emulated_nvrtc), on the current device (`ordinal`); `get_function` a lowered
    name of it."""

    def __init__(self, owner: EmulatedDevice) -> None:
        self.owner = owner
        self.ordinal: int | None = None   # the device it was loaded on
        self.names: dict[str, str] = {}   # lowered name -> name expression

    def load(self, cubin: bytes) -> None:
        if type(cubin) is not bytes:
            raise TypeError(f"Argument 'cubin' has incorrect type (expected bytes, got "
                            f"{type(cubin).__name__})")
        self.names = emulated_nvrtc.image_names(cubin)
        self.ordinal = self.owner._local.device

    def get_function(self, name: str) -> Function:
        expression = self.names.get(name)
        if self.ordinal is None or expression is None:
            raise RuntimeError(f"CUDA_ERROR_NOT_FOUND: named symbol not found ({name})")
        return Function(self.owner, expression, self.ordinal)


class Function:
    """A kernel loaded on device `ordinal` of `owner`; calling it launches: CuPy's and the
    driver's rules checked, the arguments packed as CuPy's `_launch` does (noted with
    `note_launch`) and, where the owner executes, the instantiation run on the emulator
    (`deferred`), each argument read as the driver reads it then."""

    def __init__(self, owner: EmulatedDevice, name: str, ordinal: int) -> None:
        self.owner, self.name, self.ordinal = owner, name, ordinal
        self._kernel = loader.instantiation(name)   # its registered instantiation
        self._structs = loader.struct_parameters(self._kernel)
        self._threads = loader.max_threads(self._kernel)   # its __launch_bounds__
        # the (grid, block) tuples checked last, most recent first: a function that prepared
        # calls launch with a few shapes (one instantiation, two steps) checks each once, as
        # CuPy's compiled launch costs the same whatever shape came before
        self._checked: tuple[tuple[Any, Any], ...] = ()

    def _read(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple[Any, ...]
              ) -> Callable[[], None]:
        """The launch with its arguments read now: a device array as its memory (the view at
        its address), a CPointer as a copy of the bytes of the struct the kernel declares at
        its place, a size-one NumPy array as a copy, a Python scalar as CuPy converts it
        (int64, float64, bool)."""
        from . import emulator  # only an executing device needs the host compiler

        read: list[Any] = []
        for at, a in enumerate(args):
            kind = type(a)
            if kind is ndarray:
                read.append(a.host)
            elif kind is CPointer:
                struct = self._structs[at] if at < len(self._structs) else None
                if struct is None:
                    raise TypeError(f"emulated cupy: {self.name}: a CPointer at argument {at}, "
                                    f"where the kernel declares no parameter struct")
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
        g, b = cast(tuple[int, int, int], grid), cast(tuple[int, int, int], block)
        return lambda: emulator.launch(kernel, g, b, taken)   # 3-tuples: __call__ padded

    def _check(self, grid: Any, block: Any) -> None:
        """CuPy's and the driver's rules on a launch's shape: tuples, at most three positive
        extents each, grid x below 2**31 and y, z below 2**16, a block of at most 1024 threads
        (z at most 64) and at most the kernel's __launch_bounds__."""
        for name, value in (("grid", grid), ("block", block)):
            if type(value) is not tuple:
                raise TypeError(f"Argument '{name}' has incorrect type (expected tuple, got "
                                f"{type(value).__name__})")
            if not 1 <= len(value) <= 3 or any(type(v) is not int for v in value):
                raise TypeError(f"emulated cupy: {name} must be 1 to 3 ints, got {value!r}")
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
            raise RuntimeError(f"CUDA_ERROR_INVALID_VALUE: shared_mem {shared_mem!r} (at most "
                               f"48 KiB of dynamic shared memory without opting in)")
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"emulated cupy: stream must be a Stream, got {stream!r}")
        grid = (grid + (1, 1))[:3]
        block = (block + (1, 1))[:3]
        owner = self.owner
        current = owner._local.device
        if current != self.ordinal:
            raise RuntimeError(f"emulated cupy: {self.name} was loaded on device "
                               f"{self.ordinal}, launched with device {current} current")
        packed = []   # what the driver reads: the address of each argument's value
        for a in args:
            kind = type(a)
            if kind is ndarray:
                if a.ordinal != current:
                    raise ValueError(f"emulated cupy: an array of device {a.ordinal} passed "
                                     f"to a launch on device {current}")
                packed.append(a.address())
            elif kind is CPointer:
                packed.append(a.ptr)
            else:
                packed.append(_pointer(a, current))
        owner.note_launch(self.name, grid, block, tuple(packed), stream)
        if owner.executing:
            owner.deferred(self._read(grid, block, args), stream)


def _pointer(arg: Any, current: int) -> int:
    """A kernel argument as CuPy's launch reads it (on device `current`): a device array's
    address, a CPointer's address as it is, a size-one NumPy array's data (a struct by value,
    through its __array_interface__ as CuPy reads it), a scalar's value."""
    if arg is None:
        return 0
    if isinstance(arg, ndarray):
        if arg.ordinal != current:
            raise ValueError(f"emulated cupy: an array of device {arg.ordinal} passed to a "
                             f"launch on device {current}")
        return int(arg.address())
    if isinstance(arg, CPointer):
        return int(arg.ptr)
    if isinstance(arg, np.ndarray):
        if arg.size != 1:
            raise TypeError(f"emulated cupy: a numpy.ndarray of shape {arg.shape} as a kernel "
                            f"argument (only size one passes by value)")
        return int(arg.__array_interface__["data"][0])
    if isinstance(arg, np.void):   # CuPy's scalars are of its kernels' types, no structs
        raise TypeError(f"Unsupported type {type(arg)}")
    if isinstance(arg, (np.generic, int, float, bool, complex)):
        return int(np.asarray(arg).ctypes.data)
    raise TypeError(f"emulated cupy: unsupported kernel argument {type(arg).__name__}")


def _snapshot(a: np.ndarray) -> np.ndarray:
    """A by-value argument's bytes as the launch read them: a read-only copy."""
    copy: np.ndarray = np.array(a, copy=True)
    copy.flags.writeable = False
    return copy
