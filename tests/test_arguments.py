"""Wrong-typed arguments of every public function (the pools, Resize, Hardmax, run_node, the
PyTorch-style functions, Dask): a TypeError or ValueError that names the argument and the value,
raised before anything is cached, allocated or launched; a value equal to a valid one but of
another type (2.0, True) is judged as itself, not by the cache entry of its equal; and an opset
given as a NumPy integer is an opset."""
from __future__ import annotations

import functools
import re

import dask.array as da
import numpy as np
import onnx
import pytest

import onnx_cupy
import onnx_cupy.dask as ocd
from onnx_cupy.core import arrays, attributes, launcher
from onnx_cupy.hardmax import plan as hardmax_plan
from onnx_cupy.nn import functional as F
from onnx_cupy.pool import numpy as pool_numpy
from onnx_cupy.pool import numpy_global
from onnx_cupy.pool import plan as pool_plan
from onnx_cupy.resize import numpy as resize_numpy
from onnx_cupy.resize import plan as resize_plan

X = np.random.default_rng(11).uniform(-3, 3, (1, 2, 6, 5)).astype(np.float32)
CACHES = {"pool": pool_plan.plan, "global pool": pool_plan._global_plan,
          "hardmax": hardmax_plan.plan, "resize": resize_plan.plan}
NODE = onnx.helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2])
DEFAULTS = {  # the other arguments of a valid call
    onnx_cupy.average_pool: {"kernel_shape": [2, 2]}, onnx_cupy.lp_pool: {"kernel_shape": [2, 2]},
    onnx_cupy.max_pool: {"kernel_shape": [2, 2]}, onnx_cupy.resize: {"scales": [1, 1, 2, 2]},
    F.avg_pool2d: {"kernel_size": 2}, F.lp_pool2d: {"norm_type": 2, "kernel_size": 2},
    F.max_pool2d: {"kernel_size": 2}, F.interpolate: {"scale_factor": 2},
    ocd.average_pool: {"kernel_shape": [2, 2]},
}


def bad(fn, name, value, exc, *shown, x=X):
    """`fn`(x, name=value, other valid arguments) raises `exc` naming `name` and `shown` (by
    default the value's repr)."""
    label = f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}-{name}={value!r}"[:60]
    return pytest.param(fn, x, name, value, exc, shown or (repr(value),), id=label)


