"""Resize on every backend: ONNX's node tests, versions without an onnx.reference class (10, and
11's tf_half_pixel_for_nn) against onnxruntime and hand-computed expectations, the spec-text
cases where onnx.reference differs, integer rounding and saturation, strings, the 64-bit index
path, input handling (non-contiguous, high rank, empty, never modified, out=) and run_node."""
from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest
from helpers import node_tests
from helpers.util import node_model, onnxruntime, reference, to_backend, to_numpy
from onnx import helper

import onnx_cupy
from onnx_cupy import resize, run_node
from onnx_cupy.core import execution, loader
from onnx_cupy.resize import kernel as resize_kernel
from onnx_cupy.resize import plan as resize_op

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")


def run(backend: str, x: np.ndarray, *args, **kw) -> np.ndarray:
    with execution.backend(backend):
        return to_numpy(resize(to_backend(x, backend), *args, **kw))


def ort(opset: int, x: np.ndarray, attrs: dict, **inputs: np.ndarray) -> np.ndarray:
    names = [("X", x.dtype)] + [(k, v.dtype) for k, v in inputs.items()]
    return onnxruntime(node_model("Resize", names, attrs, opset), {"X": x, **inputs})[0]


def ref(opset: int, x: np.ndarray, attrs: dict, **inputs: np.ndarray | None) -> np.ndarray:
    names = [("X", x.dtype)] + [(k, v.dtype) if v is not None else ("", None)
                                for k, v in inputs.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reference(node_model("Resize", names, attrs, opset),
                         {"X": x, **{k: v for k, v in inputs.items() if v is not None}})[0]


def test_exported_and_registered():
    assert onnx_cupy.resize is resize and "resize" in onnx_cupy.__all__
    exprs = [k.expression for k in loader.instantiations("resize")]
    for rank in resize_kernel.GENERIC_RANKS:
        assert f"resize_nearest<rsz::pod<16>, {rank}, long long>" in exprs
        assert f"resize_weighted<oc::bf16_t, float, {rank}, int>" in exprs
        assert f"resize_weighted<unsigned long long, double, {rank}, long long>" in exprs
        assert resize_kernel.NEAREST[16, rank, 64].dtypes == ("complex128",)
    assert resize_kernel.GENERIC_RANKS[-1] == resize_op.MAX_DIMS


def test_paths(launches):
    """NumPy arrays run the fallback (no kernel launch) unless a backend is forced."""
    x = np.ones((2, 3), np.float32)
    resize(x, scales=[2, 2], mode="linear")
    assert launches == []
    with execution.backend("emulated"):
        resize(x, scales=[2, 2], mode="linear")
    assert len(launches) == 1


def test_every_node_test_of_resize_runs():
    """The node cases below are all of ONNX's node tests that use Resize: the conformance filter
    drops none of them."""
    node_tests.check_every_node_test_runs("Resize")


@pytest.mark.parametrize("name", node_tests.names("Resize"))
def test_onnx_node_case(name, backend):
    node_tests.check_node_case("Resize", name, backend)


# ---------------------------------------------------------------- versions without a reference

@pytest.mark.parametrize("scale", [1.0, 2.0, 1.5, 2.5, 3.0])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_v10_upsample_matches_onnxruntime(backend, rng, mode, scale):
    """Resize-10: asymmetric coordinates; nearest rounds down (floor)."""
    x = rng.uniform(-2, 3, size=(2, 3, 4, 5)).astype(np.float32)
    scales = np.array([1, 1, scale, 2.0], dtype=np.float32)
    got = run(backend, x, scales=scales, mode=mode, opset=10)
    np.testing.assert_allclose(got, ort(10, x, {"mode": mode}, scales=scales), rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("scale", [0.5, 0.75, 0.25, 0.6])
def test_v10_downsample(backend, rng, scale):
    """Resize-10 shrinking: linear and nearest match onnxruntime; nearest takes ceil(y / s)
    on a shrinking axis, clamped into the input."""
    x = rng.uniform(-2, 3, size=(1, 2, 8, 8)).astype(np.float32)
    scales = np.array([1, 1, scale, 1], dtype=np.float32)
    for mode in ("linear", "nearest"):
        got = run(backend, x, scales=scales, mode=mode, opset=10)
        np.testing.assert_allclose(got, ort(10, x, {"mode": mode}, scales=scales), rtol=1e-5,
                                   atol=1e-6)
    m = int(8 * np.float32(scale))
    source = np.minimum(np.ceil(np.arange(m) / np.float32(scale)), 7).astype(int)
    np.testing.assert_array_equal(run(backend, x, scales=scales, opset=10), x[:, :, source, :])


def test_v10_node_test(backend):
    """ONNX's opset-10 node test resize_downsample_nearest: each axis rounds up (scale < 1)."""
    x = np.array([[[[1, 2, 3, 4], [5, 6, 7, 8]]]], dtype=np.float32)
    got = run(backend, x, scales=np.array([1, 1, 0.6, 0.6], np.float32), opset=10)
    np.testing.assert_array_equal(got, [[[[1, 3]]]])


@pytest.mark.parametrize("mode,nearest_mode", [("nearest", m) for m in (
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")] + [("linear", None),
                                                                    ("cubic", None)])
def test_v11_tf_half_pixel_for_nn_matches_onnxruntime(backend, rng, mode, nearest_mode):
    """x = (y + 0.5) / s; an axis with scale 1 stays as is. Dyadic scales: onnxruntime rounds
    in float32."""
    attrs = {"mode": mode, "coordinate_transformation_mode": "tf_half_pixel_for_nn"}
    if nearest_mode:
        attrs["nearest_mode"] = nearest_mode
    x = rng.uniform(-2, 3, size=(2, 3, 5, 7)).astype(np.float32)
    for scales in ([1, 1, 2, 3], [1, 1, 0.5, 0.75], [1, 1, 2.5, 1.25], [1, 1, 1, 1.5]):
        s = np.array(scales, dtype=np.float32)
        expected = ort(11, x, attrs, roi=np.zeros(0, np.float32), scales=s)
        np.testing.assert_allclose(run(backend, x, None, s, opset=11, **attrs), expected,
                                   rtol=1e-5, atol=1e-5)


def test_v11_sizes_with_empty_scales(backend, rng):
    x = rng.uniform(-2, 3, size=(1, 2, 4, 5)).astype(np.float32)
    sizes = np.array([1, 2, 7, 3], dtype=np.int64)
    empty = np.zeros(0, np.float32)
    expected = ort(11, x, {"mode": "linear"}, roi=empty, scales=empty, sizes=sizes)
    got = run(backend, x, empty, empty, sizes, mode="linear", opset=11)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- spec text vs onnx.reference

def test_pytorch_half_pixel_length_one_samples_zero(backend, rng):
    """Spec: x_original = length_resized > 1 ? ... : 0 (onnx.reference uses -0.5); onnxruntime
    agrees with the spec. Cubic at x = 0 returns the first element."""
    x = rng.uniform(-2, 3, size=(3, 6)).astype(np.float32)
    attrs = {"mode": "cubic", "coordinate_transformation_mode": "pytorch_half_pixel"}
    sizes = np.array([3, 1], dtype=np.int64)
    got = run(backend, x, sizes=sizes, opset=13, **attrs)
    np.testing.assert_allclose(got[:, 0], x[:, 0], rtol=1e-6)
    np.testing.assert_allclose(got, ort(13, x, attrs, roi=np.zeros(0, np.float32),
                                        scales=np.zeros(0, np.float32), sizes=sizes), rtol=1e-6)


@pytest.mark.parametrize("opset", [11, 13, 19])
def test_tf_crop_and_resize_length_ignores_the_roi(backend, opset):
    """With scales the output length is floor(n * scale) under tf_crop_and_resize too (as
    onnxruntime, onnx.reference and shape inference); the roi only moves the samples."""
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 6)
    roi = np.array([0, 0, 0, 1, 1, 0.42], dtype=np.float32)
    scales = np.array([1, 1, 2], dtype=np.float32)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}
    got = run(backend, x, roi, scales, opset=opset, **attrs)
    assert got.shape == (1, 1, 12)
    np.testing.assert_allclose(got, ort(opset, x, attrs, roi=roi, scales=scales), rtol=1e-6)
    np.testing.assert_allclose(got[0, 0], 1 + np.arange(12) * np.float32(0.42) * 5 / 11,
                               rtol=1e-6)


def test_tf_crop_and_resize_divides_by_the_output_length(backend, rng):
    """x = r0 * (n - 1) + y * (r1 - r0) * (n - 1) / (length_resized - 1), the integer length
    (the text and onnxruntime; onnx.reference divides by the fractional n * scale - 1)."""
    x = rng.uniform(-2, 3, size=(3, 5)).astype(np.float32)
    roi = np.array([0, 0.1, 1, 0.9], dtype=np.float32)
    scales = np.array([1, 1.3], dtype=np.float32)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"}
    got = run(backend, x, roi, scales, **attrs)
    np.testing.assert_array_equal(got, ort(19, x, attrs, roi=roi, scales=scales))
    np.testing.assert_array_equal(got, x[:, [0, 1, 2, 2, 3, 4]])  # x = 0.4 + 0.64 y


@pytest.mark.parametrize("opset", [11, 19])
def test_tf_crop_and_resize_without_roi_takes_the_whole_input(backend, rng, opset):
    """An omitted (or empty) roi is 0..1 on every axis, as onnxruntime (which takes an omitted
    roi from Resize-18)."""
    x = rng.uniform(-2, 3, size=(2, 4, 5)).astype(np.float32)
    sizes = np.array([2, 7, 3], dtype=np.int64)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}
    empty = np.zeros(0, np.float32)
    whole = np.array([0, 0, 0, 1, 1, 1], dtype=np.float32)
    expected = ort(opset, x, attrs, roi=whole, scales=empty, sizes=sizes)
    if opset >= 18:
        model = node_model("Resize", [("X", x.dtype), ("", None), ("", None), ("sizes", np.int64)],
                           attrs, opset)
        np.testing.assert_array_equal(onnxruntime(model, {"X": x, "sizes": sizes})[0], expected)
    for roi in (None, empty, whole):
        got = run(backend, x, roi, None, sizes, opset=opset, **attrs)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_tf_crop_and_resize_flipped_roi(backend, rng):
    """roi end < start with scales: floor(n * scale) samples walking backwards."""
    x = rng.uniform(-2, 3, size=(1, 5)).astype(np.float32)
    roi = np.array([0, 1, 1, 0], dtype=np.float32)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"}
    got = run(backend, x, roi, np.array([1, 1], np.float32), **attrs)
    np.testing.assert_array_equal(got, x[:, ::-1])


