"""Kernel launch for kernels/hardmax.cu over a Hardmax plan's [outer, n, inner] view (see
onnx_cupy.plans.hardmax for the semantics).

Fast paths, chosen on the host from the plan and the strides (no recompilation per shape):
  hardmax_rows  rows of n consecutive elements (inner == 1): one fused launch, a group of G
                threads per row (part of a warp, a warp, or a block for long rows), 16-byte
                loads and stores where rows are aligned;
  hardmax_cols  one thread per column (o, i) where there are enough columns: scan and write in
                one launch, on a 2-D/3-D grid (i on x, o on y and z).
The rest (few long columns) runs the generic scan, merge and write passes."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import arrays, dtypes, launch, loader
from ..plans.hardmax import HardmaxPlan

FAMILY = "hardmax"
KERNELS = ("hardmax_scan", "hardmax_merge", "hardmax_write")
PACK_BYTES = 16          # one vector access
ROW_BLOCK = 256          # threads per block of hardmax_rows groups and of hardmax_cols
MAX_ROW_GROUP = 512      # most threads on one row
WARP = 32
PACKS_PER_THREAD = 4     # fewest packs a thread of hardmax_rows scans before the group widens
MAX_GRID_X, MAX_GRID_YZ = 2**31 - 1, 65535
GRID_SLACK = 1 << 24     # most that a fast kernel's thread indices overshoot the view

_GEOM = np.dtype([(f, "<i8") for f in (
    "outer", "n", "inner", "lanes", "stride_outer", "stride_n", "stride_inner")])


def _storage(dtype_name: str) -> str:
    return dtypes.FLOAT_TYPES[dtype_name][0]


def _expression(kernel: str, dtype_name: str, bits: int) -> str:
    storage, acc, _ = dtypes.FLOAT_TYPES[dtype_name]
    return f"{kernel}<{storage}, {acc}, {dtypes.INDEX_TYPES[bits]}>"


def _pack(dtype_name: str) -> int:
    return PACK_BYTES // np.dtype(dtypes.BFLOAT16 if dtype_name == "bfloat16" else dtype_name).itemsize


def _rows_expression(dtype_name: str, vector: int, bits: int) -> str:
    return f"hardmax_rows<{_storage(dtype_name)}, {vector}, {dtypes.INDEX_TYPES[bits]}>"


def _cols_expression(dtype_name: str, bits: int) -> str:
    return f"hardmax_cols<{_storage(dtype_name)}, {dtypes.INDEX_TYPES[bits]}>"


_ROWS = {_rows_expression(t, v, b): v for t in dtypes.FLOAT_TYPES for v in (1, _pack(t))
         for b in dtypes.INDEX_TYPES}
_COLS = {_cols_expression(t, b): 1 for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
loader.register(FAMILY, [_expression(k, t, b) for k in KERNELS for t in dtypes.FLOAT_TYPES
                         for b in dtypes.INDEX_TYPES],
                {"HardmaxGeom": _GEOM}, fast={**_ROWS, **_COLS})
loader.register_cooperative(FAMILY, list(_ROWS))


@functools.lru_cache(maxsize=512)
def geometry(pl: HardmaxPlan, view: tuple[int, int, int]) -> np.ndarray:
    """The kernels' HardmaxGeom parameter block for view strides `view`."""
    return launch.parameter_block(_GEOM, **dict(zip(_GEOM.names, (pl.outer, pl.n, pl.inner,
                                                                   pl.lanes, *view))))


@functools.lru_cache(maxsize=512)
def kernel_args(pl: HardmaxPlan, dtype: np.dtype, x_strides: tuple[int, ...]
                ) -> tuple[tuple[str, str, str], np.dtype, np.ndarray] | None:
    """((scan, merge, write) instantiations, index dtype, HardmaxGeom block) for an input of
    `dtype` with these element strides, or None where they do not form the [outer, n, inner]
    view."""
    view = pl.view_strides(x_strides)
    if view is None:
        return None
    bits = launch.index_bits(math.prod(pl.shape), arrays.max_offset(pl.shape, x_strides))
    name = dtypes.float_name(dtype)
    return (tuple(_expression(k, name, bits) for k in KERNELS), dtypes.INDEX_DTYPES[bits],
            geometry(pl, view))