NESTED = [[2], [2]]
CASES = [
    # the pools: INTS, flags, strings, numbers, opsets
    bad(onnx_cupy.average_pool, "kernel_shape", NESTED, TypeError),
    bad(onnx_cupy.average_pool, "kernel_shape", np.array([[2, 2]]), TypeError),
    bad(onnx_cupy.average_pool, "strides", [[1], [1]], TypeError),
    bad(onnx_cupy.average_pool, "pads", [[0, 0], [0, 0]], TypeError),
    bad(onnx_cupy.average_pool, "dilations", ["1", "1"], TypeError),
    bad(onnx_cupy.average_pool, "kernel_shape", {"a": 2}, TypeError),
    bad(onnx_cupy.average_pool, "ceil_mode", [1], ValueError),
    bad(onnx_cupy.average_pool, "ceil_mode", np.array([[1, 0]]), ValueError, "array([[1, 0]])"),
    bad(onnx_cupy.average_pool, "count_include_pad", np.array([[1, 0]]), ValueError),
    bad(onnx_cupy.average_pool, "auto_pad", ["VALID"], ValueError),
    bad(onnx_cupy.average_pool, "opset", [22], TypeError),
    bad(onnx_cupy.average_pool, "opset", True, TypeError),
    bad(onnx_cupy.lp_pool, "p", [2], TypeError),
    bad(onnx_cupy.lp_pool, "p", {2}, TypeError),
    bad(onnx_cupy.max_pool, "storage_order", [1], ValueError),
    bad(onnx_cupy.max_pool, "storage_order", np.array([[1, 0]]), ValueError),
    bad(onnx_cupy.max_pool, "return_indices", "yes", TypeError),
    bad(onnx_cupy.max_pool, "opset", "12", TypeError),
    bad(onnx_cupy.global_lp_pool, "p", [2], TypeError),
    bad(onnx_cupy.global_lp_pool, "opset", [22], TypeError),
    bad(onnx_cupy.global_average_pool, "opset", {22: 1}, TypeError),
    bad(onnx_cupy.global_max_pool, "opset", 22.0, TypeError),
    # Hardmax
    bad(onnx_cupy.hardmax, "axis", [1], TypeError),
    bad(onnx_cupy.hardmax, "axis", 1.0, TypeError),
    bad(onnx_cupy.hardmax, "opset", [13], TypeError),
    bad(onnx_cupy.hardmax, "opset", None, TypeError),
    # Resize
    bad(onnx_cupy.resize, "mode", ["linear"], TypeError),
    bad(onnx_cupy.resize, "coordinate_transformation_mode", {"a": 1}, TypeError),
    bad(onnx_cupy.resize, "axes", [[0]], TypeError),
    bad(onnx_cupy.resize, "cubic_coeff_a", [-0.5], TypeError),
    bad(onnx_cupy.resize, "extrapolation_value", "0", TypeError),
    bad(onnx_cupy.resize, "antialias", [1], ValueError),
    bad(onnx_cupy.resize, "exclude_outside", np.array([[1, 0]]), ValueError),
    bad(onnx_cupy.resize, "scales", [[1, 1, 2, 2]], ValueError, "'scales'", "shape (1, 4)"),
    bad(onnx_cupy.resize, "scales", ["1", "1", "2", "2"], TypeError, "'scales'", "<U1"),
    bad(onnx_cupy.resize, "opset", [19], TypeError),
    # the PyTorch-style functions: PyTorch's argument types
    bad(F.avg_pool2d, "ceil_mode", "yes", TypeError),
    bad(F.avg_pool2d, "count_include_pad", 1, TypeError),
    bad(F.avg_pool2d, "divisor_override", 1.5, TypeError),
    bad(F.avg_pool2d, "divisor_override", [2], TypeError),
    bad(F.avg_pool2d, "stride", b"2", ValueError),
    bad(F.avg_pool2d, "kernel_size", NESTED, ValueError),
    bad(F.lp_pool2d, "ceil_mode", [1], TypeError),
    bad(F.lp_pool2d, "norm_type", [2], TypeError),
    bad(F.max_pool2d, "return_indices", 1, TypeError),
    bad(F.max_pool2d, "ceil_mode", np.array([[1, 0]]), TypeError),
    bad(F.max_pool2d, "dilation", [1.0, 1.0], ValueError),
    bad(F.interpolate, "mode", 1, TypeError),
    bad(F.interpolate, "mode", np.array([[1, 0]]), TypeError),
    bad(F.interpolate, "align_corners", 1, TypeError),
    bad(F.interpolate, "antialias", "no", TypeError),
    bad(F.interpolate, "recompute_scale_factor", [True], TypeError),
    bad(F.one_hot_argmax, "dim", 1.5, TypeError),
    bad(F.one_hot_argmax, "dim", True, TypeError),
    # Dask: the eager functions' errors when the graph is built
    bad(ocd.average_pool, "kernel_shape", NESTED, TypeError, x=da.from_array(X)),
    bad(ocd.global_lp_pool, "p", [2], TypeError, x=da.from_array(X)),
    bad(ocd.hardmax, "opset", [13], TypeError, x=da.from_array(X)),
]


@pytest.fixture
def nothing_done(monkeypatch):
    """Fail where an output is allocated, a kernel launched or a NumPy path run; after the test,
    no plan cache holds more than before."""
    def forbidden(*args, **kwargs):
        raise AssertionError("work done before validation failed")

    for module, name in ((arrays, "output"), (launcher, "launch"), (pool_numpy, "prepare"),
                         (numpy_global, "prepare_global"), (resize_numpy, "prepare")):
        monkeypatch.setattr(module, name, forbidden)
    sizes = {k: c.cache_info().currsize for k, c in CACHES.items()}
    yield
    assert {k: c.cache_info().currsize for k, c in CACHES.items()} == sizes


@pytest.mark.parametrize("fn, x, name, value, exc, shown", CASES)
def test_wrong_typed_argument(fn, x, name, value, exc, shown, cpu_backend, nothing_done):
    kwargs = {**DEFAULTS.get(fn, {}), name: value}
    with onnx_cupy.backend(cpu_backend), pytest.raises(exc) as info:
        fn(x, **kwargs)
    message = str(info.value)
    assert name in message and all(s in message for s in shown), message
    assert "unhashable" not in message and "truth value" not in message, message


@pytest.mark.parametrize("inputs, shown", [
    pytest.param(X, "ndarray", id="an-array"), pytest.param(5, "int", id="an-int"),
    pytest.param("X", "str", id="a-string"), pytest.param({"X": X}, "dict", id="a-dict")])
def test_run_node_inputs_must_be_a_list(inputs, shown, nothing_done):
    """A single array is no list of inputs (iterating it would run the node on its rows)."""
    with pytest.raises(TypeError, match=rf"run_node: inputs must be a list or tuple of arrays, "
                                        rf"one per input of the AveragePool node, got {shown}$"):
        onnx_cupy.run_node(NODE, inputs)


@pytest.mark.parametrize("node", ["AveragePool", None, NODE.attribute[0]],
                         ids=["a-string", "none", "an-attribute"])
def test_run_node_node_must_be_a_node(node, nothing_done):
    with pytest.raises(TypeError, match=r"run_node: node must be an onnx.NodeProto, got "):
        onnx_cupy.run_node(node, [X])


