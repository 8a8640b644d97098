"""onnx_cupy.ops (torchvision.ops' roi_align and roi_pool): torchvision's recorded results
(tests/data/torchvision, helpers/torchvision_cases.py) on every path, torchvision itself on
fresh configurations where it is importable, PyTorch tensors in and out (a stand-in tensor
that speaks DLPack), both forms of boxes, and bad arguments."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_torch
from helpers import torchvision_cases as recorded
from helpers.util import to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy import ops

LOADED = recorded.load()
# torch.testing.assert_close's defaults
TOLERANCE = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def run(backend, case, x, rois):
    """onnx_cupy.ops' function of `case` on `backend`, the boxes in the case's form."""
    args, keywords = recorded.arguments(case)
    xb, rb = to_backend(x, backend), to_backend(rois, backend)
    boxes = recorded.boxes_of(case, rb, lambda rows: rb[rows, 1:])
    with oc.backend(backend):
        return to_numpy(getattr(ops, case["function"])(xb, boxes, *args, **keywords))


def check(case, got, expected):
    rtol, atol = TOLERANCE[case["dtype"]]
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


CASES = [] if LOADED is None else LOADED[0]["cases"]


@pytest.mark.skipif(LOADED is None, reason="torchvision's recorded results are absent")
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"case{c['id']}-{c['function']}")
def test_recorded(case, backend):
    """torchvision's result within assert_close's defaults, on the recorded inputs."""
    arrays = LOADED[1]
    name = f"case{case['id']}"
    x, rois, y = arrays[f"{name}_x"], arrays[f"{name}_rois"], arrays[f"{name}_y"]
    check(case, run(backend, case, x, rois), y)


def test_the_recording_is_of_the_configurations():
    """The recording holds every configuration of helpers/torchvision_cases.py, and both
    functions, dtypes, box forms, `aligned` values and sampling ratios."""
    if LOADED is None:
        pytest.skip("torchvision's recorded results are absent")
    listing, arrays = LOADED
    drawn = recorded.configurations()
    assert [{k: v for k, v in c.items() if k != "y_shape"} for c in listing["cases"]] == drawn
    for case in drawn:
        x, rois = recorded.inputs(case)
        assert np.array_equal(arrays[f"case{case['id']}_x"], x)
        assert np.array_equal(arrays[f"case{case['id']}_rois"], rois)
    assert {(c["function"], c["dtype"], c["as_list"]) for c in drawn} == {
        (f, d, a) for f in ("roi_align", "roi_pool") for d in ("float32", "float64")
        for a in (False, True)}
    assert {(c["aligned"], c["sampling_ratio"]) for c in drawn if "aligned" in c} >= {
        (a, r) for a in (False, True) for r in (-1, 0, 2)}


@pytest.mark.parametrize("case", recorded.configurations()[:24],
                         ids=lambda c: f"case{c['id']}-{c['function']}")
def test_torchvision_itself(case, cpu_backend):
    """Where torchvision is importable: its result on the configuration, computed now."""
    torch = pytest.importorskip("torch")
    tv_ops = pytest.importorskip("torchvision.ops")
    x, rois = recorded.inputs(case)
    t = torch.from_numpy(rois)
    args, keywords = recorded.arguments(case)
    expected = getattr(tv_ops, case["function"])(
        torch.from_numpy(x), recorded.boxes_of(case, t, lambda rows: t[torch.from_numpy(rows),
                                                                          1:]),
        *args, **keywords).numpy()
    check(case, run(cpu_backend, case, x, rois), expected)


def test_tensors_in_and_out(rng):
    """A tensor input and tensor boxes give a tensor of the input's kind, the values of
    arrays; bfloat16 crosses as its bits; a tensor requiring grad is refused."""
    x = rng.standard_normal((2, 3, 7, 6)).astype(np.float32)
    boxes = np.array([[0, 1, 1, 5, 4], [1, 0, 2, 3, 6]], np.float32)
    for fn, kw in ((ops.roi_align, {"sampling_ratio": 2}), (ops.roi_pool, {})):
        want = fn(x, boxes, (2, 3), **kw)
        got = fn(fake_torch.Tensor(x.copy()), fake_torch.Tensor(boxes.copy()), (2, 3), **kw)
        assert type(got) is fake_torch.Tensor and np.array_equal(got.data, want)
        listed = fn(fake_torch.Tensor(x.copy()), [fake_torch.Tensor(boxes[:1, 1:].copy()),
                                                  fake_torch.Tensor(boxes[1:, 1:].copy())],
                    (2, 3), **kw)
        assert np.array_equal(listed.data, want)
    b16 = x.astype(fake_torch.bfloat16)
    got = ops.roi_align(fake_torch.Tensor(b16), fake_torch.Tensor(boxes.astype(b16.dtype)), 2)
    assert got.dtype == fake_torch.bfloat16
    with pytest.raises(TypeError, match="requires grad"):
        ops.roi_pool(fake_torch.Tensor(x, requires_grad=True), boxes, 2)


def test_boxes_forms_agree(backend, rng):
    """A (K, 5) array and per-image lists (empty ones too) give the same result; the index
    column is truncated, as torchvision casts it."""
    x = rng.standard_normal((3, 2, 8, 9))
    per_image = [rng.uniform(0, 8, (2, 4)), np.zeros((0, 4)), rng.uniform(0, 8, (1, 4))]
    full = np.concatenate([np.array([[0.0], [0.7], [2.2]]), np.concatenate(per_image)], axis=1)
    for fn in (ops.roi_align, ops.roi_pool):
        with oc.backend(backend):
            a = to_numpy(fn(to_backend(x, backend), to_backend(full, backend), 3))
            b = to_numpy(fn(to_backend(x, backend), [to_backend(p, backend) for p in per_image],
                            3))
        assert a.shape == (3, 2, 3, 3) and np.array_equal(a, b)


def test_aligned_is_onnx_half_pixel():
    """aligned=True is ONNX's half_pixel, False output_half_pixel; sampling_ratio -1 is 0."""
    x = np.arange(30, dtype=np.float32).reshape(1, 1, 5, 6)
    box = np.array([[0, 0.5, 1, 3.5, 4]], np.float32)
    for aligned, mode in ((True, "half_pixel"), (False, "output_half_pixel")):
        assert np.array_equal(
            ops.roi_align(x, box, (2, 3), aligned=aligned),
            oc.roi_align(x, box[:, 1:], np.array([0]), output_height=2, output_width=3,
                         coordinate_transformation_mode=mode))


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda x: ops.roi_align(x, np.zeros((2, 4), np.float32), 2), ValueError, r"\(K, 5\)"),
    (lambda x: ops.roi_pool(x, [np.zeros((2, 5), np.float32)], 2), ValueError, r"\(L, 4\)"),
    (lambda x: ops.roi_align(x, np.zeros((1, 5), np.float32), (2, 2, 2)), ValueError,
     "output_size"),
    (lambda x: ops.roi_align(x, np.array([[3, 0, 0, 1, 1]], np.float32), 2), ValueError,
     "outside the batch"),
    (lambda x: ops.roi_align(x, np.zeros((1, 5), np.float32), 2, aligned=1), TypeError,
     "aligned"),
    (lambda x: ops.roi_pool(x, np.zeros((1, 5), np.float32), 0), ValueError, "pooled_shape"),
], ids=["align-shape", "pool-list-shape", "size", "batch", "aligned", "pool-size"])
def test_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call(np.zeros((2, 1, 4, 4), np.float32))
