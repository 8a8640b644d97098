"""Layouts the drawn configurations do not reach: inputs and outputs that start at every
element offset within 16 bytes (one at a time) and end exactly where their buffer ends, so that
the fast kernels' vector accesses and the tails of their per-thread groups meet the arrays' ends
at every alignment (Hardmax's 16-byte packs, whole and partial; the pooling and Resize fast
paths' 4 or 2 outputs per thread, at every remainder of the walked length; GridSample's fast
kernel, AffineGrid's and MaxUnpool's outputs); strided and reversed views (GridSample's X and
grid, walked by one merged stride or not); and long rows that take Hardmax's block-wide (shared
memory) reduction."""
from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_cupy as oc
from onnx_cupy.nn import functional

from .common import FLOAT_DTYPES, Case, wanted_ops

SEED = 20261127
OPS = ("Hardmax", "AveragePool", "LpPool", "MaxPool", "GlobalLpPool", "GlobalMaxPool", "Resize",
       "GridSample", "AffineGrid", "MaxUnpool")
VECTOR_BYTES = 16
QUICK_EVERY = 6      # the checker's representative subset
# of GridSample's, AffineGrid's and MaxUnpool's layouts: every 3rd float32 one (few
# instantiations to build)
QUICK_EVERY_FLOAT32 = 3
Call = Callable[[int], Any]   # a case's call, given its index (which seeds its values)


def placed(values: np.ndarray, offset: int) -> np.ndarray:
    """`values` (C order) copied into a buffer `offset` elements after its start, which ends
    where they end (the buffer itself starts 64-byte aligned)."""
    n = offset + values.size
    raw = np.empty(n * values.itemsize + 64, np.uint8)
    start = -raw.ctypes.data % 64
    buffer = raw[start:start + n * values.itemsize].view(values.dtype)
    view = buffer[offset:].reshape(values.shape)
    view[...] = values
    return view


