"""onnx_cupy.nn.functional against PyTorch's recorded results (every case of tests/data/torch/ on
the numpy and emulated paths: float64 within 1e-9 relative, float32 within 1e-5 relative plus
1e-6 of the largest magnitude, for outputs that cancel to near zero: PyTorch computes float32
coordinates, weights and sums in float32, 17 of its float32 results are off by about one unit
there), and PyTorch's argument
handling: errors, defaults, numbers vs sequences, unbatched inputs, quirks against oracles."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from helpers import torch_cases
from helpers.util import BF16, random

import onnx_cupy
from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _call(case: dict):
    """(function, positional arguments after x, keyword arguments) of a recorded call."""
    call = ast.parse(case["call"], mode="eval").body
    if isinstance(call.func.value, ast.Name) and call.func.value.id == "F":
        return (getattr(F, call.func.attr), [ast.literal_eval(a) for a in call.args[1:]],
                torch_cases.keywords(case))
    # torch.zeros_like(x).scatter_(dim, x.argmax(dim=dim, keepdim=True), 1.0)
    assert call.func.attr == "scatter_" and call.args[1].func.attr == "argmax", case["call"]
    return F.one_hot_argmax, [], {"dim": ast.literal_eval(call.args[0])}


@pytest.mark.parametrize("case", torch_cases.cases())
def test_recorded_pytorch_result(cpu_backend, case):
    fn, args, kw = _call(case)
    x, y = torch_cases.arrays(case)
    before = x.copy()
    with execution.backend(cpu_backend):
        got = fn(x, *args, **kw)
    np.testing.assert_array_equal(x, before)
    assert got.shape == y.shape and got.dtype == y.dtype, (got.shape, got.dtype)
    rtol, margin = (1e-5, 1e-6) if y.dtype == np.float32 else (1e-9, 0.0)
    atol = margin * float(np.max(np.abs(y), initial=1.0))
    np.testing.assert_allclose(got, y, rtol=rtol, atol=atol, equal_nan=True)


def test_recorded_cases_cover_every_function():
    names = {c.values[0]["call"].split("(")[0] for c in torch_cases.cases()
             if c.values[0] is not None}
    if not names:
        pytest.skip(f"PyTorch's recorded results are absent: {torch_cases.FOLDER}")
    assert {"F.avg_pool1d", "F.avg_pool2d", "F.avg_pool3d", "F.lp_pool1d", "F.lp_pool2d",
            "F.interpolate", "torch.zeros_like"} <= names


# ---------------------------------------------------------------- oracles of PyTorch's formulas

def _window_sums(x: np.ndarray, k: int, s: int, p: int, ceil: bool):
    """1-D windows of PyTorch's pooling: (sum, elements covered, padded size) per output."""
    n = x.shape[-1]
    out = (n + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    sums, counts, padded = [], [], []
    for o in range(out):
        start = o * s - p
        lo, hi = max(start, 0), min(start + k, n)
        sums.append(x[..., lo:hi].astype(np.float64).sum(axis=-1))
        counts.append(hi - lo)
        padded.append(min(start + k, n + p) - start)
    return np.stack(sums, axis=-1), np.array(counts), np.array(padded)


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("count_include_pad", [False, True])
@pytest.mark.parametrize("n,k,s,p", [(7, 3, 2, 1), (8, 4, 3, 2), (5, 2, 2, 1), (9, 3, 3, 0)])
def test_avg_pool1d_oracle(cpu_backend, rng, n, k, s, p, ceil_mode, count_include_pad):
    x = random(rng, (2, 3, n), np.float64)
    total, count, padded = _window_sums(x, k, s, p, ceil_mode)
    expected = total / (padded if count_include_pad else count)
    with execution.backend(cpu_backend):
        got = F.avg_pool1d(x, k, s, p, ceil_mode, count_include_pad)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_avg_pool2d_divisor_override(cpu_backend, rng, dtype):
    """Each window's sum over the input elements it covers, divided by divisor_override and
    rounded once to the dtype (as PyTorch divides its sum)."""
    x = random(rng, (2, 2, 5, 7), dtype)
    with execution.backend(cpu_backend):
        got = F.avg_pool2d(x, (3, 2), (2, 3), (1, 1), ceil_mode=True, divisor_override=5)
    rows = [_window_sums(x[..., i, :], 2, 3, 1, True)[0] for i in range(5)]
    per_row = np.stack(rows, axis=-2)                   # sums along W, per input row
    total, _, _ = _window_sums(np.moveaxis(per_row, -2, -1), 3, 2, 1, True)
    expected = np.moveaxis(total, -1, -2) / 5
    assert got.dtype == x.dtype and got.shape == expected.shape
    if x.dtype == np.float64:
        np.testing.assert_allclose(got, expected, rtol=1e-14)
    else:   # float64 sums are exact: the once-rounded quotient, bit for bit
        np.testing.assert_array_equal(got, expected.astype(x.dtype))


@pytest.mark.parametrize("norm_type", [1, 2, 3, 1.5])
def test_lp_pool1d_ceil_mode_scales_the_overhang(cpu_backend, rng, norm_type):
    """PyTorch: (mean over the real elements of x^p) * kernel_size, to the power 1/p: a window
    overhanging the input counts as if the kernel were full."""
    x = random(rng, (2, 3, 8), np.float64, 0.1, 2.0)
    total, count, _ = _window_sums(x ** norm_type, 3, 2, 0, True)
    expected = (total / count * 3) ** (1 / norm_type)
    with execution.backend(cpu_backend):
        got = F.lp_pool1d(x, norm_type, 3, 2, ceil_mode=True)
    assert got.shape == (2, 3, 4) and count[-1] == 2
    np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64])
