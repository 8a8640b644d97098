"""onnx_cupy.roi_align and max_roi_pool: hand-computed results, the rules where the runtimes'
text is silent (non-finite boxes, empty grids, images without pixels), bad input with the
attribute, value and opset named, empty region sets and channels, `out=`, strided inputs,
non-contiguous boxes, and the CuPy path on the stand-in cupy."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.util import FLOAT_DTYPES, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.roi import api

X = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)


def align(backend, x, rois, batch, **kw):
    with oc.backend(backend):
        return to_numpy(oc.roi_align(to_backend(x, backend), to_backend(rois, backend),
                                     to_backend(batch, backend), **kw))


def pool(backend, x, rois, **kw):
    with oc.backend(backend):
        return to_numpy(oc.max_roi_pool(to_backend(x, backend), to_backend(rois, backend), **kw))


def test_align_hand_computed(backend):
    """half_pixel (the default from 16): the box (0, 0, 2, 2) shifted by -0.5 samples pixel
    centres 0 and 1; output_half_pixel samples at 0.5 and 1.5 (the means of 2 x 2 pixels)."""
    box, b = np.array([[0, 0, 2, 2]], np.float32), np.array([0])
    y = align(backend, X, box, b, output_height=2, output_width=2, sampling_ratio=1)
    assert y.dtype == np.float32 and np.array_equal(y[0, 0], [[0, 1], [4, 5]])
    y = align(backend, X, box, b, output_height=2, output_width=2, sampling_ratio=1,
              coordinate_transformation_mode="output_half_pixel")
    assert np.array_equal(y[0, 0], [[2.5, 3.5], [6.5, 7.5]])
    assert np.array_equal(y, align(backend, X, box, b, output_height=2, output_width=2,
                                   sampling_ratio=1, opset=10))


def test_align_max_takes_the_largest_weighted_corner(backend):
    """Mode max: each sample's four weighted corners compete (not the interpolated value): a
    sample at (0.5, 0.5) of a 2 x 2 image of ones gives 0.25."""
    ones, box = np.ones((1, 1, 2, 2), np.float64), np.array([[1.0, 1.0, 1.0, 1.0]])
    y = align(backend, ones, box, np.array([0]), mode="max", sampling_ratio=1)
    avg = align(backend, ones, box, np.array([0]), sampling_ratio=1)
    assert y[0, 0, 0, 0] == 0.25 and avg[0, 0, 0, 0] == 1.0


def test_pool_hand_computed(backend):
    y = pool(backend, X, np.array([[0, 0, 0, 3, 3]], np.float32), pooled_shape=[2, 2])
    assert np.array_equal(y[0, 0], [[5, 7], [13, 15]])
    # corners rounded half away from zero: 0.5 -> 1, 2.5 -> 3; the batch index truncated
    y = pool(backend, X, np.array([[0.9, 0.5, 0.5, 2.5, 2.5]], np.float32), pooled_shape=[1, 1])
    assert y[0, 0, 0, 0] == 15


def test_pool_empty_bins_are_zero_and_nan_follows_the_fold(backend):
    """A box outside the image: every bin empty, 0. A NaN is kept until the next pixel of the
    bin replaces it (std::max(v, acc)): the last pixel NaN gives NaN, an earlier one does not."""
    y = pool(backend, X, np.array([[0, 20, 20, 30, 30]], np.float32), pooled_shape=[2, 2])
    assert not y.any()
    x = -X.copy()
    x[0, 0, 1, 1] = np.nan
    y = pool(backend, x, np.array([[0, 0, 0, 1, 1], [0, 1, 1, 2, 2]], np.float32),
             pooled_shape=[1, 1])
    assert np.isnan(y[0, 0, 0, 0]) and y[1, 0, 0, 0] == -6
    x = np.full((1, 1, 2, 2), -np.inf, np.float32)
    y = pool(backend, x, np.array([[0, 0, 0, 1, 1]], np.float32), pooled_shape=[1, 1])
    assert y[0, 0, 0, 0] == np.finfo(np.float32).min   # the fold starts at -FLT_MAX


def test_non_finite_boxes_are_rejected_on_host_arrays(cpu_backend):
    """As onnxruntime's RoiAlign ("All 'rois' values must be finite"); MaxRoiPool alike."""
    boxes = np.array([[0, 0, 2, 2], [0, 0, np.inf, 2]], np.float32)
    with pytest.raises(ValueError, match=r"RoiAlign: input 'rois' holds inf in region 1"):
        align(cpu_backend, X, boxes, np.zeros(2, np.int64))
    rois = np.array([[0, 0, 0, 2, 2], [0, np.nan, 0, 2, 2]], np.float32)
    with pytest.raises(ValueError, match=r"MaxRoiPool: input 'rois' holds nan in region 1"):
        pool(cpu_backend, X, rois, pooled_shape=[1, 1])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("path", ["numpy", "emulated"])
