"""lp_pool and avg_pool's divisor_override, whose elementwise arithmetic runs in the library's
kernels on the kernel paths (onnx_cupy.elementwise; CuPy's own would flush subnormals on a GPU),
against the NumPy path, in every dtype, on inputs whose window sums every path computes exactly
(values on a coarse grid, subnormals), so that what is compared is the elementwise arithmetic:

- lp_pool with p = 1 and 2, and divisor_override: the NumPy path's bits (x, x * x, products,
  quotients, casts: exact IEEE arithmetic; bfloat16 and float16 raise to 1 / 2 with powf, as
  NumPy does, on the emulator the same C library's);
- lp_pool with p = 3 and 2.5, where pow is the platform's (see tests/elementwise/test_steps.py):
  NaN where the NumPy path has NaN (a negative x ** 2.5, a negative sum to the power 1 / 3, as
  PyTorch's), infinities where it has them, and the rest within a few ulps.
Each configuration is its own test id, on the emulated path and the cupy path (the stand-in where
no GPU is visible)."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import BF16, FLOAT_DTYPES, to_numpy, ulp_distance

from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

NAMES = tuple(d.name for d in FLOAT_DTYPES)
SHAPE = (2, 3, 7, 8)
KINDS = ("coarse", "negative", "inf", "subnormal")


def _dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def inputs(rng: np.random.Generator, name: str, kind: str, signed: bool = True) -> np.ndarray:
    """X of `kind`: multiples of 1/8 up to 2 (their squares and the windows' sums are exact in
    every dtype: `signed` or positive), their negatives, those with infinities (and a NaN), or
    subnormals of both signs."""
    d = _dtype(name)
    k = rng.integers(1, 17, SHAPE) * (rng.choice([-1, 1], SHAPE) if signed else 1)
    x = k / 8.0
    if kind == "negative":
        x = -np.abs(x)
    elif kind == "inf":
        x.flat[rng.choice(x.size, 12, replace=False)] = [np.inf] * 5 + [-np.inf] * 5 + \
            [np.nan, 0.0]
    elif kind == "subnormal":
        x = k * float(ml_dtypes.finfo(d).smallest_subnormal)
    return x.astype(d)


def _on_gpu(path: str) -> bool:
    return path == "cupy" and not isinstance(execution.cupy_module(), StandIn)


def _paths(fn: Any, x: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """(the NumPy path's result, the kernel path's) of fn(x)."""
    with execution.backend("numpy"):
        expected = fn(x)
    moved = execution.cupy_module().asarray(x) if path == "cupy" else x
    with execution.backend(path):
        got = to_numpy(fn(moved))
    assert got.dtype == expected.dtype == x.dtype and got.shape == expected.shape
    return got, expected


def _bits(got: np.ndarray, expected: np.ndarray, where: str) -> None:
    same = (got.view(np.uint8).reshape(got.shape + (-1,)) ==
            expected.view(np.uint8).reshape(expected.shape + (-1,))).all(axis=-1)
    same |= np.isnan(got.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    bad = np.flatnonzero(~same)
    assert bad.size == 0, (f"{where}: {bad.size} outputs differ from the NumPy path's, e.g. "
                           f"{got.flat[bad[0]]!r} against {expected.flat[bad[0]]!r}")


def lp_ulps(name: str, p: float, path: str) -> int:
    """How far lp_pool's results may be from the NumPy path's: 0 where every step is exact IEEE
    arithmetic or NumPy's own powf (p = 1, 2; float16 and bfloat16 off the GPU), else what pow's
    ulps (NumPy's SIMD pow against the C library's: 1; CUDA's: 4 in float, 2 in double) become
    through a sum of positive terms and the root."""
    gpu = _on_gpu(path)
    if p in (1, 2) and not (gpu and name in ("float16", "bfloat16") and p == 2):
        return 0
    if name in ("float16", "bfloat16"):
        return 2 if gpu else 0
    return {"float32": 10, "float64": 6}[name] if gpu else 3


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("p", [1, 2, 3, 2.5], ids=lambda p: f"p{p}")
@pytest.mark.parametrize("name", NAMES)
def test_lp_pool(kernel_path, rng, name, p, kind):
    x = inputs(rng, name, kind, signed=p in (1, 2))
    got, expected = _paths(lambda v: F.lp_pool2d(v, p, 3, 2, ceil_mode=True), x, kernel_path)
    where = f"lp_pool2d p={p}, {name}, {kind} on {kernel_path}"
    allowed = lp_ulps(name, p, kernel_path)
    if allowed == 0:
        _bits(got, expected, where)
    else:   # NaN and infinities where the NumPy path has them, the rest within `allowed`
        apart = ulp_distance(got, expected)
        assert apart.max() <= allowed, (where, apart.max())
    nan = np.isnan(expected.astype(np.float64))
    if kind == "negative" and p in (3, 2.5):
        assert nan.all(), where   # x ** 2.5, and a negative sum to the power 1 / 3: NaN
    if kind == "inf":
        assert np.isinf(expected.astype(np.float64)).any() and nan.any(), where
    if kind == "subnormal" and p == 1:   # subnormal means, kept
        e = np.abs(expected.astype(np.float64))
        assert ((e > 0) & (e < float(ml_dtypes.finfo(_dtype(name)).smallest_normal))).any(), \
            where


@pytest.mark.parametrize("kind", ("coarse", "inf", "subnormal"))
@pytest.mark.parametrize("divisor", [2, 3, -5])
@pytest.mark.parametrize("name", NAMES)
def test_avg_pool_divisor_override(kernel_path, rng, name, divisor, kind):
    """The float64 mean times count / divisor, rounded once to the dtype: the NumPy path's bits
    (X widened and the mean scaled and narrowed by the library's kernels)."""
    x = inputs(rng, name, kind)
    got, expected = _paths(lambda v: F.avg_pool2d(v, 3, 2, 1, ceil_mode=True,
                                                  divisor_override=divisor), x, kernel_path)
    _bits(got, expected, f"avg_pool2d divisor_override={divisor}, {name}, {kind} on "
                         f"{kernel_path}")
    if kind == "subnormal":
        assert np.count_nonzero(expected.astype(np.float64)) > 0


@pytest.mark.parametrize("name", NAMES)
def test_lp_pool3d_unbatched_strided(kernel_path, rng, name):
    """An unbatched, strided input: x ** p reads a copy of it (its step's own workspace level),
    beside lp_pool's scratch."""
    x = inputs(rng, name, "coarse")[0, :, 1:, ::2][:, None]   # (3, 1, 6, 4): (C, D, H, W)
    got, expected = _paths(lambda v: F.lp_pool3d(v, 2, (1, 2, 2)), x, kernel_path)
    _bits(got, expected, f"lp_pool3d, {name}, strided on {kernel_path}")


@pytest.mark.parametrize("name", NAMES[:1] + NAMES[2:])   # NumPy's byte orders: not bfloat16
def test_inputs_in_the_other_byte_order(cpu_backend, rng, name):
    """A big-endian X gives the native X's results: its steps take it in either byte order (a
    float64 X is copied to native order before its float64 pooling)."""
    x = inputs(rng, name, "coarse")
    swapped = x.astype(x.dtype.newbyteorder(">" if x.dtype.byteorder != ">" else "<"))
    for fn in (lambda v: F.lp_pool2d(v, 2, 2), lambda v: F.avg_pool2d(v, 3, 2, 1,
                                                                       divisor_override=2)):
        with execution.backend("numpy"):
            expected = fn(x)
        with execution.backend(cpu_backend):
            got = fn(swapped)
        assert got.dtype == expected.dtype == x.dtype
        _bits(got, expected, f"{name} byte-swapped on {cpu_backend}")
