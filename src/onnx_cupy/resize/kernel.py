"""The kernel path of Resize: a plan's (onnx_cupy.resize.plan) per-axis tables concatenated and
uploaded once per prepared call (onnx_cupy.core.calls), the parameter struct, instantiation and grid
of kernels/resize.cu, launched on the GPU or the emulator. Where 1-3 resized axes are the trailing
ones or are followed only by unresized axes that merge into one (NHWC resized along H and W), the
fast kernels run, over a grid of their own; the generic ones, instantiated per rank (dims left after
merging, padded to the next of GENERIC_RANKS), take every other case. Both index with int where
every offset fits 32 bits, else with long long."""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, numerics, records, workspaces
from ..core.arrays import readonly
from .plan import MAX_DIMS, OP, UPSAMPLE, UPSAMPLE_DTYPES, ResizePlan

FAMILY = "resize"
POD_BYTES = (1, 2, 4, 8, 16)
TABLE_PLANS = 64           # plans whose host tables stay cached (device tables: in each call)

# walked dim of the fast kernels (rsz::walked): the last resized dim, or the unresized dims after
# the resized ones, merged into one
RESIZED, KEPT = "rsz::RESIZED", "rsz::KEPT"
FAST_RANKS = (1, 2, 3)      # resized dims of the fast kernels (RESIZE_FAST_MAXD: the most)
FAST_TAPS = (1, 2, 4)       # taps per dim: nearest, linear, cubic
FILL_BYTES = max(POD_BYTES)  # a parameter struct's `fill`: the bytes of the largest element
# instructions per output of a float16/bfloat16/float32 fast path. 40 was set for contracted code;
# under the IEEE options (--fmad=false) each weighted tap is a multiply and an add: bfloat16 linear
# on 2 axes walking a resized one measures 42.75 on sm_90 (38.75 contracted) and 61.75 with 64-bit
# offsets (57.75), its bfloat16 rounding on store costing what float16's single conversion does
# not. Fewer address computations (a row pointer) and the hardware conversion measured more.
BUDGET = 43
TABLE_ALIGN = 16           # bytes: a record of the fast tables is read with 16-byte loads
# the first offset of an extrapolated coordinate in the fast tables, per index width: the least
# value of the offset type, which no offset of an input indexed with that type reaches
OUTSIDE = {bits: -2**(bits - 1) for bits in dtypes.INDEX_TYPES}

_GEOM = np.dtype(
    [("total", "<i8")]
    + [(f, "<i8", (MAX_DIMS,)) for f in ("out_shape", "in_stride", "taps", "table")]
    + [("fill", "u1", (FILL_BYTES,))]
)
_FAST_GEOM = np.dtype([("fill", "u1", (FILL_BYTES,)), ("out", "<i8", (max(FAST_RANKS),)),
                       ("table", "<i8", (max(FAST_RANKS),))]
                      + [(f, "<i8") for f in ("batch_stride", "rows", "batch_rows", "walk",
                                              "walk_stride")], align=True)
# ranks of the generic kernels: dims left after merging, padded with leading length-1 dims up to
# the next of these
GENERIC_RANKS = (1, 2, 3, 4, 5, MAX_DIMS)
# blocks of launcher.BLOCK threads per SM that a kernel's registers must allow (its
# __launch_bounds__): the fast kernels 4, at most 64 registers, for 50 % occupancy; the generic
# ones 1, so that their tap walk (a loop level per dim) keeps its state in registers, not spills
FAST_MIN_BLOCKS, GENERIC_MIN_BLOCKS = 4, 1


def _outputs(dtype: np.dtype, ranks: int, taps: int, bits: int) -> int:
    """Outputs per thread and loop iteration of a fast kernel: fewer for the double ones, and
    with 64-bit offsets for cubic and 3-D linear (their wider offsets and tap terms would not
    fit in 64 registers four outputs at a time); one for cubic summed in double with 64-bit
    offsets (two would spill: sixteen separately rounded products each, no multiply-add)."""
    if taps == 1:
        return 4
    small = dtype.name in ("float16", "bfloat16", "float32")
    if not small and taps == 4 and bits == 64:
        return 1
    return 4 if small and (bits == 32 or (taps == 2 and ranks <= 2)) else 2


def _rank(dims: int) -> int:
    """The generic kernels' rank for `dims` dims: the least of GENERIC_RANKS that holds them."""
    return next(r for r in GENERIC_RANKS if r >= dims)