def test_non_finite_boxes_give_nan_where_unchecked(path, dtype):
    """What the GPU path (which does not check) gives, on both paths past the host check: NaN
    in every output of a region with a coordinate that is not finite after scaling, zeros for
    a batch index outside the batch."""
    x = X.astype(dtype)
    boxes = np.array([[0, 0, np.inf, 2], [0, 0, 2, 2], [np.nan, 0, 1, 1], [0, 0, 1, 1]]
                     ).astype(dtype)
    batch = np.array([0, 0, 0, 3])
    rois = np.concatenate([batch[:, None], boxes.astype(np.float64)], 1).astype(dtype)
    align = {"mode": "avg", "output_height": 2, "output_width": 3, "sampling_ratio": 0,
             "spatial_scale": 1.0, "coordinate_transformation_mode": None}
    pool = {"pooled_shape": (2, 3), "spatial_scale": 1.0}
    # the declared calls without their host checks: what the GPU path runs
    unchecked_align = dataclasses.replace(api.ALIGN, check=None)
    unchecked_pool = dataclasses.replace(api.POOL, check=None)
    with execution.backend(path):
        for y in (unchecked_align(x, boxes, batch, parts=(22, align, "float32")),
                  unchecked_pool(x, rois, parts=(22, pool, "float32"))):
            y = y.astype(np.float64)
            assert np.isnan(y[[0, 2]]).all() and np.isfinite(y[1]).all() and not y[3].any()


def test_degenerate_regions(backend):
    """A zero-size box: under output_half_pixel a 1 x 1 region; under half_pixel one point
    with a fixed grid, and an empty grid (0) with the adaptive one, as is a reversed box;
    MaxRoiPool makes it one pixel, which every bin covers."""
    box = np.array([[1.5, 1.5, 1.5, 1.5]], np.float32)
    y = align(backend, X, box, np.array([0]), sampling_ratio=1)
    assert y[0, 0, 0, 0] == 5.0   # the point (1, 1)
    assert align(backend, X, box, np.array([0]))[0, 0, 0, 0] == 0.0
    y = align(backend, X, box, np.array([0]), coordinate_transformation_mode="output_half_pixel")
    assert y[0, 0, 0, 0] == 10.0   # the region [1.5, 2.5]^2 at its centre (2, 2)
    y = align(backend, X, np.array([[3, 3, 1, 1]], np.float32), np.array([0]),
              coordinate_transformation_mode="half_pixel", output_height=2, output_width=2)
    assert not y.any()
    y = pool(backend, X, np.array([[0, 2, 2, 2, 2]], np.float32), pooled_shape=[2, 2])
    assert np.array_equal(y[0, 0], [[10, 10], [10, 10]])


def test_empty_region_sets_and_channels(backend):
    y = align(backend, X, np.zeros((0, 4), np.float32), np.zeros(0, np.int64),
              output_height=3, output_width=2)
    assert y.shape == (0, 1, 3, 2) and y.dtype == np.float32
    y = align(backend, X, np.ones((2, 4), np.float32), np.zeros(2, np.int64), output_height=0)
    assert y.shape == (2, 1, 0, 1)   # as onnxruntime
    y = pool(backend, X, np.zeros((0, 5), np.float32), pooled_shape=[2, 2])
    assert y.shape == (0, 1, 2, 2)
    y = align(backend, np.zeros((1, 0, 4, 4), np.float32), np.ones((2, 4), np.float32),
              np.zeros(2, np.int64))
    assert y.shape == (2, 0, 1, 1)


def test_images_without_pixels_give_zeros(backend):
    y = align(backend, np.zeros((1, 2, 0, 3), np.float32), np.ones((2, 4), np.float32),
              np.zeros(2, np.int64), output_height=2)
    assert y.shape == (2, 2, 2, 1) and not y.any()


