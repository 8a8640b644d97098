"""GridSample on every backend: ONNX's node tests, the loop oracle (helpers/grid_oracle.py) on
every mode, padding mode, align_corners and rank, grids outside [-1, 1] and NaN, infinite and
huge coordinates, mode names per version, the nearest rounding order of the PyTorch layer,
integer rounding and saturation, every fixed-size dtype in nearest, strings, mixed dtypes of X
and grid, the channel split, 64-bit offsets, input handling (non-contiguous, empty, never
modified, out=) and run_node."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from helpers import grid_oracle
from helpers.util import BF16, TOL, to_backend, to_numpy
from onnx import helper

import onnx_cupy
from onnx_cupy import grid_sample, run_node
from onnx_cupy.core import dtypes, execution, loader
from onnx_cupy.grid import api as grid_api
from onnx_cupy.grid import kernel as grid_kernel
from onnx_cupy.grid import plan as grid_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
OP = "GridSample"
MODES = ("nearest", "linear", "cubic")
PADDING = ("zeros", "border", "reflection")


def run(backend: str, x: np.ndarray, grid: np.ndarray, **kw) -> np.ndarray:
    with execution.backend(backend):
        return to_numpy(grid_sample(to_backend(x, backend), to_backend(grid, backend), **kw))


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Fresh random values (an integer dtype's spread over part of its range, some saturate)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -300), min(info.max, 300), size=shape,
                            endpoint=True).astype(dtype)
    return rng.uniform(-2.0, 3.0, size=shape).astype(dtype)


def positions(rng: np.random.Generator, shape: tuple[int, ...], dtype=np.float32,
              spread: float = 1.6) -> np.ndarray:
    """A grid of positions in [-spread, spread] (outside [-1, 1] too)."""
    return rng.uniform(-spread, spread, size=shape).astype(dtype)


def expected(x, grid, mode="linear", padding="zeros", align_corners=0, pad_first=False):
    """The oracle's result in X's dtype (integers: NaN is 0, then the float sum rounded)."""
    got = grid_oracle.grid_sample(x, grid, mode, padding, bool(align_corners), pad_first)
    if mode != "nearest" and x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(np.nan_to_num(got, nan=0.0), info.min, info.max)
    return got


def check(got: np.ndarray, want: np.ndarray, dtype: np.dtype, weights: str = "float32") -> None:
    """Close to the oracle within the tolerance of the dtype and of the `weights` type (the
    coordinates' type: float32 unless the grid is float64); integers within a half (rounded)."""
    dtype = np.dtype(dtype)
    assert got.dtype == dtype
    if dtype.kind in "iu":
        assert np.all(np.abs(got.astype(np.float64) - want) <= 0.5 + 1e-9), (got, want)
        return
    if want.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, want)
        return
    rtol, atol = (max(a, b) for a, b in zip(TOL[dtype.name], TOL[weights]))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol * 4,
                               atol=atol * 4, equal_nan=True)


def test_exported_and_registered():
    assert onnx_cupy.grid_sample is grid_sample and "grid_sample" in onnx_cupy.__all__
    assert onnx_cupy.affine_grid is grid_api.affine_grid and "affine_grid" in onnx_cupy.__all__
    exprs = {k.expression for k in loader.instantiations("grid")}
    assert "grid_sample_fast<float, float, gs::LINEAR, gs::ZEROS, int>" in exprs
    assert "grid_sample_nearest<gs::element<16>, double, long long>" in exprs
    assert "grid_sample_weighted<unsigned long long, double, float, int>" in exprs
    assert grid_kernel.NEAREST[16, "float", 32].dtypes == ("complex128",)
    assert set(grid_kernel.NEAREST[1, "float", 32].dtypes) == {"int8", "uint8", "bool"}


