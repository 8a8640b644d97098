"""GridSample and AffineGrid at photograph sizes against onnxruntime, the ONNX operators' peer:
a 224 x 224 and a 345 x 456 input of 8-bit values 0-255 (helpers/photographs.py) sampled on an
affine grid partly outside [-1, 1], every mode, padding mode and align_corners, float32 and
float16 (onnxruntime computes float16 through float32: its float32 result rounded), judged at
the dtype's default torch.testing.assert_close tolerance: at least 99.9 % of the elements within
it, nearest bit for bit. The 345 x 456 cases are slow."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.photographs import assert_mostly_close, photograph
from helpers.util import node_model, onnxruntime

import onnx_cupy
from onnx_cupy.core import execution
from onnx_cupy.grid.plan import base

SHAPES = {"224": (1, 3, 224, 224), "345x456": (2, 3, 345, 456)}


def _grid(rng, n: int, out: tuple[int, int]) -> np.ndarray:
    """An affine grid (rotation, scale, shift) with a little noise, partly outside [-1, 1]."""
    a = rng.uniform(-0.3, 0.3)
    theta = np.array([[np.cos(a) * 1.1, -np.sin(a), 0.05], [np.sin(a), np.cos(a) * 0.9, -0.1]])
    ys = base(np.arange(out[0]), out[0], False, np.dtype(np.float64))
    xs = base(np.arange(out[1]), out[1], False, np.dtype(np.float64))
    v = np.stack(np.meshgrid(xs, ys), axis=-1)                 # (H, W, 2): x, y
    g = v @ theta[:, :2].T + theta[:, 2]
    g = np.broadcast_to(g, (n, *g.shape)) + rng.normal(0, 0.01, (n, *g.shape))
    return g.astype(np.float32)


def _cases():
    for size in SHAPES:
        for mode in ("linear", "cubic", "nearest"):
            for padding in ("zeros", "border", "reflection"):
                for align_corners in (0, 1):
                    for dtype in ("float32", "float16"):
                        marks = [pytest.mark.slow] if size != "224" else []
                        yield pytest.param(size, mode, padding, align_corners, dtype, marks=marks,
                                           id=f"{size}-{mode}-{padding}-ac{align_corners}-{dtype}")


@pytest.mark.parametrize("size,mode,padding,align_corners,dtype", list(_cases()))
def test_grid_sample_agrees_with_onnxruntime(rng, size, mode, padding, align_corners, dtype):
    shape = SHAPES[size]
    x = photograph(rng, shape, dtype)
    g = _grid(rng, shape[0], (200, 300)).astype(dtype)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align_corners}
    model = node_model("GridSample", [("X", np.float32), ("grid", np.float32)], attrs, 22)
    expected = onnxruntime(model, {"X": x.astype(np.float32), "grid": g.astype(np.float32)})[0]
    with execution.backend("numpy"):
        got = onnx_cupy.grid_sample(x, g, opset=22, **attrs)
    if mode == "nearest":
        np.testing.assert_array_equal(got, expected.astype(dtype))
    else:
        assert_mostly_close(got, expected.astype(dtype))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_grid_sample_kernels_agree_with_onnxruntime(rng, mode):
    x = photograph(rng, SHAPES["224"], np.float32)
    g = _grid(rng, 1, (150, 170))
    model = node_model("GridSample", [("X", np.float32), ("grid", np.float32)], {"mode": mode}, 22)
    expected = onnxruntime(model, {"X": x, "grid": g})[0]
    with execution.backend("emulated"):
        got = onnx_cupy.grid_sample(x, g, mode=mode, opset=22)
    assert_mostly_close(got, expected)


@pytest.mark.parametrize("size", [(2, 3, 224, 224), (2, 3, 345, 456), (1, 2, 17, 224, 224)],
                         ids=["224", "345x456", "3d"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_agrees_with_onnxruntime(rng, size, align_corners):
    rank = len(size) - 2
    theta = rng.uniform(-1.2, 1.2, (size[0], rank, rank + 1)).astype(np.float32)
    model = node_model("AffineGrid", [("theta", np.float32), ("size", np.int64)],
                       {"align_corners": align_corners}, 20)
    expected = onnxruntime(model, {"theta": theta, "size": np.array(size, np.int64)})[0]
    with execution.backend("numpy"):
        got = onnx_cupy.affine_grid(theta, np.array(size, np.int64), opset=20,
                                    align_corners=align_corners)
    assert_mostly_close(got, expected)
