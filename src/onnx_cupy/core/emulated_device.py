"""The emulated device: a stand-in for the `cupy` module on which the CuPy path's own host code
runs without a GPU, each launch executed on the emulator (onnx_cupy.core.emulator). The emulated
backend runs every call on one executing device per process (`emulated_device`);
`onnx-cupy bench`'s host section installs a non-executing one as the library's cupy to time
the library's host work per call (onnx_cupy.tools.host).

Device memory is host memory in allocations of its own, aligned as cudaMalloc's (ALIGN bytes)
and kept in a free pool per device, stream and size as CuPy's pool keeps them, never a view of a
caller's array; device arrays (onnx_cupy.core.emulated_arrays) are NumPy views of it that say
which device they live on. A launch (onnx_cupy.core.emulated_cuda) packs its arguments as CuPy's
does and runs the instantiation on the emulator, reading each argument as the driver does at
launch time: a device array's address, a by-value struct's bytes copied then (their size from
the kernel's declared parameter type), a scalar converted; the kernel checker checks it as any
emulated launch. CuPy's own kernels (copies, casts, memsets, NumPy functions through NEP 13/18)
compute with NumPy on the device memory.

What only a GPU shows: concurrency (a launch runs to its end before the host goes on), the
order of atomics, the device's limits and speed. Host cost against CuPy: argument packing in
Python rather than Cython, no driver launch or context switch, `empty` as a NumPy allocation
and a free list per device and stream: per-call figures count the library's own host work fully
and the launch and allocation roughly.
"""
from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from . import calls, emulated_arrays, emulated_cuda, emulated_nvrtc, execution

ROUND = 512   # bytes: allocations are rounded up to this, as CuPy's memory pool does
ALIGN = 256   # bytes: every allocation starts at a multiple of this, as cudaMalloc's
POOLED, POOLED_BYTES = 16, 1 << 26   # free blocks kept per (device, stream, size), their size


class _Thread(threading.local):
    """What CuPy keeps per host thread: the current device and the streams made current
    (innermost last)."""

    device = 0
    streams: tuple[Any, ...] = ()