def test_paths(launches):
    """NumPy arrays run the fallback (no kernel launch) unless a backend is forced."""
    x, g = np.ones((1, 2, 3, 4), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    grid_sample(x, g)
    assert launches == []
    with execution.backend("emulated"):
        grid_sample(x, g)
    assert len(launches) == 1


# ---------------------------------------------------------------- against the loop oracle

@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("padding", PADDING)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_oracle(backend, rng, rank, mode, padding, align_corners):
    """Odd sizes, positions outside [-1, 1], several channels and batch items."""
    x = sample(rng, (2, 3, *rng.integers(1, 6, size=rank)), np.float32)
    g = positions(rng, (2, *rng.integers(1, 5, size=rank), rank), spread=2.5)
    got = run(backend, x, g, mode=mode, padding_mode=padding, align_corners=align_corners)
    check(got, expected(x, g, mode, padding, align_corners), np.float32)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64, np.int8, np.uint8,
                                   np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("mode", MODES)
def test_dtypes(backend, rng, dtype, mode):
    """Every number dtype (bfloat16 at 22), a grid of X's dtype where it is a float."""
    x = sample(rng, (2, 2, 5, 4), dtype)
    gdtype = dtype if np.dtype(dtype).name in dtypes.FLOAT_TYPES else np.float32
    g = positions(rng, (2, 3, 4, 2), gdtype)
    got = run(backend, x, g, mode=mode, padding_mode="border")
    check(got, expected(x, g, mode, "border"), dtype, np.dtype(gdtype).name)


@pytest.mark.parametrize("grid_dtype", [np.float16, BF16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32],
                         ids=lambda d: np.dtype(d).name)
def test_mixed_dtypes(backend, rng, dtype, grid_dtype):
    """X and grid of different dtypes: coordinates in the grid's type (float32 for 16-bit
    grids), sums in X's."""
    x = sample(rng, (1, 2, 4, 6), dtype)
    g = positions(rng, (1, 3, 5, 2), grid_dtype)
    for mode in ("linear", "nearest"):
        got = run(backend, x, g, mode=mode, padding_mode="reflection", align_corners=1)
        check(got, expected(x, g, mode, "reflection", 1), dtype,
              "float64" if np.dtype(grid_dtype) == np.float64 else "float32")


@pytest.mark.parametrize("rank", [4, 5])
def test_high_ranks(backend, rng, rank):
    x = sample(rng, (1, 2, *(2,) * rank), np.float32)
    g = positions(rng, (1, *(2,) * rank, rank))
    for mode in MODES:
        check(run(backend, x, g, mode=mode, padding_mode="zeros"),
              expected(x, g, mode, "zeros"), np.float32)


@pytest.mark.parametrize("padding", PADDING)
@pytest.mark.parametrize("mode", MODES)
def test_nan_infinite_and_huge_coordinates(backend, mode, padding):
    """NaN samples the first pixel where padding clips (border, reflection) and lies outside
    under zeros (nearest 0, linear and cubic NaN); infinities clip to the ends or lie outside;
    huge values reflect exactly."""
    x = (np.arange(24, dtype=np.float32) + 1).reshape(1, 2, 3, 4)
    values = [np.nan, np.inf, -np.inf, 1e20, -1e20, 1e7, 4.5, -2.75]
    g = np.array([[[[v, 0.25], [0.25, v]] for v in values]], dtype=np.float32)
    got = run(backend, x, g, mode=mode, padding_mode=padding)
    check(got, expected(x, g, mode, padding), np.float32)
    nan, inf, minus_inf = got[0, :, 0, 0], got[0, :, 1, 0], got[0, :, 2, 0]  # x NaN, inf, -inf
    if padding == "zeros":
        assert np.all(nan == 0) if mode == "nearest" else np.all(np.isnan(nan))
    elif padding == "border" and mode != "cubic":
        np.testing.assert_array_equal(nan, minus_inf)   # clipped to the first pixel
    elif padding == "reflection" and mode != "cubic":
        np.testing.assert_array_equal(nan, inf)   # inf folds to NaN, clipped to the first pixel


def test_nearest_rounds_half_to_even(backend):
    """align_corners=1 over 5 pixels: g = -0.75 and -0.25 fall on 0.5 and 1.5: pixels 0 and 2."""
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 1, 5)
    g = np.array([[[[-0.75, 0.0], [-0.25, 0.0], [0.25, 0.0], [0.75, 0.0]]]], np.float32)
    np.testing.assert_array_equal(run(backend, x, g, mode="nearest", align_corners=1).ravel(),
                                  [0, 2, 2, 4])


