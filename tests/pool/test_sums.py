"""Long sums: AveragePool, LpPool and adaptive average windows past 2**24 terms sum in float64
on every path (the exact value of a constant input); a float64 result rounds once to a 16-bit
float type (numerics.narrow, as the kernels' oc::cvt<double, T>)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.util import BF16, FLOAT_DTYPES, to_numpy

import onnx_cupy
from onnx_cupy.core import execution, numerics
from onnx_cupy.pool import kernel as pool_kernel
from onnx_cupy.pool import plan
from onnx_cupy.pool.api import adaptive_pool

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def constant(backend: str, value: np.generic, shape: tuple[int, ...]):
    """A broadcast view of `value` (no copy: stride 0 on every axis) on the backend's device."""
    if backend == "cupy":
        xp = execution.cupy_module()
        return xp.broadcast_to(xp.asarray(value), shape)
    return np.broadcast_to(value, shape)


def pooled(backend: str, fn, x, **kw) -> np.ndarray:
    with onnx_cupy.backend(backend):
        return to_numpy(fn(x, **kw))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_long_windows_sum_in_double(backend, dtype, launches):
    """AveragePool, LpPool (p = 1) and adaptive average windows of 4097 x 4097 > 2**24 terms
    of a constant: its value, and the exact sum rounded once, on every path; the kernels that
    run are the double-summing ones. (The constant has float32's 24 bits at most: float64 sums
    of 4097 x 4097 of them are exact.)"""
    c = np.dtype(dtype).type(np.float32(1.1))
    x = constant(backend, c, (1, 1, 4097, 4097))
    terms = 4097 * 4097
    assert terms > plan.WIDE_SUMS
    mean = pooled(backend, onnx_cupy.average_pool, x, kernel_shape=[4097, 4097])
    total = pooled(backend, onnx_cupy.lp_pool, x, kernel_shape=[4097, 4097], p=1)
    with onnx_cupy.backend(backend):
        adaptive = to_numpy(adaptive_pool("AdaptiveAveragePool", x, (1, 1)))
    assert mean.dtype == total.dtype == adaptive.dtype == dtype
    assert mean.tobytes() == adaptive.tobytes() == np.full((1, 1, 1, 1), c).tobytes()
    want = numerics.narrow(np.array([terms * float(c)]), dtype)   # exact in float64
    assert total.tobytes() == want.reshape(1, 1, 1, 1).tobytes()
    if backend != "numpy":
        wide = {k.template: k["accumulate"] for k, _ in launches}
        assert wide == {"pool": "double", "pool_adaptive": "double"}


def test_wide_plans_and_their_kernels():
    """More than WIDE_SUMS terms (or counted positions) take float64 sums and the generic
    kernel's double instantiation, never the fast kernel; WIDE_SUMS terms or fewer, the
    storage's accumulation type."""
    f32 = np.dtype(np.float32)
    for kernel, wide in [([4096, 4096], False), ([4097, 4096], True), ([2**24 + 1], True)]:
        shape = (1, 2, *(k + 2 for k in kernel))
        pl = plan.make("AveragePool", shape, f32, 22, kernel_shape=kernel)
        assert plan.wide(pl) is wide
        assert plan.accumulate_dtype(pl, f32) == (np.float64 if wide else np.float32)
        k, _ = pool_kernel.kernel_args(pl, f32, (1, 1, *(1,) * len(kernel)))
        assert (k["accumulate"], pool_kernel.fast_kernel_args(pl, f32, (0,) * len(shape))
                is None) == (("double", True) if wide else ("float", False))
    pl = plan.make("AveragePool", (1, 1, 5000, 5000), f32, 22, kernel_shape=[4097, 4097],
                   pads=[4000, 0, 0, 0], count_include_pad=1)
    assert plan.wide(pl)   # 4097 x 4097 counted positions, fewer in X
    assert not plan.wide(plan.make("MaxPool", (1, 1, 5000, 5000), f32, 22,
                                   kernel_shape=[4097, 4097]))
    adaptive = plan.adaptive_plan("AdaptiveAveragePool", (1, 1, 4097, 4097), f32, (1, 2))
    assert plan.sum_terms(adaptive) == 4097 * 2049 and not plan.wide(adaptive)
    assert plan.wide(plan.adaptive_plan("AdaptiveAveragePool", (1, 1, 4097, 4097), f32, (1, 1)))


def test_narrow_rounds_once(rng):
    """numerics.narrow: float16 as NumPy's direct float64 conversion (single rounding), also
    near ties, infinities, NaN and subnormals; float32 and float64 by astype."""
    halves = rng.integers(0, 0x7C00, 20000).astype(np.uint16).view(np.float16).astype(np.float64)
    nudge = np.spacing(halves) * rng.choice([-1, 1], halves.size) * rng.integers(0, 3, halves.size)
    v = np.concatenate([halves + np.spacing(np.float16(halves)).astype(np.float64) / 2 + nudge,
                        -halves, [np.inf, -np.inf, 1e300, -1e-300, 0.0, -0.0]])
    assert numerics.narrow(v, np.float16).tobytes() == v.astype(np.float16).tobytes()
    assert np.isnan(numerics.narrow(np.array([np.nan]), BF16)[0])
    assert numerics.narrow(v, np.float32).tobytes() == v.astype(np.float32).tobytes()
