"""GridSample (opset versions 16, 20 and 22) and AffineGrid (20): sampling at normalized grid
positions, and the affine grids it samples.

GridSample. X has shape (N, C, D1, ..., Dr) and grid (N, O1, ..., Or, r); Y[n, c, o] samples
X[n, c] at the position grid[n, o]. The grid's last axis lists the coordinates innermost axis
first (x along Dr, y along Dr-1, ...), each normalized to [-1, 1]. Along spatial axis d of
length n, a grid value g becomes the pixel coordinate

  align_corners=0   x = ((g + 1) * n - 1) / 2         -1 and 1: the outer edges of the end pixels
  align_corners=1   x = (g + 1) / 2 * (n - 1)         -1 and 1: the centres of the end pixels

computed in float32 for float16, bfloat16 and float32 grids and in float64 for float64 grids (and
axes longer than 2^24), operation by operation in that order (as onnxruntime computes it, and
PyTorch for 5-D X; the nearest pixel depends on the last bit of x). PyTorch's layer
(`fused_unnormalize`) takes PyTorch's 2-D float32 form instead, x = fma(g + 1, n / 2, -0.5) with
align_corners=0 (its vectorized CPU kernel's multiply-add, rounded once; onnxruntime's form
differs from it by one unit in the last place of x in about one coordinate in 20), and that
kernel's reflection (`Axis.fold`). The interval [lo, hi] = [-0.5, n - 0.5]
(align_corners=0) or [0, n - 1] (align_corners=1) is the image; padding_mode says what lies
outside:

  zeros       samples outside [0, n - 1] read 0
  border      x clipped to [0, n - 1]
  reflection  x outside [lo, hi] reflected at lo and hi until inside, computed exactly (x
              modulo the period 2 (hi - lo), then one mirror image), then clipped to
              [0, n - 1]; an axis of one pixel with align_corners=1 (lo = hi) samples 0

Clipping maps NaN to 0 (the first pixel), so a NaN coordinate samples the first pixel under
border and reflection, as onnxruntime and PyTorch do; under zeros it lies outside. Modes:

  nearest   x rounded half to even, then padded (ONNX; `pad_before_rounding`: padded, then
            rounded, as PyTorch; the two differ only for reflection at ties with
            align_corners=0)
  linear    x padded; taps floor(x) + {0, 1}, weights (1 - t, t), t = x - floor(x)
  cubic     x as it is; taps floor(x) + {-1, 0, 1, 2}, Keys weights of t with a = -0.75, each
            tap padded on its own (zeros: outside reads 0; border: clipped; reflection:
            reflected, then clipped), as onnxruntime and PyTorch do

N-D sampling is separable and summed innermost axis first: along the last spatial axis each tap
row is weighed and summed, then those sums along the axis before, and so on (onnxruntime's and
onnx.reference's order), in float32 for 16- and 32-bit floats and float64 otherwise; weights are
computed in the coordinate type. A NaN or infinite coordinate gives NaN weights, so linear and
cubic samples are NaN where it is not clipped (PyTorch's results). Integer inputs are rounded half
to even and saturated (onnx_cupy.core.numerics); nearest moves every dtype unchanged (strings on
the NumPy path only; zeros padding gives the dtype's zero, the empty string for strings).
Mode names: GridSample-16 says bilinear, nearest, bicubic; GridSample-20 linear, nearest, cubic.
GridSample-16 takes 4-D inputs only; from 20 any r >= 1 (up to MAX_SPATIAL here).

AffineGrid. theta (N, 2, 3) with size (N, C, H, W) gives grid (N, H, W, 2); theta (N, 3, 4) with
size (N, C, D, H, W) gives (N, D, H, W, 3):

  grid[n, ..., k] = sum_j theta[n, k, j] * v_j + theta[n, k, r],  v = (x_W, y_H[, z_D])

summed in j order, where along an axis of length L position i has the normalized coordinate
(2i + 1 - L) / L (align_corners=0) or (2i - (L - 1)) / (L - 1) (align_corners=1; 0 where
L = 1), each one correctly rounded division, in float32 for 16- and 32-bit floats and float64
for float64; the output has theta's dtype.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import arrays, attributes, dtypes, opsets

SAMPLE = "GridSample"
AFFINE = "AffineGrid"
VERSIONS = (16, 20, 22)
MAX_SPATIAL = 5       # most spatial axes (GRID_MAXR): X of rank 3 to MAX_SPATIAL + 2
MAX_ELEMENTS = 2**62
# the mode names of each version, and the kind of sampling each name means
MODES = {16: ("bilinear", "nearest", "bicubic"), 20: ("linear", "nearest", "cubic"),
         22: ("linear", "nearest", "cubic")}
KINDS = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic",
         "cubic": "cubic"}
PADDING_MODES = ("zeros", "border", "reflection")
# taps per axis of each kind
TAPS = {"nearest": 1, "linear": 2, "cubic": 4}
CUBIC_A = -0.75

# Per kind of sampling, the version that brought each dtype of X (read by core.dtypes.check):
# nearest moves every dtype, linear and cubic interpolate numbers
_NUMBERS = {**dtypes.since(16, *dtypes.FLOATS, *dtypes.INT_TYPES), **dtypes.since(22, "bfloat16")}
DTYPES: dict[str, dict[str, int]] = {
    "nearest": {**_NUMBERS, **dtypes.since(16, "bool", "complex64", "complex128", dtypes.STRING)},
    "linear": _NUMBERS, "cubic": _NUMBERS,
}
GRID_DTYPES = {**dtypes.since(16, *dtypes.FLOATS), **dtypes.since(22, "bfloat16")}
THETA_DTYPES = dtypes.since(20, *dtypes.FLOATS, "bfloat16")


FLOAT32_EXACT = 2**24   # longest axis whose every position float32 names


def coordinate_dtype(grid_dtype: np.dtype, lengths: tuple[int, ...]) -> np.dtype:
    """The type coordinates are computed in: float64 for float64 grids and for axes longer than
    2^24 (where float32 cannot name every position), float32 otherwise."""
    wide = np.dtype(grid_dtype) == np.float64 or max(lengths, default=0) > FLOAT32_EXACT
    return np.dtype(np.float64 if wide else np.float32)


@dataclass(frozen=True)
class Axis:
    """One spatial axis of X: its length n. Its coordinates are x = (fma(g + 1, scale, addend) -
    shift) * half (the multiply-add rounded once) on the image [lo, hi], with last = n - 1, the
    constants made in the coordinate type F from n: F(n), 1, 0.5, -0.5, F(n) - 0.5 and addend 0
    (align_corners=0; `fused`: F(n) * 0.5, 0, 1 and addend -0.5), or F(n - 1) * 0.5, 0, 1, 0,
    F(n - 1) and addend 0 (align_corners=1): the module docstring's formulas (an addend of 0
    leaves the product's rounding alone), each constant exact for n below 2^24."""

    n: int
    align_corners: bool
    fused: bool = False   # PyTorch's 2-D float32 form (align_corners=0)

    @property
    def fold(self) -> bool:
        """Reflection as PyTorch's 2-D kernel computes it (the `fused` axes): x = min(e,
        2 (hi - lo) - e) + lo with e = |x - lo| - trunc(|x - lo| / (2 (hi - lo))) 2 (hi - lo),
        each step rounded (positions inside the image too); otherwise exactly, and only
        outside the image."""
        return self.fused

    def constants(self, f: np.dtype) -> tuple[Any, ...]:
        """(scale, shift, half, lo, hi, last, addend, fold) as scalars of the coordinate type
        `f` (fold: 1 or 0)."""
        t = f.type
        last = t(self.n - 1)
        fold = t(1 if self.fold else 0)
        if self.align_corners:
            return last * t(0.5), t(0), t(1), t(0), last, last, t(0), fold
        scale = t(self.n)
        if self.fused:
            return scale * t(0.5), t(0), t(1), t(-0.5), scale - t(0.5), last, t(-0.5), fold
        return scale, t(1), t(0.5), t(-0.5), scale - t(0.5), last, t(0), fold


