"""Resize nearest picks its input element from float32 coordinates computed as onnxruntime
computes them (((y + 0.5f) / s) - 0.5f and the like), a fraction within 1e-6 of 0.5 rounding as
the tie (onnxruntime's 2026 fix of GH28291), not from float64 ones (onnx.reference): checked on
onnxruntime's regression cases, at the edges of the tie band, on the cases that differ, against
onnxruntime on seeded configurations at a rounding boundary, and against PyTorch's recorded
results with the attributes its ONNX exporter writes (tests/data/torch/)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import nearest_rounding, torch_cases
from helpers.util import node_model, onnxruntime

from onnx_cupy import resize
from onnx_cupy.core import execution
from onnx_cupy.resize import plan

F32 = np.float32
COORDINATE_MODES = {10: ("asymmetric",), 11: nearest_rounding.ROUNDING_CTMS,
                    19: nearest_rounding.ROUNDING_CTMS[:4]}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
SCALES = (0.3, 0.6, 0.7, 0.9, 1.1, 1.2, 1.3, 1.4, 2.1, 2.9, 3.3, 3.4)


def _run(backend: str, x: np.ndarray, **kw) -> np.ndarray:
    with execution.backend(backend):
        return resize(x, **kw)


def test_nearest_exact_scale_0_3(cpu_backend):
    """8 -> scale 0.3f half_pixel round_prefer_ceil (PyTorch's nearest-exact): output 1 sits at
    x = 1.5 / 0.30000001 - 0.5, 4.5 in float32 (element 5), 4.4999998 in float64 (4)."""
    x = np.arange(8, dtype=F32)
    got = _run(cpu_backend, x, scales=[0.3], coordinate_transformation_mode="half_pixel",
               nearest_mode="round_prefer_ceil")
    np.testing.assert_array_equal(got, [1, 5])


def test_tf_half_pixel_for_nn_scale_0_6(cpu_backend):
    """Resize-11 tf_half_pixel_for_nn, 5 -> scale 0.6f: output 1 at 1.5 / 0.6f, 2.5 in float32
    (round_prefer_ceil: element 3), 2.4999999 in float64 (2)."""
    x = np.arange(5, dtype=F32)
    got = _run(cpu_backend, x, scales=[0.6], coordinate_transformation_mode="tf_half_pixel_for_nn",
               nearest_mode="round_prefer_ceil", opset=11)
    np.testing.assert_array_equal(got, [1, 3, 4])


def test_resize10_at_a_boundary(cpu_backend):
    """Resize-10 (asymmetric; floor where growing): 11 -> scale 1.1f (output 12), output 11 at
    11 / 1.1f = 9.99999957 in float64, 10.0 in float32: element 10, not 9."""
    got = _run(cpu_backend, np.arange(11, dtype=F32), scales=[1.1], opset=10)
    assert got[11] == 10


def _boundary_config(seed: int) -> tuple[int, int, dict, dict]:
    """(opset, n, attrs, inputs) of a seeded 1-D nearest Resize whose float32 and float64
    coordinates pick different elements."""
    rng = np.random.default_rng(seed)
    while True:
        opset = (10, 11, 19)[int(rng.integers(3))]
        ctms = COORDINATE_MODES[opset]
        attrs = {"mode": "nearest"}
        if opset > 10:
            attrs.update(coordinate_transformation_mode=ctms[int(rng.integers(len(ctms)))],
                         nearest_mode=NEAREST_MODES[int(rng.integers(4))])
        n = int(rng.integers(2, 60))
        if opset > 10 and rng.random() < 0.3:
            inputs = {"sizes": np.array([int(rng.integers(1, 90))], np.int64)}
        else:
            inputs = {"scales": np.array([rng.choice(SCALES)], F32)}
        m = nearest_rounding.axes((n,), attrs, inputs)[0][1]
        if "scales" in inputs and np.floor(F32(n) * inputs["scales"][0]) != m:
            continue  # onnxruntime's float32 length differs (semantics.md: n * s precision)
        if m != n and m >= 1 and nearest_rounding.float32_decides(opset, (n,), attrs, inputs):
            return opset, n, attrs, inputs


def _onnxruntime(opset: int, n: int, attrs: dict, inputs: dict) -> np.ndarray:
    feeds = dict(inputs)
    if opset > 10:
        feeds = {"roi": np.zeros(0, F32), "scales": feeds.get("scales", np.zeros(0, F32)),
                 **({"sizes": feeds["sizes"]} if "sizes" in feeds else {})}
    names = [("X", F32)] + [(k, v.dtype) for k, v in feeds.items()]
    model = node_model("Resize", names, attrs, opset, initializers=feeds)
    return onnxruntime(model, {"X": np.arange(n, dtype=F32)})[0]


@pytest.mark.parametrize("seed", range(40))
def test_boundary_against_onnxruntime(cpu_backend, seed):
    """A configuration where float32 and float64 pick differently: onnx-cupy picks what the
    float32 formula of onnxruntime's source with its tie band picks, and so does onnxruntime."""
    opset, n, attrs, inputs = _boundary_config(seed)
    got = _run(cpu_backend, np.arange(n, dtype=F32), opset=opset, **attrs, **inputs)
    ctm = attrs.get("coordinate_transformation_mode", "asymmetric")
    rule = attrs.get("nearest_mode", "")
    ((_, m, s, w),) = nearest_rounding.axes((n,), attrs, inputs)
    expected = nearest_rounding.picks(nearest_rounding.coordinates(ctm, n, m, s, w, True), rule,
                                      n, s, nearest_rounding.TIE)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, _onnxruntime(opset, n, attrs, inputs))