def _pow2_floor(v: int) -> int:
    return 1 << (max(v, 1).bit_length() - 1)


@functools.lru_cache(maxsize=512)
def fast_launch(pl: HardmaxPlan, dtype: np.dtype, x_strides: tuple[int, ...], aligned: bool
                ) -> tuple[str, launch.Shape, np.ndarray] | None:
    """(instantiation, (grid, block), HardmaxGeom block) of the fast path for an input of `dtype`
    with these element strides (`aligned`: X and Y start on 16-byte boundaries), or None where
    the generic passes run."""
    view = pl.view_strides(x_strides)
    if view is None:
        return None
    name = dtypes.float_name(dtype)
    bits = dtypes.index_bits(arrays.max_offset(pl.shape, x_strides), math.prod(pl.shape) + GRID_SLACK)
    if pl.inner == 1 and (view[1] == 1 or pl.n == 1):
        vector = _pack(name)
        if not (aligned and pl.n % vector == 0 and view[0] % vector == 0):
            vector = 1
        group = min(MAX_ROW_GROUP, _pow2_floor(pl.n // vector // PACKS_PER_THREAD))
        rows = ROW_BLOCK // group if group <= WARP else 1  # a group wider than a warp: a block
        blocks = -(-pl.outer // rows)
        if blocks > MAX_GRID_X:
            return None
        return (_rows_expression(name, vector, bits), ((blocks, 1, 1), (group, rows, 1)),
                geometry(pl, view))
    if pl.lanes > 1:
        return None
    bx = min(ROW_BLOCK, 1 << (pl.inner - 1).bit_length())
    by = ROW_BLOCK // bx
    blocks_o = -(-pl.outer // by)
    gy = min(blocks_o, MAX_GRID_YZ)
    gz = -(-blocks_o // gy)
    gx = -(-pl.inner // bx)
    if gz > MAX_GRID_YZ or gx > MAX_GRID_X:
        return None
    return _cols_expression(name, bits), ((gx, gy, gz), (bx, by, 1)), geometry(pl, view)


def _address(a: Any) -> int:
    return a.ctypes.data if isinstance(a, np.ndarray) else a.data.ptr


def run(pl: HardmaxPlan, X: Any, Y: Any, backend: str) -> None:
    """Compute hardmax(X) per plan `pl` into the C-contiguous Y ('cupy' or 'emulated'): one fast
    launch where the view allows, else scan, merge (when a row has several scan lanes) and write."""
    xp = arrays.module_of(backend)
    X, strides = arrays.element_strides(X)
    if pl.view_strides(strides) is None:
        X, strides = arrays.element_strides(xp.ascontiguousarray(X))
    aligned = (_address(X) | _address(Y)) % PACK_BYTES == 0
    fast = fast_launch(pl, X.dtype, strides, aligned)
    if fast is not None:
        expression, shape, g = fast
        launch.launch(backend, FAMILY, expression, Y.size, (X, Y, g), shape)
        return
    (scan, merge, write), index_dtype, g = kernel_args(pl, X.dtype, strides)
    part = xp.empty(pl.outer * pl.lanes * pl.inner, dtype=index_dtype)
    launch.launch(backend, FAMILY, scan, part.size, (X, part, g))
    arg = part
    if pl.lanes > 1:
        arg = xp.empty(pl.outer * pl.inner, dtype=index_dtype)
        launch.launch(backend, FAMILY, merge, arg.size, (X, part, arg, g))
    launch.launch(backend, FAMILY, write, Y.size, (arg, Y, g))
