"""onnx_cupy.nn.functional.grid_sample and affine_grid against PyTorch's recorded results (the 45
grid_sample and 10 affine_grid calls of ../shared/torch/more/, on the numpy and emulated paths:
float64 within 1e-9 relative, float32 within 1e-5 relative plus 1e-6 of the largest magnitude),
and PyTorch's argument handling: errors, defaults, the nearest rounding order, unit-size grids."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from helpers import torch_cases
from helpers.util import BF16

from onnx_cupy import grid_sample as onnx_grid_sample
from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
CALLS = ("F.grid_sample(", "F.affine_grid(")
RECORDED = torch_cases.cases(lambda c: c["call"].startswith(CALLS), more=True)


def _call(case: dict):
    """(function, keyword arguments) of a recorded call."""
    call = ast.parse(case["call"], mode="eval").body
    return getattr(F, call.func.attr), torch_cases.keywords(case)


@pytest.mark.parametrize("case", RECORDED)
def test_recorded_pytorch_result(cpu_backend, case):
    fn, kw = _call(case)
    inputs, (y,) = torch_cases.inputs_and_outputs(case)
    before = [a.copy() for a in inputs]
    with execution.backend(cpu_backend):
        got = fn(*inputs, **kw)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)
    torch_cases.assert_matches(got, y)


def test_recorded_cases_cover_both_functions():
    calls = [c.values[0]["call"] for c in RECORDED if c.values[0] is not None]
    if not calls:
        pytest.skip(f"PyTorch's recorded results are absent: {torch_cases.FOLDER / 'more'}")
    assert sum(c.startswith("F.grid_sample(") for c in calls) == 45
    assert sum(c.startswith("F.affine_grid(") for c in calls) == 10


def test_grid_sample_defaults_and_onnx(cpu_backend, rng):
    """bilinear, zeros, align_corners False by default: ONNX GridSample's defaults (with
    PyTorch's 2-D float32 coordinates, fma(g + 1, n / 2, -0.5): within float32's default
    tolerance of onnxruntime's ((g + 1) * n - 1) / 2; align_corners=1 computes both alike)."""
    x = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    g = rng.uniform(-1.3, 1.3, (2, 3, 6, 2)).astype(np.float32)
    with execution.backend(cpu_backend):
        got = F.grid_sample(x, g)
        np.testing.assert_allclose(got, onnx_grid_sample(x, g), rtol=1.3e-6, atol=1e-5)
        np.testing.assert_array_equal(F.grid_sample(x.astype(np.float64), g.astype(np.float64)),
                                      onnx_grid_sample(x.astype(np.float64),
                                                       g.astype(np.float64)))
        np.testing.assert_array_equal(F.grid_sample(x, g, "bicubic", "border", True),
                                      onnx_grid_sample(x, g, mode="cubic", padding_mode="border",
                                                       align_corners=1))


