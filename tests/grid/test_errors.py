"""Bad GridSample and AffineGrid inputs: a ValueError or TypeError that names the input or
attribute, the value and, for version questions, the opset; raised before anything is allocated
or launched."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.util import forbid_work

from onnx_cupy import affine_grid, grid_sample
from onnx_cupy.core import execution

X4 = np.ones((2, 3, 4, 5), np.float32)
G4 = np.zeros((2, 6, 7, 2), np.float32)


@pytest.fixture
def no_work(monkeypatch):
    forbid_work(monkeypatch)


def case(name: str, exc: type, pattern: str, x=X4, grid=G4, **kwargs):
    return pytest.param(x, grid, kwargs, exc, pattern, id=name)


SAMPLE_CASES = [
    case("mode_unknown", ValueError, r"'mode' = 'area' is defined by no version of GridSample "
         r"\(expected one of linear, nearest, cubic\) at opset 22", mode="area"),
    case("mode_type", TypeError, "attribute 'mode' must be a string, got 1", mode=1),
    case("padding_unknown", ValueError, r"'padding_mode' = 'wrap' is defined by no version",
         padding_mode="wrap"),
    case("align_corners_2", ValueError, "attribute 'align_corners' must be 0 or 1, got 2",
         align_corners=2),
    case("align_corners_float", ValueError, "'align_corners' must be 0 or 1, got 1.0",
         align_corners=1.0),
    case("opset_15", ValueError, "opset 15 is outside the supported range 16..28", opset=15),
    case("opset_string", TypeError, "opset must be an int", opset="22"),
    case("x_rank_2", ValueError, r"X must have rank 3 to 7 \(N, C and 1 to 5 spatial axes\), got "
         r"shape \(2, 3\)", x=np.ones((2, 3), np.float32), grid=np.zeros((2, 1), np.float32)),
    case("x_rank_8", ValueError, "X must have rank 3 to 7", x=np.ones((1,) * 8, np.float32),
         grid=np.zeros((1,) * 7 + (6,), np.float32)),
    case("grid_rank", ValueError, r"grid must have shape \(N, O1, O2, 2\) for X of shape "
         r"\(2, 3, 4, 5\), got \(2, 6, 2\)", grid=np.zeros((2, 6, 2), np.float32)),
    case("grid_last_axis", ValueError, r"grid must have shape \(N, O1, O2, 2\)",
         grid=np.zeros((2, 6, 7, 3), np.float32)),
    case("grid_batch", ValueError, r"grid has 3 batch items, X has 2",
         grid=np.zeros((3, 6, 7, 2), np.float32)),
    case("empty_spatial", ValueError, "X has an empty spatial axis", x=np.ones((2, 3, 0, 5),
                                                                               np.float32)),
    case("grid_int", TypeError, r"grid dtype int32 is not supported; GridSample-22, in force at "
         r"opset 22, takes float16, float32, float64, bfloat16$",
         grid=np.zeros((2, 6, 7, 2), np.int32)),
    case("x_bool_linear", TypeError, "X dtype bool is not supported in mode 'linear'",
         x=np.ones((2, 3, 4, 5), bool)),
    case("x_complex_cubic", TypeError, "X dtype complex64 is not supported in mode 'cubic'",
         x=np.ones((2, 3, 4, 5), np.complex64), mode="cubic"),
    case("x_float8", TypeError, "X dtype float8_e4m3fn is not supported",
         x=np.ones((2, 3, 4, 5), ml_dtypes.float8_e4m3fn), mode="nearest"),
    case("grid_list", TypeError, "input 'grid' must be a numpy.ndarray like X, got builtins.list",
         grid=[[0.0, 0.0]]),
]


@pytest.mark.parametrize("x,grid,kwargs,exc,match", SAMPLE_CASES)
def test_bad_grid_sample(cpu_backend, no_work, x, grid, kwargs, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        grid_sample(x, grid, **kwargs)


def test_attribute_checked_at_every_version(no_work):
    for opset in (16, 20, 22):
        with pytest.raises(TypeError, match="'padding_mode' must be a string"):
            grid_sample(X4, G4, padding_mode=None, opset=opset)


THETA = np.ones((2, 2, 3), np.float32)


def theta_case(name: str, exc: type, pattern: str, theta=THETA, size=(2, 1, 3, 4), **kwargs):
    return pytest.param(theta, size, kwargs, exc, pattern, id=name)


AFFINE_CASES = [
    theta_case("theta_shape", ValueError, r"theta must have shape \(N, 2, 3\) or \(N, 3, 4\), got "
               r"\(2, 3, 3\)", theta=np.ones((2, 3, 3), np.float32)),
    theta_case("size_length", ValueError, r"'size' must hold 4 values \(N, C, H, W\) for theta of "
               r"shape \(2, 2, 3\), got \[2, 1, 3, 4, 5\]", size=(2, 1, 3, 4, 5)),
    theta_case("size_batch", ValueError, r"'size' = \[3, 1, 3, 4\] names 3 batch items, theta has "
               r"2", size=(3, 1, 3, 4)),
    theta_case("size_negative", ValueError, r"'size' values must be >= 0, got \[2, 1, -3, 4\]",
               size=(2, 1, -3, 4)),
    theta_case("size_float", TypeError, r"'size' must hold integers \(int64\), got dtype float64",
               size=(2.0, 1.0, 3.0, 4.0)),
    theta_case("size_2d", ValueError, r"'size' must be 1-D, got shape \(2, 2\)",
               size=np.ones((2, 2), np.int64)),
    theta_case("theta_int", TypeError, r"theta dtype int32 is not supported; AffineGrid-20, in "
               r"force at opset 20, takes float16, float32, float64, bfloat16$",
               theta=np.ones((2, 2, 3), np.int32)),
    theta_case("opset_19", ValueError, "opset 19 is outside the supported range 20..28",
               opset=19),
    theta_case("align_corners", ValueError, "'align_corners' must be 0 or 1, got -1",
               align_corners=-1),
]


@pytest.mark.parametrize("theta,size,kwargs,exc,match", AFFINE_CASES)
def test_bad_affine_grid(cpu_backend, no_work, theta, size, kwargs, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        affine_grid(theta, size, **kwargs)


@pytest.mark.parametrize("out,exc,match", [
    (np.empty((2, 3, 6, 7), np.float64), TypeError, "out has dtype float64, expected float32"),
    (np.empty((2, 3, 7, 6), np.float32), ValueError, "out has shape"),
    (np.empty((2, 3, 7, 6), np.float32).transpose(0, 1, 3, 2), ValueError,
     "out must be C-contiguous"),
])
def test_bad_out(cpu_backend, launches, out, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        grid_sample(X4, G4, out=out)
    assert launches == []


def test_grid_of_another_array_type():
    class Other:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, **kwargs):
            return np.zeros((2, 6, 7, 2), np.float32).__dlpack__(**kwargs)

    assert grid_sample(X4, Other()).shape == (2, 3, 6, 7)   # a CPU DLPack grid: NumPy


def test_grid_on_another_path(monkeypatch, request):
    """A CuPy X with a NumPy grid (here the stand-in cupy): a TypeError before any work."""
    from helpers import fake_cupy

    fake = fake_cupy.install(request)
    forbid_work(monkeypatch)
    with pytest.raises(TypeError, match=r"input 'grid' must be a cupy\.ndarray like X, got "
                                        r"numpy.ndarray"):
        grid_sample(fake.asarray(X4), G4)


def test_affine_grid_size_past_memory(cpu_backend, no_work):
    with execution.backend(cpu_backend), pytest.raises(
            ValueError, match=r"AffineGrid: the output would have the shape \(1, 1000000, "
                              r"1000000, 2\) \(from input 'size' = \[1, 1, 1000000, 1000000\]\): "
                              r"2000000000000 elements, 8000000000000 bytes"):
        affine_grid(np.zeros((1, 2, 3), np.float32), [1, 1, 10**6, 10**6])


def test_grid_sample_output_past_memory(cpu_backend, no_work):
    grid = np.broadcast_to(np.float32(0), (1, 10**6, 10**6, 2))   # a few bytes: a view
    with execution.backend(cpu_backend), pytest.raises(
            ValueError, match=r"GridSample: the output would have the shape \(1, 3, 1000000, "
                              r"1000000\) \(from X of shape \(1, 3, 4, 5\) and grid of shape "
                              r"\(1, 1000000, 1000000, 2\)\): 3000000000000 elements"):
        grid_sample(X4[:1], grid)


@pytest.mark.parametrize("bad", ["X", "grid"])
def test_masked_arrays_refused_by_name(cpu_backend, bad):
    """Masked X with a plain grid is refused as X (not "grid must be a numpy.MaskedArray like
    X"), a masked grid as grid, on every path."""
    x = np.ma.masked_array(X4) if bad == "X" else X4
    grid = np.ma.masked_array(G4) if bad == "grid" else G4
    with execution.backend(cpu_backend), pytest.raises(
            TypeError, match=rf"GridSample: {bad} is a numpy.ma.MaskedArray; masked arrays are "
                             r"not taken"):
        grid_sample(x, grid)
