"""The NumPy path of GridSample and AffineGrid, from the plans (onnx_cupy.grid.plan), vectorized
over output positions and channels.

GridSample reads X through a copy with a zero slab before each spatial axis, where every tap
outside X points. It works through each batch item's output positions in chunks: per spatial
axis the coordinates, taps and weights of the chunk's positions (in the coordinate type, operation
for operation as the kernels compute them), then every tap combination gathered across the
channels at once and summed innermost axis first, in the kernels' order, so that the emulated
kernels give the same bits."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import arrays, dtypes
from ..core.numerics import round_saturate
from .plan import AFFINE, CUBIC_A, SAMPLE, base

if TYPE_CHECKING:
    from .plan import AffinePlan, Axis, SamplePlan

# channels x positions of one chunk, per byte of X's elements: the chunk's temporaries (int64
# positions, accumulate-type sums) stay within a small share of X and Y
CHUNK_ELEMENTS = 1 << 12


def accumulate_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16- and 32-bit floats, float64 for float64 and integers."""
    if dtype.name in dtypes.FLOAT_TYPES:
        return dtypes.accumulate_dtype(dtype)
    return np.dtype(np.float64)


def zero(dtype: np.dtype) -> Any:
    """The value zeros padding gives: the dtype's zero, the empty string for strings."""
    return "" if dtype.kind in "OUS" else np.zeros((), dtype)[()]


# ---------------------------------------------------------------- coordinates

def coordinates(g: np.ndarray, a: Axis, f: np.dtype) -> np.ndarray:
    """x = ((g + 1) * scale - shift) * half in the coordinate type `f`, one operation at a
    time."""
    scale, shift, half, *_ = a.constants(f)
    out: np.ndarray = ((g.astype(f) + f.type(1)) * scale - shift) * half
    return out


def clip(x: np.ndarray, a: Axis, f: np.dtype) -> np.ndarray:
    """x clipped to [0, n - 1], NaN to 0 (fmax, fmin)."""
    out: np.ndarray = np.fmin(np.fmax(x, f.type(0)), a.constants(f)[5])
    return out


def reflect(x: np.ndarray, a: Axis, f: np.dtype) -> np.ndarray:
    """x outside [lo, hi] reflected at lo and hi until inside (exactly: fmod by the period
    2 (hi - lo), one period added or taken away, one mirror image), then clipped to [0, n - 1]."""
    *_, lo, hi, _ = a.constants(f)
    span = hi - lo
    period = span + span
    m = np.fmod(x, period)
    m = np.where(m < lo - span, m + period, np.where(m > hi + span, m - period, m))
    folded = np.where(m < lo, (lo + lo) - m, np.where(m > hi, (hi + hi) - m, m))
    return clip(np.where((x < lo) | (x > hi), folded, x), a, f)


def pad(x: np.ndarray, a: Axis, padding: str, f: np.dtype) -> np.ndarray:
    if padding == "border":
        return clip(x, a, f)
    if padding == "reflection":
        return reflect(x, a, f)
    return x


def cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    """Keys weights (a = -0.75) of the taps at -1, 0, 1, 2 from floor(x), for t = x - floor(x),
    in t's type, as the kernels evaluate them."""
    f = t.dtype.type
    a = f(CUBIC_A)
    p, q = t + f(1), f(1) - t
    r = f(2) - t
    return [((a * p - f(5) * a) * p + f(8) * a) * p - f(4) * a,
            ((a + f(2)) * t - (a + f(3))) * t * t + f(1),
            ((a + f(2)) * q - (a + f(3))) * q * q + f(1),
            ((a * r - f(5) * a) * r + f(8) * a) * r - f(4) * a]


def _slots(p: np.ndarray, a: Axis, f: np.dtype, index: np.dtype) -> np.ndarray:
    """Positions p (integer-valued, in `f`) as indices of type `index` into the zero-bordered
    X (see `_bordered`): p + 1 inside [0, n - 1], 0 (the zero border) outside, NaN included."""
    inside = (p >= f.type(0)) & (p <= a.constants(f)[5])
    out: np.ndarray = np.where(inside, p + f.type(1), f.type(0)).astype(index)
    return out


