"""The NumPy path of AveragePool/LpPool/MaxPool. AveragePool and LpPool by separable window sums:
one pass per spatial axis (outermost first, so every pass but the last adds contiguous rows),
each pass one strided slice-add per kernel tap, over chunks of N*C rows so that temporaries stay
cache-sized.

  S = sum over taps j_1 (axis 1) of ... sum over taps j_m (axis m) of x[..., w_1(j_1), ..., w_m(j_m)]
  AveragePool: Y = S / count,  LpPool: Y = S^(1/p) with x replaced by |x|^p

The accumulation type is the kernels' (float32 for 16- and 32-bit floats); summing axis by axis
rounds differently from the kernels' row-major order over each window (by about one ulp).

MaxPool visits the window's taps in the kernels' order (axis 0 outermost, taps ascending), one
strided slice per tap combination, and keeps a tap where it wins as oc::max_wins decides
(greater, or NaN): the kernels' values and indices, bit for bit.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import arrays, dtypes
from ..core.calls import Call
from . import plan

if TYPE_CHECKING:
    from .plan import GlobalPlan, PoolPlan

CHUNK_BYTES = 1 << 21  # input chunk, in the accumulation type

Tap = tuple[int, slice, slice]


def _taps(n: int, out: int, k: int, s: int, d: int, b: int) -> list[Tap]:
    """(j, output slice, input slice) for each tap j whose positions o*s - b + j*d fall inside
    [0, n), j ascending."""
    taps = []
    for j in range(k):
        shift = j * d - b
        lo = max(0, -(shift // s))           # first o with o*s + shift >= 0
        hi = min(out, -((shift - n) // s))   # first o with o*s + shift >= n
        if hi > lo:
            start = lo * s + shift
            taps.append((j, slice(lo, hi), slice(start, start + (hi - lo - 1) * s + 1, s)))
    return taps


@functools.cache
def _half_table() -> np.ndarray:
    """Every float16 bit pattern converted to float32 by NumPy (exact; 256 KiB)."""
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)


def widen(src: np.ndarray, acc: np.dtype) -> np.ndarray:
    """A copy of `src` in the accumulation type: float16 by table look-up (the same bits as
    `astype`, about twice as fast), others by `astype`."""
    if src.dtype == np.float16 and acc == np.float32 and src.flags.c_contiguous:
        return np.take(_half_table(), src.view(np.uint16))
    return src.astype(acc)


def _window_sum(src: np.ndarray, axis: int, taps: list[Tap], dst: np.ndarray) -> None:
    """dst = sum over `taps` of src's slices along `axis` (0 where no tap lands). Taps covering
    the whole output go first, so the first two need no zero fill."""
    def at(s: slice) -> tuple[slice, ...]:
        return (slice(None),) * axis + (s,)

    n = dst.shape[axis]
    full = [t for t in taps if (t[1].start, t[1].stop) == (0, n)]
    rest = [t for t in taps if t not in full]
    if len(full) >= 2:
        np.add(src[at(full[0][2])], src[at(full[1][2])], out=dst)
        full = full[2:]
    elif full:
        np.copyto(dst, src[at(full.pop()[2])])
    else:
        dst.fill(0)
    for _, o, i in full + rest:
        dst[at(o)] += src[at(i)]


def prepare(pl: PoolPlan, x: np.ndarray, indices: bool = False) -> Call:
    """The call of plan `pl` on inputs laid out as `x`: call(x, out) -> y, or (y, indices) with
    `indices` (int64, MaxPool's winners' indices); into `out` when given (C-contiguous)."""
    int64 = np.dtype(np.int64)

    def call(x: np.ndarray, out: np.ndarray | None) -> Any:
        y = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", pl.op)
        where = arrays.output(None, x, pl.out_shape, int64, "numpy", pl.op) if indices \
            else None
        if y.size:
            if pl.op == "MaxPool":
                _max_pool(pl, x, y, where)
            else:
                _pool(pl, x, y)
        return y if where is None else (y, where)
    return call


def max_identity(dtype: np.dtype) -> np.generic:
    """MaxPool's start value and empty-window result: -inf, or an integer dtype's minimum."""
    if np.issubdtype(dtype, np.integer):
        return dtype.type(np.iinfo(dtype).min)
    return dtype.type(-np.inf)


def _max_pool(pl: PoolPlan, x: np.ndarray, y: np.ndarray, indices: np.ndarray | None) -> None:
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    rows, nd = pl.in_shape[0] * pl.in_shape[1], pl.nd
    xs, ys = x.reshape(rows, *in_sp), y.reshape(rows, *out_sp)
    ids = None if indices is None else indices.reshape(rows, *out_sp)
    chunk = max(1, CHUNK_BYTES // (max(1, math.prod(in_sp)) * x.dtype.itemsize))
    taps = [_taps(*a) for a in zip(in_sp, out_sp, pl.kernel, pl.strides, pl.dilations,
                                   pl.pads_begin)]
    plane, steps = math.prod(in_sp), pl.index_strides

    def position(a: int, j: int, o: slice) -> np.ndarray:
        """Index contribution of axis a's tap j over output slice o, shaped to broadcast."""
        pos = (np.arange(o.start, o.stop) * pl.strides[a] - pl.pads_begin[a]
               + j * pl.dilations[a]) * steps[a]
        return pos.reshape((-1,) + (1,) * (nd - 1 - a))

    for r in range(0, rows, chunk):
        rs = slice(r, min(rows, r + chunk))
        ys[rs] = max_identity(x.dtype)
        if ids is not None:
            ids[rs] = -1
            first = (np.arange(rs.start, rs.stop, dtype=np.int64) * plane).reshape(
                (-1,) + (1,) * nd)
        for combo in itertools.product(*taps):
            o = (slice(None), *[t[1] for t in combo])
            at_x = (rs, *[t[2] for t in combo])
            v = xs[at_x]
            m = ys[rs][o]
            with np.errstate(invalid="ignore"):
                win = (v > m) | np.isnan(v)   # oc::max_wins: greater, or NaN
            if ids is not None:
                best = ids[rs][o]
                win |= best < 0
                at = first + sum((position(a, j, sl) for a, (j, sl, _) in enumerate(combo)),
                                 np.zeros((), np.int64))
                np.copyto(best, np.broadcast_to(at, best.shape), where=win)
            np.copyto(m, v, where=win)


