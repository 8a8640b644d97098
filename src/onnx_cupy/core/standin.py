"""A stand-in for the `cupy` module that runs the CuPy path without a GPU: the emulated backend's
device (`emulated_device`), the `cupy` case of every test where no GPU is visible, and the host
cost per call (`onnx-cupy bench`'s host section, not `executing`).

Device memory is host memory in allocations of its own, aligned as CUDA's (ALIGN bytes), never a
view of a caller's array; device arrays are NumPy views of it that say which device they live
on. A launch packs its arguments as CuPy's does and runs the instantiation on the emulator
(onnx_cupy.core.emulator), reading each argument as the driver does at launch time: a device
array's address, a by-value struct's bytes copied then (their size from the kernel's declared
parameter type), a scalar converted; the kernel checker checks it as any emulated launch.
CuPy's own kernels (copies, casts, memsets, NumPy functions through NEP 13/18) compute with
NumPy on the device memory.

Every operation a CUDA graph capture cares about is recorded as an `Operation` (allocations,
host-device copies, synchronizations, event waits, compiles, CuPy's own kernels: those say whether
CuPy's own -ftz=true compile would flush subnormals in them, `flushing`); inside
`Stream.begin_capture() ... end_capture()` those CUDA refuses during a capture raise
`CaptureError`, and launches are kept, as the capture read them, in the `Graph` that runs them
when launched. What only a GPU shows: concurrency (a launch runs to its end before the host goes
on), the order of atomics, the device's limits and speed. Host cost against CuPy: argument
packing in Python rather than Cython, no driver launch or context switch, `empty` as a NumPy
allocation and a free list per device and stream: per-call figures count the library's own
host work fully and the launch and allocation roughly.
"""
from __future__ import annotations

import contextlib
import functools
import math
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from . import calls, dtypes, execution, standin_classes
from .standin_classes import CaptureError, LaunchRecord, ModuleRecord, Operation
from .standin_nvrtc import CompileRecord

ROUND = 512   # bytes: allocations are rounded up to this, as CuPy's memory pool does
ALIGN = 256   # bytes: every allocation starts at a multiple of this, as cudaMalloc's
POOLED, POOLED_BYTES = 16, 1 << 26   # free blocks kept per (device, stream, size), their size
# CuPy's own kernels that move elements without computing with them: within one dtype no float
# instruction runs (between dtypes they convert, which is float arithmetic where a float is in)
MOVES = frozenset({"copy", "fill", "astype", "concatenate", "stack", "ascontiguousarray",
                   "reshape", "ravel", "transpose", "broadcast_to", "squeeze", "expand_dims"})


def flushing(name: str, operands: Iterable[Any], results: Iterable[Any]) -> bool:
    """Whether one of CuPy's own kernels, `name` over operands and results of these dtypes, runs
    float instructions, which CuPy's own compile (-ftz=true, whatever options a caller gives)
    makes flush subnormal operands and results to zero on a GPU: float arithmetic or
    comparisons, and conversions to, from or between floats (a subnormal float32 widened to
    float64 is read as 0 too). True where some operand or result is a float (bfloat16 and
    complex included) and it is not a move (MOVES) within one dtype."""
    kinds = {np.dtype(d) for d in (*operands, *results)}
    if not any(d.kind in "fc" or d.name in dtypes.FLOAT_TYPES for d in kinds):
        return False
    return not (name in MOVES and len(kinds) == 1)


def _dtype_of(value: Any) -> np.dtype:
    """The dtype a kernel takes a scalar operand in (a Python float as float64, as CuPy)."""
    return np.asarray(value).dtype


class _Thread(threading.local):
    """What CuPy keeps per thread: the current device, the streams made current (innermost
    last) and the stream being captured."""

    device = 0
    streams: tuple[Any, ...] = ()
    capture: Any = None


