"""onnx_cupy.dask: every block runs the eager function, so results equal the eager call on the
whole array bit for bit; axes keep their chunks where the operator leaves them unchanged; graphs
are lazy with declared chunks and dtype; errors are raised when the graph is built."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dask
from helpers.standin import StandIn

import onnx_cupy as oc
import onnx_cupy.dask as ocd
from onnx_cupy.core import execution

SHAPE, CHUNKS = (4, 6, 9, 11), (3, 4, 5, 6)

# (dask function, eager function, shape, chunks, dtype, keywords, axes that keep their chunks)
CASES = {
    "avg_pads_ceil_include": (ocd.average_pool, oc.average_pool, SHAPE, CHUNKS, np.float32,
                              {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
                                   "ceil_mode": 1, "count_include_pad": 1}, (0, 1)),
    "avg_3d_dilated_same_lower": (ocd.average_pool, oc.average_pool, (2, 3, 5, 6, 7),
                                  (1, 2, 3, 4, 5), np.float64,
                                  {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2],
                                       "auto_pad": "SAME_LOWER", "opset": 19}, (0, 1)),
    "avg_v10_ceil_nan_window": (ocd.average_pool, oc.average_pool, (3, 5, 6, 6), (2, 2, 4, 4),
                                np.float32, {"kernel_shape": [2, 2], "strides": [3, 3],
                                                 "pads": [0, 0, 2, 2], "ceil_mode": 1, "opset": 10},
                                (0, 1)),
    "lp_p3_ceil_f16": (ocd.lp_pool, oc.lp_pool, SHAPE, CHUNKS, np.float16,
                       {"kernel_shape": [2, 3], "p": 3, "pads": [1, 1, 0, 1], "ceil_mode": 1,
                            "strides": [2, 2], "opset": 18}, (0, 1)),
    "lp_v2_1d": (ocd.lp_pool, oc.lp_pool, (5, 4, 13), (2, 3, 5), np.float32,
                 {"kernel_shape": [3], "p": 2, "opset": 2}, (0, 1)),
    "hardmax_v13_middle": (ocd.hardmax, oc.hardmax, SHAPE, CHUNKS, np.float32,
                           {"axis": 1}, (0, 2, 3)),
    "hardmax_v13_default_f16": (ocd.hardmax, oc.hardmax, SHAPE, CHUNKS, np.float16, {},
                                (0, 1, 2)),
    "hardmax_v11_coerced": (ocd.hardmax, oc.hardmax, SHAPE, CHUNKS, np.float64,
                            {"axis": 2, "opset": 11}, (0, 1)),
    "hardmax_v1_default": (ocd.hardmax, oc.hardmax, SHAPE, CHUNKS, np.float32,
                           {"opset": 1}, (0,)),
    "resize_linear_axes_scales": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                  {"axes": [2, 3], "scales": [1.7, 0.6], "mode": "linear"}, (0, 1)),
    "resize_cubic_sizes_v13": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                               {"sizes": [4, 6, 13, 7], "mode": "cubic", "opset": 13}, (0, 1)),
    "resize_nearest_channel": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                               {"axes": [1], "scales": [2.5], "nearest_mode": "floor",
                                    "coordinate_transformation_mode": "asymmetric", "opset": 18},
                               (0, 2, 3)),
    "resize_cubic_last_axis": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float64,
                               {"axes": [-1], "scales": [1.5], "mode": "cubic",
                                "exclude_outside": 1}, (0, 1, 2)),
    "resize_listed_identity_axis": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                    {"axes": [1, 2], "scales": [1.0, 2.0], "mode": "linear"},
                                    (0, 1, 3)),
    "resize_nearest_identity_by_rounding": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                            {"axes": [1, 3], "scales": [1.05, 2.0]}, (0, 1, 2)),
    "resize_crop_identity_channel": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                     {"axes": [1, 3], "roi": [0.01, 0, 1, 1], "scales": [1.02, 2.0],
                                          "coordinate_transformation_mode": "tf_crop_and_resize"},
                                     (0, 1, 2)),
    "resize_sizes_listed_identity": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                     {"axes": [0, 3], "sizes": [4, 20], "mode": "linear"},
                                     (0, 1, 2)),
    "resize_antialias_sizes_u8": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.uint8,
                                  {"axes": [2], "sizes": [5], "mode": "linear", "antialias": 1},
                                  (0, 1, 3)),
    "resize_crop_roi": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                        {"roi": [0, 0, 0.1, 0.2, 1, 1, 0.9, 1.0], "scales": [1, 1, 2, 3],
                             "mode": "linear",
                             "coordinate_transformation_mode": "tf_crop_and_resize",
                             "extrapolation_value": -1.0}, (0, 1)),
    "resize_not_larger": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                          {"axes": [2, 3], "sizes": [5, 20], "mode": "linear",
                               "keep_aspect_ratio_policy": "not_larger"}, (0, 1)),
    "resize_not_smaller_all_axes": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                                    {"sizes": [4, 6, 9, 12], "mode": "nearest",
                                         "keep_aspect_ratio_policy": "not_smaller"}, ()),
    "resize_v10": (ocd.resize, oc.resize, SHAPE, CHUNKS, np.float32,
                   {"scales": [1, 1, 2, 0.5], "opset": 10}, (0, 1)),
    "upsample_linear_v9": (ocd.upsample, oc.upsample, SHAPE, CHUNKS, np.float32,
                           {"scales": [1, 1, 2, 1.5], "mode": "linear", "opset": 9}, (0, 1)),
    "upsample_nearest_channel_v7": (ocd.upsample, oc.upsample, SHAPE, CHUNKS, np.uint8,
                                    {"scales": [1, 3, 1, 1], "opset": 7}, (0, 2, 3)),
}


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype) -> np.ndarray:
    """Small values with frequent ties (Hardmax), exact in every dtype."""
    if np.dtype(dtype).kind == "u":
        return rng.integers(0, 256, size=shape).astype(dtype)
    return (rng.integers(-16, 17, size=shape) / 4).astype(dtype)


def blocks(y) -> np.ndarray:
    """Compute `y` block by block (threaded scheduler), check every block against the declared
    chunks, dtype and array type, and assemble the result."""
    parts = y.to_delayed()
    computed = dask.compute(*parts.ravel(), scheduler="threads")
    grid = np.empty(parts.shape, dtype=object)
    for index, block in zip(np.ndindex(parts.shape), computed):
        assert block.shape == tuple(c[i] for c, i in zip(y.chunks, index))
        assert block.dtype == y.dtype and type(block) is type(y._meta)
        grid[index] = block
    return np.block(grid.tolist())


def assert_bitwise(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize("name", list(CASES))
def test_blocks_equal_eager(name, rng):
    fn, eager, shape, chunks, dtype, kw, kept = CASES[name]
    x = sample(rng, shape, dtype)
    X = da.from_array(x, chunks=chunks)
    y = fn(X, **kw)
    expected = eager(x, **kw)
    assert y.shape == expected.shape and y.dtype == expected.dtype
    for d in range(x.ndim):
        if d in kept:
            assert y.chunks[d] == X.chunks[d], d
        else:
            assert y.chunks[d] == (expected.shape[d],), d
    assert_bitwise(blocks(y), expected)


def test_compute_synchronous(rng):
    x = sample(rng, SHAPE, np.float32)
    y = ocd.resize(da.from_array(x, chunks=CHUNKS), axes=[2, 3], scales=[2.0, 0.5], mode="cubic")
    assert_bitwise(y.compute(scheduler="synchronous"),
                   oc.resize(x, axes=[2, 3], scales=[2.0, 0.5], mode="cubic"))


def test_graph_is_lazy(rng):
    x = sample(rng, SHAPE, np.float32)
    calls = []

    def source(b):
        calls.append(b.shape)
        return b

    X = da.from_array(x, chunks=CHUNKS).map_blocks(source, dtype=x.dtype, meta=x[:0, :0, :0, :0])
    graphs = [ocd.average_pool(X, kernel_shape=[2, 2]), ocd.lp_pool(X, kernel_shape=[3, 1]),
              ocd.hardmax(X, axis=2), ocd.resize(X, scales=[1, 1, 2, 2], mode="linear")]
    assert calls == []
    for y in graphs:
        y.compute(scheduler="synchronous")
    assert len(calls) == len(graphs) * X.npartitions


def test_rechunk_only_when_needed(rng):
    x = sample(rng, SHAPE, np.float32)
    whole = ocd.average_pool(da.from_array(x, chunks=(2, 3, -1, -1)), kernel_shape=[2, 2])
    split = ocd.average_pool(da.from_array(x, chunks=CHUNKS), kernel_shape=[2, 2])
    assert not any(name.startswith("rechunk") for name in whole.dask.layers)
    assert any(name.startswith("rechunk") for name in split.dask.layers)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_axes_after_a_resized_one_keep_their_chunks(rng, mode):
    """An unresized axis after a resized one keeps its chunks on every path and mode (the NumPy
    path's bits do not depend on the rows it is given), and the blocks are the eager bits."""
    x = sample(rng, SHAPE, np.float32)
    X = da.from_array(x, chunks=CHUNKS)
    y = ocd.resize(X, axes=[2], scales=[2.0], mode=mode)
    assert y.chunks[3] == X.chunks[3] and len(X.chunks[3]) > 1
    assert_bitwise(blocks(y), oc.resize(x, axes=[2], scales=[2.0], mode=mode))


def test_backend_fixed_when_built(rng, launches):
    x = sample(rng, SHAPE, np.float32)
    kw = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}
    with oc.backend("emulated"):
        y = ocd.average_pool(da.from_array(x, chunks=CHUNKS), **kw)
        expected = oc.average_pool(x, **kw)
    launches.clear()
    assert_bitwise(y.compute(scheduler="threads"), expected)
    assert launches   # the chunks ran on the emulated kernels