def test_tf_crop_and_resize_coordinates_in_float32(backend, rng):
    """The crop coordinates are float32 (as TensorFlow's CropAndResize and onnxruntime): with
    roi 0.1..0.8 (float32) on 5 -> 15, output 3 sits at 0.99999994, so ceil takes input 1
    (onnxruntime and onnx.reference agree; exact arithmetic on the float32 roi values gives
    1.0000000068 and input 2)."""
    x = rng.uniform(-2, 3, size=(5,)).astype(np.float32)
    roi = np.array([0.1, 0.8], dtype=np.float32)
    scales = np.array([3], np.float32)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize",
             "nearest_mode": "ceil"}
    got = run(backend, x, roi, scales, **attrs)
    assert got[3] == x[1]
    np.testing.assert_array_equal(got, ref(19, x, attrs, roi=roi, scales=scales))
    np.testing.assert_array_equal(got, ort(19, x, attrs, roi=roi, scales=scales))


@pytest.mark.parametrize("n,scale,rounding,source", [
    (7, 0.5, "floor", [1, 3, 5]),           # x = 1, 3, 5; onnx.reference: 1.0000000000000002,
                                            # and its window search takes input 0
    (5, 1.25, "ceil", [0, 1, 2, 3, 4, 4]),  # x(0) = 0; onnxruntime (float32): above 0, input 1
])
def test_half_pixel_symmetric_exact_coordinates(backend, n, scale, rounding, source):
    """half_pixel_symmetric as (n - 1) / 2 + (2y + 1 - m) / (2s), equal to the text's
    n / 2 * (1 - m / w) + (y + 0.5) / s - 0.5 with w = n * s but rounded once, so integral
    coordinates stay integral where both runtimes land off them."""
    x = np.arange(n, dtype=np.float32) * 10
    attrs = {"coordinate_transformation_mode": "half_pixel_symmetric", "nearest_mode": rounding}
    got = run(backend, x, scales=np.array([scale], np.float32), **attrs)
    np.testing.assert_array_equal(got, x[source])


