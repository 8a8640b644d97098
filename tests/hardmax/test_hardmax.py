"""Hardmax, opset versions 1, 11 and 13, on every backend: ONNX node tests, differential tests
against onnx.reference (13) and onnxruntime or hand-computed expectations (1, 11), numpy/emulated
parity, the 64-bit index path, input handling, errors."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers import node_tests
from helpers.hardmax_cases import rule_rows, sample
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    node_model,
    onnxruntime,
    reference,
    to_backend,
    to_numpy,
)
from numpy.lib.stride_tricks import as_strided
from onnx import helper

import onnx_cupy
from onnx_cupy import hardmax, run_node
from onnx_cupy.core import execution
from onnx_cupy.hardmax import kernel as hardmax_kernel
from onnx_cupy.hardmax import plan as hardmax_op

DTYPE_IDS = [d.name for d in FLOAT_DTYPES]
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def run(backend: str, x: np.ndarray, **kw) -> np.ndarray:
    with execution.backend(backend):
        return to_numpy(hardmax(to_backend(x, backend), **kw))


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.astype(np.float64), expected.astype(np.float64))


def random_shape(rng: np.random.Generator, rank: int, axis: int) -> tuple[int, ...]:
    """Small dimensions; the reduced one sometimes long enough for several scan lanes."""
    shape = [int(v) for v in rng.integers(1, 4, size=rank)]
    shape[axis] = int(rng.choice([1, 2, 5, 40, 150]))
    return tuple(shape)


def coerced_one_hot(x: np.ndarray, axis: int) -> np.ndarray:
    """Hand oracle of versions 1 and 11: one-hot of the argmax of each row of the 2-D view."""
    rows = x.reshape(int(np.prod(x.shape[:axis])), -1)
    y = np.zeros(rows.shape, dtype=x.dtype)
    y[np.arange(rows.shape[0]), np.argmax(rows, axis=1)] = 1
    return y.reshape(x.shape)


def test_exported():
    assert onnx_cupy.hardmax is hardmax and "hardmax" in onnx_cupy.__all__


def test_every_node_test_of_hardmax_runs():
    """The cases run below are all of ONNX's node tests that use Hardmax."""
    node_tests.check_every_node_test_runs("Hardmax")


@pytest.mark.parametrize("name", node_tests.names("Hardmax"))
def test_onnx_node_test(name, backend):
    node_tests.check_node_case("Hardmax", name, backend)


def rank_axes(ranks: range, axes=lambda rank: range(-rank, rank)) -> list:
    """(rank, axis) parameters, `axes(rank)` for each rank, with ids like rank3-axis-1."""
    return [pytest.param(rank, axis, id=f"rank{rank}-axis{'default' if axis is None else axis}")
            for rank in ranks for axis in axes(rank)]


@pytest.mark.parametrize("rank,axis", rank_axes(range(1, 6), lambda r: [None, *range(-r, r)]))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
def test_v13_matches_reference(backend, dtype, rank, axis, rng):
    shape = random_shape(rng, rank, -1 if axis is None else axis)
    x = sample(rng, shape, dtype)
    attrs = {} if axis is None else {"axis": axis}
    (expected,) = reference(node_model("Hardmax", [("X", dtype)], attrs, 13), {"X": x})
    assert_same(run(backend, x, axis=axis), expected)


@pytest.mark.parametrize("opset,dtype,rank,axis", [
    pytest.param(opset, dtype, *p.values, id=f"{opset}-{dtype}-{p.id}")
    for opset, dtype in [(1, F32), (11, F16), (11, F32)]
    for p in rank_axes(range(1, 5), lambda r, o=opset: [*range(0 if o == 1 else -r, r),
                                                         *([None] if r > 1 else [])])])
def test_v1_v11_match_onnxruntime(backend, opset, dtype, rank, axis, rng):
    x = sample(rng, random_shape(rng, rank, 0 if axis is None else axis), dtype, special=False)
    attrs = {} if axis is None else {"axis": axis}
    (expected,) = onnxruntime(node_model("Hardmax", [("X", dtype)], attrs, opset), {"X": x})
    assert_same(run(backend, x, axis=axis, opset=opset), expected)


@pytest.mark.parametrize("rank,axis", rank_axes(range(1, 5)))
@pytest.mark.parametrize("opset", [1, 11, 12])
@pytest.mark.parametrize("dtype", [F16, F32, F64], ids=str)
def test_v1_v11_coerced_rows(backend, opset, dtype, rank, axis, rng):
    x = sample(rng, random_shape(rng, rank, axis), dtype)
    assert_same(run(backend, x, axis=axis, opset=opset), coerced_one_hot(x, axis % rank))