# (dask function, eager function, shape, keywords) that the eager call rejects
EAGER_ERRORS = [
    (ocd.average_pool, oc.average_pool, SHAPE, {}),
    (ocd.average_pool, oc.average_pool, SHAPE, {"kernel_shape": [2, 2], "dilations": [1, 1],
                                                    "opset": 11}),
    (ocd.average_pool, oc.average_pool, SHAPE, {"kernel_shape": [12, 2]}),
    (ocd.average_pool, oc.average_pool, (4, 6), {"kernel_shape": [2]}),
    (ocd.lp_pool, oc.lp_pool, SHAPE, {"kernel_shape": [2, 2], "p": 2.5}),
    (ocd.hardmax, oc.hardmax, SHAPE, {"axis": 4}),
    (ocd.hardmax, oc.hardmax, SHAPE, {"axis": -5, "opset": 1}),
    (ocd.resize, oc.resize, SHAPE, {"scales": [1, 1, 2, 2], "sizes": [4, 6, 9, 11]}),
    (ocd.resize, oc.resize, SHAPE, {"scales": [2, 2]}),
    (ocd.resize, oc.resize, SHAPE, {"roi": [0] * 8, "scales": [1, 1, 2, 2], "opset": 10}),
    (ocd.resize, oc.resize, SHAPE, {"scales": [2, 2], "axes": [2, 3], "opset": 13}),
    (ocd.resize, oc.resize, SHAPE, {"scales": [1, 1, 2, 2], "mode": "bicubic"}),
    (ocd.upsample, oc.upsample, SHAPE, {"scales": [1, 1, 0.5, 2]}),
    (ocd.upsample, oc.upsample, SHAPE, {"scales": [1, 1, 2, 2], "mode": "cubic"}),
]


