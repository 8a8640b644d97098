"""Bad inputs: the exception type and message, raised before any allocation or launcher."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import BF16, forbid_work
from onnx import helper

import onnx_cupy
from onnx_cupy import average_pool, lp_pool, max_pool
from onnx_cupy.core import calls as arrays_calls
from onnx_cupy.core import opsets
from onnx_cupy.pool import numpy_global, numpy_passes

OPS = {"AveragePool": average_pool, "LpPool": lp_pool, "MaxPool": max_pool}
X = np.random.default_rng(7).uniform(-2, 3, (1, 2, 5, 5)).astype(np.float32)


def case(name, exc, pattern, op="AveragePool", x=X, **kwargs):
    """One bad call: `op`(x, kernel_shape=[2, 2] unless given, **kwargs) raises `exc` matching."""
    return pytest.param(exc, pattern, op, x, {"kernel_shape": [2, 2], **kwargs}, id=name)


CASES = [
    case("no_kernel_shape", ValueError, r"AveragePool: attribute 'kernel_shape' is required",
         kernel_shape=None),
    case("kernel_shape_length", ValueError,
         r"'kernel_shape' has 1 values, expected 2 for an input with 2 spatial", kernel_shape=[3]),
    case("kernel_shape_zero", ValueError, r"'kernel_shape' values must be >= 1, got \[0, 2\]",
         "LpPool", kernel_shape=[0, 2]),
    case("kernel_shape_float", TypeError, r"'kernel_shape' must be a sequence of ints",
         kernel_shape=[2.0, 2]),
    case("strides_negative", ValueError, r"'strides' values must be >= 1, got \[1, -1\]",
         strides=[1, -1]),
    case("strides_zero", ValueError, r"'strides' values must be >= 1, got \[0, 1\]", "LpPool",
         strides=[0, 1]),
    case("dilations_zero", ValueError, r"'dilations' values must be >= 1, got \[1, 0\]",
         dilations=[1, 0]),
    case("dilations_negative", ValueError, r"'dilations' values must be >= 1", "LpPool",
         dilations=[-2, 1]),
    case("pads_negative", ValueError, r"'pads' values must be >= 0, got \[0, -1, 0, 0\]",
         pads=[0, -1, 0, 0]),
    case("pads_length", ValueError, r"'pads' has 2 values, expected 4 for an input with 2 spatial",
         "LpPool", pads=[1, 1]),
    case("auto_pad_unknown", ValueError, r"'auto_pad' must be one of .*got 'SAME'", "LpPool",
         auto_pad="SAME"),
    case("auto_pad_lower_case", ValueError, r"'auto_pad' must be one of .*got 'same_upper'",
         auto_pad="same_upper"),
    case("rank_2", ValueError, r"X must have rank >= 3 \(\[N, C, D1, ...\]\), got shape \(2, 5\)",
         x=X[0, :, 0], kernel_shape=[2]),
    case("spatial_9", ValueError, r"at most 8 spatial dimensions are supported, got 9", "LpPool",
         x=np.ones((1,) * 11, np.float32), kernel_shape=[1] * 9),
    case("int32", TypeError, r"input dtype int32 is not supported", x=X.astype(np.int32)),
    case("bool", TypeError, r"input dtype bool is not supported", "LpPool", x=X > 0),
    case("bfloat16_opset_21", TypeError,
         r"bfloat16 requires opset >= 22 \(it came with AveragePool-22\); AveragePool-19, in "
         r"force at opset 21, takes float16, float32, float64$", x=X.astype(BF16), opset=21),
    case("bfloat16_lp_opset_18", TypeError,
         r"bfloat16 requires opset >= 22 \(it came with LpPool-22\)", "LpPool", x=X.astype(BF16),
         opset=18),
    case("p_float_v2", ValueError,
         r"'p' must be an integer at opset .*LpPool-2 is in force .*got 1.5", "LpPool", p=1.5,
         opset=4),
    case("p_zero", ValueError, r"'p' must be > 0, got 0", "LpPool", p=0),
    case("p_negative_v1", ValueError, r"'p' must be > 0, got -0.5", "LpPool", p=-0.5, opset=1),
    case("p_string", TypeError, r"'p' must be a number, got '2'", "LpPool", p="2"),
    case("dilations_at_11", ValueError, r"AveragePool: attribute 'dilations' is not defined at "
         r"opset 11, where AveragePool-11 is in force; dilations came with AveragePool-19",
         dilations=[2, 1], opset=11),
    case("dilations_at_18", ValueError, r"AveragePool: attribute 'dilations' is not defined at "
         r"opset 18, where AveragePool-11 is in force; dilations came with AveragePool-19",
         dilations=[2, 2], opset=18),
    case("ceil_mode_lp_at_11", ValueError, r"LpPool: attribute 'ceil_mode' is not defined at "
         r"opset 17, where LpPool-11 is in force; ceil_mode came with LpPool-18", "LpPool",
         ceil_mode=1, opset=17),
    case("ceil_mode_at_7", ValueError,
         r"'ceil_mode' is not defined at opset .*-7 is in force; .* came with .*-10",
         ceil_mode=1, opset=9),
    case("count_include_pad_at_1", ValueError,
         r"'count_include_pad' is not defined at opset .*-1 is in force; .* came with .*-7",
         count_include_pad=1, opset=6),
    case("output_size_negative", ValueError,
         r"output spatial size -1 < 0 along spatial axis 1 \(input 5, kernel 7",
         kernel_shape=[2, 7]),
    case("output_size_negative_dilated", ValueError, r"output spatial size -1 < 0 along spatial "
         r"axis 0 \(input 5, kernel 4, dilation 2", "LpPool", kernel_shape=[4, 1],
         dilations=[2, 1]),
    case("valid_kernel_beyond_input", ValueError,
         r"output spatial size -1 < 0 along spatial axis 0 .*auto_pad VALID", x=X[..., :3, :3],
         kernel_shape=[5, 2], auto_pad="VALID", opset=11),
    case("list_input", TypeError,
         r"X must be a numpy.ndarray, a cupy.ndarray or an array exposing "
         r"__cuda_array_interface__ or DLPack, got builtins.list", x=X.tolist()),
    case("opset_0", ValueError, r"AveragePool: opset 0 is outside the supported range 1..28",
         opset=0),
    case("opset_29", ValueError, r"LpPool: opset 29 is outside the supported range 1..28", "LpPool",
         opset=29),
    case("opset_float", TypeError, r"opset must be an int, got 22.0", opset=22.0),
    case("ceil_mode_2", ValueError, r"'ceil_mode' must be 0 or 1, got 2", ceil_mode=2),
    case("count_include_pad_negative", ValueError, r"'count_include_pad' must be 0 or 1, got -1",
         count_include_pad=-1),
    case("max_no_kernel_shape", ValueError, r"MaxPool: attribute 'kernel_shape' is required",
         "MaxPool", kernel_shape=None),
    case("max_strides_zero", ValueError, r"MaxPool: attribute 'strides' values must be >= 1",
         "MaxPool", strides=[0, 1]),
    case("max_pads_length", ValueError, r"MaxPool: attribute 'pads' has 3 values, expected 4",
         "MaxPool", pads=[1, 1, 1]),
    case("max_auto_pad", ValueError, r"MaxPool: attribute 'auto_pad' must be one of .*got 'X'",
         "MaxPool", auto_pad="X"),
    case("max_dilations_at_9", ValueError, r"MaxPool: attribute 'dilations' is not defined at "
         r"opset 9, where MaxPool-8 is in force; dilations came with MaxPool-10", "MaxPool",
         dilations=[1, 2], opset=9),
    case("max_ceil_mode_at_8", ValueError, r"MaxPool: attribute 'ceil_mode' is not defined at "
         r"opset 8, where MaxPool-8 is in force; ceil_mode came with MaxPool-10", "MaxPool",
         ceil_mode=1, opset=8),
    case("max_storage_order_at_7", ValueError, r"MaxPool: attribute 'storage_order' is not "
         r"defined at opset 7, where MaxPool-1 is in force; storage_order came with MaxPool-8",
         "MaxPool", storage_order=1, opset=7),
    case("max_storage_order_2", ValueError, r"MaxPool: attribute 'storage_order' must be 0 or 1, "
         r"got 2", "MaxPool", storage_order=2),
    case("max_indices_at_7", ValueError, r"MaxPool: the Indices output \(return_indices=True\) "
         r"is not defined at opset 7, where MaxPool-1 is in force; it came with MaxPool-8",
         "MaxPool", return_indices=True, opset=7),
    case("max_return_indices_int", TypeError, r"MaxPool: return_indices must be a bool, got 1",
         "MaxPool", return_indices=1),
    case("max_int8_at_11", TypeError, r"MaxPool: input dtype int8 requires opset >= 12 "
         r"\(it came with MaxPool-12\); MaxPool-11, in force at opset 11, takes float16, float32, "
         r"float64$", "MaxPool", x=(X * 10).astype(np.int8), opset=11),
    case("max_int32", TypeError, r"MaxPool: input dtype int32 is not supported; MaxPool-22, in "
         r"force at opset 22, takes float16, float32, float64, bfloat16, int8, uint8$", "MaxPool",
         x=X.astype(np.int32)),
    case("max_bfloat16_at_21", TypeError, r"MaxPool: input dtype bfloat16 requires opset >= 22 "
         r"\(it came with MaxPool-22\); MaxPool-12, in force at opset 21, takes float16, float32, "
         r"float64, int8, uint8$", "MaxPool", x=X.astype(BF16), opset=21),
    case("max_output_size_negative", ValueError, r"MaxPool: output spatial size -1 < 0",
         "MaxPool", kernel_shape=[7, 1]),
]


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if a call passes its checks (helpers.util.forbid_work)."""
    forbid_work(monkeypatch)


