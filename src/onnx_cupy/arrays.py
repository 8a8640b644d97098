"""Array helpers shared by every operator: array module, element strides, `out=` checks."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .backends import cupy_module


def module_of(backend: str) -> Any:
    return cupy_module() if backend == "cupy" else np


def device_of(x: Any, backend: str) -> contextlib.AbstractContextManager:
    """Context that makes `x`'s GPU current (allocation and launch follow the input's device)."""
    return x.device if backend == "cupy" else contextlib.nullcontext()


def execute(op: str, x: Any, backend: str, out: Any, shape: tuple[int, ...],
            compute: Callable[[Any, Any, str], None]) -> Any:
    """On `x`'s device: validate `out` or allocate the output, then `compute(x, y, backend)`
    unless the output is empty. Returns the output."""
    with device_of(x, backend):
        y = output(out, x, shape, x.dtype, backend, op)
        if y.size:
            compute(x, y, backend)
        return y


@functools.lru_cache(maxsize=1024)
def _in_elements(strides: tuple[int, ...], item: int) -> tuple[int, ...] | None:
    """Byte strides as element strides, or None if one is not a whole number of elements."""
    if any(s % item for s in strides):
        return None
    return tuple(s // item for s in strides)


def element_strides(x: Any) -> tuple[Any, tuple[int, ...]]:
    """(array, strides in elements); copies only arrays whose byte strides are not whole elements."""
    strides = _in_elements(x.strides, x.dtype.itemsize)
    if strides is None:
        x = x.copy()
        strides = _in_elements(x.strides, x.dtype.itemsize)
    return x, strides


def max_offset(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Largest |element offset| reachable from the first element of a strided view."""
    return sum(abs(s) * (n - 1) for n, s in zip(shape, strides) if n > 0)


def output(out: Any, x: Any, shape: tuple[int, ...], dtype: np.dtype, backend: str, op: str) -> Any:
    """Validate a caller-supplied `out` (type, shape, dtype, C-contiguous, device, no overlap with
    `x`) or allocate a new C-contiguous output. Called after all validation, before any launch."""
    xp = module_of(backend)
    if out is None:
        return xp.empty(shape, dtype=dtype)
    if type(out) is not type(x):
        raise TypeError(f"{op}: out must be a {type(x).__name__} like X, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{op}: out has shape {tuple(out.shape)}, expected {tuple(shape)}")
    if out.dtype != dtype:
        raise TypeError(f"{op}: out has dtype {out.dtype}, expected {np.dtype(dtype)}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{op}: out must be C-contiguous")
    if backend == "cupy" and out.device.id != x.device.id:
        raise ValueError(f"{op}: out is on device {out.device.id}, X on device {x.device.id}")
    if (_overlap(out, x) if backend == "cupy" else np.may_share_memory(out, x)):
        raise ValueError(f"{op}: out overlaps the input X")
    return out


def _overlap(a: Any, b: Any) -> bool:
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
