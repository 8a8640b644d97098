"""onnx_cupy.max_unpool: hand-computed results, a loop oracle on random configurations (every
dtype, 1-5 spatial axes, output_shape, repeated indices) on every path, MaxPool's indices round
trip, repeated indices (the last element of X wins), the kernels launched, bad input, empty
tensors, `out=`, strided inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.unpool_differential import oracle, unpooled, window_attributes
from helpers.util import FLOAT_DTYPES, random, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.unpool import api, kernel, plan

X = np.array([[[[5.0, 6.0], [7.0, 8.0]]]], np.float32)
I = np.array([[[[5, 7], [13, 15]]]])
TWO = {"kernel_shape": [2, 2], "strides": [2, 2]}


def run(backend, x, indices, *args, **kw):
    with oc.backend(backend):
        return to_numpy(oc.max_unpool(to_backend(x, backend), to_backend(indices, backend),
                                      *args, **kw))


def test_hand_computed(backend):
    y = run(backend, X, I, **TWO)
    expected = np.zeros((1, 1, 4, 4), np.float32)
    expected[0, 0, 1::2, 1::2] = [[5, 6], [7, 8]]
    assert y.dtype == np.float32 and np.array_equal(y, expected)


def test_output_shape_places_the_unpooled_block_at_the_start(backend):
    """ONNX's node test maxunpool_export_with_output_shape: the indices address U (4x4), which
    sits at the start of the 5x5 output."""
    y = run(backend, X, I, [1, 1, 5, 6], **TWO)
    expected = np.zeros((1, 1, 5, 6), np.float32)
    expected[0, 0, 1:4:2, 1:4:2] = [[5, 6], [7, 8]]
    assert np.array_equal(y, expected)


def _configurations():
    rng = np.random.default_rng(20261126)
    out = []
    for k in (1, 2, 3, 4, 5):
        for i in range(3):
            shape = (2, 3, *(int(v) for v in rng.integers(1, 4 if k > 3 else 5, k)))
            kernel, strides, pads = window_attributes(rng, shape)
            grow = [int(v) for v in rng.integers(0, 3, k)] if i == 2 else None
            out.append(pytest.param(shape, kernel, strides, pads, grow, id=f"{k}d-{i}"))
    return out


@pytest.mark.parametrize("shape, kernel, strides, pads, grow", _configurations())
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_oracle(shape, kernel, strides, pads, grow, dtype, cpu_backend, rng):
    """Random values (NaN among them) and indices anywhere in U, repeats included: the loop
    oracle's bits, X and I unchanged."""
    u = unpooled(shape, kernel, strides, pads)
    x = random(rng, shape, dtype)
    x.reshape(-1)[::7] = np.nan
    indices = rng.integers(0, math.prod(u), size=shape)
    output_shape = None if grow is None else (*shape[:2], *(n + g for n, g in zip(u[2:], grow)))
    x0, i0 = x.copy(), indices.copy()
    y = run(cpu_backend, x, indices, output_shape, kernel_shape=kernel, strides=strides,
            pads=pads)
    assert y.dtype == x.dtype
    assert y.tobytes() == oracle(x, indices, u, output_shape).tobytes()
    assert x.tobytes() == x0.tobytes() and np.array_equal(indices, i0)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_max_pool_round_trip(dtype, cpu_backend, rng):
    """MaxPool's indices put its maxima back in place; pooling that again gives MaxPool's
    output (the text's 'partial inverse'), for windows that tile the input and maxima > 0 (the
    zeros stay below them)."""
    x = random(rng, (2, 3, 6, 8), dtype, 0.5, 3.0)
    with oc.backend(cpu_backend):
        y, indices = oc.max_pool(x, **TWO, return_indices=True)
        z = oc.max_unpool(y, indices, **TWO)
        again = oc.max_pool(z, **TWO)
    kept = z != 0
    assert z.shape == x.shape and np.array_equal(z[kept], x[kept])
    assert int(kept.sum()) == y.size and again.tobytes() == y.tobytes()


def test_repeated_indices_the_last_element_wins(cpu_backend):
    """As onnxruntime's sequential loop: the last element of X in row-major order naming a
    position gives its value, wherever the repeats stand."""
    x = np.arange(1.0, 9.0, dtype=np.float32).reshape(1, 2, 4)
    indices = np.array([[[3, 3, 1, 3], [9, 1, 9, 8]]])   # planes share one index space
    y = run(cpu_backend, x, indices, kernel_shape=[2], strides=[2])
    assert y.shape == (1, 2, 8)
    assert y.reshape(-1).tolist() == [0, 6, 0, 4, 0, 0, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0]


