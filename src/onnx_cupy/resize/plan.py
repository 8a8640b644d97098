"""Resize, opset versions 10, 11, 13, 18 and 19.

Each resized axis (input length n, output length m, scale s, target width w) maps output
coordinate y to the input coordinate x, computed in float64 for linear and cubic on float64 and
integer inputs:
  half_pixel            (y + 0.5) / s - 0.5
  half_pixel_symmetric  n / 2 * (1 - m / w) + (y + 0.5) / s - 0.5                 (from 19)
                        = (n - 1) / 2 + (2y + 1 - m) / (2s), as computed (w = n * s)
  pytorch_half_pixel    m > 1 ? (y + 0.5) / s - 0.5 : 0
  align_corners         w > 1 ? y * (n - 1) / (w - 1) : 0  (w, not m: ONNX's node tests)
  asymmetric            y / s                                       (the only mode of Resize-10)
  tf_half_pixel_for_nn  (y + 0.5) / s                                              (11 only)
  tf_crop_and_resize    m > 1 ? r0 * (n - 1) + y * (r1 - r0) * (n - 1) / (m - 1)
                              : 0.5 * (r0 + r1) * (n - 1),
                        in float32 (as TensorFlow's CropAndResize and onnxruntime), with
                        roi = (r0, r1) (omitted: (0, 1)); x outside [0, n - 1] gives
                        extrapolation_value
For nearest, x is computed as onnxruntime computes it, every operation in float32 on float32 s
(from sizes: float32(m) / float32(n)) and float32 y, in the order written above (e.g. half_pixel:
((y + 0.5f) / s) - 0.5f), at every axis length (past 2^24 too, where float32 y and x skip
indices as onnxruntime's do), since which input element is nearest depends on the last bit of x;
and a fraction of x within NEAREST_TIE of 0.5 rounds as the tie 0.5 (onnxruntime's tie test
since its 2026 fix of GH28291: 20 -> 6 half_pixel picks 15 for output 4 under
round_prefer_ceil, where x = 14.499999f). half_pixel_symmetric keeps its one-rounding form and
exact ties; tf_crop_and_resize is float32 in every mode. These transforms are the plan's default
coordinate source (`Transform`); a caller may give another (`CoordinateSource`: the PyTorch layer
gives PyTorch's), which maps each output coordinate to x, says the scale antialias filters
stretch by and how far from 0.5 a fraction still rounds as a tie.
X is sampled at taps around x, indices clamped into [0, n) (edge padding):
  nearest  1 tap at x rounded by nearest_mode (round_prefer_floor, round_prefer_ceil: the nearer
           integer, a tie to the lower or upper one; floor, ceil); Resize-10, which has no
           nearest_mode: floor where s >= 1, ceil where s < 1 (as onnxruntime and ONNX's
           opset-10 node test)
  linear   2 taps, weights (1 - t, t), t = x - floor(x)
  cubic    4 taps, the Keys kernel with a = cubic_coeff_a
  antialias=1 (linear, cubic): the kernel stretched by max(1, 1 / s), weights normalized to sum 1
  exclude_outside=1 (linear, cubic): taps outside [0, n) get weight 0, the rest renormalized.
Linear and cubic on float16, bfloat16 and float32 inputs take their tables as the peer of the
calling surface computes them in float32 (`CoordinateSource.single`): onnxruntime's arithmetic
for the ONNX operators (`single_table`: x in float32 as for nearest, the weights in float32
operation by operation), PyTorch's for onnx_cupy.nn.functional; a float32 result then agrees
with the peer's to a few units in the last place instead of differing by the rounding of x
(at 0-255 pixel values, about 1e-2). Either way the tables are made once, on the host, and the
kernels and the NumPy path read the same ones.
Y is the tensor product of the per-axis weights applied to X. An axis with scale 1 and unchanged
length is left as is (as onnxruntime and onnx.reference do), also under tf_half_pixel_for_nn,
whose formula would otherwise shift it by half a pixel, and under tf_crop_and_resize with the
roi (0, 1).

Lengths: scales give m = floor(w) with w = n * s in float64 (also under tf_crop_and_resize: the
roi moves the samples only; as onnxruntime, onnx.reference and shape inference); sizes give
m = sizes, s = m / n, w = m; keep_aspect_ratio_policy not_larger / not_smaller take s = min / max
over the resized axes of sizes / n, m = floor(s * n + 0.5), w = s * n. `scales` are ONNX floats
and float attributes ONNX FLOATs: both are rounded to float32 first, as in a model.

dtypes: nearest gathers every ONNX dtype unchanged (strings on the NumPy path only). Linear and
cubic take float16, bfloat16 (from opset 13), float32 and float64 (16-bit types accumulate in
float32), and the integer types, computed in float64 and rounded half to even with saturation to
the dtype's range (as onnx.reference; onnxruntime truncates); a sum within 2^-40 relative of
k + 0.5 counts as the tie, so that every path rounds an exact tie alike whatever the order of its
terms (onnx_cupy.core.numerics). The extrapolation value converts to integers the same way.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from ..core import arrays, dtypes, numerics, opsets
from ..core.attributes import cached, differs, fits, flag, float32, ints

OP = "Resize"
MAX_DIMS = 16              # most axes left after merging unresized neighbours (RESIZE_MAXD)
MAX_ELEMENTS = 2**62
# nearest's tie band: a coordinate whose fraction lies within this of 0.5 rounds as the tie
# (onnxruntime 1.32: ties at 2^-20 from 0.5, none at 2^-19; no float32 x falls between)
NEAREST_TIE = 1e-6

VERSIONS = (10, 11, 13, 18, 19)
MODES = {v: ("nearest", "linear") if v == 10 else ("nearest", "linear", "cubic") for v in VERSIONS}
_COMMON = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
COORDINATE_MODES = {10: ("asymmetric",), 11: _COMMON + ("tf_half_pixel_for_nn",), 13: _COMMON,
                    18: _COMMON, 19: _COMMON + ("half_pixel_symmetric",)}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")
# Per mode (Resize's variant of the families' per-operator tables: its modes take different
# dtypes), the version that brought each input dtype (read by core.dtypes.check): nearest
# gathers every dtype, linear and cubic interpolate numbers
_NUMBERS = {**dtypes.since(10, *dtypes.FLOATS, *dtypes.INT_TYPES), **dtypes.since(13, "bfloat16")}
DTYPES: dict[str, dict[str, int]] = {
    "nearest": {**_NUMBERS, **dtypes.since(10, "bool", "complex64", "complex128", dtypes.STRING)},
    "linear": _NUMBERS, "cubic": _NUMBERS,
}
DEFAULTS: dict[str, Any] = {
    "antialias": 0, "axes": None, "coordinate_transformation_mode": "half_pixel",
    "cubic_coeff_a": -0.75, "exclude_outside": 0, "extrapolation_value": 0.0,
    "keep_aspect_ratio_policy": "stretch", "mode": "nearest", "nearest_mode": "round_prefer_floor",
}

@dataclass(frozen=True)
class Attributes:
    """Validated attributes; at version 10 the fixed asymmetric/floor behaviour."""

    mode: str
    coordinate_transformation_mode: str
    nearest_mode: str | None   # None: Resize-10 (floor on growing axes, ceil on shrinking ones)
    cubic_coeff_a: float
    exclude_outside: bool
    extrapolation_value: float
    antialias: bool
    axes: tuple[int, ...] | None
    keep_aspect_ratio_policy: str


@dataclass(frozen=True, eq=False)
class AxisTable:
    """One resized axis: per output coordinate, `taps` input indices (clamped into [0, n)) and
    their weights; `outside` marks the coordinates tf_crop_and_resize extrapolates."""

    axis: int
    index: np.ndarray    # int64 [m, taps]
    weight: np.ndarray   # float64 [m, taps]
    outside: np.ndarray  # bool [m]

    @property
    def taps(self) -> int:
        return int(self.index.shape[1])


@dataclass(frozen=True, eq=False)
class ResizePlan:
    """Everything both execution paths need, computed once on the host (hashed by identity:
    the key of the per-device table cache)."""

    version: int
    mode: str
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    tables: tuple[AxisTable, ...]  # resized axes, ascending (none for axes mapped onto themselves)
    fill: np.ndarray | None        # extrapolation_value as a 0-d array of X's dtype (None: strings)
    op: str = OP                   # the operator served (its errors name it): Resize or Upsample


class Axis(NamedTuple):
    """One resized axis: its lengths, scale, target width and roi."""

    axis: int
    n: int        # input length
    m: int        # output length
    s: float      # scale
    w: float      # target width (m before flooring/rounding)
    r0: float     # roi start and end
    r1: float


class CoordinateSource(Hashable, Protocol):
    """Where a resized axis samples its input: `coordinates(a, nearest)` gives, for each output
    coordinate of axis `a`, the input coordinate x (float64, computed as the rounding of
    `nearest` must see it) and whether it is extrapolated (tf_crop_and_resize), or None where
    the axis is left as is; `filter_scale(a)` is the scale antialias filters stretch by (by
    1 / min(1, scale)); `tie(a)` how far from 0.5 a fraction of x may lie and still round as a
    tie (nearest's round_prefer_floor / round_prefer_ceil). Hashable: plans are cached by it."""

    def coordinates(self, a: Axis, nearest: bool) -> tuple[np.ndarray, np.ndarray] | None: ...

    def filter_scale(self, a: Axis) -> float: ...

    def tie(self, a: Axis) -> float: ...

    def single(self, a: Axis, at: Attributes, dtype: np.dtype) -> Table | None:
        """Linear and cubic (antialias too) on 16- and 32-bit floats: the axis' table as the
        peer computes it in float32 (indices clamped into [0, n), weights, outside), or None
        where the axis is left as is."""
        ...


# an axis' (index [m, taps], weight [m, taps], outside [m]) as `_table` gives them
Table = tuple[np.ndarray, np.ndarray, np.ndarray]
# the input dtypes whose linear and cubic tables follow the peer's float32 arithmetic
SINGLE = ("float16", "bfloat16", "float32")


@dataclass(frozen=True)
class Transform:
    """ONNX's coordinate_transformation_mode `mode` as a coordinate source (the module docstring
    gives the formulas): an axis with scale 1 and unchanged length is left as is (under
    tf_crop_and_resize only with the roi (0, 1))."""

    mode: str

    def coordinates(self, a: Axis, nearest: bool) -> tuple[np.ndarray, np.ndarray] | None:
        if a.s == 1 and a.m == a.n and (self.mode != "tf_crop_and_resize"
                                        or (a.r0, a.r1) == (0, 1)):
            return None
        return _source(self.mode, a, nearest)

    def filter_scale(self, a: Axis) -> float:
        return a.s

    def tie(self, a: Axis) -> float:
        return 0.0 if self.mode == "half_pixel_symmetric" else NEAREST_TIE

    def single(self, a: Axis, at: Attributes, dtype: np.dtype) -> Table | None:
        """onnxruntime's float32 tables (`single_table`)."""
        if self.coordinates(a, False) is None:
            return None
        return single_table(self.mode, a, at)


# ---------------------------------------------------------------- attributes and inputs

def _choice(name: str, value: Any, table: Mapping[int, tuple[str, ...]], opset: int) -> str:
    version = opsets.version(OP, opset)
    if not isinstance(value, str):
        raise TypeError(f"{OP}: attribute '{name}' must be a string, got {value!r}")
    allowed = table[version]
    if value in allowed:
        return value
    defined = [v for v in VERSIONS if value in table[v]]
    expected = f"(expected one of {', '.join(allowed)})"
    if not defined:   # no version has it: say so, and name the ONNX value of a PyTorch spelling
        hint = _NOT_ONNX.get((name, value), "")
        raise ValueError(f"{OP}: attribute '{name}' = {value!r} is defined by no version of "
                         f"{OP} {expected} at {opsets.in_force(OP, opset)}{hint}")
    if min(defined) > version:
        note = f"it came with Resize-{min(defined)}"
    else:
        removed = VERSIONS[VERSIONS.index(max(defined)) + 1]
        note = f"it exists only up to Resize-{max(defined)} (removed in opset {removed})"
    raise ValueError(f"{OP}: attribute '{name}' = {value!r} is not defined at "
                     f"{opsets.in_force(OP, opset)} {expected}; {note}")


# (attribute, value) -> what to write instead, for values no version defines that users bring
# from PyTorch's interpolate
_NOT_ONNX = {
    ("mode", "bilinear"): "; PyTorch's 'bilinear' is mode 'linear' (on two axes)",
    ("mode", "trilinear"): "; PyTorch's 'trilinear' is mode 'linear' (on three axes)",
    ("mode", "bicubic"): "; PyTorch's 'bicubic' is mode 'cubic'",
    ("mode", "nearest-exact"): ("; PyTorch's 'nearest-exact' is mode 'nearest' with "
                                "coordinate_transformation_mode 'half_pixel' and nearest_mode "
                                "'round_prefer_ceil'"),
    ("mode", "area"): "; PyTorch's 'area' (adaptive average pooling) has no Resize mode",
}


# roi, scales and sizes as read on the host (None: not given)
Inputs = tuple[tuple[float, ...] | None, tuple[float, ...] | None, tuple[int, ...] | None]

_ATTRIBUTES_SEEN: dict[tuple[Hashable, ...], Attributes] = {}
_SCALARS = (str, int, float, np.generic, type(None))


def attributes(opset: int, **given: Any) -> Attributes:
    """Validate the attributes for the Resize version in force at `opset` (names as in ONNX,
    defaults in DEFAULTS)."""
    if not all(isinstance(v, _SCALARS) for v in given.values()):  # axes given as a sequence
        return _attributes(opset, given)
    try:  # scalars of the same type, value and sign validate the same: remember valid sets
        key = (opset, tuple(given.items()), tuple(map(type, given.values())),
               tuple(math.copysign(1.0, given[k]) for k in ("cubic_coeff_a", "extrapolation_value")
                     if k in given))
        hit = _ATTRIBUTES_SEEN.get(key)
    except TypeError:  # a value that is no number where one belongs: let validation say so
        return _attributes(opset, given)
    if hit is None:
        hit = _attributes(opset, given)
        if len(_ATTRIBUTES_SEEN) < 512:
            _ATTRIBUTES_SEEN[key] = hit
    return hit


def _attributes(opset: int, given: dict[str, Any]) -> Attributes:
    version = opsets.version(OP, opset)
    opsets.check_given(OP, opset, {k: differs(v, DEFAULTS[k]) for k, v in given.items()})
    mode = _choice("mode", given["mode"], MODES, opset)
    if version == 10:
        return Attributes(mode, "asymmetric", None, -0.75, False, 0.0, False, None, "stretch")
    antialias = bool(flag(OP, "antialias", given["antialias"]))
    if antialias and mode == "nearest":
        raise ValueError(f"{OP}: attribute 'antialias' = 1 applies to modes 'linear' and 'cubic', "
                         f"not to mode 'nearest'")
    cubic_a = float32(OP, "cubic_coeff_a", given["cubic_coeff_a"])
    if not math.isfinite(cubic_a):
        raise ValueError(f"{OP}: attribute 'cubic_coeff_a' must be finite, got {cubic_a!r}")
    axes = given["axes"]
    return Attributes(
        mode,
        _choice("coordinate_transformation_mode", given["coordinate_transformation_mode"],
                COORDINATE_MODES, opset),
        _choice("nearest_mode", given["nearest_mode"], dict.fromkeys(VERSIONS, NEAREST_MODES),
                opset),
        cubic_a,
        bool(flag(OP, "exclude_outside", given["exclude_outside"])),
        float32(OP, "extrapolation_value", given["extrapolation_value"]),
        antialias,
        None if axes is None else ints(OP, "axes", axes),
        _choice("keep_aspect_ratio_policy", given["keep_aspect_ratio_policy"],
                dict.fromkeys(VERSIONS, POLICIES), opset),
    )


def _vector(name: str, value: Any, op: str = OP) -> tuple[Any, ...] | None:
    """A 1-D roi/scales/sizes input read on the host as a tuple (() when empty: not given).
    scales are rounded to float32 (tensor(float)), sizes must be integers."""
    a = arrays.host_vector(op, name, value, integers=name == "sizes")
    if a is None or a.size == 0:
        return None if a is None else ()
    if name == "sizes":
        return tuple(a.tolist())
    wanted = np.float32 if name == "scales" else np.float64
    if a.dtype != wanted:
        with np.errstate(over="ignore"):
            a = a.astype(wanted)
    return tuple(a.tolist())


# ---------------------------------------------------------------- plan

def resized_axes(axes: tuple[int, ...] | None, rank: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(rank))
    bad = [a for a in axes if not -rank <= a < rank]
    if bad:
        raise ValueError(f"{OP}: attribute 'axes' = {list(axes)} has values out of range "
                         f"[{-rank}, {rank - 1}] for an input of rank {rank}")
    norm = tuple(a % rank for a in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"{OP}: attribute 'axes' = {list(axes)} repeats an axis")
    return norm


def _lengths(shape: tuple[int, ...], axes: tuple[int, ...], roi: tuple[float, ...] | None,
             scales: tuple[float, ...] | None, sizes: tuple[int, ...] | None, at: Attributes
             ) -> list[Axis]:
    """Per resized axis: lengths, scale and target width, from scales or sizes."""
    given = [(name, v) for name, v in (("scales", scales), ("sizes", sizes)) if v]
    if len(given) != 1:
        hint = (f"; the roi {list(roi)} was given: the second positional argument of resize() is "
                f"'roi' (ONNX's input order X, roi, scales, sizes), so pass scales= or sizes= by "
                f"keyword" if roi and not given else "")
        raise ValueError(f"{OP}: exactly one of the inputs 'scales' and 'sizes' must be given "
                         f"(non-empty), got {'both' if given else 'neither'}{hint}")
    name, values = given[0]
    k = len(axes)
    what = "the length of 'axes'" if at.axes is not None else "the rank of X"
    if len(values) != k:
        raise ValueError(f"{OP}: input '{name}' has {len(values)} values, expected {k} ({what})")
    if roi:
        if len(roi) != 2 * k:
            raise ValueError(f"{OP}: input 'roi' has {len(roi)} values, expected {2 * k} "
                             f"(twice {what})")
        if not all(math.isfinite(v) for v in roi):
            raise ValueError(f"{OP}: input 'roi' values must be finite, got {list(roi)}")
    starts, ends = (roi[:k], roi[k:]) if roi else ((0.0,) * k, (1.0,) * k)
    ns = [shape[a] for a in axes]
    if scales:
        if not all(math.isfinite(s) and s > 0 for s in scales):
            raise ValueError(f"{OP}: input 'scales' values must be finite and > 0, "
                             f"got {list(scales)}")
        widths = [n * s for n, s in zip(ns, scales)]
        outs = [math.floor(w) for w in widths]
        result = [Axis(a, n, m, s, w, r0, r1) for a, n, m, s, w, r0, r1 in zip(
            axes, ns, outs, scales, widths, starts, ends)]
    elif sizes:  # the one given
        if any(m < 0 for m in sizes):
            raise ValueError(f"{OP}: input 'sizes' values must be >= 0, got {list(sizes)}")
        result = _sized(axes, ns, sizes, starts, ends, at.keep_aspect_ratio_policy)
    for a in result:
        if a.n == 0 and a.m > 0:
            raise ValueError(f"{OP}: axis {a.axis} of X is empty and cannot be resized to "
                             f"length {a.m}")
    return result


def _sized(axes: tuple[int, ...], ns: list[int], sizes: tuple[int, ...],
           starts: tuple[float, ...], ends: tuple[float, ...], policy: str) -> list[Axis]:
    if policy == "stretch":
        return [Axis(a, n, m, m / n if n else 1.0, float(m), r0, r1)
                for a, n, m, r0, r1 in zip(axes, ns, sizes, starts, ends)]
    if 0 in ns:
        raise ValueError(f"{OP}: keep_aspect_ratio_policy {policy!r} needs non-empty resized axes, "
                         f"got lengths {ns}")
    ratios = [m / n for m, n in zip(sizes, ns)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    return [Axis(a, n, math.floor(s * n + 0.5), s, s * n, r0, r1)
            for a, n, r0, r1 in zip(axes, ns, starts, ends)]


def _source(ctm: str, a: Axis, nearest: bool) -> tuple[np.ndarray, np.ndarray]:
    """Input coordinate of every output coordinate, and the tf_crop_and_resize outside mask;
    for `nearest` every operation in float32, as onnxruntime computes it."""
    single = nearest and ctm != "half_pixel_symmetric"
    f: Any = np.float32 if single else np.float64
    y: Any = np.arange(a.m, dtype=f)
    n, w, half, one = f(a.n), f(a.w), f(0.5), f(1)
    # from sizes (w = m), onnxruntime's float32 scale is float32(m) / float32(n)
    s = f(a.m) / f(a.n) if single and a.w == a.m and a.n else f(a.s)

    def per_scale(v: np.ndarray) -> np.ndarray:  # v / s
        scaled: np.ndarray = v / s
        return scaled

    outside = np.zeros(a.m, dtype=bool)
    if ctm == "half_pixel":
        x = per_scale(y + half) - half
    elif ctm == "half_pixel_symmetric":  # the formula with w = n * s: one rounding, not five
        x = (n - 1) / 2 + per_scale(2 * y + 1 - a.m) / 2
    elif ctm == "pytorch_half_pixel":
        x = per_scale(y + half) - half if a.m > 1 else np.zeros(a.m)
    elif ctm == "align_corners":
        x = y * (n - one) / (w - one) if a.w > 1 else np.zeros(a.m)
    elif ctm == "asymmetric":
        x = per_scale(y)
    elif ctm == "tf_half_pixel_for_nn":
        x = per_scale(y + half)
    else:  # tf_crop_and_resize, in float32 (as TensorFlow's CropAndResize and onnxruntime)
        f = np.float32
        r0, r1, last = f(a.r0), f(a.r1), f(a.n - 1)
        if a.m > 1:
            x = r0 * last + y.astype(f) * (r1 - r0) * last / f(a.m - 1)
        else:
            x = np.full(a.m, f(0.5 * float(r0 + r1) * (a.n - 1)))
        x = x.astype(np.float64)
        outside = (x < 0) | (x > a.n - 1)
    return np.asarray(x, dtype=np.float64), outside


def _cubic(r: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic weights of the taps at floor-offsets -1, 0, 1, 2 for fraction r."""
    p, q = r + 1, 1 - r
    q1 = q + 1
    return np.stack([((a * p - 5 * a) * p + 8 * a) * p - 4 * a,
                     ((a + 2) * r - (a + 3)) * r * r + 1,
                     ((a + 2) * q - (a + 3)) * q * q + 1,
                     ((a * q1 - 5 * a) * q1 + 8 * a) * q1 - 4 * a], axis=1)


# ---------------------------------------------------------------- onnxruntime in float32

F32 = np.float32


def _scale32(a: Axis) -> np.float32:
    """onnxruntime's float32 scale: float32(m) / float32(n) from sizes, else the scale."""
    scale: np.float32 = F32(a.m) / F32(a.n) if a.w == a.m and a.n else F32(a.s)
    return scale


def single_table(ctm: str, a: Axis, at: Attributes) -> Table:
    """onnxruntime's tables for linear and cubic on 16- and 32-bit floats, every operation in
    float32 in its order: x as for nearest (`_source`; half_pixel_symmetric as onnxruntime
    mixes it: w = s * n, c = n / 2, offset c * (1 - m / w) in float32, then offset +
    (y + 0.5) / s - 0.5 in float64, rounded once), then
      linear     x clamped into [0, n - 1], i = int(x), j = min(i + 1, n - 1), weights
                 (j - x, x - i) ((0.5, 0.5) where i = j)
      cubic      t = x - floor(x), the Keys weights of t + 1, t, 1 - t, 2 - t each a
                 float32 polynomial, exclude_outside renormalized by their float32 sum
      antialias  onnxruntime's (Pillow's) windows: centre x + 0.5, support 1 or 2 stretched by
                 1 / s when shrinking, taps floor(centre -+ support + 0.5), filter of
                 (k - centre + 0.5) * min(1, s), the weights outside [0, n) folded onto the end
                 taps (exclude_outside: dropped), all divided by their float32 sum."""
    if ctm == "half_pixel_symmetric":
        s = _scale32(a)
        width = s * F32(a.n)
        offset = F32(a.n) / F32(2) * (F32(1) - F32(a.m) / width)
        y = np.arange(a.m, dtype=np.float64)
        x = (float(offset) + (y + 0.5) / float(s) - 0.5).astype(F32)
        outside = np.zeros(a.m, dtype=bool)
    else:
        x64, outside = _source(ctm, a, True)
        x = x64.astype(F32)
    if at.antialias:
        index, weight = _single_antialias(at, x, _scale32(a), a.n)
    elif at.mode == "linear":
        xc = np.minimum(np.maximum(x, F32(0)), F32(a.n - 1))
        low = np.minimum(xc.astype(np.int64), a.n - 1)
        high = np.minimum(low + 1, a.n - 1)
        index = np.stack([low, high], axis=1)
        weight = np.where((low == high)[:, None], F32(0.5), np.abs(
            xc[:, None] - index[:, ::-1].astype(F32)))
    else:
        low = np.floor(x)
        t = (x - low).astype(F32)
        c = keys32(at.cubic_coeff_a, (t + F32(1), t, F32(1) - t, F32(2) - t), fused=())
        index = low.astype(np.int64)[:, None] + np.arange(-1, 3)
        if at.exclude_outside:
            c = np.where((index < 0) | (index >= a.n), F32(0), c)
            c = c / sum32(c)[:, None]
        index, weight = np.clip(index, 0, a.n - 1), c
    return index, np.asarray(weight, dtype=np.float64), outside


def sum32(w: np.ndarray) -> np.ndarray:
    """The float32 sum of each row of `w`, added left to right from 0."""
    total = np.zeros(w.shape[0], F32)
    for k in range(w.shape[1]):
        total = total + w[:, k]
    return total


def keys32(a: float, taps: tuple[np.ndarray, ...], fused: tuple[str, ...]) -> np.ndarray:
    """Keys cubic weights in float32 at the distances `taps` (the first and last in [1, 2], the
    others in [0, 1]), each polynomial evaluated as ((A + 2) u - (A + 3)) u u + 1 and
    ((A u - 5 A) u + 8 A) u - 4 A operation by operation, except the multiply-adds named in
    `fused` rounded once: "inner" (A + 2) u - (A + 3), "outer" (...) u u + 1 and in the other
    polynomial "first" A u - 5 A, "second" (...) u + 8 A, "last" (...) u - 4 A."""
    A = F32(a)

    def madd(x: Any, u: Any, c: Any, name: str) -> np.ndarray:
        return numerics.fma32(x, u, c) if name in fused else np.asarray(x * u + c, dtype=F32)

    def near(u: np.ndarray) -> np.ndarray:
        r = madd(A + F32(2), u, -(A + F32(3)), "inner")
        return madd(r * u, u, F32(1), "outer")

    def far(u: np.ndarray) -> np.ndarray:
        r = madd(A, u, -(F32(5) * A), "first")
        r = madd(r, u, F32(8) * A, "second")
        return madd(r, u, -(F32(4) * A), "last")
    u0, u1, u2, u3 = (np.asarray(u, dtype=F32) for u in taps)
    return np.stack([far(u0), near(u1), near(u2), far(u3)], axis=1)


def _single_antialias(at: Attributes, x: np.ndarray, s: np.float32, n: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """onnxruntime's antialias windows in float32 (see `single_table`)."""
    stretch = F32(1) / s
    half = F32(0.5) * F32(2 if at.mode == "linear" else 4)
    support = half * stretch if stretch >= 1 else half
    shrink = F32(1) / stretch if stretch >= 1 else F32(1)
    centre = F32(0.5) + x
    low = np.floor(centre - support + F32(0.5)).astype(np.int64)
    high = np.floor(centre + support + F32(0.5)).astype(np.int64)
    cut_low, cut_high = np.maximum(low, 0), np.minimum(high, n)
    if at.exclude_outside:
        low, high = cut_low, cut_high
    taps = int(max((high - low).max(initial=1), 1))
    k = low[:, None] + np.arange(taps)
    inside = k < high[:, None]
    u = (k.astype(F32) - centre[:, None] + F32(0.5)) * shrink
    w = np.where(inside, _filter32(at, u), F32(0))
    total = sum32(w)
    if not at.exclude_outside:   # fold the weights outside [0, n) onto the end taps, in order
        first = np.clip(-low, 0, taps - 1)
        last = np.clip(cut_high - 1 - low, 0, taps - 1)
        rows = np.arange(len(x))
        w = w.copy()
        for edge, beyond in ((first, (k < 0) & inside), (last, (k >= n) & inside)):
            acc = w[rows, edge]
            for c in range(taps):
                acc = np.where(beyond[:, c], acc + w[:, c], acc).astype(F32)
            w[rows, edge] = acc
    w = w * (F32(1) / np.where(total == 0, F32(1), total))[:, None]
    # the taps inside [0, n) only: column j is input cut_low + j
    kept_taps = cut_high - cut_low
    j = np.arange(int(max(kept_taps.max(initial=1), 1)))
    kept = np.take_along_axis(w, np.clip((cut_low - low)[:, None] + j, 0, taps - 1), axis=1)
    return (np.clip(cut_low[:, None] + j, 0, n - 1),
            np.where(j < kept_taps[:, None], kept, F32(0)))


def _filter32(at: Attributes, u: np.ndarray) -> np.ndarray:
    """onnxruntime's antialias filters in float32: 1 - |u| (linear), Keys (cubic)."""
    u = np.abs(u)
    w: np.ndarray
    if at.mode == "linear":
        w = np.where(u < 1, F32(1) - u, F32(0)).astype(F32)
        return w
    A = F32(at.cubic_coeff_a)
    near = ((A + F32(2)) * u - (A + F32(3))) * u * u + F32(1)
    far = (((u - F32(5)) * u + F32(8)) * u - F32(4)) * A
    w = np.where(u < 1, near, np.where(u < 2, far, F32(0))).astype(F32)
    return w


def _antialias(mode: str, r: np.ndarray, s: float, a: float) -> tuple[int, np.ndarray]:
    """First tap offset and normalized weights of the filter stretched by 1 / min(s, 1)."""
    s = min(s, 1.0)
    support = 1 if mode == "linear" else 2
    start = int(np.floor(-support / s) + 1)
    t = s * (np.arange(start, 2 - start) - r[:, None])
    if mode == "linear":
        w = np.clip(1 - np.abs(t), 0, 1)
    else:
        t = np.abs(t)
        t2 = t * t
        t3 = t * t2
        w = np.where(t <= 1, (a + 2) * t3 - (a + 3) * t2 + 1,
                     np.where(t < 2, a * t3 - 5 * a * t2 + 8 * a * t - 4 * a, 0.0))
    return start, w / w.sum(axis=1, keepdims=True)


def _nearest(rounding: str, x: np.ndarray, tie: float) -> np.ndarray:
    """x rounded to an integer by nearest_mode `rounding`, a fraction within `tie` of 0.5
    counting as 0.5."""
    low = np.floor(x)
    fraction = x - low
    at_tie = np.abs(fraction - 0.5) <= tie
    up = {"round_prefer_floor": (fraction > 0.5) & ~at_tie,
          "round_prefer_ceil": (fraction > 0.5) | at_tie,
          "floor": np.zeros_like(at_tie), "ceil": fraction > 0}[rounding]
    rounded: np.ndarray = low.astype(np.int64) + up
    return rounded


def _taps(at: Attributes, x: np.ndarray, s: float, stretch: float, tie: float, n: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """(indices clamped into [0, n), weights), [m, taps] each, for an axis of scale `s` whose
    antialias filter stretches by 1 / min(1, `stretch`), nearest's ties within `tie` of 0.5."""
    x = np.clip(x, -2.0**53, 2.0**53)       # beyond, every double is an integer
    if at.mode == "nearest":
        rounding = at.nearest_mode or ("ceil" if s < 1 else "floor")
        return np.clip(_nearest(rounding, x, tie), 0, n - 1)[:, None], np.ones((x.size, 1))
    xi = np.floor(x)
    whole = x == xi
    r = np.where(whole, 1.0, x - xi)        # in (0, 1]: an integral x ends the interval [x-1, x]
    left = xi.astype(np.int64) - whole
    if at.antialias:
        start, weight = _antialias(at.mode, r, stretch, at.cubic_coeff_a)
    elif at.mode == "linear":
        start, weight = 0, np.stack([1 - r, r], axis=1)
    else:
        start, weight = -1, _cubic(r, at.cubic_coeff_a)
    index = left[:, None] + start + np.arange(weight.shape[1])
    if at.exclude_outside:
        weight = np.where((index < 0) | (index >= n), 0.0, weight)
        total = weight.sum(axis=1, keepdims=True)
        weight = weight / np.where(total == 0, 1.0, total)
    return np.clip(index, 0, n - 1), weight


def _is_identity(index: np.ndarray, weight: np.ndarray, outside: np.ndarray, n: int) -> bool:
    """Every output coordinate o takes input o with total weight exactly 1 and nothing else."""
    if index.shape[0] != n or outside.any():
        return False
    hit = index == np.arange(n)[:, None]
    return bool(np.all(np.where(hit, 0.0, weight) == 0)
                and np.all(np.where(hit, weight, 0.0).sum(axis=1) == 1))


def _table(a: Axis, at: Attributes, source: CoordinateSource, dtype: np.dtype
           ) -> AxisTable | None:
    if at.mode != "nearest" and dtype.name in SINGLE:
        peer = source.single(a, at, dtype)
        if peer is None:
            return None
        index, weight, outside = peer
    else:
        sampled = source.coordinates(a, at.mode == "nearest")
        if sampled is None:
            return None
        x, outside = sampled
        index, weight = _taps(at, x, a.s, source.filter_scale(a), source.tie(a), a.n)
    if _is_identity(index, weight, outside, a.n):
        return None
    return AxisTable(a.axis, *map(arrays.readonly, (index, weight, outside)))


def _fill(value: float, dtype: np.dtype) -> np.ndarray | None:
    if dtype.kind in "OUS":
        return None
    if dtype.name in dtypes.INT_TYPES:
        fill = numerics.round_saturate(np.array([0.0 if math.isnan(value) else value]),
                                       dtype).reshape(())
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            fill = np.array(value).astype(dtype)
    return arrays.readonly(fill)


@functools.lru_cache(maxsize=128)
def plan(version: int, shape: tuple[int, ...], dtype: np.dtype, roi: tuple[float, ...] | None,
         scales: tuple[float, ...] | None, sizes: tuple[int, ...] | None, at: Attributes,
         source: CoordinateSource | None = None, op: str = OP) -> ResizePlan:
    """Validate inputs against the attributes `at` of Resize-`version`; output shape and
    per-axis tables, sampling where `source` says (default: at's coordinate transform). `op`:
    the operator served (Upsample runs as Resize-10), named in the errors of the shape limits."""
    rank = len(shape)
    if rank == 0:
        raise ValueError(f"{OP}: X must have rank >= 1, got a rank-0 input")
    dtypes.check(OP, DTYPES[at.mode], dtype, version, mode=at.mode)
    axes = resized_axes(at.axes, rank)
    lengths = _lengths(shape, axes, roi, scales, sizes, at)
    source = source or Transform(at.coordinate_transformation_mode)
    out_shape = list(shape)
    for a in lengths:
        out_shape[a.axis] = a.m
    if math.prod(out_shape) > MAX_ELEMENTS:
        raise ValueError(f"{op}: output shape {tuple(out_shape)} has more than 2^62 elements")
    given = f"input 'sizes' = {list(sizes)}" if sizes is not None else \
        f"input 'scales' = {list(scales or ())}"
    fits(op, tuple(out_shape), dtype, f"X of shape {shape} and {given}")
    tables: tuple[AxisTable, ...] = ()
    if math.prod(out_shape):
        tables = tuple(t for t in (_table(a, at, source, dtype) for a in sorted(lengths))
                       if t is not None)
    dims = len(arrays.merge_axes(shape, arrays.c_strides(shape),
                                 frozenset(t.axis for t in tables)))
    if dims > MAX_DIMS:
        raise ValueError(f"{op}: {dims} dimensions remain after merging adjacent unresized axes; "
                         f"at most {MAX_DIMS} are supported")
    fill = _fill(at.extrapolation_value, dtype)
    if fill is None and any(t.outside.any() for t in tables):
        raise TypeError(f"{OP}: tf_crop_and_resize extrapolates outside the roi, which has no "
                        f"value for input dtype {dtype}")
    return ResizePlan(version, at.mode, shape, tuple(out_shape), tables, fill, op)


def make(shape: tuple[int, ...], dtype: Any, roi: Any, scales: Any, sizes: Any, opset: int,
            source: CoordinateSource | None = None, op: str = OP,
            **attrs: Any) -> tuple[ResizePlan, Attributes, Inputs]:
    """Validate inputs and attributes for the version in force at `opset`: (plan, attributes,
    (roi, scales, sizes) as read on the host); `source` and `op` as in `plan`."""
    version = opsets.version(OP, opset)
    at = attributes(opset, **attrs)
    if version == 10:
        for name, value in (("roi", roi), ("sizes", sizes)):
            if value is not None:
                raise ValueError(f"{OP}: input '{name}' is not defined at "
                                 f"{opsets.in_force(OP, opset)} "
                                 f"(Resize-10 takes X and scales)")
    inputs = (_vector("roi", roi), _vector("scales", scales), _vector("sizes", sizes))
    return plan(version, shape, np.dtype(dtype), *inputs, at, source, op), at, inputs




# ---------------------------------------------------------------- Upsample

UPSAMPLE = "Upsample"
UPSAMPLE_MODES = ("nearest", "linear")
# Upsample (versions 7, 9 and 10; deprecated since opset 10) is Resize-10 under its former name:
# floor(n * scale) outputs, asymmetric coordinates x = y / scale, nearest rounding down (every
# scale >= 1). It runs as Resize-10, after its own checks.
UPSAMPLE_AS = 10
_UPSAMPLE_NUMBERS = dtypes.since(7, *dtypes.FLOATS, *dtypes.INT_TYPES)
# per mode, the version that brought each input dtype (read by core.dtypes.check): no bfloat16
UPSAMPLE_DTYPES: dict[str, dict[str, int]] = {
    "nearest": {**_UPSAMPLE_NUMBERS,
                **dtypes.since(7, "bool", "complex64", "complex128", dtypes.STRING)},
    "linear": _UPSAMPLE_NUMBERS,
}
_UPSAMPLE_HINTS = {"bilinear": "; 'linear' interpolates every axis of scale != 1 (bilinear, "
                               "trilinear, ...)",
                   "trilinear": "; 'linear' interpolates every axis of scale != 1 (bilinear, "
                                "trilinear, ...)",
                   "cubic": "; Upsample has no cubic mode (Resize has, from opset 11)"}


def upsample_scales(shape: tuple[int, ...], dtype: Any, scales: Any, mode: Any,
                    opset: int) -> tuple[float, ...]:
    """Validate an Upsample call for the version in force at `opset` (mode, X's dtype and rank,
    the scales: one per axis, each >= 1, read on the host and rounded to float32) and return
    its scales, for Resize-10 (UPSAMPLE_AS)."""
    version = opsets.version(UPSAMPLE, opset)
    if scales is None:
        raise ValueError(f"{UPSAMPLE}: 'scales' is required (the attribute of Upsample-7, the "
                         f"input of Upsample-9 and -10)")
    read = _vector("scales", scales, UPSAMPLE)
    return cached(_upsample_scales, tuple(shape), np.dtype(dtype), read, mode,
                             version, opset)


@functools.lru_cache(maxsize=256, typed=True)
def _upsample_scales(shape: tuple[int, ...], dtype: np.dtype, scales: tuple[float, ...],
                     mode: Any, version: int, opset: int) -> tuple[float, ...]:
    if not isinstance(mode, str):
        raise TypeError(f"{UPSAMPLE}: attribute 'mode' must be a string, got {mode!r}")
    if mode not in UPSAMPLE_MODES:
        raise ValueError(f"{UPSAMPLE}: attribute 'mode' must be one of "
                         f"{', '.join(map(repr, UPSAMPLE_MODES))}, got {mode!r}"
                         f"{_UPSAMPLE_HINTS.get(mode, '')}")
    dtypes.check(UPSAMPLE, UPSAMPLE_DTYPES[mode], dtype, version, opset, mode=mode)
    if not shape:
        raise ValueError(f"{UPSAMPLE}: X must have rank >= 1, got a rank-0 input")
    if len(scales) != len(shape):
        raise ValueError(f"{UPSAMPLE}: 'scales' has {len(scales)} values, expected {len(shape)} "
                         f"(the rank of X): {list(scales)}")
    if not all(math.isfinite(s) and s >= 1 for s in scales):
        raise ValueError(f"{UPSAMPLE}: 'scales' values must be finite and >= 1 (Upsample only "
                         f"enlarges; Resize shrinks), got {list(scales)}")
    return scales
