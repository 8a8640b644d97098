"""The NumPy path's window passes along one spatial axis (numpy.py runs them, one per axis,
over chunks of N*C rows): the taps that land per axis, the steps of a window (slice
operations of np.add or np.maximum over a chunk), prepared once per layout, over whole rows
or the rows as one flat sequence where that takes fewer NumPy calls."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import plan

WHOLE_ROWS = 1 << 12   # fewest outputs of a pass worth the passes over whole rows (fewer: row by
                       # row, in fewer NumPy calls)

Tap = tuple[int, slice, slice]


def _landing(n: int, out: int, k: int, s: int, d: int, b: int) -> np.ndarray:
    """The taps j (ascending) that land inside [0, n) for some output o: the union over o of
    [ceil((b - o*s) / d), floor((n - 1 + b - o*s) / d)] within [0, k), at most
    min(k, out * ceil(n / d)) of them whatever k and the pads are (int64 holds every value:
    the plan keeps the window positions within 2**62). Where s <= n each interval reaches the
    next, and the union is found from the first and the last output alone."""
    if s <= n and out:   # each interval reaches the next: their union is one interval
        return np.arange(max(0, -(((out - 1) * s - b) // d)), min(k - 1, (n - 1 + b) // d) + 1,
                         dtype=np.int64)
    o = np.arange(out, dtype=np.int64)[::-1]   # both ends of the intervals ascend with this
    lo = np.maximum(-((o * s - b) // d), 0)
    hi = np.minimum((n - 1 + b - o * s) // d, k - 1)
    # each interval from past the previous ones' end: the union without overlaps
    start = np.maximum(lo, np.concatenate(([0], np.maximum.accumulate(hi)[:-1] + 1)))
    length = np.maximum(hi - start + 1, 0)
    first = np.repeat(start - np.concatenate(([0], np.cumsum(length)[:-1])), length)
    return first + np.arange(first.size, dtype=np.int64)


def _taps(n: int, out: int, k: int, s: int, d: int, b: int) -> list[Tap]:
    """(j, output slice, input slice) for each tap j whose positions o*s - b + j*d fall inside
    [0, n), j ascending (only the taps `_landing` yields are looked at)."""
    taps = []
    for j in _landing(n, out, k, s, d, b).tolist():
        shift = j * d - b
        lo = max(0, -(shift // s))           # first o with o*s + shift >= 0
        hi = min(out, -((shift - n) // s))   # first o with o*s + shift >= n
        if hi > lo:
            start = lo * s + shift
            taps.append((j, slice(lo, hi), slice(start, start + (hi - lo - 1) * s + 1, s)))
    return taps


@dataclass(frozen=True)
class Axis:
    """One spatial axis's window: input and output lengths, stride, the taps that land in the
    input in the order a window sum applies them (those covering the whole output first, then
    the rest, each group ascending), and how a sum starts: "pair" (dst = the first two, both
    covering the output), "copy" (the only one covering it) or "zero"."""

    n: int
    out: int
    s: int
    d: int
    b: int
    taps: tuple[Tap, ...]
    start: str

    @property
    def fused(self) -> bool:
        """A "pair" start of adjacent taps with more taps after it: the pair is taken from
        the adjacent pairs of the whole axis (one pass over whole rows), and the first tap
        after it added in the same pass as the pair is read."""
        return (self.start == "pair" and len(self.taps) > 2 and self.d == 1
                and self.taps[1][0] == self.taps[0][0] + 1)

    @property
    def covered(self) -> bool:
        """Every output has a tap inside the input."""
        hits = np.zeros(self.out, bool)
        for _, o, _ in self.taps:
            hits[o] = True
        return bool(hits.all())

    def region(self, c0: int, c1: int) -> tuple[Tap, ...]:
        """The taps restricted to outputs [c0, c1), their output slices relative to c0."""
        kept = []
        for j, o, i in self.taps:
            lo, hi = max(o.start, c0), min(o.stop, c1)
            if hi > lo:
                first = i.start + (lo - o.start) * self.s
                kept.append((j, slice(lo - c0, hi - c0),
                             slice(first, first + (hi - lo - 1) * self.s + 1, self.s)))
        return tuple(kept)

    def borders(self) -> list[tuple[int, int]]:
        """The output ranges that some tap misses (a flat pass writes them wrongly)."""
        lo = max((o.start for _, o, _ in self.taps), default=0)
        hi = min((o.stop for _, o, _ in self.taps), default=self.out)
        ranges = [(0, min(lo, self.out))] if lo > 0 else []
        if hi < self.out:
            ranges.append((max(hi, ranges[-1][1] if ranges else 0), self.out))
        return ranges


def _axis(n: int, out: int, k: int, s: int, d: int, b: int) -> Axis:
    taps = _taps(n, out, k, s, d, b)
    full = [t for t in taps if (t[1].start, t[1].stop) == (0, out)]
    rest = [t for t in taps if t not in full]
    start = "pair" if len(full) >= 2 else "copy" if full else "zero"
    return Axis(n, out, s, d, b, tuple(full + rest), start)


_WHOLE = [(slice(None),) * axis for axis in range(plan.MAX_SPATIAL + 2)]


def _at(axis: int, s: slice) -> tuple[slice, ...]:
    """The index of slice `s` along `axis`."""
    return _WHOLE[axis] + (s,)


# ---------------------------------------------------------------- window passes along one axis

DENSE_STRIDE = 4   # largest stride of a dense maximum (it computes stride times the outputs)
SRC, DST, PAIRS = 0, 1, 2   # the buffers a pass's steps read and write (PAIRS: see Axis.fused)
Ref = tuple[int, tuple[slice, ...]]            # (buffer, index)
Step = tuple["Ref | None", "Ref | None", Ref]  # out = op(a, b); b None: a copy, a None: a fill


def _within(outer: slice, inner: slice, n: int) -> slice:
    """The slice `inner` of the slice `outer` of a length-n sequence, as one slice."""
    r = range(n)[outer][inner]
    return slice(r.start, r.start + len(r) * r.step, r.step)


def _span(s: slice) -> slice:
    """Every position from the first of the slice `s` (step > 0) to its last."""
    if s.stop <= s.start:
        return slice(s.start, s.start)
    return slice(s.start, s.start + (s.stop - s.start - 1) // s.step * s.step + 1)


def _steps(taps: tuple[Tap, ...], start: str, axis: int, n: int, out: int, fused: bool,
           window: slice = slice(None), dense: bool = False) -> list[Step]:
    """The steps of a window along `axis` (n long in the source, `out` in the destination)
    over `taps` in order, into the destination's `window` (the taps' output slices relative to
    it), started as Axis.start says ("zero": op's identity where no tap lands; `fused`: the
    pair taken from the pairs of adjacent elements of the whole axis, see Axis.fused).
    `dense` (a fused or adjacent pair start): the pair's taps and the next tap combined at
    every position between their first and last, in place among the pairs, whose strided
    positions are then copied: the same operations on the same operands where they count,
    in contiguous loops (NumPy's floating maximum over strided operands is several times
    slower than over contiguous ones and a strided copy together)."""
    def dst(o: slice) -> Ref:
        return DST, _at(axis, _within(window, o, out))

    steps: list[Step] = []
    rest = taps
    pairs = (SRC, _at(axis, slice(0, n - 1))), (SRC, _at(axis, slice(1, n))), \
        (PAIRS, _at(axis, slice(None)))
    if dense and not fused:   # the adjacent pair of taps 0 and 1 from the pairs
        (_, o0, i0) = taps[0]
        steps += [pairs, ((PAIRS, _at(axis, _within(i0, o0, n - 1))), None, dst(o0))]
        rest = taps[2:]
    elif fused:
        (_, _, i0), (_, o, i) = taps[0], taps[2]
        steps.append(pairs)
        at = _within(i0, o, n - 1)
        if dense:
            here = (PAIRS, _at(axis, _span(at)))
            steps += [(here, (SRC, _at(axis, _span(i))), here),
                      ((PAIRS, _at(axis, at)), None, dst(o))]
        else:
            steps.append(((PAIRS, _at(axis, at)), (SRC, _at(axis, i)), dst(o)))
        for span in (slice(0, o.start), slice(o.stop, None)):
            if range(out)[window][span]:
                steps.append(((PAIRS, _at(axis, _within(i0, span, n - 1))), None, dst(span)))
        rest = taps[3:]
    elif start == "pair":
        steps.append(((SRC, _at(axis, rest[0][2])), (SRC, _at(axis, rest[1][2])),
                      dst(slice(None))))
        rest = rest[2:]
    elif start == "copy":
        steps.append(((SRC, _at(axis, rest[0][2])), None, dst(slice(None))))
        rest = rest[1:]
    else:
        steps.append((None, None, dst(slice(None))))
    steps.extend((dst(o), (SRC, _at(axis, i)), dst(o)) for _, o, i in rest)
    return steps


@dataclass(frozen=True)
class WindowPass:
    """op's window along one axis of a chunk of given shape, prepared: its steps over the
    chunk's source, destination and, where fused, the adjacent pairs of the whole axis (shaped
    `pairs`). A `flat` pass runs its steps over the rows as one flat sequence, then its
    `border` steps (over the chunk's shape) redo the outputs whose taps wrap into a
    neighbouring row; where the source or destination is not C-contiguous, `nd` runs instead."""

    op: np.ufunc
    identity: Any
    steps: tuple[Step, ...]
    pairs: tuple[int, ...] | None
    flat: bool = False
    border: tuple[Step, ...] = ()
    nd: WindowPass | None = None

    def __call__(self, src: np.ndarray, dst: np.ndarray) -> None:
        if not self.flat:
            self._run(self.steps, src, dst, self.pairs)
        elif src.flags.c_contiguous and dst.flags.c_contiguous:
            self._run(self.steps, src.reshape(-1), dst.reshape(-1), self.pairs)
            self._run(self.border, src, dst, None)
        else:
            assert self.nd is not None
            self.nd(src, dst)

    def _run(self, steps: tuple[Step, ...], src: np.ndarray, dst: np.ndarray,
             pairs: tuple[int, ...] | None) -> None:
        bufs = (src, dst, None if pairs is None else np.empty(pairs, dst.dtype))
        op = self.op
        for a, b, (o, oi) in steps:
            out = bufs[o][oi]   # type: ignore[index]
            if a is None:
                out.fill(self.identity)
            elif b is None:
                np.copyto(out, bufs[a[0]][a[1]])   # type: ignore[index]
            else:
                op(bufs[a[0]][a[1]], bufs[b[0]][b[1]], out=out)   # type: ignore[index]


def _flat(ax: Axis, tap: Tap, rows: int) -> Tap:
    """`tap` over `rows` rows as one flat sequence (input rows of ax.s * ax.out elements):
    every output whose tap position lies in the flat input."""
    j, o, i = tap
    shift = i.start - o.start * ax.s          # position of output 0's tap in its row
    total_in, total_out = rows * ax.s * ax.out, rows * ax.out
    lo = max(0, -(shift // ax.s))
    hi = min(total_out, -((shift - total_in) // ax.s))
    return j, slice(lo, hi), slice(lo * ax.s + shift,
                                   lo * ax.s + shift + (hi - lo - 1) * ax.s + 1, ax.s)


def prepare_pass(op: np.ufunc, ax: Axis, axis: int, src: tuple[int, ...], dtype: np.dtype,
                 last: bool) -> WindowPass:
    """op's window (np.add: a sum, np.maximum) along `axis` of a chunk of shape `src` in
    `dtype`: over whole rows (Axis.fused) where the pass is large enough; the last axis as one
    flat sequence where its rows allow it (an input row ax.s output rows long)."""
    identity = 0 if op is np.add else max_identity(dtype)
    n = src[axis]
    size = math.prod(src[:axis]) * ax.out * math.prod(src[axis + 1:])   # the pass's outputs
    fused = ax.fused and size >= WHOLE_ROWS
    pairs = (*src[:axis], n - 1, *src[axis + 1:]) if fused else None
    nd = WindowPass(op, identity, tuple(_steps(ax.taps, ax.start, axis, n, ax.out, fused)), pairs)
    if not (last and size >= WHOLE_ROWS and n == ax.s * ax.out and ax.taps):
        return nd
    flat = tuple(_flat(ax, t, size // ax.out) for t in ax.taps)
    total = math.prod(src)
    border = [step for c0, c1 in ax.borders()
              for step in _steps(ax.region(c0, c1), ax.start, axis, n, ax.out, False,
                                 slice(c0, c1))]
    # floating maxima over strided operands: densely (see _steps), where the first two taps
    # are adjacent and cover every output
    dense = (op is np.maximum and dtype.kind not in "iub" and 1 < ax.s <= DENSE_STRIDE
             and ax.d == 1
             and ax.start == "pair" and ax.taps[1][0] == ax.taps[0][0] + 1)
    return WindowPass(op, identity, tuple(_steps(flat, ax.start, 0, total, size, ax.fused,
                                           dense=dense)),
                (total - 1,) if ax.fused or dense else None, True, tuple(border), nd)


def max_identity(dtype: np.dtype) -> np.generic:
    """MaxPool's start value and empty-window result: -inf, or an integer dtype's minimum."""
    if np.issubdtype(dtype, np.integer):
        return dtype.type(np.iinfo(dtype).min)
    return dtype.type(-np.inf)