@dataclass(frozen=True, eq=False)   # cached per configuration: hashed by identity
class SamplePlan:
    """A validated GridSample call: what both execution paths need."""

    version: int
    mode: str                  # the kind: nearest, linear, cubic
    padding: str
    align_corners: bool
    pad_before_rounding: bool  # nearest: PyTorch's order (pad, then round)
    x_shape: tuple[int, ...]
    grid_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    axes: tuple[Axis, ...]     # the spatial axes of X, outermost first
    op = SAMPLE                # the operator served (not a field)
    coordinates: np.dtype      # float32 or float64

    @property
    def rank(self) -> int:
        return len(self.axes)

    @property
    def points(self) -> int:
        """Output positions per batch item."""
        return math.prod(self.out_shape[2:])

    @property
    def taps(self) -> int:
        return TAPS[self.mode]


def _choice(name: str, value: Any, allowed: tuple[str, ...], every: tuple[str, ...],
            opset: int) -> str:
    """A STRING attribute of GridSample that `allowed` lists at the version in force (every
    version's values: `every`), with a hint for a name of another version."""
    if not isinstance(value, str):
        raise TypeError(f"{SAMPLE}: attribute '{name}' must be a string, got {value!r}")
    if value in allowed:
        return value
    expected = f"(expected one of {', '.join(allowed)})"
    if value not in every:
        raise ValueError(f"{SAMPLE}: attribute '{name}' = {value!r} is defined by no version of "
                         f"{SAMPLE} {expected} at {opsets.in_force(SAMPLE, opset)}")
    version = opsets.version(SAMPLE, opset)
    other = next(v for v in allowed if KINDS[v] == KINDS[value])   # modes: every name has a kind
    named = [v for v in VERSIONS if value in MODES[v]]
    when = (f"the name from {SAMPLE}-{named[0]} on" if named[0] > version
            else f"{SAMPLE}-{named[-1]}'s name")
    raise ValueError(f"{SAMPLE}: attribute '{name}' = {value!r} is not defined at "
                     f"{opsets.in_force(SAMPLE, opset)} {expected}; {value!r} is {when}, "
                     f"{SAMPLE}-{version} calls it {other!r}")