def test_nearest_ignores_exclude_outside(backend, rng):
    """Nearest samples one location; it is clamped to the edge with or without exclude_outside
    (onnx.reference zeroes the output where the chosen location lies outside)."""
    x = rng.uniform(1, 3, size=(4, 4)).astype(np.float32)
    attrs = {"nearest_mode": "ceil"}
    scales = np.array([2, 2], np.float32)
    expected = ref(19, x, attrs, roi=None, scales=scales)
    np.testing.assert_array_equal(run(backend, x, scales=scales, exclude_outside=1, **attrs),
                                  expected)
    assert (ref(19, x, dict(attrs, exclude_outside=1), roi=None, scales=scales)[-1] == 0).all()


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_coordinate_just_above_an_integer(backend, mode):
    """7 -> 17, half_pixel: output 8 maps to x = 3.0000000000000004, so it takes input 3 (9.0)
    (onnx.reference's edge-padded neighbour search rounds x + padding to 5.0 and takes input 2;
    onnxruntime, in float32, agrees with 9.0)."""
    x = (np.arange(7, dtype=np.float64) ** 2).reshape(1, 7)
    sizes = np.array([1, 17])
    got = run(backend, x, sizes=sizes, mode=mode)
    np.testing.assert_allclose(got[0, 8], 9.0, rtol=1e-14)
    assert abs(ref(19, x, {"mode": mode}, roi=None, scales=None, sizes=sizes)[0, 8] - 4) < 1e-9
    empty = np.zeros(0, np.float32)
    np.testing.assert_allclose(ort(13, x.astype(np.float32), {"mode": mode}, roi=empty,
                                   scales=empty, sizes=sizes)[0, 8], 9.0, rtol=1e-6)


