"""`onnx-cupy bench --direction backward`: the gradients' rows (quick shapes here), in float32
only, ours the family's gradient given the forward's saved output, PyTorch's backward the only
peer (where installed), the elements of dY and dX counted, no targets."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math

import numpy as np
import pytest

import onnx_cupy as oc
from onnx_cupy.tools import bench, cli

OPS = ("MaxPool", "MaxUnpool")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    argv = ["bench", "--quick", "--backend", "numpy", "--direction", "backward", "--no-host",
            "--out", str(out)]
    for op in OPS:
        argv += ["--op", op]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(argv) == 0
    return json.loads((out / "numpy-quick.json").read_text())


def test_cases():
    backward = [c for c in bench.CASES if c.backward]
    assert {c.op for c in backward} == set(bench.cases.GRADIENT_OPS)
    forward = {c.name: c for c in bench.CASES if not c.backward}
    for c in backward:
        twin = forward[c.name.removesuffix(" backward")]
        assert (c.op, c.attrs, c.shapes(False), c.torch) == (twin.op, twin.attrs,
                                                             twin.shapes(False), twin.torch)
        assert [c.dtypes(size) for size in bench.SIZES] == [("float32",)] * 3
        assert all(c.targets("float32", size) == {} for size in bench.SIZES)
    assert forward["MaxPool 2x2 s2"].dtypes("canonical") == bench.DTYPES


def test_rows(report):
    rows = {r["case"]: r for r in report["rows"]}
    assert set(rows) == {c.name for c in bench.CASES if c.backward and c.op in OPS}
    torch = importlib.util.find_spec("torch") is not None
    for r in rows.values():
        assert r["dtype"] == "float32" and r["out_shape"] == r["shape"]   # dX
        assert set(r["peers"]) == ({"torch"} if torch else set())   # no ONNX runtime backward
        assert r["correct"] is None and "peak_memory_met" not in r
        x = np.zeros(r["shape"], np.float32)
        case = next(c for c in bench.CASES if c.name == r["case"])
        dy = bench.cases.gradient_inputs(case, x)["dY"]
        elements = r["melem_s"] * 1e6 * r["ms"] / 1e3   # of dY and dX
        assert elements == pytest.approx(dy.size + x.size, rel=1e-9), r["case"]
        if torch:   # the same gradient as PyTorch's, timed
            assert math.isfinite(r["peers"]["torch"]["ratio"]), r["peers"]["torch"]
            assert "target" not in r["peers"]["torch"]


@pytest.mark.parametrize("op", OPS)
def test_ours_is_the_gradient_vjp_gives(op):
    """A backward row's call of ours, given the saved forward output, gives onnx_cupy.vjp's
    gradient, for the benchmark's cotangent."""
    case = next(c for c in bench.CASES if c.backward and c.op == op)
    x = np.random.default_rng(0).standard_normal(case.quick).astype(np.float32)
    got = bench.Run("numpy", True, []).ours(case)(x)
    inputs = bench.cases.gradient_inputs(case, x)
    if op == "MaxUnpool":
        expected, _ = oc.vjp(oc.max_unpool, x, inputs["I"], cotangent=inputs["dY"],
                             **case.attrs)
    else:
        (expected,) = oc.vjp(oc.max_pool, x, cotangent=inputs["dY"], **case.attrs)
    assert got.dtype == x.dtype and np.array_equal(got, expected)


def test_an_operator_without_a_gradient_row(capsys, tmp_path):
    assert cli.main(["bench", "--quick", "--op", "Hardmax", "--direction", "backward",
                     "--out", str(tmp_path)]) == 2
    assert "bench: no case of Hardmax has a backward row (backward rows: AveragePool" in \
        capsys.readouterr().err
    assert not any(tmp_path.iterdir())