@pytest.mark.parametrize(("kw", "error", "words"), [
    ({"rois": np.zeros((2, 5), np.float32)}, ValueError, ["rois", "(num_rois, 4)"]),
    ({"rois": np.zeros(4, np.float32)}, ValueError, ["rois"]),
    ({"batch": np.zeros(3, np.int64)}, ValueError, ["batch_indices", "(2,)"]),
    ({"batch": np.zeros(2, np.int32)}, TypeError, ["batch_indices", "int64"]),
    ({"batch": np.array([0, 2])}, ValueError, ["batch_indices", "2", "region 1", "[0, 2)"]),
    ({"batch": np.array([-1, 0])}, ValueError, ["batch_indices", "-1", "region 0"]),
    ({"rois": np.zeros((2, 4), np.float64)}, TypeError, ["rois", "float32"]),
    ({"output_height": -2}, ValueError, ["output_height", ">= 0", "-2"]),
    ({"output_width": -1}, ValueError, ["output_width", ">= 0"]),
    ({"output_width": 2.0}, TypeError, ["output_width"]),
    ({"sampling_ratio": -1}, ValueError, ["sampling_ratio", "-1"]),
    ({"mode": "sum"}, ValueError, ["mode", "'sum'", "opset 22"]),
    ({"coordinate_transformation_mode": "asymmetric"}, ValueError,
     ["coordinate_transformation_mode", "asymmetric"]),
    ({"coordinate_transformation_mode": "half_pixel", "opset": 10}, ValueError,
     ["coordinate_transformation_mode", "opset 10", "RoiAlign-16"]),
    ({"x": np.zeros((2, 1, 4), np.float32)}, ValueError, ["rank 4"]),
    ({"x": np.zeros((2, 1, 4, 4), np.int32), "rois": np.zeros((2, 4), np.int32)}, TypeError,
     ["int32"]),
    ({"x": np.zeros((2, 1, 4, 4), "bfloat16"), "rois": np.zeros((2, 4), "bfloat16"),
      "opset": 16}, TypeError, ["bfloat16", "opset >= 22"]),
    ({"opset": 9}, ValueError, ["opset 9"]),
], ids=lambda v: None)
def test_align_bad_input(kw, error, words):
    import ml_dtypes  # noqa: F401  (the "bfloat16" dtype name)

    args = {"x": np.zeros((2, 1, 4, 4), np.float32), "rois": np.zeros((2, 4), np.float32),
            "batch": np.zeros(2, np.int64), **kw}
    x, rois, batch = args.pop("x"), args.pop("rois"), args.pop("batch")
    with pytest.raises(error) as info:
        oc.roi_align(x, rois, batch, **args)
    assert all(w in str(info.value) for w in [*words, "RoiAlign"]), info.value


@pytest.mark.parametrize(("kw", "error", "words"), [
    ({"rois": np.zeros((2, 4), np.float32)}, ValueError, ["rois", "(num_rois, 5)"]),
    ({"rois": np.array([[2, 0, 0, 1, 1]], np.float32)}, ValueError, ["batch_index", "2.0",
                                                                     "[0, 2)"]),
    ({"rois": np.array([[np.nan, 0, 0, 1, 1]], np.float32)}, ValueError, ["batch_index"]),
    ({"rois": np.array([[-1, 0, 0, 1, 1]], np.float32)}, ValueError, ["batch_index", "-1"]),
    ({"pooled_shape": None}, ValueError, ["pooled_shape", "required"]),
    ({"pooled_shape": [2]}, ValueError, ["pooled_shape", "expected 2"]),
    ({"pooled_shape": [2, -1]}, ValueError, ["pooled_shape", ">= 1"]),
    ({"spatial_scale": "1"}, TypeError, ["spatial_scale"]),
], ids=lambda v: None)
def test_pool_bad_input(kw, error, words):
    args = {"x": np.zeros((2, 1, 4, 4), np.float32), "rois": np.zeros((1, 5), np.float32),
            "pooled_shape": [2, 2], **kw}
    x, rois = args.pop("x"), args.pop("rois")
    with pytest.raises(error) as info:
        oc.max_roi_pool(x, rois, **args)
    assert all(w in str(info.value) for w in [*words, "MaxRoiPool"]), info.value


def test_a_batch_index_is_checked_at_every_call(cpu_backend):
    """The plan is kept for a repeated call; the indices are data, checked each time."""
    boxes = np.ones((1, 4), np.float32)
    align(cpu_backend, X, boxes, np.array([0]))
    with pytest.raises(ValueError, match="batch_indices"):
        align(cpu_backend, X, boxes, np.array([1]))


def test_out_strided_inputs_and_inputs_kept(backend, rng):
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    boxes = rng.uniform(-1, 9, (5, 8)).astype(np.float32)[:, ::2]   # not contiguous
    batch = np.array([0, 1, 1, 0, 1, 0, 1, 0, 1, 0])[::2]
    xs = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    kept = x.copy(), boxes.copy()
    kw = {"output_height": 3, "output_width": 2, "sampling_ratio": 2}
    expected = align("numpy", x, np.ascontiguousarray(boxes), np.ascontiguousarray(batch), **kw)
    assert np.array_equal(align(backend, xs, boxes, batch, **kw), expected)
    assert np.array_equal(x, kept[0]) and np.array_equal(boxes, kept[1])
    with oc.backend(backend):
        out = to_backend(np.empty((5, 3, 3, 2), np.float32), backend)
        y = oc.roi_align(to_backend(x, backend), to_backend(boxes, backend),
                         to_backend(batch, backend), out=out, **kw)
        assert y is out and np.array_equal(to_numpy(out), expected)
        with pytest.raises(ValueError, match="shape"):
            oc.roi_align(to_backend(x, backend), to_backend(boxes, backend),
                         to_backend(batch, backend), out=to_backend(np.empty((5, 3, 2, 2),
                                                                          np.float32), backend))