# ---------------------------------------------------------------- dtypes

def test_integer_rounding_and_saturation(backend):
    """Linear/cubic on integers: float64, rounded half to even, saturated to the range."""
    x = np.array([[2, 3, 4, 5]], dtype=np.int8)
    got = run(backend, x, scales=[1, 2], mode="linear", coordinate_transformation_mode="asymmetric")
    np.testing.assert_array_equal(got, [[2, 2, 3, 4, 4, 4, 5, 5]])  # 2.5 -> 2, 3.5 -> 4, 4.5 -> 4
    u = np.array([0, 0, 255, 255, 0, 0], dtype=np.uint8)
    got = run(backend, u, scales=[2.5], mode="cubic")
    exact = ref(19, u.astype(np.float64), {"mode": "cubic"}, roi=None,
                scales=np.array([2.5], np.float32))
    assert exact.max() > 255 and exact.min() < 0  # the cubic kernel overshoots both ends
    np.testing.assert_array_equal(got, np.clip(np.rint(exact), 0, 255))



@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint64])
def test_integer_exact_ties_round_half_to_even(backend, rng, dtype):
    """Bilinear 2 x 2 -> 4 x 6 (asymmetric): output (1, 1) is (2a + b + 2c + d) / 6 with weights
    1/2 x (2/3, 1/3), float sums a rounding error away from k + 0.5 on either side depending on
    the order of the terms. Inputs built so that it is an exact tie: every output equals the
    exact rational rounded half to even, on every path."""
    low = 0 if np.iinfo(dtype).min == 0 else -30
    a, b, c, d = (rng.integers(low, 40, size=64) for _ in range(4))
    d = d + (3 - (2 * a + b + 2 * c + d)) % 6  # 2a + b + 2c + d = 3 (mod 6): (1, 1) is k + 0.5
    x = np.stack([a, b, c, d], axis=1).reshape(64, 2, 2).astype(dtype)
    got = run(backend, x, scales=[2, 3], axes=[1, 2], mode="linear",
              coordinate_transformation_mode="asymmetric")
    rows = [[(1, 0)], [(Fraction(1, 2), 0), (Fraction(1, 2), 1)]]
    cols = [[(1, 0)], [(Fraction(2, 3), 0), (Fraction(1, 3), 1)],
            [(Fraction(1, 3), 0), (Fraction(2, 3), 1)]]
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            exact = [sum(wr * wc * int(v[r, c]) for wr, r in row for wc, c in col) for v in x]
            np.testing.assert_array_equal(got[:, i, j], [round(e) for e in exact])
    ties = [sum(Fraction(w) * int(t) for w, t in zip((2, 1, 2, 1), v.ravel())) / 6 for v in x]
    assert all(t.denominator == 2 for t in ties)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_64bit_integer_saturation(backend, dtype):
    """Where the float64 value passes 2^63 (2^64) the result is the dtype's maximum; below 0 an
    unsigned result is 0."""
    top = np.iinfo(dtype).max
    x = np.array([0, 0, top, top, 0, 0], dtype=dtype)
    got = run(backend, x, scales=[2.5], mode="cubic")
    exact = ref(19, x.astype(np.float64), {"mode": "cubic"}, roi=None,
                scales=np.array([2.5], np.float32))
    over = exact > 1.01 * float(top)
    under = exact < 0 if dtype == np.uint64 else np.zeros_like(over)
    assert over.any() and (under.any() or dtype == np.int64)
    assert (got[over] == top).all() and (got[under] == 0).all()
    rest = ~over & ~under
    np.testing.assert_allclose(got[rest].astype(np.float64), exact[rest], rtol=1e-5,
                               atol=1e-5 * float(top))