def test_lp_pool2d_dtypes(cpu_backend, rng, dtype):
    x = random(rng, (2, 3, 5, 4), dtype, 0.0, 2.0)
    with execution.backend(cpu_backend):
        got = F.lp_pool2d(x, 3, (2, 2), 1, ceil_mode=True)
    expected = F.lp_pool2d(x.astype(np.float64), 3, (2, 2), 1, ceil_mode=True)
    assert got.dtype == x.dtype and got.shape == expected.shape == (2, 3, 4, 3)
    tol = {"float16": 4e-3, "bfloat16": 3e-2}.get(np.dtype(dtype).name, 1e-6)
    np.testing.assert_allclose(got.astype(np.float64), expected, rtol=tol)


def test_lp_pool_takes_no_absolute_value(cpu_backend):
    """x ** p without abs: norm 2 squares negatives alike, norm 3 of a negative sum is NaN."""
    x = np.array([[[-3.0, -4.0, 1.0, 2.0]]])
    with execution.backend(cpu_backend):
        np.testing.assert_allclose(F.lp_pool1d(x, 2, 2), [[[5.0, np.sqrt(5.0)]]])
        got = F.lp_pool1d(x, 3, 2)
    assert np.isnan(got[0, 0, 0]) and np.isclose(got[0, 0, 1], 9.0 ** (1 / 3))


def test_lp_pool2d_and_3d_scale_by_the_kernel_volume(cpu_backend, rng):
    x = random(rng, (1, 2, 4, 6, 4), np.float32, 0.0, 1.0)
    with execution.backend(cpu_backend):
        three = F.lp_pool3d(x, 2, (2, 3, 2))
        two = F.lp_pool2d(x[:, :, 0], 2, (3, 2))
    expected3 = np.sqrt((x.astype(np.float64) ** 2).reshape(1, 2, 2, 2, 2, 3, 2, 2)
                        .sum(axis=(3, 5, 7)))
    np.testing.assert_allclose(three, expected3, rtol=1e-5)
    expected2 = np.sqrt((x[:, :, 0].astype(np.float64) ** 2).reshape(1, 2, 2, 3, 2, 2)
                        .sum(axis=(3, 5)))
    np.testing.assert_allclose(two, expected2, rtol=1e-5)


