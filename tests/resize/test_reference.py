"""Resize against onnx.reference on random seeded configurations (opsets 11, 13, 18 and 19: every
mode, coordinate transformation mode and nearest mode, antialias, exclude_outside, cubic_coeff_a,
axes subsets with negative values, keep_aspect_ratio_policy, roi crops with extrapolation, ranks
1-5, up/down/non-integer scales and sizes, every dtype), and numpy/emulated parity on the same
inputs. Configurations where onnx-cupy follows the spec text and onnx.reference differs are
redrawn (`Case.diverges`); test_resize.py pins those cases down by hand."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from helpers import nearest_rounding
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    TOL,
    node_model,
    reference,
    to_backend,
    to_numpy,
)

from onnx_cupy import resize
from onnx_cupy.core import execution
from onnx_cupy.resize import numpy as numpy_resize

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

VERSIONS = (11, 13, 18, 19)
COMMON = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
COORDINATE_MODES = {11: COMMON, 13: COMMON, 18: COMMON, 19: COMMON + ("half_pixel_symmetric",)}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")
SCALES = (0.3, 0.5, 0.6, 0.75, 0.8, 1.0, 1.25, 1.5, 1.7, 2.0, 2.5, 3.0)
INT_DTYPES = [np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                    "int64", "uint64")]
OTHER_DTYPES = [np.dtype(t) for t in ("bool", "complex64", "complex128")]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + OTHER_DTYPES
MAX_OUT = 3000  # output elements per case: the emulator runs threads one after another


@dataclass
class Case:
    """One Resize node: opset, input shape, attributes (ours: axes may be negative) and inputs."""

    opset: int
    shape: tuple[int, ...]
    attrs: dict[str, Any]
    inputs: dict[str, np.ndarray] = field(default_factory=dict)  # roi, scales, sizes if given

    def axes(self) -> list[int]:
        rank = len(self.shape)
        return [a % rank for a in self.attrs.get("axes", range(rank))]

    def lengths(self) -> list[tuple[float, int]]:
        """(target width w, output length m) per resized axis, as the module docstring defines."""
        ns = [self.shape[a] for a in self.axes()]
        if "scales" in self.inputs:
            ws = [n * float(s) for n, s in zip(ns, self.inputs["scales"])]
            return [(w, math.floor(w)) for w in ws]
        sizes = [int(m) for m in self.inputs["sizes"]]
        policy = self.attrs.get("keep_aspect_ratio_policy", "stretch")
        if policy == "stretch":
            return [(float(m), m) for m in sizes]
        ratios = [m / n for m, n in zip(sizes, ns)]
        s = min(ratios) if policy == "not_larger" else max(ratios)
        return [(s * n, math.floor(s * n + 0.5)) for n in ns]

    def out_size(self) -> int:
        out = list(self.shape)
        for a, (_, m) in zip(self.axes(), self.lengths()):
            out[a] = m
        return math.prod(out)

    def diverges(self) -> bool:
        """Cases where the spec text and onnx.reference disagree (see test_resize.py and
        resize_differential.KNOWN): pytorch_half_pixel at output length 1 (spec: x = 0;
        reference: -0.5, or the general formula at a fractional width) and tf_crop_and_resize
        at a fractional target width (spec: divide by length_resized - 1; reference: by the
        width - 1); and nearest where onnx-cupy's float32 coordinates (as onnxruntime) pick
        other elements than onnx.reference's float64 ones (test_nearest_rounding.py)."""
        if nearest_rounding.float32_decides(self.opset, self.shape, self.attrs, self.inputs):
            return True
        ctm = self.attrs.get("coordinate_transformation_mode", "half_pixel")
        for w, m in self.lengths():
            if m == 1 and ctm == "pytorch_half_pixel":
                return True
            if m >= 1 and ctm == "tf_crop_and_resize" and w != m:
                return True
        return False

    def model(self, dtype: np.dtype):
        attrs = dict(self.attrs)
        if "axes" in attrs:  # onnx.reference does not take negative axes
            attrs["axes"] = self.axes()
        names = [("X", dtype)] + [(n, self.inputs[n].dtype) if n in self.inputs else ("", None)
                                  for n in ("roi", "scales", "sizes")]
        while not names[-1][0]:
            names.pop()
        return node_model("Resize", names, attrs, self.opset)

    def expected(self, x: np.ndarray) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return reference(self.model(x.dtype), {"X": x, **self.inputs})[0]

    def run(self, x: np.ndarray, backend: str) -> np.ndarray:
        with execution.backend(backend):
            return to_numpy(resize(to_backend(x, backend), opset=self.opset, **self.attrs,
                                   **{k: to_backend(v, backend) for k, v in self.inputs.items()}))