def test_nearest_rounds_before_reflecting(backend):
    """ONNX's runtimes round, then reflect: at x = 4.5 over 4 pixels (g = 1.5) pixel 3; the
    PyTorch layer reflects first (2.5) and rounds to 2. With align_corners=1 the orders agree."""
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4)
    g = np.array([[[[1.5, 0.0]]]], np.float32)
    onnx = run(backend, x, g, mode="nearest", padding_mode="reflection")
    with execution.backend(backend):
        torch = to_numpy(grid_api.run_sample(
            to_backend(x, backend), to_backend(g, backend), 22,
            {"mode": "nearest", "padding_mode": "reflection", "align_corners": 0},
            pad_before_rounding=True))
    assert onnx.ravel().tolist() == [3.0] and torch.ravel().tolist() == [2.0]


def test_cubic_border_pads_taps_not_the_coordinate(backend):
    """onnxruntime and PyTorch clamp each cubic tap, not the coordinate (onnx.reference clamps
    the coordinate first): g = -1.1 over 4 pixels is x = -0.7, taps -2..1 read pixels 0, 0, 0,
    1, with the weights of t = 0.3."""
    x = np.array([[[[1.0, 5.0, 2.0, 7.0]]]], np.float32)
    g = np.array([[[[-1.1, 0.0]]]], np.float32)
    xd = ((g[0, 0, 0, 0] + np.float32(1)) * np.float32(4) - np.float32(1)) * np.float32(0.5)
    w = grid_oracle._keys(float(xd - np.floor(xd)))
    want = (w[0] + w[1] + w[2]) * 1.0 + w[3] * 5.0
    got = run(backend, x, g, mode="cubic", padding_mode="border")
    np.testing.assert_allclose(got.ravel(), [want], rtol=1e-6)
    assert abs(want - 1.0) > 0.01   # the coordinate clamped to 0 would give pixel 0: 1.0


def test_reflection_of_one_pixel_with_align_corners(backend, rng):
    """lo = hi: every position reflects to the pixel (onnx.reference divides by zero)."""
    x = sample(rng, (1, 2, 1, 3), np.float32)
    g = positions(rng, (1, 2, 3, 2), spread=3)
    got = run(backend, x, g, mode="linear", padding_mode="reflection", align_corners=1)
    check(got, expected(x, g, "linear", "reflection", 1), np.float32)


def test_integer_rounding_and_saturation(backend):
    """Integers are rounded half to even and saturated; a NaN sample is 0. Linear at x = 0.5,
    1.5, 2.5 of [0, 1, 2, 255] hits the ties 0.5, 1.5 and 128.5; cubic at 2.25 over
    [0, 0, 255, 255] overshoots to 272.9."""
    x = np.array([[[[0, 1, 2, 255]]]], np.uint8)
    g = np.array([[[[-0.5, 0.0], [0.0, 0.0], [0.5, 0.0]]]], np.float32)
    assert run(backend, x, g).ravel().tolist() == [0, 2, 128]
    x = np.array([[[[0, 0, 255, 255]]]], np.uint8)
    g = np.array([[[[0.625, 0.0], [0.0, 0.0], [np.nan, 0.0]]]], np.float32)
    got = run(backend, x, g, mode="cubic", padding_mode="border")
    assert got.dtype == np.uint8 and got.ravel().tolist() == [255, 128, 0]
    check(got, expected(x, g, "cubic", "border"), np.uint8)