def test_linear_output_length_one_from_scale_factor(cpu_backend):
    """With scale_factor, x = (0 + 0.5) / scale_factor - 0.5 also for one output (ONNX's
    pytorch_half_pixel would take 0); with size, (n - 1) / 2."""
    x = np.array([[[1.0, 2.0, 4.0, 8.0]]])
    with execution.backend(cpu_backend):
        by_factor = F.interpolate(x, scale_factor=0.3, mode="linear")
        by_size = F.interpolate(x, size=1, mode="linear")
    t = 0.5 / 0.3 - 0.5                                   # 1.1667: between x[1] and x[2]
    np.testing.assert_allclose(by_factor, [[[2.0 + (t - 1) * 2.0]]], rtol=1e-12)
    np.testing.assert_allclose(by_size, [[[3.0]]], rtol=1e-12)


@pytest.mark.parametrize("mode,antialias,rank", [("linear", False, 3), ("bilinear", False, 4),
                                                  ("bilinear", True, 4), ("bicubic", True, 4),
                                                  ("trilinear", False, 5), ("nearest", False, 4)])
def test_an_axis_whose_length_stays_is_copied(cpu_backend, rng, mode, antialias, rank):
    """scale_factor 1.1 on 5 elements gives 5: PyTorch's linear and antialiased kernels and its
    2-D nearest copy that axis."""
    x = random(rng, (1, 2, 3, 5, 4)[:rank - 1] + (5,), np.float64)
    factor = (1.0,) * (rank - 3) + (1.1,)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=factor, mode=mode, antialias=antialias)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("rank,expected", [
    (4, [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9]),   # y // 2
    (3, [0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9]),   # y * float32(1 / 2.05)
])
def test_nearest_2d_halves_a_doubled_length(cpu_backend, rank, expected):
    x = np.arange(10, dtype=np.float32).reshape((1,) * (rank - 1) + (10,))
    factor = (1.0, 2.05)[4 - rank:]
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=factor)
    np.testing.assert_array_equal(got.reshape(-1), expected)


@pytest.mark.parametrize("mode,rank", [("nearest", 3), ("nearest", 5), ("nearest-exact", 4),
                                       ("bicubic", 4)])
def test_an_axis_whose_length_stays_is_resampled(cpu_backend, rng, mode, rank):
    """1-D and 3-D nearest, nearest-exact and plain bicubic resample it with 1 / scale."""
    x = random(rng, (1, 2, 3, 5, 4)[:rank - 1] + (5,), np.float64)
    factor = (1.0,) * (rank - 3) + (1.15,)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=factor, mode=mode)
    assert got.shape == x.shape and not np.array_equal(got, x)
    if mode != "bicubic":   # (4 + 0.5) / 1.15 = 3.9 and 4 / 1.15 = 3.5: element 3
        np.testing.assert_array_equal(got[..., 4], x[..., 3])


def test_nearest_multiplies_by_the_float32_reciprocal(cpu_backend):
    """nearest: floor(y * float32(1 / scale_factor)); at 1 / 0.3 = 3.3333333f, y = 3 gives
    9.999999 (9), where 3 / 0.3 = 10 exactly in float64."""
    x = np.arange(40, dtype=np.float32).reshape(1, 1, 40)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=0.3)
    scale = np.float32(1 / 0.3)
    expected = np.floor(np.arange(12, dtype=np.float32) * scale)
    np.testing.assert_array_equal(got[0, 0], expected)


# ---------------------------------------------------------------- numbers, sequences, defaults