class StandIn:
    """The stand-in `cupy` module. `compiles` (its NVRTC's programs), `modules` (images loaded
    on a device), `launches` and `operations` record the CuPy path's work (with `recording`
    False, only what a capture takes: the host-time benchmark, whose figures should not include
    the stand-in's own bookkeeping); `compile_seconds` is how long its NVRTC takes per program;
    `executing`: launches run on the emulator and CuPy's own kernels compute (False: host
    timing only, outputs stay as `empty` made them); `installed()` makes it the library's cupy.
    Its devices have compute capability `compute_capability`."""

    def __init__(self, compile_seconds: float = 0.0, recording: bool = True,
                 executing: bool = True) -> None:
        self.compiles: list[CompileRecord] = []
        self.modules: list[ModuleRecord] = []
        self.captures: set[Any] = set()   # the streams being captured, by any thread
        self.compute_capability = "90"
        self.launches: list[LaunchRecord] = []
        self.operations: list[Operation] = []
        self.compile_seconds = compile_seconds
        self.recording = recording   # False: keep no records outside a capture (host timing)
        self.executing = executing   # False: launches and CuPy's kernels compute nothing
        self._local = _Thread()
        self._record = threading.Lock()
        # (device, stream, bytes) -> (memory, address) of the free blocks of that size
        self._free: dict[tuple[int, int, int], list[tuple[np.ndarray, int]]] = {}
        # the module's classes and namespaces, made by _build for this stand-in
        self.ndarray: Any = None
        self.cuda: Any = None
        self._null: Any = None
        self.__version__ = "stand-in"
        for name in ("bool_", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                     "uint64", "float16", "float32", "float64", "complex64", "complex128"):
            setattr(self, name, getattr(np, name))   # cupy.float32 is numpy.float32
        self.random = types.SimpleNamespace(standard_normal=self._standard_normal)
        standin_classes.build(self)

    # ---------------------------------------------------------------- state per thread

    @property
    def device(self) -> int:
        """The current device of the calling thread (CuPy's is per thread)."""
        return self._local.device

    @device.setter
    def device(self, value: int) -> None:
        self._local.device = value

    def current_stream(self) -> Any:
        streams = self._local.streams
        return streams[-1] if streams else self._null

    def capturing(self) -> Any:
        """The stream being captured by the calling thread, or None."""
        return self._local.capture

    @contextlib.contextmanager
    def installed(self) -> Iterator[StandIn]:
        """Inside the block, this stand-in is the library's cupy, with its own prepared calls
        and compiled functions (none of the real module's, none kept after)."""
        with execution.cupy_substitute(self), calls.isolated():
            yield self

    # ---------------------------------------------------------------- records

    def note(self, kind: str, nbytes: int = 0, what: str = "", *, refused: str = "",
             flushes: bool = False) -> None:
        """Record an operation on the current device and stream; `refused`: why a capture
        refuses it (CaptureError while one runs); `flushes`: one of CuPy's own kernels that
        -ftz=true flushes (`flushing`)."""
        local = self._local
        capture = local.capture
        if capture is not None and refused:
            raise CaptureError(f"stand-in cupy: {kind} {what} during stream capture: {refused}")
        if not self.recording:
            return
        stream = local.streams[-1] if local.streams else self._null
        self.operations.append(Operation(kind, local.device, stream.ptr, nbytes,
                                         capture is not None, what, flushes))   # atomic

    def compiled(self) -> list[str]:
        """The name expressions its NVRTC compiled, in order."""
        return [e for c in self.compiles for e in c.name_expressions]

    def loaded(self, device: int | None = None) -> list[str]:
        """The name expressions of the images loaded (on `device`), in load order."""
        return [e for m in self.modules if device in (None, m.device) for e in m.name_expressions]

    # ---------------------------------------------------------------- memory

    def allocate(self, nbytes: int) -> _Block:
        """A device block from the current stream's free blocks of its size, or a new one
        (which a capture refuses: cudaMalloc). Its memory is host memory, kept with the block
        in the free list as CuPy's pool keeps device memory."""
        size = -(-max(nbytes, 1) // ROUND) * ROUND
        local = self._local
        at = (local.device, (local.streams[-1] if local.streams else self._null).ptr, size)
        try:
            memory, address = self._free[at].pop()   # atomic: no two threads get one block
        except (KeyError, IndexError):
            memory = None
        self.note("allocate", size, "cudaMalloc" if memory is None else "from the pool",
                  refused="" if memory is not None else
                  "cudaMalloc of a block the pool does not hold")
        if memory is None:
            raw = np.empty(size + ALIGN, np.uint8)
            skip = -raw.ctypes.data % ALIGN
            memory = raw[skip:skip + size]
            address = int(memory.ctypes.data)
        return _Block(self, at, memory, address)

    def release(self, block: _Block) -> None:
        """A block back to its stream's pool: kept for reuse up to POOLED of its size and
        below POOLED_BYTES (larger blocks go back to the host at once)."""
        if POOLED is None:   # at interpreter exit
            return
        free = self._free.setdefault(block.at, [])
        if len(free) < POOLED and block.at[2] <= POOLED_BYTES:
            free.append((block.memory, block.address))

    def wrap(self, host: np.ndarray, block: _Block | None = None) -> Any:
        """`host` as a device array of the current device (`block`: the allocation it owns and
        starts at)."""
        return self.ndarray(host, self._local.device, block,
                            None if block is None else block.address)

    def empty(self, shape: Any, dtype: Any = float) -> Any:
        dtype = np.dtype(dtype)
        block = self.allocate(math.prod((shape,) if type(shape) is int else shape)
                              * dtype.itemsize)
        return self.ndarray(np.ndarray(shape, dtype, block.memory), self._local.device, block,
                            block.address)

    def zeros(self, shape: Any, dtype: Any = float) -> Any:
        y = self.empty(shape, dtype)
        y.host[...] = 0
        return y

    def mirror(self, a: np.ndarray, copy: bool = True, native: bool = True) -> Any:
        """A device copy of the host array `a` with its layout: the same shape and strides, its
        first element at the same address modulo ALIGN (a view at a byte offset stays one), the
        bytes it spans copied (`copy`; a broadcast axis stays one element); in native byte
        order, as CuPy's arrays are (unless not `native`: an `out` the call checks)."""
        if native and not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        start = a.ctypes.data
        low = sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st < 0 and n)
        high = sum((n - 1) * st for n, st in zip(a.shape, a.strides) if st > 0 and n)
        span = (high - low + a.itemsize) if a.size else 0
        skew = (start + low) % ALIGN
        block = self.allocate(skew + span)
        host = np.ndarray(a.shape, a.dtype, block.memory, skew - low if a.size else 0, a.strides)
        if span and copy:   # by elements: of a sparse view only the pages it uses, of a
            once = tuple(slice(0, 1) if st == 0 else slice(None) for st in a.strides)
            host[once] = a[once]   # broadcast axis only its one element
        if copy:
            self.note("to device", span, "mirror", refused="a copy from host memory (it is "
                      "not in the graph)")
        return self.ndarray(host, self._local.device, block, None)

    def asarray(self, a: Any, dtype: Any = None) -> Any:
        """A device array: `a` itself if it is one (of `dtype`), else a copy to the device."""
        if isinstance(a, self.ndarray):
            return a if dtype is None or a.dtype == dtype else a.astype(dtype)
        host = np.asarray(a, dtype=dtype)
        if not host.dtype.isnative:   # CuPy's arrays are native
            host = host.astype(host.dtype.newbyteorder("="))
        self.note("to device", host.nbytes, "cupy.asarray",
                  refused="a copy from host memory (it is not in the graph)")
        y = self.empty(host.shape, host.dtype)
        y.host[...] = host
        return y

    array = asarray

    def ascontiguousarray(self, a: Any) -> Any:
        if a.flags.c_contiguous:
            return a
        return self.elementwise("copy", np.ascontiguousarray, a)

    def asnumpy(self, a: Any) -> Any:
        return a.get() if isinstance(a, self.ndarray) else np.asarray(a)

    # ---------------------------------------------------------------- CuPy's elementwise kernels

    def elementwise(self, name: str, fn: Callable[..., Any], *args: Any, out: Any = None) -> Any:
        """One of CuPy's elementwise kernels, `fn` (a NumPy function) over `args` (device arrays
        or scalars) into `out` or a new device array of the broadcast shape and the dtype `fn`
        gives; recorded as a launch and an operation; computed on the device memory where the
        stand-in is `executing`."""
        if any(isinstance(a, np.ndarray) for a in args):
            raise TypeError(f"stand-in cupy: {name} takes device arrays, not numpy.ndarray")
        arrays = [a for a in args if isinstance(a, self.ndarray)]
        devices = {a._device for a in arrays}
        if devices - {self._local.device}:
            raise ValueError(f"stand-in cupy: {name} on arrays of devices {sorted(devices)} "
                             f"while device {self._local.device} is current")
        with np.errstate(all="ignore"):   # the result's dtype, from empty operands
            dtype = np.asarray(fn(*[np.empty(0, a.dtype) if isinstance(a, self.ndarray) else a
                                    for a in args])).dtype
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        if out is None:
            out = self.empty(shape, dtype)
        self.note("elementwise", out.nbytes, name, flushes=flushing(
            name, [a.dtype if isinstance(a, self.ndarray) else _dtype_of(a) for a in args],
            [out.dtype]))
        target = out

        def run() -> None:
            with np.errstate(all="ignore"):
                target.host[...] = fn(*[a.host if isinstance(a, self.ndarray) else a
                                        for a in args])
        self.deferred(f"elementwise {name}", run)
        return out

    def deferred(self, name: str, run: Callable[[], None], launch: bool = True,
                 stream: Any = None) -> None:
        """Record work on `stream` (None: the current one): one of CuPy's own kernels
        (`launch`: recorded as a launch too, not only as an operation) or a kernel's launch;
        run it where the stand-in executes: at once, or when the graph that `stream` is being
        captured into is launched."""
        if launch:
            self._launched(name, (), (), (), stream)
        if not self.executing:
            return
        if stream is None:
            local = self._local
            stream = local.streams[-1] if local.streams else self._null
        if stream in self.captures:
            stream.graph_steps.append(run)
        else:
            run()

    def _standard_normal(self, size: Any = None, dtype: Any = float) -> Any:
        """cupy.random.standard_normal: a new array from a generator kernel."""
        y = self.empty(() if size is None else size, dtype)
        self.note("elementwise", y.nbytes, "random", flushes=flushing("random", [], [y.dtype]))

        def run() -> None:
            y.host[...] = np.random.default_rng().standard_normal(y.shape)
        self.deferred("random standard_normal", run)
        return y

    def __getattr__(self, name: str) -> Any:
        """Any other function of CuPy's as NumPy's of that name, on the device arrays' memory:
        device arrays in, device arrays out (one of CuPy's kernels, recorded as elementwise)."""
        fn = getattr(np, name, None)
        if name.startswith("_") or not callable(fn):
            raise AttributeError(f"stand-in cupy has no attribute {name!r}")
        return functools.partial(self.numpy_function, name, fn)

    def numpy_function(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
                       ) -> Any:
        """`fn` (NumPy's) on the host memory of device arrays among `args` and `kwargs` (also
        inside lists and tuples), its array results as device arrays: views of an input's
        memory stay views of it (as CuPy's broadcast_to, reshape, ...), others are new (an
        `out=` device array is written in place). Its record says whether it flushes
        (`flushing`: the device arrays' dtypes, a ufunc's scalar operands and the results')."""
        out = kwargs.get("out")
        inputs: list[Any] = []

        def unwrap(a: Any) -> Any:
            if isinstance(a, self.ndarray):
                inputs.append(a)
                return a.host
            if type(a) in (list, tuple):
                return type(a)(unwrap(v) for v in a)
            return a
        hosts = [unwrap(a) for a in args]
        named = {k: unwrap(v) for k, v in kwargs.items()}
        with np.errstate(all="ignore"):
            result = fn(*hosts, **named)
        ufunc = isinstance(fn, np.ufunc) or isinstance(getattr(fn, "__self__", None), np.ufunc)
        scalars = [_dtype_of(a) for a in args if ufunc and isinstance(a, (int, float, np.generic))]
        results = [r.dtype for r in (result if isinstance(result, (tuple, list)) else (result,))
                   if isinstance(r, (np.ndarray, np.generic))]
        self.note("elementwise", 0, name, flushes=flushing(
            name, [*(a.dtype for a in inputs), *scalars], results))
        self._launched(f"elementwise {name}", (), (), ())   # computed at once, even in a capture
        if out is not None and isinstance(out, self.ndarray):
            return out
        return self.device_result(result, inputs)

    def device_result(self, result: Any, inputs: list[Any] = ()) -> Any:  # type: ignore[assignment]
        """A NumPy function's result as CuPy gives it: an array in the memory of one of the
        device arrays `inputs` as a view of it, other arrays (and NumPy scalars: CuPy's
        reductions give 0-d arrays) as new device arrays, tuples of them as tuples."""
        if isinstance(result, (tuple, list)):
            return type(result)(self.device_result(r, inputs) for r in result)
        if isinstance(result, np.ndarray):
            for a in inputs:
                base = a._block.memory if a._block is not None else a.host
                if np.shares_memory(result, base):
                    return self.ndarray(result, a._device, a._block)
        if isinstance(result, (np.ndarray, np.generic)):
            host = np.asarray(result)
            y = self.empty(host.shape, host.dtype)
            y.host[...] = host
            return y
        return result

    def power(self, a: Any, b: Any, out: Any = None) -> Any:
        return self.elementwise("power", np.power, a, b, out=out)

    def fmod(self, a: Any, b: Any, out: Any = None) -> Any:
        return self.elementwise("fmod", np.fmod, a, b, out=out)

    def minimum(self, a: Any, b: Any, out: Any = None) -> Any:
        return self.elementwise("minimum", np.minimum, a, b, out=out)

    def where(self, c: Any, a: Any, b: Any) -> Any:
        return self.elementwise("where", np.where, c, a, b)

    def _launched(self, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                  args: tuple[Any, ...], stream: Any = None) -> None:
        """Record a launch on `stream` (None: the current one), into its graph where it is
        being captured."""
        local = self._local
        if stream is None:
            stream = local.streams[-1] if local.streams else self._null
        captured = stream in self.captures
        if not self.recording and not captured:
            return
        record = LaunchRecord(name, local.device, grid, block, args, stream.ptr, captured)
        self.launches.append(record)   # append: atomic
        if captured:
            stream.graph_launches.append(record)


class _Block:
    """A device allocation: `at` (device, stream, rounded bytes) and its `memory` (host memory
    standing for the device's); back to its pool when the last array using it goes."""

    __slots__ = ("address", "at", "memory", "owner")

    def __init__(self, owner: StandIn, at: tuple[int, int, int], memory: np.ndarray,
                 address: int) -> None:
        self.owner, self.at, self.memory, self.address = owner, at, memory, address

    def __del__(self) -> None:
        self.owner.release(self)


_emulated: list[StandIn] = []
_emulated_lock = threading.Lock()


def emulated_device() -> StandIn:
    """The emulated backend's device: one executing stand-in per process, keeping no records."""
    if not _emulated:
        with _emulated_lock:
            if not _emulated:
                _emulated.append(StandIn(recording=False))
    return _emulated[0]
