"""Kernel launch for kernels/resize.cu: a Resize plan's per-axis tables concatenated and
uploaded once per device, the ResizeGeom block and the instantiation (see onnx_cupy.plans.resize
for the semantics)."""
from __future__ import annotations

import collections
import functools
import math
import threading
from typing import Any

import numpy as np

from .. import arrays, backends, dtypes, launch, loader
from ..plans.resize import MAX_DIMS, OP, ResizePlan, readonly

FAMILY = "resize"
POD_BYTES = (1, 2, 4, 8, 16)
DEVICE_TABLE_PLANS = 64    # plans whose tables stay cached on each device

_GEOM = np.dtype(
    [("nd", "<i8"), ("total", "<i8")]
    + [(f, "<i8", (MAX_DIMS,)) for f in ("out_shape", "in_stride", "taps", "table")]
    + [("fill", "u1", (16,))]
)


def _nearest_expression(itemsize: int, bits: int) -> str:
    return f"resize_nearest<rsz::pod<{itemsize}>, {dtypes.INDEX_TYPES[bits]}>"


def _weighted_expression(dtype_name: str, bits: int) -> str:
    storage, acc = (dtypes.FLOAT_TYPES[dtype_name][:2] if dtype_name in dtypes.FLOAT_TYPES
                    else (dtypes.INT_TYPES[dtype_name], "double"))
    return f"resize_weighted<{storage}, {acc}, {dtypes.INDEX_TYPES[bits]}>"


loader.register(FAMILY, [_nearest_expression(n, b) for n in POD_BYTES for b in dtypes.INDEX_TYPES]
                + [_weighted_expression(t, b) for t in (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)
                   for b in dtypes.INDEX_TYPES],
                {"ResizeGeom": _GEOM})


@functools.lru_cache(maxsize=DEVICE_TABLE_PLANS)
def kernel_tables(pl: ResizePlan) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """The tables of every resized axis, concatenated: (index with -1 as the first index of an
    extrapolated row, weight, first entry of each axis)."""
    index, weight, first, pos = [], [], [], 0
    for t in pl.tables:
        idx = t.index.copy()
        idx[t.outside, 0] = -1
        index.append(idx.ravel())
        weight.append(t.weight.ravel())
        first.append(pos)
        pos += idx.size
    return readonly(np.concatenate(index)), readonly(np.concatenate(weight)), tuple(first)


_device_tables: collections.OrderedDict[tuple[ResizePlan, int], tuple[Any, Any, Any]] = \
    collections.OrderedDict()
_device_lock = threading.Lock()


def _tables_on(pl: ResizePlan, backend: str) -> tuple[Any, Any]:
    """(index, weight) tables where the kernel reads them: uploaded once per plan and device; a
    launch on any stream waits for the upload's event, not the host."""
    index, weight, _ = kernel_tables(pl)
    if backend != "cupy":
        return index, weight
    cp = backends.cupy_module()
    key = (pl, cp.cuda.runtime.getDevice())
    with _device_lock:
        hit = _device_tables.get(key)
        if hit is not None:
            _device_tables.move_to_end(key)
    if hit is None:
        hit = (cp.asarray(index), cp.asarray(weight), cp.cuda.Event(disable_timing=True))
        hit[2].record()
        with _device_lock:
            _device_tables[key] = hit
            while len(_device_tables) > DEVICE_TABLE_PLANS:
                _device_tables.popitem(last=False)
    cp.cuda.get_current_stream().wait_event(hit[2])
    return hit[0], hit[1]


@functools.lru_cache(maxsize=256)
def geometry(pl: ResizePlan, x_strides: tuple[int, ...]) -> np.ndarray | None:
    """The kernels' ResizeGeom block for an input with these element strides (adjacent unresized
    dims merged where the strides allow), or None if more than MAX_DIMS dims remain."""
    first = dict(zip((t.axis for t in pl.tables), zip(pl.tables, kernel_tables(pl)[2])))
    dims: list[list[int]] = []  # [length, stride, taps, first table entry]
    for d, (n, s) in enumerate(zip(pl.out_shape, x_strides)):
        if d in first:
            t, entry = first[d]
            dims.append([n, s, t.taps, entry])
        elif n == 1:
            continue
        elif dims and dims[-1][2] == 0 and dims[-1][1] == s * n:
            dims[-1][0] *= n
            dims[-1][1] = s
        else:
            dims.append([n, s, 0, 0])
    if len(dims) > MAX_DIMS:
        return None
    columns = dict(zip(("out_shape", "in_stride", "taps", "table"), zip(*dims)))
    fill = () if pl.fill is None else np.frombuffer(pl.fill.tobytes(), dtype=np.uint8)
    return launch.parameter_block(_GEOM, nd=len(dims), total=math.prod(pl.out_shape), fill=fill,
                                  **columns)


def _address(a: Any, backend: str) -> int:
    return a.data.ptr if backend == "cupy" else a.ctypes.data


def run(pl: ResizePlan, X: Any, Y: Any, backend: str) -> None:
    align = min(X.dtype.itemsize, 8)  # the storage type's alignment
    if _address(Y, backend) % align:
        raise ValueError(f"{OP}: out must be aligned to {align} bytes for the kernel path")
    if _address(X, backend) % align:
        X = X.copy()
    X, strides = arrays.element_strides(X)
    args = kernel_args(pl, X.dtype, strides)
    if args is None:
        X, strides = arrays.element_strides(arrays.module_of(backend).ascontiguousarray(X))
        args = kernel_args(pl, X.dtype, strides)
    expression, g = args
    index, weight = _tables_on(pl, backend)
    if pl.mode == "nearest":
        launch.launch(backend, FAMILY, expression, Y.size, (X, Y, index, g))
    else:
        launch.launch(backend, FAMILY, expression, Y.size, (X, Y, index, weight, g))


@functools.lru_cache(maxsize=256)
def kernel_args(pl: ResizePlan, dtype: np.dtype, x_strides: tuple[int, ...]
                ) -> tuple[str, np.ndarray] | None:
    """(instantiation, ResizeGeom block) for an input of `dtype` with these element strides, or
    None if more than MAX_DIMS dims remain after merging."""
    g = geometry(pl, x_strides)
    if g is None:
        return None
    bits = launch.index_bits(math.prod(pl.out_shape), arrays.max_offset(pl.in_shape, x_strides),
                             kernel_tables(pl)[0].size)
    if pl.mode == "nearest":
        return _nearest_expression(dtype.itemsize, bits), g
    return _weighted_expression(dtype.name, bits), g


