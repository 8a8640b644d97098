"""AffineGrid on every backend: ONNX's node tests, the loop oracle, onnxruntime and onnx.reference
on random thetas (2-D and 3-D, align_corners, every dtype), axes of length 1, empty outputs,
strided thetas, the size input read on the host (NumPy, CuPy, sequences), out=, and
AffineGrid's grid fed to GridSample."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import grid_oracle
from helpers.util import (
    BF16,
    TOL,
    node_model,
    onnxruntime,
    reference,
    to_backend,
    to_numpy,
)
from onnx import helper

import onnx_cupy
from onnx_cupy import affine_grid, grid_sample, run_node
from onnx_cupy.core import execution

OP = "AffineGrid"


def run(backend: str, theta: np.ndarray, size, **kw) -> np.ndarray:
    with execution.backend(backend):
        return to_numpy(affine_grid(to_backend(theta, backend), size, **kw))


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 5, 7], [3, 1, 1, 4], [2, 2, 3, 4, 5], [1, 1, 1, 6, 1]],
                         ids=lambda s: "x".join(map(str, s)))
def test_oracle(backend, rng, size, align_corners, dtype):
    rank = len(size) - 2
    theta = rng.uniform(-2, 2, (size[0], rank, rank + 1)).astype(dtype)
    got = run(backend, theta, size, align_corners=align_corners)
    want = grid_oracle.affine_grid(theta, size, bool(align_corners))
    assert got.dtype == theta.dtype and got.shape == want.shape
    rtol, atol = TOL[np.dtype(dtype).name]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol * 4, atol=atol * 4)


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [[2, 3, 5, 7], [2, 2, 3, 4, 5]], ids=["2d", "3d"])
def test_runtimes(backend, rng, size, align_corners):
    """onnxruntime and onnx.reference (float32, every axis longer than 1): ours equals both."""
    rank = len(size) - 2
    theta = rng.uniform(-2, 2, (size[0], rank, rank + 1)).astype(np.float32)
    model = node_model(OP, [("theta", np.float32), ("size", np.int64)],
                       {"align_corners": align_corners}, 20)
    feeds = {"theta": theta, "size": np.array(size, np.int64)}
    got = run(backend, theta, size, align_corners=align_corners)
    for result in (onnxruntime(model, feeds)[0], reference(model, feeds)[0]):
        np.testing.assert_allclose(got, result, rtol=1e-5, atol=1e-6)


def test_an_axis_of_one_position_is_at_zero(backend):
    """align_corners=1 over one position: 0, as PyTorch (onnxruntime gives 1, onnx.reference
    -1); align_corners=0 gives 0 as everyone."""
    theta = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], np.float32)
    for ac in (0, 1):
        got = run(backend, theta, [1, 1, 1, 3], align_corners=ac)
        np.testing.assert_array_equal(got[0, 0, :, 1], [0, 0, 0])


def test_float64_keeps_its_dtype(backend, rng):
    """The output has theta's dtype (onnx.reference returns float32 for every theta)."""
    theta = rng.uniform(-1, 1, (2, 2, 3))
    got = run(backend, theta, [2, 1, 3, 3])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, grid_oracle.affine_grid(theta, [2, 1, 3, 3]), rtol=1e-14,
                               atol=1e-15)


def test_size_forms(backend, rng):
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    want = run(backend, theta, [2, 4, 3, 5])
    for size in ((2, 4, 3, 5), np.array([2, 4, 3, 5]), np.array([2, 4, 3, 5], np.int32)):
        np.testing.assert_array_equal(run(backend, theta, size), want)


def test_empty(backend):
    theta = np.ones((2, 2, 3), np.float32)
    assert run(backend, theta, [2, 1, 0, 4]).shape == (2, 0, 4, 2)
    assert run(backend, np.ones((0, 3, 4), np.float32), [0, 1, 2, 3, 4]).shape == (0, 2, 3, 4, 3)


def test_strided_theta(backend, rng):
    base = rng.uniform(-1, 1, (4, 3, 5)).astype(np.float32)
    theta = base[::2, :2, 1:4]
    np.testing.assert_array_equal(run(backend, theta, [2, 1, 3, 4]),
                                  run("numpy", np.ascontiguousarray(theta), [2, 1, 3, 4]))


def test_out_and_inputs_never_modified(backend, rng):
    theta = rng.uniform(-1, 1, (1, 3, 4)).astype(np.float32)
    saved = theta.copy()
    xp = execution.cupy_module() if backend == "cupy" else np
    out = xp.empty((1, 2, 3, 4, 3), np.float32)
    with execution.backend(backend):
        y = affine_grid(to_backend(theta, backend), [1, 1, 2, 3, 4], out=out)
    assert y is out
    np.testing.assert_array_equal(theta, saved)
    np.testing.assert_array_equal(to_numpy(out), run("numpy", theta, [1, 1, 2, 3, 4]))


def test_feeds_grid_sample(backend, rng):
    """The identity theta with align_corners=1 samples every pixel at its centre: X itself."""
    x = rng.uniform(-1, 1, (2, 3, 5, 7)).astype(np.float32)
    theta = np.tile(np.eye(2, 3, dtype=np.float32), (2, 1, 1))
    with execution.backend(backend):
        grid = affine_grid(to_backend(theta, backend), list(x.shape), align_corners=1)
        y = to_numpy(grid_sample(to_backend(x, backend), grid, align_corners=1))
    np.testing.assert_allclose(y, x, rtol=1e-6, atol=1e-6)


def test_run_node(backend, rng):
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    node = helper.make_node(OP, ["theta", "size"], ["grid"], align_corners=1)
    with execution.backend(backend):
        (got,) = run_node(node, [to_backend(theta, backend), np.array([2, 1, 3, 4])], opset=20)
        with pytest.raises(ValueError, match="opset 19 is outside the supported range 20"):
            run_node(node, [to_backend(theta, backend), np.array([2, 1, 3, 4])], opset=19)
    np.testing.assert_array_equal(to_numpy(got), run("numpy", theta, [2, 1, 3, 4],
                                                     align_corners=1))
    assert onnx_cupy.affine_grid is affine_grid
