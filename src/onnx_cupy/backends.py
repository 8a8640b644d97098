"""Execution paths: 'numpy' (vectorized fallback), 'emulated' (the CUDA kernels run on the CPU)
and 'cupy' (the CUDA kernels on the GPU). The array type picks the path unless `backend()` forces one.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

import numpy as np

BACKENDS = ("numpy", "emulated", "cupy")
_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar("onnx_cupy_backend", default=None)


@functools.cache
def cupy_module() -> Any | None:
    """The cupy module if importable, else None."""
    try:
        import cupy
    except Exception:  # ImportError, or a broken CUDA install
        return None
    return cupy


def gpu_available() -> bool:
    cp = cupy_module()
    if cp is None:
        return False
    try:
        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def default_backend() -> str:
    """'cupy' when a GPU is visible, 'numpy' otherwise."""
    return "cupy" if gpu_available() else "numpy"


@contextlib.contextmanager
def backend(name: str) -> Iterator[None]:
    """Force an execution path inside the block: 'numpy', 'emulated' or 'cupy'."""
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    token = _forced.set(name)
    try:
        yield
    finally:
        _forced.reset(token)


def is_cupy_array(x: Any) -> bool:
    cp = cupy_module()
    return cp is not None and isinstance(x, cp.ndarray)


def select(x: Any, op: str) -> str:
    """The backend that runs `op` on array `x`; TypeError for unsupported array types."""
    forced = _forced.get()
    if isinstance(x, np.ndarray):
        if forced == "cupy":
            raise TypeError(f"{op}: backend 'cupy' needs a cupy.ndarray input, got numpy.ndarray")
        return forced or "numpy"
    if is_cupy_array(x):
        if forced in ("numpy", "emulated"):
            raise TypeError(
                f"{op}: backend '{forced}' needs a numpy.ndarray input, got cupy.ndarray"
            )
        return "cupy"
    raise TypeError(
        f"{op}: X must be a numpy.ndarray or cupy.ndarray, got {type(x).__module__}.{type(x).__name__}"
    )