@functools.lru_cache(maxsize=256, typed=True)   # typed: 1.0 or True must not hit 1's plan
def plan_sample(opset: int, x_shape: tuple[int, ...], x_dtype: np.dtype,
                grid_shape: tuple[int, ...], grid_dtype: np.dtype, mode: Any, padding_mode: Any,
                align_corners: Any, pad_before_rounding: bool, fused_unnormalize: bool = False
                ) -> SamplePlan:
    """Validate a GridSample call for the version in force at `opset` (mode None: the version's
    default) and compute its output shape and axes (`fused_unnormalize`: PyTorch's 2-D float32
    coordinates, see the module docstring)."""
    version = opsets.version(SAMPLE, opset)
    every = tuple(dict.fromkeys(m for v in VERSIONS for m in MODES[v]))
    name = _choice("mode", MODES[version][0] if mode is None else mode, MODES[version], every,
                   opset)
    kind = KINDS[name]
    padding = _choice("padding_mode", padding_mode, PADDING_MODES, PADDING_MODES, opset)
    ac = bool(attributes.flag(SAMPLE, "align_corners", align_corners))
    dtypes.check(SAMPLE, DTYPES[kind], x_dtype, version, opset, mode=name, input="X")
    dtypes.check(SAMPLE, GRID_DTYPES, grid_dtype, version, opset, input="grid")
    rank = len(x_shape) - 2
    if version == 16 and rank != 2:
        raise ValueError(f"{SAMPLE}: X must be 4-D (N, C, H, W) at {opsets.in_force(SAMPLE, opset)}"
                         f", got shape {x_shape}; other ranks came with {SAMPLE}-20")
    if not 1 <= rank <= MAX_SPATIAL:
        raise ValueError(f"{SAMPLE}: X must have rank 3 to {MAX_SPATIAL + 2} (N, C and 1 to "
                         f"{MAX_SPATIAL} spatial axes), got shape {x_shape}")
    expected = f"(N, {', '.join(f'O{d + 1}' for d in range(rank))}, {rank})"
    if len(grid_shape) != rank + 2 or grid_shape[-1] != rank:
        raise ValueError(f"{SAMPLE}: grid must have shape {expected} for X of shape {x_shape}, "
                         f"got {grid_shape}")
    if grid_shape[0] != x_shape[0]:
        raise ValueError(f"{SAMPLE}: grid has {grid_shape[0]} batch items, X has {x_shape[0]} "
                         f"(grid shape {grid_shape}, X shape {x_shape})")
    out_shape = (*x_shape[:2], *grid_shape[1:-1])
    if math.prod(out_shape) > MAX_ELEMENTS:
        raise ValueError(f"{SAMPLE}: output shape {out_shape} has more than 2^62 elements")
    attributes.fits(SAMPLE, out_shape, x_dtype, f"X of shape {x_shape} and grid of shape "
                    f"{grid_shape}")
    if math.prod(out_shape) and 0 in x_shape[2:]:
        raise ValueError(f"{SAMPLE}: X has an empty spatial axis (shape {x_shape}): there is "
                         f"nothing to sample for the output of shape {out_shape}")
    f = coordinate_dtype(grid_dtype, x_shape[2:])
    fused = fused_unnormalize and rank == 2 and not ac and f == np.float32
    return SamplePlan(version, kind, padding, ac, pad_before_rounding, x_shape, grid_shape,
                      out_shape, tuple(Axis(n, ac, fused) for n in x_shape[2:]), f)


