"""Array helpers every family uses: the output array (`out=` checked or a new one), element
strides, strided views merged into fewer axes, addresses and offsets."""
from __future__ import annotations

import contextlib
import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from . import execution


def module_of(backend: str) -> Any:
    """The array module of an execution path: cupy for 'cupy', numpy otherwise."""
    return execution.cupy_module() if backend == "cupy" else np


def on_device(x: Any, backend: str) -> contextlib.AbstractContextManager[Any]:
    """Context that makes `x`'s GPU current (allocation and launch follow the input's device)."""
    return x.device if backend == "cupy" else contextlib.nullcontext()


_ADDRESSES = {"cupy": operator.attrgetter("data.ptr")}


def address_of(backend: str) -> Callable[[Any], int]:
    """`address` for the arrays of one path (a device array's on 'cupy', a NumPy array's
    otherwise), without a call of Python code."""
    return _ADDRESSES.get(backend) or operator.attrgetter("ctypes.data")


@functools.lru_cache(maxsize=1024)
def _in_elements(strides: tuple[int, ...], item: int) -> tuple[int, ...] | None:
    """Byte strides as element strides, or None if one is not a whole number of elements."""
    if any(s % item for s in strides):
        return None
    return tuple(s // item for s in strides)


def whole_element_strides(x: Any) -> tuple[int, ...] | None:
    """`x`'s strides in elements, or None if one is not a whole number of elements."""
    return _in_elements(x.strides, x.dtype.itemsize)


def c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a C-contiguous array of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def readonly(a: np.ndarray) -> np.ndarray:
    """`a` as a C-contiguous array that cannot be written (cached host tables)."""
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def max_offset(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Largest |element offset| reachable from the first element of a strided view."""
    return sum(abs(s) * (n - 1) for n, s in zip(shape, strides) if n > 0)


def index_reach(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Largest index a kernel forms over a strided view: its largest |element offset| or its
    element count, whichever is larger (a view with stride-0 axes addresses more elements than
    its offsets reach: a loop over them counts past both)."""
    return max(max_offset(shape, strides), math.prod(shape))


def merge_axes(shape: tuple[int, ...], strides: tuple[int, ...], keep: frozenset[int] = frozenset()
               ) -> list[tuple[int, int, int | None]]:
    """The view as fewer axes: (length, element stride, axis) per axis left, where each run of
    axes not in `keep` that one stride walks (row-major) becomes one axis (axis None), axes of
    length 1 outside `keep` are dropped, and each axis in `keep` stays as it is."""
    merged: list[tuple[int, int, int | None]] = []
    for d, (n, s) in enumerate(zip(shape, strides)):
        if d in keep:
            merged.append((n, s, d))
        elif n == 1:
            continue
        elif merged and merged[-1][2] is None and merged[-1][1] == s * n:
            merged[-1] = (merged[-1][0] * n, s, None)
        else:
            merged.append((n, s, None))
    return merged


def merged_stride(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, int] | None:
    """(length, element stride) of these axes walked as one, or None where no single stride
    walks them (length-1 axes aside; (1, 0) for none)."""
    merged = merge_axes(shape, strides)
    if len(merged) > 1:
        return None
    return merged[0][:2] if merged else (1, 0)


def host_vector(op: str, name: str, value: Any, integers: bool = False) -> np.ndarray | None:
    """A 1-D input that the host reads (such as Resize's scales or MaxUnpool's output_shape) as
    a NumPy array: a CuPy array copied to the host, a sequence made an array, None left None.
    TypeError unless it holds integers (`integers`) or real numbers, ValueError unless it is
    1-D; each names the operator `op` and the input."""
    if value is None:
        return None
    if execution.is_cupy_array(value):
        value = value.get()
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: input '{name}' must be a 1-D array or sequence of numbers, "
                        f"got {value!r}") from exc
    if a.ndim != 1:
        raise ValueError(f"{op}: input '{name}' must be 1-D, got shape {a.shape}")
    if a.size and a.dtype.kind not in ("iu" if integers else "iuf"):
        expected = "integers (int64)" if integers else "real numbers"
        raise TypeError(f"{op}: input '{name}' must hold {expected}, got dtype {a.dtype}")
    return a


def zero(a: Any, backend: str) -> None:
    """Set the C-contiguous array `a` to zero bits in place: on the GPU a memset of its bytes
    on the current stream (no kernel), else `fill`."""
    if backend == "cupy":
        a.data.memset_async(0, a.nbytes)
    else:
        a.fill(0)


def plain(a: Any, op: str, name: str = "X") -> Any:
    """`a` with NumPy subclasses taken as the arrays they are: a memmap, a matrix or a user's
    subclass as a numpy.ndarray view of the same memory (its methods and ufunc overrides play
    no part, on every path alike); a masked array refused with a TypeError naming `name`,
    since no operator here has a meaning for a mask. Anything else unchanged."""
    if type(a) is np.ndarray or not isinstance(a, np.ndarray):
        return a
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{op}: {name} is a numpy.ma.MaskedArray; masked arrays are not taken "
                        f"(no operator here has a meaning for a mask): pass {name}.filled(value) "
                        f"or {name}.data")
    return a.view(np.ndarray)



