"""onnx_cupy.dask.grid_sample and affine_grid: every block runs the eager function, so results
equal the eager call on the whole arrays bit for bit; X's batch and channel chunks and the grid's
output chunks are kept (X's spatial axes and the grid's last axis become one chunk); graphs are
lazy; errors are raised when the graph is built."""
from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import onnx_cupy as oc
import onnx_cupy.dask as ocd
from onnx_cupy.core import execution


@pytest.mark.parametrize("backend", ["numpy", "emulated"])
@pytest.mark.parametrize("attrs", [{}, {"mode": "cubic", "padding_mode": "reflection"},
                                   {"mode": "nearest", "align_corners": 1}],
                         ids=["linear", "cubic", "nearest"])
def test_grid_sample_blocks_equal_eager(rng, backend, attrs):
    x = rng.standard_normal((5, 4, 7, 9)).astype(np.float32)
    g = rng.uniform(-1.3, 1.3, (5, 6, 8, 2)).astype(np.float32)
    with execution.backend(backend):
        y = ocd.grid_sample(da.from_array(x, chunks=(2, 3, 4, 5)),
                            da.from_array(g, chunks=(3, 4, 3, 1)), **attrs)
        assert y.chunks == ((2, 2, 1), (3, 1), (4, 2), (3, 3, 2))
        np.testing.assert_array_equal(y.compute(scheduler="synchronous"),
                                      oc.grid_sample(x, g, **attrs))


def test_grid_sample_3d_and_a_numpy_grid(rng):
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float64)
    g = rng.uniform(-1.1, 1.1, (2, 3, 2, 4, 3))
    y = ocd.grid_sample(da.from_array(x, chunks=(1, 2, 2, 5, 3)), g, padding_mode="border")
    assert y.chunks == ((1, 1), (2, 1), (3,), (2,), (4,))
    np.testing.assert_array_equal(y.compute(), oc.grid_sample(x, g, padding_mode="border"))


def test_grid_sample_is_lazy_and_checked_when_built(launches):
    x = da.ones((2, 3, 4, 5), chunks=1, dtype=np.float32)
    with execution.backend("emulated"):
        y = ocd.grid_sample(x, da.zeros((2, 6, 7, 2), chunks=2, dtype=np.float32))
    assert y.shape == (2, 3, 6, 7) and y.dtype == np.float32
    with pytest.raises(ValueError, match="grid has 3 batch items, X has 2"):
        ocd.grid_sample(x, da.zeros((3, 6, 7, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="'mode' = 'bilinear' is not defined at opset 22"):
        ocd.grid_sample(x, da.zeros((2, 6, 7, 2), dtype=np.float32), mode="bilinear")
    with pytest.raises(TypeError, match="out= is not supported on dask arrays"):
        ocd.grid_sample(x, da.zeros((2, 6, 7, 2), dtype=np.float32), out=np.empty(1))
    assert launches == []   # built, not computed


@pytest.mark.parametrize("size", [[5, 1, 3, 4], [5, 2, 2, 3, 4]], ids=["2d", "3d"])
def test_affine_grid_blocks_equal_eager(rng, size):
    rank = len(size) - 2
    theta = rng.standard_normal((5, rank, rank + 1)).astype(np.float32)
    y = ocd.affine_grid(da.from_array(theta, chunks=(2, 1, 2)), size, align_corners=1)
    assert y.chunks == ((2, 2, 1), *((n,) for n in size[2:]), (rank,))
    np.testing.assert_array_equal(y.compute(), oc.affine_grid(theta, size, align_corners=1))
    with pytest.raises(ValueError, match="names 4 batch items, theta has 5"):
        ocd.affine_grid(da.from_array(theta), [4, *size[1:]])


def test_affine_grid_feeds_grid_sample(rng):
    x = rng.standard_normal((4, 3, 6, 5)).astype(np.float32)
    theta = rng.uniform(-1, 1, (4, 2, 3)).astype(np.float32)
    grid = ocd.affine_grid(da.from_array(theta, chunks=(2, 2, 3)), [4, 3, 7, 8])
    y = ocd.grid_sample(da.from_array(x, chunks=(1, 3, 6, 5)), grid)
    np.testing.assert_array_equal(y.compute(), oc.grid_sample(x, oc.affine_grid(theta,
                                                                               [4, 3, 7, 8])))