def test_versions_by_hand(backend):
    x = np.array([[[2, 3], [0, 1]], [[6, 7], [4, 5]]], dtype=np.float32)
    coerced_axis_1 = np.array([[[0, 1], [0, 0]], [[0, 1], [0, 0]]], dtype=np.float32)
    assert_same(run(backend, x, opset=11), coerced_axis_1)
    assert_same(run(backend, x, axis=-2, opset=11), coerced_axis_1)
    assert_same(run(backend, x, axis=1, opset=1), coerced_axis_1)
    whole = np.zeros_like(x)
    whole[1, 0, 1] = 1
    assert_same(run(backend, x, axis=0, opset=1), whole)
    assert_same(run(backend, x, axis=1), np.array([[[1, 1], [0, 0]], [[1, 1], [0, 0]]], np.float32))
    assert_same(run(backend, x), np.array([[[0, 1], [0, 1]], [[0, 1], [0, 1]]], np.float32))


@pytest.mark.parametrize("n", [5, 300])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
def test_ties_nan_inf_rules(backend, dtype, n):
    rows, idx = rule_rows(n, float(ml_dtypes.finfo(dtype).smallest_subnormal))
    x = rows.astype(dtype)
    expected = np.zeros_like(x)
    expected[np.arange(len(idx)), idx] = 1
    long_rows = n > 2 * hardmax_kernel.MIN_LANE_SPAN
    assert (hardmax_kernel.lanes(hardmax_op.plan(13, x.shape, x.dtype, -1)) > 1) == long_rows
    assert_same(run(backend, x), expected)
    xt = np.ascontiguousarray(x.T)  # the same rows along a strided middle axis (inner > 1)
    assert (hardmax_kernel.lanes(hardmax_op.plan(13, xt.shape, xt.dtype, 0)) > 1) == long_rows
    assert_same(run(backend, xt, axis=0), np.ascontiguousarray(expected.T))
    if dtype != BF16:
        assert_same(run(backend, x, axis=1, opset=11), expected)


@pytest.mark.parametrize("k", range(12))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
def test_numpy_emulated_parity(dtype, k):
    rng = np.random.default_rng([13, FLOAT_DTYPES.index(dtype), k])
    rank = int(rng.integers(1, 6))
    opset = 13 if dtype == BF16 else int(rng.choice([1, 11, 13]))
    axis = int(rng.integers(0 if opset == 1 else -rank, rank))
    shape = random_shape(rng, rank, axis)
    x = sample(rng, shape, dtype)
    kw = {"axis": axis, "opset": opset}
    assert_same(run("emulated", x, **kw), run("numpy", x, **kw))


@pytest.mark.parametrize("view", [
    lambda a: a.transpose(2, 0, 1),
    lambda a: a[:, ::2],
    lambda a: a[::-1, :, ::-3],
    lambda a: a.transpose(1, 2, 0)[::2],
    lambda a: np.broadcast_to(a[:1], (3, *a.shape[1:])),
], ids=["transpose", "step", "reversed", "transpose-step", "broadcast"])
@pytest.mark.parametrize("opset", [1, 11, 13])
def test_strided_input_not_modified(backend, view, opset, rng):
    base = sample(rng, (4, 40, 6), np.float32)
    keep = base.copy()
    xb = to_backend(base, backend)
    for axis in range(3):
        x = view(xb)
        with execution.backend(backend):
            got = to_numpy(hardmax(x, axis=axis, opset=opset))
        assert_same(got, run("numpy", np.ascontiguousarray(to_numpy(x)), axis=axis, opset=opset))
    np.testing.assert_array_equal(to_numpy(xb), keep)


@pytest.mark.parametrize("shape,axis,opset", [
    ((0, 3), -1, 13), ((3, 0), -1, 13), ((3, 0), 0, 13), ((2, 0, 4), 1, 1), ((2, 4, 0), 0, 11),
    ((0,), 0, 13),
])
def test_empty(backend, shape, axis, opset):
    x = np.zeros(shape, dtype=np.float16)
    got = run(backend, x, axis=axis, opset=opset)
    assert got.shape == shape and got.dtype == x.dtype


def test_out(backend, rng):
    x = to_backend(sample(rng, (3, 50, 4), np.float32), backend)
    xp = np if backend != "cupy" else execution.cupy_module()
    out = xp.full(x.shape, 7, dtype=x.dtype)
    with execution.backend(backend):
        y = hardmax(x, axis=1, out=out)
    assert y is out
    assert_same(to_numpy(out), run("numpy", to_numpy(x), axis=1))