@pytest.mark.parametrize("dtype", [np.bool_, np.complex64, np.complex128, np.int64, np.float16,
                                   ml_dtypes.bfloat16], ids=lambda d: np.dtype(d).name)
def test_nearest_moves_every_dtype(backend, rng, dtype):
    x = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(x.shape).astype(dtype)
    g = positions(rng, (2, 3, 2, 2), spread=1.3)
    got = run(backend, x, g, mode="nearest")
    np.testing.assert_array_equal(got, expected(x, g, "nearest", "zeros"))


@pytest.mark.parametrize("dtype", [object, "U5"])
def test_strings_numpy_only(dtype):
    x = np.array([[[["a", "bb", "ccc"]]]], dtype=dtype)
    g = np.array([[[[-1.5, 0.0], [0.0, 0.0], [0.9, 0.0]]]], np.float32)
    got = grid_sample(x, g, mode="nearest")
    assert got.dtype == x.dtype and got.ravel().tolist() == ["", "bb", "ccc"]
    with execution.backend("emulated"), pytest.raises(TypeError, match="string tensors run on "
                                                                      "the NumPy backend only"):
        grid_sample(x, g, mode="nearest")


# ---------------------------------------------------------------- versions and names

def test_mode_names_per_version(backend, rng):
    """bilinear and bicubic at 16, linear and cubic from 20; the default is the linear mode."""
    x = sample(rng, (1, 2, 3, 4), np.float32)
    g = positions(rng, (1, 2, 2, 2))
    linear = run(backend, x, g, opset=22)
    np.testing.assert_array_equal(run(backend, x, g, mode="bilinear", opset=16), linear)
    np.testing.assert_array_equal(run(backend, x, g, opset=16), linear)
    np.testing.assert_array_equal(run(backend, x, g, mode="bicubic", opset=16),
                                  run(backend, x, g, mode="cubic", opset=20))
    with pytest.raises(ValueError, match=r"'mode' = 'linear' is not defined at opset 16, where "
                                         r"GridSample-16 is in force \(expected one of bilinear, "
                                         r"nearest, bicubic\); 'linear' is the name from "
                                         r"GridSample-20 on, GridSample-16 calls it 'bilinear'"):
        run(backend, x, g, mode="linear", opset=16)
    with pytest.raises(ValueError, match=r"'bicubic' is GridSample-16's name, GridSample-22 calls "
                                         r"it 'cubic'"):
        run(backend, x, g, mode="bicubic", opset=22)


def test_version_16_is_4d(backend, rng):
    x = sample(rng, (1, 1, 2, 3, 4), np.float32)
    g = positions(rng, (1, 1, 2, 2, 3))
    assert run(backend, x, g, opset=20).shape == (1, 1, 1, 2, 2)
    with pytest.raises(ValueError, match=r"X must be 4-D \(N, C, H, W\) at opset 16, where "
                                         r"GridSample-16 is in force, got shape \(1, 1, 2, 3, 4\); "
                                         r"other ranks came with GridSample-20"):
        run(backend, x, g, opset=16)


def test_bfloat16_from_22(backend):
    x = np.ones((1, 1, 2, 2), BF16)
    g = np.zeros((1, 1, 1, 2), np.float32)
    assert run(backend, x, g, opset=22).dtype == BF16
    with pytest.raises(TypeError, match="X dtype bfloat16 requires opset >= 22"):
        run(backend, x, g, opset=20)
    with pytest.raises(TypeError, match="grid dtype bfloat16 requires opset >= 22"):
        run(backend, x.astype(np.float32), g.astype(BF16), opset=20)


