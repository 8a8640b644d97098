"""The NumPy path of Resize: the plan's per-axis (index, weight) tables applied one axis at a time
(the tensor-product weights factor per axis). Along each axis one gather takes every tap, the
weights scale it, and the taps' terms are added in tap order: NumPy's elementwise multiply and
add, each rounded (no BLAS, whose kernels pick their order and fused multiply-adds by the
machine and the array's shape), so a plane's bits are the same on every machine and in any
batch. Shrinking axes go
first, so temporaries stay within the larger of input and output; the work runs over chunks of
output rows so that they also stay within CHUNK_BYTES.

Nearest is a gather per axis (a.take(index)), the chunk's last one written straight into the
output. Along the last axis, where the index column repeats each element of a run of the input
k times (index[o] = start + o // k: nearest at an integer scale, as Upsample and the usual Resize
modes give; the column decides, not the attributes) and k elements fit one unsigned integer
(itemsize * k = 2, 4 or 8), one integer multiply copies each element's bits k times instead:
v * (1 + 2^b + ... + 2^(b(k-1))), b = 8 * itemsize, holds v in each of its k slots (no carry,
bits and byte order kept: NaN payloads, -0.0 and every dtype without objects alike). Along the
other axes a gather copies whole rows already (np.repeat and broadcast copies were no faster)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..core import dtypes
from ..core.calls import Call
from ..core.numerics import round_saturate

if TYPE_CHECKING:
    from .plan import AxisTable, ResizePlan

CHUNK_BYTES = 1 << 21  # largest temporary of one chunk
PLAIN_BYTES = 1 << 13     # a nearest pass on fewer bytes in and out: a plain gather (fewest calls)


@dataclass(frozen=True)
class _Taps:
    """One resized axis's table as the NumPy path reads it (made once per prepared call): its
    indices and weights tap-major, as a pass gathers and scales them (row k: tap k of every
    output coordinate), the weights in the work dtype, and the coordinates that
    tf_crop_and_resize extrapolates (None: none)."""

    axis: int
    index: np.ndarray                # int64 [taps, m], C-contiguous
    weight: np.ndarray | None        # [taps, m] in the work dtype (None: nearest)
    outside: np.ndarray | None

    def rows(self, r: slice) -> _Taps:
        """The table of output rows `r` only."""
        return _Taps(self.axis, np.ascontiguousarray(self.index[:, r]),
                     None if self.weight is None else np.ascontiguousarray(self.weight[:, r]),
                     None if self.outside is None else self.outside[r])


def _taps(axis: int, index: np.ndarray, weight: np.ndarray | None,
          outside: np.ndarray | None) -> _Taps:
    """The tap-major table of a plan's (index, weight), each [m, taps]."""
    return _Taps(axis, np.ascontiguousarray(index.T),
                 None if weight is None else np.ascontiguousarray(weight.T),
                 None if outside is None or not outside.any() else outside)


Pass = Callable[[np.ndarray], np.ndarray]
Into = Callable[[np.ndarray, np.ndarray], object]   # a pass writing its result into a given array