def make_sample(x_shape: tuple[int, ...], x_dtype: Any, grid_shape: tuple[int, ...],
                   grid_dtype: Any, opset: int, *, mode: Any = None, padding_mode: Any = "zeros",
                   align_corners: Any = 0, pad_before_rounding: bool = False,
                   fused_unnormalize: bool = False) -> SamplePlan:
    """The plan of a GridSample call (see `plan_sample`)."""
    return attributes.cached(plan_sample, opset, tuple(x_shape), np.dtype(x_dtype),
                             tuple(grid_shape), np.dtype(grid_dtype), mode, padding_mode,
                             align_corners, bool(pad_before_rounding), bool(fused_unnormalize))


# ---------------------------------------------------------------- AffineGrid

@dataclass(frozen=True, eq=False)
class AffinePlan:
    """A validated AffineGrid call."""

    version: int
    align_corners: bool
    theta_shape: tuple[int, ...]
    out_shape: tuple[int, ...]    # (N, [D,] H, W, rank)
    op = AFFINE                   # the operator served (not a field)

    @property
    def rank(self) -> int:
        return self.out_shape[-1]

    @property
    def lengths(self) -> tuple[int, ...]:
        """The spatial lengths, outermost first ([D,] H, W)."""
        return self.out_shape[1:-1]


def base(i: Any, length: int, align_corners: bool, dtype: np.dtype) -> Any:
    """The normalized coordinate of positions `i` (ints) along an axis of `length`, in `dtype`:
    one correctly rounded division of the exact integers of the module docstring's formula."""
    f = dtype.type
    if not align_corners:
        return f(2 * i + 1 - length) / f(length)
    if length == 1:
        return f(0) * i
    return f(2 * i - (length - 1)) / f(length - 1)


def _size(value: Any) -> tuple[int, ...]:
    """AffineGrid's `size` input read on the host: 1-D integers."""
    a = arrays.host_vector(AFFINE, "size", value, integers=True)
    if a is None:
        raise TypeError(f"{AFFINE}: input 'size' is required")
    return tuple(int(v) for v in a.tolist())


@functools.lru_cache(maxsize=256, typed=True)
def plan_affine(opset: int, theta_shape: tuple[int, ...], theta_dtype: np.dtype,
                size: tuple[int, ...], align_corners: Any) -> AffinePlan:
    """Validate an AffineGrid call for the version in force at `opset`; its output shape."""
    version = opsets.version(AFFINE, opset)
    ac = bool(attributes.flag(AFFINE, "align_corners", align_corners))
    dtypes.check(AFFINE, THETA_DTYPES, theta_dtype, version, opset, input="theta")
    if len(theta_shape) != 3 or theta_shape[1:] not in ((2, 3), (3, 4)):
        raise ValueError(f"{AFFINE}: theta must have shape (N, 2, 3) or (N, 3, 4), got "
                         f"{theta_shape}")
    rank = theta_shape[1]
    names = "(N, C, H, W)" if rank == 2 else "(N, C, D, H, W)"
    if len(size) != rank + 2:
        raise ValueError(f"{AFFINE}: input 'size' must hold {rank + 2} values {names} for theta "
                         f"of shape {theta_shape}, got {list(size)}")
    if any(v < 0 for v in size):
        raise ValueError(f"{AFFINE}: input 'size' values must be >= 0, got {list(size)}")
    if size[0] != theta_shape[0]:
        raise ValueError(f"{AFFINE}: input 'size' = {list(size)} names {size[0]} batch items, "
                         f"theta has {theta_shape[0]}")
    out_shape = (theta_shape[0], *size[2:], rank)
    if math.prod(out_shape) > MAX_ELEMENTS:
        raise ValueError(f"{AFFINE}: output shape {out_shape} has more than 2^62 elements")
    attributes.fits(AFFINE, out_shape, theta_dtype, f"input 'size' = {list(size)}")
    return AffinePlan(version, ac, theta_shape, out_shape)


def make_affine(theta_shape: tuple[int, ...], theta_dtype: Any, size: Any, opset: int, *,
                   align_corners: Any = 0) -> AffinePlan:
    """The plan of an AffineGrid call (`size` read on the host; see `plan_affine`)."""
    return attributes.cached(plan_affine, opset, tuple(theta_shape), np.dtype(theta_dtype),
                             _size(size), align_corners)