def test_values_are_copied_bit_for_bit(cpu_backend):
    x = np.array([[[np.nan, -0.0, np.inf, -np.inf]]], np.float32)
    x.view(np.uint32)[0, 0, 0] |= 0x1234   # a NaN payload
    y = run(cpu_backend, x, np.array([[[1, 2, 5, 7]]]), kernel_shape=[2], strides=[2])
    assert y.view(np.uint32)[0, 0, [1, 2, 5, 7]].tolist() == x.view(np.uint32)[0, 0].tolist()
    assert not y.view(np.uint32)[0, 0, [0, 3, 4, 6]].any()


@pytest.mark.parametrize("output_shape, rank", [
    (None, 1), ([1, 1, 4, 5], 2), ([1, 1, 5, 5], 3), ([1, 1, 5, 4], 2)])
def test_scatter_rank_merges_the_axes_the_output_keeps(output_shape, rank, launches):
    """One scatter over X and one gather over Y; the scatter's rank is 1 plus the axes whose
    length the output changes (from the second on)."""
    with oc.backend("emulated"):
        oc.max_unpool(X, I, output_shape, **TWO)
    (scatter, _), (gather, _) = launches
    assert (scatter, gather) == (kernel.SCATTER[32, rank], kernel.GATHER["float32", 32])


def test_remap():
    assert plan.remap((2, 3, 4, 4), (2, 3, 4, 4)) == ((96, 1),)
    assert plan.remap((2, 3, 4, 4), (2, 3, 5, 6)) == ((6, 30), (4, 6), (4, 1))
    assert plan.remap((2, 3, 4, 4), (2, 3, 5, 4)) == ((6, 20), (16, 1))


def test_the_kernel_skips_indices_outside_the_unpooled_shape():
    """What the GPU path does with an index it cannot check without synchronizing: nothing is
    written for it (the host arrays' check raises before any launch)."""
    indices = np.array([[[[-1, 7], [16, 15]]]])
    with execution.backend("emulated"):
        y = api.run(X, indices, None, 22, TWO, checked=False)
    expected = np.zeros((1, 1, 4, 4), np.float32)
    expected[0, 0, 1, 3], expected[0, 0, 3, 3] = 6, 8
    assert np.array_equal(y, expected)


@pytest.mark.parametrize("bad, where", [(-1, (0, 0, 0, 0)), (16, (0, 0, 1, 0))])
def test_an_index_outside_the_unpooled_shape_is_an_error(bad, where, cpu_backend):
    indices = I.copy()
    indices[where] = bad
    with pytest.raises(ValueError, match=rf"MaxUnpool: input 'I' holds {bad} at "
                                         rf"\({', '.join(map(str, where))}\), outside \[0, 16\)"):
        run(cpu_backend, X, indices, **TWO)


@pytest.mark.parametrize("args, kw, error, pattern", [
    ((), {}, ValueError, r"attribute 'kernel_shape' is required"),
    ((), {"kernel_shape": [2]}, ValueError, r"'kernel_shape' has 1 values, expected 2"),
    ((), {"kernel_shape": [0, 2]}, ValueError, r"'kernel_shape' values must be >= 1"),
    ((), {**TWO, "strides": [0, 1]}, ValueError, r"'strides' values must be >= 1"),
    ((), {**TWO, "pads": [0, 0]}, ValueError, r"'pads' has 2 values, expected 4"),
    ((), {**TWO, "pads": [3, 0, 3, 0]}, ValueError,
     r"unpooled length along spatial axis 0 is -2 < 0"),
    (([1, 1, 4],), TWO, ValueError, r"'output_shape' has 3 values, expected 4"),
    (([1, 2, 4, 4],), TWO, ValueError, r"must keep X's batch and channel dimensions \[1, 1\]"),
    (([1, 1, 3, 5],), TWO, ValueError,
     r"'output_shape' \[1, 1, 3, 5\] is smaller than the unpooled shape \[1, 1, 4, 4\]"),
    (([1, 1, 4, -1],), TWO, ValueError, r"'output_shape' values must be >= 0"),
    ((np.array([1.0, 1, 4, 4]),), TWO, TypeError, r"'output_shape' must hold integers"),
    ((), {**TWO, "opset": 8}, ValueError, r"opset 8 is outside the supported range 9\.\.28"),
    ((), {**TWO, "kernel_shape": (2.0, 2)}, TypeError, r"'kernel_shape' must be a sequence"),
], ids=["no_kernel", "kernel_length", "kernel_0", "stride_0", "pads_length", "negative_length",
        "output_rank", "output_channels", "output_short", "output_negative", "output_floats",
        "opset", "kernel_floats"])