@pytest.mark.parametrize("exc, pattern, op, x, kwargs", CASES)
def test_bad_input(exc, pattern, op, x, kwargs, cpu_backend, no_work):
    with onnx_cupy.backend(cpu_backend), pytest.raises(exc, match=pattern):
        OPS[op](x, **kwargs)


@pytest.mark.parametrize("op", OPS)
def test_every_attribute_has_a_bad_value_case(op):
    """Each attribute the operator defines at some version is given a bad value by some case of
    this operator (its message names the attribute), so a check dropped from the plan fails."""
    named = {name for c in CASES if c.values[2] == op
             for name in opsets.ATTRIBUTES[op][max(opsets.ATTRIBUTES[op])]
             if f"'{name}'" in c.values[1]}
    assert named == opsets.ATTRIBUTES[op][max(opsets.ATTRIBUTES[op])]


def test_forced_cupy_backend_rejects_numpy_input():
    """The cupy backend forced where it can run (the stand-in cupy) takes no NumPy array."""
    with StandIn().installed(), onnx_cupy.backend("cupy"), pytest.raises(
            TypeError, match=r"backend 'cupy' needs a cupy.ndarray input, got numpy.ndarray"):
        average_pool(X, kernel_shape=[2, 2])


def test_unknown_backend_name():
    with pytest.raises(ValueError, match=r"backend must be one of .*got 'cuda'"), \
            onnx_cupy.backend("cuda"):
        pass


