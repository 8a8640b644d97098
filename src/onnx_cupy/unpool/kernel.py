"""The kernel path of MaxUnpool: records, parameter struct and launches of kernels/unpool.cu for
a plan (onnx_cupy.unpool.plan), on the GPU or the emulator.

Two grid-stride launches on the current stream: `unpool_scatter` over X records, per element of
Y, 1 + the position in X of the last element of X landing there (an atomic maximum into a zeroed
buffer of unsigned words, so that the result does not depend on the order threads run in:
duplicate indices resolve as onnxruntime's sequential loop resolves them); `unpool_gather` over
Y writes each element from its winner, or 0. The scatter is instantiated per merged rank of the
index space (1 where the output is the unpooled shape; one more per axis whose length differs),
and once more for PyTorch's per-plane indices (rank 1, plus the start of each element's plane:
a multiply-shift division by X's elements per plane with int offsets); the gather per dtype;
both take int offsets (and unsigned int words) where X's and Y's sizes fit, else long long. The
kernels every call runs (the gather, the scatter of rank 1 and, with int offsets, the per-plane
one) are held to BUDGET instructions per element in the kernel report, as the other families'
fast paths.

MaxUnpool is a family of its own rather than a kernel of the pool family: it shares no code with
pooling's window gathers (a scatter by index, then a gather by winner), and a separate source
keeps each compile of a pool instantiation (all of pool.cu) and of an unpool one small.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, records, workspaces
from ..pool.plan import MAX_SPATIAL
from .plan import OP, UnpoolPlan

FAMILY = "unpool"
MAX_RANK = MAX_SPATIAL + 2   # the most merged axes of an index space: every axis of X
RANKS = tuple(range(1, MAX_RANK + 1))
# X's dtypes: floats, bfloat16 where ml_dtypes is installed
DTYPES = tuple(dtypes.FLOAT_TYPES)
# instructions per element of the launch's loop that the float16/bfloat16/float32 kernels every
# call runs (the gathers, the scatter of rank 1) are held to, as the families' fast paths
BUDGET = 30
# the winner words of each offset width (oc::offset_of<I>::type)
WINNER_DTYPES: dict[int, np.dtype] = {32: np.dtype(np.uint32), 64: np.dtype(np.uint64)}

_GEOM = np.dtype(
    [(f, "<i8") for f in ("count", "index_total", "total")]
    + [(f, "<i8", (MAX_RANK,)) for f in ("extent", "stride")]
    + [("by_extent", "<u4", (MAX_RANK, 2))]
    + [(f, "<i8") for f in ("plane_count", "plane_total")] + [("by_plane_count", "<u4", (2,))],
    align=True)


def _scatter(bits: int, rank: int, per_plane: bool) -> records.Instantiation:
    """The scatter (it reads the int64 indices, whatever X's dtype); held to the budget where
    it divides nothing in its loop: rank 1, and per plane with int offsets (multiply-shift)."""
    fast = rank == 1 and (not per_plane or bits == 32)
    plane = records.argument("per_plane", per_plane, "true" if per_plane else "false")
    return records.Instantiation(
        FAMILY, "unpool_scatter", (records.storage("int64"), records.index(bits),
                                   records.argument("rank", rank), plane),
        (OP,), DTYPES, grid_stride="x", fast=fast,
        budget=records.fast_budget(BUDGET, bits) if fast else None,
        variant="per (n, c) plane" if per_plane else "per merged rank", rank=rank)


# the scatter by (bits, merged rank) for the global index spaces, and by bits per plane
SCATTER = {(b, r): _scatter(b, r, False) for b in dtypes.INDEX_TYPES for r in RANKS}
PLANE_SCATTER = {b: _scatter(b, 1, True) for b in dtypes.INDEX_TYPES}
# the gather by (dtype, bits), held to the budget
GATHER = {(t, b): records.Instantiation(
    FAMILY, "unpool_gather", (records.storage(t), records.index(b)), (OP,), (t,),
    grid_stride="x", fast=True, budget=records.fast_budget(BUDGET, b))
    for t in DTYPES for b in dtypes.INDEX_TYPES}

# the gradient (a gather by index) by (element bytes, bits, merged rank, per plane): elements
# moved as unsigned words of their size
WORDS = {2: "uint16", 4: "uint32", 8: "uint64"}
GRADIENT = {(size, b, r, per_plane): records.Instantiation(
    FAMILY, "unpool_grad", (records.storage(word), records.storage("int64"), records.index(b),
                            records.argument("rank", r),
                            records.argument("per_plane", per_plane,
                                             "true" if per_plane else "false")),
    (f"{OP} gradient",), tuple(t for t in DTYPES if np.dtype(t).itemsize == size),
    grid_stride="x",
    variant="gradient, " + ("per (n, c) plane" if per_plane else "per merged rank"), rank=r)
    for size, word in WORDS.items() for b in dtypes.INDEX_TYPES
    for r, per_plane in ((*((r, False) for r in RANKS), (1, True)))}

loader.register(FAMILY, [*SCATTER.values(), *PLANE_SCATTER.values(), *GATHER.values(),
                         *GRADIENT.values()],
                {"UnpoolGeom": _GEOM},
                defines={"UNPOOL_MAXR": MAX_RANK})


@functools.lru_cache(maxsize=512)
def geometry(pl: UnpoolPlan) -> tuple[int, np.ndarray]:
    """(offset bits, the UnpoolGeom struct) of a plan: 32-bit offsets (unsigned int winners,
    multiply-shift divisors) where X's and Y's sizes and the index space fit them, else 64-bit
    ones. Per plane: the planes' element counts of X and Y (the kernels add
    (e // plane_count) * plane_total); 1 and 0 otherwise."""
    count, total = math.prod(pl.in_shape), math.prod(pl.out_shape)
    bits = launcher.grid_offset_bits(max(count, total), pl.index_total, count + 1)
    extents = [n for n, _ in pl.remap]
    planes = (math.prod(pl.in_shape[2:]), math.prod(pl.out_shape[2:])) if pl.per_plane else \
        (1, 0)
    dividers = {"by_extent": [launcher.divider(n) for n in (
        *extents, *(1,) * (MAX_RANK - len(extents)))],
        "by_plane_count": launcher.divider(planes[0])} if bits == 32 else {}
    return bits, launcher.parameter_struct(
        _GEOM, count=count, index_total=pl.index_total, total=total, extent=extents,
        stride=[s for _, s in pl.remap], plane_count=planes[0], plane_total=planes[1],
        **dividers)


@functools.lru_cache(maxsize=512)
def kernel_args(pl: UnpoolPlan, dtype: np.dtype
                ) -> tuple[launcher.LaunchSpec, launcher.LaunchSpec, np.dtype]:
    """(scatter, gather, the winner buffer's dtype) of a plan and X's dtype, the launches
    grid-stride over X's and Y's elements with their UnpoolGeom struct (`geometry`)."""
    count, total = math.prod(pl.in_shape), math.prod(pl.out_shape)
    bits, g = geometry(pl)
    scatter = PLANE_SCATTER[bits] if pl.per_plane else SCATTER[bits, len(pl.remap)]
    return (launcher.LaunchSpec(scatter, None, count, (g,)),
            launcher.LaunchSpec(GATHER[dtype.name, bits], None, total, (g,)), WINNER_DTYPES[bits])


def prepare(pl: UnpoolPlan, device: Any, x: Any, indices: Any) -> kernel_call.Body:
    """The body of plan `pl` on `device` for C-contiguous device arrays laid out as `x` and
    `indices`: body(X, indices, out) -> max_unpool(X, indices), indices outside
    [0, pl.index_total) skipped. The winners go to the workspace: a call allocates only its
    output."""
    size, count = math.prod(pl.out_shape), math.prod(pl.in_shape)
    empty, dtype = device.empty, x.dtype   # X's dtype: the key holds it
    if not size:
        return lambda X, indices, out: empty(pl.out_shape, dtype) if out is None else out
    if not count or not pl.index_total:
        def zeros(X: Any, indices: Any, out: Any) -> Any:
            Y = empty(pl.out_shape, dtype) if out is None else out
            arrays.zero(Y)
            return Y
        return zeros
    scatter, gather, words = kernel_args(pl, np.dtype(x.dtype))
    scattering, gathering = launcher.Launch(device, scatter), launcher.Launch(device, gather)
    space = workspaces.Scratch(device, ((size,), words), zeroed=(0,))

    def body(X: Any, indices: Any, out: Any) -> Any:
        Y = empty(pl.out_shape, dtype) if out is None else out
        (winner,) = space()   # zeroed
        scattering(indices, winner)
        gathering(X, winner, Y)
        return Y
    return body


def prepare_gradient(pl: UnpoolPlan, device: Any, x: Any, indices: Any, dy: Any
                     ) -> kernel_call.Body:
    """The body of MaxUnpool's gradient on `device` for C-contiguous arrays laid out as (x,
    indices, dy): body(X, indices, dY, out) -> dX, dX[e] = dY at the offset I[e] names (0 for
    an index outside [0, pl.index_total)), by unpool_grad over X's elements."""
    count = math.prod(pl.in_shape)
    empty, dtype = device.empty, x.dtype   # X's dtype: the key holds it
    if not count:
        return lambda X, indices, dY, out: empty(pl.in_shape, dtype) if out is None else out
    bits, g = geometry(pl)
    rank = 1 if pl.per_plane else len(pl.remap)
    step = launcher.Launch(device, launcher.LaunchSpec(
        GRADIENT[np.dtype(dtype).itemsize, bits, rank, pl.per_plane], None, count, (g,)))

    def body(X: Any, indices: Any, dY: Any, out: Any) -> Any:
        dX = empty(pl.in_shape, dtype) if out is None else out
        step(indices, dY, dX)
        return dX
    return body
