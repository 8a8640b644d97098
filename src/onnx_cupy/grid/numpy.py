"""The NumPy path of GridSample and AffineGrid, from the plans (onnx_cupy.grid.plan), vectorized
over output positions, spatial axes, taps and channels.

GridSample (`prepare_sample`). What depends on the plan and the dtypes alone is made once per
prepared call: each axis' constants in the coordinate type, stacked along an axes dimension so
that one NumPy operation treats every axis; the layout X is read through and the matrix that
turns tap positions into offsets in it; the chunks. A call copies X into that layout, (C, N,
D1', ..., Dr') in the storage type (linear and cubic: the accumulate type, converted once),
where each axis has one zero slab after it when a tap can fall outside X (zeros padding, and
linear's second tap); nearest and cubic with border or reflection padding read X as it is,
copied only where its layout does not fit. A broadcast X (stride-0 axes) is laid out from its
distinct values alone (`_Sampler._compact`), never widened. Then per chunk of output positions
(several batch items, or part of one):

  coordinates  x = (fma(g + 1, scale, addend) - shift) * half of all r axes as one (r,
               positions) array, each step rounded in the coordinate type, operation for
               operation as the kernels compute it (the multiply-add rounded once: a plain
               product where every addend is 0); padded (border: clipped; reflection:
               folded exactly, or as PyTorch where the axes `fold`, then clipped) before or
               after rounding (nearest), or per tap (cubic)
  taps         positions (taps, r, positions) and weights in the coordinate type (cubic: the
               Keys polynomials of t + 1, t, 1 - t, 2 - t); zeros padding clips the positions to
               [-1, n] (NaN to -1); one matrix product (exact: integers below 2^24 in float32,
               else in float64) gives every tap combination's flat offset, innermost axis' tap
               first. A position n is a zero slab; -1 reaches one too, the slab after the row
               before (or, at the very start, the end of the layout: NumPy's take counts
               negative indices from the end), so a tap outside X reads 0
  sum          one gather of every tap of every channel (in chunks of channels where one
               position's taps over all channels outgrow a chunk), then per axis, innermost
               first, the taps weighed (weight * value) and added in order, in the accumulate
               type: the kernels' terms in the kernels' order, so that the emulated kernels
               give the same bits.

A call of one small chunk keeps its scratch and its per-axis constants at the chunk's full
shape: at a few hundred elements an operation between arrays of one shape costs about half a
broadcasting one, or one on a transposed view. For the same reason it gathers every channel's
taps at once through offsets into the whole layout (the offset matrix has a row per tap
combination and channel), combination first, so that each tap's values are a contiguous block,
and spreads the weights over the values they weigh with one gather: each weighed sum is then
an operation between contiguous arrays of one shape. Copies are assignments (a[...] = b casts
as np.copyto(..., casting="unsafe") does, at about half its call's cost)."""
from __future__ import annotations

import dataclasses
import functools
import math
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import arrays, dtypes, numerics
from ..core.calls import Call
from ..core.numerics import round_saturate
from .plan import CUBIC_A, FLOAT32_EXACT, base

if TYPE_CHECKING:
    from .plan import AffinePlan, SamplePlan

# bytes of a chunk's temporaries (coordinates, taps, offsets, the gathered values): about a
# quarter of a core's L2 cache
CHUNK_BYTES = 1 << 19
# a call of one chunk whose scratch (`_small_bytes`) takes at most this many bytes keeps it
# (per thread) and its constants at the chunk's full shape
SMALL_BYTES = 1 << 18


def accumulate_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16- and 32-bit floats, float64 for float64 and integers."""
    if dtype.name in dtypes.FLOAT_TYPES:
        return dtypes.accumulate_dtype(dtype)
    return np.dtype(np.float64)


def zero(dtype: np.dtype) -> Any:
    """The value zeros padding gives: the dtype's zero, the empty string for strings."""
    return "" if dtype.kind in "OUS" else np.zeros((), dtype)[()]


# ---------------------------------------------------------------- GridSample