@pytest.mark.parametrize("node, inputs, opset, pattern", [
    (helper.make_node("Conv", ["x"], ["y"], kernel_shape=[2, 2]), [X], None,
     r"run_node: unsupported operator 'Conv'"),
    (helper.make_node("AveragePool", ["x"], ["y"], domain="com.example", kernel_shape=[2, 2]), [X],
     None, r"run_node: unsupported domain 'com.example'"),
    (helper.make_node("LpPool", ["x", "z"], ["y"], kernel_shape=[2, 2]), [X, X], None,
     r"run_node: LpPool takes 1 input, got 2"),
    (helper.make_node("AveragePool", ["x"], ["y"]), [X], None,
     r"AveragePool: attribute 'kernel_shape' is required"),
    (helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], ceil_mode=0), [X], 7,
     r"'ceil_mode' is not defined at opset .*-7 is in force; .* came with .*-10"),
    (helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], p=3), [X], 0,
     r"LpPool: opset 0 is outside the supported range"),
    (helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2]), [X], 7,
     r"MaxPool: the Indices output \(return_indices=True\) is not defined at opset 7"),
    (helper.make_node("MaxPool", ["x"], ["y", "i", "z"], kernel_shape=[2, 2]), [X], 22,
     r"run_node: MaxPool-22 \(in force at opset 22\) has 1 to 2 outputs, the node names 3"),
], ids=["op", "domain", "inputs", "kernel_shape", "attribute_opset", "opset", "max_indices_opset",
        "max_outputs"])