def draw(rng: np.random.Generator, mode: str | None = None, opset: int | None = None,
         ctm: str | None = None) -> Case:
    """A random configuration with at most MAX_OUT output elements, outside `Case.diverges`."""
    while True:
        case = _draw_once(rng, mode, opset, ctm)
        if case.out_size() <= MAX_OUT and not case.diverges():
            return case


def _draw_once(rng: np.random.Generator, mode: str | None, opset: int | None,
               ctm: str | None) -> Case:
    opset = opset or int(rng.choice(VERSIONS))
    rank = int(rng.integers(1, 6))
    shape = [int(v) for v in rng.integers(1, 6, size=rank)]
    while math.prod(shape) > 200:
        shape[int(rng.integers(rank))] = 1
    mode = mode or str(rng.choice(["nearest", "linear", "cubic"]))
    ctm = ctm or str(rng.choice(COORDINATE_MODES[opset]))
    attrs: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": ctm}
    if mode == "nearest":
        attrs["nearest_mode"] = str(rng.choice(NEAREST_MODES))
    else:
        attrs["exclude_outside"] = int(rng.integers(2))
        if opset >= 18:
            attrs["antialias"] = int(rng.integers(2))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5, -0.625]))
    axes = list(range(rank))
    if opset >= 18 and rng.random() < 0.5:
        axes = [int(a) for a in rng.permutation(rank)[:int(rng.integers(1, rank + 1))]]
        attrs["axes"] = [a - rank if rng.random() < 0.3 else a for a in axes]
    k = len(axes)
    inputs: dict[str, np.ndarray] = {}
    if ctm == "tf_crop_and_resize":  # dyadic roi: float32 and float64 arithmetic agree exactly
        inputs["roi"] = np.array([rng.choice([-0.25, 0, 0.125, 0.25, 0.5]) for _ in range(k)]
                                 + [rng.choice([0.5, 0.75, 1, 1.25]) for _ in range(k)],
                                 dtype=np.float32)
        attrs["extrapolation_value"] = float(rng.choice([0.0, 10.0, -2.5]))
    if ctm == "tf_crop_and_resize" or rng.random() < 0.5:  # spec and reference agree on sizes
        inputs["sizes"] = rng.integers(1, 8, size=k).astype(np.int64)
        if opset >= 18:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(POLICIES))
    else:
        inputs["scales"] = np.array(rng.choice(SCALES, size=k), dtype=np.float32)
    return Case(opset, tuple(shape), attrs, inputs)


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape,
                            endpoint=True).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "c":
        return (rng.uniform(-2, 3, shape) + 1j * rng.uniform(-2, 3, shape)).astype(dtype)
    return rng.uniform(-2, 3, size=shape).astype(dtype)


