"""The kernel path of Hardmax: kernels/hardmax.cu over a plan's [outer, n, inner] view
(onnx_cupy.hardmax.plan), launched on the GPU or the emulator.

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
from typing import Any

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, numerics, records, workspaces
from .plan import OP, HardmaxPlan

FAMILY = "hardmax"
PACK_BYTES = 16          # one vector access (HARDMAX_PACK_BYTES)
MAX_ROW_GROUP = 512      # most threads on one row (loader.BLOCK otherwise)
PACKS_PER_THREAD = 4     # fewest packs a thread of hardmax_rows scans before the group widens
SCAN_ITEMS = 1 << 16     # scan threads that keep a GPU's memory system busy
MIN_LANE_SPAN = 8        # fewest elements worth one scan lane
MAX_LANES = 1024
GRID_SLACK = 1 << 24     # most that a kernel's thread indices overshoot the view's extents
KEY_DTYPES: dict[int, np.dtype] = {  # by itemsize
    2: np.dtype(np.uint32), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64)}
BUDGET = 30              # instructions per output of a float16/bfloat16/float32 fast path

_GEOM_FIELDS = ("outer", "n", "inner", "lanes", "stride_outer", "stride_n", "stride_inner")
_GEOM = np.dtype([(f, "<i8") for f in _GEOM_FIELDS])


def _pack(dtype_name: str) -> int:
    """Elements in one 16-byte access."""
    return PACK_BYTES // (2 if dtype_name in ("float16", "bfloat16") else
                          np.dtype(dtype_name).itemsize)


def _record(template: str, dtype_name: str, bits: int, vector: int | None = None,
            **fields: Any) -> records.Instantiation:
    """An instantiation of `template`<T, [vector,] I> serving Hardmax on `dtype_name`."""
    packs = () if vector is None else (records.argument("vector", vector),)
    return records.Instantiation(FAMILY, template, (records.storage(dtype_name), *packs,
                                                    records.index(bits)),
                                 (OP,), (dtype_name,), **fields)


# the scan's lanes loop over grid z, the merge's rows over grid y
SCAN = {(t, b): _record("hardmax_scan", t, b, grid_stride="z")
        for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
MERGE = {(t, b): _record("hardmax_merge", t, b, grid_stride="y")
         for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
# hardmax_rows by (dtype, bits, elements per access): a pack of 16 bytes, or one element
ROWS = {(t, b, v): _record("hardmax_rows", t, b, v, outputs=v, fast=True,
                           budget=records.fast_budget(BUDGET, b), cooperative=True,
                           threads=MAX_ROW_GROUP,
                           variant="16-byte loads" if v != 1 else "element loads")
        for t in dtypes.FLOAT_TYPES for v in (1, _pack(t)) for b in dtypes.INDEX_TYPES}
COLS = {(t, b): _record("hardmax_cols", t, b, fast=True, budget=records.fast_budget(BUDGET, b))
        for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
loader.register(FAMILY, [*SCAN.values(), *MERGE.values(), *ROWS.values(), *COLS.values()],
                {"HardmaxGeom": _GEOM},
                defines={"HARDMAX_PACK_BYTES": PACK_BYTES, "HARDMAX_MAX_GROUP": MAX_ROW_GROUP})


@functools.lru_cache(maxsize=512)
def lanes(pl: HardmaxPlan) -> int:
    """Scan threads per column of hardmax_scan: enough for SCAN_ITEMS in all and, for
    contiguous rows (inner == 1), whole warps so that each warp reads consecutive elements of one
    row; each lane scans at least MIN_LANE_SPAN elements."""
    count = min(numerics.cdiv(SCAN_ITEMS, max(pl.outer * pl.inner, 1)), pl.n // MIN_LANE_SPAN,
                MAX_LANES)
    if pl.inner == 1 and pl.n >= loader.WARP * MIN_LANE_SPAN:
        return max(count - count % loader.WARP, loader.WARP)
    return max(count, 1)


def view_strides(pl: HardmaxPlan, strides: tuple[int, ...]) -> tuple[int, int, int] | None:
    """Element strides of the [outer, n, inner] view of an array with `strides`, or None where a
    group of dimensions is not walked by one stride."""
    groups = ((0, pl.axis), (pl.axis, pl.stop), (pl.stop, len(pl.shape)))
    outer, n, inner = (arrays.merged_stride(pl.shape[a:b], strides[a:b]) for a, b in groups)
    if outer is None or n is None or inner is None:
        return None
    return outer[1], n[1], inner[1]


def takes_candidates(k: records.Instantiation) -> bool:
    """Whether a pass reads or writes the scan lanes' candidates (index and key buffers)."""
    return k.template in ("hardmax_scan", "hardmax_merge")


@functools.lru_cache(maxsize=512)
def geometry(pl: HardmaxPlan, view: tuple[int, int, int]) -> np.ndarray:
    """The kernels' HardmaxGeom parameter struct for view strides `view`."""
    return launcher.parameter_struct(_GEOM, **dict(zip(_GEOM_FIELDS, (pl.outer, pl.n, pl.inner,
                                                                      lanes(pl), *view))))