def _stacked(values: list[Any], dtype: Any, shape: tuple[int, ...], full: bool) -> np.ndarray:
    """One value per grid component, for arrays of `shape` ([taps,] r, positions): an array of
    that shape (`full`) or one that broadcasts to it."""
    a = np.array(values, dtype).reshape(*(1,) * (len(shape) - 2), len(values), 1)
    return np.broadcast_to(a, shape).copy() if full else a


class _Axes:
    """The per-axis constants of a plan in the coordinate type, in the grid's component order
    (the innermost axis first), for arrays of `shape` (see `_stacked`): scale, shift, half; lo,
    hi and last (n - 1) of the image; the reflection's period 2 (hi - lo), lo - span, hi +
    span, 2 lo and 2 hi; 0, 1 and 2; and [lowest, n], the positions zeros padding keeps (n and
    past: the zero slabs after the axis)."""

    def __init__(self, pl: SamplePlan, shape: tuple[int, ...], full: bool, lowest: int) -> None:
        f = pl.coordinates
        axes = pl.axes[::-1]

        def stacked(values: list[Any]) -> np.ndarray:
            return _stacked(values, f, shape, full)

        scale, shift, half, lo, hi, last, addend, _ = (list(v) for v in
                                                       zip(*(a.constants(f) for a in axes)))
        span = [h - lo_ for lo_, h in zip(lo, hi)]
        self.scale, self.shift, self.half = stacked(scale), stacked(shift), stacked(half)
        self.addend = stacked(addend)
        self.fused = any(a.fused for a in axes)
        self.fold = any(a.fold for a in axes)   # (a plan's axes fold alike)
        self.lo, self.hi, self.last = stacked(lo), stacked(hi), stacked(last)
        self.period = stacked([s + s for s in span])
        self.below = stacked([lo_ - s for lo_, s in zip(lo, span)])
        self.above = stacked([h + s for h, s in zip(hi, span)])
        self.lo2 = stacked([lo_ + lo_ for lo_ in lo])
        self.hi2 = stacked([h + h for h in hi])
        self.zero, self.one, self.two = (stacked([v] * len(axes)) for v in (0, 1, 2))
        self.lowest, self.n = stacked([lowest] * len(axes)), stacked([a.n for a in axes])


def _clip(x: np.ndarray, k: _Axes) -> None:
    """x clipped to [0, n - 1] in place, NaN to 0 (fmax, fmin)."""
    np.fmax(x, k.zero, out=x)
    np.fmin(x, k.last, out=x)


def _fold(x: np.ndarray, k: _Axes, under: np.ndarray) -> None:
    """x reflected as PyTorch's 2-D kernel computes it (plan.Axis.fold), in place, then clipped
    to [0, n - 1]; `under`: scratch of x's shape and type."""
    np.subtract(x, k.lo, out=x)
    np.abs(x, out=x)
    np.divide(x, k.period, out=under)
    np.trunc(under, out=under)
    np.multiply(under, k.period, out=under)
    np.subtract(x, under, out=x)
    np.subtract(k.period, x, out=under)
    np.minimum(x, under, out=x)
    np.add(x, k.lo, out=x)
    _clip(x, k)


def _reflect(x: np.ndarray, k: _Axes, under: np.ndarray, over: np.ndarray) -> None:
    """x outside [lo, hi] reflected at lo and hi until inside, in place (exactly: fmod by the
    period 2 (hi - lo), one period added or taken away, one mirror image), then clipped to
    [0, n - 1]; `under` and `over`: masks of x's shape. Inside [lo, hi] the fold leaves x as it
    is (fmod by a period longer than |x|); where lo = hi, x = lo = 0 folds to NaN, which the
    clip makes 0 too."""
    np.fmod(x, k.period, out=x)
    np.less(x, k.below, out=under)
    np.greater(x, k.above, out=over)
    np.add(x, k.period, out=x, where=under)
    np.subtract(x, k.period, out=x, where=over)
    np.less(x, k.lo, out=under)
    np.greater(x, k.hi, out=over)
    np.subtract(k.lo2, x, out=x, where=under)
    np.subtract(k.hi2, x, out=x, where=over)
    _clip(x, k)


