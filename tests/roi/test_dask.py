"""onnx_cupy.dask.roi_align and max_roi_pool: channel blocks with every region equal the eager
call bit for bit, on the NumPy path and the emulated kernels; the chunks declared; rois and
batch indices as NumPy or dask arrays; the eager errors when the graph is built."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_cupy as oc

da = pytest.importorskip("dask.array")
ocd = pytest.importorskip("onnx_cupy.dask")

ROIS = np.array([[0, 0, 4, 4], [2, 2, 8.5, 7], [1, 1, 1, 1], [-3, 5, 2, 12]], np.float32)
BATCH = np.array([0, 2, 1, 2])


@pytest.mark.parametrize("chunks", [(1, 4, 3, 5), (3, 1, 9, 11), (2, 6, 4, 4)],
                         ids=lambda c: "x".join(map(str, c)))
def test_blocks_equal_eager(cpu_backend, chunks, rng):
    x = rng.standard_normal((3, 6, 9, 11)).astype(np.float32)
    X = da.from_array(x, chunks=chunks)
    kw = {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "mode": "max"}
    rois5 = np.concatenate([BATCH[:, None], ROIS], axis=1).astype(np.float32)
    with oc.backend(cpu_backend):
        y = ocd.roi_align(X, ROIS, da.from_array(BATCH, chunks=2), **kw)
        p = ocd.max_roi_pool(X, da.from_array(rois5, chunks=(3, 5)), pooled_shape=[2, 3])
        want_y = oc.roi_align(x, ROIS, BATCH, **kw)
        want_p = oc.max_roi_pool(x, rois5, pooled_shape=[2, 3])
    assert y.chunks == ((4,), X.chunks[1], (3,), (2,))
    assert p.chunks == ((4,), X.chunks[1], (2,), (3,))
    got_y, got_p = y.compute(scheduler="sync"), p.compute(scheduler="sync")
    assert got_y.tobytes() == want_y.tobytes() and got_p.tobytes() == want_p.tobytes()


def test_errors_when_built():
    X = da.zeros((2, 3, 4, 4), chunks=(1, 1, 4, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="output_height"):
        ocd.roi_align(X, ROIS, BATCH, output_height=-1)
    with pytest.raises(ValueError, match=r"\(num_rois, 5\)"):
        ocd.max_roi_pool(X, ROIS, pooled_shape=[2, 2])
    with pytest.raises(TypeError, match="out="):
        ocd.roi_align(X, ROIS, BATCH, out=np.zeros(1))


def test_graph_is_lazy():
    """Building the graph runs no operator: no block of X is computed, and neither operator
    has prepared a call (not even on an empty meta array); computing it does both."""
    from onnx_cupy.roi import api

    blocks = []

    def source(b):
        blocks.append(b.shape)
        return b

    x = np.zeros((3, 2, 9, 9), np.float32)
    X = da.from_array(x, chunks=(1, 1, 9, 9)).map_blocks(source, dtype=x.dtype, meta=x[:0])
    rois5 = np.concatenate([BATCH[:, None], ROIS], axis=1).astype(np.float32)
    y = ocd.roi_align(X, ROIS, BATCH)
    p = ocd.max_roi_pool(X, rois5, pooled_shape=[2, 2])
    assert y.shape == (4, 2, 1, 1) and p.shape == (4, 2, 2, 2)
    assert blocks == [] and len(api.ALIGN.cache) == len(api.POOL.cache) == 0
    for graph in (y, p):
        graph.compute(scheduler="sync")
    assert blocks and len(api.ALIGN.cache) > 0 and len(api.POOL.cache) > 0
