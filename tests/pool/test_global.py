"""GlobalAveragePool, GlobalMaxPool, GlobalLpPool: ONNX's node tests, seeded random
configurations (every version and dtype, ranks 1-5 spatial) against a float64 reduction,
onnxruntime and onnx.reference, numpy = emulated, strided inputs, empty planes, NaN, bad input."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from cases import global_pool as global_cases
from helpers import node_tests
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    TOL,
    onnxruntime,
    random,
    reference,
    tensor_type,
)
from onnx import helper

import onnx_cupy
from onnx_cupy.core import arrays, launcher, opsets
from onnx_cupy.pool import numpy_global

FUNCTIONS = {"GlobalAveragePool": onnx_cupy.global_average_pool,
             "GlobalMaxPool": onnx_cupy.global_max_pool,
             "GlobalLpPool": onnx_cupy.global_lp_pool}


def run(op, x, backend, **kw):
    with onnx_cupy.backend(backend):
        return FUNCTIONS[op](x, **kw)


def expected(op, x, p=2.0):
    """The reduction in float64 (NaN for an empty average, -inf for an empty max)."""
    v = x.astype(np.float64).reshape(*x.shape[:2], -1)
    with np.errstate(invalid="ignore"):
        if op == "GlobalMaxPool":
            r = v.max(axis=2) if v.shape[2] else np.full(v.shape[:2], -np.inf)
        elif op == "GlobalLpPool":
            r = (np.abs(v) ** p).sum(axis=2) ** (1 / p)
        else:
            r = v.mean(axis=2) if v.shape[2] else np.full(v.shape[:2], np.nan)
    return r.reshape(*x.shape[:2], *(1,) * (x.ndim - 2))


def close(got, want, dtype):
    rtol, atol = TOL[np.dtype(dtype).name]
    assert got.shape == want.shape and got.dtype == dtype
    with np.errstate(over="ignore"):
        want = want.astype(dtype).astype(np.float64)   # an overflow to inf is the dtype's
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("op", FUNCTIONS)
def test_every_node_test_of_the_operator_runs(op):
    node_tests.check_every_node_test_runs(op, some=False)   # GlobalLpPool has none


@pytest.mark.parametrize("op, name", [pytest.param(op, name, id=name) for op in FUNCTIONS
                                      for name in node_tests.names(op)])
def test_node_case(op, name, backend):
    node_tests.check_node_case(op, name, backend)


VERSIONS = global_cases.VERSIONS


def configurations():
    """The global pools' configurations (drawn in the package, which the kernel checker runs
    too), one test each."""
    for c in global_cases.configurations():
        yield pytest.param(c.op, c.version, c.dtype, c.shape, c.p, id=c.name)


def model(op, version, dtype, p):
    attrs = {} if p is None else {"p": p}
    node = helper.make_node(op, ["X"], ["Y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "X", tensor_type(dtype), None)], [helper.make_tensor_value_info(
            "Y", tensor_type(dtype), None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", version)],
                             ir_version=onnx.IR_VERSION if version > 1 else 3)


@pytest.mark.parametrize("op, version, dtype, shape, p", list(configurations()))
def test_configuration(op, version, dtype, shape, p, rng):
    """numpy and emulated against the float64 reduction; the max exactly, and equal to each
    other; onnxruntime and onnx.reference where they run the case (float32 models)."""
    x = random(rng, shape, dtype)
    kw = {} if p is None else {"p": p}
    y = run(op, x, "numpy", opset=version, **kw)
    ye = run(op, x, "emulated", opset=version, **kw)
    want = expected(op, x, 2.0 if p is None else p)
    close(y, want, dtype)
    close(ye, want, dtype)
    if op == "GlobalMaxPool":
        assert y.tobytes() == ye.tobytes() == x.max(axis=tuple(range(2, x.ndim)),
                                                    keepdims=True).tobytes()
    x32 = x.astype(np.float32)
    # neither runtime implements GlobalLpPool; onnx.reference's GlobalMaxPool reduces other
    # axes, onnxruntime takes 1-3 spatial axes (docs/semantics.md)
    runtimes = {"GlobalAveragePool": (onnxruntime, reference), "GlobalMaxPool": (onnxruntime,),
                "GlobalLpPool": ()}[op]
    for runtime in runtimes:
        if runtime is onnxruntime and len(shape) > 5:
            continue
        theirs = runtime(model(op, version, np.float32, p), {"X": x32})[0]
        mine = run(op, x32, "numpy", opset=version, **kw)
        np.testing.assert_allclose(mine, np.reshape(theirs, mine.shape), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", FUNCTIONS)
def test_strided_and_out(op, cpu_backend, rng):
    base = random(rng, (3, 4, 9, 12), np.float32)
    view = base[::2, ::-1, 1::2, ::3]   # planes no single stride walks: read from a copy
    before = base.copy()
    out = np.empty((2, 4, 1, 1), np.float32)
    y = run(op, view, cpu_backend, out=out)
    assert y is out and np.array_equal(base, before)
    close(y, expected(op, view), np.dtype(np.float32))
    column = base[:, :, :, 5:6]   # a plane walked with one stride (12)
    close(run(op, column, cpu_backend), expected(op, column), np.dtype(np.float32))


@pytest.mark.parametrize("op", FUNCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_unaligned_input_keeps_the_bits(op, dtype, rng):
    """X whose rows are not aligned to their type (a buffer read at an odd offset) gives the
    bits of its aligned copy: NumPy sums unaligned data in buffered blocks that round
    differently, so such rows are copied first."""
    x = (rng.standard_normal((2, 4, 150, 150)) * 100).astype(dtype)   # sums that round
    raw = np.zeros(x.nbytes + 1, np.uint8)
    raw[1:] = x.view(np.uint8).reshape(-1)
    unaligned = np.frombuffer(raw, dtype, offset=1).reshape(x.shape)
    assert not unaligned.flags.aligned
    got = run(op, unaligned, "numpy")
    np.testing.assert_array_equal(got.view(np.uint8), run(op, x, "numpy").view(np.uint8))


@pytest.mark.parametrize("op", FUNCTIONS)
@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 3, 3), (2, 3, 0), (1, 2, 3, 0)], ids=str)
def test_empty(op, shape, cpu_backend):
    """Empty N or C: an empty output; an empty plane: NaN, -inf or 0 as an empty window."""
    y = run(op, np.empty(shape, np.float32), cpu_backend)
    assert y.shape == (*shape[:2], *(1,) * (len(shape) - 2))
    if y.size:
        value = {"GlobalAveragePool": np.nan, "GlobalMaxPool": -np.inf, "GlobalLpPool": 0.0}[op]
        np.testing.assert_array_equal(y, np.full(y.shape, value, np.float32))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_max_nan_propagates(dtype, cpu_backend, rng):
    x = random(rng, (2, 2, 300), dtype)
    x[1, 0, 123] = np.nan
    y = run("GlobalMaxPool", x, cpu_backend)[..., 0]
    assert np.isnan(y[1, 0]) and not np.isnan(np.delete(y.ravel(), 2)).any()


@pytest.fixture
def no_work(monkeypatch):
    def fail(*args, **kwargs):
        raise AssertionError("work done before validation failed")
    monkeypatch.setattr(arrays, "output", fail)
    monkeypatch.setattr(launcher, "launch", fail)
    monkeypatch.setattr(numpy_global, "prepare_global", fail)


X = np.random.default_rng(3).uniform(-2, 3, (1, 2, 5)).astype(np.float32)


@pytest.mark.parametrize("op, x, kw, exc, pattern", [
    ("GlobalAveragePool", X[0], {}, ValueError, r"GlobalAveragePool: X must have rank >= 3"),
    ("GlobalMaxPool", X.astype(np.int8), {}, TypeError, r"GlobalMaxPool: input dtype int8 is not"),
    ("GlobalMaxPool", X.astype(BF16), {"opset": 21}, TypeError,
     (r"GlobalMaxPool: input dtype bfloat16 requires opset >= 22 \(it came with "
      r"GlobalMaxPool-22\); GlobalMaxPool-1, in force at opset 21, takes float16, float32, "
      r"float64$")),
    ("GlobalLpPool", X, {"p": 1.5, "opset": 2}, ValueError,
     (r"GlobalLpPool: attribute 'p' must be an integer at opset 2, where GlobalLpPool-2 is in "
      r"force \(a float p exists only in GlobalLpPool-1\), got 1.5")),
    ("GlobalLpPool", X, {"p": 0}, ValueError, r"GlobalLpPool: attribute 'p' must be > 0, got 0"),
    ("GlobalLpPool", X, {"p": "2"}, TypeError, r"GlobalLpPool: attribute 'p' must be a number"),
    ("GlobalAveragePool", X, {"opset": 0}, ValueError,
     r"GlobalAveragePool: opset 0 is outside the supported range 1..28"),
], ids=["rank_2", "int8", "bfloat16_21", "p_float_v2", "p_zero", "p_string", "opset_0"])
def test_bad_input(op, x, kw, exc, pattern, cpu_backend, no_work):
    with onnx_cupy.backend(cpu_backend), pytest.raises(exc, match=pattern):
        FUNCTIONS[op](x, **kw)


def test_versions_registered():
    assert {op: sorted(opsets.ATTRIBUTES[op]) for op in FUNCTIONS} == {
        op: list(v) for op, v in VERSIONS.items()}
    assert opsets.ATTRIBUTES["GlobalLpPool"][1] == {"p"}