def test_run_node(backend, rng):
    x = sample(rng, (1, 2, 3, 4), np.float32)
    g = positions(rng, (1, 2, 2, 2))
    node = helper.make_node("GridSample", ["X", "grid"], ["Y"], mode="bicubic",
                            padding_mode="border", align_corners=1)
    with execution.backend(backend):
        (y,) = run_node(node, [to_backend(x, backend), to_backend(g, backend)], opset=16)
        with pytest.raises(ValueError, match=r"GridSample takes 2 inputs \(X, grid\), got 1"):
            run_node(node, [to_backend(x, backend)], opset=16)
    check(to_numpy(y), expected(x, g, "cubic", "border", 1), np.float32)


# ---------------------------------------------------------------- shapes and input handling

def test_channels_split_where_positions_are_few(cpu_backend, rng, launches):
    """Few positions and many channels: the channels split into chunks over grid y."""
    x = sample(rng, (2, 700, 3, 3), np.float32)
    g = positions(rng, (2, 1, 3, 2))
    got = run(cpu_backend, x, g)
    check(got, expected(x, g), np.float32)
    chunk, count = grid_kernel.chunks(700, 3)
    assert count > 1 and chunk * count >= 700 > chunk * (count - 1)
    if cpu_backend == "emulated":
        ((_, (grid, _)),) = launches
        assert grid[1] * grid[2] >= 2 * count


def test_large_offsets_use_64bit_indices(cpu_backend, launches, rng):
    """A [1, 1, 1, 2^31 + 8] input (virtual memory: only the pixels read are written)."""
    n = 2**31 + 8
    x = np.empty((1, 1, 1, n), dtype=np.int8)
    g = np.array([[[[1.0, 0.0], [0.99999, 0.0], [-1.0, 0.0]]]], np.float64)
    xd = [((gv + 1) * n - 1) / 2 for gv in (1.0, 0.99999, -1.0)]
    for v in xd:
        for i in (int(np.floor(v)) - 1, int(np.floor(v)), int(np.floor(v)) + 1):
            if 0 <= i < n:
                x[0, 0, 0, i] = i % 97 - 40
    got = run(cpu_backend, x, g, mode="nearest", padding_mode="border")
    want = [x[0, 0, 0, min(int(np.rint(v)), n - 1)] for v in xd]
    assert got.ravel().tolist() == want
    if cpu_backend == "emulated":
        assert launches and all(k.index_bits == 64 for k, _ in launches)


@pytest.mark.parametrize("view", ["transposed", "stepped", "reversed"])
def test_non_contiguous_inputs(backend, rng, view):
    base = sample(rng, (4, 3, 8, 10), np.float32)
    gbase = positions(rng, (4, 6, 5, 2))
    x = {"transposed": base.transpose(1, 0, 3, 2), "stepped": base[:3, :, ::2, ::3],
         "reversed": base[::-1, :, ::-1]}[view]
    g = {"transposed": gbase.transpose(1, 0, 2, 3)[:3], "stepped": gbase[:3, ::2, ::2],
         "reversed": gbase[::-1, ::-1]}[view]
    g = g[: x.shape[0]]
    for mode in MODES:
        np.testing.assert_array_equal(
            run(backend, x, g, mode=mode),
            run("numpy", np.ascontiguousarray(x), np.ascontiguousarray(g), mode=mode))


BROADCAST = {"batch": (True, False, False, False), "channels": (False, True, False, False),
             "rows": (False, False, True, False), "columns": (False, False, False, True),
             "all_but_columns": (True, True, True, False), "all": (True,) * 4}


