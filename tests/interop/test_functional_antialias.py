"""interpolate(antialias=True) against an oracle of PyTorch's antialiased kernels written here
with loops (PyTorch's rule, read from how it behaves): along an axis of input n and output m,
step = (n - 1) / (m - 1) with align_corners (0 for m = 1), else 1 / scale_factor or n / m;
output y is centred at c = step (y + 0.5), its filter has support s = r * max(step, 1) (r = 1
bilinear, 2 bicubic with a = -0.5), taps j in [max(int(c - s + 0.5), 0), min(int(c + s + 0.5),
n)) weighted filter((j - c + 0.5) / max(step, 1)), normalized; and where the output width is 1
and the height changes, every output row takes row 0's weights. Covers the request's three
one-element cases and antialias with align_corners."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.util import random

from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F


def _filter(mode: str, t: float) -> float:
    t = abs(t)
    if mode == "bilinear":
        return max(0.0, 1.0 - t)
    a = -0.5
    if t < 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a if t < 2 else 0.0


def _weights(mode: str, n: int, m: int, step: float) -> np.ndarray:
    """[m, n] weights of one axis."""
    stretch = max(step, 1.0)
    support = (1.0 if mode == "bilinear" else 2.0) * stretch
    w = np.zeros((m, n))
    for y in range(m):
        centre = step * (y + 0.5)
        low = max(int(centre - support + 0.5), 0)
        high = min(int(centre + support + 0.5), n)
        for j in range(low, high):
            w[y, j] = _filter(mode, (j - centre + 0.5) / stretch)
        total = w[y].sum()
        if total:
            w[y] /= total
    return w


def oracle(x: np.ndarray, mode: str, sizes: tuple[int, int], factors: tuple[float, float] | None,
           align_corners: bool) -> np.ndarray:
    mats = []
    for n, m, f in zip(x.shape[2:], sizes, factors or (None, None)):
        if align_corners:
            step = (n - 1) / (m - 1) if m > 1 else 0.0
        else:
            step = 1.0 / f if f else n / m
        mats.append(np.eye(n) if m == n and not align_corners else _weights(mode, n, m, step))
    rows, cols = mats
    if sizes[1] == 1 and sizes[0] != x.shape[2]:
        rows = np.broadcast_to(rows[:1], rows.shape)
    return np.einsum("hi,wj,ncij->nchw", rows, cols, x.astype(np.float64))


ONE_ELEMENT = [((2, 3, 2, 5), np.float64, "bicubic", {"size": [5, 1]}),
               ((2, 3, 8, 2), np.float32, "bilinear", {"scale_factor": 0.6}),
               ((2, 3, 7, 1), np.float32, "bicubic", {"size": [6, 1]})]


def _sizes_and_factors(x: np.ndarray, kw: dict):
    if "size" in kw:
        return tuple(kw["size"]), None
    f = kw["scale_factor"]
    factors = (f, f) if not isinstance(f, (list, tuple)) else tuple(f)
    return tuple(math.floor(n * g) for n, g in zip(x.shape[2:], factors)), factors


@pytest.mark.parametrize("shape,dtype,mode,kw", ONE_ELEMENT, ids=["bicubic-5x1", "bilinear-0.6",
                                                                  "bicubic-6x1"])
def test_one_output_column(cpu_backend, rng, shape, dtype, mode, kw):
    """Where the output width is 1 and the height changes, every row of the output is row 0's
    (PyTorch's antialiased kernels)."""
    x = random(rng, shape, dtype)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, mode=mode, antialias=True, **kw)
    sizes, factors = _sizes_and_factors(x, kw)
    expected = oracle(x, mode, sizes, factors, False)
    assert got.shape == expected.shape and got.shape[-1] == 1
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    assert np.all(got == got[:, :, :1])


def configurations():
    rng = np.random.default_rng(20261125)
    out = []
    for i in range(24):
        shape = (1, 2, *(int(v) for v in rng.integers(1, 10, 2)))
        if rng.random() < 0.5:
            kw = {"size": [int(v) for v in rng.integers(1, 13, 2)]}
        else:
            kw = {"scale_factor": [float(rng.choice([0.4, 0.6, 0.75, 1.5, 2.0, 3.0]))
                                   for _ in range(2)]}
        out.append(pytest.param(shape, str(rng.choice(["bilinear", "bicubic"])), kw,
                                id=f"{i:02d}"))
    return out


@pytest.mark.parametrize("shape,mode,kw", configurations())
def test_with_align_corners(cpu_backend, rng, shape, mode, kw):
    """Centres at step (y + 0.5) with step = (n - 1) / (m - 1), the filter stretched by it."""
    x = random(rng, shape, np.float64)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, mode=mode, antialias=True, align_corners=True, **kw)
    sizes, _ = _sizes_and_factors(x, kw)
    np.testing.assert_allclose(got, oracle(x, mode, sizes, None, True), rtol=1e-10, atol=1e-12)


def test_align_corners_onto_one_element_takes_the_first_taps(cpu_backend):
    """m = 1: step 0, the centre at 0: bilinear takes element 0 alone, bicubic elements 0 and 1
    weighted filter(0.5) and filter(1.5)."""
    x = np.array([[[[1.0, 2.0, 4.0, 8.0]]]])
    with execution.backend(cpu_backend):
        linear = F.interpolate(x, size=[1, 1], mode="bilinear", antialias=True,
                               align_corners=True)
        cubic = F.interpolate(x, size=[1, 1], mode="bicubic", antialias=True, align_corners=True)
    w = np.array([_filter("bicubic", 0.5), _filter("bicubic", 1.5)])
    np.testing.assert_allclose(linear.reshape(-1), [1.0])
    np.testing.assert_allclose(cubic.reshape(-1), [(w @ [1.0, 2.0]) / w.sum()])
