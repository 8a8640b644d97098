"""Malformed nodes that run_node refuses as onnx.checker would, and nn.functional's degenerate
values: each a ValueError or TypeError that names what is wrong, raised before any work."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.util import forbid_work
from onnx import AttributeProto, helper

import onnx_cupy as oc
import onnx_cupy.nn.functional as F

X = np.ones((1, 2, 4, 4), np.float32)


@pytest.fixture
def no_work(monkeypatch):
    forbid_work(monkeypatch)


def _duplicate():
    node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2])
    node.attribute.extend([helper.make_attribute("kernel_shape", [3, 3])])
    return node


def _undefined():
    node = helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2])
    node.attribute.add().name = "strides"
    return node


def _not_utf8():
    node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2, 2])
    a = node.attribute.add()
    a.name, a.type, a.s = "auto_pad", AttributeProto.STRING, b"SAME\xff\xfe"
    return node


NODES = [
    pytest.param(_duplicate, r"run_node: AveragePool node has the attribute 'kernel_shape' more "
                 r"than once", id="duplicate_attribute"),
    pytest.param(_undefined, r"run_node: MaxPool node's attribute 'strides' has an undefined "
                 r"type", id="undefined_type"),
    pytest.param(lambda: helper.make_node("AveragePool", ["X"], [], kernel_shape=[2, 2]),
                 r"AveragePool-22 \(in force at opset 22\) has 1 output, the node names 0: \[\]",
                 id="no_output"),
    pytest.param(lambda: helper.make_node("Hardmax", ["X"], ["a", "b", "c"]),
                 r"Hardmax-13 \(in force at opset 22\) has 1 output, the node names 3",
                 id="three_outputs"),
    pytest.param(lambda: helper.make_node("LpPool", ["X"], ["Y"], kernel_shape=[2, 2], p=2.0),
                 r"attribute 'p' of LpPool-22 \(in force at opset 22\) is of type INT, got FLOAT",
                 id="float_p"),
    pytest.param(_not_utf8, r"AveragePool node's STRING attribute 'auto_pad' is not UTF-8 text: "
                 r"b'SAME\\xff\\xfe'", id="not_utf8"),
]


@pytest.mark.parametrize("make, pattern", NODES)
def test_malformed_node(cpu_backend, no_work, make, pattern):
    with oc.backend(cpu_backend), pytest.raises(ValueError, match=pattern):
        oc.run_node(make(), [X], opset=22)


def test_float_p_is_lp_pool_1s_type():
    """LpPool-1 types p as a FLOAT: the same node runs at opset 1."""
    node = helper.make_node("LpPool", ["X"], ["Y"], kernel_shape=[2, 2], p=2.0)
    (y,) = oc.run_node(node, [X], opset=1)
    np.testing.assert_allclose(y, np.full((1, 2, 3, 3), 2.0, np.float32))


@pytest.mark.parametrize("fn", [F.lp_pool1d, F.lp_pool2d, F.lp_pool3d])
def test_lp_pool_norm_type_zero(cpu_backend, no_work, fn):
    """PyTorch divides 1 by norm_type (a ZeroDivisionError): a ValueError naming it here."""
    x = np.ones((1, 1) + (4,) * int(fn.__name__[-2]), np.float32)
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=rf"{fn.__name__}: norm_type must not be 0 \(the result is raised "
                              r"to the power 1 / norm_type\), got 0"):
        fn(x, 0, 2)


@pytest.mark.parametrize("fn, k", [(F.adaptive_avg_pool2d, 2), (F.adaptive_max_pool3d, 3)])
def test_adaptive_output_past_memory(cpu_backend, no_work, fn, k):
    x = np.ones((1, 1) + (4,) * k, np.float32)
    lengths = ", ".join(["1000000"] * k)
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=rf"the output would have the shape \(1, 1, {lengths}\) \(from "
                              rf"'sizes' = \[{lengths}\]\): {10**(6 * k)} elements, "
                              rf"{4 * 10**(6 * k)} bytes"):
        fn(x, [10**6] * k)


def test_grid_sample_big_endian_input_beside_native_grid():
    """Byte order is no dtype difference for PyTorch's same-dtype rule."""
    grid = np.zeros((1, 3, 3, 2), np.float32)
    with oc.backend("numpy"):
        want = F.grid_sample(X, grid, align_corners=False)
    with oc.backend("numpy"):   # the kernel path reads big-endian X as native (not yet copied)
        got = F.grid_sample(X.astype(">f4"), grid, align_corners=False)
    np.testing.assert_array_equal(got, want)
