"""The elementwise steps (onnx_cupy.elementwise) on the kernel paths against the NumPy path,
element by element, in every dtype each takes: ordinary values of both signs, +-0, +-inf, NaN,
subnormals, values near the dtype's range (and, for conversions, every bit pattern of a sample).

Where the NumPy path's operation is exact IEEE arithmetic or a conversion (a product, x * x, 1 / x,
sqrt, a cast), the kernels give its bits (NaN where it has NaN; the sign of zero too). pow is the
one operation whose bits are the platform's: float16 and bfloat16 evaluate it as NumPy does, with
the C library's powf (the emulator's), so their bits are NumPy's there too; float32 and float64 use
the C library's pow, which NumPy's own SIMD pow (NumPy on AVX-512 machines) differs from by up to
an ulp. On a GPU, CUDA's pow (within 4 ulps in float, 2 in double, of the exact result) takes
their place."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import BF16, FLOAT_DTYPES, to_numpy, ulp_distance

from onnx_cupy.core import dtypes, execution
from onnx_cupy.elementwise import api, plan

NAMES = tuple(d.name for d in FLOAT_DTYPES)
EXPONENTS = (1.0, 2.0, 3.0, 2.5, 0.5, -1.0, 1 / 3)
GPU_POW_ULPS = {"float32": 4, "float64": 2}   # CUDA's bound on pow, from the exact result


def _on_gpu(path: str) -> bool:
    return path == "cupy" and not isinstance(execution.cupy_module(), StandIn)


def _dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def values(rng: np.random.Generator, name: str, n: int = 600) -> np.ndarray:
    """Ordinary values of both signs over many binades, +-0, +-inf, NaN, subnormals and values
    near the largest, of dtype `name`."""
    if name in dtypes.INT_TYPES:
        info = np.iinfo(name)
        picked = rng.integers(info.min, info.max, n, dtype=np.dtype(name), endpoint=True)
        edges = [info.min, info.max, 0, 1, min(info.max, 2**24 + 1), min(info.max, 2**40 +
                                                                          2**32 + 1)]
        return np.concatenate([picked, np.array(edges, dtype=np.dtype(name))])
    d = _dtype(name)
    info = np.finfo(np.float32 if name == "bfloat16" else d)
    low, high = np.log2(float(info.smallest_normal)), np.log2(float(info.max))
    ordinary = rng.choice([-1.0, 1.0], n) * np.exp2(rng.uniform(low / 4, high / 4, n)) * \
        rng.uniform(1, 2, n)
    tiny = float(info.smallest_subnormal) * rng.integers(1, 64, 40) * rng.choice([-1, 1], 40)
    large = float(info.max) * rng.uniform(0.5, 1.0, 20) * rng.choice([-1, 1], 20)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5]
    with np.errstate(over="ignore"):
        return np.concatenate([ordinary, tiny, large, special]).astype(d)


def _bits_equal(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Element by element: the same bytes, or both NaN."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    same = (got.view(np.uint8).reshape(got.shape + (-1,)) ==
            expected.view(np.uint8).reshape(expected.shape + (-1,))).all(axis=-1)
    if got.dtype.kind in "iu":
        return same
    with np.errstate(invalid="ignore"):   # signaling NaNs widened
        return same | (np.isnan(got.astype(np.float64)) & np.isnan(expected.astype(np.float64)))


def _run(step: plan.Step, x: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
    """(the NumPy path's Y, the kernel path's Y) of `step` on X."""
    with execution.backend("numpy"), np.errstate(all="ignore"):
        expected = api.run(step, x)
    moved = execution.cupy_module().asarray(x) if path == "cupy" else x
    with execution.backend(path):
        got = to_numpy(api.run(step, moved))
    return got, expected


def _assert_bits(got: np.ndarray, expected: np.ndarray, x: np.ndarray, where: str) -> None:
    bad = np.flatnonzero(~_bits_equal(got, expected))
    assert bad.size == 0, (f"{where}: {bad.size} elements differ from the NumPy path's, e.g. "
                           f"x = {x.flat[bad[0]]!r}: {got.flat[bad[0]]!r} against "
                           f"{expected.flat[bad[0]]!r}")


def power_ulps(name: str, exponent: float, path: str) -> int:
    """How far the kernel path's POWER may be from the NumPy path's (see the module doc)."""
    exact = (1.0, 2.0) if name in ("float16", "bfloat16") else (-1.0, 0.0, 0.5, 1.0, 2.0)
    if exponent in exact:
        return 0
    if name in ("float16", "bfloat16"):
        return 1 if _on_gpu(path) else 0   # a float within CUDA's 4 ulps, rounded to 16 bits
    return GPU_POW_ULPS[name] + 1 if _on_gpu(path) else 1


@pytest.mark.parametrize("scale", [1.0, 9.0])
@pytest.mark.parametrize("exponent", EXPONENTS, ids=lambda e: f"p{e:.4g}")
@pytest.mark.parametrize("name", NAMES)
def test_power(kernel_path, rng, name, exponent, scale):
    x = values(rng, name)
    step = plan.power("test", x.shape, x.dtype, exponent, scale)
    got, expected = _run(step, x, kernel_path)
    where = f"{name} ** {exponent} (scale {scale}) on {kernel_path}"
    allowed = power_ulps(name, step.exponent, kernel_path)
    if allowed == 0:
        _assert_bits(got, expected, x, where)
        return
    apart = ulp_distance(got, expected)   # NaN against a number: int64's maximum
    assert apart.max() <= allowed, (where, apart.max(), x.flat[apart.argmax()])


def test_the_exponent_is_numpys_and_the_scale_pytorchs():
    """The exponent rounded to the dtype as NumPy takes a Python float with an array of it (inf
    past its range), so that the kernels raise to the power NumPy raises to (PyTorch's pow of a
    16-bit tensor rounds it so too); a scale or coefficient rounded to the dtype's operation
    type, float32 for 16-bit dtypes, as PyTorch multiplies a tensor by a Python number."""
    step = plan.power("test", (3,), np.float16, 1 / 3, 70000.0)
    assert step.exponent == float(np.float16(1 / 3)) and step.scale == 70000.0
    assert plan.power("test", (3,), BF16, 289.0).exponent == 288.0
    assert plan.power("test", (3,), BF16, 2.0, 289.0).scale == 289.0
    assert plan.power("test", (3,), np.float32, 2.0, 1e39).scale == np.inf
    product = plan.product("test", (3,), np.float16, 1 / 3, 1 / 7)
    assert product.coefficient == float(np.float32(1 / 3))
    assert product.scale == float(np.float32(1 / 7))
    assert plan.product("test", (3,), np.float64, 1 / 3).coefficient == 1 / 3
    x = np.array([5.0, 1.0, -2.0], np.float16)   # T(float32 product), not T(x * T(1 / 3))
    y = api.run(plan.power("test", x.shape, x.dtype, 1.0, 1 / 3), x)
    assert np.array_equal(y, (x.astype(np.float32) * np.float32(1 / 3)).astype(np.float16))
    assert y[0] != (x[0] * np.float16(1 / 3))


@pytest.mark.parametrize("name", [n for n in NAMES if n != "float64"])
def test_widen(kernel_path, rng, name):
    x = values(rng, name)
    got, expected = _run(plan.widen("test", x.shape, x.dtype), x, kernel_path)
    _assert_bits(got, expected, x, f"{name} to float64 on {kernel_path}")


@pytest.mark.parametrize("name", NAMES)
def test_narrow(kernel_path, rng, name):
    """The float64 product rounded once to the dtype: over the dtype's whole range, with
    products that land among its subnormals, past its largest value, and at NaN."""
    info = np.finfo(np.float32 if name == "bfloat16" else _dtype(name))
    low, high = np.log2(float(info.smallest_subnormal)) - 2, np.log2(float(info.max)) + 2
    with np.errstate(over="ignore"):   # float64's own overflow: inf
        w = rng.choice([-1.0, 1.0], (5, 3, 8, 9)) * np.exp2(rng.uniform(low, high, (5, 3, 8, 9)))
    w.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    factor = rng.uniform(0.1, 2.0, (8, 9))
    factor[0, :3] = [1 / 3, 2 / 3, 0.5]
    got, expected = _run(plan.narrow("test", w.shape, _dtype(name), factor), w, kernel_path)
    _assert_bits(got, expected, w, f"float64 to {name} on {kernel_path}")


CONVERSIONS = [(s, t) for s in plan.SOURCES for t in (*NAMES, plan.INT64)
               if s != t and (t in NAMES or s in NAMES)]


@pytest.mark.parametrize("source, target", CONVERSIONS, ids=lambda v: v)
def test_convert(kernel_path, rng, source, target):
    """NumPy's astype (ml_dtypes' for bfloat16), bit for bit: float and integer values of every
    range and random bit patterns to each float dtype, floats to int64 (truncated; NaN and out of
    range as NumPy's casts on x86-64: INT64_MIN, and 0 from bfloat16)."""
    x = values(rng, source)
    if source in NAMES and source != "float64":   # every kind of bit pattern
        bits = rng.integers(0, 2 ** (8 * x.itemsize), 400, dtype=np.uint64)
        x = np.concatenate([x, bits.astype(f"u{x.itemsize}").view(x.dtype)])
    got, expected = _run(plan.convert("test", x.shape, x.dtype, _dtype(target)), x, kernel_path)
    _assert_bits(got, expected, x, f"{source} to {target} on {kernel_path}")


def test_convert_by_the_entry_point(kernel_path):
    """api.convert: X itself where it has the dtype; a bool array as its 0 and 1; a
    non-contiguous X read from a copy; TypeError for a pair no kernel converts."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    moved: Any = execution.cupy_module().asarray(x) if kernel_path == "cupy" else x
    with execution.backend(kernel_path):
        assert api.convert(moved, np.float32, "test") is moved
        got = to_numpy(api.convert(moved[:, 1], np.int64, "test"))
        flags = to_numpy(api.convert(moved > 4, np.float16, "test"))
        with pytest.raises(TypeError, match="test: no elementwise conversion from float32 to "
                                            "int32"):
            api.convert(moved, np.int32, "test")
    assert got.dtype == np.int64 and np.array_equal(got, [1, 5, 9])
    assert flags.dtype == np.float16 and np.array_equal(flags, x > 4)


@pytest.mark.parametrize("name", NAMES)
def test_power_reads_strided_views_and_writes_out(kernel_path, rng, name):
    """A view the kernels cannot walk is copied first (its step's own workspace level, apart from
    the caller's scratch); `out` is written in place."""
    x = values(rng, name, 600)[: 20 * 30].reshape(20, 30)[::2, 1::3]
    step = plan.power("test", x.shape, x.dtype, 2.0, 3.0)
    with np.errstate(all="ignore"):
        expected = api.run(step, x)
    moved = execution.cupy_module().asarray(x) if kernel_path == "cupy" else x
    with execution.backend(kernel_path):
        out = execution.cupy_module().empty(x.shape, x.dtype) if kernel_path == "cupy" else \
            np.empty(x.shape, x.dtype)
        assert api.run(step, moved, out=out) is out
    _assert_bits(to_numpy(out), expected, x, f"{name} strided on {kernel_path}")


@pytest.mark.parametrize("masked", [False, True], ids=["plain", "masked"])
@pytest.mark.parametrize("scale", [1.0, 9.0])
@pytest.mark.parametrize("name", NAMES)
def test_product(kernel_path, rng, name, scale, masked):
    """T(T(a * T(c * b)) * scale), each product rounded to the dtype (the products by c and
    scale computed in the dtype's operation type, float32 for 16-bit dtypes), masked by z (0
    where z is 0, y - y where z is NaN): the NumPy path's bits on every value pair, the special
    ones included."""
    a, b = values(rng, name), values(rng, name)[::-1].copy()
    z = values(rng, name) if masked else None
    if z is not None:
        z[::7] = 0
    step = plan.product("test", a.shape, a.dtype, 1 / 3, scale, masked)
    with execution.backend("numpy"):
        expected = api.product(step, a, b, z)
    xp = execution.cupy_module() if kernel_path == "cupy" else np
    moved = [None if v is None else xp.asarray(v) if kernel_path == "cupy" else v
             for v in (a, b, z)]
    with execution.backend(kernel_path):
        got = to_numpy(api.product(step, *moved))
    _assert_bits(got, expected, a, f"{name} product (scale {scale}) on {kernel_path}")
    with np.errstate(all="ignore"):   # the definition, in the dtype
        wide = np.float32 if a.itemsize == 2 else a.dtype.type
        c, s = wide(step.coefficient), wide(scale)
        direct = ((a * (b.astype(wide) * c).astype(a.dtype)).astype(wide) * s).astype(a.dtype)
        if z is not None:
            direct = np.where(np.isnan(z), direct - direct, direct)
            direct[z == 0] = 0
    _assert_bits(expected, direct, a, f"{name} product by its definition")


def test_product_refuses_a_missing_or_extra_mask():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="test: its product step takes Z"):
        api.product(plan.product("test", (3,), np.float32, 2.0, masked=True), x, x)
    with pytest.raises(TypeError, match="test: its product step is not masked, got Z"):
        api.product(plan.product("test", (3,), np.float32, 2.0), x, x, x)