def _repeat(column: np.ndarray) -> tuple[int, int]:
    """(start, k) where column[o] = start + o // k for every o (k >= 1, dividing the column's
    length), else (0, 0)."""
    m = len(column)
    if not m:
        return 0, 0
    start = int(column[0])
    k = int(np.argmax(column != start)) or m
    if m % k or not np.array_equal(column, start + np.arange(m) // k):
        return 0, 0
    return start, k


def _nearest(column: np.ndarray, axis: int, shape: tuple[int, ...], dtype: np.dtype
             ) -> tuple[Pass, Into | None]:
    """The pass a.take(column, axis=axis) on arrays of `shape` and `dtype`, and the same pass
    writing into a C-contiguous array of its result's shape (see the module's docstring; a
    small pass: a plain gather, and None)."""
    lanes = math.prod(shape[:axis]) * math.prod(shape[axis + 1:])
    if max(shape[axis], len(column)) * lanes * dtype.itemsize < PLAIN_BYTES:
        return (lambda a: a.take(column, axis=axis)), None
    start, k = _repeat(column)
    n = len(column) // k if k else 0
    width = dtype.itemsize * k
    into: Into
    if axis == len(shape) - 1 and k > 1 and width in (2, 4, 8) and not dtype.hasobject:
        narrow, wide = np.dtype(f"u{dtype.itemsize}"), np.dtype(f"u{width}")
        magic = wide.type(sum(1 << (8 * dtype.itemsize * j) for j in range(k)))

        def into(a: np.ndarray, out: np.ndarray) -> None:   # out: C-contiguous
            w = out.view(wide)
            w[...] = a[..., start:start + n].view(narrow)
            w *= magic
    else:
        def into(a: np.ndarray, out: np.ndarray) -> None:
            np.take(a, column, axis=axis, out=out, mode="clip")   # valid indices: no buffer
    out_shape = shape[:axis] + (len(column),) + shape[axis + 1:]

    def fresh(a: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dtype)
        into(a, out)
        return out
    return fresh, into


def _along(t: _Taps, axis: int, shape: tuple[int, ...], dtype: np.dtype, work: np.dtype | None
           ) -> tuple[Pass, Into | None, tuple[int, ...], np.dtype]:
    """The pass that resizes an array of `shape` and `dtype` along `axis` (sum over taps k of
    weight[:, k] * a.take(index[:, k]) in the dtype `work`, the taps added in order, each
    product and sum rounded: NumPy's elementwise multiply and add, no BLAS and no fused
    multiply-add, so the same bits on every machine and whatever the batch; None: nearest, a
    plain gather),
    the same pass writing into a given array (None: none), its result's shape and dtype:
    everything the shapes decide chosen here, once."""
    taps, m = t.index.shape
    out_shape = shape[:axis] + (m,) + shape[axis + 1:]
    if work is None or t.weight is None:
        step, into = _nearest(t.index[0], axis, shape, dtype)
        return step, into, out_shape, dtype
    size = math.prod(shape)
    # convert the smaller of the input and what the taps gather
    first = dtype != work and size <= m * taps * (size // shape[axis])
    gathered = work if first else dtype
    # every tap's gather at once, (..., taps, m, ...), and each tap's weights along `axis`
    index = t.index
    weights = t.weight.reshape((taps, m) + (1,) * (len(shape) - axis - 1))
    tap = [(slice(None),) * axis + (k,) for k in range(taps)]

    def by_tap(a: np.ndarray) -> np.ndarray:
        if first:
            a = a.astype(work)
        terms = a.take(index, axis=axis)
        if gathered != work:
            terms = terms.astype(work)
        terms *= weights   # each term rounded
        # the sum of the terms, in tap order
        acc: np.ndarray = terms[tap[0]].copy() if taps == 1 else terms[tap[0]] + terms[tap[1]]
        for k in tap[2:]:
            acc += terms[k]
        return acc
    return by_tap, None, out_shape, work


def _order(t: AxisTable, n: int) -> tuple[float, int]:
    """Shrinking axes first, growing ones last; among equal ratios the gathers along inner axes
    (element by element, the costly kind) run where the array is smallest."""
    ratio = t.index.shape[0] / n
    return ratio, t.axis if ratio <= 1 else -t.axis


@dataclass(frozen=True)
class _Chunk:
    """One chunk of the output (see `_chunks`): X's part it reads, the passes in order (the
    last one writing into the output's part where it can: `into`), the output's part, and the
    tables whose tf_crop_and_resize coordinates get the fill."""

    source: tuple[int | slice, ...]
    passes: tuple[Pass, ...]
    into: Into | None
    target: tuple[int | slice, ...]
    rounded: bool                         # an integer output: rounded and saturated
    fills: tuple[tuple[slice | np.ndarray, ...], ...]

    def run(self, x: np.ndarray, y: np.ndarray, fill: np.ndarray | None) -> None:
        a = x[self.source]
        for step in self.passes:
            a = step(a)
        out = y[self.target]   # C-contiguous: y is, and the target fixes leading axes only
        if self.into is not None:
            self.into(a, out)
        else:
            out[...] = round_saturate(a, y.dtype) if self.rounded else a
        for at in self.fills:
            out[at] = fill


def _chunk(pl: ResizePlan, dtype: np.dtype, outer: tuple[int, ...], rows: slice,
           first: _Taps | None, others: list[_Taps], work: np.dtype | None) -> _Chunk:
    """y[outer][rows]: the leading axes fixed at `outer` (none of them resized), then the next
    axis restricted to output rows `rows` first (its table `first`, already restricted; None:
    not resized), then the `others`, shrinking ones first."""
    lead = len(outer)
    shape, kind = pl.in_shape[lead:], dtype
    passes, into = [], None
    if first is None:
        shape = (rows.stop - rows.start,) + shape[1:]
    for t, axis in ([] if first is None else [(first, 0)]) + [(t, t.axis - lead) for t in others]:
        step, into, shape, kind = _along(t, axis, shape, kind, work)
        passes.append(step)
    if into is not None:
        passes.pop()
    tables = ([] if first is None else [first]) + others
    return _Chunk(outer + (rows,) if first is None else outer, tuple(passes), into,
                  outer + (rows,),
                  kind != dtype and dtype.name in dtypes.INT_TYPES,
                  tuple((slice(None),) * (t.axis - lead) + (t.outside,) for t in tables
                        if t.outside is not None))


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16- and 32-bit floats, float64 for float64 and integers."""
    if dtype.name in dtypes.FLOAT_TYPES:
        return dtypes.accumulate_dtype(dtype)
    return np.dtype(np.float64)


def _chunks(pl: ResizePlan, itemsize: int, nearest: bool) -> tuple[int, int]:
    """(lead, rows): a chunk is `rows` output rows of axis `lead` at one index of the axes before
    it (never resized ones): lead is the first axis whose rows fit CHUNK_BYTES, at most the first
    resized axis. A row's bytes count every tap of the widest filter (one gather holds them);
    nearest's last pass writes into Y (or is small), so there they count X's row and the results
    of the passes before the last."""
    first = min(t.axis for t in pl.tables)
    taps = max(t.taps for t in pl.tables)

    def row(lead: int) -> int:
        if not nearest:
            return max(math.prod(pl.in_shape[lead + 1:]),
                       math.prod(pl.out_shape[lead + 1:])) * itemsize * taps
        shape, widest = list(pl.in_shape), math.prod(pl.in_shape[lead + 1:])
        inner = sorted((t for t in pl.tables if t.axis > lead),
                       key=lambda t: _order(t, pl.in_shape[t.axis]))
        for t in inner[:-1]:
            shape[t.axis] = t.index.shape[0]
            widest = max(widest, math.prod(shape[lead + 1:]))
        return widest * itemsize

    lead = next((d for d in range(first) if row(d) <= CHUNK_BYTES), first)
    return lead, max(1, CHUNK_BYTES // row(lead))


def prepare(pl: ResizePlan, x: np.ndarray) -> Call:
    """The call of plan `pl` on inputs laid out as `x`: call(x, out) -> resize(x), into `out` when
    given (C-contiguous) or a new array; a plan that maps every axis onto itself copies x. The
    chunks and the tables in the form each pass reads are made here, once."""
    chunks: list[_Chunk] = []
    dtype = np.dtype(x.dtype)
    work = None if pl.mode == "nearest" else _work_dtype(dtype)
    if pl.tables:
        lead, rows = _chunks(pl, dtype.itemsize if work is None else work.itemsize, work is None)
        tables = {t.axis: _taps(t.axis, t.index, None if work is None else
                                t.weight.astype(work), t.outside) for t in pl.tables}
        first = tables.pop(lead, None)
        others = [tables[t.axis] for t in sorted(
            (t for t in pl.tables if t.axis != lead), key=lambda t: _order(t, pl.in_shape[t.axis]))]
        m = pl.out_shape[lead]
        for outer in np.ndindex(*pl.out_shape[:lead]):
            for r0 in range(0, m, rows):
                r = slice(r0, min(r0 + rows, m))
                chunks.append(_chunk(pl, dtype, outer, r, None if first is None else
                                     first.rows(r), others, work))


    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y: np.ndarray = np.empty(pl.out_shape, x.dtype) if out is None else out
        if not y.size:
            return y
        if not pl.tables:
            y[...] = x
            return y
        with np.errstate(over="ignore", invalid="ignore"):
            for chunk in chunks:
                chunk.run(x, y, pl.fill)
        return y
    return call