def test_bad_arguments(args, kw, error, pattern, cpu_backend):
    with pytest.raises(error, match="MaxUnpool: .*" + pattern):
        run(cpu_backend, X, I, *args, **kw)


@pytest.mark.parametrize("x, indices, error, pattern", [
    (X, I.astype(np.int32), TypeError, r"input 'I' must be int64 \(tensor\(int64\)\), got dtype"),
    (X, I.reshape(1, 1, 4, 1), ValueError, r"input 'I' must have X's shape \(1, 1, 2, 2\)"),
    (X, I.tolist(), TypeError, r"input 'I' must be a numpy.ndarray like X, got builtins.list"),
    (X[0, 0], I[0, 0], ValueError, r"X must have rank >= 3"),
    (X.astype(np.int8), I, TypeError, r"input dtype int8 is not supported"),
    (np.ones((1, 1, *(1,) * 9), np.float32), np.zeros((1, 1, *(1,) * 9), np.int64), ValueError,
     r"at most 8 spatial dimensions"),
], ids=["int32", "shape", "list", "rank", "int8", "nine_axes"])
def test_bad_inputs(x, indices, error, pattern):
    with pytest.raises(error, match="MaxUnpool: " + pattern):
        oc.max_unpool(x, indices, kernel_shape=[2] * max(x.ndim - 2, 1))


def test_bfloat16_from_opset_22():
    x = X.astype(FLOAT_DTYPES[1])
    assert oc.max_unpool(x, I, **TWO).dtype == x.dtype
    with pytest.raises(TypeError, match=r"MaxUnpool: input dtype bfloat16 requires opset >= 22 "
                                        r"\(it came with MaxUnpool-22\)"):
        oc.max_unpool(x, I, **TWO, opset=11)


def test_empty_tensors(cpu_backend):
    none = np.zeros((0, 2, 3), np.float32)
    assert run(cpu_backend, none, none.astype(np.int64), kernel_shape=[2], strides=[2]).shape \
        == (0, 2, 6)
    empty = np.zeros((1, 2, 0), np.float32)   # U = (0 - 1) * s + k: zeros, or empty
    y = run(cpu_backend, empty, empty.astype(np.int64), kernel_shape=[3], strides=[1])
    assert y.shape == (1, 2, 2) and not y.any()
    assert run(cpu_backend, empty, empty.astype(np.int64), kernel_shape=[2],
               strides=[2]).shape == (1, 2, 0)


def test_out_and_strided_inputs(cpu_backend, rng):
    x = random(rng, (2, 3, 8, 6), np.float32)[:, :, ::2, ::2]        # strided views
    spread = np.arange(x.size).reshape(x.shape) * 4
    indices = np.ascontiguousarray(np.swapaxes(spread, 2, 3)).swapaxes(2, 3)  # F order planes
    assert not x.flags.c_contiguous and not indices.flags.c_contiguous
    out = np.full((2, 3, 8, 6), 7.0, np.float32)
    with oc.backend(cpu_backend):
        y = oc.max_unpool(x, indices, kernel_shape=[2, 2], strides=[2, 2], out=out)
    assert y is out
    expected = oracle(np.ascontiguousarray(x), np.ascontiguousarray(indices), (2, 3, 8, 6), None)
    assert y.tobytes() == expected.tobytes()
    with pytest.raises(ValueError, match=r"MaxUnpool: out has shape \(2, 3, 8, 5\)"), \
            oc.backend(cpu_backend):
        oc.max_unpool(x, indices, kernel_shape=[2, 2], strides=[2, 2],
                      out=np.empty((2, 3, 8, 5), np.float32))


@pytest.mark.parametrize("output_shape", [None, [2, 3, 9, 7]], ids=["unpooled", "padded"])
def test_64_bit_offsets_give_the_same_bits(output_shape, index_width, launches, rng):
    """The long long instantiations (chosen where sizes pass 2^31 - 1), forced here on a small
    tensor: the bits of the int ones, with unsigned long long winners."""
    x = random(rng, (2, 3, 3, 3), np.float64)
    indices = rng.integers(0, 2 * 3 * 6 * 6, size=x.shape)   # repeats among them
    kw = {"kernel_shape": [2, 2], "strides": [2, 2]}
    with oc.backend("emulated"):
        narrow = oc.max_unpool(x, indices, output_shape, **kw)
        index_width(64)   # also drops the prepared call, which kept the 32-bit launches
        wide = oc.max_unpool(x, indices, output_shape, **kw)
    assert [k.index_bits for k, _ in launches] == [32, 32, 64, 64]
    assert wide.tobytes() == narrow.tobytes()
    assert narrow.tobytes() == oracle(x, indices, (2, 3, 6, 6), output_shape and tuple(
        output_shape)).tobytes()
