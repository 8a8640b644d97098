"""Bad Resize inputs: a ValueError or TypeError that names the input or attribute, the value and,
for version questions, the opset; raised before anything is allocated or launched."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import forbid_work

from onnx_cupy import resize
from onnx_cupy.core import execution
from onnx_cupy.resize import plan as resize_op

X4 = np.ones((1, 2, 3, 4), dtype=np.float32)
S4 = np.array([1, 1, 2, 2], dtype=np.float32)

def case(name: str, exc: type, pattern: str, **kwargs):
    """resize(X4, **kwargs) raises `exc` matching `pattern`."""
    return pytest.param(kwargs, exc, pattern, id=name)


CASES = [
    # scales, sizes, roi
    case("scales_and_sizes", ValueError, "exactly one of the inputs 'scales' and 'sizes'.*got both",
         scales=S4, sizes=[1, 2, 6, 8]),
    case("neither", ValueError, "exactly one of the inputs 'scales' and 'sizes'.*got neither"),
    case("both_empty", ValueError, "got neither", scales=[], sizes=np.zeros(0, np.int64)),
    case("scale_zero", ValueError,
         r"'scales' values must be finite and > 0, got \[1.0, 1.0, 0.0, 2.0\]",
         scales=[1, 1, 0, 2]),
    case("scale_negative", ValueError, "'scales' values must be finite and > 0",
         scales=[1, 1, -2, 2]),
    case("scale_inf", ValueError, "'scales' values must be finite", scales=[1, 1, np.inf, 2]),
    case("scale_overflows_float32", ValueError, "'scales' values must be finite",
         scales=[1, 1, 1e39, 2]),
    case("scales_length", ValueError, r"'scales' has 3 values, expected 4 \(the rank of X\)",
         scales=[1, 2, 2]),
    case("sizes_length", ValueError, r"'sizes' has 5 values, expected 4 \(the rank of X\)",
         sizes=[1, 2, 6, 8, 1]),
    case("sizes_vs_axes", ValueError, r"expected 2 \(the length of 'axes'\)", sizes=[6, 8, 1],
         axes=[2, 3]),
    case("size_negative", ValueError, r"'sizes' values must be >= 0, got \[1, 2, -6, 8\]",
         sizes=[1, 2, -6, 8]),
    case("sizes_float", TypeError, r"'sizes' must hold integers \(int64\), got dtype float64",
         sizes=[1.0, 2.0, 6.0, 8.0]),
    case("sizes_bool", TypeError, "'sizes' must hold integers", sizes=np.ones(4, bool)),
    case("scales_strings", TypeError, "'scales' must hold real numbers, got dtype <U1",
         scales=["1", "1", "2", "2"]),
    case("scales_none_value", TypeError, "'scales' must hold real numbers, got dtype object",
         scales=[1, 1, None, 2]),
    case("scales_2d", ValueError, r"'scales' must be 1-D, got shape \(2, 2\)",
         scales=S4.reshape(2, 2)),
    case("scales_scalar", ValueError, r"'scales' must be 1-D, got shape \(\)", scales=2.0),
    case("roi_length", ValueError, r"'roi' has 3 values, expected 8 \(twice the rank of X\)",
         scales=S4, roi=[0, 0, 1]),
    case("roi_vs_axes", ValueError,
         r"'roi' has 6 values, expected 4 \(twice the length of 'axes'\)", sizes=[6, 8],
         axes=[2, 3], roi=[0, 0, 0, 1, 1, 1]),
    case("roi_nan", ValueError, "'roi' values must be finite", scales=S4,
         roi=[0, 0, 0, 0, 1, 1, np.nan, 1]),
    case("output_too_large", ValueError, r"output shape \(1, 2, 3, 4000000080163509370880\) has "
         r"more than 2\^62 elements", scales=[1, 1, 1, 1e21]),
    # axes
    case("axes_repeat", ValueError, r"'axes' = \[2, -2\] repeats an axis", scales=[2, 2],
         axes=[2, -2]),
    case("axes_range", ValueError, r"'axes' = \[2, 4\] has values out of range \[-4, 3\]",
         scales=[2, 2], axes=[2, 4]),
    case("axes_float", TypeError, "'axes' must be a sequence of ints", scales=[2, 2],
         axes=[2, 3.0]),
    case("axes_string", TypeError, "'axes' must be a sequence of ints", scales=[2, 2], axes="23"),
    # attribute values
    case("mode_bilinear", ValueError, r"Resize: attribute 'mode' = 'bilinear' is defined by no "
         r"version of Resize \(expected one of nearest, linear, cubic\) at opset 19, where "
         r"Resize-19 is in force; PyTorch's 'bilinear' is mode 'linear' \(on two axes\)$",
         scales=S4, mode="bilinear"),
    case("mode_bicubic", ValueError, r"'mode' = 'bicubic' is defined by no version of Resize "
         r"\(expected one of nearest, linear\) at opset 10, .*; PyTorch's 'bicubic' is mode "
         r"'cubic'$", scales=S4, mode="bicubic", opset=10),
    case("mode_trilinear", ValueError, r"'trilinear' is defined by no .*; PyTorch's 'trilinear' "
         r"is mode 'linear' \(on three axes\)$", scales=S4, mode="trilinear"),
    case("mode_nearest_exact", ValueError, r"'nearest-exact' is defined by no .*; PyTorch's "
         r"'nearest-exact' is mode 'nearest' with coordinate_transformation_mode 'half_pixel' and "
         r"nearest_mode 'round_prefer_ceil'$", scales=S4, mode="nearest-exact"),
    case("mode_area", ValueError, r"'area' is defined by no .*has no Resize mode$", scales=S4,
         mode="area"),
    case("mode_unknown", ValueError, r"'mode' = 'lanczos' is defined by no version of Resize "
         r"\(expected one of nearest, linear, cubic\) at opset 19, where Resize-19 is in force$",
         scales=S4, mode="lanczos"),
    case("mode_bytes", TypeError, "'mode' must be a string", scales=S4, mode=b"linear"),
    case("cubic_at_10", ValueError,
         "'mode' = 'cubic' is not defined at opset .*-10 is in force.*came with Resize-11",
         scales=S4, mode="cubic", opset=10),
    case("ctm_unknown", ValueError,
         "'coordinate_transformation_mode' = 'corners' is defined by no version of Resize "
         r"\(expected one of .*\) at opset 19, where Resize-19 is in force$",
         scales=S4, coordinate_transformation_mode="corners"),
    case("tf_half_pixel_for_nn_at_13", ValueError,
         r"'tf_half_pixel_for_nn' is not defined at opset .*-13 is in force.*only up to Resize-11 "
         r"\(removed in opset 13\)", scales=S4, opset=13,
         coordinate_transformation_mode="tf_half_pixel_for_nn"),
    case("half_pixel_symmetric_at_18", ValueError,
         "'half_pixel_symmetric' is not defined at opset .*-18 is in force.*came with Resize-19",
         scales=S4, opset=18, coordinate_transformation_mode="half_pixel_symmetric"),
    case("nearest_mode_unknown", ValueError, "'nearest_mode' = 'round' is defined by no", scales=S4,
         nearest_mode="round"),
    case("policy_unknown", ValueError, "'keep_aspect_ratio_policy' = 'fit' is defined by no",
         sizes=[1, 2, 6, 8], keep_aspect_ratio_policy="fit"),
    case("antialias_nearest", ValueError,
         "'antialias' = 1 applies to modes 'linear' and 'cubic', not to mode 'nearest'", scales=S4,
         antialias=1),
    case("antialias_2", ValueError, "'antialias' must be 0 or 1, got 2", scales=S4, mode="linear",
         antialias=2),
    case("exclude_outside_negative", ValueError, "'exclude_outside' must be 0 or 1, got -1",
         scales=S4, mode="cubic", exclude_outside=-1),
    case("cubic_coeff_a_string", TypeError, "'cubic_coeff_a' must be a float, got 'a'", scales=S4,
         mode="cubic", cubic_coeff_a="a"),
    case("cubic_coeff_a_inf", ValueError, "'cubic_coeff_a' must be finite", scales=S4,
         mode="cubic", cubic_coeff_a=float("inf")),
    case("extrapolation_value_none", TypeError, "'extrapolation_value' must be a float", scales=S4,
         extrapolation_value=None),
    # attributes and inputs outside the opset
    case("antialias_at_13", ValueError,
         "'antialias' is not defined at opset .*-13 is in force; .* came with .*-18",
         scales=S4, mode="linear", antialias=1, opset=13),
    case("axes_at_17", ValueError,
         "'axes' is not defined at opset .*-13 is in force; .* came with .*-18",
         scales=[2, 2], axes=[2, 3], opset=17),
    case("policy_at_13", ValueError,
         "'keep_aspect_ratio_policy' is not defined at opset .*-13 is in force", sizes=[1, 2, 6, 8],
         keep_aspect_ratio_policy="not_larger", opset=13),
    case("ctm_at_10", ValueError, "'coordinate_transformation_mode' is not defined at opset "
         "10, where Resize-10 is in force; coordinate_transformation_mode came with Resize-11",
         scales=S4, opset=10,
         coordinate_transformation_mode="asymmetric"),
    case("exclude_outside_at_10", ValueError,
         "'exclude_outside' is not defined at opset .*-10 is in force", scales=S4,
         exclude_outside=1, opset=10),
    case("nearest_mode_at_10", ValueError,
         "'nearest_mode' is not defined at opset .*-10 is in force", scales=S4,
         nearest_mode="floor", opset=10),
    case("sizes_at_10", ValueError,
         r"input 'sizes' is not defined at opset .*-10 is in force "
         r"\(Resize-10 takes X and scales\)", sizes=[1, 2, 6, 8], opset=10),
    case("roi_at_10", ValueError, "input 'roi' is not defined at opset .*-10 is in force",
         scales=S4, roi=[], opset=10),
    case("opset_9", ValueError, "opset 9 is outside the supported range 10..28", scales=S4,
         opset=9),
    case("opset_string", TypeError, "opset must be an int", scales=S4, opset="19"),
]


@pytest.fixture
def no_work(monkeypatch):
    """Fails a test whose call passes its checks (helpers.util.forbid_work)."""
    forbid_work(monkeypatch)


@pytest.mark.parametrize("kwargs,exc,match", CASES)
def test_bad_inputs_and_attributes(cpu_backend, no_work, kwargs, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        resize(X4, **kwargs)


BAD_X = [
    pytest.param([[1.0, 2.0]], {"scales": [2, 2]}, TypeError,
                 "X must be a numpy.ndarray, a cupy.ndarray or an array exposing "
                 "__cuda_array_interface__ or DLPack, got builtins.list", id="list"),
    pytest.param(np.float32(1), {"scales": [2]}, TypeError,
                 "X must be a numpy.ndarray, a cupy.ndarray or an array exposing",
                 id="numpy_scalar"),
    pytest.param(np.array(1.0), {"scales": []}, ValueError, "X must have rank >= 1", id="rank_0"),
    pytest.param(np.zeros(3, "datetime64[s]"), {"scales": [2]}, TypeError,
                 "input dtype datetime64.* is not supported", id="datetime"),
    pytest.param(np.zeros(3, ml_dtypes.float8_e4m3fn), {"scales": [2]}, TypeError,
                 "input dtype float8_e4m3fn is not supported", id="float8"),
    pytest.param(np.zeros(3, ml_dtypes.bfloat16), {"scales": [2], "opset": 11}, TypeError,
                 r"bfloat16 requires opset >= 13 \(it came with Resize-13\); Resize-11 takes "
                 r"float16, .*, complex128, string in mode 'nearest'$", id="bfloat16_at_11"),
    pytest.param(np.zeros(3, bool), {"scales": [2], "mode": "linear"}, TypeError,
                 r"input dtype bool is not supported in mode 'linear'; Resize-19 takes float16, "
                 r"float32, float64, int8, .*, uint64, bfloat16 in mode 'linear'$",
                 id="linear_bool"),
    pytest.param(np.zeros(3, np.complex64), {"scales": [2], "mode": "cubic"}, TypeError,
                 "dtype complex64 is not supported in mode 'cubic'", id="cubic_complex"),
    pytest.param(np.array(["a", "b"], object), {"scales": [2], "mode": "linear"}, TypeError,
                 "dtype object is not supported in mode 'linear'", id="linear_string"),
    pytest.param(np.array(["a", "b"], object),
                 {"sizes": [3], "roi": [-1, 1], "coordinate_transformation_mode":
                  "tf_crop_and_resize"}, TypeError,
                 "extrapolates outside the roi, which has no value for input dtype object",
                 id="string_extrapolation"),
    pytest.param(np.zeros((2, 0)), {"sizes": [2, 3]}, ValueError,
                 "axis 1 of X is empty and cannot be resized to length 3", id="empty_axis"),
    pytest.param(np.zeros((2, 0)), {"sizes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
                 ValueError, r"'not_larger' needs non-empty resized axes, got lengths \[2, 0\]",
                 id="policy_empty_axis"),
    pytest.param(np.empty((2, 3) * 8 + (2,), np.int8), {"scales": [2, 1] * 8 + [2]}, ValueError,
                 "17 dimensions remain after merging adjacent unresized axes; at most 16",
                 id="too_many_dims"),
]


@pytest.mark.parametrize("x,kwargs,exc,match", BAD_X)
def test_bad_x(cpu_backend, no_work, x, kwargs, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        resize(x, **kwargs)


def test_string_input_on_kernel_path(no_work):
    """Strings have no kernel: the dispatch refuses them on the emulated (and CuPy) path."""
    with execution.backend("emulated"), pytest.raises(
            TypeError, match="string tensors run on the NumPy backend only \\(got dtype <U2 on "
                             "backend 'emulated'\\)"):
        resize(np.array(["ab", "c"]), scales=[2])


def test_forced_cupy_backend_on_numpy_input(no_work):
    """The cupy backend forced where it can run (the stand-in cupy) takes no NumPy array."""
    with StandIn().installed(), execution.backend("cupy"), pytest.raises(
            TypeError, match="backend 'cupy' needs a cupy.ndarray input"):
        resize(X4, scales=S4)


@pytest.mark.parametrize("out,exc,match", [
    (np.empty((1, 2, 6, 8), np.float64), TypeError, "out has dtype float64, expected float32"),
    (np.empty((1, 2, 6, 7), np.float32), ValueError,
     r"out has shape \(1, 2, 6, 7\), expected \(1, 2, 6, 8\)"),
    (np.empty((1, 2, 8, 6), np.float32).transpose(0, 1, 3, 2), ValueError,
     "out must be C-contiguous"),
    ([0.0], TypeError, "out must be a ndarray like X"),
])
def test_bad_out(cpu_backend, launches, out, exc, match):
    with execution.backend(cpu_backend), pytest.raises(exc, match=match):
        resize(X4, scales=S4, out=out)
    assert launches == []


def test_out_overlapping_x(cpu_backend):
    buf = np.zeros(64, np.float32)
    with execution.backend(cpu_backend), pytest.raises(ValueError, match="out overlaps the input"):
        resize(buf[:8].reshape(2, 4), scales=[2, 2], out=buf[:32].reshape(4, 8))


def test_attribute_types_checked_on_every_version():
    for opset in resize_op.VERSIONS:
        with pytest.raises(TypeError, match="'mode' must be a string"):
            resize(X4, scales=S4, mode=1, opset=opset)


XS = np.ones((1, 1, 4, 4), np.float32)


@pytest.mark.parametrize("kwargs, pattern", [
    pytest.param({"sizes": np.array([1, 1, 10**6, 10**6])},
                 r"Resize: the output would have the shape \(1, 1, 1000000, 1000000\) \(from X "
                 r"of shape \(1, 1, 4, 4\) and input 'sizes' = \[1, 1, 1000000, 1000000\]\): "
                 r"1000000000000 elements, 4000000000000 bytes", id="sizes_10_6"),
    pytest.param({"scales": np.array([1, 1, 1e6, 1e6], np.float32)},
                 r"\(from X of shape \(1, 1, 4, 4\) and input 'scales' = \[1.0, 1.0, 1000000.0, "
                 r"1000000.0\]\): 16000000000000 elements", id="scales_10_6"),
    pytest.param({"sizes": np.array([1, 1, 2**62, 1])},
                 r"input 'sizes' = \[1, 1, 4611686018427387904, 1\]", id="sizes_2_62"),
    pytest.param({"sizes": np.array([1, 1, 2**62, 2])},
                 r"output shape \(1, 1, 4611686018427387904, 2\) has more than 2\^62 elements",
                 id="sizes_past_2_62"),
])
def test_outputs_past_memory(cpu_backend, no_work, kwargs, pattern):
    """Sizes or scales of 10**6 per axis (the NumPy path ran on and on) or 2**62: a ValueError
    naming the input, the output's elements and bytes, before anything is allocated."""
    with execution.backend(cpu_backend), pytest.raises(ValueError, match=pattern):
        resize(XS, **kwargs)


def test_upsample_scales_past_memory(cpu_backend, no_work):
    from onnx_cupy import upsample

    with execution.backend(cpu_backend), pytest.raises(
            ValueError, match=r"Upsample: the output would have the shape \(1, 1, 4000000, "
                              r"4000000\)"):
        upsample(XS, np.array([1, 1, 1e6, 1e6], np.float32))