def partner(value: Any, x: Any, op: str, name: str) -> Any:
    """An input after X (`name`: GridSample's grid, MaxUnpool's I, RoiAlign's rois, ...) as an
    array of X's kind, NumPy or CuPy: NumPy subclasses as `plain` takes them, DLPack and CUDA
    array interface objects as execution.as_array does; a TypeError naming it otherwise."""
    value = plain(value, op, name)
    if type(value) is type(x):
        return value
    try:
        a = execution.as_array(value, op)
    except TypeError:
        a = None
    on_gpu = execution.is_cupy_array(x)
    if a is None or execution.is_cupy_array(a) != on_gpu:
        want = "cupy.ndarray" if on_gpu else "numpy.ndarray"
        raise TypeError(f"{op}: input '{name}' must be a {want} like X, got "
                        f"{type(value).__module__}.{type(value).__name__}")
    return a

def output(out: Any, x: Any, shape: tuple[int, ...], dtype: np.dtype, backend: str, op: str) -> Any:
    """The output array on `x`'s device: a caller-supplied `out` checked (an array of the
    path's kind, not masked; shape, exact dtype in native byte order, C-contiguous, writeable,
    device, no overlap with `x`) or a new C-contiguous array. Called after all validation,
    before any launch, with `x`'s device current (inside `on_device`)."""
    if out is None:
        return module_of(backend).empty(shape, dtype=dtype)
    kind = module_of(backend).ndarray
    if not isinstance(out, kind):
        raise TypeError(f"{op}: out must be a {kind.__name__} like X, got {type(out).__name__}")
    if isinstance(out, np.ma.MaskedArray):
        raise TypeError(f"{op}: out is a numpy.ma.MaskedArray; masked arrays are not taken")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if out.dtype != dtype:
        if not out.dtype.isnative and out.dtype.newbyteorder() == np.dtype(dtype):
            raise ValueError(f"{op}: out has dtype {out.dtype.str} (non-native byte order), "
                             f"expected {np.dtype(dtype)} in native byte order")
        raise TypeError(f"{op}: out has dtype {out.dtype}, expected {np.dtype(dtype)}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{op}: out must be C-contiguous")
    if backend == "cupy" and out.data.ptr % min(out.dtype.itemsize, 8):   # kernel_call's policy
        raise ValueError(f"{op}: out must be aligned to {min(out.dtype.itemsize, 8)} bytes for "
                         f"the kernel path (its address is {out.data.ptr})")
    if backend != "cupy":
        writeable(op, out)
    if backend == "cupy" and out.device.id != x.device.id:
        raise ValueError(f"{op}: out is on device {out.device.id}, X on device {x.device.id}")
    if (overlap(out, x) if backend == "cupy" else np.may_share_memory(out, x)):
        raise ValueError(f"{op}: out overlaps the input X")
    return out


def writeable(op: str, out: np.ndarray) -> None:
    """ValueError for a NumPy `out` that cannot be written."""
    if not out.flags.writeable:
        raise ValueError(f"{op}: out is read-only (its writeable flag is off: a read-only "
                         f"memory map or a view that cannot be written)")


def overlap(a: Any, b: Any) -> bool:
    """Byte-range overlap test for device arrays (conservative)."""
    if a.size == 0 or b.size == 0:
        return False

    def span(v: Any) -> tuple[int, int]:
        lo = hi = v.data.ptr
        for n, s in zip(v.shape, v.strides):
            if s < 0:
                lo += s * (n - 1)
            else:
                hi += s * (n - 1)
        return lo, hi + v.dtype.itemsize

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1
