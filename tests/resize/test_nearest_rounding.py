"""Resize nearest picks its input element from float32 coordinates computed as onnxruntime
computes them (((y + 0.5f) / s) - 0.5f and the like; PyTorch also works in float32), not from
float64 ones (onnx.reference): checked on the cases that differ, against onnxruntime on seeded
configurations at a rounding boundary, and against PyTorch's recorded results with the
attributes its ONNX exporter writes (tests/data/torch/)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import nearest_rounding, torch_cases
from helpers.util import node_model, onnxruntime

from onnx_cupy import resize
from onnx_cupy.core import execution

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
    float32 formula of onnxruntime's source picks, and onnxruntime 1.32's x86-64 build picks
    the same except, rarely, where its quotient (y + 0.5f) / s lands one unit in the last place
    off the correctly rounded one (its compiled division is not IEEE's): there onnxruntime's
    pick must be the one a quotient nudged by one unit gives."""
    opset, n, attrs, inputs = _boundary_config(seed)
    got = _run(cpu_backend, np.arange(n, dtype=F32), opset=opset, **attrs, **inputs)
    ctm = attrs.get("coordinate_transformation_mode", "asymmetric")
    rule = attrs.get("nearest_mode", "")
    ((_, m, s, w),) = nearest_rounding.axes((n,), attrs, inputs)
    single, down, up = (nearest_rounding.picks(
        nearest_rounding.coordinates(ctm, n, m, s, w, True, nudge), rule, n, s)
        for nudge in (0, -1, 1))
    np.testing.assert_array_equal(got, single)
    ort = _onnxruntime(opset, n, attrs, inputs)
    off = got != ort
    assert off.sum() <= 2, (got, ort)
    assert np.all((ort == down) | (ort == up) | ~off), (got, ort)


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
