"""The kernel path of GridSample and AffineGrid: the parameter structs, instantiations and grids
of kernels/grid.cu for a plan (onnx_cupy.grid.plan), launched on the GPU or the emulator.

GridSample launches one thread per (output position, batch item, chunk of channels): positions on
grid x in a grid-stride loop, the batch items times the chunks on grid y, then z; channels are
split into chunks only where the positions alone would leave fewer than THREADS threads. 2-D
linear and nearest with X and grid of one float dtype and the grid's output positions walked by
one stride take `grid_sample_fast` (mode and padding compiled in); everything else the generic
`grid_sample_weighted` (linear, cubic) or `grid_sample_nearest` (every fixed-size dtype), which
read the rank, taps, padding and the grid's storage type at run time. All index with int where
every offset fits 32 bits, else with long long."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, numerics, records
from .plan import AFFINE, CUBIC_A, MAX_SPATIAL, SAMPLE, AffinePlan, SamplePlan

FAMILY = "grid"
PADDING = {"zeros": 0, "border": 1, "reflection": 2}       # GRID_ZEROS, GRID_BORDER, ...
GRID_KINDS = {"float16": 0, "bfloat16": 1, "float32": 2, "float64": 3}   # GRID_HALF, ...
ELEMENT_BYTES = (1, 2, 4, 8, 16)   # gs::element sizes: every fixed-size dtype nearest moves
FAST_MODES = ("nearest", "linear")
BUDGET = 120         # instructions per output of a float16/bfloat16/float32 fast path
THREADS = 1 << 16    # threads worth a launch: fewer positions than this split the channels
# blocks of launcher.BLOCK threads per SM that a kernel's registers must allow (its
# __launch_bounds__): the fast kernel 4 (at most 64 registers: 50 % occupancy), the generic ones 1
FAST_MIN_BLOCKS, GENERIC_MIN_BLOCKS = 4, 1

_AXES = ("out_shape", "grid_stride", "length", "x_stride")
AXIS_CONSTANTS = 8   # per spatial axis: plan.Axis.constants (GRID_AXIS_CONSTANTS)
_GEOM = np.dtype(
    [(f, "<i8") for f in ("points", "channels", "chunk", "chunks", "items", "rank", "taps",
                          "padding", "pad_first", "grid_kind", "x_stride_n",
                          "x_stride_c", "grid_stride_n", "grid_stride_k", "grid_stride_p")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in _AXES]
    + [("axis_f", "<f4", (AXIS_CONSTANTS * MAX_SPATIAL,)),
       ("axis_d", "<f8", (AXIS_CONSTANTS * MAX_SPATIAL,))], align=True)
_AFFINE_GEOM = np.dtype([("total", "<i8"), ("positions", "<i8"), ("theta_stride", "<i8", (3,)),
                         ("length", "<i8", (3,)), ("align_corners", "<i8")], align=True)

_NUMBERS = (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)
_FIXED = [np.dtype(t) for t in _NUMBERS if t != "bfloat16"] + \
    ([dtypes.BFLOAT16] if dtypes.BFLOAT16 else []) + \
    [np.dtype(t) for t in ("bool", "complex64", "complex128")]
_BY_SIZE = {n: tuple(d.name for d in _FIXED if d.itemsize == n) for n in ELEMENT_BYTES}
COORDINATES: dict[str, np.dtype] = {"float": np.dtype(np.float32), "double": np.dtype(np.float64)}


def _accumulate(dtype_name: str) -> records.Argument:
    """Acc: float for 16/32-bit floats, double for float64 and integers."""
    acc = dtypes.FLOAT_TYPES[dtype_name][1] if dtype_name in dtypes.FLOAT_TYPES else "double"
    return records.argument("accumulate", acc)


def _fast(dtype_name: str, mode: str, padding: str, bits: int) -> records.Instantiation:
    reflect = padding == "reflection"   # its fold (fmod) costs more than the budget allows
    return records.Instantiation(
        FAMILY, "grid_sample_fast",
        (records.storage(dtype_name), _accumulate(dtype_name),
         records.argument("mode", mode, f"gs::{mode.upper()}"),
         records.argument("padding", padding, f"gs::{padding.upper()}"), records.index(bits)),
        (SAMPLE,), (dtype_name,), grid_stride="x", outputs=1, fast=True,
        budget=None if reflect else records.fast_budget(BUDGET, bits),
        variant=f"2-D {mode}, {padding}")


# the kernels by (dtype name, mode, padding, bits); (element size, coordinates, bits); (dtype
# name, coordinates, bits); AffineGrid's by (dtype name, rank, bits)
FAST = {(t, m, p, b): _fast(t, m, p, b) for b in dtypes.INDEX_TYPES for t in dtypes.FLOAT_TYPES
        for m in FAST_MODES for p in PADDING}
NEAREST = {(n, f, b): records.Instantiation(
    FAMILY, "grid_sample_nearest",
    (records.Argument("storage", n, f"gs::element<{n}>"), records.argument("coordinates", f),
     records.index(b)), (SAMPLE,), _BY_SIZE[n], grid_stride="x", variant=f"{f} coordinates")
    for b in dtypes.INDEX_TYPES for f in COORDINATES for n in ELEMENT_BYTES}
WEIGHTED = {(t, f, b): records.Instantiation(
    FAMILY, "grid_sample_weighted",
    (records.storage(t), _accumulate(t), records.argument("coordinates", f), records.index(b)),
    (SAMPLE,), (t,), grid_stride="x", variant=f"{f} coordinates")
    for b in dtypes.INDEX_TYPES for f in COORDINATES for t in _NUMBERS}
AFFINE_GRID = {(t, r, b): records.Instantiation(
    FAMILY, "affine_grid",
    (records.storage(t), _accumulate(t), records.argument("rank", r), records.index(b)),
    (AFFINE,), (t,), grid_stride="x", variant=f"{r}-D", rank=r)
    for b in dtypes.INDEX_TYPES for t in dtypes.FLOAT_TYPES for r in (2, 3)}

loader.register(FAMILY, [*FAST.values(), *NEAREST.values(), *WEIGHTED.values(),
                         *AFFINE_GRID.values()],
                {"GridSampleGeom": _GEOM, "AffineGridGeom": _AFFINE_GEOM},
                defines={"GRID_MAXR": MAX_SPATIAL, "GRID_AXIS_CONSTANTS": AXIS_CONSTANTS,
                         **{f"GRID_{p.upper()}": c for p, c in PADDING.items()},
                         "GRID_HALF": GRID_KINDS["float16"], "GRID_BF16": GRID_KINDS["bfloat16"],
                         "GRID_FLOAT": GRID_KINDS["float32"],
                         "GRID_DOUBLE": GRID_KINDS["float64"],
                         "GRID_CUBIC_A": float(CUBIC_A).hex(),
                         "GRID_FAST_MIN_BLOCKS": FAST_MIN_BLOCKS,
                         "GRID_GENERIC_MIN_BLOCKS": GENERIC_MIN_BLOCKS})


def chunks(channels: int, points: int) -> tuple[int, int]:
    """(channels per thread, chunks): as few chunks as give THREADS threads with the positions."""
    wanted = max(1, min(channels, numerics.cdiv(THREADS, max(points, 1))))
    chunk = numerics.cdiv(max(channels, 1), wanted)
    return chunk, numerics.cdiv(max(channels, 1), chunk)


def _fast_kernel(pl: SamplePlan, dtype: np.dtype, grid_dtype: np.dtype,
                 grid_strides: tuple[int, ...], bits: int) -> records.Instantiation | None:
    """The fast instantiation where it applies (see the module docstring), else None."""
    if (pl.rank != 2 or pl.mode not in FAST_MODES or dtype != grid_dtype
            or dtype.name not in dtypes.FLOAT_TYPES
            or pl.coordinates != dtypes.accumulate_dtype(dtype)
            or arrays.merged_stride(pl.grid_shape[1:3], grid_strides[1:3]) is None
            or (pl.mode == "nearest" and pl.pad_before_rounding and pl.padding == "reflection")):
        return None
    return FAST[dtype.name, pl.mode, pl.padding, bits]


@functools.lru_cache(maxsize=256)
def sample_args(pl: SamplePlan, dtype: np.dtype, x_strides: tuple[int, ...],
                grid_dtype: np.dtype, grid_strides: tuple[int, ...]) -> launcher.LaunchSpec:
    """The launch of a GridSample plan for X of `dtype` and a grid of `grid_dtype`, with these
    element strides."""
    n_items, channels = pl.out_shape[:2]
    points = pl.points
    chunk, count = chunks(channels, points)
    items = n_items * count
    block = (loader.BLOCK, 1, 1)
    grid = (min(launcher.MAX_BLOCKS, numerics.cdiv(points, loader.BLOCK)),
            *launcher.grid_yz(items))
    if grid[2] > launcher.MAX_GRID_YZ:
        raise ValueError(f"{SAMPLE}: {items} batch items and channel chunks exceed the grid")
    bits = dtypes.offset_bits(arrays.index_reach(pl.x_shape, x_strides), math.prod(pl.out_shape),
                             arrays.index_reach(pl.grid_shape, grid_strides),
                             points + grid[0] * loader.BLOCK)
    merged = arrays.merged_stride(pl.grid_shape[1:-1], grid_strides[1:-1])
    geom = launcher.parameter_struct(
        _GEOM, points=points, channels=channels, chunk=chunk, chunks=count, items=items,
        rank=pl.rank, taps=pl.taps, padding=PADDING[pl.padding],
        pad_first=int(pl.pad_before_rounding), grid_kind=GRID_KINDS[grid_dtype.name],
        x_stride_n=x_strides[0], x_stride_c=x_strides[1],
        grid_stride_n=grid_strides[0], grid_stride_k=grid_strides[-1],
        grid_stride_p=merged[1] if merged else 0, out_shape=pl.out_shape[2:],
        grid_stride=grid_strides[1:-1], length=pl.x_shape[2:], x_stride=x_strides[2:],
        **{f"axis_{c[0]}": [v for a in pl.axes for v in a.constants(f)]
           for c, f in COORDINATES.items()})
    fast = _fast_kernel(pl, dtype, grid_dtype, grid_strides, bits)
    if fast is not None:
        return launcher.LaunchSpec(fast, (grid, block), 0, (geom,))
    coordinates = "double" if pl.coordinates == np.float64 else "float"
    if pl.mode == "nearest":
        return launcher.LaunchSpec(NEAREST[dtype.itemsize, coordinates, bits], (grid, block), 0,
                                   (geom,))
    return launcher.LaunchSpec(WEIGHTED[dtype.name, coordinates, bits], (grid, block), 0, (geom,))


def prepare_sample(pl: SamplePlan, device: Any, x: Any, grid: Any) -> kernel_call.Body:
    """The body of a GridSample plan on `device` for device arrays laid out as `x` and `grid`
    (whole-element strides): body(X, grid, out) -> grid_sample(X, grid)."""
    return _prepare(device, pl.out_shape, (x, grid), functools.partial(sample_args, pl))


def _prepare(device: Any, shape: tuple[int, ...], inputs: tuple[Any, ...],
             launch: Callable[..., launcher.LaunchSpec]) -> kernel_call.Body:
    """body(*inputs, out): the output of `shape` (the first input's dtype, on its device)
    allocated where `out` is None, then the launch `launch(dtype, element strides, ...)` gives
    for the inputs' layouts."""
    empty, dtype = device.empty, inputs[0].dtype   # the first input's: the call's key holds it
    if not math.prod(shape):
        return lambda *args: empty(shape, dtype) if args[-1] is None else args[-1]
    run = launcher.Launch(device, launch(*(v for a in inputs for v in (
        a.dtype, arrays.whole_element_strides(a)))))

    def body(*args: Any) -> Any:
        *xs, out = args
        Y = empty(shape, dtype) if out is None else out
        run(*xs, Y)
        return Y
    return body


@functools.lru_cache(maxsize=256)
def affine_args(pl: AffinePlan, dtype: np.dtype, theta_strides: tuple[int, ...]
                ) -> launcher.LaunchSpec:
    """The launch of an AffineGrid plan for theta of `dtype` with these element strides."""
    positions = math.prod(pl.lengths)
    total = pl.out_shape[0] * positions
    bits = launcher.grid_offset_bits(total, math.prod(pl.out_shape),
                               arrays.index_reach(pl.theta_shape, theta_strides))
    geom = launcher.parameter_struct(_AFFINE_GEOM, total=total, positions=positions,
                                     theta_stride=theta_strides, length=pl.lengths,
                                     align_corners=int(pl.align_corners))
    return launcher.LaunchSpec(AFFINE_GRID[dtype.name, pl.rank, bits], None, total, (geom,))


def prepare_affine(pl: AffinePlan, device: Any, theta: Any) -> kernel_call.Body:
    """The body of an AffineGrid plan on `device` for a theta laid out as `theta`:
    body(theta, out) -> affine_grid(theta)."""
    return _prepare(device, pl.out_shape, (theta,), functools.partial(affine_args, pl))