def _cubic_weights(t: np.ndarray, w: np.ndarray, u: np.ndarray) -> None:
    """Into w (4, ...): the Keys weights (a = -0.75) of the taps at -1, 0, 1, 2 from floor(x),
    for t = x - floor(x), in t's type, as the kernels evaluate them: the outer taps'
    ((a u - 5a) u + 8a) u - 4a of u = t + 1 and 2 - t, the inner taps' ((a + 2) u - (a + 3)) u u
    + 1 of u = t and 1 - t (u: scratch of w's shape)."""
    f = t.dtype.type
    a = f(CUBIC_A)
    np.add(t, f(1), out=u[0])
    u[1] = t
    np.subtract(f(1), t, out=u[2])
    np.subtract(f(2), t, out=u[3])
    outer, uo = w[::3], u[::3]
    np.multiply(uo, a, out=outer)
    outer -= f(5) * a
    outer *= uo
    outer += f(8) * a
    outer *= uo
    outer -= f(4) * a
    inner, ui = w[1:3], u[1:3]
    np.multiply(ui, a + f(2), out=inner)
    inner -= a + f(3)
    inner *= ui
    inner *= ui
    inner += f(1)


def _offset_matrix(taps: int, strides: tuple[int, ...], per_tap: bool, item: int | None,
                   dtype: Any, channels: int = 1, channel: int = 0) -> np.ndarray:
    """The matrix whose product with a chunk's position rows gives the flat offsets of its tap
    combinations: row i for the combination (t[0], ..., t[r-1]) of index i (t[j] the tap of
    grid component j: the innermost axis' first, the most significant); `strides` in that
    order. The position rows: per tap (taps, r) (`per_tap`: column t[j] * r + j holds
    component j's stride), or the first tap's (r) (column j; the ones row's column adds
    sum_j t[j] stride[j]); then a row of ones; then, where `item` (the batch item's size in
    the layout) is given, the positions' batch items. With `channels` > 1, each combination's
    row repeated per channel c (row i * channels + c), its ones column adding c * `channel`
    (the channel's size in the layout): the offsets of every channel's taps."""
    r = len(strides)
    ones = (taps if per_tap else 1) * r
    m = np.zeros((taps ** r, ones + 1 + (item is not None)), dtype)
    for i, combo in enumerate(np.ndindex(*(taps,) * r)):
        for j, t in enumerate(combo):
            m[i, t * r + j if per_tap else j] = strides[j]
            m[i, ones] += 0 if per_tap else t * strides[j]
    if item is not None:
        m[:, ones + 1] = item
    m = np.repeat(m, channels, axis=0)
    m[:, ones] += np.tile(np.arange(channels) * channel, taps ** r)
    return m


def _chunk_bytes(pl: SamplePlan, store: np.dtype, channels: int, positions: int) -> int:
    """Bytes of the scratch of a chunk (`_Scratch`) of `positions` output positions and
    `channels` channels: per position the coordinates, position rows, weights (twice), masks
    and offsets (float and intp), and per channel the gathered values and their sums."""
    combos = int(pl.taps ** pl.rank)
    per_position = (pl.rank * pl.taps * (4 * pl.coordinates.itemsize + 8) + 16 * combos
                    + 2 * channels * combos * store.itemsize)
    return positions * per_position


def _small_bytes(pl: SamplePlan, store: np.dtype, channels: int, positions: int) -> int:
    """Bytes of the scratch of a small call (`_Scratch`): a chunk's, with the offsets of every
    channel's taps (float and intp) and the weights spread over the values they weigh (and
    their intp index)."""
    combos, r = int(pl.taps ** pl.rank), pl.rank
    spread = sum(pl.taps ** (r - j) for j in range(r)) if pl.mode != "nearest" else 0
    weight = max(store.itemsize, pl.coordinates.itemsize)   # at most
    return (_chunk_bytes(pl, store, channels, positions)
            + positions * channels * (16 * combos + (weight + 8) * spread))