class EmulatedDevice:
    """The emulated device, as the `cupy` module: `executing` (False: launches and CuPy's own
    kernels compute nothing, outputs stay as `empty` made them: host timing only); its devices
    (DEVICES of them) have compute capability `compute_capability`; `installed()` makes it the
    library's cupy.

    A subclass (the test suite's stand-in cupy) adds records and stream capture through these
    hooks, which here only run the work:
    - `note(kind, nbytes, what, refused=...)`: an operation other than a launch (an allocation,
      a host-device copy, a synchronization, a wait, a compile, a memset, CuPy's own kernel),
      `refused` saying why CUDA refuses it during a stream capture;
    - `note_launch(name, grid, block, args, stream)`: a launch (of a kernel, or one of CuPy's
      own), `args` the addresses the driver reads;
    - `deferred(run, stream)`: an executing device's work on `stream` (None: the current
      one), run at once here;
    - the classes its `cuda` namespace makes (`Device`, `Stream`, `Event`, `Module`, `NVRTC`)
      and DEVICES."""

    DEVICES = 1   # device 0
    ndarray = emulated_arrays.ndarray
    Device = emulated_cuda.Device
    Stream = emulated_cuda.Stream
    Event = emulated_cuda.Event
    Module = emulated_cuda.Module
    NVRTC = emulated_nvrtc.NVRTC
    __version__ = "emulated"
    bool_, int8, uint8, int16, uint16 = np.bool_, np.int8, np.uint8, np.int16, np.uint16
    int32, uint32, int64, uint64 = np.int32, np.uint32, np.int64, np.uint64
    float16, float32, float64 = np.float16, np.float32, np.float64
    complex64, complex128 = np.complex64, np.complex128   # cupy.float32 is numpy.float32

    def __init__(self, executing: bool = True) -> None:
        self.executing = executing
        self.compute_capability = "90"
        self._local = _Thread()
        # (device, stream, bytes) -> (memory, address) of the free blocks of that size
        self._free: dict[tuple[int, int, int], list[tuple[np.ndarray, int]]] = {}
        self._null = self.Stream(self, null=True)
        self.cuda = emulated_cuda.Cuda(self)

    # ---------------------------------------------------------------- state per thread

    @property
    def device(self) -> int:
        """The current device of the calling thread (CuPy's is per thread)."""
        return self._local.device

    def current_stream(self) -> Any:
        """The calling thread's current stream (`cuda.get_current_stream`)."""
        streams = self._local.streams
        return streams[-1] if streams else self._null

    @contextlib.contextmanager
    def installed(self) -> Iterator[Any]:
        """Inside the block, this device is the library's cupy, with its own prepared calls,
        workspaces and compiled functions (none of the real module's, none kept after)."""
        with execution.cupy_substitute(self), calls.isolated():
            yield self

    # ---------------------------------------------------------------- hooks

    def note(self, kind: str, nbytes: int = 0, what: str = "", *, refused: str = "",
             operand_dtypes: tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]] | None = None
             ) -> None:
        """An operation on the current device and stream (nothing here; see the class);
        `operand_dtypes`: for one of CuPy's own kernels, its operands' and results' dtypes."""

    def note_launch(self, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                    args: tuple[Any, ...], stream: Any = None) -> None:
        """A launch on `stream` (None: the current one; nothing here; see the class)."""

    def deferred(self, run: Callable[[], None], stream: Any = None) -> None:
        """An executing device's work on `stream` (None: the current one): run at once."""
        run()

    # ---------------------------------------------------------------- memory

    def allocate(self, nbytes: int) -> _Block:
        """A device block from the current stream's free blocks of its size, or a new one
        (cudaMalloc). Its memory is host memory, kept with the block in the free list as CuPy's
        pool keeps device memory."""
        size = -(-max(nbytes, 1) // ROUND) * ROUND
        local = self._local
        at = (local.device, (local.streams[-1] if local.streams else self._null).ptr, size)
        try:
            memory, address = self._free[at].pop()   # atomic: no two threads get one block
        except (KeyError, IndexError):
            memory = None
        if memory is None:
            self.note("allocate", size, "cudaMalloc",
                      refused="cudaMalloc of a block the pool does not hold")
            raw = np.empty(size + ALIGN, np.uint8)
            skip = -raw.ctypes.data % ALIGN
            memory = raw[skip:skip + size]
            address = int(memory.ctypes.data)
        else:
            self.note("allocate", size, "from the pool")
        return _Block(self, at, memory, address)

    def release(self, block: _Block) -> None:
        """A block back to its stream's pool: kept for reuse up to POOLED of its size and
        below POOLED_BYTES (larger blocks go back to the host at once)."""
        if POOLED is None:   # at interpreter exit
            return
        free = self._free.setdefault(block.at, [])
        if len(free) < POOLED and block.at[2] <= POOLED_BYTES:
            free.append((block.memory, block.address))

    def wrap(self, host: np.ndarray, block: _Block | None = None) -> emulated_arrays.ndarray:
        """`host` as a device array of the current device (`block`: the allocation it owns and
        starts at)."""
        return self.ndarray(self, host, self._local.device, block,
                           None if block is None else block.address)

    def empty(self, shape: Any, dtype: Any = float) -> emulated_arrays.ndarray:
        dtype = np.dtype(dtype)
        block = self.allocate(math.prod((shape,) if type(shape) is int else shape)
                              * dtype.itemsize)
        return self.ndarray(self, np.ndarray(shape, dtype, block.memory), self._local.device,
                           block, block.address)

    def zeros(self, shape: Any, dtype: Any = float) -> emulated_arrays.ndarray:
        y = self.empty(shape, dtype)
        y.host[...] = 0
        return y

    def mirror(self, a: np.ndarray, copy: bool = True, native: bool = True
               ) -> emulated_arrays.ndarray:
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
        return self.ndarray(self, host, self._local.device, block)

    def asarray(self, a: Any, dtype: Any = None) -> emulated_arrays.ndarray:
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

    # ---------------------------------------------------------------- CuPy's own kernels

    def elementwise(self, name: str, fn: Callable[..., Any], *args: Any,
                    out: emulated_arrays.ndarray | None = None) -> emulated_arrays.ndarray:
        """One of CuPy's elementwise kernels, `fn` (a NumPy function) over `args` (device arrays
        or scalars) into `out` or a new device array of the broadcast shape and the dtype `fn`
        gives; noted as an operation and a launch; computed on the device memory (deferred)
        where the device executes."""
        if any(isinstance(a, np.ndarray) for a in args):
            raise TypeError(f"emulated cupy: {name} takes device arrays, not numpy.ndarray")
        arrays = [a for a in args if isinstance(a, self.ndarray)]
        devices = {a.ordinal for a in arrays}
        if devices - {self._local.device}:
            raise ValueError(f"emulated cupy: {name} on arrays of devices {sorted(devices)} "
                             f"while device {self._local.device} is current")
        with np.errstate(all="ignore"):   # the result's dtype, from empty operands
            dtype = np.asarray(fn(*[np.empty(0, a.dtype) if isinstance(a, self.ndarray) else a
                                    for a in args])).dtype
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        if out is None:
            out = self.empty(shape, dtype)
        self.note("elementwise", out.nbytes, name, operand_dtypes=(tuple(
            a.dtype if isinstance(a, self.ndarray) else np.asarray(a).dtype for a in args),
            (out.dtype,)))
        self.note_launch(f"elementwise {name}", (), (), ())
        if self.executing:
            target = out

            def run() -> None:
                with np.errstate(all="ignore"):
                    target.host[...] = fn(*[a.host if isinstance(a, self.ndarray) else a
                                            for a in args])
            self.deferred(run)
        return out

    def __getattr__(self, name: str) -> Any:
        """Any other function of CuPy's as NumPy's of that name, on the device arrays' memory:
        device arrays in, device arrays out (one of CuPy's kernels, noted as elementwise)."""
        fn = getattr(np, name, None)
        if name.startswith("_") or not callable(fn):
            raise AttributeError(f"emulated cupy has no attribute {name!r}")
        return functools.partial(self.numpy_function, name, fn)

    def numpy_function(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any
                       ) -> Any:
        """`fn` (NumPy's) on the host memory of device arrays among `args` and `kwargs` (also
        inside lists and tuples), computed at once, its array results as device arrays: views
        of an input's memory stay views of it (as CuPy's broadcast_to, reshape, ...), others
        are new (an `out=` device array is written in place)."""
        out = kwargs.get("out")
        inputs: list[emulated_arrays.ndarray] = []

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
        scalars = tuple(np.asarray(a).dtype for a in args
                        if ufunc and isinstance(a, (int, float, np.generic)))
        self.note("elementwise", 0, name, operand_dtypes=(
            (*(a.dtype for a in inputs), *scalars),
            tuple(r.dtype for r in (result if isinstance(result, (tuple, list)) else (result,))
                  if isinstance(r, (np.ndarray, np.generic)))))
        self.note_launch(f"elementwise {name}", (), (), ())   # computed at once, whatever else
        if out is not None and isinstance(out, self.ndarray):
            return out
        return self.device_result(result, inputs)

    def device_result(self, result: Any,
                      inputs: list[emulated_arrays.ndarray] | tuple[()] = ()) -> Any:
        """A NumPy function's result as CuPy gives it: an array in the memory of one of the
        device arrays `inputs` as a view of it, other arrays (and NumPy scalars: CuPy's
        reductions give 0-d arrays) as new device arrays, tuples of them as tuples."""
        if isinstance(result, (tuple, list)):
            return type(result)(self.device_result(r, inputs) for r in result)
        if isinstance(result, np.ndarray):
            for a in inputs:
                base = a.block.memory if a.block is not None else a.host
                if np.shares_memory(result, base):
                    return self.ndarray(self, result, a.ordinal, a.block)
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


class _Block:
    """A device allocation: `at` (device, stream, rounded bytes) and its `memory` (host memory
    standing for the device's); back to its pool when the last array using it goes."""

    __slots__ = ("__weakref__", "address", "at", "memory", "owner")

    def __init__(self, owner: EmulatedDevice, at: tuple[int, int, int], memory: np.ndarray,
                 address: int) -> None:
        self.owner, self.at, self.memory, self.address = owner, at, memory, address

    def __del__(self) -> None:
        self.owner.release(self)


_emulated: list[EmulatedDevice] = []
_emulated_lock = threading.Lock()


def emulated_device() -> EmulatedDevice:
    """The emulated backend's device: one executing device per process."""
    if not _emulated:
        with _emulated_lock:
            if not _emulated:
                _emulated.append(EmulatedDevice())
    return _emulated[0]