def test_numbers_equal_sequences(cpu_backend, rng):
    x = random(rng, (2, 3, 6, 7), np.float32)
    with execution.backend(cpu_backend):
        pairs = [
            (F.avg_pool2d(x, 2), F.avg_pool2d(x, (2, 2), (2, 2), (0, 0))),
            (F.avg_pool2d(x, 3, 1, 1), F.avg_pool2d(x, [3, 3], [1], [1, 1])),
            (F.interpolate(x, scale_factor=2.0), F.interpolate(x, scale_factor=[2.0, 2.0])),
            (F.interpolate(x, size=5, mode="bilinear"),
             F.interpolate(x, size=(5, 5), mode="bilinear", align_corners=False)),
            (F.lp_pool2d(x, 2, 2), F.lp_pool2d(x, 2.0, (2, 2), (2, 2))),
        ]
    for a, b in pairs:
        np.testing.assert_array_equal(a, b)


def test_defaults(cpu_backend, rng):
    """stride = kernel_size, count_include_pad=True, mode 'nearest', dim -1."""
    x = random(rng, (2, 3, 9), np.float64)
    with execution.backend(cpu_backend):
        np.testing.assert_array_equal(F.avg_pool1d(x, 3, padding=1),
                                      F.avg_pool1d(x, 3, 3, 1, False, True))
        np.testing.assert_array_equal(F.interpolate(x, size=4),
                                      F.interpolate(x, size=4, mode="nearest"))
        np.testing.assert_array_equal(F.one_hot_argmax(x), F.one_hot_argmax(x, dim=2))


def test_unbatched_inputs(cpu_backend, rng):
    x = random(rng, (3, 7, 6), np.float32)
    with execution.backend(cpu_backend):
        np.testing.assert_array_equal(F.avg_pool2d(x, 2, 1, 1), F.avg_pool2d(x[None], 2, 1, 1)[0])
        np.testing.assert_array_equal(F.avg_pool1d(x[0], 3), F.avg_pool1d(x[:1], 3)[0])
        np.testing.assert_array_equal(F.lp_pool1d(x[0], 2, 3), F.lp_pool1d(x[:1], 2, 3)[0])


def test_non_contiguous_input_is_left_alone(cpu_backend, rng):
    base = random(rng, (2, 3, 10, 12), np.float32)
    x = base[:, :, ::2, ::-1]
    before = x.copy()
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=(1.5, 0.5), mode="bicubic")
        ref = F.interpolate(np.ascontiguousarray(x), scale_factor=(1.5, 0.5), mode="bicubic")
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64])
def test_dtypes_follow_the_input(cpu_backend, rng, dtype):
    x = random(rng, (1, 2, 5, 4), dtype)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=1.5, mode="bilinear", antialias=True)
        ref = F.interpolate(x.astype(np.float32), scale_factor=1.5, mode="bilinear",
                            antialias=True)
    assert got.dtype == x.dtype and got.shape == (1, 2, 7, 6)
    np.testing.assert_allclose(got.astype(np.float32), ref, rtol=3e-2, atol=3e-2)


def test_empty_batch(cpu_backend):
    x = np.zeros((0, 2, 6), np.float32)
    with execution.backend(cpu_backend):
        assert F.avg_pool1d(x, 2).shape == (0, 2, 3)
        assert F.interpolate(x, size=4, mode="linear").shape == (0, 2, 4)


# ---------------------------------------------------------------- errors, as PyTorch raises them

X3 = np.ones((1, 2, 6), np.float32)
X4 = np.ones((1, 2, 6, 6), np.float32)


