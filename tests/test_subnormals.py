"""Subnormal numbers on every path: each operator family and PyTorch-style function, in every
float dtype, on subnormal inputs and on normal inputs whose arithmetic lands below the smallest
normal, keeps the subnormal results the NumPy path keeps (one float model, IEEE, no flush to
zero: docs/semantics.md, "GPU arithmetic").

On a GPU this is what catches code compiled with flush-to-zero (CuPy's -ftz=true): a flushed
result is a 0 where the NumPy path has a subnormal, a flushed operand moves a sum or ties a
comparison with 0. Each configuration asserts, on its path against the NumPy path:

1. no output element is 0 where the NumPy path's is not (the flush check);
2. the NumPy path's bits where the paths compute alike: maxima, copies, nearest, Hardmax,
   MaxUnpool, GridSample, AffineGrid, RoiAlign and MaxRoiPool (documented bit for bit), and the
   pools, whose sums are exact here (sums of subnormals, and of normal inputs on a coarse grid:
   only the division rounds, alike), and the gradients of onnx_cupy.vjp (every path adds the
   same rounded terms in the same order); Resize, Upsample and interpolate's linear, cubic and
   antialias modes (weights applied axis by axis on the NumPy path, all at once in the kernels)
   within `ulps`: the taps per output, as each product of a weight and X rounds to the
   subnormal grid by at most half an ulp on each path; twice that for normal X, where rounding
   a weight product moves a term by up to an ulp more;
3. that it reaches subnormals: some NumPy-path output is non-zero and below the dtype's smallest
   normal (LpPool with p = 2, whose results are normal: its squares are subnormal; Hardmax,
   whose results are 0 and 1: a row where ties with 0 would move the maximum);
and where the outputs are copies of inputs (maxima, nearest, unpooling) or Hardmax's one-hot, the
same call on X scaled by a power of two into the normal range gives the same values scaled, an
oracle that a flushed or tied subnormal cannot pass, on the NumPy path too.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np
import pytest
from helpers.util import BF16, FLOAT_DTYPES, to_backend, to_numpy, ulp_distance

import onnx_cupy as oc
import onnx_cupy.nn.functional as F
from onnx_cupy import ops

ALL = tuple(d.name for d in FLOAT_DTYPES)
NO_BF16 = tuple(d for d in ALL if d != "bfloat16")
# random integer mantissas of these many bits times the smallest subnormal: subnormal inputs up
# to 2^-140 (float32), 2^-1060 (float64), 2^-16 (float16), 2^-127 (bfloat16)
BITS = {"float16": 8, "bfloat16": 6, "float32": 9, "float64": 14}


def finfo(dtype: np.dtype) -> Any:
    return ml_dtypes.finfo(dtype)


def subnormal(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype,
              signed: bool = True, zeros: float = 0.0, fewer: int = 0) -> np.ndarray:
    """Random subnormals of `dtype` (negative ones if `signed`, a fraction `zeros` of 0), of
    `fewer` bits less than BITS (so that a sum of many stays subnormal)."""
    k = rng.integers(1, 2 ** (BITS[dtype.name] - fewer), size=shape)
    if signed:
        k = k * rng.choice([-1, 1], size=shape)
    k[rng.random(shape) < zeros] = 0
    return (k * float(finfo(dtype).smallest_subnormal)).astype(dtype)   # exact


# the low mantissa bits left 0 in near_min's values: float32 and float64 sums of up to 2^5 of
# them are exact (16-bit types accumulate in float32, where theirs are)
COARSE = {"float16": 0, "bfloat16": 0, "float32": 5, "float64": 5}


def near_min(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Normal numbers of both signs between the smallest normal and twice it, multiples of
    2^COARSE smallest subnormals: a window's sum of them is exact, and its mean, a product with a
    weight below 1 or a weighted sum of both signs lands in the subnormal range."""
    info = finfo(dtype)
    low = 2 ** (info.nmant - COARSE[dtype.name])   # the smallest normal, in units of the grid
    k = rng.integers(low, 2 * low, size=shape) * rng.choice([-1, 1], size=shape)
    return (k * 2.0 ** COARSE[dtype.name] * float(info.smallest_subnormal)).astype(dtype)


