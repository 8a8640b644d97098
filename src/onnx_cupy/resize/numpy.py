"""The NumPy path of Resize: the plan's per-axis (index, weight) tables applied one axis at a time (the
tensor-product weights factor per axis). Along an axis with inner axes behind it, one gather
collects every tap and a batched matmul weighs them; along the last axis, per tap, a gather scaled
by its weights. Shrinking axes go first, so temporaries stay within the larger of input and output;
the work runs over chunks of output rows so that they also stay within CHUNK_BYTES."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import arrays, dtypes
from ..core.calls import Call
from ..core.numerics import round_saturate
from .plan import OP

if TYPE_CHECKING:
    from .plan import AxisTable, ResizePlan

CHUNK_BYTES = 1 << 21  # largest temporary of one chunk


def _along(a: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray,
           work: np.dtype | None) -> np.ndarray:
    """Resize `a` along `axis`: sum over taps k of weight[:, k] * a.take(index[:, k]) in the
    dtype `work` (None: nearest, a plain gather)."""
    if work is None:
        return np.take(a, index[:, 0], axis=axis)
    m, taps = index.shape
    if a.dtype != work and a.size <= m * taps * (a.size // a.shape[axis]):
        a = a.astype(work)  # convert the smaller of the input and what the taps gather
    w = weight.astype(work)
    if axis < a.ndim - 1:  # whole rows of the inner axes: the taps of an output row as a matmul
        before, after = math.prod(a.shape[:axis]), math.prod(a.shape[axis + 1:])
        g = np.take(a, index.reshape(-1), axis=axis).reshape(before, m, taps, after)
        if g.dtype != work:
            g = g.astype(work)
        out: np.ndarray = np.matmul(w[:, None, :], g)
        return out.reshape(a.shape[:axis] + (m,) + a.shape[axis + 1:])

    def tap(k: int) -> np.ndarray:
        term = np.take(a, index[:, k], axis=axis)
        if term.dtype != work:
            term = term.astype(work)
        term *= w[:, k]
        return term

    acc = tap(0)
    for k in range(1, taps):
        acc += tap(k)
    return acc


def _order(t: AxisTable, n: int) -> tuple[float, int]:
    """Shrinking axes first, growing ones last; among equal ratios the gathers along inner axes
    (element by element, the costly kind) run where the array is smallest."""
    ratio = t.index.shape[0] / n
    return ratio, t.axis if ratio <= 1 else -t.axis


def _chunk(pl: ResizePlan, x: np.ndarray, y: np.ndarray, outer: tuple[int, ...],
           rows: slice, work: np.dtype | None) -> None:
    """y[outer][rows]: the leading axes fixed at `outer` (none of them resized), then the next
    axis restricted to output rows `rows` first, then the rest, shrinking ones first."""
    lead = len(outer)
    tables = {t.axis - lead: t for t in pl.tables}
    first = tables.pop(0, None)
    a = (x[outer + (rows,)] if first is None
         else _along(x[outer], 0, first.index[rows], first.weight[rows], work))
    for axis, t in sorted(tables.items(), key=lambda at: _order(at[1], pl.in_shape[at[1].axis])):
        a = _along(a, axis, t.index, t.weight, work)
    out = y[outer + (rows,)]
    if a.dtype == y.dtype or y.dtype.name not in dtypes.INT_TYPES:
        out[...] = a
    else:
        out[...] = round_saturate(a, y.dtype)
    for t in pl.tables:
        outside = t.outside[rows] if t.axis == lead else t.outside
        if outside.any():
            out[(slice(None),) * (t.axis - lead) + (outside,)] = pl.fill


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16- and 32-bit floats, float64 for float64 and integers."""
    if dtype.name in dtypes.FLOAT_TYPES:
        return dtypes.accumulate_dtype(dtype)
    return np.dtype(np.float64)


def _chunks(pl: ResizePlan, itemsize: int) -> tuple[int, int]:
    """(lead, rows): a chunk is `rows` output rows of axis `lead` at one index of the axes before
    it (never resized ones): lead is the first axis whose rows fit CHUNK_BYTES, at most the first
    resized axis. A row's bytes count every tap of the widest filter (one gather holds them)."""
    first = min(t.axis for t in pl.tables)
    taps = max(t.taps for t in pl.tables)

    def row(lead: int) -> int:
        return max(math.prod(pl.in_shape[lead + 1:]),
                   math.prod(pl.out_shape[lead + 1:])) * itemsize * taps

    lead = next((d for d in range(first) if row(d) <= CHUNK_BYTES), first)
    return lead, max(1, CHUNK_BYTES // row(lead))


def prepare(pl: ResizePlan) -> Call:
    """The call of plan `pl`: call(x, out) -> resize(x), into `out` when given (C-contiguous) or
    a new array; a plan that maps every axis onto itself copies x."""
    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y: np.ndarray = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", OP)
        if y.size:
            _resize(pl, x, y)
        return y
    return call


def _resize(pl: ResizePlan, x: np.ndarray, y: np.ndarray) -> None:
    if not pl.tables:
        y[...] = x
        return
    work = None if pl.mode == "nearest" else _work_dtype(x.dtype)
    lead, rows = _chunks(pl, x.dtype.itemsize if work is None else work.itemsize)
    m = pl.out_shape[lead]
    with np.errstate(over="ignore", invalid="ignore"):
        for outer in np.ndindex(*pl.out_shape[:lead]):
            for r0 in range(0, m, rows):
                _chunk(pl, x, y, outer, slice(r0, min(r0 + rows, m)), work)