def test_run_node_errors(node, inputs, opset, pattern, no_work):
    with pytest.raises(ValueError, match=pattern):
        onnx_cupy.run_node(node, inputs, opset=opset)


@pytest.mark.parametrize("attribute", ["count_include_pad", "storage_order"])
def test_run_node_attribute_the_operator_never_defines(attribute, no_work):
    node = helper.make_node("LpPool", ["x"], ["y"], kernel_shape=[2, 2], **{attribute: 1})
    pattern = rf"LpPool: unknown attribute '{attribute}' \(no version of LpPool defines it\)"
    with pytest.raises(ValueError, match=pattern):
        onnx_cupy.run_node(node, [X], opset=22)


def test_no_work_guard_is_live(cpu_backend, no_work):
    with onnx_cupy.backend(cpu_backend), pytest.raises(AssertionError,
                                                       match=r"a call passed its checks"):
        lp_pool(X, kernel_shape=[2, 2])


# ------------------------------------------------- values past int64 offsets or the machine

X1 = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
BIG = [
    pytest.param("AveragePool", {"kernel_shape": [2**62]},
                 r"'kernel_shape' = \[4611686018427387904\]", id="kernel_2_62"),
    pytest.param("LpPool", {"kernel_shape": [2**64]}, r"'kernel_shape' values must fit in int64 "
                 r"\(an ONNX INTS attribute\), got \[18446744073709551616\]", id="kernel_2_64"),
    pytest.param("MaxPool", {"kernel_shape": [1], "pads": [2**62, 2**62]},
                 r"'pads' = \[4611686018427387904, 4611686018427387904\]", id="pads_2_62"),
    pytest.param("AveragePool", {"kernel_shape": [1], "pads": [0, 2**64]},
                 r"'pads' values must fit in int64", id="pads_2_64"),
    pytest.param("AveragePool", {"kernel_shape": [1], "strides": [2**62]},
                 r"'strides' = \[4611686018427387904\]", id="strides_2_62"),
    pytest.param("MaxPool", {"kernel_shape": [2], "dilations": [2**62]},
                 r"'dilations' = \[4611686018427387904\]", id="dilations_2_62"),
    pytest.param("AveragePool", {"kernel_shape": [2**63], "pads": [2**62, 2**62],
                                 "count_include_pad": 0},
                 r"'kernel_shape' values must fit in int64", id="kernel_2_63_pads_2_62"),
    pytest.param("AveragePool", {"kernel_shape": [1], "pads": [2**40, 2**40]},
                 r"AveragePool: the output would have the shape \(1, 1, 2199023255556\) \(from "
                 r"input shape \(1, 1, 4\), kernel_shape \[1\], strides \[1\], dilations \[1\] "
                 r"and pads \[1099511627776, 1099511627776\]\): 2199023255556 elements, "
                 r"8796093022224 bytes, past 2\*\*62 elements or this machine's memory",
                 id="output_too_big"),
]


@pytest.mark.parametrize("op, kwargs, pattern", BIG)
def test_values_past_int64_offsets_or_memory(cpu_backend, no_work, op, kwargs, pattern):
    """A ValueError naming the attribute and its values (and the output's shape, elements and
    bytes where they are the reason), before anything is allocated; the same on every path (the
    kernel path's parameter structs raised OverflowError, the NumPy path's allocator
    MemoryError or grew without bound)."""
    with onnx_cupy.backend(cpu_backend), pytest.raises(ValueError, match=pattern):
        OPS[op](X1, **kwargs)