def squares_subnormal(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype
                      ) -> np.ndarray:
    """Normal numbers of both signs whose squares are subnormal in the accumulate type (float32
    for bfloat16), a window's sum of them too (x ~ 1e-20 for float32: x * x ~ 1e-40)."""
    e = int(np.log2(float(finfo(np.float64 if dtype == np.float64 else np.float32)
                           .smallest_normal))) // 2 - 4   # float32: 2^-67, float64: 2^-515
    v = rng.uniform(1.0, 4.0, shape) * rng.choice([-1.0, 1.0], size=shape)
    return (v * 2.0 ** e).astype(dtype)


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    build: Callable[[np.random.Generator, np.dtype], tuple[Callable[..., Any], np.ndarray,
                                                           tuple[Any, ...]]]
    inputs: str            # "subnormal" or "normal": what X (the scaled input) holds
    ulps: int              # most ulps from the NumPy path (0: its bits; see the module doc)
    dtypes: tuple[str, ...]
    reaches: str           # "output" (subnormal results), "squares" or "argmax" (module doc)
    copies: int | None     # the scaled oracle: degree of homogeneity in X (1 values, 0 one-hot)


CASES: dict[str, Case] = {}


def case(name: str, family: str, inputs: str = "subnormal", ulps: int = 0,
         dtypes: tuple[str, ...] = ALL, reaches: str = "output", copies: int | None = None
         ) -> Callable[[Any], Any]:
    def register(build: Any) -> Any:
        CASES[name] = Case(name, family, build, inputs, ulps, dtypes, reaches, copies)
        return build
    return register