def test_64bit_offsets(launches):
    """A view reaching more than 2**31 elements from its first one selects the 64-bit kernels;
    the buffer is allocated lazily, so only the touched pages exist."""
    buf = np.zeros(2**31 + 16, dtype=np.float16)
    x = as_strided(buf, shape=(3, 5), strides=(2**30 * buf.itemsize, buf.itemsize))
    x[...] = [[1, 4, 4, 0, 2], [np.nan, 1, np.nan, 0, 0], [-1, -1, -np.inf, 3, 2]]
    for v in (x, x[::-1], x[:, ::-1]):
        expected = run("numpy", np.ascontiguousarray(v), axis=-1)
        assert_same(run("emulated", v, axis=-1), expected)
        assert_same(run("numpy", v, axis=-1), expected)
    assert launches and all(k.index_bits == 64 for k, _ in launches)
    launches.clear()
    run("emulated", np.ascontiguousarray(x), axis=-1)
    assert launches and all(k.index_bits == 32 for k, _ in launches)


@pytest.mark.parametrize("kwargs,shape,error,match", [
    ({"axis": 2}, (2, 3), ValueError,
     r"'axis' = 2 is out of range \[-2, 1\] .*rank 2 \(opset 13, where Hardmax-13 is in force"),
    ({"axis": -3}, (2, 3), ValueError, r"'axis' = -3 is out of range \[-2, 1\]"),
    ({"axis": 2, "opset": 11}, (2, 3), ValueError,
     r"'axis' = 2 .*\[-2, 1\] .*opset 11, where Hardmax-11"),
    ({"opset": 11}, (3,), ValueError, r"'axis' = 1 \(the default\) is out of range \[-1, 0\]"),
    ({"axis": -3, "opset": 1}, (2, 3), ValueError,
     r"'axis' = -3 is out of range \[-2, 1\] .*Hardmax-1 is in force\)"),
    ({"axis": 2, "opset": 10}, (2, 3), ValueError,
     r"'axis' = 2 is out of range \[-2, 1\] .*opset 10, where Hardmax-1 is in force\)"),
    ({}, (), ValueError, r"rank >= 1"),
    ({"axis": 1.0}, (2, 3), TypeError, r"'axis' must be an int, got 1.0"),
    ({"axis": True}, (2, 3), TypeError, r"'axis' must be an int"),
    ({"axis": "1"}, (2, 3), TypeError, r"'axis' must be an int"),
    ({"opset": 0}, (2, 3), ValueError, r"opset 0 is outside the supported range 1\.\.\d+"),
    ({"opset": 99}, (2, 3), ValueError, r"opset 99 is outside the supported range"),
    ({"opset": 13.0}, (2, 3), TypeError, r"opset must be an int"),
])
def test_bad_arguments(cpu_backend, kwargs, shape, error, match):
    with execution.backend(cpu_backend), pytest.raises(error, match=match):
        hardmax(np.zeros(shape, np.float32), **kwargs)


@pytest.mark.parametrize("dtype,opset,match", [
    (np.int32, 13, r"Hardmax: input dtype int32 is not supported"),
    (np.bool_, 13, r"input dtype bool is not supported"),
    (np.complex64, 13, r"input dtype complex64 is not supported"),
    (BF16, 12, (r"bfloat16 requires opset >= 13 \(it came with Hardmax-13\); Hardmax-11, in "
                r"force at opset 12, takes float16, float32, float64$")),
    (BF16, 1, r"bfloat16 requires opset >= 13"),
])
def test_bad_dtype(cpu_backend, dtype, opset, match):
    with execution.backend(cpu_backend), pytest.raises(TypeError, match=match):
        hardmax(np.zeros((2, 3), dtype), opset=opset)


def test_bad_array_type(cpu_backend):
    with execution.backend(cpu_backend), pytest.raises(TypeError, match=r"X must be a numpy"):
        hardmax([[1.0, 2.0]])


@pytest.mark.parametrize("make_out,error,match", [
    (lambda x: np.zeros((3, 2), x.dtype), ValueError, r"out has shape \(3, 2\), expected \(2, 3\)"),
    (lambda x: np.zeros(x.shape, np.float64), TypeError,
     r"out has dtype float64, expected float32"),
    (lambda x: np.zeros((3, 2), x.dtype).T, ValueError, r"out must be C-contiguous"),
    (lambda x: x, ValueError, r"out overlaps the input X"),
    (lambda x: [0.0] * 6, TypeError, r"out must be a ndarray like X"),
])
def test_bad_out(cpu_backend, make_out, error, match):
    x = np.ones((2, 3), np.float32)
    with execution.backend(cpu_backend), pytest.raises(error, match=match):
        hardmax(x, out=make_out(x))


def test_run_node(cpu_backend, rng):
    x = sample(rng, (2, 3, 4), np.float32)
    node = helper.make_node("Hardmax", ["X"], ["Y"], axis=1)
    with execution.backend(cpu_backend):
        for opset in (1, 11, 13):
            (y,) = run_node(node, [x], opset=opset)
            assert_same(y, run("numpy", x, axis=1, opset=opset))
        with pytest.raises(ValueError, match=r"Hardmax takes 1 input, got 2"):
            run_node(node, [x, x])