@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("padding", PADDING)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("axes", list(BROADCAST))
@pytest.mark.parametrize("size", ["small", "chunked"])
def test_broadcast_inputs(backend, rng, size, axes, mode, padding, align_corners):
    """A broadcast X (stride-0 axes, np.broadcast_to) gives the values its contiguous copy
    gives, NaN where it gives NaN: the NumPy path reads its distinct values through a layout of
    its own, the kernels read it in place."""
    shape, gshape = ((3, 2, 5, 6), (3, 4, 3, 2)) if size == "small" else \
        ((2, 3, 40, 50), (2, 150, 170, 2))
    base = sample(rng, tuple(1 if b else n for b, n in zip(BROADCAST[axes], shape)),
                  np.float32)
    x = np.broadcast_to(base, shape)
    g = positions(rng, gshape, spread=1.3)
    g[0, 0, 0] = np.nan
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align_corners}
    xp = execution.cupy_module() if backend == "cupy" else np
    on_path = xp.broadcast_to(to_backend(base, backend), shape)   # a CuPy user's view
    assert 0 in on_path.strides
    with execution.backend(backend):
        got = to_numpy(grid_sample(on_path, to_backend(g, backend), **attrs))
    np.testing.assert_array_equal(got, run("numpy", np.ascontiguousarray(x), g, **attrs))


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_scalar_image_read_in_place(mode):
    """A (1, 1, 46341, 46341) broadcast of one value (2**31 elements, a few bytes) is sampled
    in place on the NumPy path: what the call allocates is the size of its output and scratch,
    not the 8 GiB of X's layout; inside the image every sample is the value, outside 0."""
    import tracemalloc

    x = np.broadcast_to(np.float32(2), (1, 1, 46341, 46341))
    g = np.array([[[[0.5, -0.25], [0.0, 0.0]], [[-3.0, 0.5], [0.999, 0.999]]]], np.float32)
    tracemalloc.start()
    try:
        y = run("numpy", x, g, mode=mode, padding_mode="zeros", align_corners=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak
    np.testing.assert_allclose(y, [[[[2, 2], [0, 2]]]], rtol=1e-6)


def test_empty(backend):
    assert run(backend, np.ones((2, 0, 3, 4), np.float32), np.zeros((2, 5, 6, 2), np.float32)
               ).shape == (2, 0, 5, 6)
    assert run(backend, np.ones((2, 3, 3, 4), np.float32), np.zeros((2, 0, 6, 2), np.float32)
               ).shape == (2, 3, 0, 6)
    assert run(backend, np.ones((0, 3, 0, 4), np.float32), np.zeros((0, 1, 6, 2), np.float32)
               ).shape == (0, 3, 1, 6)


def test_inputs_never_modified(backend, rng):
    x = sample(rng, (2, 3, 5, 4), np.float32)
    g = positions(rng, (2, 3, 3, 2), spread=3)
    saved = x.copy(), g.copy()
    for mode, padding in itertools.product(MODES, PADDING):
        run(backend, x, g, mode=mode, padding_mode=padding)
    np.testing.assert_array_equal(x, saved[0])
    np.testing.assert_array_equal(g, saved[1])


def test_out(backend, rng):
    x = sample(rng, (1, 2, 3, 4), np.float32)
    g = positions(rng, (1, 5, 6, 2))
    xp = execution.cupy_module() if backend == "cupy" else np
    out = xp.empty((1, 2, 5, 6), dtype=np.float32)
    with execution.backend(backend):
        y = grid_sample(to_backend(x, backend), to_backend(g, backend), out=out)
    assert y is out
    np.testing.assert_array_equal(to_numpy(out), run("numpy", x, g))


def test_calls_prepared_once(cpu_backend):
    """One plan per configuration; a repeated call runs the call the first one prepared (no
    plan, no launch arguments made again), another grid layout prepares its own."""
    x, g = np.ones((1, 2, 3, 4), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    run(cpu_backend, x, g, mode="cubic")
    plans, launches = grid_plan.plan_sample.cache_info(), grid_kernel.sample_args.cache_info()
    run(cpu_backend, x, g, mode="cubic")
    assert grid_plan.plan_sample.cache_info() == plans
    assert grid_kernel.sample_args.cache_info() == launches
    run(cpu_backend, x, np.zeros((1, 2, 4, 2), np.float32)[:, :, ::2], mode="cubic")
    assert grid_plan.plan_sample.cache_info().hits == plans.hits + 1   # its own call, one plan