def test_rois_of_another_array_type():
    with pytest.raises(TypeError, match="'rois' must be a numpy.ndarray"):
        oc.roi_align(X, [[0, 0, 1, 1]], np.array([0]))


def test_the_cupy_path_on_the_stand_in(request, rng):
    """The CuPy path's host code on the stand-in cupy (which records launches, runs none): one
    launch of the dtype's instantiation on the inputs' device, an output of Y's shape there;
    a strided X is copied into the workspace first."""
    fake = fake_cupy.install(request)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float16)
    boxes = rng.uniform(-1, 9, (4, 4)).astype(np.float16)
    batch = np.array([0, 1, 1, 0])
    rois = np.concatenate([batch[:, None], boxes, boxes], axis=1).astype(np.float16)
    kw = {"output_height": 2, "output_width": 3, "mode": "max"}
    expected = oc.roi_align(x, boxes, batch, **kw)
    with fake.cuda.Device(1):
        xd, bd, id_, rd = (fake.asarray(a) for a in (x, boxes, batch, rois))
    for current in (0, 1):
        with fake.cuda.Device(current):
            since = len(fake.launches)
            y = oc.roi_align(xd, bd, id_, **kw)
        assert type(y) is fake.ndarray and y.device.id == 1
        assert y.shape == expected.shape and y.dtype == expected.dtype
        (launch,) = fake.launches[since:]
        assert launch.expression == "roi_align<oc::half_t, int, true>" and launch.device == 1
    since = len(fake.launches)
    y = oc.max_roi_pool(xd, rd[:, ::2], pooled_shape=[3, 2])   # strided rois: copied
    assert y.shape == (4, 3, 3, 2) and y.device.id == 1
    assert [k.expression for k in fake.launches[since:]] == [
        "elementwise copy", "max_roi_pool<oc::half_t, int>"]


def test_values_equal_to_valid_ones_are_judged_as_themselves():
    """A bool or float where an int belongs is refused even after the valid call was planned
    (plans are cached by type); an opset given as a NumPy integer is an opset."""
    boxes, batch = np.ones((1, 4), np.float32), np.array([0])
    oc.roi_align(X, boxes, batch, output_height=1, sampling_ratio=1, spatial_scale=1.0)
    oc.max_roi_pool(X, np.array([[0, 0, 0, 1, 1]], np.float32), pooled_shape=[1, 1])
    for kw, name in (({"output_height": True}, "output_height"),
                     ({"sampling_ratio": 1.0}, "sampling_ratio"),
                     ({"spatial_scale": True}, "spatial_scale")):
        with pytest.raises(TypeError, match=name):
            oc.roi_align(X, boxes, batch, **kw)
    with pytest.raises(TypeError, match="pooled_shape"):
        oc.max_roi_pool(X, np.array([[0, 0, 0, 1, 1]], np.float32), pooled_shape=[1.0, 1])
    y = oc.roi_align(X, boxes, batch, opset=np.int64(16))
    assert np.array_equal(y, oc.roi_align(X, boxes, batch, opset=16))


@pytest.mark.parametrize("mode", ["avg", "max", "pool"])
def test_long_long_offsets(index_width, rng, launches, mode):
    """The instantiations with 64-bit offsets (taken where X, rois or Y pass 2^31 elements),
    forced here on small inputs: the NumPy path's values bit for bit."""
    x = rng.standard_normal((2, 3, 9, 7)).astype(np.float32)
    boxes = rng.uniform(-2, 10, (5, 4)).astype(np.float32)
    batch = rng.integers(0, 2, 5)
    rois = np.concatenate([batch[:, None], boxes], axis=1).astype(np.float32)

    def call():
        if mode == "pool":
            return oc.max_roi_pool(x, rois, pooled_shape=[3, 2])
        return oc.roi_align(x, boxes, batch, mode=mode, output_height=3, output_width=2)

    expected = call()
    index_width(64)
    with oc.backend("emulated"):
        got = call()
    assert [k.index_bits for k, _ in launches] == [64]
    assert got.tobytes() == expected.tobytes()