def test_huge_kernel_covering_all_of_x(cpu_backend):
    """A window of 2**31 taps padded to hold X whole: the mean of X (count_include_pad=0),
    and the NumPy path looks only at the taps that land in X."""
    kwargs = {"kernel_shape": [2**31], "pads": [2**31 - 4, 0]}
    with onnx_cupy.backend(cpu_backend):
        y = average_pool(X1, **kwargs)
        m, i = max_pool(X1, **kwargs, return_indices=True)
    np.testing.assert_array_equal(y, [[[2.5]]])
    np.testing.assert_array_equal(m, [[[4.0]]])
    np.testing.assert_array_equal(i, [[[3]]])


@pytest.mark.parametrize("n, out, k, s, d, b", [
    (4, 1, 2**31, 1, 1, 2**31 - 4), (4, 3, 2**31, 1, 1, 2**31 - 2), (7, 5, 2**40, 3, 2, 2**40),
    (5, 4, 10**12, 8, 1, 10**12 - 2), (3, 2, 9, 11, 1, 5)])
def test_taps_visits_only_the_taps_that_land(n, out, k, s, d, b):
    """Pads and kernels of any size: _taps yields exactly the taps that land inside X for some
    output (checked against a scan of every (output, position) pair), at most out * n."""
    taps = numpy_passes._taps(n, out, k, s, d, b)
    landing = sorted({(p + b - o * s) // d for o in range(out) for p in range(n)
                      if (p + b - o * s) % d == 0 and 0 <= (p + b - o * s) // d < k})
    assert [j for j, _, _ in taps] == landing
    assert len(taps) <= out * n


def test_lp_pool_p_zero_is_refused(cpu_backend, no_work):
    with onnx_cupy.backend(cpu_backend), pytest.raises(ValueError, match=r"'p' must be > 0"):
        lp_pool(X1, kernel_shape=[2], p=0)


# ------------------------------------------------- broadcast and unflattenable global pools

@pytest.mark.parametrize("op", ["global_average_pool", "global_max_pool", "global_lp_pool"])
@pytest.mark.parametrize("view", ["broadcast_rows", "broadcast_scalar", "transposed"])
@pytest.mark.parametrize("length", [(6, 5), (150, 100)], ids=["short", "long"])
def test_global_pool_reads_views_in_place(op, view, length, rng, monkeypatch):
    """A broadcast view, or one whose planes no view flattens, is read block by block (the
    sums stage no block of more than a chunk or one segment of every lane of one plane,
    numpy_global.GROUP elements; the maximum copies nothing) and gives the contiguous copy's
    bits: the sums' order does not depend on the blocks."""
    base = rng.standard_normal((2, 3, *length)).astype(np.float32)
    x = {"broadcast_rows": np.broadcast_to(base[:, :, :1], base.shape),
         "broadcast_scalar": np.broadcast_to(base[0, 0, 0, 0], base.shape),
         "transposed": base.transpose(0, 1, 3, 2)}[view]
    fn = getattr(onnx_cupy, op)
    with onnx_cupy.backend("numpy"):
        want = fn(np.ascontiguousarray(x))
    monkeypatch.setattr(numpy_global, "CHUNK_BYTES", 4 * numpy_global.GROUP)
    staged = []
    real_copy = numpy_global._copy_flat
    monkeypatch.setattr(numpy_global, "_copy_flat", lambda src, first, n, out: staged.append(
        out.size) or real_copy(src, first, n, out))
    arrays_calls.clear()
    with onnx_cupy.backend("numpy"):
        got = fn(x)
    arrays_calls.clear()
    assert got.tobytes() == want.tobytes()
    assert max(staged, default=0) <= numpy_global.GROUP


def test_planes_view_without_copy():
    x = np.broadcast_to(np.float32(1), (1, 1, 2**31 + 7))
    planes = numpy_global._planes(x, 1, 2**31 + 7)
    assert planes is not None and planes.strides == (0, 0)
    assert numpy_global._planes(np.ones((2, 3, 4), np.float32).transpose(0, 2, 1), 2, 12) is None