def test_extrapolation_value_in_integer_and_bool_dtypes(backend):
    attrs = {"coordinate_transformation_mode": "tf_crop_and_resize",
             "extrapolation_value": -2.5, "roi": [-0.5, 1.5], "sizes": [4]}
    x = np.arange(1, 4, dtype=np.int16)
    np.testing.assert_array_equal(run(backend, x, **attrs), [-2, 1, 3, -2])
    np.testing.assert_array_equal(run(backend, x.astype(np.uint8), **attrs), [0, 1, 3, 0])
    np.testing.assert_array_equal(run(backend, x > 1, **attrs), [True, False, True, True])


@pytest.mark.parametrize("dtype", [object, "U5"])
def test_strings_numpy_only(dtype):
    x = np.array([["a", "bb"], ["ccc", "d"]], dtype=dtype)
    got = resize(x, scales=[1, 2])
    np.testing.assert_array_equal(got, x.repeat(2, axis=1))
    assert got.dtype == x.dtype
    with execution.backend("emulated"), pytest.raises(TypeError, match="string tensors run on the "
                                                                      "NumPy backend only"):
        resize(x, scales=[1, 2])


# ---------------------------------------------------------------- shapes and input handling

def test_large_offsets_use_64bit_indices(cpu_backend, launches):
    """A [1, 1, 2^31 + 5] input (virtual memory: only the elements read are written); nearest
    computes its coordinates in float32 as onnxruntime does, linear in float64."""
    n = 2**31 + 5
    x = np.empty((1, 1, n), dtype=np.int8)
    m = 4
    s = m / n
    xo = (np.arange(m) + 0.5) / s - 0.5
    f = np.float32
    x32 = ((np.arange(m, dtype=f) + f(0.5)) / (f(m) / f(n)) - f(0.5)).astype(np.float64)
    near = np.where(x32 - np.floor(x32) > 0.5, np.ceil(x32), np.floor(x32)).astype(np.int64)
    lo = np.floor(xo).astype(np.int64)
    for i in np.concatenate([near, lo, lo + 1]):
        x[0, 0, i] = i % 97 - 40
    got = run(cpu_backend, x, sizes=[1, 1, m])
    np.testing.assert_array_equal(got[0, 0], x[0, 0, near])
    got = run(cpu_backend, x, sizes=[1, 1, m], mode="linear")
    t = xo - lo
    expected = np.rint((1 - t) * x[0, 0, lo] + t * x[0, 0, lo + 1])
    np.testing.assert_array_equal(got[0, 0], expected)
    if cpu_backend == "emulated":
        assert launches and all(k.index_bits == 64 for k, _ in launches)


