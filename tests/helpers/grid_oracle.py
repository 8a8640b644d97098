"""GridSample and AffineGrid written out as loops over output positions and taps, in float64 where
a value is summed (coordinates in the grid's float type, as the rules require): an oracle that
shares no code with onnx_cupy.grid. Reflection folds in exact rational arithmetic; taps multiply
their per-axis weights (the library nests the sums instead)."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

A = -0.75   # the cubic kernel's a


def _coordinate(g: Any, n: int, align_corners: bool, f: type) -> Any:
    """The pixel coordinate of grid value g along an axis of length n, in the float type f."""
    g = f(g)
    with np.errstate(all="ignore"):
        if align_corners:
            return (g + f(1)) * (f(n - 1) * f(0.5))
        return ((g + f(1)) * f(n) - f(1)) * f(0.5)


def _clip(x: Any, n: int, f: type) -> Any:
    """x clipped to [0, n - 1]; NaN to 0."""
    if math.isnan(x):
        return f(0)
    return f(min(max(x, f(0)), f(n - 1)))


def _reflect(x: Any, n: int, align_corners: bool, f: type) -> Any:
    """x reflected at the image's bounds until inside (exactly), rounded to f, then clipped."""
    lo, hi = (Fraction(0), Fraction(n - 1)) if align_corners else (Fraction(-1, 2),
                                                                    Fraction(2 * n - 1, 2))
    if not math.isfinite(x):
        return f(0)   # nowhere: clipped to the first pixel
    v = Fraction(float(x))
    if lo <= v <= hi:
        return _clip(x, n, f)
    span = hi - lo
    if span == 0:
        return f(0)
    m = abs(v - lo) % (2 * span)
    folded = lo + (m if m <= span else 2 * span - m)
    return _clip(f(float(folded)), n, f)


def _pad(x: Any, n: int, padding: str, align_corners: bool, f: type) -> Any:
    if padding == "border":
        return _clip(x, n, f)
    if padding == "reflection":
        return _reflect(x, n, align_corners, f)
    return x


def _keys(t: float) -> list[float]:
    """Cubic weights of the taps at -1, 0, 1, 2 for fraction t (NaN for a NaN t)."""
    if math.isnan(t):
        return [math.nan] * 4

    def w(s: float) -> float:
        s = abs(s)
        if s <= 1:
            return (A + 2) * s**3 - (A + 3) * s**2 + 1
        if s < 2:
            return A * s**3 - 5 * A * s**2 + 8 * A * s - 4 * A
        return 0.0
    return [w(t + 1), w(t), w(1 - t), w(2 - t)]


def _taps(x: Any, n: int, mode: str, padding: str, align_corners: bool, f: type,
          pad_first: bool) -> list[tuple[int | None, float]]:
    """(input index or None for outside, weight) per tap of coordinate x along one axis."""
    def inside(p: Any) -> int | None:
        return int(p) if not math.isnan(p) and 0 <= p <= n - 1 else None

    if mode == "nearest":
        if pad_first:
            p = np.rint(_pad(x, n, padding, align_corners, f))
        else:
            p = _pad(np.rint(x), n, padding, align_corners, f)
        return [(inside(p), 1.0)]
    if mode == "linear":
        x = _pad(x, n, padding, align_corners, f)
        low = np.floor(x)
        t = float(x - low)
        return [(inside(low), 1.0 - t), (inside(low + f(1)), t)]
    low = np.floor(x)
    t = float(x - low)
    taps = []
    for k, w in zip((-1, 0, 1, 2), _keys(t)):
        taps.append((inside(_pad(low + f(k), n, padding, align_corners, f)), w))
    return taps


def grid_sample(x: np.ndarray, grid: np.ndarray, mode: str = "linear", padding: str = "zeros",
                align_corners: bool = False, pad_first: bool = False) -> np.ndarray:
    """GridSample's values in float64 (nearest: x's dtype), mode linear/nearest/cubic."""
    n_items, channels, *spatial = x.shape
    rank = len(spatial)
    f = np.float64 if grid.dtype == np.float64 or max(spatial, default=0) > 2**24 else np.float32
    numeric = x.dtype.kind in "iuf" or x.dtype.name == "bfloat16"
    out = np.zeros((n_items, channels, *grid.shape[1:-1]),
                   dtype=np.float64 if mode != "nearest" and numeric else x.dtype)
    if mode == "nearest" and x.dtype.kind in "OUS":
        out[...] = ""
    xf = x.astype(np.float64) if mode != "nearest" else x
    for n in range(n_items):
        for o in np.ndindex(*grid.shape[1:-1]):
            coords = [_coordinate(float(grid[(n, *o, rank - 1 - d)]), spatial[d], align_corners, f)
                      for d in range(rank)]
            axes = [_taps(c, spatial[d], mode, padding, align_corners, f, pad_first)
                    for d, c in enumerate(coords)]
            if mode == "nearest":
                index = [a[0][0] for a in axes]
                if None not in index:
                    out[(n, slice(None), *o)] = x[(n, slice(None), *index)]
                continue
            total = np.zeros(channels)
            for combo in itertools.product(*axes):
                weight = math.prod(w for _, w in combo)
                index = [i for i, _ in combo]
                value = (np.zeros(channels) if None in index
                         else xf[(n, slice(None), *index)])
                with np.errstate(invalid="ignore"):
                    total = total + weight * value
            out[(n, slice(None), *o)] = total
    return out


def affine_grid(theta: np.ndarray, size: list[int], align_corners: bool = False) -> np.ndarray:
    """AffineGrid in float64: theta applied to the normalized positions of an output of size."""
    lengths = size[2:]
    rank = len(lengths)
    out = np.zeros((theta.shape[0], *lengths, rank))
    t = theta.astype(np.float64)

    def base(i: int, length: int) -> float:
        if align_corners:
            return 0.0 if length == 1 else -1 + 2 * i / (length - 1)
        return -1 + (2 * i + 1) / length

    for n in range(theta.shape[0]):
        for pos in np.ndindex(*lengths):
            v = [base(i, length) for i, length in zip(pos[::-1], lengths[::-1])]  # x first
            for k in range(rank):
                out[(n, *pos, k)] = sum(t[n, k, j] * v[j] for j in range(rank)) + t[n, k, rank]
    return out
