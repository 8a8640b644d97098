"""onnx_cupy.upsample (Upsample 7, 9, 10): ONNX's node test, hand-computed results, the same bits
as Resize-10 (which it runs as) on every path, the scales attribute of Upsample-7 and input of
-9 and -10 in run_node, the Resize kernels it launches, and errors that name Upsample."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import node_tests
from helpers.util import BF16, random, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.resize import kernel as resize_kernel

X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)


def run(backend, x, scales, **kw):
    with oc.backend(backend):
        return to_numpy(oc.upsample(to_backend(x, backend), scales, **kw))


@pytest.mark.parametrize("name", node_tests.names("Upsample"))
def test_node_case(name, backend):
    node_tests.check_node_case("Upsample", name, backend)


def test_every_node_test_of_the_operator_runs():
    node_tests.check_every_node_test_runs("Upsample")


def test_nearest_and_linear_by_hand(backend):
    """x = y / s: nearest takes floor(x) (y = 0..4 at s = 2.5 -> 0, 0, 0, 1, 1), linear weighs
    floor(x) and the next element, the last clamped."""
    assert run(backend, X, [1.0, 2.5]).tolist() == [[1, 1, 1, 2, 2], [3, 3, 3, 4, 4]]
    assert run(backend, X, [2.0, 2.0], mode="linear").tolist() == [
        [1, 1.5, 2, 2], [2, 2.5, 3, 3], [3, 3.5, 4, 4], [3, 3.5, 4, 4]]


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "uint8", "int32", "int64"])
@pytest.mark.parametrize("shape, scales", [((7,), [2.5]), ((2, 3, 5, 4), [1, 1, 2, 1.5]),
                                           ((3, 2, 4, 3, 2), [1, 3, 1.25, 1, 2])],
                         ids=["1d", "nchw", "5d"])
def test_is_resize_10(shape, scales, dtype, mode, cpu_backend, rng):
    """Upsample computes exactly what Resize-10 computes with the same scales and mode."""
    x = (random(rng, shape, np.float64) * 40).astype(dtype)
    want = run(cpu_backend, x, np.float32(scales), mode=mode)
    with oc.backend(cpu_backend):
        resized = oc.resize(x, scales=np.float32(scales), mode=mode, opset=10)
    assert want.dtype == x.dtype and want.tobytes() == to_numpy(resized).tobytes()


def test_every_dtype_of_nearest_and_strings_on_numpy():
    for x in (X > 2, X.astype(np.complex64) * 1j, np.array([["a", "b"], ["c", "d"]])):
        y = oc.upsample(x, [2.0, 1.0])
        assert y.dtype == x.dtype and y.tolist() == np.repeat(x, 2, axis=0).tolist()


def test_run_node_takes_the_scales_attribute_at_7_and_the_input_from_9():
    at7 = onnx.helper.make_node("Upsample", ["X"], ["Y"], scales=[1.0, 2.0])
    at9 = onnx.helper.make_node("Upsample", ["X", "scales"], ["Y"], mode="linear")
    (y7,) = oc.run_node(at7, [X], opset=8)
    (y9,) = oc.run_node(at9, [X, np.float32([1, 2])], opset=9)
    assert y7.tolist() == [[1, 1, 2, 2], [3, 3, 4, 4]]
    assert y9.tolist() == [[1, 1.5, 2, 2], [3, 3.5, 4, 4]]
    with pytest.raises(ValueError, match=r"Upsample: attribute 'scales' is not defined at opset "
                                         r"9, where Upsample-9 is in force; from Upsample-9 on, "
                                         r"scales is an input"):
        oc.run_node(onnx.helper.make_node("Upsample", ["X", "s"], ["Y"], scales=[1.0, 2.0]),
                    [X, np.float32([1, 2])], opset=9)
    with pytest.raises(ValueError, match=r"run_node: Upsample at opset 7 takes 1 input"):
        oc.run_node(at7, [X, np.float32([1, 2])], opset=7)
    with pytest.raises(ValueError, match=r"run_node: Upsample at opset 10 takes 2 inputs"):
        oc.run_node(at9, [X], opset=10)


def test_it_launches_the_resize_kernels_registered_for_it(launches):
    with oc.backend("emulated"):
        oc.upsample(np.ones((1, 3, 8, 8), np.float32), np.float32([1, 1, 2, 2]))
        oc.upsample(np.ones((1, 3, 8, 8), np.float32), np.float32([1, 1, 2, 2]), mode="linear")
    kernels = [k for k, _ in launches]
    assert len(kernels) == 2 and all(k.family == resize_kernel.FAMILY for k in kernels)
    assert all("Upsample" in k.ops and k.fast for k in kernels)
    cubic = [k for (_, _, taps, _, _), k in resize_kernel.FAST.items() if taps == 4]
    assert cubic and all("Upsample" not in k.ops for k in cubic)


@pytest.mark.parametrize("kw, error, pattern", [
    ({"scales": [1.0, 0.5]}, ValueError, r"'scales' values must be finite and >= 1"),
    ({"scales": [1.0, np.nan]}, ValueError, r"'scales' values must be finite and >= 1"),
    ({"scales": [2.0]}, ValueError, r"'scales' has 1 values, expected 2 \(the rank of X\)"),
    ({"scales": None}, ValueError, r"'scales' is required"),
    ({"scales": [1.0, 2.0], "mode": "cubic"}, ValueError,
     r"attribute 'mode' must be one of 'nearest', 'linear', got 'cubic'; Upsample has no cubic"),
    ({"scales": [1.0, 2.0], "mode": "bilinear"}, ValueError, r"got 'bilinear'; 'linear' "),
    ({"scales": [1.0, 2.0], "mode": 1}, TypeError, r"attribute 'mode' must be a string"),
    ({"scales": [1.0, 2.0], "opset": 6}, ValueError, (r"opset 6 is outside the supported range "
                                                     r"7\.\.28")),
    ({"scales": [[1.0, 2.0]]}, ValueError, r"input 'scales' must be 1-D"),
], ids=["below_1", "nan", "length", "missing", "cubic", "bilinear", "mode_type", "opset",
        "scales_2d"])
def test_errors_name_upsample(kw, error, pattern, cpu_backend):
    with pytest.raises(error, match="Upsample: .*" + pattern), oc.backend(cpu_backend):
        oc.upsample(X, **kw)


@pytest.mark.parametrize("x, mode, pattern", [
    (X.astype(BF16), "nearest", (r"input dtype bfloat16 is not supported in mode 'nearest'; "
                                r"Upsample-10, in force at opset 10, takes float16")),
    (X.astype(np.complex64), "linear", (r"input dtype complex64 is not supported in mode "
                                       r"'linear'")),
    (np.array(1.0, np.float32), "nearest", r"X must have rank >= 1"),
], ids=["bfloat16", "complex_linear", "rank_0"])
def test_bad_inputs(x, mode, pattern):
    with pytest.raises((TypeError, ValueError), match="Upsample: " + pattern):
        oc.upsample(x, np.float32([1, 2])[:x.ndim], mode=mode)


def test_out_is_checked_in_upsample_s_name(cpu_backend):
    with pytest.raises(ValueError, match=r"Upsample: out has shape \(2, 2\), expected \(2, 4\)"), \
            oc.backend(cpu_backend):
        oc.upsample(X, [1.0, 2.0], out=np.empty((2, 2), np.float32))