def _pool(pl: PoolPlan, x: np.ndarray, y: np.ndarray) -> None:
    acc_t = dtypes.accumulate_dtype(x.dtype)
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    rows = pl.in_shape[0] * pl.in_shape[1]
    xs = x.reshape(rows, *in_sp)
    ys = y.reshape(rows, *out_sp)
    chunk = max(1, CHUNK_BYTES // (max(1, int(np.prod(in_sp))) * acc_t.itemsize))
    taps = [_taps(*a) for a in zip(in_sp, out_sp, pl.kernel, pl.strides, pl.dilations,
                                   pl.pads_begin)]
    div = None if pl.lp else plan.divisor(pl, acc_t)
    convert = x.dtype != acc_t
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for r in range(0, rows, chunk):
            src = xs[r:r + chunk]
            if convert:
                src = widen(src, acc_t)
            if pl.lp:
                src = np.abs(src, out=src) if convert else np.abs(src)
                if pl.p == 2:
                    np.square(src, out=src)
                elif pl.p != 1:
                    np.power(src, acc_t.type(pl.p), out=src)
            # axis by axis, outermost first: (b, O1, I2, ..., Im), ..., (b, O1, ..., Om)
            for i, axis_taps in enumerate(taps):
                last = i == len(taps) - 1
                shape = (src.shape[0], *out_sp[:i + 1], *in_sp[i + 1:])
                dst = ys[r:r + chunk] if last and not convert else np.empty(shape, acc_t)
                _window_sum(src, i + 1, axis_taps, dst)
                src = dst
            if pl.lp:
                if pl.p == 2:
                    np.sqrt(src, out=src)
                elif pl.p != 1:
                    np.power(src, acc_t.type(1.0 / pl.p), out=src)
            else:
                src /= div
            if convert:
                ys[r:r + chunk] = src


def prepare_global(pl: GlobalPlan, x: np.ndarray) -> Call:
    """The call of a global pooling `pl` (a reduction over the spatial axes, in the
    accumulation type; an empty plane gives NaN, 0 or -inf as an empty window does): call(x,
    out) -> y, into `out` when given."""
    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", pl.op)
        if y.size:
            _global(pl, x, y)
        return y
    return call


def _global(pl: GlobalPlan, x: np.ndarray, y: np.ndarray) -> None:
    acc_t = dtypes.accumulate_dtype(x.dtype)
    planes = x.reshape(*pl.in_shape[:2], pl.length)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if pl.op == "GlobalMaxPool":
            r = planes.max(axis=2) if pl.length else np.full(
                pl.in_shape[:2], max_identity(x.dtype), x.dtype)
        else:
            v = widen(planes, acc_t)
            if pl.op == "GlobalLpPool":
                v = np.abs(v) ** acc_t.type(pl.p) if pl.p != 1 else np.abs(v)
            r = v.sum(axis=2, dtype=acc_t)
            if pl.op == "GlobalLpPool":
                r = np.sqrt(r) if pl.p == 2 else r ** acc_t.type(1.0 / pl.p)
            else:
                r = r / acc_t.type(pl.length)
        y.reshape(pl.in_shape[:2])[...] = r