@pytest.mark.parametrize("case", range(len(EAGER_ERRORS)))
def test_errors_when_built(case):
    fn, eager, shape, kw = EAGER_ERRORS[case]
    x = np.zeros(shape, dtype=np.float32)
    with pytest.raises((TypeError, ValueError)) as raised:
        eager(x, **kw)
    with pytest.raises(raised.type, match=re.escape(str(raised.value))):
        fn(da.from_array(x, chunks=2), **kw)


def test_dtype_error_when_built():
    X = da.zeros(SHAPE, dtype=np.int32, chunks=2)
    with pytest.raises(TypeError, match="input dtype int32 is not supported"):
        ocd.hardmax(X)


def test_dask_specific_errors():
    X = da.zeros(SHAPE, dtype=np.float32, chunks=2)
    with pytest.raises(TypeError, match="out= is not supported"):
        ocd.average_pool(X, kernel_shape=[2, 2], out=np.empty((4, 6, 8, 10), np.float32))
    with pytest.raises(TypeError, match="X must be a dask.array.Array, got numpy.ndarray"):
        ocd.hardmax(np.zeros(SHAPE, np.float32))
    with pytest.raises(TypeError, match="LpPool: got an unexpected keyword argument 'kernel'"):
        ocd.lp_pool(X, kernel=[2, 2])
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        ocd.hardmax(X[X[:, 0, 0, 0] > 0])
    with StandIn().installed(), oc.backend("cupy"), pytest.raises(
            TypeError, match="backend 'cupy' needs a cupy"):
        ocd.resize(X, scales=[1, 1, 2, 2])