def _axis_taps(pl: SamplePlan, x: np.ndarray, a: Axis, acc: np.dtype, index: np.dtype
               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(slots, weights in the accumulate type) of the taps of coordinates `x` along axis `a`."""
    f = pl.coordinates
    if pl.mode == "nearest":
        if pl.pad_before_rounding:
            x = np.rint(pad(x, a, pl.padding, f))
        else:
            x = pad(np.rint(x), a, pl.padding, f)
        return [_slots(x, a, f, index)], []
    if pl.mode == "linear":
        x = pad(x, a, pl.padding, f)
    low = np.floor(x)
    t = x - low
    if pl.mode == "linear":
        positions, weights = [low, low + f.type(1)], [f.type(1) - t, t]
    else:
        positions = [pad(low + f.type(k), a, pl.padding, f) for k in (-1, 0, 1, 2)]
        weights = cubic_weights(t)
    return [_slots(p, a, f, index) for p in positions], [w.astype(acc) for w in weights]


def _sum(xs: np.ndarray, taps: list[tuple[list[np.ndarray], list[np.ndarray]]],
         strides: tuple[int, ...], level: int, offset: np.ndarray, acc: np.dtype) -> np.ndarray:
    """The weighted sum over the taps of axes `level` and after, innermost first, of the
    zero-bordered X `xs` (C, positions): (C, points); a tap outside X reads the border's 0."""
    if level == len(taps):
        out: np.ndarray = np.take(xs, offset, axis=1).astype(acc, copy=False)
        return out
    slots, weights = taps[level]
    total: np.ndarray | None = None
    for slot, weight in zip(slots, weights):
        term = _sum(xs, taps, strides, level + 1, offset + slot * strides[level], acc)
        np.multiply(weight, term, out=term)   # weight * value, as the kernels order it
        total = term if total is None else np.add(total, term, out=total)
    assert total is not None
    return total


def _bordered(x: np.ndarray, rank: int, dtype: np.dtype) -> np.ndarray:
    """X in `dtype` with a zero slab before each spatial axis, (N, C, (D1 + 1) * ... *
    (Dr + 1)): index 0 along an axis is the zero that a tap outside X reads (the empty string
    for strings)."""
    shape = (*x.shape[:2], *(n + 1 for n in x.shape[2:]))
    padded = np.zeros(shape, dtype)
    if x.dtype.kind == "O":
        padded[...] = zero(x.dtype)
    padded[(slice(None), slice(None)) + (slice(1, None),) * rank] = x
    return padded.reshape(*x.shape[:2], -1)


def run_sample(pl: SamplePlan, x: np.ndarray, grid: np.ndarray, out: np.ndarray | None
               ) -> np.ndarray:
    """grid_sample(x, grid) per plan `pl`, into `out` when given (C-contiguous) or a new array."""
    y: np.ndarray = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", SAMPLE)
    if not y.size:
        return y
    n_items, channels = pl.out_shape[:2]
    acc = None if pl.mode == "nearest" else accumulate_dtype(x.dtype)
    xs = _bordered(x, pl.rank, acc or x.dtype)   # converted once, not per tap
    g = grid.reshape(n_items, pl.points, pl.rank)
    y3 = y.reshape(n_items, channels, pl.points)
    strides = arrays.c_strides(tuple(n + 1 for n in pl.x_shape[2:]))
    index = np.dtype(np.int32 if xs.shape[-1] <= dtypes.INT32_LIMIT else np.intp)
    step = max(1, CHUNK_ELEMENTS * x.dtype.itemsize // max(channels, 1))
    with np.errstate(invalid="ignore", over="ignore"):
        for n in range(n_items):
            for p0 in range(0, pl.points, step):
                part = slice(p0, min(p0 + step, pl.points))
                taps = [_axis_taps(pl, coordinates(g[n, part, pl.rank - 1 - d], a,
                                                   pl.coordinates), a, acc or pl.coordinates,
                                   index)
                        for d, a in enumerate(pl.axes)]
                if acc is None:   # nearest: one tap per axis
                    offset = sum(slots[0] * s for (slots, _), s in zip(taps, strides))
                    y3[n, :, part] = np.take(xs[n], offset, axis=1)
                    continue
                start = np.zeros(part.stop - part.start, index)
                total = _sum(xs[n], taps, strides, 0, start, acc)
                if y.dtype.name in dtypes.INT_TYPES:   # NaN (a NaN coordinate's) is 0
                    total = round_saturate(np.where(np.isnan(total), 0.0, total), y.dtype)
                y3[n, :, part] = total
    return y


# ---------------------------------------------------------------- AffineGrid

def run_affine(pl: AffinePlan, theta: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """affine_grid(theta) per plan `pl`, into `out` when given (C-contiguous) or a new array."""
    y: np.ndarray = arrays.output(out, theta, pl.out_shape, theta.dtype, "numpy", AFFINE)
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