def _storage(dtype_name: str) -> tuple[str, str]:
    """(storage type, accumulate type) of a linear/cubic input dtype."""
    if dtype_name in dtypes.FLOAT_TYPES:
        return dtypes.FLOAT_TYPES[dtype_name][0], dtypes.FLOAT_TYPES[dtype_name][1]
    return dtypes.INT_TYPES[dtype_name], "double"


def _weight_dtype(dtype: np.dtype) -> np.dtype:
    """Fast tables' weight type: float32 where the kernel accumulates in float, else float64."""
    return np.dtype(np.float32 if _storage(dtype.name)[1] == "float" else np.float64)


def _fast_shape(walk: str, dtype: np.dtype, ranks: int, taps: int, bits: int) -> bool:
    """Whether a fast kernel with `bits`-bit offsets serves `ranks` resized dims of `taps` taps
    each, walking `walk`: a thread holds the taps^(resized dims before the walked one) tap
    combinations of its row in registers, at most 4 for RESIZED (each output reads taps more),
    8 for KEPT, 16 for KEPT summing in float with 32-bit offsets (more exceed 64 registers)."""
    if ranks not in FAST_RANKS or taps not in FAST_TAPS:
        return False
    float_sum = taps > 1 and _storage(dtype.name)[1] == "float"
    limit = 4 if walk == RESIZED else 16 if float_sum and bits == 32 else 8
    combinations: int = taps ** (ranks - (walk == RESIZED))  # a power >= 0 of an int: an int
    return combinations <= limit


# outputs on grid x (generic kernels) and a row's walk on grid x (fast kernels): grid_stride="x"
_WEIGHTED_DTYPES = [np.dtype(t) for t in (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)
                    if t != "bfloat16"] + ([dtypes.BFLOAT16] if dtypes.BFLOAT16 else [])
# nearest gathers every fixed-size dtype: one instantiation per element size serves them all
_NEAREST_DTYPES = [*_WEIGHTED_DTYPES, *map(np.dtype, ("bool", "complex64", "complex128"))]
_BY_SIZE = {n: tuple(d.name for d in _NEAREST_DTYPES if d.itemsize == n) for n in POD_BYTES}


def _ops(taps: int, dtype_names: tuple[str, ...]) -> tuple[str, ...]:
    """The operators whose calls may launch a kernel of `taps` taps per axis (the generic
    weighted kernels: 2) on these dtypes: Resize, and Upsample (Resize-10) in nearest and linear
    on the dtypes it takes."""
    mode = {1: "nearest", 2: "linear"}.get(taps)
    upsample = mode is not None and any(d in UPSAMPLE_DTYPES[mode] for d in dtype_names)
    return (OP, UPSAMPLE) if upsample else (OP,)


def _weighted_arguments(dtype_name: str) -> tuple[records.Argument, records.Argument]:
    return records.storage(dtype_name), records.argument("accumulate", _storage(dtype_name)[1])


# the generic kernels by (element size or dtype name, rank, bits)
NEAREST = {(n, r, b): records.Instantiation(
    FAMILY, "resize_nearest", (records.pod(n), records.argument("rank", r), records.index(b)),
    _ops(1, _BY_SIZE[n]), _BY_SIZE[n], grid_stride="x", variant="per rank", rank=r)
    for b in dtypes.INDEX_TYPES for r in GENERIC_RANKS for n in POD_BYTES}
WEIGHTED = {(t, r, b): records.Instantiation(
    FAMILY, "resize_weighted", (*_weighted_arguments(t), records.argument("rank", r),
                                records.index(b)),
    _ops(2, (t,)), (t,), grid_stride="x", variant="per rank", rank=r)
    for b in dtypes.INDEX_TYPES for r in GENERIC_RANKS for t in (*dtypes.FLOAT_TYPES,
                                                                 *dtypes.INT_TYPES)}