def test_nearest_reflects_before_rounding(cpu_backend):
    """x = 4.5 over 4 pixels (g = 1.5), reflection, align_corners False: PyTorch reflects to 2.5
    and rounds to 2; an exported model (ONNX's rule) rounds to 4 and reflects to 3."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    g = np.array([[[[1.5, 0.0]]]], np.float32)
    with execution.backend(cpu_backend):
        assert F.grid_sample(x, g, "nearest", "reflection").ravel().tolist() == [2.0]
        assert onnx_grid_sample(x, g, mode="nearest", padding_mode="reflection"
                                ).ravel().tolist() == [3.0]


def test_unit_size_affine_grid_is_at_zero(cpu_backend):
    """PyTorch gives an axis of one position the coordinate 0, also with align_corners=True."""
    theta = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], np.float32)
    with execution.backend(cpu_backend):
        got = F.affine_grid(theta, [1, 1, 1, 3], align_corners=True)
    np.testing.assert_array_equal(got[0, 0], [[-1, 0], [0, 0], [1, 0]])


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)), {"mode": "cubic"},
     ValueError, (r"grid_sample\(\): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                 r"got: 'cubic'")),
    ((np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)),
     {"padding_mode": "wrap"}, ValueError, ("expected padding_mode to be 'zeros', 'border' or "
                                           "'reflection', but got: 'wrap'")),
    ((np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float64)), {}, TypeError,
     "expected input and grid to have same dtype, but input has float32 and grid has float64"),
    ((np.ones((1, 1, 2, 2), np.int32), np.zeros((1, 1, 1, 2), np.int32)), {}, TypeError,
     "expected input of a floating point dtype"),
    ((np.ones((1, 1, 2), np.float32), np.zeros((1, 1, 1), np.float32)), {}, ValueError,
     "expected 4D or 5D input and grid with same number of dimensions"),
    ((np.ones((2, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)), {}, ValueError,
     "expected grid and input to have same batch size"),
    ((np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 3), np.float32)), {}, ValueError,
     "expected grid to have size 2 in last dimension"),
    ((np.ones((1, 1, 0, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)), {}, ValueError,
     "input has sizes \\[1, 1, 0, 2\\] with dimension 2 being empty"),
    ((np.ones((1, 1, 2, 2, 2), np.float32), np.zeros((1, 1, 1, 1, 3), np.float32)),
     {"mode": "bicubic"}, ValueError, "bicubic interpolation only supports 4D input"),
    ((np.ones((1, 1, 2, 2), np.float32), np.zeros((1, 1, 1, 2), np.float32)),
     {"align_corners": 1}, TypeError, "align_corners must be a bool"),
])
def test_grid_sample_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        F.grid_sample(*args, **kwargs)


@pytest.mark.parametrize("theta,size,kwargs,exc,match", [
    (np.ones((1, 2, 3), np.int64), [1, 1, 2, 2], {}, ValueError,
     "expected theta to have floating point type, but got int64"),
    (np.ones((1, 2, 3), np.float32), [1, 1, 2], {}, NotImplementedError,
     "only supports 4D and 5D sizes"),
    (np.ones((1, 2, 3), np.float32), [1, 1, 2, 2, 2], {}, ValueError,
     r"expected a batch of 3D affine matrices of shape Nx3x4 for size \[1, 1, 2, 2, 2\]"),
    (np.ones((1, 2, 3), np.float32), [1, 1, 0, 2], {}, ValueError,
     r"expected non-zero, positive output size. Got \[1, 1, 0, 2\]"),
    (np.ones((1, 2, 3), np.float32), [2, 1, 3, 2], {}, ValueError,
     "names 2 batch items, theta has 1"),
    (np.ones((1, 2, 3), np.float32), [1, 1, 2.0, 2], {}, TypeError,
     "size must be a sequence of ints"),
])
def test_affine_grid_errors(theta, size, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        F.affine_grid(theta, size, **kwargs)


def test_half_precision(cpu_backend, rng):
    """float16 and bfloat16 inputs: computed in float32, as the float32 call rounded."""
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    g = rng.uniform(-1.2, 1.2, (1, 3, 3, 2)).astype(np.float32)
    for dtype in (np.float16, BF16):
        xs, gs = x.astype(dtype), g.astype(dtype)
        with execution.backend(cpu_backend):
            got = F.grid_sample(xs, gs, align_corners=True)
        want = F.grid_sample(xs.astype(np.float32), gs.astype(np.float32), align_corners=True)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_grid_sample_kernels_equal_numpy_bit_for_bit(rng, mode, padding, dtype):
    """PyTorch's 2-D float32 coordinates (fused multiply-add; its reflection): the emulated
    kernels and the NumPy path give the same bits, positions far outside, NaN and inf too."""
    x = rng.uniform(0, 255, (2, 3, 9, 13)).astype(dtype)
    g = rng.uniform(-1.6, 1.6, (2, 7, 11, 2))
    g.flat[::17] = rng.uniform(-40, 40, g.flat[::17].shape)
    g.flat[5], g.flat[9], g.flat[23] = np.nan, np.inf, -np.inf
    g = g.astype(dtype)
    out = {}
    for backend in ("numpy", "emulated"):
        with execution.backend(backend):
            out[backend] = F.grid_sample(x, g, mode=mode, padding_mode=padding)
    np.testing.assert_array_equal(out["numpy"], out["emulated"])
    assert np.isfinite(out["numpy"]).mean() > 0.9
