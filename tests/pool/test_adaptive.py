"""PyTorch's adaptive pooling in the pool family (pool.api.adaptive_pool: the kernel
pool_adaptive and the NumPy path) against a loop oracle written here: every float dtype, 1-3
spatial axes, odd lengths, shrinking, growing (overlapping windows), equal and empty outputs,
NaN and infinities, the maximum's indices, non-contiguous inputs, 64-bit indices, bad input."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers.util import BF16, FLOAT_DTYPES, random

from onnx_cupy.core import execution
from onnx_cupy.pool.api import adaptive_pool
from onnx_cupy.pool.kernel import ADAPTIVE

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}


def windows(n: int, m: int) -> list[range]:
    """The input positions output o of an axis (input n, output m) reads: [o n / m rounded down,
    (o + 1) n / m rounded up)."""
    return [range(o * n // m, -(-(o + 1) * n // m)) for o in range(m)]


def oracle(x: np.ndarray, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, maximum, index of the maximum within its plane) by loops: the maximum is the first
    element in row-major window order that is greater than all before it, or NaN (the last NaN)."""
    spatial = x.shape[2:]
    out = (*x.shape[:2], *sizes)
    mean, top = np.empty(out), np.empty(out)
    index = np.empty(out, np.int64)
    wide = x.astype(np.float64)
    for nc in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*map(range, sizes)):
            window = list(itertools.product(*(windows(n, m)[i]
                                              for n, m, i in zip(spatial, sizes, o))))
            values = [wide[nc + p] for p in window]
            mean[nc + o] = sum(values) / len(values)
            best = 0
            for k, v in enumerate(values):
                if v > values[best] or math.isnan(v):
                    best = k
            top[nc + o] = values[best]
            index[nc + o] = np.ravel_multi_index(window[best], spatial)
    return mean, top, index


def run(backend: str, x, sizes, op: str, **kw):
    with execution.backend(backend):
        return adaptive_pool(op, x, sizes, **kw)


SHAPES = [((2, 3, 7), (3,)), ((1, 2, 5), (9,)), ((2, 1, 6), (6,)), ((1, 1, 9), (1,)),
          ((2, 2, 7, 5), (3, 4)), ((1, 3, 4, 9), (9, 2)), ((1, 1, 5, 5), (5, 1)),
          ((1, 2, 5, 3, 7), (2, 4, 3)), ((2, 1, 3, 4, 2), (3, 4, 5))]


@pytest.mark.parametrize("shape,sizes", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_against_the_oracle(cpu_backend, rng, shape, sizes, dtype):
    x = random(rng, shape, dtype)
    before = x.copy()
    mean, top, index = oracle(x, sizes)
    average = run(cpu_backend, x, sizes, "AdaptiveAveragePool")
    y, i = run(cpu_backend, x, sizes, "AdaptiveMaxPool", return_indices=True)
    np.testing.assert_array_equal(x, before)
    assert average.dtype == y.dtype == x.dtype and i.dtype == np.int64
    assert average.shape == y.shape == i.shape == mean.shape
    tol = TOL[np.dtype(dtype).name]
    np.testing.assert_allclose(average.astype(np.float64), mean, rtol=tol, atol=tol)
    np.testing.assert_array_equal(y.astype(np.float64), top)
    np.testing.assert_array_equal(i, index)
    without = run(cpu_backend, x, sizes, "AdaptiveMaxPool")
    assert without.tobytes() == y.tobytes()


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64], ids=str)
def test_nan_and_infinities(cpu_backend, dtype):
    """A NaN propagates (the last NaN wins), -inf windows give the first index, ties the first;
    the mean of a window with inf is inf, with inf and -inf NaN."""
    row = [np.nan, np.nan, 1, np.nan, -np.inf, -np.inf, 3, 3, np.inf, -np.inf, 5, np.inf]
    x = np.array(row, dtype=dtype).reshape(1, 1, 12)
    y, i = run(cpu_backend, x, (6,), "AdaptiveMaxPool", return_indices=True)
    np.testing.assert_array_equal(i[0, 0], [1, 3, 4, 6, 8, 11])
    np.testing.assert_array_equal(y[0, 0].astype(np.float64),
                                  [np.nan, np.nan, -np.inf, 3, np.inf, np.inf])
    mean = run(cpu_backend, x, (6,), "AdaptiveAveragePool")
    np.testing.assert_array_equal(mean[0, 0].astype(np.float64),
                                  [np.nan, np.nan, -np.inf, 3, np.nan, np.inf])