@pytest.mark.parametrize("mode,expected", [("round_prefer_ceil", [1, 5, 8, 11, 15, 18]),
                                           ("round_prefer_floor", [1, 4, 8, 11, 14, 18])])
def test_gh28291_regression(cpu_backend, mode, expected):
    """onnxruntime's regression cases of its issue 28291: 20 -> 6 (sizes), half_pixel. Output 4
    sits at (4 + 0.5) * 20 / 6 - 0.5 = 14.5, computed in float32 as 14.499999 (s = 0.3f):
    within the tie band, so round_prefer_ceil takes 15 and round_prefer_floor 14."""
    x = np.arange(20, dtype=F32).reshape(1, 1, 1, 20)
    got = _run(cpu_backend, x, sizes=[1, 1, 1, 6], coordinate_transformation_mode="half_pixel",
               nearest_mode=mode, opset=13)
    np.testing.assert_array_equal(got.reshape(-1), expected)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
             "nearest_mode": mode}
    np.testing.assert_array_equal(
        _onnxruntime(13, 20, attrs, {"sizes": np.array([6], np.int64)}), expected)


@pytest.mark.parametrize("n,scale,y,x,expected", [
    (14, 1.2, 9, 7.4999995, 8),        # 2^-21 below the tie: a tie
    (30, 0.3, 7, 24.499998, 24),       # 2^-19 below: no tie (PyTorch's nearest-exact takes 25)
])
def test_tie_band(cpu_backend, n, scale, y, x, expected):
    """round_prefer_ceil, asymmetric (first case) or half_pixel: a float32 x within 1e-6 of
    k + 0.5 rounds up; 1.9e-6 below it does not."""
    ctm = "asymmetric" if n == 14 else "half_pixel"
    ((_, m, s, w),) = nearest_rounding.axes((n,), {}, {"scales": np.array([scale], F32)})
    assert np.float32(nearest_rounding.coordinates(ctm, n, m, s, w, True)[y]) == np.float32(x)
    got = _run(cpu_backend, np.arange(n, dtype=F32), scales=[scale],
               nearest_mode="round_prefer_ceil", coordinate_transformation_mode=ctm)
    attrs = {"mode": "nearest", "coordinate_transformation_mode": ctm,
             "nearest_mode": "round_prefer_ceil"}
    ort = _onnxruntime(19, n, attrs, {"scales": np.array([scale], F32)})
    assert got[y] == ort[y] == expected


def test_long_axis_in_float32():
    """Past 2^24 elements float32 names every other index only: x = y / s in float32 (y itself
    rounded to float32), as onnxruntime computes it, picks elements float64 would not (the
    table every path gathers with, built on the host)."""
    n, m = 2**24 + 40, 2**24 + 100
    pl, _, _ = plan.make((n,), np.uint8, None, None, [m], 13, **{
        **plan.DEFAULTS, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"})
    picked = pl.tables[0].index[:, 0]
    expected = np.floor(np.arange(m, dtype=F32) / (F32(m) / F32(n))).astype(np.int64)
    np.testing.assert_array_equal(picked, np.minimum(expected, n - 1))
    assert not np.array_equal(picked, np.arange(m) * n // m)


@pytest.mark.parametrize("case", torch_cases.cases(
    lambda c: c["call"].startswith("F.interpolate") and "'nearest" in c["call"]))
def test_exported_nearest_reproduces_pytorch(cpu_backend, case):
    """PyTorch's recorded nearest / nearest-exact interpolations (scale factors such as 0.3 and
    0.6 included) equal Resize with the attributes its exporter writes: scales =
    float32(scale_factor) or sizes, asymmetric + floor (nearest) or half_pixel +
    round_prefer_ceil (nearest-exact)."""
    x, y = torch_cases.arrays(case)
    kw = torch_cases.keywords(case)
    exact = kw["mode"] == "nearest-exact"
    attrs = {"coordinate_transformation_mode": "half_pixel" if exact else "asymmetric",
             "nearest_mode": "round_prefer_ceil" if exact else "floor"}
    if "scale_factor" in kw:
        target = {"scales": np.array([1, 1, *kw["scale_factor"]], F32)}
    else:
        target = {"sizes": np.array([*x.shape[:2], *kw["size"]], np.int64)}
    got = _run(cpu_backend, x, **target, **attrs)
    assert got.dtype == y.dtype
    np.testing.assert_array_equal(got, y)