def _chunks(pl: SamplePlan, store: np.dtype, channels: int) -> tuple[int, int]:
    """(output positions, channels) per chunk: its scratch within CHUNK_BYTES, channels split
    only where one position's scratch alone outgrows it."""
    split = channels
    while split > 1 and _chunk_bytes(pl, store, split, 1) > CHUNK_BYTES:
        split = max(1, split // 2)
    return max(1, CHUNK_BYTES // _chunk_bytes(pl, store, split, 1)), split


class _Scratch:
    """The arrays of one chunk (`split` channels by `items` batch items by `span` output
    positions) of a `_Sampler`, and the views of them that its steps read and write, made once
    per chunk shape: coordinates c (r, positions); the position rows that the offset matrix
    multiplies (taps (cubic) or 1 by r rows, a row of ones, the positions' batch items where
    the layout holds several) and the positions among them (pos: (taps, r, positions) for
    cubic, else (r, positions)); weights (taps, r, positions) in the coordinate type and,
    where that differs, the accumulate type; the offsets (taps^r, positions) in float and in
    intp; the gathered values (split, taps^r, positions) and, per grid component j, the values
    it weighs (split, taps, taps^(r-1-j), positions), by tap, its weights (taps, 1, positions)
    and the sums.

    Where the call is small, every channel's taps are gathered at once, combination first:
    offsets (taps^r * C, positions) and gathered values (taps^r, C, positions), so that per
    grid component j the values it weighs are (taps, taps^(r-1-j) * C, positions), each tap's
    a contiguous block, and its weights are spread to that shape by one gather of all
    components' weights (`spread`, from the weights at `spread_index`); X's zero-slabbed
    layout is kept (its slabs stay zero)."""

    def __init__(self, sp: _Sampler, split: int, items: int, span: int) -> None:
        f, r, taps, q = sp.f, sp.r, sp.taps, items * span
        combos = taps ** r
        self.shape = (split, items, span)
        rows = (taps if sp.per_tap else 1) * r
        self.rows = np.ones((rows + 1 + sp.item_rows, q), f)
        self.pos = self.rows[:rows].reshape(taps, r, q) if sp.per_tap else self.rows[:r]
        self.c = self.pos if sp.mode == "nearest" else np.empty((r, q), f)
        self.items = self.rows[-1].reshape(items, span)   # (item_rows) from batch item n0
        self.n0 = -1
        self.w = np.empty((taps, r, q), f)
        self.w0, self.w1 = self.w[0], self.w[-1]   # linear's
        self.weights = self.w if sp.acc in (None, f) else np.empty_like(self.w, sp.acc)
        self.u = np.empty_like(self.w) if sp.mode == "cubic" else self.w
        self.under, self.over = (np.empty(self.pos.shape if sp.per_tap else (r, q), bool)
                                 for _ in range(2))
        self.offsets = np.empty((combos * (split if sp.small else 1), q),
                                np.result_type(sp.matrix, f))   # the product's type
        self.index = np.empty(self.offsets.shape, np.intp)
        self.v = np.empty((combos, split, q) if sp.small else (split, combos, q), sp.store)
        self.taps_index = self.index.reshape(self.v.shape) if sp.small else self.index
        # per grid component j (none for nearest): its weights, the values they weigh, those
        # by tap (the first, the second, the others; the last component's shaped as the chunk,
        # (split, items, span)) and their sum (None for the last where it is made in Y)
        self.levels: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                list[np.ndarray], np.ndarray | None]] = []
        levels = r if sp.acc is not None else 0
        # small: the weights spread over the values they weigh, component after component
        spread = sum(taps ** (r - j) for j in range(levels)) * split * q if sp.small else 0
        self.spread = np.empty(spread, self.weights.dtype) if spread else None
        self.spread_index = np.empty(spread, np.intp)
        self.weights_flat = self.weights.reshape(-1)
        values, at = self.v, 0
        a: np.ndarray
        w: np.ndarray
        for j in range(levels):
            if self.spread is not None:   # (taps, taps^(r-1-j) * C, positions)
                a = values.reshape(taps, -1, q)
                terms = [a[t] for t in range(taps)]
                w = self.spread[at:at + a.size].reshape(a.shape)
                # the weights of component j's tap t at every value it weighs
                self.spread_index[at:at + a.size].reshape(a.shape)[...] = \
                    (np.arange(taps)[:, None, None] * r + j) * q + np.arange(q)
                at += a.size
            else:
                a = values.reshape(split, taps, -1, q)
                terms = [a[:, t] for t in range(taps)]
                w = self.weights[:, j].reshape(taps, 1, q)
            if j == r - 1:
                terms = [term.reshape(self.shape) for term in terms]
            values = np.empty(terms[0].shape, sp.acc)
            last = j == r - 1 and sp.direct
            self.levels.append((w, a, terms[0], terms[1], terms[2:], None if last else values))
        self.layout: np.ndarray | None = None
        if sp.small and sp.slab:
            xs = sp.new_layout()
            self.inside, self.layout = xs[sp.inside], xs.reshape(-1)


