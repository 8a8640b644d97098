"""Resize and Upsample at photograph sizes against onnxruntime, the ONNX operators' peer: a
224 x 224 and a 345 x 456 input of 8-bit values 0-255 (helpers/photographs.py), shrunk and
enlarged, in every mode, coordinate transformation mode and antialias setting, float32 and
float16, judged at the dtype's default torch.testing.assert_close tolerance (float32: rtol
1.3e-6, atol 1e-5): at least 99.9 % of the elements within it, nearest bit for bit. The float32
tables follow onnxruntime's float32 arithmetic (onnx_cupy.resize.plan.single_table); with exact
float64 tables more than half of the elements missed. The 345 x 456 cases are slow."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.photographs import assert_mostly_close, photograph
from helpers.util import node_model, onnxruntime

import onnx_cupy
from onnx_cupy.core import execution

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SIZES = {"224": ((1, 3, 224, 224), ((160, 97), (301, 448))),
         "345x456": ((2, 3, 345, 456), ((270, 270), (500, 700)))}
MODES = {
    "nearest": {"mode": "nearest"},
    "nearest-ceil": {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                     "coordinate_transformation_mode": "asymmetric"},
    "linear": {"mode": "linear"},
    "linear-pytorch_half_pixel": {"mode": "linear",
                                  "coordinate_transformation_mode": "pytorch_half_pixel"},
    "linear-align_corners": {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
    "linear-asymmetric": {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
    "linear-half_pixel_symmetric": {"mode": "linear",
                                    "coordinate_transformation_mode": "half_pixel_symmetric"},
    "cubic": {"mode": "cubic"},
    "cubic-align_corners": {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
    "cubic-exclude_outside": {"mode": "cubic", "exclude_outside": 1, "cubic_coeff_a": -0.5},
    "linear-antialias": {"mode": "linear", "antialias": 1},
    "cubic-antialias": {"mode": "cubic", "antialias": 1},
    "cubic-antialias-pillow": {"mode": "cubic", "antialias": 1, "exclude_outside": 1,
                               "cubic_coeff_a": -0.5,
                               "coordinate_transformation_mode": "pytorch_half_pixel"},
}


def _ort_resize(x: np.ndarray, attrs: dict, sizes=None, scales=None) -> np.ndarray:
    name, value = ("sizes", np.array(sizes, np.int64)) if sizes is not None else \
        ("scales", np.array(scales, np.float32))
    inputs = [("X", x.dtype), ("", None), ("", None), (name, value.dtype)] if name == "sizes" \
        else [("X", x.dtype), ("", None), (name, value.dtype)]
    return onnxruntime(node_model("Resize", inputs, attrs, 19), {"X": x, name: value})[0]


def _cases():
    for size, (shape, targets) in SIZES.items():
        for target in targets:
            for mode in MODES:
                for dtype in ("float32", "float16"):
                    marks = [pytest.mark.slow] if size != "224" else []
                    yield pytest.param(shape, target, mode, dtype, marks=marks,
                                       id=f"{size}-to-{target[0]}x{target[1]}-{mode}-{dtype}")


@pytest.mark.parametrize("shape,target,mode,dtype", list(_cases()))
def test_resize_sizes_agree_with_onnxruntime(rng, shape, target, mode, dtype):
    x = photograph(rng, shape, dtype)
    sizes = (*shape[:2], *target)
    attrs = MODES[mode]
    expected = _ort_resize(x, attrs, sizes=sizes)
    with execution.backend("numpy"):
        got = onnx_cupy.resize(x, sizes=np.array(sizes, np.int64), opset=19, **attrs)
    if attrs["mode"] == "nearest":
        np.testing.assert_array_equal(got, expected)
    else:
        assert_mostly_close(got, expected)


@pytest.mark.parametrize("scales", [(1, 1, 0.6, 0.45), (1, 1, 1.7, 2.3)], ids=["shrink", "grow"])
@pytest.mark.parametrize("mode", ["linear", "cubic", "linear-antialias", "cubic-antialias"])
def test_resize_scales_agree_with_onnxruntime(rng, scales, mode):
    """Scales (the output lengths floor(n * s), coordinates from the float32 scale s)."""
    x = photograph(rng, (1, 3, 224, 224), np.float32)
    expected = _ort_resize(x, MODES[mode], scales=scales)
    with execution.backend("numpy"):
        got = onnx_cupy.resize(x, scales=np.array(scales, np.float32), opset=19, **MODES[mode])
    assert_mostly_close(got, expected)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["linear", "cubic", "linear-antialias", "cubic-antialias",
                                  "nearest"])
def test_kernels_agree_with_onnxruntime(rng, mode):
    """The emulated kernels read the same float32 tables as the NumPy path."""
    x = photograph(rng, (1, 3, 224, 224), np.float32)
    sizes = (1, 3, 160, 301)
    expected = _ort_resize(x, MODES[mode], sizes=sizes)
    with execution.backend("emulated"):
        got = onnx_cupy.resize(x, sizes=np.array(sizes, np.int64), opset=19, **MODES[mode])
    assert_mostly_close(got, expected, share=1.0 if MODES[mode]["mode"] == "nearest" else 0.999)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_upsample_agrees_with_onnxruntime(rng, dtype):
    """Upsample-9 (linear, asymmetric: Resize-10's float32 coordinates y / s); onnxruntime's
    Upsample-9 takes no float16: float16 against its float32 result, rounded."""
    x = photograph(rng, (1, 3, 224, 224), dtype)
    scales = np.array([1, 1, 1.5, 2.25], np.float32)
    model = node_model("Upsample", [("X", np.float32), ("scales", scales.dtype)],
                       {"mode": "linear"}, 9)
    expected = onnxruntime(model, {"X": x.astype(np.float32), "scales": scales})[0]
    expected = expected.astype(dtype)
    with execution.backend("numpy"):
        got = onnx_cupy.upsample(x, scales, mode="linear", opset=9)
    assert_mostly_close(got, expected)