@pytest.mark.parametrize("call,error,match", [
    (lambda: F.avg_pool2d(X4, (2, 2, 2)), ValueError, "kernel_size"),
    (lambda: F.avg_pool2d(X4, 2, (1, 1, 1)), ValueError, "stride"),
    (lambda: F.avg_pool2d(X4, 2, 0), ValueError, "stride should be greater than zero"),
    (lambda: F.avg_pool2d(X4, 0), ValueError, "kernel size should be greater than zero"),
    (lambda: F.avg_pool2d(X4, 3, padding=2), ValueError, "half of kernel size"),
    (lambda: F.avg_pool2d(X4, 7), ValueError, "too small"),
    (lambda: F.avg_pool2d(X4, 2, divisor_override=0), ValueError, "divisor_override"),
    (lambda: F.avg_pool1d(X4, 2), ValueError, "2D .* or 3D"),
    (lambda: F.lp_pool1d(X3, "2", 2), TypeError, "norm_type"),
    (lambda: F.one_hot_argmax(X3, dim=3), ValueError, "dim = 3"),
    (lambda: F.interpolate(X3, size=3, scale_factor=2.0), ValueError, "only one of"),
    (lambda: F.interpolate(X3), ValueError, "either size or scale_factor"),
    (lambda: F.interpolate(X3, size=[3, 3]), ValueError, "same number of spatial"),
    (lambda: F.interpolate(X3, scale_factor=[2.0, 2.0]), ValueError, "same number of spatial"),
    (lambda: F.interpolate(X3, size=3, align_corners=True), ValueError, "align_corners"),
    (lambda: F.interpolate(X3, size=3, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor"),
    (lambda: F.interpolate(X3, size=3, mode="linear", antialias=True), ValueError,
     "anti-alias"),
    (lambda: F.interpolate(X3, size=3, mode="bilinear"), NotImplementedError, "needs 4D"),
    (lambda: F.interpolate(X4, size=3, mode="linear"), NotImplementedError, "needs 3D"),
    (lambda: F.interpolate(X4, size=3, mode="area", align_corners=True), ValueError,
     "align_corners"),
    (lambda: F.interpolate(X4[:, :, :0], size=3, mode="area"), ValueError, "non-zero size"),
    (lambda: F.interpolate(X4, size=3, mode="cubic"), NotImplementedError, "cubic"),
    (lambda: F.interpolate(X3, scale_factor=0.1), ValueError, "greater than 0"),
    (lambda: F.interpolate(np.ones((2, 3), np.float32), size=3), NotImplementedError, "2D"),
])
def test_pytorch_rejects(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("name,shape,args,return_indices", [
    ("max_pool1d", (0, 10), (1,), False), ("max_pool1d", (0, 10), (1,), True),
    ("max_pool2d", (0, 4, 5), (1,), False), ("max_pool2d", (0, 4, 5), (2,), True),
    ("max_pool3d", (0, 2, 4, 5), (1,), False), ("max_pool3d", (0, 2, 4, 5), (1,), True),
    ("avg_pool1d", (0, 10), (1,), False), ("avg_pool2d", (0, 4, 5), (2,), False),
    ("avg_pool3d", (0, 2, 4, 5), (1,), False), ("lp_pool1d", (0, 10), (2, 1), False),
    ("lp_pool2d", (0, 4, 5), (2, 2), False), ("lp_pool3d", (0, 2, 4, 5), (1, 1), False),
])
def test_pooling_rejects_unbatched_input_without_channels(name, shape, args, return_indices):
    """PyTorch raises on an unbatched input with zero channels (only a batch may be empty);
    a batched one with an empty batch gives an empty result."""
    kw = {"return_indices": True} if return_indices else {}
    fn = getattr(F, name)
    with pytest.raises(ValueError, match="non-zero sizes except the batch"):
        fn(np.ones(shape, np.float32), *args, **kw)
    y = fn(np.ones((0, 1, *shape[1:]), np.float32), *args, **kw)
    assert (y[0] if return_indices else y).shape[:2] == (0, 1)


def test_max_unpool_takes_unbatched_input_without_channels():
    """PyTorch's max_unpool, unlike its pooling, returns an empty result there."""
    y = F.max_unpool1d(np.ones((0, 2), np.float32), np.zeros((0, 2), np.int64), 2)
    assert y.shape == (0, 4)


def test_recompute_scale_factor_uses_the_lengths(cpu_backend, rng):
    """recompute_scale_factor=True: coordinates from n / m, as with size = those lengths."""
    x = random(rng, (1, 1, 7), np.float64)
    with execution.backend(cpu_backend):
        got = F.interpolate(x, scale_factor=1.7, mode="linear", recompute_scale_factor=True)
        ref = F.interpolate(x, size=11, mode="linear")
        plain = F.interpolate(x, scale_factor=1.7, mode="linear")
    np.testing.assert_array_equal(got, ref)
    assert not np.allclose(got, plain)


def test_docstring_examples_run_and_sections_exist():
    import doctest

    from onnx_cupy.interop import functional

    result = doctest.testmod(functional, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= len(functional.__all__) and result.failed == 0, result
    for name in functional.__all__:
        doc = getattr(F, name).__doc__
        assert all(s in doc for s in ("Parameters\n", "Returns\n", "Raises\n", "Examples\n")), name


# ---------------------------------------------------------------- docs/pytorch.md's examples

def test_exported_nearest_differs_at_a_boundary(cpu_backend):
    """30 elements, nearest-exact, scale_factor 0.3: PyTorch's (7 + 0.5) * float32(1 / 0.3)
    rounds to 25.0 (element 25); Resize's (7.5f / 0.3f) - 0.5f is 24.499998, 2^-19 below the
    tie, outside onnxruntime's tie band (element 24). At 17 elements output 4 (14.499999, within
    the band) both take 15."""
    x = np.arange(30, dtype=np.float32).reshape(1, 1, 30)
    with execution.backend(cpu_backend):
        torch_style = F.interpolate(x, scale_factor=0.3, mode="nearest-exact")
        exported = onnx_cupy.resize(x, scales=[1, 1, 0.3], nearest_mode="round_prefer_ceil")
        short = onnx_cupy.resize(x[..., :17], scales=[1, 1, 0.3], nearest_mode="round_prefer_ceil")
    np.testing.assert_array_equal(torch_style[0, 0], [1, 5, 8, 11, 15, 18, 21, 25, 28])
    np.testing.assert_array_equal(exported[0, 0], [1, 5, 8, 11, 15, 18, 21, 24, 28])
    np.testing.assert_array_equal(short[0, 0], [1, 5, 8, 11, 15])


def test_exported_linear_resamples_a_kept_length(cpu_backend, rng):
    """5 elements at scale_factor 1.1 stay 5: PyTorch's linear copies them, Resize with
    scales 1.1 resamples (x = (y + 0.5) / 1.1 - 0.5)."""
    x = random(rng, (1, 1, 5), np.float64)
    with execution.backend(cpu_backend):
        exported = onnx_cupy.resize(x, scales=[1, 1, 1.1], mode="linear")
        torch_style = F.interpolate(x, scale_factor=1.1, mode="linear")
    np.testing.assert_array_equal(torch_style, x)
    assert not np.allclose(exported, x)


def test_exported_nearest_2d_at_a_doubled_length(cpu_backend):
    x = np.arange(10, dtype=np.float32).reshape(1, 1, 1, 10)
    with execution.backend(cpu_backend):
        exported = onnx_cupy.resize(x, scales=[1, 1, 1, 2.05], nearest_mode="floor",
                                    coordinate_transformation_mode="asymmetric")
        torch_style = F.interpolate(x, scale_factor=(1, 2.05))
    assert exported[0, 0, 0, 2] == 0 and torch_style[0, 0, 0, 2] == 1


def test_length_from_the_float64_scale_factor(cpu_backend):
    """5 x 1.4: floor(7.0) = 7 in float64 (PyTorch); Resize's float32 scale gives 6."""
    x = np.ones((1, 1, 5), np.float32)
    with execution.backend(cpu_backend):
        assert F.interpolate(x, scale_factor=1.4).shape == (1, 1, 7)
        assert onnx_cupy.resize(x, scales=[1, 1, 1.4]).shape == (1, 1, 6)
