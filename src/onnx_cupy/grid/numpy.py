"""The NumPy path of GridSample and AffineGrid, from the plans (onnx_cupy.grid.plan), vectorized
over output positions and channels.

GridSample works through each batch item's output positions in chunks: per spatial axis the
coordinates, taps, weights and validity of the chunk's positions (in the coordinate type, operation
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

CHUNK_ELEMENTS = 1 << 16   # channels x positions of one chunk's temporaries


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


class _Taps:
    """One spatial axis of a chunk: per tap, input positions (ints, 0 where invalid), weights
    (the accumulate type) and validity."""

    def __init__(self, index: list[np.ndarray], weight: list[np.ndarray],
                 valid: list[np.ndarray]) -> None:
        self.index, self.weight, self.valid = index, weight, valid


def _inside(p: np.ndarray, a: Axis, f: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(integer positions, 0 where outside; whether inside [0, n - 1]) of positions in `f`."""
    valid: np.ndarray = (p >= f.type(0)) & (p <= a.constants(f)[5])
    return np.where(valid, p, 0).astype(np.intp), valid


def _axis_taps(pl: SamplePlan, x: np.ndarray, a: Axis, acc: np.dtype) -> _Taps:
    """The taps of coordinates `x` along axis `a`."""
    f = pl.coordinates
    if pl.mode == "nearest":
        if pl.pad_before_rounding:
            x = np.rint(pad(x, a, pl.padding, f))
        else:
            x = pad(np.rint(x), a, pl.padding, f)
        index, valid = _inside(x, a, f)
        return _Taps([index], [], [valid])
    if pl.mode == "linear":
        x = pad(x, a, pl.padding, f)
    low = np.floor(x)
    t = x - low
    if pl.mode == "linear":
        positions, weights = [low, low + f.type(1)], [f.type(1) - t, t]
    else:
        positions = [low + f.type(k) for k in (-1, 0, 1, 2)]
        positions = [pad(p, a, pl.padding, f) for p in positions]
        weights = cubic_weights(t)
    inside = [_inside(p, a, f) for p in positions]
    return _Taps([i for i, _ in inside], [w.astype(acc) for w in weights],
                 [v for _, v in inside])


def _sum(xs: np.ndarray, taps: list[_Taps], strides: tuple[int, ...], level: int,
         offset: np.ndarray, valid: np.ndarray, acc: np.dtype) -> np.ndarray:
    """The weighted sum over the taps of axes `level` and after, innermost first: (C, points)."""
    if level == len(taps):
        v = np.take(xs, offset, axis=1).astype(acc, copy=False)
        return np.where(valid, v, acc.type(0))
    ax = taps[level]
    total: np.ndarray | None = None
    for index, weight, ok in zip(ax.index, ax.weight, ax.valid):
        term = weight * _sum(xs, taps, strides, level + 1, offset + index * strides[level],
                             valid & ok, acc)
        total = term if total is None else total + term
    assert total is not None
    return total


def run_sample(pl: SamplePlan, x: np.ndarray, grid: np.ndarray, out: np.ndarray | None
               ) -> np.ndarray:
    """grid_sample(x, grid) per plan `pl`, into `out` when given (C-contiguous) or a new array."""
    y: np.ndarray = arrays.output(out, x, pl.out_shape, x.dtype, "numpy", SAMPLE)
    if not y.size:
        return y
    n_items, channels = pl.out_shape[:2]
    xs = np.ascontiguousarray(x).reshape(n_items, channels, -1)
    g = grid.reshape(n_items, pl.points, pl.rank)
    y3 = y.reshape(n_items, channels, pl.points)
    strides = arrays.c_strides(pl.x_shape[2:])
    acc = None if pl.mode == "nearest" else accumulate_dtype(x.dtype)
    step = max(1, CHUNK_ELEMENTS // max(channels, 1))
    with np.errstate(invalid="ignore", over="ignore"):
        for n in range(n_items):
            for p0 in range(0, pl.points, step):
                part = slice(p0, min(p0 + step, pl.points))
                taps = [_axis_taps(pl, coordinates(g[n, part, pl.rank - 1 - d], a,
                                                   pl.coordinates), a, acc or pl.coordinates)
                        for d, a in enumerate(pl.axes)]
                if acc is None:
                    offset = sum(t.index[0] * s for t, s in zip(taps, strides))
                    valid = np.logical_and.reduce([t.valid[0] for t in taps])
                    y3[n, :, part] = np.where(valid, np.take(xs[n], offset, axis=1),
                                              zero(x.dtype))
                    continue
                start = np.zeros(part.stop - part.start, np.intp)
                total = _sum(xs[n], taps, strides, 0, start, np.ones(start.shape, bool), acc)
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

