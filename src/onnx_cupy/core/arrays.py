"""Array helpers every family uses: the `out=` check, element strides, strided views merged into
fewer axes, offsets, and inputs as the arrays a path takes."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from . import dtypes, execution


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


def zero(a: Any) -> None:
    """Set the C-contiguous device array `a` to zero bits in place: a memset of its bytes on
    the current stream (no kernel)."""
    a.data.memset_async(0, a.nbytes)


def partner(value: Any, x: Any, op: str, name: str) -> Any:
    """An input after X (`name`: GridSample's grid, MaxUnpool's I, RoiAlign's rois, ...) as an
    array of X's kind, NumPy or CuPy: NumPy subclasses as `plain` takes them, DLPack and CUDA
    array interface objects as execution.as_array does; a TypeError naming it otherwise."""
    value = execution.plain(value, op, name)
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

def check_like(op: str, name: str, a: Any, shape: tuple[int, ...], dtype: np.dtype,
               whose: str) -> None:
    """ValueError where the input `name` (a gradient's cotangent dY, a saved forward output)
    has another shape than `shape`, TypeError where another dtype than `dtype` (`whose`: what
    they are, for the message: "Y's", "X's"); byte order aside, as the inputs are read in
    either."""
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{op}: {name} has shape {tuple(a.shape)}, expected {whose} shape "
                         f"{tuple(shape)}")
    if a.dtype.newbyteorder("=") != np.dtype(dtype).newbyteorder("="):
        raise TypeError(f"{op}: {name} has dtype {a.dtype}, expected {np.dtype(dtype)}")


def check_cotangent(op: str, dtype: np.dtype, dy: Any, shape: tuple[int, ...]) -> None:
    """The checks every gradient starts with: TypeError where X's `dtype` is not a float (a
    gradient is defined for floating dtypes only), then the cotangent dY as `check_like`
    checks it (Y's `shape`, X's dtype). `op` names the gradient."""
    if dtype.name not in dtypes.FLOAT_TYPES:
        raise TypeError(f"{op}: X has dtype {dtype}; gradients are defined for floating "
                        f"dtypes only")
    check_like(op, "dY", dy, shape, dtype, "Y's")


def check_out(op: str, out: Any, shape: tuple[int, ...], dtype: np.dtype,
              inputs: list[Any] | tuple[Any, ...], names: tuple[str, ...],
              device_id: int | None) -> None:
    """The one check of a caller's `out`, before anything runs: an array of the inputs' kind
    (`device_id` None: a NumPy array, writeable; else a device array on that device, aligned to
    its elements for the kernels' loads), not masked, of `shape` and exactly `dtype` in native
    byte order, C-contiguous, sharing no memory with any input (`names`: theirs, for the
    message)."""
    x = inputs[0]
    kind = type(x)
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
    if device_id is None:
        writeable(op, out)
        for name, a in zip(names, inputs):
            if a is not None and np.may_share_memory(out, a):
                raise ValueError(f"{op}: out overlaps the input {name}")
        return
    align = min(out.dtype.itemsize, 8)   # the kernels' alignment policy (kernel_call.alignment)
    if out.data.ptr % align:
        raise ValueError(f"{op}: out must be aligned to {align} bytes for the kernel path (its "
                         f"address is {out.data.ptr})")
    if out.device.id != device_id:
        raise ValueError(f"{op}: out is on device {out.device.id}, X on device {device_id}")
    for name, a in zip(names, inputs):
        if a is not None and overlap(out, a):
            raise ValueError(f"{op}: out overlaps the input {name}")


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