def _fast(dtype: np.dtype, ranks: int, taps: int, walk: str, bits: int
          ) -> records.Instantiation:
    """The fast kernel for `ranks` resized dims of `taps` taps each (1: nearest, of every dtype
    of `dtype`'s size), the walked dim `walk` and `bits`-bit offsets."""
    v = _outputs(dtype, ranks, taps, bits)
    shape = (records.argument("rank", ranks), *(
        () if taps == 1 else (records.argument("taps", taps),)),
        records.argument("outputs", v), records.argument("walk", walk.removeprefix("rsz::"), walk),
        records.index(bits))
    if taps == 1:
        return records.Instantiation(
            FAMILY, "resize_nearest_fast", (records.pod(dtype.itemsize), *shape),
            _ops(1, _BY_SIZE[dtype.itemsize]),
            _BY_SIZE[dtype.itemsize], grid_stride="x", outputs=v, fast=True,
            budget=records.fast_budget(BUDGET, bits),
            variant=f"{ranks}-D, {walk.removeprefix('rsz::')}")
    weight = "float" if _storage(dtype.name)[1] == "float" else "double"
    mode = {2: "linear", 4: "cubic"}[taps]
    return records.Instantiation(
        FAMILY, "resize_weighted_fast",
        (*_weighted_arguments(dtype.name), records.argument("weight", weight), *shape),
        _ops(taps, (dtype.name,)),
        (dtype.name,), grid_stride="x", outputs=v, fast=True,
        # cubic and 3-D linear gather 4-16x the taps: reported, not budgeted
        budget=records.fast_budget(BUDGET, bits) if taps == 2 and ranks <= 2 else None,
        variant=f"{mode} {ranks}-D, {walk.removeprefix('rsz::')}")


# the fast kernels by (element size (nearest) or dtype name, resized dims, taps, walk, bits)
FAST = {(n, r, 1, walk, b): _fast(np.dtype(f"V{n}"), r, 1, walk, b) for b in dtypes.INDEX_TYPES
        for walk in (RESIZED, KEPT) for n in POD_BYTES for r in FAST_RANKS}
FAST.update({(d.name, r, taps, walk, b): _fast(d, r, taps, walk, b)
             for b in dtypes.INDEX_TYPES for walk in (RESIZED, KEPT) for d in _WEIGHTED_DTYPES
             for r in FAST_RANKS for taps in FAST_TAPS[1:] if _fast_shape(walk, d, r, taps, b)})

loader.register(FAMILY, [*NEAREST.values(), *WEIGHTED.values(), *FAST.values()],
                {"ResizeGeom": _GEOM, "ResizeFastGeom": _FAST_GEOM},
                defines={"RESIZE_MAXD": MAX_DIMS, "RESIZE_FAST_MAXD": max(FAST_RANKS),
                         "RESIZE_FILL_BYTES": FILL_BYTES, "RESIZE_TABLE_ALIGN": TABLE_ALIGN,
                         # the least int and long long, written so no literal overflows
                         "RESIZE_OUTSIDE": f"({OUTSIDE[32] + 1}-1)",
                         "RESIZE_OUTSIDE_WIDE": f"({OUTSIDE[64] + 1}LL-1)",
                         "RESIZE_FAST_MIN_BLOCKS": FAST_MIN_BLOCKS,
                         "RESIZE_GENERIC_MIN_BLOCKS": GENERIC_MIN_BLOCKS})


@functools.lru_cache(maxsize=TABLE_PLANS)
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


@functools.lru_cache(maxsize=TABLE_PLANS)
def fast_table(pl: ResizePlan, weight: np.dtype | None, strides: tuple[int, ...], bits: int = 32
               ) -> tuple[np.ndarray, tuple[int, ...], int]:
    """The fast kernels' tables of every resized axis (input element `strides`, one per table),
    concatenated, as bytes aligned to TABLE_ALIGN: one record per output coordinate
    (rsz::record: its `taps` weights of type `weight`, none for nearest, then its `bits`-bit
    input offsets, index times stride, the first OUTSIDE[bits] where the coordinate is
    extrapolated), the first record of each axis, and the record size."""
    taps = pl.tables[0].taps
    fields = [] if weight is None else [("w", weight, (taps,))]
    record = np.dtype(fields + [("i", f"<i{bits // 8}", (taps,))], align=True)
    rows = sum(t.index.shape[0] for t in pl.tables)
    raw = np.zeros(rows * record.itemsize + TABLE_ALIGN, np.uint8)
    skip = -raw.ctypes.data % TABLE_ALIGN
    table = raw[skip:skip + rows * record.itemsize].view(record)
    first, pos = [], 0
    for t, stride in zip(pl.tables, strides):
        part = table[pos:pos + t.index.shape[0]]
        offsets = t.index * stride
        offsets[t.outside, 0] = OUTSIDE[bits]
        part["i"] = offsets
        if weight is not None:
            part["w"] = t.weight  # float64 -> float32: round to nearest even, as the kernels do
        first.append(pos)
        pos += t.index.shape[0]
    return readonly(table.view(np.uint8)), tuple(first), record.itemsize