@pytest.mark.parametrize("view", ["transposed", "stepped", "reversed", "sliced"])
def test_non_contiguous_input(backend, rng, view):
    base = rng.uniform(-2, 3, size=(3, 8, 10)).astype(np.float32)
    x = {"transposed": base.transpose(2, 0, 1), "stepped": base[:, ::2, ::3],
         "reversed": base[::-1, :, ::-1], "sliced": base[1:, 2:7, 1:9]}[view]
    kw = {"scales": [1, 1.5, 0.75], "mode": "cubic", "axes": [0, 2, 1], "opset": 18}
    np.testing.assert_allclose(run(backend, x, **kw), run("numpy", np.ascontiguousarray(x), **kw),
                               rtol=1e-6, atol=1e-6)


def test_many_unmergeable_dims(backend, rng):
    """17 dims whose strides do not merge exceed the kernel's 16: X is copied contiguous."""
    x = rng.uniform(size=(2,) * 17).astype(np.float32).transpose(np.arange(17)[::-1])
    kw = {"sizes": [3], "axes": [16], "mode": "linear"}
    np.testing.assert_allclose(run(backend, x, **kw), run("numpy", np.ascontiguousarray(x), **kw),
                               rtol=1e-6)


def test_misaligned_arrays(backend):
    """complex64 viewed 4 bytes into a float32 buffer: read through an aligned copy on the
    kernel path; an `out` the kernels cannot store to is refused there."""
    buf = np.arange(18, dtype=np.float32)
    x = buf[1:17].view(np.complex64).reshape(2, 4)
    expected = x.repeat(2, axis=1)
    np.testing.assert_array_equal(run(backend, x, scales=[1, 2]), expected)
    if backend == "emulated":
        out = np.zeros(33, np.float32)[1:].view(np.complex64).reshape(2, 8)
        with execution.backend(backend), pytest.raises(ValueError, match="out must be aligned to "
                                                                        "8 bytes"):
            resize(x, scales=[1, 2], out=out)


@pytest.mark.parametrize("rank", [1, 2, 3, 6, 7])
def test_ranks(backend, rng, rank):
    shape = tuple(int(v) for v in rng.integers(1, 4, size=rank))
    x = rng.uniform(-2, 3, size=shape).astype(np.float32)
    scales = np.array(rng.choice([0.5, 1.0, 1.5, 2.0], size=rank), dtype=np.float32)
    np.testing.assert_allclose(run(backend, x, scales=scales, mode="linear"),
                               ref(19, x, {"mode": "linear"}, roi=None, scales=scales),
                               rtol=1e-5, atol=1e-6)


def test_empty(backend):
    x = np.zeros((2, 0, 3), dtype=np.float32)
    assert run(backend, x, scales=[2, 2, 2]).shape == (4, 0, 6)
    assert run(backend, np.ones((2, 3), np.float32), sizes=[0, 5]).shape == (0, 5)
    assert run(backend, np.ones((2, 3), np.float32), scales=[0.4, 1]).shape == (0, 3)


