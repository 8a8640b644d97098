"""onnx_cupy.nn.functional.max_pool1d/2d/3d: PyTorch's arguments, checks, output lengths and
index convention (flattened over each (n, c) plane's spatial dims), against ONNX MaxPool, the
loop oracle and hand-computed PyTorch results."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.maxpool_oracle import max_pool as oracle
from helpers.util import FLOAT_DTYPES, random, to_backend, to_numpy

import onnx_cupy
from onnx_cupy.nn import functional as F

FUNCTIONS = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
SPATIAL = {1: (19,), 2: (9, 8), 3: (5, 6, 7)}


def run(k, x, backend, *args, **kw):
    with onnx_cupy.backend(backend):
        return FUNCTIONS[k](to_backend(x, backend), *args, **kw)


def configurations():
    rng = np.random.default_rng(20261125)
    out = []
    for k in (1, 2, 3):
        for i in range(8):
            kernel = [int(v) for v in rng.integers(1, 4, k)]
            out.append(pytest.param(k, {
                "kernel_size": kernel, "stride": [int(v) for v in rng.integers(1, 3, k)],
                "padding": [int(rng.integers(0, kk // 2 + 1)) for kk in kernel],
                "dilation": [int(v) for v in rng.integers(1, 3, k)],
                "ceil_mode": bool(rng.integers(2))}, id=f"{k}d-{i}"))
    return out


@pytest.mark.parametrize("k, kw", configurations())
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_against_onnx_and_oracle(k, kw, dtype, cpu_backend, rng):
    """Values as ONNX MaxPool with the exporter's attributes; indices the oracle's ONNX indices
    minus the planes before: PyTorch's per-plane convention."""
    x = random(rng, (2, 3, *SPATIAL[k]), dtype)
    y, i = run(k, x, cpu_backend, return_indices=True, **kw)
    attrs = {"kernel_shape": kw["kernel_size"], "strides": kw["stride"],
             "pads": kw["padding"] * 2, "dilations": kw["dilation"],
             "ceil_mode": int(kw["ceil_mode"])}
    with onnx_cupy.backend(cpu_backend):
        onnx_y = onnx_cupy.max_pool(x, **attrs)
    assert to_numpy(y).tobytes() == to_numpy(onnx_y).tobytes()
    want_y, want_i = oracle(x, attrs)
    planes = np.arange(6).reshape(2, 3, *(1,) * k) * math.prod(SPATIAL[k])
    assert to_numpy(y).tobytes() == want_y.tobytes()
    np.testing.assert_array_equal(to_numpy(i), want_i - planes)
    assert to_numpy(i).min() >= 0 and to_numpy(i).max() < math.prod(SPATIAL[k])
    assert to_numpy(run(k, x, cpu_backend, **kw)).tobytes() == to_numpy(y).tobytes()


def test_hand_computed_2d(cpu_backend):
    """PyTorch's max_pool2d(x, 2, 2, 1, return_indices=True) for x = arange(2*1*3*4): per-plane
    indices, pads never win."""
    x = np.arange(24, dtype=np.float32).reshape(2, 1, 3, 4)
    y, i = run(2, x, cpu_backend, 2, 2, 1, return_indices=True)
    np.testing.assert_array_equal(y[0, 0], [[0, 2, 3], [8, 10, 11]])
    np.testing.assert_array_equal(y[1, 0], [[12, 14, 15], [20, 22, 23]])
    np.testing.assert_array_equal(i[0, 0], [[0, 2, 3], [8, 10, 11]])
    np.testing.assert_array_equal(i[1, 0], [[0, 2, 3], [8, 10, 11]])


def test_ceil_mode_drops_the_window_starting_in_the_padding(cpu_backend):
    """n=5, k=2, s=2, p=1: ceil gives 4 windows, the last one starting at 6 >= n + p is dropped."""
    x = np.array([[[5.0, 1, 2, 7, 3]]], np.float32)
    y, i = run(1, x, cpu_backend, 2, 2, 1, ceil_mode=True, return_indices=True)
    assert y.tolist() == [[[5.0, 2.0, 7.0]]] and i.tolist() == [[[0, 2, 3]]]


def test_nan_and_ties(cpu_backend):
    x = np.array([[[2.0, 2.0, np.nan, 1.0, np.nan, np.nan]]], np.float32)
    y, i = run(1, x, cpu_backend, 2, 1, return_indices=True)
    assert i.tolist() == [[[0, 2, 2, 4, 5]]]
    assert np.isnan(y[0, 0, 1:]).all() and y[0, 0, 0] == 2.0


def test_unbatched(cpu_backend, rng):
    x = random(rng, (3, 6, 5), np.float32)
    y, i = run(2, x, cpu_backend, (2, 2), return_indices=True)
    yb, ib = run(2, x[None], cpu_backend, (2, 2), return_indices=True)
    assert y.shape == (3, 3, 2) and np.array_equal(y, yb[0]) and np.array_equal(i, ib[0])


@pytest.mark.parametrize("k, args, kw, pattern", [
    (2, ((3, 3),), {"padding": 2},
     r"max_pool2d: pad should be at least 0 and at most half of kernel size, got padding \[2, 2\]"),
    (1, (2,), {"dilation": 0}, r"max_pool1d: dilation should be greater than zero, got \[0\]"),
    (1, (0,), {}, r"max_pool1d: kernel size should be greater than zero"),
    (3, (2,), {"stride": 0}, r"max_pool3d: stride should be greater than zero"),
    (1, (4,), {"dilation": 3},
     r"max_pool1d: given input size \[5\], the calculated output size \[-1\] is too small"),
    (2, ((2, 2, 2),), {},
     r"max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
], ids=["padding", "dilation_0", "kernel_0", "stride_0", "too_small", "kernel_length"])
def test_errors(k, args, kw, pattern, cpu_backend):
    x = np.ones((1, 1, *(5,) * k), np.float32)
    with pytest.raises(ValueError, match=pattern):
        run(k, x, cpu_backend, *args, **kw)


def test_wrong_rank():
    with pytest.raises(ValueError, match=r"max_pool2d: expected a 3D \(unbatched\) or 4D"):
        F.max_pool2d(np.ones((5, 5), np.float32), 2)


def test_window_over_padding_only_gives_minus_inf_and_minus_one(cpu_backend):
    """n = 2, kernel 2, padding 1, dilation 3: the one window reads positions -1 and 2, no input
    element. PyTorch gives -inf and an index past the plane; onnx-cupy keeps -inf and -1 (no
    element; docs/pytorch.md)."""
    x = np.array([[[3.0, 4.0]]], np.float32)
    y, i = run(1, x, cpu_backend, 2, 1, 1, dilation=3, return_indices=True)
    assert y.tolist() == [[[-np.inf]]] and i.tolist() == [[[-1]]]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_a_window_without_elements_keeps_index_minus_one_in_a_one_element_plane(cpu_backend, k):
    """A plane of one element, padded by 1, a 2-tap window dilated by 2: its taps (-1 and 1)
    miss the element, so the output is -inf with the index -1 (not the remainder 0); without
    the dilation the element wins with index 0 (within its plane)."""
    x = np.full((2, 3) + (1,) * k, 5.0, np.float32)
    y, i = run(k, x, cpu_backend, 2, 1, 1, 2, return_indices=True)
    assert to_numpy(y).shape == (2, 3) + (1,) * k
    assert np.isneginf(to_numpy(y)).all() and (to_numpy(i) == -1).all()
    y, i = run(k, x, cpu_backend, 2, 1, 1, 1, return_indices=True)
    assert (to_numpy(y) == 5).all() and (to_numpy(i) == 0).all()