def _rows(pl: HardmaxPlan, name: str, bits: int, stride_outer: int, aligned: bool,
          g: np.ndarray) -> launcher.LaunchSpec | None:
    vector = _pack(name)
    if not (aligned and pl.n % vector == 0 and stride_outer % vector == 0):
        vector = 1
    group = min(MAX_ROW_GROUP, launcher.pow2_floor(pl.n // vector // PACKS_PER_THREAD))
    rows = loader.BLOCK // group if group <= loader.WARP else 1  # wider than a warp: a block
    blocks = numerics.cdiv(pl.outer, rows)
    if blocks > launcher.MAX_GRID_X:
        return None
    return launcher.LaunchSpec(ROWS[name, bits, vector], ((blocks, 1, 1), (group, rows, 1)),
                               0, (g,))


def _columns(pl: HardmaxPlan, name: str, bits: int, g: np.ndarray
             ) -> launcher.LaunchSpec | None:
    bx, by = launcher.block_rows(pl.inner)
    grid = (numerics.cdiv(pl.inner, bx), *launcher.grid_yz(numerics.cdiv(pl.outer, by)))
    if grid[0] > launcher.MAX_GRID_X or grid[2] > launcher.MAX_GRID_YZ:
        return None
    return launcher.LaunchSpec(COLS[name, bits], (grid, (bx, by, 1)), 0, (g,))


def _generic(pl: HardmaxPlan, name: str, bits: int, g: np.ndarray
             ) -> tuple[launcher.LaunchSpec, launcher.LaunchSpec]:
    count = lanes(pl)
    bx, my = launcher.block_rows(pl.inner)
    by = min(my, launcher.pow2_ceil(count))
    gx = numerics.cdiv(pl.inner, bx)
    scan = ((gx, numerics.cdiv(count, by), min(pl.outer, launcher.MAX_GRID_YZ)), (bx, by, 1))
    merge = ((gx, min(numerics.cdiv(pl.outer, my), launcher.MAX_GRID_YZ), 1), (bx, my, 1))
    return (launcher.LaunchSpec(SCAN[name, bits], scan, 0, (g,)),
            launcher.LaunchSpec(MERGE[name, bits], merge, 0, (g,)))


@functools.lru_cache(maxsize=512)
def launches(pl: HardmaxPlan, dtype: np.dtype, x_strides: tuple[int, ...], aligned: bool
             ) -> tuple[tuple[launcher.LaunchSpec, ...], np.dtype]:
    """(launches, index dtype) for an input of `dtype` with these element strides, which form
    the plan's [outer, n, inner] view (`aligned`: X and Y start on 16-byte boundaries)."""
    view = view_strides(pl, x_strides)
    if view is None:
        raise ValueError(f"{OP}: strides {x_strides} do not form the [outer, n, inner] view of "
                         f"shape {pl.shape}")
    name = dtype.name  # a float of the table: the plan validated it
    bits = dtypes.offset_bits(arrays.index_reach(pl.shape, x_strides),
                             math.prod(pl.shape) + GRID_SLACK)
    g = geometry(pl, view)
    fast: launcher.LaunchSpec | None = None
    if pl.inner == 1 and (view[1] == 1 or pl.n == 1):
        fast = _rows(pl, name, bits, view[0], aligned, g)
    elif lanes(pl) == 1:
        fast = _columns(pl, name, bits, g)
    steps = (fast,) if fast is not None else _generic(pl, name, bits, g)
    return steps, dtypes.INDEX_DTYPES[bits]


def walks(pl: HardmaxPlan, index: int, x: Any) -> bool:
    """Whether the kernels read X laid out as `x`: its strides form the [outer, n, inner]
    view."""
    strides = arrays.whole_element_strides(x)
    return strides is not None and view_strides(pl, strides) is not None


def prepare(pl: HardmaxPlan, device: Any, x: Any) -> kernel_call.Body:
    """The body of plan `pl` on `device` for X laid out as `x` (its strides form the [outer, n,
    inner] view: `walks`): body(X, out) -> hardmax(X). The 16-byte loads of hardmax_rows run
    where X and Y start on 16-byte boundaries. The scan lanes' candidates go to the
    workspace."""
    size = math.prod(pl.shape)
    empty, dtype = device.empty, x.dtype   # X's dtype: the key holds it
    if not size:
        return lambda X, out: empty(pl.shape, dtype) if out is None else out
    strides = arrays.whole_element_strides(x)
    assert strides is not None   # walks(pl, 0, x)
    passes = {}
    for aligned in (False, True):
        steps, index_dtype = launches(pl, x.dtype, strides, aligned)
        passes[aligned] = tuple(launcher.Launch(device, p) for p in steps)
    generic = takes_candidates(passes[False][0].kernel)
    count = pl.outer * lanes(pl) * pl.inner if generic else 0   # the scan lanes' candidates
    space = workspaces.Scratch(device, ((count,), index_dtype),
                               ((count,), KEY_DTYPES[x.dtype.itemsize])) if count else None

    def body(X: Any, out: Any) -> Any:
        Y = empty(pl.shape, dtype) if out is None else out
        part = space() if space is not None else ()   # the generic passes' candidates
        for step in passes[(X.data.ptr | Y.data.ptr) % PACK_BYTES == 0]:
            step(X, Y, *part)
        return Y
    return body