def test_identity_is_a_copy(backend, rng):
    x = rng.uniform(size=(2, 3)).astype(np.float32)
    got = run(backend, x, scales=[1, 1], mode="cubic")
    np.testing.assert_array_equal(got, x)
    assert not np.shares_memory(got, x)


def test_inputs_never_modified(backend, rng):
    x = rng.uniform(size=(2, 5, 4)).astype(np.float32)
    roi = np.array([0, 0.1, 0.2, 1, 0.9, 0.7], dtype=np.float64)
    sizes = np.array([2, 7, 3], dtype=np.int64)
    scales = np.array([1, 1.5, 0.5], dtype=np.float32)
    saved = [a.copy() for a in (x, roi, sizes, scales)]
    run(backend, x, roi, None, sizes, mode="cubic",
        coordinate_transformation_mode="tf_crop_and_resize")
    run(backend, x, None, scales, mode="linear", antialias=1)
    for a, b in zip((x, roi, sizes, scales), saved):
        np.testing.assert_array_equal(a, b)


def test_out(backend, rng):
    x = rng.uniform(size=(2, 3)).astype(np.float32)
    xp = execution.cupy_module() if backend == "cupy" else np
    out = xp.empty((4, 6), dtype=np.float32)
    with execution.backend(backend):
        y = resize(to_backend(x, backend), scales=[2, 2], mode="linear", out=out)
    assert y is out
    np.testing.assert_allclose(to_numpy(out), run("numpy", x, scales=[2, 2], mode="linear"),
                               rtol=1e-6)


def test_tables_cached_per_plan(cpu_backend):
    """One plan per configuration (scales given as float32 values hit the same entry); its kernel
    tables are built once and read-only: the antialias cubic filter at scale 0.5 has 7 taps
    (onnxruntime's windows, cut to the input)."""
    x = np.ones((2, 8), np.float32)
    kw = {"mode": "cubic", "antialias": 1}
    run(cpu_backend, x, scales=[1, 0.5], **kw)
    hits = resize_op.plan.cache_info().hits
    run(cpu_backend, x, scales=np.array([1, 0.5], np.float32), **kw)
    assert resize_op.plan.cache_info().hits == hits + 1
    at = resize_op.attributes(19, **{**resize_op.DEFAULTS, **kw})
    pl = resize_op.plan(19, (2, 8), np.dtype(np.float32), None, (1.0, 0.5), None, at)
    index, weight, first = resize_kernel.kernel_tables(pl)
    assert resize_kernel.kernel_tables(pl)[0] is index and not index.flags.writeable
    assert [t.axis for t in pl.tables] == [1] and pl.tables[0].taps == 7
    assert first == (0,) and weight.shape == (4 * 7,)


def test_run_node_versions(backend, rng):
    x = rng.uniform(size=(1, 1, 3, 4)).astype(np.float32)
    xb = to_backend(x, backend)
    scales = np.array([1, 1, 2, 0.5], np.float32)
    node = helper.make_node("Resize", ["X", "scales"], ["Y"], mode="linear")
    with execution.backend(backend):
        (y10,) = run_node(node, [xb, scales], opset=10)
        node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"], mode="nearest",
                                axes=[3, 2])
        (y19,) = run_node(node, [xb, None, None, np.array([8, 6], np.int64)], opset=19)
        with pytest.raises(ValueError, match="Resize at opset 10 takes 1 to 2 inputs"):
            run_node(helper.make_node("Resize", ["X", "", "scales"], ["Y"]), [xb, None, scales],
                     opset=10)
    np.testing.assert_allclose(to_numpy(y10), run("numpy", x, scales=scales, mode="linear",
                                                  opset=10), rtol=1e-6)
    assert to_numpy(y19).shape == (1, 1, 6, 8)