@pytest.mark.parametrize("opset", ["19", 19.0, [19]], ids=repr)
def test_run_node_opset_must_be_an_int(opset, nothing_done):
    with pytest.raises(TypeError, match=re.escape(f"AveragePool: opset must be an int, got "
                                                  f"{opset!r}")):
        onnx_cupy.run_node(NODE, [X], opset=opset)


EQUALS = [  # (function, valid keywords, the same keywords with a value equal to a valid one)
    pytest.param(onnx_cupy.average_pool, {"kernel_shape": [2, 2]}, {"kernel_shape": (2.0, 2)},
                 "'kernel_shape' must be a sequence of ints", id="kernel_shape-float"),
    pytest.param(onnx_cupy.average_pool, {"kernel_shape": [2, 2]},
                 {"kernel_shape": np.array([2.0, 2.0])},
                 "'kernel_shape' must be a sequence of ints", id="kernel_shape-float-array"),
    pytest.param(onnx_cupy.lp_pool, {"kernel_shape": [1, 1]}, {"kernel_shape": [True, True]},
                 "'kernel_shape' must be a sequence of ints", id="kernel_shape-bool"),
    pytest.param(onnx_cupy.max_pool, {"kernel_shape": [2, 1], "strides": [1, 1]},
                 {"kernel_shape": [2, 1], "strides": (1.0, 1.0)},
                 "'strides' must be a sequence of ints", id="strides-float"),
    pytest.param(onnx_cupy.hardmax, {"opset": 13}, {"opset": 13.0}, "opset must be an int",
                 id="hardmax-opset-float"),
    pytest.param(onnx_cupy.hardmax, {"opset": 1}, {"opset": True}, "opset must be an int",
                 id="hardmax-opset-bool"),
    pytest.param(onnx_cupy.global_lp_pool, {"opset": 22}, {"opset": 22.0},
                 "opset must be an int", id="global-opset-float"),
]


@pytest.mark.parametrize("fn, valid, equal, match", EQUALS)
def test_a_value_equal_to_a_valid_one_is_validated(fn, valid, equal, match, cpu_backend):
    """The plan caches would take 2.0 for 2 and True for 1: the value is validated first."""
    with onnx_cupy.backend(cpu_backend):
        fn(X, **valid)                      # its plan is cached now
        with pytest.raises(TypeError, match=match):
            fn(X, **equal)


NUMPY_INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.intp]
OPSET_CALLS = {
    "average_pool": (functools.partial(onnx_cupy.average_pool, kernel_shape=[2, 2]), 19),
    "lp_pool": (functools.partial(onnx_cupy.lp_pool, kernel_shape=[2, 2], p=3), 18),
    "max_pool": (functools.partial(onnx_cupy.max_pool, kernel_shape=[2, 2],
                                   return_indices=True), 12),
    "global_average_pool": (onnx_cupy.global_average_pool, 1),
    "global_lp_pool": (onnx_cupy.global_lp_pool, 2),
    "global_max_pool": (onnx_cupy.global_max_pool, 22),
    "hardmax": (functools.partial(onnx_cupy.hardmax, axis=2), 11),
    "resize": (functools.partial(onnx_cupy.resize, scales=[1, 1, 1.5, 0.5], mode="linear"), 13),
    "run_node": (lambda x, opset: onnx_cupy.run_node(NODE, [x], opset=opset), 11),
    "dask.average_pool": (lambda x, opset: ocd.average_pool(
        da.from_array(x, chunks=(1, 1, 6, 5)), kernel_shape=[3, 2], opset=opset).compute(), 11),
}


@pytest.mark.parametrize("integer", NUMPY_INTS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("call", OPSET_CALLS)
def test_numpy_integer_opset(call, integer, cpu_backend, rng):
    fn, opset = OPSET_CALLS[call]
    x = rng.uniform(-3, 3, (2, 3, 6, 5)).astype(np.float32)
    with onnx_cupy.backend(cpu_backend):
        expected = fn(x, opset=opset)
        got = fn(x, opset=integer(opset))
    for g, e in zip(*(r if isinstance(r, (list, tuple)) else [r] for r in (got, expected))):
        np.testing.assert_array_equal(g, e)


@pytest.mark.parametrize("value, is_int, is_real", [
    (3, True, True), (np.int64(-3), True, True), (np.uint8(3), True, True),
    (2.5, False, True), (np.float32(2.0), False, True), (True, False, False),
    (np.bool_(False), False, False), ("3", False, False), (None, False, False),
    (1j, False, False), ([3], False, False), (np.array(3), False, False),
], ids=repr)
def test_int_and_real_checks(value, is_int, is_real):
    assert attributes.is_int(value) is is_int and attributes.is_real(value) is is_real