def _values(index: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    rng = np.random.default_rng([SEED, index])
    if dtype.kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.uniform(-2, 3, shape).astype(dtype)


def _offsets(dtype: np.dtype) -> range:
    """Element offsets from 16-byte alignment: every one."""
    return range(max(1, VECTOR_BYTES // dtype.itemsize))


def _hardmax_row(index: int, dtype: np.dtype, shape: tuple[int, int], a: int, b: int) -> Any:
    x = placed(_values(index, shape, dtype), a)
    return oc.hardmax(x, axis=-1, out=placed(np.zeros(shape, dtype), b))


def _hardmax_view(index: int, dtype: np.dtype, shape: tuple[int, ...], axis: int,
                  view: tuple[slice, ...]) -> Any:
    return oc.hardmax(_values(index, shape, dtype)[view], axis=axis)


def _hardmax() -> list[tuple[str, str, Call]]:
    """Rows of n consecutive elements: whole 16-byte packs (n a multiple of the pack, X and Y
    aligned: the vector path) and every other alignment of X and of `out`; rows long enough for
    a group of a warp and of several warps (shared memory); then columns and strided views."""
    found: list[tuple[str, str, Call]] = []
    for dtype in FLOAT_DTYPES:
        pack = VECTOR_BYTES // (2 if dtype.itemsize == 2 else dtype.itemsize)
        for n, rows in ((pack, 3), (3 * pack, 5), (3 * pack + 1, 2), (64 * pack, 3),
                        (256 * pack, 2), (256 * pack + 3, 1), (1024 * pack, 1)):
            for a, b in [*((a, 0) for a in range(pack)), *((0, b) for b in range(1, pack))]:
                found.append(("Hardmax", f"rows-{dtype}-{rows}x{n}-x+{a}-y+{b}", functools.partial(
                    _hardmax_row, dtype=dtype, shape=(rows, n), a=a, b=b)))
    for dtype, (shape, axis, view) in itertools.product(
            (np.dtype(np.float16), np.dtype(np.float64)),
            [((6, 40, 7), 1, (slice(None), slice(None, None, -1), slice(None))),
             ((3, 700, 2), 1, (slice(None), slice(None), slice(None, None, 2))),
             ((5, 9, 33), 0, (slice(1, None), slice(None), slice(None)))]):
        found.append(("Hardmax", f"view-{dtype}-{'x'.join(map(str, shape))}-axis{axis}",
                      functools.partial(_hardmax_view, dtype=dtype, shape=shape, axis=axis,
                                        view=view)))
    return found


def _fast_pool(index: int, dtype: np.dtype, kernel: list[int], strides: list[int], width: int,
               a: int) -> Any:
    x = placed(_values(index, (2, 5, 7, width), dtype), a)
    return oc.average_pool(x, kernel_shape=kernel, strides=strides, pads=[1] * 4)


def _strided_pool(index: int, run: Callable[..., Any], view: tuple[Any, ...]) -> Any:
    x = _values(index, (3, 4, 9, 13), np.dtype(np.float32))[view]
    return run(x, kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1])


def _transposed_indices(index: int) -> Any:
    x = _values(index, (2, 9, 7, 3), np.dtype(np.float32)).transpose(0, 3, 1, 2)
    return oc.max_pool(x, kernel_shape=[2, 2], return_indices=True)


def _strided_plane(index: int, run: Callable[..., Any], view: tuple[Any, ...]) -> Any:
    return run(_values(index, (5, 6, 9, 8), np.dtype(np.float64))[view])


def _pools() -> list[tuple[str, str, Call]]:
    """The pooling fast path's last axis at every remainder of its outputs modulo 4 (fixed and
    run-time windows), inputs at every offset; strided and reversed views; many planes."""
    found: list[tuple[str, str, Call]] = []
    windows = (([2, 2], [2, 2]), ([3, 3], [1, 1]), ([3, 3], [2, 2]), ([2, 3], [1, 2]))
    for dtype in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        for (kernel, strides), width in itertools.product(windows, (8, 9, 10, 11)):
            for a in _offsets(dtype):
                found.append(("AveragePool", f"fast-{dtype}-k{kernel}-s{strides}-w{width}-x+{a}",
                              functools.partial(_fast_pool, dtype=dtype, kernel=kernel,
                                                strides=strides, width=width, a=a)))
    pooled: list[tuple[str, Callable[..., Any]]] = [("LpPool", oc.lp_pool),
                                                    ("MaxPool", oc.max_pool)]
    for (op, run), view in itertools.product(pooled, [(slice(None), slice(None, None, -1)),
                                                      (Ellipsis, slice(1, None, 2))]):
        found.append((op, f"strided-{op}-{view}", functools.partial(_strided_pool, run=run,
                                                                    view=view)))
    found.append(("MaxPool", "indices-transposed", _transposed_indices))
    planes: list[tuple[str, Callable[..., Any]]] = [("GlobalMaxPool", oc.global_max_pool),
                                                    ("GlobalLpPool", oc.global_lp_pool)]
    for (op, run), view in itertools.product(planes, [
            (slice(None), slice(None, None, -1), slice(1, None, 2)), (Ellipsis, slice(2, 3))]):
        found.append((op, f"strided-{op}-{view}", functools.partial(_strided_plane, run=run,
                                                                    view=view)))
    return found


def _walk(index: int, dtype: np.dtype, mode: str, width: int, a: int) -> Any:
    x = placed(_values(index, (2, 3, 5, 7), dtype), a)
    return oc.resize(x, sizes=[2, 3, 4, width], mode=mode)


def _channels(index: int, dtype: np.dtype, mode: str, channels: int) -> Any:
    x = placed(_values(index, (2, 5, 6, channels), dtype), 1)
    return oc.resize(x, scales=[1, 1.5, 0.7, 1], mode=mode)


def _resizes() -> list[tuple[str, str, Call]]:
    """The Resize fast paths' walked axis at every remainder modulo the outputs per iteration
    (the last resized axis, and channels of NHWC), inputs at every offset."""
    found: list[tuple[str, str, Call]] = []
    dtypes = [np.dtype(t) for t in ("uint8", "float16", "float32", "float64")]
    for dtype, mode in itertools.product(dtypes, ("nearest", "linear", "cubic")):
        for width in (12, 13, 14, 15):
            for a in _offsets(dtype):
                found.append(("Resize", f"walk-{dtype}-{mode}-w{width}-x+{a}", functools.partial(
                    _walk, dtype=dtype, mode=mode, width=width, a=a)))
        for channels in (5, 6, 7, 8):
            found.append(("Resize", f"channels-{dtype}-{mode}-c{channels}", functools.partial(
                _channels, dtype=dtype, mode=mode, channels=channels)))
    return found


def _positions(index: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Grid positions: uniform within 1.3 of the ends, NaN at one."""
    g = np.random.default_rng([SEED, index, 1]).uniform(-1.3, 1.3, shape)
    g.flat[index % g.size] = np.nan
    return g.astype(dtype)


GRID_X, GRID_POINTS = (2, 3, 5, 7), (2, 4, 6)   # X; the grid's leading axes (N, H_out, W_out)


def _grid_placed(index: int, dtype: np.dtype, mode: str, padding: str, a: int, b: int,
                 c: int) -> Any:
    x = placed(_values(index, GRID_X, dtype), a)
    g = placed(_positions(index, (*GRID_POINTS, 2), dtype), b)
    out = placed(np.zeros((*GRID_X[:2], *GRID_POINTS[1:]), dtype), c)
    return oc.grid_sample(x, g, mode=mode, padding_mode=padding, out=out)


# views (base shape, view of it) of X (2, 3, 5, 7) and of a grid (2, 4, 6, 2)
GRID_X_VIEWS: dict[str, tuple[tuple[int, ...], Callable[[np.ndarray], np.ndarray]]] = {
    "x-nhwc": ((2, 5, 7, 3), lambda v: v.transpose(0, 3, 1, 2)),
    "x-reversed": ((2, 3, 5, 7), lambda v: v[..., ::-1, :]),
    "x-stepped": ((2, 3, 5, 14), lambda v: v[..., ::2])}
GRID_VIEWS: dict[str, tuple[tuple[int, ...], Callable[[np.ndarray], np.ndarray]]] = {
    "grid-stepped-w": ((2, 4, 12, 2), lambda v: v[:, :, ::2]),            # merged: fast
    "grid-reversed-xy": ((2, 4, 6, 2), lambda v: v[..., ::-1]),
    "grid-xy-first": ((2, 2, 4, 6), lambda v: v.transpose(0, 2, 3, 1)),
    "grid-stepped-h": ((2, 8, 6, 2), lambda v: v[:, ::2])}                # not merged: generic


def _grid_view(index: int, x_view: str, grid_view: str, mode: str, padding: str,
               pytorch: bool) -> Any:
    (xs, x_of), (gs, g_of) = GRID_X_VIEWS[x_view], GRID_VIEWS[grid_view]
    x = x_of(_values(index, xs, np.dtype(np.float32)))
    g = g_of(_positions(index, gs, np.dtype(np.float32)))
    if pytorch:   # nearest pads, then rounds: not the fast kernel's order
        return functional.grid_sample(x, g, mode=mode, padding_mode=padding)
    return oc.grid_sample(x, g, mode=mode, padding_mode=padding)


def _affine_placed(index: int, dtype: np.dtype, rank: int, b: int) -> Any:
    size = [2, 3, 4, 5, 7][:2] + [4, 5, 7][3 - rank:]
    theta = _values(index, (2, rank, rank + 1), dtype)
    out = placed(np.zeros((2, *size[2:], rank), dtype), b)
    return oc.affine_grid(theta, size, out=out)


def _grids() -> list[tuple[str, str, Call]]:
    """GridSample's 2-D fast kernel (linear and nearest, X and grid of one float dtype) with X,
    the grid and the output at every offset, one at a time (each padding in turn); transposed,
    reversed and stepped views of X and of the grid (the walked positions merged into one stride
    or not: the fast or the generic kernel), also through the PyTorch layer (nearest pads, then
    rounds); AffineGrid's output at every offset."""
    found: list[tuple[str, str, Call]] = []
    paddings = itertools.cycle(("zeros", "border", "reflection"))
    for dtype, mode in itertools.product(FLOAT_DTYPES, ("linear", "nearest")):
        offsets = _offsets(dtype)
        for a, b, c in [*((a, 0, 0) for a in offsets), *((0, b, 0) for b in offsets[1:]),
                        *((0, 0, c) for c in offsets[1:])]:
            padding = next(paddings)
            found.append(("GridSample", f"grid-fast-{dtype}-{mode}-{padding}-x+{a}-grid+{b}-y+{c}",
                          functools.partial(_grid_placed, dtype=dtype, mode=mode,
                                            padding=padding, a=a, b=b, c=c)))
    for (x_view, grid_view), mode in itertools.product(
            itertools.product(GRID_X_VIEWS, GRID_VIEWS), ("linear", "nearest")):
        padding = next(paddings)
        for pytorch in (False, True) if mode == "nearest" else (False,):
            name = f"grid-{x_view}-{grid_view}-{mode}-{padding}{'-pytorch' if pytorch else ''}"
            found.append(("GridSample", name, functools.partial(
                _grid_view, x_view=x_view, grid_view=grid_view, mode=mode, padding=padding,
                pytorch=pytorch)))
    for dtype, rank in itertools.product(FLOAT_DTYPES, (2, 3)):
        for b in _offsets(dtype):
            found.append(("AffineGrid", f"affine-{dtype}-{rank}d-y+{b}", functools.partial(
                _affine_placed, dtype=dtype, rank=rank, b=b)))
    return found


def _unpool_placed(index: int, dtype: np.dtype, a: int, b: int, c: int,
                   output_shape: tuple[int, ...] | None) -> Any:
    shape = (2, 3, 4, 5)
    x = placed(_values(index, shape, dtype), a)
    at = np.random.default_rng([SEED, index, 2]).integers(0, 9 * 11, shape)   # repeats
    indices = placed(at.astype(np.int64), b)
    out = placed(np.zeros(output_shape or (2, 3, 9, 11), dtype), c)
    return oc.max_unpool(x, indices, output_shape, kernel_shape=[3, 3], strides=[2, 2], out=out)


def _unpool_view(index: int, dtype: np.dtype) -> Any:
    x = _values(index, (3, 2, 6, 5), dtype).transpose(1, 0, 2, 3)[:, :, ::2]
    at = np.random.default_rng([SEED, index, 2]).integers(0, 7 * 11, (2, 3, 6, 5))
    return oc.max_unpool(x, at[:, :, ::2], kernel_shape=[3, 3], strides=[2, 2])


def _unpools() -> list[tuple[str, str, Call]]:
    """MaxUnpool's scatter and gather with X, the indices and the output at every offset, one at
    a time, also where output_shape is larger than the unpooled shape (the scatter's merged rank
    above 1); strided views of X and of the indices."""
    found: list[tuple[str, str, Call]] = []
    for dtype, output_shape in itertools.product(FLOAT_DTYPES, (None, (2, 3, 10, 12))):
        offsets = _offsets(dtype)
        for a, b, c in [*((a, 0, 0) for a in offsets), (0, 1, 0),
                        *((0, 0, c) for c in offsets[1:])]:
            name = (f"unpool-{dtype}-x+{a}-indices+{b}-y+{c}"
                    f"{'-output_shape' if output_shape else ''}")
            found.append(("MaxUnpool", name, functools.partial(
                _unpool_placed, dtype=dtype, a=a, b=b, c=c, output_shape=output_shape)))
        if output_shape is None:
            found.append(("MaxUnpool", f"unpool-{dtype}-strided", functools.partial(
                _unpool_view, dtype=dtype)))
    return found


def _float32(call: Call) -> bool:
    """The call's dtype is float32 (views without one are)."""
    keywords = call.keywords if isinstance(call, functools.partial) else {}
    return bool(keywords.get("dtype", np.float32) == np.float32)


def cases(ops: set[str] | None = None) -> list[Case]:
    wanted = set(wanted_ops(OPS, ops))
    first = [*_hardmax(), *_pools(), *_resizes()]
    found = [(op, name, call, i % QUICK_EVERY == 0) for i, (op, name, call) in enumerate(first)]
    found += [(op, name, call, _float32(call) and j % QUICK_EVERY_FLOAT32 == 0)
              for j, (op, name, call) in enumerate([*_grids(), *_unpools()])]
    return [Case(op, f"layout-{name}", functools.partial(call, i), quick)
            for i, (op, name, call, quick) in enumerate(found) if op in wanted]