def call(fn: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
    return functools.partial(fn, **kw)


# ---------------------------------------------------------------- pooling

NCHW = (2, 3, 7, 8)


@case("AveragePool-subnormal", "pool")
def _(rng, dt):   # the 2-D fast kernel
    return call(oc.average_pool, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), \
        subnormal(rng, NCHW, dt), ()


@case("AveragePool-4d-subnormal", "pool")
def _(rng, dt):   # 4 spatial axes: the generic kernel
    return call(oc.average_pool, kernel_shape=[2, 2, 1, 2], pads=[1, 0, 0, 1, 0, 1, 0, 0],
                count_include_pad=1), subnormal(rng, (1, 2, 3, 4, 3, 5), dt), ()


@case("AveragePool-underflow", "pool", "normal")
def _(rng, dt):
    return call(oc.average_pool, kernel_shape=[3, 3]), near_min(rng, NCHW, dt), ()


@case("LpPool-p1-subnormal", "pool")
def _(rng, dt):
    return call(oc.lp_pool, kernel_shape=[3, 2], strides=[2, 1], p=1), subnormal(rng, NCHW, dt), ()


@case("LpPool-p2-squares", "pool", "normal", dtypes=("bfloat16", "float32", "float64"),
      reaches="squares")
def _(rng, dt):   # float16 accumulates in float32, where its squares are normal
    return call(oc.lp_pool, kernel_shape=[3, 3], pads=[1, 1, 1, 1], p=2), \
        squares_subnormal(rng, NCHW, dt), ()


@case("LpPool-p2-subnormal", "pool", dtypes=("float16",))
def _(rng, dt):   # float16 subnormals square to float32 normals, the root is a float16 subnormal
    return call(oc.lp_pool, kernel_shape=[2, 3], p=2), subnormal(rng, NCHW, dt), ()


@case("MaxPool-subnormal", "pool", copies=1)
def _(rng, dt):
    return call(oc.max_pool, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), \
        subnormal(rng, NCHW, dt, zeros=0.3), ()


@case("MaxPool-indices-subnormal", "pool", copies=1)
def _(rng, dt):   # with indices: the generic kernel
    return call(oc.max_pool, kernel_shape=[2, 3], dilations=[2, 1], return_indices=True), \
        subnormal(rng, NCHW, dt, zeros=0.3), ()


@case("GlobalAveragePool-subnormal", "pool")
def _(rng, dt):
    return oc.global_average_pool, subnormal(rng, (2, 3, 5, 7), dt), ()


@case("GlobalAveragePool-underflow", "pool", "normal")
def _(rng, dt):
    return oc.global_average_pool, near_min(rng, (3, 4, 3, 3), dt), ()


@case("GlobalLpPool-p1-subnormal", "pool")
def _(rng, dt):
    return call(oc.global_lp_pool, p=1), subnormal(rng, (2, 3, 3, 4), dt, fewer=3), ()


@case("GlobalLpPool-p2-squares", "pool", "normal", dtypes=("bfloat16", "float32", "float64"),
      reaches="squares")
def _(rng, dt):
    return call(oc.global_lp_pool, p=2), squares_subnormal(rng, (2, 3, 3, 3), dt), ()


@case("GlobalMaxPool-subnormal", "pool", copies=1)
def _(rng, dt):
    return oc.global_max_pool, subnormal(rng, (2, 3, 5, 7), dt, zeros=0.3), ()


# ---------------------------------------------------------------- Hardmax

def hardmax_rows(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    """-s, 0, s and 2s (s the smallest subnormal), 2s missing from half of the rows: the maximum
    rests on telling s from 2s and from 0."""
    k = rng.integers(-1, 3, size=shape)
    k[: shape[0] // 2] = np.minimum(k[: shape[0] // 2], 1)
    return (k * float(finfo(dt).smallest_subnormal)).astype(dt)


@case("Hardmax-innermost-subnormal", "hardmax", reaches="argmax", copies=0)
def _(rng, dt):
    return call(oc.hardmax, axis=-1), hardmax_rows(rng, (6, 3, 37), dt), ()


@case("Hardmax-axis1-subnormal", "hardmax", reaches="argmax", copies=0)
def _(rng, dt):   # not the innermost axis: the generic kernel
    return call(oc.hardmax, axis=1, opset=13), hardmax_rows(rng, (6, 9, 5), dt), ()


# ---------------------------------------------------------------- MaxUnpool

def pooled_indices(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """MaxPool's indices (kernel 2 x 2, stride 2) of a random input of `shape`."""
    return oc.max_pool(rng.standard_normal(shape), kernel_shape=[2, 2], strides=[2, 2],
                       return_indices=True)[1]


@case("MaxUnpool-subnormal", "unpool", copies=1)
def _(rng, dt):
    indices = pooled_indices(rng, (2, 3, 6, 8))
    return call(oc.max_unpool, kernel_shape=[2, 2], strides=[2, 2]), \
        subnormal(rng, indices.shape, dt), (indices,)


# ---------------------------------------------------------------- Resize and Upsample

IMAGE = (2, 3, 5, 6)


@case("Resize-nearest-subnormal", "resize", copies=1)
def _(rng, dt):
    return call(oc.resize, scales=[1, 1, 1.7, 2.4], mode="nearest"), subnormal(rng, IMAGE, dt), ()


@case("Resize-linear-subnormal", "resize", ulps=2 * 2)
def _(rng, dt):
    return call(oc.resize, scales=[1, 1, 2.0, 1.5], mode="linear"), subnormal(rng, IMAGE, dt), ()


@case("Resize-linear-underflow", "resize", "normal", ulps=2 * (2 * 2))
def _(rng, dt):
    return call(oc.resize, sizes=[2, 3, 9, 4], mode="linear",
                coordinate_transformation_mode="align_corners"), near_min(rng, IMAGE, dt), ()


@case("Resize-cubic-subnormal", "resize", ulps=4 * 4)
def _(rng, dt):
    return call(oc.resize, sizes=[2, 3, 7, 11], mode="cubic"), subnormal(rng, IMAGE, dt), ()


@case("Resize-cubic-underflow", "resize", "normal", ulps=2 * (4 * 4))
def _(rng, dt):
    return call(oc.resize, scales=[1, 1, 1.5, 0.75], mode="cubic", cubic_coeff_a=-0.5,
                exclude_outside=1), near_min(rng, IMAGE, dt), ()


@case("Resize-cubic-generic-subnormal", "resize", ulps=4 * 4)
def _(rng, dt):   # an unresized axis between resized ones: the generic kernel
    return call(oc.resize, scales=[1.5, 2.0], axes=[1, 3], mode="cubic"), \
        subnormal(rng, IMAGE, dt), ()


@case("Resize-antialias-subnormal", "resize", ulps=5 * 5)
def _(rng, dt):   # 5 taps per axis (7 -> 2, 9 -> 4)
    return call(oc.resize, sizes=[2, 3, 2, 4], mode="linear", antialias=1), \
        subnormal(rng, (2, 3, 7, 9), dt), ()


@case("Upsample-nearest-subnormal", "resize", dtypes=NO_BF16, copies=1)
def _(rng, dt):
    return call(oc.upsample, scales=[1, 1, 2, 3]), subnormal(rng, IMAGE, dt), ()


@case("Upsample-linear-subnormal", "resize", dtypes=NO_BF16, ulps=2 * 2)
def _(rng, dt):
    return call(oc.upsample, scales=[1, 1, 2, 2.5], mode="linear"), subnormal(rng, IMAGE, dt), ()


@case("Upsample-linear-underflow", "resize", "normal", dtypes=NO_BF16, ulps=2 * (2 * 2))
def _(rng, dt):
    return call(oc.upsample, scales=[1, 1, 3, 2], mode="linear"), near_min(rng, IMAGE, dt), ()


# ---------------------------------------------------------------- GridSample and AffineGrid

def positions(rng: np.random.Generator, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    """Normalized positions, some outside [-1, 1]."""
    return rng.uniform(-1.15, 1.15, shape).astype(dt)


def grid_case(name: str, inputs: str, mode: str, padding: str, rank: int = 2, **kw: Any) -> None:
    @case(name, "grid", inputs, copies=1 if mode == "nearest" else None, **kw)
    def _(rng, dt):
        x_shape = (2, 3, 5, 6) if rank == 2 else (2, 2, 3, 4, 5)
        out = (4, 5) if rank == 2 else (2, 3, 4)
        x = subnormal(rng, x_shape, dt) if inputs == "subnormal" else near_min(rng, x_shape, dt)
        return call(oc.grid_sample, mode=mode, padding_mode=padding, align_corners=rank - 2), \
            x, (positions(rng, (2, *out, rank), dt),)


grid_case("GridSample-nearest-subnormal", "subnormal", "nearest", "zeros")
grid_case("GridSample-linear-subnormal", "subnormal", "linear", "zeros")
grid_case("GridSample-linear-underflow", "normal", "linear", "border")
grid_case("GridSample-cubic-subnormal", "subnormal", "cubic", "reflection")
grid_case("GridSample-cubic-underflow", "normal", "cubic", "border")
grid_case("GridSample-linear-3d-subnormal", "subnormal", "linear", "reflection", rank=3)


@case("AffineGrid-2d-subnormal", "grid")
def _(rng, dt):
    return call(oc.affine_grid, size=[2, 1, 5, 7]), subnormal(rng, (2, 2, 3), dt), ()


@case("AffineGrid-3d-subnormal", "grid")
def _(rng, dt):
    return call(oc.affine_grid, size=[2, 1, 3, 4, 5], align_corners=1), \
        subnormal(rng, (2, 3, 4), dt), ()


@case("AffineGrid-2d-underflow", "grid", "normal")
def _(rng, dt):
    return call(oc.affine_grid, size=[2, 1, 6, 7]), near_min(rng, (2, 2, 3), dt), ()


# ---------------------------------------------------------------- RoiAlign and MaxRoiPool

def boxes(rng: np.random.Generator, k: int, dt: np.dtype, h: int = 8, w: int = 9) -> np.ndarray:
    """k boxes (x1, y1, x2, y2) in quarter pixels (exact in every dtype), some past the edges."""
    x = np.sort(rng.integers(-4, 4 * w + 4, (k, 2)), axis=1) / 4.0
    y = np.sort(rng.integers(-4, 4 * h + 4, (k, 2)), axis=1) / 4.0
    return np.stack([x[:, 0], y[:, 0], x[:, 1], y[:, 1]], axis=1).astype(dt)


def roi_case(name: str, inputs: str, mode: str) -> None:
    @case(name, "roi", inputs)
    def _(rng, dt):
        x = (subnormal(rng, (2, 3, 8, 9), dt) if inputs == "subnormal"
             else near_min(rng, (2, 3, 8, 9), dt))
        return call(oc.roi_align, mode=mode, output_height=3, output_width=2, sampling_ratio=2), \
            x, (boxes(rng, 5, dt), rng.integers(0, 2, 5))


roi_case("RoiAlign-avg-subnormal", "subnormal", "avg")
roi_case("RoiAlign-avg-underflow", "normal", "avg")
roi_case("RoiAlign-max-subnormal", "subnormal", "max")
roi_case("RoiAlign-max-underflow", "normal", "max")


def indexed_boxes(rng: np.random.Generator, dt: np.dtype) -> np.ndarray:
    """5 boxes (image index, x1, y1, x2, y2) over 2 images."""
    return np.concatenate([rng.integers(0, 2, (5, 1)).astype(dt), boxes(rng, 5, dt)], axis=1)


@case("MaxRoiPool-subnormal", "roi", copies=1)
def _(rng, dt):
    return call(oc.max_roi_pool, pooled_shape=[2, 3]), \
        subnormal(rng, (2, 3, 8, 9), dt, zeros=0.3), (indexed_boxes(rng, dt),)


# ---------------------------------------------------------------- nn.functional and ops

@case("adaptive_avg_pool2d-subnormal", "functional")
def _(rng, dt):
    return call(F.adaptive_avg_pool2d, output_size=(3, 4)), subnormal(rng, (2, 3, 5, 7), dt), ()


@case("adaptive_avg_pool2d-underflow", "functional", "normal")
def _(rng, dt):
    return call(F.adaptive_avg_pool2d, output_size=(2, 3)), near_min(rng, (2, 3, 5, 7), dt), ()


@case("adaptive_max_pool2d-subnormal", "functional", copies=1)
def _(rng, dt):
    return call(F.adaptive_max_pool2d, output_size=(3, 4), return_indices=True), \
        subnormal(rng, (2, 3, 5, 7), dt, zeros=0.3), ()


@case("avg_pool2d-divisor_override-underflow", "functional", "normal")
def _(rng, dt):
    return call(F.avg_pool2d, kernel_size=3, stride=2, padding=1, divisor_override=5), \
        near_min(rng, NCHW, dt), ()


@case("avg_pool2d-divisor_override-subnormal", "functional")
def _(rng, dt):   # pooled in float64, then scaled and rounded to X's dtype
    return call(F.avg_pool2d, kernel_size=(2, 3), divisor_override=3), \
        subnormal(rng, NCHW, dt), ()


@case("lp_pool2d-p2-squares", "functional", "normal", dtypes=("bfloat16", "float32", "float64"),
      reaches="squares")
def _(rng, dt):   # x ** 2 and the scaling by the window size: the elementwise family's kernels
    return call(F.lp_pool2d, norm_type=2, kernel_size=3, stride=2), \
        squares_subnormal(rng, NCHW, dt), ()


@case("interpolate-bilinear-subnormal", "functional", ulps=2 * 2)
def _(rng, dt):
    return call(F.interpolate, scale_factor=1.7, mode="bilinear"), subnormal(rng, IMAGE, dt), ()


@case("interpolate-bilinear-underflow", "functional", "normal", ulps=2 * (2 * 2))
def _(rng, dt):
    return call(F.interpolate, size=(8, 4), mode="bilinear", align_corners=True), \
        near_min(rng, IMAGE, dt), ()


@case("interpolate-bicubic-subnormal", "functional", ulps=4 * 4)
def _(rng, dt):
    return call(F.interpolate, size=(7, 9), mode="bicubic"), subnormal(rng, IMAGE, dt), ()


@case("interpolate-bilinear-antialias-subnormal", "functional", ulps=6 * 6)
def _(rng, dt):   # at most 6 taps per axis (7 -> 3, 9 -> 4: 2 * 7 / 3 + 1 rounded up)
    return call(F.interpolate, size=(3, 4), mode="bilinear", antialias=True), \
        subnormal(rng, (2, 3, 7, 9), dt), ()


@case("grid_sample-bilinear-subnormal", "functional")
def _(rng, dt):   # float32: PyTorch's fused unnormalization
    return call(F.grid_sample, mode="bilinear"), subnormal(rng, IMAGE, dt), \
        (positions(rng, (2, 4, 5, 2), dt),)


@case("grid_sample-bicubic-underflow", "functional", "normal")
def _(rng, dt):
    return call(F.grid_sample, mode="bicubic", padding_mode="border", align_corners=True), \
        near_min(rng, IMAGE, dt), (positions(rng, (2, 4, 5, 2), dt),)


@case("affine_grid-subnormal", "functional")
def _(rng, dt):
    return call(F.affine_grid, size=[2, 1, 4, 6]), subnormal(rng, (2, 2, 3), dt), ()


@case("max_unpool2d-subnormal", "functional", copies=1)
def _(rng, dt):
    x = rng.standard_normal((2, 3, 6, 7)).astype(dt)
    _, indices = F.max_pool2d(x, 2, return_indices=True)
    return call(F.max_unpool2d, kernel_size=2, output_size=(6, 7)), \
        subnormal(rng, indices.shape, dt), (indices,)


@case("one_hot_argmax-subnormal", "functional", reaches="argmax", copies=0)
def _(rng, dt):
    return call(F.one_hot_argmax, dim=1), hardmax_rows(rng, (4, 9, 5), dt), ()


@case("ops.roi_align-subnormal", "ops")
def _(rng, dt):
    return call(ops.roi_align, output_size=(3, 2), sampling_ratio=2, aligned=True), \
        subnormal(rng, (2, 3, 8, 9), dt), (indexed_boxes(rng, dt),)


@case("ops.roi_align-underflow", "ops", "normal")
def _(rng, dt):
    return call(ops.roi_align, output_size=2), near_min(rng, (2, 3, 8, 9), dt), \
        (indexed_boxes(rng, dt),)


@case("ops.roi_pool-subnormal", "ops", copies=1)
def _(rng, dt):
    return call(ops.roi_pool, output_size=(2, 3)), subnormal(rng, (2, 3, 8, 9), dt, zeros=0.3), \
        (indexed_boxes(rng, dt),)


# ---------------------------------------------------------------- gradients (onnx_cupy.vjp)

def gradient(function: Callable[..., Any], **kw: Any) -> Callable[..., Any]:
    """onnx_cupy.vjp of `function` as fn(X, *further inputs, dY) -> dX: the cotangent last among
    the inputs, so that it is put on the path's device as they are."""
    @functools.wraps(oc.vjp)
    def vjp(x: Any, *rest: Any) -> Any:
        *inputs, cotangent = rest
        return oc.vjp(function, x, *inputs, cotangent=cotangent, **kw)[0]
    return vjp


@case("vjp-AveragePool-subnormal", "gradient")
def _(rng, dt):   # dX: sums of dY / 9, each term rounded, in one order on every path
    return gradient(oc.average_pool, kernel_shape=[3, 3], pads=[1, 1, 1, 1]), \
        subnormal(rng, NCHW, dt), (subnormal(rng, NCHW, dt),)


@case("vjp-AveragePool-underflow", "gradient", "normal")
def _(rng, dt):   # normal cotangents whose shares dY / 4 are subnormal
    return gradient(oc.average_pool, kernel_shape=[2, 2], strides=[1, 2]), \
        near_min(rng, NCHW, dt), (near_min(rng, (2, 3, 6, 4), dt),)


@case("vjp-LpPool-p1-subnormal", "gradient")
def _(rng, dt):   # sign(X) * sum of dY: a flushed X has sign 0, a flushed window's Y is 0
    return gradient(oc.lp_pool, kernel_shape=[3, 2], strides=[2, 1], p=1), \
        subnormal(rng, NCHW, dt, zeros=0.2), (subnormal(rng, (2, 3, 3, 7), dt, fewer=2),)


@case("vjp-MaxPool-subnormal", "gradient")
def _(rng, dt):   # the cotangent goes to each window's first maximum of subnormals and zeros
    return gradient(oc.max_pool, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), \
        subnormal(rng, NCHW, dt, zeros=0.3), (subnormal(rng, (2, 3, 4, 4), dt, fewer=2),)


@case("vjp-GlobalAveragePool-underflow", "gradient", "normal")
def _(rng, dt):   # dY / 35, below the smallest normal
    return gradient(oc.global_average_pool), near_min(rng, (2, 3, 5, 7), dt), \
        (near_min(rng, (2, 3, 1, 1), dt),)


@case("vjp-MaxUnpool-subnormal", "gradient")
def _(rng, dt):   # dX gathers dY at the positions the indices name
    indices = pooled_indices(rng, (2, 3, 6, 8))
    return gradient(oc.max_unpool, kernel_shape=[2, 2], strides=[2, 2]), \
        subnormal(rng, indices.shape, dt), (indices, subnormal(rng, (2, 3, 6, 8), dt))


# ---------------------------------------------------------------- the test

def run(fn: Callable[..., Any], x: np.ndarray, rest: tuple[Any, ...], backend: str
        ) -> tuple[np.ndarray, ...]:
    """fn(x, *rest) on `backend` (arrays put on its device), every output on the host."""
    with oc.backend(backend):
        y = fn(to_backend(x, backend), *(to_backend(r, backend) for r in rest))
    return tuple(to_numpy(v) for v in (y if isinstance(y, tuple) else (y,)))


PARAMS = [pytest.param(c, np.dtype(BF16 if d == "bfloat16" else d), id=f"{c.name}-{d}")
          for c in CASES.values() for d in c.dtypes]


@pytest.mark.parametrize("config, dtype", PARAMS)
def test_no_flush_to_zero(config, dtype, backend, rng):
    fn, x, rest = config.build(rng, dtype)
    info = finfo(dtype)
    tiny = float(info.smallest_normal)
    where = f"{config.name}, {dtype.name}, on the {backend} path"
    magnitude = np.abs(x.astype(np.float64))
    if config.inputs == "subnormal":
        assert magnitude.max() < tiny and magnitude.max() > 0, where
    else:   # the arithmetic, not the input, goes below the smallest normal
        assert magnitude.min() >= tiny, where

    expected, *expected_rest = run(fn, x, rest, "numpy")
    got, *got_rest = run(fn, x, rest, backend)
    assert got.shape == expected.shape and got.dtype == expected.dtype == dtype, where
    for g, e in zip(got_rest, expected_rest):   # MaxPool's indices
        np.testing.assert_array_equal(g, e, err_msg=where)

    # 1. the flush check (a 0 within the configuration's ulps of the NumPy path's is a rounding)
    apart = ulp_distance(got, expected)
    flushed = np.flatnonzero((got == 0) & (expected != 0) & (apart > config.ulps))
    assert flushed.size == 0, (
        f"{where}: {flushed.size} output elements are 0 where the NumPy path's are not "
        f"(subnormals flushed to zero), e.g. flat index {flushed[0]}: "
        f"{expected.flat[flushed[0]]!r} on numpy")

    # 2. the NumPy path's bits, or within the configuration's ulps
    assert apart.max() <= config.ulps, (
        f"{where}: {np.count_nonzero(apart > config.ulps)} outputs more than {config.ulps} ulps "
        f"from the NumPy path (at most {apart.max()}), e.g. {got.flat[apart.argmax()]!r} against "
        f"{expected.flat[apart.argmax()]!r}")

    # 3. subnormals reached
    e64 = np.abs(expected.astype(np.float64))
    if config.reaches == "output":
        assert np.count_nonzero((e64 > 0) & (e64 < tiny)) > 0, f"{where}: no subnormal output"
    elif config.reaches == "squares":
        squares = magnitude.astype(np.float64) ** 2
        accumulate = np.float32 if dtype.itemsize <= 4 else np.float64
        assert squares.max() < float(np.finfo(accumulate).tiny), where
        assert np.all(e64 > 0), f"{where}: a zero result of non-zero squares"
    else:   # "argmax": the result is not that of all zeros (which a flushed comparison sees)
        assert not np.array_equal(expected, run(fn, np.zeros_like(x), rest, "numpy")[0]), where

    # the scaled oracle of copies and one-hots
    if config.copies is not None:
        k = info.nmant + 2
        scaled = (x.astype(np.float64) * 2.0 ** k).astype(dtype)
        assert np.abs(scaled.astype(np.float64)).min(initial=np.inf, where=scaled != 0) >= tiny
        oracle = run(fn, scaled, rest, "numpy")[0].astype(np.float64)
        np.testing.assert_array_equal(got.astype(np.float64) * 2.0 ** (k * config.copies), oracle,
                                      err_msg=f"{where}: not the result on X * 2^{k}, scaled")


def test_every_family_and_public_function_is_reached():
    """Each operator of onnx_cupy (but run_node and the helpers), each family, and both
    subnormal inputs and underflowing arithmetic in every arithmetic family."""
    called = {c.build(np.random.default_rng(0), np.dtype(np.float32))[0] for c in CASES.values()}
    names = {getattr(f, "func", f).__name__ for f in called}
    public = {n for n in oc.__all__ if callable(getattr(oc, n))} - {
        "backend", "default_backend", "release_workspaces", "run_node", "warmup"}
    assert public <= names, public - names
    families = {c.family for c in CASES.values()}
    assert families == {"pool", "hardmax", "unpool", "resize", "grid", "roi", "functional", "ops",
                        "gradient"}
    for family in ("pool", "resize", "grid", "roi", "functional", "ops", "gradient"):
        assert {c.inputs for c in CASES.values() if c.family == family} == {"subnormal", "normal"}