def assert_matches(case: Case, got: np.ndarray, expected: np.ndarray) -> None:
    """Float dtypes within TOL (cubic: 1e-5, as onnx.reference forms cubic weights in float32,
    cubic_coeff_a reaching it as a numpy.float32; linear on float32: 1e-5 absolute, assert_close's
    default, as onnx-cupy forms coordinates and weights in float32 as onnxruntime does, where
    onnx.reference keeps float64); integers exact for nearest and within 1 for interpolation (a
    float64 sum near .5 may round either way)."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got.shape, got.dtype,
                                                                         expected.shape)
    dtype = got.dtype
    if dtype.kind in "iu":
        atol = 0 if case.attrs["mode"] == "nearest" else 1
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=0,
                                   atol=atol, err_msg=str(case))
        return
    rtol, atol = TOL[dtype.name]
    if case.attrs["mode"] == "cubic":
        rtol, atol = max(rtol, 1e-5), max(atol, 1e-5)
    elif case.attrs["mode"] == "linear" and dtype == np.float32:
        atol = max(atol, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                               atol=atol, err_msg=str(case))


@pytest.mark.parametrize("seed", range(160))
def test_random_float(backend, seed):
    rng = np.random.default_rng(seed)
    dtype = FLOAT_DTYPES[seed % len(FLOAT_DTYPES)]
    case = draw(rng)
    if dtype == BF16:  # bfloat16 from Resize-13; Resize-11's attributes all remain in 13
        case.opset = max(case.opset, 13)
    x = sample(rng, case.shape, dtype)
    assert_matches(case, case.run(x, backend), case.expected(x))


@pytest.mark.parametrize("seed", range(48))
def test_random_integer(backend, seed):
    rng = np.random.default_rng(1000 + seed)
    dtype = INT_DTYPES[seed % len(INT_DTYPES)]
    case = draw(rng)
    x = sample(rng, case.shape, dtype)
    assert_matches(case, case.run(x, backend), case.expected(x))


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("ctm", COORDINATE_MODES[19])
def test_mode_grid(backend, rng, mode, ctm):
    """Every mode x coordinate mode, over each nearest mode or antialias x exclude_outside, with
    upsampling, downsampling, non-integer and unit scales and sizes."""
    variants = ([{"nearest_mode": m} for m in NEAREST_MODES] if mode == "nearest" else
                [{"antialias": a, "exclude_outside": e} for a in (0, 1) for e in (0, 1)])
    shape = (2, 5, 6)
    for variant in variants:
        for target in ({"scales": [1, 2.0, 0.5]}, {"scales": [1, 0.6, 1.7]},
                       {"scales": [1, 1.0, 2.5]}, {"sizes": [2, 3, 7]}, {"sizes": [2, 8, 1]}):
            attrs = {"mode": mode, "coordinate_transformation_mode": ctm, **variant}
            inputs = {k: np.array(v, dtype=np.float32 if k == "scales" else np.int64)
                      for k, v in target.items()}
            if ctm == "tf_crop_and_resize":
                if "scales" in inputs:
                    continue
                inputs["roi"] = np.array([0, 0.25, -0.25, 1, 0.75, 1.25], dtype=np.float32)
                attrs["extrapolation_value"] = -1.5
            case = Case(19, shape, attrs, inputs)
            if case.diverges():
                continue
            x = sample(rng, shape, np.dtype(np.float32))
            assert_matches(case, case.run(x, backend), case.expected(x))


def gather_oracle(case: Case, x: np.ndarray) -> np.ndarray:
    """Nearest moves elements: onnx.reference on the element numbers (float64) says which input
    element each output takes, -1 marking the extrapolation value."""
    probe = Case(case.opset, case.shape, dict(case.attrs, extrapolation_value=-1.0), case.inputs)
    source = probe.expected(np.arange(x.size, dtype=np.float64).reshape(x.shape)).astype(np.int64)
    y = x.reshape(-1)[np.maximum(source, 0)]
    fill = np.array(case.attrs.get("extrapolation_value", 0.0))
    if x.dtype.kind in "iu":  # rounded half to even, saturated
        info = np.iinfo(x.dtype)
        fill = np.clip(np.rint(fill), info.min, info.max)
    y[source < 0] = fill.astype(x.dtype)
    return y


@pytest.mark.parametrize("k", range(4))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_nearest_every_dtype(backend, dtype, k):
    rng = np.random.default_rng([7, ALL_DTYPES.index(dtype), k])
    case = draw(rng, mode="nearest", opset=int(rng.choice([13, 18, 19])))
    x = sample(rng, case.shape, dtype)
    got = case.run(x, backend)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, gather_oracle(case, x), err_msg=str(case))


@pytest.mark.parametrize("k", range(6))
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
def test_numpy_emulated_parity(dtype, k):
    """Both CPU paths on the same random inputs and configurations, ranks 1-5: nearest and
    integer results bit for bit; float interpolation within TOL."""
    rng = np.random.default_rng([100, ALL_DTYPES.index(dtype), k])
    numeric = dtype in FLOAT_DTYPES or dtype in INT_DTYPES
    case = draw(rng, mode=None if numeric else "nearest", opset=int(rng.choice([13, 18, 19])))
    x = sample(rng, case.shape, dtype)
    a, b = case.run(x, "numpy"), case.run(x, "emulated")
    assert a.dtype == b.dtype == dtype and a.shape == b.shape
    if case.attrs["mode"] == "nearest" or dtype.kind in "iu":
        assert a.tobytes() == b.tobytes(), case
    else:
        rtol, atol = TOL[dtype.name]
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=str(case))


@pytest.mark.parametrize("seed", range(16))
def test_numpy_blocks(monkeypatch, seed):
    """Blocks of a few rows (loops over leading axes, row ranges of a resized first axis with
    extrapolated rows) give the values of whole-array blocks."""
    rng = np.random.default_rng(500 + seed)
    case = draw(rng, ctm="tf_crop_and_resize" if seed % 4 == 0 else None)
    x = sample(rng, case.shape, np.dtype(np.float64))
    whole = case.run(x, "numpy")
    monkeypatch.setattr(numpy_resize, "CHUNK_BYTES", 64)
    np.testing.assert_allclose(case.run(x, "numpy"), whole, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("seed", range(24))
def test_numpy_bits_do_not_depend_on_the_batch(seed):
    """Each (n, c) plane of a call's result is the bits of the same call on that plane alone
    and on any batch holding it (as dask's blocks take it): the taps are added in a fixed order
    by elementwise operations, never by a BLAS product, whose kernel (and rounding) the BLAS
    picks by the machine and the shape."""
    rng = np.random.default_rng([601, seed])
    mode = ("linear", "cubic")[seed % 2]
    n, c = int(rng.integers(3, 9)), int(rng.integers(2, 7))
    spatial = tuple(int(v) for v in rng.integers(3, 12, 2))
    x = rng.standard_normal((n, c, *spatial)).astype(np.float32)
    scales = [1.0, 1.0, *(float(v) for v in rng.choice([0.5, 1.5, 2.0, 3.0], 2))]
    kw = {"scales": scales, "mode": mode, "antialias": int(seed % 3 == 0)}
    whole = resize(x, **kw)
    for rows in (slice(0, 1), slice(1, n - 1), slice(n - 2, n)):
        for channels in (slice(0, 1), slice(0, c)):
            part = resize(np.ascontiguousarray(x[rows, channels]), **kw)
            assert part.tobytes() == np.ascontiguousarray(whole[rows, channels]).tobytes(), (
                rows, channels, kw)


@pytest.mark.parametrize("mode,scale", [("linear", 2.0), ("nearest", 2.0), ("cubic", 0.5)])
def test_numpy_peak_memory(mode, scale):
    """The fallback's peak additional memory (output included) stays within 2x input + output."""
    import tracemalloc

    x = np.random.default_rng(0).standard_normal((4, 16, 64, 64)).astype(np.float32)
    kw = {"scales": [1, 1, scale, scale], "mode": mode, "antialias": int(mode == "cubic")}
    y = resize(x, **kw)
    tracemalloc.start()
    resize(x, **kw)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= 2 * (x.nbytes + y.nbytes), peak / (x.nbytes + y.nbytes)
