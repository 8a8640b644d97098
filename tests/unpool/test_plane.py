"""MaxUnpool's per-plane index space (index_space="plane", PyTorch's indices: each counts the
positions of its own (n, c) plane of Y): a loop oracle on random configurations (every dtype,
1-5 spatial axes, output_shape or not, repeats) on numpy and emulated, the two paths bit for bit
alike, the last element of a plane wins, invalid indices (an error on host arrays, skipped by the
kernel), empty tensors, the per-plane scatter launched with 32- and 64-bit offsets, the plan."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.unpool_differential import plane_oracle as oracle
from helpers.unpool_differential import unpooled, window_attributes
from helpers.util import FLOAT_DTYPES, random

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.unpool import api, kernel, plan


def run(backend, x, indices, output_shape=None, opset=22, **attrs):
    with oc.backend(backend):
        return api.run(x, indices, output_shape, opset, attrs, index_space="plane")


def _configurations():
    """(shape, kernel, strides, pads, grow) per rank: grow None keeps U as the output, else it
    lengthens (or, per plane, shortens) each spatial axis of the output_shape."""
    rng = np.random.default_rng(20261128)
    out = []
    for k in (1, 2, 3, 4, 5):
        for i in range(3):
            shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                     *(int(v) for v in rng.integers(1, 4 if k > 3 else 6, k)))
            kernel, strides, pads = window_attributes(rng, shape, least=2)
            grow = None if i == 0 else [int(v) for v in rng.integers(-1 if i == 2 else 0, 3, k)]
            out.append(pytest.param(shape, kernel, strides, pads, grow, id=f"{k}d-{i}"))
    return out


@pytest.mark.parametrize("shape, kernel, strides, pads, grow", _configurations())
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_oracle(shape, kernel, strides, pads, grow, dtype, rng):
    """Random values (NaN, infinities, -0.0 among them) and per-plane indices anywhere in the
    output's plane, repeats included: the oracle's bits on numpy and emulated, X and I
    unchanged."""
    u = unpooled(shape, kernel, strides, pads)
    out = u if grow is None else (*u[:2], *(n + g for n, g in zip(u[2:], grow)))
    x = random(rng, shape, dtype)
    x.reshape(-1)[::7] = np.nan
    x.reshape(-1)[3::11] = np.inf
    x.reshape(-1)[5::13] = -0.0
    indices = rng.integers(0, math.prod(out[2:]), size=shape)
    x0, i0 = x.copy(), indices.copy()
    expected = oracle(x, indices, out).tobytes()
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    got = {b: run(b, x, indices, None if grow is None else out, **attrs)
           for b in ("numpy", "emulated")}
    for y in got.values():
        assert y.dtype == x.dtype and y.shape == out
        assert y.tobytes() == expected
    assert x.tobytes() == x0.tobytes() and np.array_equal(indices, i0)


def test_repeats_in_a_plane_the_last_element_wins(cpu_backend):
    """Two planes of one output length 6: each plane's own index space, the last element of X
    in row-major order naming a position gives its value."""
    x = np.arange(1.0, 9.0, dtype=np.float32).reshape(1, 2, 4)
    indices = np.array([[[3, 3, 1, 3], [5, 1, 5, 4]]])
    y = run(cpu_backend, x, indices, kernel_shape=[3], strides=[1])
    assert y.shape == (1, 2, 6)
    assert y.reshape(-1).tolist() == [0, 3, 0, 4, 0, 0, 0, 6, 0, 0, 8, 7]


def test_an_index_outside_its_plane_is_an_error_on_host_arrays(cpu_backend):
    x = np.ones((2, 1, 2), np.float32)
    for bad, where in ((4, (1, 0, 1)), (-1, (0, 0, 0))):
        indices = np.zeros_like(x, dtype=np.int64)
        indices[where] = bad
        with pytest.raises(ValueError, match=rf"MaxUnpool: input 'I' holds {bad} at "
                                             rf"\({', '.join(map(str, where))}\), outside "
                                             r"\[0, 4\): the flat indices of the shape \(4,\) "
                                             r"it addresses within each \(n, c\) plane"):
            run(cpu_backend, x, indices, kernel_shape=[2], strides=[2])


@pytest.mark.parametrize("bits", [32, 64])
def test_the_kernel_skips_indices_outside_the_plane(bits, index_width):
    """What the GPU path does with an index it cannot check without synchronizing: nothing is
    written for it, also where it would fall in another plane (4 in a plane of 4)."""
    x = np.array([[[5.0, 6.0]], [[7.0, 8.0]]], np.float32)
    indices = np.array([[[-1, 3]], [[4, 0]]])
    index_width(bits)
    with execution.backend("emulated"):
        y = api.run(x, indices, None, 22, {"kernel_shape": [2], "strides": [2]},
                    index_space="plane", checked=False)
    assert y.tolist() == [[[0, 0, 0, 6]], [[8, 0, 0, 0]]]


@pytest.mark.parametrize("output_shape", [None, [2, 3, 9, 7]], ids=["unpooled", "larger"])
def test_the_per_plane_scatter_and_64_bit_offsets(output_shape, index_width, launches, rng):
    """The per-plane scatter (whatever the output's lengths: one plane of Y is one axis) and
    the gather; with long long offsets (forced here on a small tensor) the same bits."""
    x = random(rng, (2, 3, 3, 3), np.float64)
    out = tuple(output_shape or (2, 3, 6, 6))
    indices = rng.integers(0, math.prod(out[2:]), size=x.shape)   # repeats among them
    narrow = run("emulated", x, indices, output_shape, kernel_shape=[2, 2], strides=[2, 2])
    index_width(64)
    wide = run("emulated", x, indices, output_shape, kernel_shape=[2, 2], strides=[2, 2])
    assert [k for k, _ in launches] == [kernel.PLANE_SCATTER[32], kernel.GATHER["float64", 32],
                                        kernel.PLANE_SCATTER[64], kernel.GATHER["float64", 64]]
    assert wide.tobytes() == narrow.tobytes() == oracle(x, indices, out).tobytes()


def test_empty_tensors(cpu_backend):
    """No batch: an empty output; no element in X's planes: zeros; no element in the output's
    planes: nothing reads the indices (not even invalid ones), as PyTorch."""
    none = np.zeros((0, 2, 3), np.float32)
    assert run(cpu_backend, none, none.astype(np.int64), kernel_shape=[2],
               strides=[2]).shape == (0, 2, 6)
    empty = np.zeros((1, 2, 0), np.float32)
    y = run(cpu_backend, empty, empty.astype(np.int64), kernel_shape=[3], strides=[1])
    assert y.shape == (1, 2, 2) and not y.any()
    x = np.ones((1, 2, 3), np.float32)
    y = run(cpu_backend, x, np.full(x.shape, 9), [1, 2, 0], kernel_shape=[2], strides=[2])
    assert y.shape == (1, 2, 0)


def test_the_plan():
    """One plane of Y is the index space: a single axis of stride 1, whatever the output."""
    pl = plan.make((2, 3, 2, 2), np.float32, (2, 3, 2, 2), np.int64, [2, 3, 5, 6], 22,
                      kernel_shape=[2, 2], strides=[2, 2], index_space="plane")
    assert (pl.index_shape, pl.remap, pl.index_total, pl.per_plane) == ((5, 6), ((30, 1),), 30,
                                                                        True)
    assert not plan.make((2, 3, 2, 2), np.float32, (2, 3, 2, 2), np.int64, None, 22,
                            kernel_shape=[2, 2]).per_plane
    with pytest.raises(ValueError, match=r"MaxUnpool: index_space must be one of \('unpooled', "
                                         r"'plane'\), got 'planes'"):
        plan.make((1, 1, 2), np.float32, (1, 1, 2), np.int64, None, 22, kernel_shape=[2],
                     index_space="planes")
