"""The NumPy path of AveragePool/LpPool/MaxPool and the global pools: separable window passes
(numpy_passes.py), one per spatial axis, over chunks of N*C rows so that temporaries stay
cache-sized; everything a call's layout decides (taps, divisors, chunks) is computed once, when
the call is prepared.

AveragePool and LpPool sum axis by axis, outermost first (every pass but the last adds
contiguous rows), each pass one slice-add per kernel tap, the taps covering the whole output
first:

  S = sum over taps j_1 (axis 1) of ... sum over taps j_m (axis m) of
      x[..., w_1(j_1), ..., w_m(j_m)]
  AveragePool: Y = S / count,  LpPool: Y = S^(1/p) with x replaced by |x|^p

The accumulation type is the kernels' (plan.accumulate_dtype: float32 for 16- and 32-bit floats,
float64 for windows of more than plan.WIDE_SUMS terms); summing axis by axis rounds differently
from the kernels' row-major order over each window (by about one ulp).

A small call (at most GATHER_ENTRIES taps over all its outputs) makes the same sums from one
gather instead of a few slice operations per tap: a table made once per prepared call holds, per
output and per slot of each axis's tap sequence (the taps that land, in the order above, after
a +0 where the pass starts from zero), the position of that tap's element in X flattened, or of
one of two constants behind it, +0 and -0 (-0 + v is v for every v, so the slots past a window's
last tap change nothing). The gathered slots are then added axis by axis, the first axis's slots
first, in order: the same additions, in the same order, as the passes, so the same bits.

MaxPool takes window maxima axis by axis, innermost first (np.maximum). A maximum is one value
of the window, so its bits are the kernels' but where equal values differ in bits: a window whose
maximum is a NaN (the kernels keep the last NaN of the window) or a zero while X holds a -0.0 (the
first of the window's zeros). Those calls, and every call that returns Indices, find each
window's winner as the kernels do (oc::max_wins: the first tap, in the kernels' order, equal to
the maximum; the last NaN), axis by axis innermost first (the first equal tap of the first equal
row is the first equal tap in row-major order), and read the values at the winners: the
kernels' values and indices, bit for bit.

A small MaxPool (at most GATHER_ENTRIES taps over its outputs) gathers every window's taps at
once (a tap outside X reads the identity, -inf or the integer minimum) in the kernels' order and
takes their maximum; where Indices are asked for, or a maximum is a NaN or a zero, it finds the
winner among them as the kernels do: the same values and indices, bit for bit.

The innermost axis's pass runs over the rows as one flat sequence where an input row is the
stride times an output row (one long loop per tap instead of one per row); the few output
columns whose taps wrap into a neighbouring row are then redone row by row, with the same
operations in the same order.

The global pools' sums follow pool_global's order operation for operation (_PlaneSums: lanes of
float segments added into float64, each warp's lanes pairwise, the warps in order), so they give
the kernel's bits; their maximum is NumPy's.

PyTorch's adaptive pooling reduces one spatial axis at a time, the last first, gathering the
j-th element of every output's window [start, end) per step j: sums (divided by the windows'
sizes at the end), or (value, index) pairs where a later element wins as oc::max_wins decides.
Along each axis that keeps the first maximum and the last NaN, so axis by axis the winner is the
kernel's (the first maximum in row-major order, or the last NaN), bit for bit.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import arrays, numerics
from ..core.calls import Call
from . import plan
from .numpy_passes import Axis, WindowPass, _at, _axis, max_identity, prepare_pass

if TYPE_CHECKING:
    from .plan import AdaptivePlan, PoolPlan

CHUNK_BYTES = 1 << 21  # input chunk, in the accumulation type
GATHER_ENTRIES = 1 << 12   # most slots (taps x outputs) of a call made from one gather


# ---------------------------------------------------------------- AveragePool, LpPool

def widen(src: np.ndarray, acc: np.dtype) -> np.ndarray:
    """A copy of `src` in the accumulation type (`astype`: NumPy converts float16 with the
    CPU's conversion instructions, faster than a table look-up and without an index copy)."""
    return src.astype(acc)


def prepare(pl: PoolPlan, dtype: np.dtype, indices: bool = False) -> Call:
    """The call of plan `pl` on inputs of `dtype`: call(x, out) -> y, or (y, indices) with
    `indices` (int64, MaxPool's winners' indices); into `out` when given (C-contiguous)."""
    run = _max_pool(pl, dtype, indices) if pl.op == "MaxPool" else _pool(pl, dtype)
    return _outputs(pl.op, pl.out_shape, run, indices)


def _outputs(op: str, shape: tuple[int, ...], run: Run, indices: bool) -> Call:
    """call(x, out) -> y, or (y, indices) with `indices`: allocates y of `shape` (or checks
    `out`) and the int64 indices, then `run(x, y, indices)` where y is not empty."""
    int64 = np.dtype(np.int64)

    def call(x: np.ndarray, out: np.ndarray | None) -> Any:
        y = np.empty(shape, x.dtype) if out is None else out
        where = np.empty(shape, int64) if indices else None
        if y.size:
            run(x, y, where)
        return y if where is None else (y, where)
    return call


SPLIT_BYTES = 1 << 16   # rows of at least this many bytes go in two chunks or more


def _chunk_rows(rows: int, row_bytes: int, split: bool = True) -> int:
    """Rows (N*C planes) per chunk: at most CHUNK_BYTES of them and, where they hold
    SPLIT_BYTES or more and `split` (a call whose temporaries can exceed a chunk and a half:
    a widened or powered copy, MaxPool's winners), at most half of them, so that the
    temporaries stay below the input's size (a small input runs whole: fewer NumPy calls)."""
    half = rows // 2 if split and rows * row_bytes >= SPLIT_BYTES else rows
    return max(1, min(CHUNK_BYTES // max(1, row_bytes), half))


Chain = list[tuple[WindowPass, tuple[int, ...]]]   # passes, each with its destination's shape


def _chain(op: np.ufunc, axes: list[Axis], order: tuple[int, ...], in_sp: tuple[int, ...],
           dtype: np.dtype, rows: int) -> Chain:
    """op's window passes over a chunk of `rows` rows, along the spatial axes in `order`."""
    shape = (rows, *in_sp)
    chain = []
    for i in order:
        p = prepare_pass(op, axes[i], i + 1, shape, dtype, i == len(axes) - 1)
        shape = (*shape[:i + 1], axes[i].out, *shape[i + 2:])
        chain.append((p, shape))
    return chain


def _axes(pl: PoolPlan) -> list[Axis]:
    return [_axis(*a) for a in zip(pl.in_shape[2:], pl.out_shape[2:], pl.kernel, pl.strides,
                                   pl.dilations, pl.pads_begin)]


Run = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], None]


def _pool(pl: PoolPlan, dtype: np.dtype) -> Run:
    """AveragePool or LpPool of plan `pl` on inputs of `dtype`: run(x, y, _), summing in
    plan.accumulate_dtype (float64 for windows of more than plan.WIDE_SUMS terms)."""
    acc_t = plan.accumulate_dtype(pl, dtype)
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    rows = pl.in_shape[0] * pl.in_shape[1]
    convert = dtype != acc_t
    chunk = _chunk_rows(rows, math.prod(in_sp) * acc_t.itemsize, split=convert or pl.lp)
    axes = _axes(pl)
    div = None if pl.lp else plan.divisor(pl, acc_t)
    # outermost first: (b, O1, I2, ..., Im), ..., (b, O1, ..., Om)
    chains = functools.cache(functools.partial(_chain, np.add, axes, tuple(range(len(axes))),
                                               in_sp, acc_t))

    table = _sum_table(axes, rows, in_sp)
    if table is not None:
        return functools.partial(_gathered_pool, pl, table, acc_t,
                                 None if div is None else np.tile(div.reshape(-1), rows))
    by: np.ndarray | np.generic | None = div
    if div is not None and div.size and (div == div.flat[0]).all():
        by = div.flat[0]   # one count for every window: a division by a scalar, the same bits

    def run(x: np.ndarray, y: np.ndarray, _: np.ndarray | None) -> None:
        xs = x.reshape(rows, *in_sp)
        ys = y.reshape(rows, *out_sp)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for r in range(0, rows, chunk):
                src = xs[r:r + chunk]
                if convert:
                    src = widen(src, acc_t)
                if pl.lp:
                    src = lp_power(src, pl.p, acc_t, fresh=convert)
                chain = chains(src.shape[0])
                for i, (axis_pass, shape) in enumerate(chain):
                    last = i == len(chain) - 1
                    dst = ys[r:r + chunk] if last and not convert else np.empty(shape, acc_t)
                    axis_pass(src, dst)
                    src = dst
                if by is None:
                    lp_root(src, pl.p, acc_t)
                else:
                    np.divide(src, by, out=src)
                if convert:   # float64 sums rounded once, as the kernels store them
                    ys[r:r + chunk] = numerics.narrow(src, dtype) if acc_t == np.float64 \
                        else src
    return run


_PLUS_ZERO, _NO_SLOT = -1, -2   # a slot's code in an axis's tap sequence: +0 (a pass that starts
                                # from zero), past the window's last tap (-0)


def lp_power(v: np.ndarray, p: float, acc_t: np.dtype, fresh: bool) -> np.ndarray:
    """|v|^p, in place where `v` is `fresh` (a temporary): v * v for p = 2 (|v|^2's bits)."""
    if p == 2:
        return np.square(v, out=v if fresh else None)
    v = np.abs(v, out=v if fresh else None)
    if p != 1:
        np.power(v, acc_t.type(p), out=v)
    return v


def lp_terms(v: np.ndarray, out: np.ndarray, p: float) -> None:
    """|v|^p into `out`, in its dtype: lp_power of v's copy in that dtype, in one pass."""
    if p == 2:
        np.square(v, out=out, dtype=out.dtype)
        return
    np.absolute(v, out=out, dtype=out.dtype)
    if p != 1:
        np.power(out, out.dtype.type(p), out=out)


def lp_root(v: np.ndarray, p: float, acc_t: np.dtype, out: np.ndarray | None = None) -> None:
    """v^(1/p) into `out` (in place without one): sqrt for p = 2."""
    into = v if out is None else out
    if p == 2:
        np.sqrt(v, out=into)
    elif p != 1:
        np.power(v, acc_t.type(1.0 / p), out=into)
    elif out is not None:
        np.copyto(out, v)


def _sequences(ax: Axis) -> np.ndarray:
    """The slots of each output's tap sequence along `ax`, (slots, outputs): the input position
    of each tap that lands, in the order the pass adds them, after _PLUS_ZERO where the pass
    starts from zero; _NO_SLOT after the last."""
    per_output: list[list[int]] = [[_PLUS_ZERO] if ax.start == "zero" else []
                                   for _ in range(ax.out)]
    for _, o, i in ax.taps:
        for out, at in zip(range(o.start, o.stop), range(i.start, i.stop, ax.s)):
            per_output[out].append(at)
    slots = max(map(len, per_output), default=1)
    table = np.full((slots, ax.out), _NO_SLOT, np.intp)
    for out, seq in enumerate(per_output):
        table[:len(seq), out] = seq
    return table


def _spread(table: np.ndarray, i: int, m: int) -> np.ndarray:
    """An [slot, output] table of spatial axis i of m laid along the axes (slots_1, ...,
    slots_m, rows, outputs_1, ..., outputs_m) of a small call's gather."""
    return np.expand_dims(table, [a for a in range(2 * m + 1) if a not in (i, m + 1 + i)])


def _row_starts(rows: int, plane: int, m: int) -> np.ndarray:
    """Each (n, c) row's first position in X flattened, laid along the gather's row axis."""
    return (np.arange(rows) * plane).reshape((1,) * m + (rows,) + (1,) * m)


def _sum_table(axes: list[Axis], rows: int, in_sp: tuple[int, ...]) -> np.ndarray | None:
    """The gather of a small call's window sums (see the module's docstring), or None for a
    call of more than GATHER_ENTRIES slots: for slots (s_1, ..., s_m) of the axes' sequences
    and output (r, o_1, ..., o_m), the position in X flattened (r * plane + sum over axes of
    position_i * stride_i), or rows * plane for +0 and rows * plane + 1 for -0 (-0 wherever an
    axis's slot is past its last tap, else +0 wherever one is a +0)."""
    if rows * math.prod(ax.out for ax in axes) > GATHER_ENTRIES:   # a slot per output at least
        return None
    seqs = [_sequences(ax) for ax in axes]
    m = len(seqs)
    shape = (*(q.shape[0] for q in seqs), rows, *(ax.out for ax in axes))
    if math.prod(shape) > GATHER_ENTRIES:
        return None
    total = rows * math.prod(in_sp)
    position = _row_starts(rows, math.prod(in_sp), m)
    zero, past = np.zeros(shape, bool), np.zeros(shape, bool)
    for i, (seq, stride) in enumerate(zip(seqs, arrays.c_strides(in_sp))):
        at = _spread(seq, i, m)
        position = position + np.maximum(at, 0) * stride
        zero |= at == _PLUS_ZERO
        past |= at == _NO_SLOT
    table = np.where(past, total + 1, np.where(zero, total, position))
    return table.reshape(*shape[:m], -1)


def _gathered_pool(pl: PoolPlan, table: np.ndarray, acc_t: np.dtype, div: np.ndarray | None,
                   x: np.ndarray, y: np.ndarray, _: np.ndarray | None) -> None:
    """A small AveragePool or LpPool from one gather: X flattened in the accumulation type
    (|X|^p for LpPool) with +0 and -0 behind it, gathered through `table` (_sum_table), the
    slots added axis by axis in order, then divided by `div` (AveragePool, per output) or
    raised to 1/p (LpPool)."""
    flat = np.concatenate((x.reshape(-1), _SIGNED_ZEROS), dtype=acc_t, casting="unsafe")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if pl.lp:
            lp_power(flat[:-2], pl.p, acc_t, fresh=True)
        s = flat.take(table)
        for slots in table.shape[:-1]:   # the first axis's slots, in order
            total = np.add(s[0], s[1]) if slots > 1 else s[0]
            for j in range(2, slots):
                total += s[j]
            s = total
        # the last step straight into Y where Y holds the accumulation type
        into = y.reshape(-1) if y.dtype == acc_t and y.flags.c_contiguous else s
        if pl.lp:
            lp_root(s, pl.p, acc_t, into)
        else:
            assert div is not None
            np.divide(s, div, out=into)
    if into is s:
        y.reshape(-1)[...] = s


_SIGNED_ZEROS = np.array([0.0, -0.0])


# ---------------------------------------------------------------- MaxPool

def _has_negative_zero(x: np.ndarray) -> bool:
    """Whether float array `x` holds a -0.0: its bits, read as signed integers, reach the least
    integer (0x80...0 is -0.0, every other negative number reads larger)."""
    bits = x.view(f"i{x.dtype.itemsize}")
    return bool(bits.min(initial=0) == np.iinfo(bits.dtype).min)


def _max_pool(pl: PoolPlan, dtype: np.dtype, indices: bool) -> Run:
    """MaxPool of plan `pl` on inputs of `dtype`: run(x, y, indices or None)."""
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    rows, plane = pl.in_shape[0] * pl.in_shape[1], math.prod(in_sp)
    chunk = _chunk_rows(rows, plane * dtype.itemsize)
    axes = _axes(pl)
    floating = dtype.kind not in "iu"
    index_steps = pl.index_strides   # the Indices' step per spatial axis (storage_order)
    covered = all(ax.covered for ax in axes)
    windows = _window_table(pl, rows)
    if windows is not None:
        return functools.partial(_gathered_max, windows, np.array([max_identity(dtype)], dtype),
                                 floating, plane, in_sp, index_steps)

    chains = functools.cache(functools.partial(
        _chain, np.maximum, axes, tuple(reversed(range(len(axes)))), in_sp, dtype))

    def maxima(src: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
        """Window maxima axis by axis, innermost first: one array per axis, the last y."""
        found = []
        chain = chains(src.shape[0])
        for i, (axis_pass, shape) in enumerate(chain):
            dst = y if i == len(chain) - 1 else np.empty(shape, dtype)
            axis_pass(src, dst)
            found.append(dst)
            src = dst
        return found

    def run(x: np.ndarray, y: np.ndarray, where: np.ndarray | None) -> None:
        xs = x.reshape(rows, *in_sp)
        ys, ids = y.reshape(rows, *out_sp), None if where is None else where.reshape(rows, -1)
        zeros: bool | None = None    # X holds a -0.0 (found out where a maximum is zero)
        with np.errstate(invalid="ignore"):
            for r in range(0, rows, chunk):
                src = xs[r:r + chunk]
                found = maxima(src, ys[r:r + chunk])
                m = found[-1]
                # a NaN or a zero maximum (np.abs(m).min() is NaN or 0) may differ in its bits
                exact = where is not None
                if floating and not exact and not np.abs(m).min() > 0:
                    if zeros is None:
                        zeros = _has_negative_zero(x)
                    exact = bool(np.isnan(m).any()) or (zeros and not m.all())
                if not exact:
                    continue
                at = _winners(src, found, axes, in_sp)    # row-major within the plane, or -1
                flat = src.reshape(src.shape[0], -1)
                got = _gather(flat, 1, np.maximum(at, 0).reshape(src.shape[0], -1))
                if not covered:
                    got[at.reshape(got.shape) < 0] = max_identity(dtype)
                ys[r:r + chunk] = got.reshape(m.shape)
                if ids is not None:
                    ids[r:r + chunk] = _indices(at, r, plane, in_sp, index_steps)
    return run


@dataclass(frozen=True)
class Windows:
    """A small MaxPool's windows as one gather (see `_gathered_max`): per tap, in the kernels'
    order (row-major over the window), and per output (rows x outputs of a plane): the tap's
    position in X flattened (rows * plane where it falls outside X: the identity behind X),
    whether it falls inside, and its row-major position within its plane."""

    table: np.ndarray      # intp [taps, rows * outputs]
    inside: np.ndarray     # bool [taps, rows * outputs]
    position: np.ndarray   # int64 [taps, rows * outputs]
    outputs: np.ndarray    # arange(rows * outputs)


def _window_table(pl: PoolPlan, rows: int) -> Windows | None:
    """The windows of a MaxPool of at most GATHER_ENTRIES taps over its outputs, or None."""
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    m = len(in_sp)
    shape = (*pl.kernel, rows, *out_sp)
    if math.prod(shape) > GATHER_ENTRIES:
        return None
    position = np.zeros((1,) * (2 * m + 1), np.int64)
    inside = np.ones((1,) * (2 * m + 1), bool)
    for i, (n, out, k, s, d, b, stride) in enumerate(zip(
            in_sp, out_sp, pl.kernel, pl.strides, pl.dilations, pl.pads_begin,
            arrays.c_strides(in_sp))):
        at = _spread(np.arange(out) * s - b + (np.arange(k) * d)[:, None], i, m)
        inside = inside & (at >= 0) & (at < n)
        position = position + at * stride
    plane = math.prod(in_sp)
    position, inside = np.broadcast_to(position, shape), np.broadcast_to(inside, shape)
    table = np.where(inside, position + _row_starts(rows, plane, m), rows * plane)
    taps = math.prod(pl.kernel)
    table, inside, position = (np.ascontiguousarray(a.reshape(taps, -1)) for a in
                               (table.astype(np.intp), inside, position))
    return Windows(table, inside, position, np.arange(table.shape[1]))


def _gathered_max(w: Windows, identity: np.ndarray, floating: bool, plane: int,
                  in_sp: tuple[int, ...], steps: tuple[int, ...], x: np.ndarray, y: np.ndarray,
                  where: np.ndarray | None) -> None:
    """A small MaxPool from one gather: every window's taps (X flattened with the identity,
    -inf or the integer minimum, behind it) and their maximum; where Indices are asked for, or
    a maximum is a NaN or a zero (whose bits the winner decides), the winner as the kernels
    pick it (oc::max_wins: the first tap inside X equal to the maximum, else the last NaN) and
    its value and index (a window with no tap inside X: tap 0, the identity, index -1)."""
    flat = np.concatenate((x.reshape(-1), identity))   # identity: [-inf] or [the minimum]
    g = flat.take(w.table)
    with np.errstate(invalid="ignore"):
        m = np.maximum.reduce(g, axis=0)
        exact = where is not None or (floating and not np.abs(m).min() > 0)
        if exact:
            hit = g == m
            hit &= w.inside
            tap = hit.argmax(axis=0)
            found = hit[tap, w.outputs]
            if floating:
                nan = np.isnan(m)
                if nan.any():   # the last NaN (NaNs are only X's, never the identity)
                    last = g.shape[0] - 1 - np.isnan(g[::-1]).argmax(axis=0)
                    tap = np.where(nan, last, tap)
                    found |= nan
            m = g[tap, w.outputs]
    y.reshape(-1)[...] = m
    if where is not None:
        at = np.where(found, w.position[tap, w.outputs], -1)
        where[...] = _indices(at.reshape(x.shape[0] * x.shape[1], -1), 0, plane, in_sp,
                              steps).reshape(where.shape)


def _winners(src: np.ndarray, found: list[np.ndarray], axes: list[Axis],
             in_sp: tuple[int, ...]) -> np.ndarray:
    """Each window's winner (its row-major position in the plane, -1 where no tap lands), axis
    by axis innermost first: along each axis the first tap (ascending) whose inner maximum
    equals the window's maximum there, or the last whose inner maximum is a NaN; the inner axes'
    winning taps carried outward with it. Branch-free arithmetic on small integers
    (tap += (j - tap) * hit), where a masked copy would stall on every other element."""
    level = src
    carried: list[np.ndarray] = []   # the winning taps of the axes done, innermost first
    # tap numbers in int16 (fast), or int64 where a kernel's landing taps reach past it
    taps_t = np.int16 if all(j < 2**15 for ax in axes for j, _, _ in ax.taps) else np.int64
    for step, i in enumerate(reversed(range(len(axes)))):
        m, ax = found[step], axes[i]
        axis = i + 1
        by_tap = sorted(ax.taps, key=lambda t: t[0])
        tap = np.full(m.shape, _NO_TAP, taps_t)
        nan = m.dtype.kind not in "iu" and bool(np.isnan(m).any())
        # the first equal tap is blended last; then, where the maximum is a NaN, the last NaN
        for (j, o, i_sl), last_nan in [*((t, False) for t in reversed(by_tap)),
                                       *((t, True) for t in by_tap if nan)]:
            v = level[_at(axis, i_sl)]
            hit = np.isnan(v) if last_nan else v == m[_at(axis, o)]
            into = tap[_at(axis, o)]
            into += (j - into) * hit
        moved = []
        for inner in carried:   # the inner axes' taps at the winning tap of this axis
            out = np.zeros(m.shape, taps_t)
            for j, o, i_sl in by_tap:
                into = out[_at(axis, o)]
                into += inner[_at(axis, i_sl)] * (tap[_at(axis, o)] == j)
            moved.append(out)
        carried = [*moved, tap]
        level = m
    # positions: the sum over axes of the winning tap's coordinate times the axis' step
    shape = found[-1].shape
    position = np.zeros(shape, np.int64)
    valid = np.ones(shape, bool)
    for a, (ax, tap) in enumerate(zip(reversed(axes), carried)):
        i = len(axes) - 1 - a
        outs = np.arange(ax.out).reshape((-1,) + (1,) * (len(shape) - i - 2))
        valid &= tap != _NO_TAP
        position += (outs * ax.s - ax.b + tap.astype(np.int64) * ax.d) * math.prod(in_sp[i + 1:])
    return (position + 1) * valid - 1


_NO_TAP = -1   # a window's tap number along an axis where none lands


def _gather(a: np.ndarray, axis: int, index: np.ndarray) -> np.ndarray:
    """a's elements at `index` along `axis` (np.take_along_axis through one flat take; `index`
    has a's shape but along `axis`)."""
    shape = index.shape
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    base = (np.arange(outer) * (a.shape[axis] * inner))[:, None, None] + np.arange(inner)
    flat = index.reshape(outer, shape[axis], inner) * inner + base
    return np.ascontiguousarray(a).reshape(-1).take(flat).reshape(shape)


def _indices(at: np.ndarray, first_row: int, plane: int, in_sp: tuple[int, ...],
             steps: tuple[int, ...]) -> np.ndarray:
    """MaxPool's Indices from row-major plane positions `at` (-1: none) of rows from
    `first_row` on: the plane's offset plus the position in the Indices' order."""
    rows = at.shape[0]
    flat = at.reshape(rows, -1)
    if steps != arrays.c_strides(in_sp):   # storage_order 1: the spatial part column-major
        position, rest = np.zeros_like(flat), np.maximum(flat, 0)
        for n, step in zip(reversed(in_sp), reversed(steps)):
            rest, coord = np.divmod(rest, n)
            position += coord * step
    else:
        position = flat
    offsets = (np.arange(first_row, first_row + rows, dtype=np.int64) * plane)[:, None]
    return (position + offsets + 1) * (flat >= 0) - 1


def _window_taps(pl: AdaptivePlan, axis: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Along spatial axis `axis`: per step j, the element each output's window takes (its start
    + j, clamped) and whether its window reaches that far."""
    start, end = pl.bounds(axis)
    steps = int((end - start).max(initial=0))
    at = [np.minimum(start + j, pl.in_shape[2 + axis] - 1) for j in range(steps)]
    return at, [start + j < end for j in range(steps)]


def _along(mask: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A per-output mask of one axis shaped to broadcast along array axis `axis` of `ndim`."""
    return mask.reshape((-1,) + (1,) * (ndim - 1 - axis))


def prepare_adaptive(pl: AdaptivePlan, indices: bool = False) -> Call:
    """The call of the adaptive plan `pl`: call(x, out) -> y, or (y, indices) with `indices`
    (int64, the maximum's index within each (n, c) plane); the windows' taps made once."""
    taps = [_window_taps(pl, axis) for axis in range(pl.nd)]
    if pl.op == "AdaptiveMaxPool":
        return _outputs(pl.op, pl.out_shape, functools.partial(_adaptive_max, pl, taps), indices)
    lengths = [end - start for start, end in map(pl.bounds, range(pl.nd))]
    return _outputs(pl.op, pl.out_shape, functools.partial(_adaptive_mean, pl, taps, lengths),
                    False)


Taps = list[tuple[list[np.ndarray], list[np.ndarray]]]   # per spatial axis: _window_taps


def _adaptive_max(pl: AdaptivePlan, taps: Taps, x: np.ndarray, y: np.ndarray,
                  indices: np.ndarray | None) -> None:
    """The windows' maxima and their indices axis by axis, the last first."""
    value = x
    index = np.broadcast_to(np.arange(math.prod(pl.in_shape[2:]), dtype=np.int64).reshape(
        pl.in_shape[2:]), x.shape)   # within each (n, c) plane
    for axis in reversed(range(pl.nd)):
        a = axis + 2
        at, reaches = taps[axis]
        best, best_index = np.take(value, at[0], a), np.take(index, at[0], a)
        for j in range(1, len(at)):
            v = np.take(value, at[j], a)
            with np.errstate(invalid="ignore"):
                win = ((v > best) | np.isnan(v)) & _along(reaches[j], a, v.ndim)
            best = np.where(win, v, best)
            best_index = np.where(win, np.take(index, at[j], a), best_index)
        value, index = best, best_index
    y[...] = value
    if indices is not None:
        indices[...] = index


def _adaptive_mean(pl: AdaptivePlan, taps: Taps, lengths: list[np.ndarray], x: np.ndarray,
                   y: np.ndarray, _: np.ndarray | None) -> None:
    """The windows' sums axis by axis, the last first, over the product of their lengths (in
    the accumulation type, as the kernel divides: plan.accumulate_dtype, float64 for windows of
    more than plan.WIDE_SUMS elements)."""
    acc_t = plan.accumulate_dtype(pl, x.dtype)
    total = widen(x, acc_t)
    count = np.ones((), acc_t)
    for axis in reversed(range(pl.nd)):
        count = np.multiply.outer(lengths[axis].astype(acc_t), count)
        a = axis + 2
        at, reaches = taps[axis]
        summed = np.zeros(total.shape[:a] + (pl.out_shape[a],) + total.shape[a + 1:], acc_t)
        for j, reach in enumerate(reaches):
            summed += np.where(_along(reach, a, total.ndim), np.take(total, at[j], a), 0)
        total = summed
    y[...] = numerics.narrow(total / count, y.dtype) if acc_t == np.float64 else total / count
