"""The NumPy path of Resize: the plan's per-axis (index, weight) tables applied one axis at a time (the
tensor-product weights factor per axis). Along an axis with inner axes behind it, one gather
collects every tap and a batched matmul weighs them; along the last axis, per tap, a gather scaled
by its weights. Shrinking axes go first, so temporaries stay within the larger of input and output;
the work runs over chunks of output rows so that they also stay within CHUNK_BYTES."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core import arrays, dtypes
from ..core.calls import Call
from ..core.numerics import round_saturate

if TYPE_CHECKING:
    from .plan import AxisTable, ResizePlan

CHUNK_BYTES = 1 << 21  # largest temporary of one chunk


@dataclass(frozen=True)
class _Taps:
    """One resized axis's table as the NumPy path reads it (made once per prepared call): its
    indices per tap and as one list, its weights in the work dtype, and the coordinates that
    tf_crop_and_resize extrapolates (None: none)."""

    axis: int
    index: np.ndarray                # int64 [m, taps]
    flat: np.ndarray                 # index.reshape(-1)
    columns: tuple[np.ndarray, ...]  # index[:, k], contiguous
    weight: np.ndarray | None        # [m, taps] in the work dtype (None: nearest)
    scales: tuple[np.ndarray, ...]   # weight[:, k], contiguous
    outside: np.ndarray | None

    def rows(self, r: slice) -> _Taps:
        """The table of output rows `r` only."""
        weight = None if self.weight is None else self.weight[r]
        return _taps(self.axis, self.index[r], weight,
                     None if self.outside is None else self.outside[r])


def _taps(axis: int, index: np.ndarray, weight: np.ndarray | None,
          outside: np.ndarray | None) -> _Taps:
    cols = tuple(np.ascontiguousarray(index[:, k]) for k in range(index.shape[1]))
    scales = () if weight is None else tuple(np.ascontiguousarray(weight[:, k])
                                             for k in range(weight.shape[1]))
    return _Taps(axis, index, index.reshape(-1), cols, weight, scales,
                 None if outside is None or not outside.any() else outside)


def _along(a: np.ndarray, axis: int, t: _Taps, work: np.dtype | None) -> np.ndarray:
    """Resize `a` along `axis`: sum over taps k of weight[:, k] * a.take(index[:, k]) in the
    dtype `work` (None: nearest, a plain gather)."""
    if work is None or t.weight is None:
        return a.take(t.columns[0], axis=axis)
    m, taps = t.index.shape
    if a.dtype != work and a.size <= m * taps * (a.size // a.shape[axis]):
        a = a.astype(work)  # convert the smaller of the input and what the taps gather
    if axis < a.ndim - 1:  # whole rows of the inner axes: the taps of an output row as a matmul
        before, after = math.prod(a.shape[:axis]), math.prod(a.shape[axis + 1:])
        g = a.take(t.flat, axis=axis).reshape(before, m, taps, after)
        if g.dtype != work:
            g = g.astype(work)
        out: np.ndarray = np.matmul(t.weight[:, None, :], g)
        return out.reshape(a.shape[:axis] + (m,) + a.shape[axis + 1:])
    acc: np.ndarray | None = None
    for column, scale in zip(t.columns, t.scales):   # acc = sum of the taps' terms, in order
        term = a.take(column, axis=axis)
        if term.dtype != work:
            term = term.astype(work)
        term *= scale
        if acc is None:
            acc = term
        else:
            acc += term
    assert acc is not None
    return acc


def _order(t: AxisTable, n: int) -> tuple[float, int]:
    """Shrinking axes first, growing ones last; among equal ratios the gathers along inner axes
    (element by element, the costly kind) run where the array is smallest."""
    ratio = t.index.shape[0] / n
    return ratio, t.axis if ratio <= 1 else -t.axis


def _chunk(x: np.ndarray, y: np.ndarray, outer: tuple[int, ...], rows: slice,
           first: _Taps | None, others: list[_Taps], work: np.dtype | None,
           fill: np.ndarray | None) -> None:
    """y[outer][rows]: the leading axes fixed at `outer` (none of them resized), then the next
    axis restricted to output rows `rows` first (its table `first`, already restricted; None:
    not resized), then the `others`, shrinking ones first."""
    lead = len(outer)
    a = (x[outer + (rows,)] if first is None else _along(x[outer], 0, first, work))
    for t in others:
        a = _along(a, t.axis - lead, t, work)
    out = y[outer + (rows,)]
    if a.dtype == y.dtype or y.dtype.name not in dtypes.INT_TYPES:
        out[...] = a
    else:
        out[...] = round_saturate(a, y.dtype)
    for t in ([] if first is None else [first]) + others:
        if t.outside is not None:
            out[(slice(None),) * (t.axis - lead) + (t.outside,)] = fill


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


def prepare(pl: ResizePlan, dtype: np.dtype) -> Call:
    """The call of plan `pl` on inputs of `dtype`: call(x, out) -> resize(x), into `out` when
    given (C-contiguous) or a new array; a plan that maps every axis onto itself copies x. The
    chunks and the tables in the form each pass reads are made here, once."""
    steps: list[tuple[tuple[int, ...], slice, _Taps | None]] = []
    others: list[_Taps] = []
    work = None if pl.mode == "nearest" else _work_dtype(dtype)
    if pl.tables:
        lead, rows = _chunks(pl, dtype.itemsize if work is None else work.itemsize)
        tables = {t.axis: _taps(t.axis, t.index, None if work is None else
                                t.weight.astype(work), t.outside) for t in pl.tables}
        first = tables.pop(lead, None)
        others = [tables[t.axis] for t in sorted(
            (t for t in pl.tables if t.axis != lead), key=lambda t: _order(t, pl.in_shape[t.axis]))]
        m = pl.out_shape[lead]
        for outer in np.ndindex(*pl.out_shape[:lead]):
            for r0 in range(0, m, rows):
                r = slice(r0, min(r0 + rows, m))
                steps.append((outer, r, None if first is None else first.rows(r)))

    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y: np.ndarray = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", pl.op)
        if not y.size:
            return y
        if not pl.tables:
            y[...] = x
            return y
        with np.errstate(over="ignore", invalid="ignore"):
            for outer, r, first in steps:
                _chunk(x, y, outer, r, first, others, work, pl.fill)
        return y
    return call
