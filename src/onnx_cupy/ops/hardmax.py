"""Kernel launch for kernels/hardmax.cu over a Hardmax plan's [outer, n, inner] view (see
onnx_cupy.plans.hardmax for the semantics).

The host picks the kernels from the plan and the strides (no recompilation per shape), each on
a grid whose axes are the view's (no index division in any kernel):
  hardmax_rows   rows of n consecutive elements (inner == 1): one launch, a group of G threads per
                 row (part of a warp, a warp, or a block for long rows), 16-byte loads and stores
                 where the rows are aligned;
  hardmax_cols   one thread per column (o, i) where the plan needs one scan lane per column: one
                 launch on a 2-D/3-D grid (i on x, o on y and z);
  hardmax_scan + hardmax_merge   the rest (few long columns): `lanes` threads per column, then
                 one per column to combine their candidates."""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from .. import arrays, dtypes, launch, loader
from ..plans.hardmax import HardmaxPlan

FAMILY = "hardmax"
KERNELS = ("hardmax_scan", "hardmax_merge")
PACK_BYTES = 16          # one vector access
MAX_ROW_GROUP = 512      # most threads on one row (launch.BLOCK otherwise)
PACKS_PER_THREAD = 4     # fewest packs a thread of hardmax_rows scans before the group widens
WARP = 32
GRID_SLACK = 1 << 24     # most that a kernel's thread indices overshoot the view's extents
KEY_DTYPES = {2: np.dtype(np.uint32), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}  # by itemsize

_GEOM = np.dtype([(f, "<i8") for f in (
    "outer", "n", "inner", "lanes", "stride_outer", "stride_n", "stride_inner")])


def _storage(dtype_name: str) -> str:
    return dtypes.FLOAT_TYPES[dtype_name][0]


def _pack(dtype_name: str) -> int:
    """Elements in one 16-byte access."""
    return PACK_BYTES // (2 if dtype_name in ("float16", "bfloat16") else
                          np.dtype(dtype_name).itemsize)


def _expression(kernel: str, dtype_name: str, bits: int, vector: int | None = None) -> str:
    packs = "" if vector is None else f"{vector}, "
    return f"{kernel}<{_storage(dtype_name)}, {packs}{dtypes.INDEX_TYPES[bits]}>"


_ROWS = {_expression("hardmax_rows", t, b, v): v for t in dtypes.FLOAT_TYPES
         for v in (1, _pack(t)) for b in dtypes.INDEX_TYPES}
_COLS = {_expression("hardmax_cols", t, b): 1 for t in dtypes.FLOAT_TYPES
         for b in dtypes.INDEX_TYPES}
loader.register(FAMILY, [_expression(k, t, b) for k in KERNELS for t in dtypes.FLOAT_TYPES
                         for b in dtypes.INDEX_TYPES],
                {"HardmaxGeom": _GEOM}, fast={**_ROWS, **_COLS}, cooperative=_ROWS,
                threads=dict.fromkeys(_ROWS, MAX_ROW_GROUP))


class Launch(NamedTuple):
    expression: str
    shape: launch.Shape
    part: bool            # takes the scan lanes' candidates (index and key buffers)


@functools.lru_cache(maxsize=512)
def geometry(pl: HardmaxPlan, view: tuple[int, int, int]) -> np.ndarray:
    """The kernels' HardmaxGeom parameter block for view strides `view`."""
    return launch.parameter_block(_GEOM, **dict(zip(_GEOM.names, (pl.outer, pl.n, pl.inner,
                                                                   pl.lanes, *view))))


def _rows(pl: HardmaxPlan, name: str, bits: int, stride_outer: int, aligned: bool
          ) -> Launch | None:
    vector = _pack(name)
    if not (aligned and pl.n % vector == 0 and stride_outer % vector == 0):
        vector = 1
    group = min(MAX_ROW_GROUP, launch.pow2_floor(pl.n // vector // PACKS_PER_THREAD))
    rows = launch.BLOCK // group if group <= WARP else 1  # a group wider than a warp: a block
    blocks = launch.cdiv(pl.outer, rows)
    if blocks > launch.MAX_GRID_X:
        return None
    return Launch(_expression("hardmax_rows", name, bits, vector),
                  ((blocks, 1, 1), (group, rows, 1)), False)


def _columns(pl: HardmaxPlan, name: str, bits: int) -> Launch | None:
    bx, by = launch.block_rows(pl.inner)
    grid = (launch.cdiv(pl.inner, bx), *launch.grid_yz(launch.cdiv(pl.outer, by)))
    if grid[0] > launch.MAX_GRID_X or grid[2] > launch.MAX_GRID_YZ:
        return None
    return Launch(_expression("hardmax_cols", name, bits), (grid, (bx, by, 1)), False)


def _generic(pl: HardmaxPlan, name: str, bits: int) -> tuple[Launch, Launch]:
    bx, my = launch.block_rows(pl.inner)
    by = min(my, launch.pow2_ceil(pl.lanes))
    gx = launch.cdiv(pl.inner, bx)
    scan = ((gx, launch.cdiv(pl.lanes, by), min(pl.outer, launch.MAX_GRID_YZ)), (bx, by, 1))
    merge = ((gx, min(launch.cdiv(pl.outer, my), launch.MAX_GRID_YZ), 1), (bx, my, 1))
    return (Launch(_expression("hardmax_scan", name, bits), scan, True),
            Launch(_expression("hardmax_merge", name, bits), merge, True))


@functools.lru_cache(maxsize=512)
def launches(pl: HardmaxPlan, dtype: np.dtype, x_strides: tuple[int, ...], aligned: bool
             ) -> tuple[tuple[Launch, ...], np.dtype, np.ndarray]:
    """(launches, index dtype, HardmaxGeom block) for an input of `dtype` with these element
    strides, which form the plan's [outer, n, inner] view (`aligned`: X and Y start on 16-byte
    boundaries)."""
    view = pl.view_strides(x_strides)
    name = dtypes.float_name(dtype)
    bits = dtypes.index_bits(arrays.max_offset(pl.shape, x_strides),
                             math.prod(pl.shape) + GRID_SLACK)
    fast = None
    if pl.inner == 1 and (view[1] == 1 or pl.n == 1):
        fast = _rows(pl, name, bits, view[0], aligned)
    elif pl.lanes == 1:
        fast = _columns(pl, name, bits)
    steps = (fast,) if fast is not None else _generic(pl, name, bits)
    return steps, dtypes.INDEX_DTYPES[bits], geometry(pl, view)


def _address(a: Any) -> int:
    return a.ctypes.data if isinstance(a, np.ndarray) else a.data.ptr


def run(pl: HardmaxPlan, X: Any, Y: Any, backend: str) -> None:
    """Compute hardmax(X) per plan `pl` into the C-contiguous Y ('cupy' or 'emulated'); inputs
    whose strides do not form the [outer, n, inner] view are copied to C order first."""
    xp = arrays.module_of(backend)
    X, strides = arrays.element_strides(X)
    if pl.view_strides(strides) is None:
        X, strides = arrays.element_strides(xp.ascontiguousarray(X))
    aligned = (_address(X) | _address(Y)) % PACK_BYTES == 0
    steps, index_dtype, g = launches(pl, X.dtype, strides, aligned)
    part: tuple = ()
    if steps[0].part:
        size = pl.outer * pl.lanes * pl.inner
        part = (xp.empty(size, dtype=index_dtype),
                xp.empty(size, dtype=KEY_DTYPES[X.dtype.itemsize]))
    for step in steps:
        launch.launch(backend, FAMILY, step.expression, Y.size, (X, Y, *part, g), step.shape)
