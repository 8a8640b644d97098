"""The gradients of onnx_cupy.nn.functional's pooling functions and interpolate (onnx_cupy.vjp, the
backward their autograd runs) against PyTorch 2.13's, recorded (tests/data/torch_gradients/:
record.py wrote them), with no torch: every case on the numpy and emulated paths, within
torch.testing.assert_close's default tolerance (float64: 1e-7 relative and absolute; float32: 1.3e-6
relative, 1e-5 absolute), NaN where PyTorch has NaN and inf where it has inf."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

FOLDER = Path(__file__).parents[1] / "data" / "torch_gradients"
TOLERANCE = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5)}   # (rtol, atol)


def _cases() -> list:
    path = FOLDER / "cases.json"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"absent: {path}"))]
    return [pytest.param(c, id=f"case{c['id']}-{_function(c)}")
            for c in json.loads(path.read_text())["cases"]]


def _function(case: dict) -> str:
    return str(case["call"].split("(")[0].removeprefix("F."))


def _keywords(case: dict) -> dict:
    call = ast.parse(case["call"], mode="eval").body
    assert isinstance(call, ast.Call)
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def _arrays(case: dict) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    with np.load(FOLDER / "cases.npz") as data:
        return ([data[n] for n in case["inputs"]], data[case["grad_output"]],
                data[case["grad_input"]])


CASES = _cases()


def assert_close(got: np.ndarray, expected: np.ndarray, dtype: str) -> None:
    """torch.testing.assert_close's default check: the dtype and shape, then every element
    within atol + rtol * |expected|, NaN at the same places, infinities equal."""
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got.dtype, got.shape)
    rtol, atol = TOLERANCE[dtype]
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("case", CASES)
def test_recorded_pytorch_gradient(cpu_backend, case):
    inputs, dy, expected = _arrays(case)
    before = [a.copy() for a in (*inputs, dy)]
    with execution.backend(cpu_backend), np.errstate(all="ignore"):
        got = oc.vjp(getattr(F, _function(case)), *inputs, cotangent=dy, **_keywords(case))
    assert len(got) == len(inputs) and all(g is None for g in got[1:])
    assert_close(got[0], expected, case["dtype"])
    for a, b in zip((*inputs, dy), before):   # inputs never modified
        np.testing.assert_array_equal(a, b)


def test_the_recorded_cases_cover_what_they_must():
    """Every function, 1-D to 3-D, in float64 and float32; the arguments and inputs the
    gradients hinge on: unbatched inputs, padding, ceil_mode, dilation, divisor_override,
    count_include_pad both ways, return_indices, ties in max pooling, lp_pool with zero
    windows and several norm_types (one below 1), adaptive outputs longer than their inputs,
    max_unpool indices that repeat; interpolate in every mode at every rank it takes, by size
    and by scale factor, shrinking and growing, align_corners both ways, antialias."""
    cases = [c.values[0] for c in CASES]
    if cases == [None]:
        pytest.skip(f"absent: {FOLDER}")
    names = {_function(c) for c in cases}
    assert names == {f"{f}{k}d" for k in (1, 2, 3) for f in (
        "avg_pool", "lp_pool", "max_pool", "adaptive_avg_pool", "adaptive_max_pool",
        "max_unpool")} | {"interpolate"}, names
    assert {c["dtype"] for c in cases} == {"float64", "float32"}
    kw = [(c, _keywords(c)) for c in cases]
    assert sum(len(c["x_shape"]) == int(_function(c)[-2]) + 1 for c in cases
               if _function(c) != "interpolate") >= 18
    resized = [(c, k) for c, k in kw if _function(c) == "interpolate"]
    assert {(len(c["x_shape"]), k["mode"]) for c, k in resized} == {
        (3, "nearest"), (3, "nearest-exact"), (3, "linear"), (3, "area"), (4, "nearest"),
        (4, "nearest-exact"), (4, "bilinear"), (4, "bicubic"), (4, "area"), (5, "nearest"),
        (5, "nearest-exact"), (5, "trilinear"), (5, "area")}
    assert {k.get("align_corners") for _, k in resized} == {None, False, True}
    assert {k["mode"] for _, k in resized if k.get("antialias")} == {"bilinear", "bicubic"}
    assert {"size", "scale_factor"} <= {a for _, k in resized for a in k}
    ratios = [m / n for c, _ in resized for m, n in zip(c["y_shape"][2:], c["x_shape"][2:])]
    assert min(ratios) < 0.5 and max(ratios) > 2
    assert sum(any(p > 0 for p in k.get("padding", [0])) for _, k in kw) >= 10
    assert sum(k.get("ceil_mode", False) for _, k in kw) >= 20
    assert sum(any(d > 1 for d in k.get("dilation", [1])) for _, k in kw) >= 6
    assert sum("divisor_override" in k for _, k in kw) >= 4
    averages = [k for c, k in kw if _function(c).startswith("avg_pool")]
    assert {k["count_include_pad"] for k in averages} == {False, True}
    assert sum(k.get("return_indices", False) for _, k in kw) >= 10
    norms = {k["norm_type"] for c, k in kw if _function(c).startswith("lp_pool")}
    assert len(norms) >= 5 and min(norms) < 1
    longer = 0
    ties = repeats = zero_windows = 0
    for c, k in kw:
        inputs, dy, dx = _arrays(c)
        name = _function(c)
        if name.startswith("adaptive"):
            size = k["output_size"]
            sizes = [size] * (len(c["x_shape"]) - 2) if isinstance(size, int) else size
            longer += any(m is not None and m > n for m, n in zip(sizes, c["x_shape"][-3:]))
        if "max_pool" in name:
            ties += int(len(np.unique(inputs[0])) < inputs[0].size // 2)
        if name.startswith("max_unpool"):
            i = inputs[1].reshape(-1, inputs[1].shape[-1] if len(c["x_shape"]) == 2 else
                                  int(np.prod(inputs[1].shape[-int(name[-2]):])))
            repeats += any(len(np.unique(row)) < row.size for row in i)
        if name.startswith("lp_pool"):
            zero_windows += int(np.any(dx == 0) and np.any(inputs[0] == 0))
    assert longer >= 6 and ties >= 10 and repeats >= 10 and zero_windows >= 10, (
        longer, ties, repeats, zero_windows)