def test_import_onnx_cupy_does_not_import_dask():
    code = "import sys, onnx_cupy; assert 'dask' not in sys.modules, 'dask imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# one configuration per operator on CuPy chunks: (dask function, eager function, keywords)
GPU_CASES = {
    "average_pool": (ocd.average_pool, oc.average_pool,
                     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                      "ceil_mode": 1}),
    "lp_pool": (ocd.lp_pool, oc.lp_pool, {"kernel_shape": [2, 3], "p": 3}),
    "hardmax": (ocd.hardmax, oc.hardmax, {"axis": 1}),
    "resize": (ocd.resize, oc.resize, {"axes": [2], "scales": [1.7], "mode": "cubic"}),
}


@pytest.fixture
def gpu_cupy():
    """The cupy module: the real one on a GPU, else a fresh executing stand-in."""
    if execution.gpu_available():
        yield execution.cupy_module()
        return
    with StandIn().installed() as fake:
        yield fake


@pytest.mark.parametrize("name", list(GPU_CASES))
def test_cupy_chunks(name, rng, gpu_cupy):
    """CuPy-backed dask arrays: cupy meta and blocks, the CUDA path, equal to the eager CuPy call
    (Resize keeps the axes after the resized one chunked on this path)."""
    cp = gpu_cupy
    fn, eager, kw = GPU_CASES[name]
    x = sample(rng, SHAPE, np.float32)
    X = da.from_array(x, chunks=CHUNKS).map_blocks(cp.asarray)
    y = fn(X, **kw)
    assert isinstance(y._meta, cp.ndarray)
    if name == "resize":
        assert y.chunks[3] == X.chunks[3]
    got = y.compute(scheduler="threads")
    assert isinstance(got, cp.ndarray)
    assert_bitwise(cp.asnumpy(got), cp.asnumpy(eager(cp.asarray(x), **kw)))


# ---------------------------------------------------------------- MaxPool and the global pools

MAX_CASES = {
    "max_pads_ceil_f16": (ocd.max_pool, oc.max_pool, SHAPE, CHUNKS, np.float16,
                          {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
                           "ceil_mode": 1}),
    "max_3d_dilated_v12": (ocd.max_pool, oc.max_pool, (2, 3, 5, 6, 7), (1, 2, 3, 4, 5),
                           np.float64, {"kernel_shape": [2, 3, 2], "dilations": [2, 1, 2],
                                        "opset": 12}),
    "global_average": (ocd.global_average_pool, oc.global_average_pool, SHAPE, CHUNKS,
                       np.float32, {}),
    "global_max_v1": (ocd.global_max_pool, oc.global_max_pool, SHAPE, CHUNKS, np.float64,
                      {"opset": 1}),
    "global_lp_p3": (ocd.global_lp_pool, oc.global_lp_pool, SHAPE, CHUNKS, np.float32,
                     {"p": 3}),
}