@functools.lru_cache(maxsize=256)
def geometry(pl: ResizePlan, x_strides: tuple[int, ...]) -> tuple[int, np.ndarray] | None:
    """(rank, ResizeGeom block) of the generic kernels for an input with these element strides:
    adjacent unresized dims merged where the strides allow, then leading length-1 dims up to
    the rank; None if more than MAX_DIMS dims remain."""
    first = dict(zip((t.axis for t in pl.tables), zip(pl.tables, kernel_tables(pl)[2])))
    dims = [(n, s, *((first[d][0].taps, first[d][1]) if d is not None else (0, 0)))
            for n, s, d in arrays.merge_axes(pl.out_shape, x_strides, frozenset(first))]
    if len(dims) > MAX_DIMS:
        return None
    rank = _rank(len(dims))
    dims = [(1, 0, 0, 0)] * (rank - len(dims)) + dims
    columns = dict(zip(("out_shape", "in_stride", "taps", "table"), zip(*dims)))
    return rank, launcher.parameter_struct(_GEOM, total=math.prod(pl.out_shape), fill=_fill(pl),
                                           **columns)


def _fill(pl: ResizePlan) -> np.ndarray:
    """The bytes of the extrapolation value in the storage type (none without one), as the
    parameter structs' `fill` holds them."""
    return np.frombuffer(b"" if pl.fill is None else pl.fill.tobytes(), dtype=np.uint8)


def walks(pl: ResizePlan, index: int, x: Any) -> bool:
    """Whether the kernels read X laid out as `x`: whole-element strides that the fast kernel
    or the generic one walk (at most MAX_DIMS dims after merging); any layout where no axis is
    resized (X is copied)."""
    if not pl.tables:
        return True
    strides = arrays.whole_element_strides(x)
    return strides is not None and (fast_args(pl, x.dtype, strides) is not None
                                    or kernel_args(pl, x.dtype, strides) is not None)


def prepare(pl: ResizePlan, device: Any, x: Any) -> kernel_call.Body:
    """The body of plan `pl` on `device` for X laid out as `x` (`walks`): body(X, out) ->
    resize(X). The fast kernels where they apply, else the generic ones, their tables uploaded
    here, once; a plan that maps every axis onto itself copies X."""
    empty, dtype = device.empty, x.dtype   # X's dtype: the call's key holds it
    if not math.prod(pl.out_shape):
        return lambda X, out: empty(pl.out_shape, dtype) if out is None else out
    if not pl.tables:
        def copy(X: Any, out: Any) -> Any:
            Y = empty(pl.out_shape, dtype) if out is None else out
            Y[...] = X
            return Y
        return copy
    strides = arrays.whole_element_strides(x)
    assert strides is not None   # walks(pl, 0, x)
    step = _step(pl, device, x.dtype, strides)

    def body(X: Any, out: Any) -> Any:
        Y = empty(pl.out_shape, dtype) if out is None else out
        step(X, Y)
        return Y
    return body


def _step(pl: ResizePlan, device: Any, dtype: np.dtype, strides: tuple[int, ...]
          ) -> launcher.Launch:
    """The launch of `pl` on `device` for an input of `dtype` with these element strides: the
    fast kernel where it applies (its table uploaded), else the generic one (its tables
    uploaded)."""
    fast = fast_args(pl, dtype, strides)
    if fast is not None:
        spec, table_of = fast
        (table,) = workspaces.upload(device, fast_table(pl, table_of.weight, table_of.strides,
                                                        table_of.bits)[0])
        return launcher.Launch(device, spec, table, table[table_of.inner:])
    generic = kernel_args(pl, dtype, strides)
    if generic is None:  # the plan checked that C order merges to at most MAX_DIMS dims
        raise RuntimeError(f"{pl.op}: {len(pl.out_shape)} dims do not merge to {MAX_DIMS} in "
                           f"C order")
    index, weight = workspaces.upload(device, *kernel_tables(pl)[:2])
    return launcher.Launch(device, generic, *((index,) if pl.mode == "nearest" else
                                           (index, weight)))


class FastTable(NamedTuple):
    """The fast kernel's table (fast_table): its weight type, the resized axes' input strides,
    the offset bits, and the byte offset of the innermost axis' records in it."""

    weight: np.dtype | None
    strides: tuple[int, ...]
    bits: int
    inner: int