def test_empty_output_and_batch(cpu_backend, rng):
    x = random(rng, (2, 3, 5, 4), np.float32)
    assert run(cpu_backend, x, (0, 3), "AdaptiveAveragePool").shape == (2, 3, 0, 3)
    y, i = run(cpu_backend, x[:0], (2, 2), "AdaptiveMaxPool", return_indices=True)
    assert y.shape == i.shape == (0, 3, 2, 2)


@pytest.mark.parametrize("view", ["transposed", "stepped", "reversed"])
def test_non_contiguous_input(cpu_backend, rng, view):
    base = random(rng, (3, 4, 10, 12), np.float32)
    x = {"transposed": base.transpose(1, 0, 3, 2), "stepped": base[:, ::2, ::3, ::2],
         "reversed": base[::-1, :, ::-1]}[view]
    for op in ("AdaptiveAveragePool", "AdaptiveMaxPool"):   # sums in another order: 1 ulp
        got = run(cpu_backend, x, (3, 5), op)
        want = run("numpy", np.ascontiguousarray(x), (3, 5), op)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_emulated_kernel_equals_numpy_bit_for_bit_on_maxima(rng):
    x = random(rng, (2, 3, 11, 6, 5), np.float32)
    y, i = run("numpy", x, (4, 7, 2), "AdaptiveMaxPool", return_indices=True)
    ye, ie = run("emulated", x, (4, 7, 2), "AdaptiveMaxPool", return_indices=True)
    assert y.tobytes() == ye.tobytes() and np.array_equal(i, ie)


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_launches_the_adaptive_kernel(launches, rng, rank):
    """32-bit offsets where the window bounds fit an int; 64-bit where (o + 1) * n passes
    2^31 - 1 (50,000 -> 50,000 elements)."""
    x = random(rng, (1, 2, *(4,) * rank), np.float32)
    run("emulated", x, (3,) * rank, "AdaptiveMaxPool")
    ((k, _),) = launches
    assert k is ADAPTIVE["float32", 32, rank]
    launches.clear()
    if rank == 1:
        x = random(rng, (1, 1, 50000), np.float32)
        got = run("emulated", x, (50000,), "AdaptiveAveragePool")
        ((k, _),) = launches
        assert k.index_bits == 64 and k is ADAPTIVE["float32", 64, 1]
        np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("call,error,match", [
    (lambda: adaptive_pool("AdaptiveAveragePool", np.ones((2, 3), np.float32), (2,)),
     ValueError, "1 to 3 spatial axes"),
    (lambda: adaptive_pool("AdaptiveMaxPool", np.ones((1, 1, 2, 2, 2, 2), np.float32),
                           (1, 1, 1, 1)), ValueError, "1 to 3 spatial axes"),
    (lambda: adaptive_pool("AdaptiveAveragePool", np.ones((1, 1, 4), np.int32), (2,)),
     TypeError, "int32 is not supported"),
    (lambda: adaptive_pool("AdaptiveAveragePool", np.ones((1, 1, 4), np.float32), (2, 2)),
     ValueError, "'sizes' has 2 values, expected 1"),
    (lambda: adaptive_pool("AdaptiveMaxPool", np.ones((1, 1, 4), np.float32), (-1,)),
     ValueError, "'sizes' values must be >= 0"),
    (lambda: adaptive_pool("AdaptiveMaxPool", np.ones((1, 1, 4), np.float32), (2.0,)),
     TypeError, "'sizes' must be a sequence of ints"),
    (lambda: adaptive_pool("AdaptiveAveragePool", np.ones((1, 1, 0, 3), np.float32), (2, 2)),
     ValueError, "non-empty spatial axes"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