@pytest.mark.parametrize("name", list(MAX_CASES))
def test_max_and_global_blocks_equal_eager(name, rng):
    fn, eager, shape, chunks, dtype, kw = MAX_CASES[name]
    x = sample(rng, shape, dtype)
    X = da.from_array(x, chunks=chunks)
    y = fn(X, **kw)
    expected = eager(x, **kw)
    assert y.chunks[:2] == X.chunks[:2]
    assert_bitwise(blocks(y), expected)


@pytest.mark.parametrize("order", [0, 1])
def test_max_pool_indices_across_blocks(order, rng):
    """Indices of blocks past the first (n, c) chunk count the planes before them."""
    x = sample(rng, SHAPE, np.float32)
    kw = {"kernel_shape": [2, 3], "pads": [1, 1, 0, 1], "storage_order": order}
    y, i = ocd.max_pool(da.from_array(x, chunks=CHUNKS), return_indices=True, **kw)
    ey, ei = oc.max_pool(x, return_indices=True, **kw)
    assert i.dtype == np.int64 and i.chunks == y.chunks
    assert_bitwise(blocks(y), ey)
    assert_bitwise(blocks(i), ei)


def test_max_pool_indices_error_when_built():
    X = da.ones((2, 2, 4, 4), chunks=1, dtype=np.float32)
    with pytest.raises(ValueError, match=r"MaxPool: the Indices output .*opset 7"):
        ocd.max_pool(X, kernel_shape=[2, 2], opset=7, return_indices=True)


# ---------------------------------------------------------------- MaxUnpool

@pytest.mark.parametrize("output_shape", [None, [4, 6, 10, 12]], ids=["unpooled", "padded"])
def test_max_unpool_blocks_equal_eager(output_shape, rng):
    """MaxPool's indices, chunked over N and C: each block makes its planes' indices its own."""
    x = sample(rng, (4, 6, 9, 11), np.float32)
    kw = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 0, 2]}
    y, i = oc.max_pool(x, return_indices=True, **kw)
    z = ocd.max_unpool(da.from_array(y, chunks=(3, 4, 2, 3)), da.from_array(i, chunks=2),
                       output_shape, **kw)
    expected = oc.max_unpool(y, i, output_shape, **kw)
    assert z.chunks == ((3, 1), (4, 2), *((n,) for n in expected.shape[2:]))
    assert_bitwise(blocks(z), expected)


def test_max_unpool_errors():
    x = da.ones((2, 2, 2, 2), chunks=1, dtype=np.float32)
    across = da.from_array(np.arange(16).reshape(2, 2, 2, 2)[::-1].copy() * 4, chunks=1)
    with pytest.raises(ValueError, match=r"MaxUnpool: input 'I' holds \d+, an index into the "
                                         r"\(n, c\) plane \(\d, \d\), outside the planes of its "
                                         r"block \(n in \[\d, \d\), c in \[\d, \d\)\): rechunk N "
                                         r"and C whole"):
        ocd.max_unpool(x, across, kernel_shape=[2, 2], strides=[2, 2]).compute()
    assert_bitwise(ocd.max_unpool(x.rechunk({0: -1, 1: -1}), across, kernel_shape=[2, 2],
                                  strides=[2, 2]).compute(),
                   oc.max_unpool(np.ones((2, 2, 2, 2), np.float32), across.compute(),
                                 kernel_shape=[2, 2], strides=[2, 2]))
    with pytest.raises(TypeError, match=r"MaxUnpool: I must be a dask.array.Array like X"):
        ocd.max_unpool(x, np.zeros((2, 2, 2, 2), np.int64), kernel_shape=[2, 2])
    with pytest.raises(ValueError, match=r"MaxUnpool: input 'output_shape' \[2, 2, 3, 3\] is "
                                         r"smaller than the unpooled shape"):
        ocd.max_unpool(x, across, [2, 2, 3, 3], kernel_shape=[2, 2], strides=[2, 2])