class _Sampler:
    """The prepared GridSample call of a plan on X of one dtype and a grid of one dtype (see
    the module docstring): call(x, grid, out) -> grid_sample(x, grid), into `out` when given
    (C-contiguous) or a new array."""

    def __init__(self, pl: SamplePlan, dtype: np.dtype, grid_dtype: np.dtype,
                 broadcast: tuple[bool, ...] = ()) -> None:
        self.pl, self.dtype, self.grid_dtype = pl, np.dtype(dtype), np.dtype(grid_dtype)
        self.f, self.r, self.taps, self.mode = pl.coordinates, pl.rank, pl.taps, pl.mode
        self.padding = pl.padding
        self.n_items, self.channels = pl.out_shape[:2]
        self.points = points = pl.points
        self.acc = None if pl.mode == "nearest" else accumulate_dtype(self.dtype)
        self.store = self.acc or self.dtype
        # cubic pads each tap; linear and nearest offset their taps from the first
        self.per_tap = pl.mode == "cubic"
        # zero slabs after each axis: as many as taps can fall past its end (or before its
        # start: the slabs after the row before)
        self.clip = pl.padding == "zeros"
        self.slab = int(self.clip) if self.per_tap else self.taps - (not self.clip)
        # a broadcast X (`broadcast`: its stride-0 axes, see `_compact`) is read through the
        # layout of its distinct values: batch item 0, and `kept` values of a spatial axis
        kept = 1 if self.per_tap else self.taps
        spatial = broadcast[2:] or (False,) * self.r
        self.stored = tuple(kept if b and n > kept else n for b, n in zip(spatial,
                                                                         pl.x_shape[2:]))
        # (grid component j, n - kept) of each such axis, innermost first as the grid lists them
        self.remap = [(j, n - m) for j, (n, m) in enumerate(zip(pl.x_shape[:1:-1],
                                                               self.stored[::-1])) if n != m]
        self.layout_items = 1 if broadcast[:1] == (True,) else pl.out_shape[0]
        self.item_rows = self.layout_items > 1   # the position rows hold their batch items
        self.lengths = tuple(n + self.slab for n in self.stored)
        self.inside = (slice(None), slice(None), *(slice(0, n) for n in self.stored))
        self.axes_first = (1, 0, *range(2, self.r + 2))   # X (N, C, ...) as (C, N, ...)
        self.rounded = self.dtype.name in dtypes.INT_TYPES
        self.direct = self.acc == self.dtype   # the last sums made in Y
        self.convert = np.dtype(grid_dtype) != self.f
        step, self.split = _chunks(pl, self.store, self.channels)
        self.items, self.span = ((min(self.n_items, max(1, step // max(points, 1))), points)
                                 if step >= points else (1, step))
        self.small = (self.items >= self.n_items and self.span >= points and
                      self.split >= self.channels and
                      _small_bytes(pl, self.store, self.channels, self.n_items * points)
                      <= SMALL_BYTES)
        # a small call's offsets reach every channel of the layout: (C, N, D1', ..., Dr')
        item = math.prod(self.lengths)
        channels = self.channels if self.small else 1
        self.matrix = _offset_matrix(
            self.taps, arrays.c_strides(self.lengths)[::-1], self.per_tap,
            item if self.item_rows else None,
            np.float32 if 2 * channels * self.layout_items * item < FLOAT32_EXACT
            else np.float64, channels, self.layout_items * item)
        q = self.n_items * points if self.small else 1
        lowest = -1 if self.per_tap else -self.taps
        self.k = _Axes(pl, (self.r, q), self.small, lowest)   # for (r, positions)
        # for the positions: (taps, r, positions) (cubic), else (r, positions)
        self.kp = _Axes(pl, (self.taps, self.r, q), self.small, lowest) if self.per_tap \
            else self.k
        self.kept = threading.local()   # a small call's scratch, per thread
        self.out_shape, self.size = pl.out_shape, math.prod(pl.out_shape)
        self.grid_rows = (self.n_items * points, self.r)   # the grid as (positions, r)
        self.items_first = (self.n_items, self.channels, points)   # Y as (N, C, positions)
        self.channels_first = (self.channels, self.n_items, points)   # that where N = 1
        self.axis = None if self.small else 1   # the gather's: small, xs flat
        self.call = np.errstate(invalid="ignore", over="ignore")(self.run)
        self.compacts: dict[tuple[bool, ...], _Compact] = {}   # per broadcast pattern

    def new_layout(self) -> np.ndarray:
        """X's zero-slabbed layout (C, N, D1', ..., Dr'), the slabs 0 (strings: empty)."""
        xs = np.zeros((self.channels, self.layout_items, *self.lengths), self.store)
        if self.store.kind == "O":
            xs.fill(zero(self.store))
        return xs

    def layout(self, x: np.ndarray, s: _Scratch) -> np.ndarray:
        """X as (C, N * D1' * ... * Dr') in the storage type, with the zero slabs (where the
        call is small: flat, C * N * D1' * ... * Dr', the scratch's where it has slabs)."""
        shape = -1 if self.small else (self.channels, -1)
        if not self.slab:
            return np.ascontiguousarray(x.transpose(self.axes_first),
                                        dtype=self.store).reshape(shape)
        if s.layout is not None:
            s.inside[...] = x.transpose(self.axes_first)
            return s.layout
        xs = self.new_layout()
        xs[self.inside] = x.transpose(self.axes_first)
        return xs.reshape(shape)

    def __call__(self, x: np.ndarray, grid: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y: np.ndarray = np.empty(self.out_shape, x.dtype) if out is None else out
        if not self.size:
            return y
        if 0 in x.strides:   # (a test of the common layout that costs nothing)
            broadcast = tuple(st == 0 and n > 1 for n, st in zip(x.shape, x.strides))
            if any(broadcast):
                self._compact(broadcast).into(x, grid, y)
                return y
        self.into(x, grid, y)
        return y

    def into(self, x: np.ndarray, grid: np.ndarray, y: np.ndarray) -> None:
        """Y (C-contiguous) of X and the grid."""
        self.call(x, grid.reshape(self.grid_rows), y.reshape(self.channels_first)
                  if self.n_items == 1 else y.reshape(self.items_first).transpose(1, 0, 2))

    def _compact(self, broadcast: tuple[bool, ...]) -> _Compact:
        """The call for an X whose axes `broadcast` are stride-0 views (np.broadcast_to): X is
        read in place, never widened to its full layout. The layout holds its distinct values
        alone: batch item 0 (the offsets leave out the batch items), channel 0 (Y's first
        channel, copied to the others), and of a spatial axis of n values, 1 (cubic, nearest)
        or 2 (linear), enough for every tap: after padding and clipping, a tap combination's
        first position p becomes p below 0, p - (n - kept) past n - kept, else 0, so that each
        of its taps is inside X (the one value) or outside (a zero slab) as before."""
        made = self.compacts.get(broadcast)
        if made is None:
            made = self.compacts[broadcast] = _Compact(self, broadcast)
        return made

    def run(self, x: np.ndarray, g: np.ndarray, y3: np.ndarray) -> None:
        """Into y3 (C, N, points), inside np.errstate: the samples of x at the grid values g
        (N * points, r), chunk by chunk."""
        s = getattr(self.kept, "scratch", None) if self.small else None
        if s is None:
            s = _Scratch(self, self.split, self.items, self.span)
            if self.small:
                self.kept.scratch = s
        xs = self.layout(x, s)
        if self.small:   # one chunk
            self.positions(s, g, 0)
            self.gather(s, xs, y3)
            return
        made = {s.shape: s}
        points = self.points
        for n0 in range(0, self.n_items, self.items):
            for p0 in range(0, points, self.span):
                first = n0 * points + p0
                for c0 in range(0, self.channels, self.split):
                    dst = y3[c0:c0 + self.split, n0:n0 + self.items, p0:p0 + self.span]
                    s = made.get(dst.shape)
                    if s is None:
                        s = made[dst.shape] = _Scratch(self, *dst.shape)
                    # (the positions again for each chunk of channels: split for many)
                    self.positions(s, g[first:first + s.c.shape[1]], n0)
                    self.gather(s, xs[c0:c0 + self.split], dst)

    def positions(self, s: _Scratch, g: np.ndarray, n0: int) -> None:
        """The offsets of the tap combinations (s.index) and the weights (s.weights) of the
        grid values g (positions, r) of batch items n0, ...: see the module docstring."""
        k, c, pos, w = self.k, s.c, s.pos, s.w
        # the grid lists x (the innermost axis) first; a small call copies it first (a copy
        # and an operation between contiguous arrays cost less than one on g.T)
        if self.convert or self.small:
            c[...] = g.T
            np.add(c, k.one, out=c)
        else:
            np.add(g.T, k.one, out=c)
        if k.fused:   # the multiply-add rounded once (an addend of 0 keeps the product's)
            c[...] = numerics.fma32(c, k.scale, k.addend)
        else:
            np.multiply(c, k.scale, out=c)
        np.subtract(c, k.shift, out=c)
        np.multiply(c, k.half, out=c)
        if self.mode == "nearest":
            if self.pl.pad_before_rounding:
                self.pad(c, k, s)
                np.rint(c, out=c)
            else:
                np.rint(c, out=c)
                self.pad(c, k, s)
        elif self.mode == "linear":
            if not self.clip:   # (zeros padding clips the positions below)
                self.pad(c, k, s)
            np.floor(c, out=pos)
            np.subtract(c, pos, out=s.w1)
            np.subtract(k.one, s.w1, out=s.w0)
        else:
            low = np.floor(c, out=pos[1])
            np.subtract(c, low, out=c)
            _cubic_weights(c, w, s.u)
            np.subtract(low, k.one, out=pos[0])
            np.add(low, k.one, out=pos[2])
            np.add(low, k.two, out=pos[3])
            self.pad(pos, self.kp, s)
        if s.weights is not w:
            s.weights[...] = w
        if self.clip:   # into [lowest, n]: outside X (NaN included) reads a zero slab
            np.fmax(pos, self.kp.lowest, out=pos)
            np.fmin(pos, self.kp.n, out=pos)
        for j, past in self.remap:   # a broadcast axis' positions in its kept values
            p = pos[:, j] if self.per_tap else pos[j]
            above = p > past
            p[(p >= 0) & ~above] = 0
            np.subtract(p, past, out=p, where=above)
        if s.n0 != n0 and self.item_rows:
            s.items[...] = np.arange(n0, n0 + s.shape[1])[:, None]
            s.n0 = n0
        self.matrix.dot(s.rows, out=s.offsets)   # (exact: integers; dot costs less to call)
        s.index[...] = s.offsets

    def pad(self, x: np.ndarray, k: _Axes, s: _Scratch) -> None:
        """x padded in place: clipped (border), reflected (reflection) or left (zeros)."""
        if self.padding == "border":
            _clip(x, k)
        elif self.padding == "reflection" and k.fold:
            _fold(x, k, np.empty_like(x))
        elif self.padding == "reflection":
            _reflect(x, k, s.under, s.over)

    def gather(self, s: _Scratch, xs: np.ndarray, dst: np.ndarray) -> None:
        """Into dst (channels, items, positions): the values of the layout xs (channels, ...)
        at the scratch's offsets (wrapped: -i counts from the end), weighed and summed over the
        taps (nearest: its one tap), innermost axis first, in the accumulate type; integers:
        NaN is 0, then rounded half to even and saturated."""
        if not s.levels:   # nearest
            if dst.flags.c_contiguous and dst.dtype == s.v.dtype:
                xs.take(s.taps_index, self.axis, out=dst.reshape(s.v.shape), mode="wrap")
            else:
                xs.take(s.taps_index, self.axis, out=s.v, mode="wrap")
                dst[...] = s.v.reshape(dst.shape)
            return
        xs.take(s.taps_index, self.axis, out=s.v, mode="wrap")
        if s.spread is not None:
            s.weights_flat.take(s.spread_index, out=s.spread, mode="wrap")
        total = dst
        for w, values, first, second, more, sums in s.levels:
            np.multiply(w, values, out=values)   # weight * value, as the kernels order it
            total = dst if sums is None else sums   # None: the last component's, in Y
            np.add(first, second, out=total)
            for term in more:
                np.add(total, term, out=total)
        if self.rounded:
            dst[...] = round_saturate(np.where(np.isnan(total), 0.0, total), dst.dtype)
        elif not self.direct:
            dst[...] = total


class _Compact:
    """A `_Sampler` for an X with stride-0 axes (see `_Sampler._compact`): the sampler of the
    plan with one channel where the channels are broadcast, its layout holding X's distinct
    values."""

    def __init__(self, whole: _Sampler, broadcast: tuple[bool, ...]) -> None:
        pl = whole.pl
        self.channels = broadcast[1]
        if self.channels:
            pl = dataclasses.replace(pl, x_shape=(pl.x_shape[0], 1, *pl.x_shape[2:]),
                                     out_shape=(pl.out_shape[0], 1, *pl.out_shape[2:]))
        self.sampler = _Sampler(pl, whole.dtype, whole.grid_dtype, broadcast)
        # X's distinct values: a view of X, no copy
        self.distinct = (slice(0, 1) if broadcast[0] else slice(None),
                         slice(0, 1) if broadcast[1] else slice(None),
                         *(slice(0, n) for n in self.sampler.stored))

    def into(self, x: np.ndarray, grid: np.ndarray, y: np.ndarray) -> None:
        if not self.channels:
            self.sampler.into(x[self.distinct], grid, y)
            return
        first = np.empty(self.sampler.out_shape, y.dtype)
        self.sampler.into(x[self.distinct], grid, first)
        y[...] = first


def prepare_sample(pl: SamplePlan, x: np.ndarray, grid: np.ndarray) -> Call:
    """The call of plan `pl` on X and a grid laid out as `x` and `grid` (`_Sampler`):
    call(x, grid, out) -> Y."""
    return _Sampler(pl, x.dtype, grid.dtype)


# ---------------------------------------------------------------- AffineGrid

def prepare_affine(pl: AffinePlan, theta: np.ndarray) -> Call:
    """The call of plan `pl` on a theta laid out as `theta`: call(theta, out) ->
    affine_grid(theta)."""
    return functools.partial(run_affine, pl)


def run_affine(pl: AffinePlan, theta: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """affine_grid(theta) per plan `pl`, into `out` when given (C-contiguous) or a new array."""
    y: np.ndarray = np.empty(pl.out_shape, theta.dtype) if out is None else out
    if not y.size:
        return y
    acc = accumulate_dtype(theta.dtype)
    r = pl.rank
    # v_j: the coordinate along the j-th axis from the inside (x along W first)
    lengths = pl.lengths[::-1]
    v = [base(np.arange(n), n, pl.align_corners, acc) for n in lengths]
    shape = [1] * r
    t = theta.astype(acc)
    for k in range(r):
        total: Any = None
        for j, (vj, n) in enumerate(zip(v, lengths)):
            at = list(shape)
            at[r - 1 - j] = n
            term = t[:, k, j].reshape(-1, *shape) * vj.reshape(at)
            total = term if total is None else total + term
        total = total + t[:, k, r].reshape(-1, *shape)
        y[..., k] = np.broadcast_to(total, y.shape[:-1])
    return y