@functools.lru_cache(maxsize=256)
def fast_args(pl: ResizePlan, dtype: np.dtype, x_strides: tuple[int, ...]
              ) -> tuple[launcher.LaunchSpec, FastTable] | None:
    """The fast path's launch (its table after the spec's constants: the table and its
    innermost axis' records) and table for an input of `dtype` with these element strides, or
    None
    where it does not apply: 1-3 resized axes with the taps `_fast_shape` allows, no unresized axis
    between them (length-1 axes aside), the leading axes merging into one batch axis and the
    trailing unresized ones into one walked axis (where there is none, the last resized axis is
    walked), and the grid must fit; offsets of 32 bits where every one fits, else 64. Blocks of
    launcher.BLOCK threads: as many along a row as its outputs need (a power of two), the rest on
    further rows; the rows of all batch items on grid y, then z."""
    ranks, taps = len(pl.tables), pl.tables[0].taps
    lead, last = pl.tables[0].axis, pl.tables[-1].axis
    if any(t.taps != taps for t in pl.tables) or any(
            pl.out_shape[d] != 1 for d in range(lead, last)
            if d not in {t.axis for t in pl.tables}):
        return None
    batch = arrays.merged_stride(pl.in_shape[:lead], x_strides[:lead])
    kept = arrays.merged_stride(pl.in_shape[last + 1:], x_strides[last + 1:])
    if batch is None or kept is None:
        return None
    walk = KEPT if kept[0] > 1 else RESIZED
    if not _fast_shape(walk, dtype, ranks, taps, 32):
        return None
    out = [pl.out_shape[t.axis] for t in pl.tables]
    rows, n = (math.prod(out), kept[0]) if walk == KEPT else (math.prod(out[:-1]), out[-1])
    entries = sum(t.index.shape[0] for t in pl.tables)
    v = _outputs(dtype, ranks, taps, 32)
    grid, block = _fast_grid(n, batch[0] * rows, v)
    bits = dtypes.offset_bits(math.prod(pl.out_shape), arrays.index_reach(pl.in_shape, x_strides),
                             n + grid[0] * block[0] * v, grid[1] * grid[2] * block[1], entries)
    if bits == 64 and _outputs(dtype, ranks, taps, 64) != v:
        v = _outputs(dtype, ranks, taps, 64)
        grid, block = _fast_grid(n, batch[0] * rows, v)
    if grid[2] > launcher.MAX_GRID_YZ or not _fast_shape(walk, dtype, ranks, taps, bits):
        return None
    weight = None if taps == 1 else _weight_dtype(dtype)
    strides = tuple(x_strides[t.axis] for t in pl.tables)
    _, first, record = fast_table(pl, weight, strides, bits)
    g = launcher.parameter_struct(_FAST_GEOM, fill=_fill(pl), out=out, table=first,
                                  batch_stride=batch[1], rows=rows, batch_rows=batch[0] * rows,
                                  walk=n, walk_stride=kept[1])
    k = FAST[dtype.itemsize if taps == 1 else dtype.name, ranks, taps, walk, bits]
    return (launcher.LaunchSpec(k, (grid, block), math.prod(pl.out_shape), (g,)),
            FastTable(weight, strides, bits, first[-1] * record))


def _fast_grid(n: int, rows: int, v: int) -> launcher.Shape:
    """(grid, block) of a fast kernel over `rows` rows of `n` outputs, `v` per thread and
    iteration (see fast_args)."""
    bx, by = launcher.block_rows(numerics.cdiv(n, v))
    grid = (min(launcher.MAX_BLOCKS, numerics.cdiv(n, bx * v)),
            *launcher.grid_yz(numerics.cdiv(rows, by)))
    return grid, (bx, by, 1)


@functools.lru_cache(maxsize=256)
def kernel_args(pl: ResizePlan, dtype: np.dtype, x_strides: tuple[int, ...]
                ) -> launcher.LaunchSpec | None:
    """The generic kernel's launch (its tables before the spec's ResizeGeom struct) for an
    input of `dtype` with these element strides, or None if more than MAX_DIMS dims remain
    after merging."""
    dims = geometry(pl, x_strides)
    if dims is None:
        return None
    rank, g = dims
    bits = launcher.grid_offset_bits(math.prod(pl.out_shape),
                                     arrays.index_reach(pl.in_shape, x_strides),
                                     kernel_tables(pl)[0].size)
    k = NEAREST[dtype.itemsize, rank, bits] if pl.mode == "nearest" else \
        WEIGHTED[dtype.name, rank, bits]
    return launcher.LaunchSpec(k, None, math.prod(pl.out_shape), (g,))


