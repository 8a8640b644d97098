"""Differential tests on random seeded configurations: AveragePool against onnx.reference's
ReferenceEvaluator (opset-specific models), LpPool against onnxruntime; both against a float64
oracle, onnx.reference's `pool` core evaluated on tests/pool_oracle.py's geometry. Where onnx-cupy
deliberately differs from onnx.reference, hand-computed cases pin it down.

Each random configuration is its own test on every backend (`-k AveragePool-opset19-007`), drawn
from a generator seeded by (operator, opset, index); all but every 4th are marked slow."""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from helpers.differential import parameters
from helpers.pool_oracle import geometry
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    assert_close,
    node_model,
    onnxruntime,
    random,
    reference,
    to_backend,
)
from onnx.reference.ops.op_pool_common import pool

from onnx_cupy import average_pool, lp_pool

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # oracles average empty windows

CONFIGS = 120  # per operator and opset, each run on every backend; 3 in 4 of them slow
SEED = 20261124
AVG_VERSIONS = (1, 7, 10, 11, 19, 22)
LP_VERSIONS = (1, 2, 11, 18, 22)
# opset at which each attribute appears
SINCE = {"AveragePool": {"count_include_pad": 7, "ceil_mode": 10, "dilations": 19},
         "LpPool": {"ceil_mode": 18, "dilations": 18}}
RUN = {"AveragePool": average_pool, "LpPool": lp_pool}
RUN_ORDER = tuple(RUN)


def version_of(op: str, opset: int) -> int:
    return max(v for v in (AVG_VERSIONS if op == "AveragePool" else LP_VERSIONS) if v <= opset)


def axes(shape, attrs):
    """Per spatial axis: (n, kernel, stride, dilation, pad_begin, pad_end)."""
    nd = len(shape) - 2
    pads = attrs.get("pads", [0] * 2 * nd)
    return list(zip(shape[2:], attrs["kernel_shape"], attrs.get("strides", [1] * nd),
                    attrs.get("dilations", [1] * nd), pads[:nd], pads[nd:]))


def spec_geometry(shape, attrs):
    """Per spatial axis (output length, begin pad, end pad), as tests/pool_oracle.py derives it
    (one rule at every version)."""
    return [g[4:] for g in geometry(shape, attrs)]


def spec_oracle(op, x64, attrs, geometry):
    """float64 result of onnx.reference's `pool` on the input padded per `geometry` (NaN padding
    is left out of an average, zero padding counted; LpPool pads with zeros, which add nothing)."""
    lengths = [g[0] for g in geometry]
    cip = attrs.get("count_include_pad", 0)
    kernels, strides, dilations, begins, ends, spans, tails = [], [], [], [], [], [], []
    for (n, k, s, d, _, _), (length, b, e) in zip(axes(x64.shape, attrs), geometry):
        span = (length - 1) * s + (k - 1) * d + 1           # padded extent the windows cover
        kernels.append(k), strides.append(s), dilations.append(d), begins.append(b), ends.append(e)
        spans.append(span), tails.append(span - n - b)         # tail: end padding the windows need
    fill = np.nan if op == "AveragePool" and not cip else 0.0
    padded = np.pad(x64, [(0, 0), (0, 0)] + [(b, max(t, 0)) for b, t in zip(begins, tails)],
                    constant_values=fill)[(..., *(slice(0, s) for s in spans))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return pool(padded, x64.shape, kernels, strides, lengths,
                    "LPPOOL" if op == "LpPool" else "AVG", [*begins, *tails], [*begins, *ends],
                    dilations, cip, attrs.get("p", 2))


def draw(rng, op, opset, i):
    """A random valid (shape, attrs, spec geometry) for `op` at `opset`, and the i-th dtype (in
    turn) of those the version takes."""
    version = version_of(op, opset)
    since = SINCE[op]
    while True:
        nd = int(rng.integers(1, 4))
        spatial = [int(rng.integers(*{1: (4, 13), 2: (3, 8), 3: (2, 5)}[nd])) for _ in range(nd)]
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
        attrs = {"kernel_shape": rng.integers(1, 5, nd).tolist()}
        if rng.random() < 0.7:
            attrs["strides"] = rng.integers(1, 4, nd).tolist()
        if opset >= since["dilations"] and rng.random() < 0.5:
            attrs["dilations"] = rng.integers(1, 4, nd).tolist()
        auto_pad = str(rng.choice(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
        if auto_pad != "NOTSET":
            attrs["auto_pad"] = auto_pad
        elif rng.random() < 0.8:  # asymmetric, sometimes larger than the kernel
            attrs["pads"] = rng.integers(0, max(attrs["kernel_shape"]) + 2, 2 * nd).tolist()
        for name in ("ceil_mode", "count_include_pad"):
            if opset >= since.get(name, 99) and rng.random() < 0.5:
                attrs[name] = 1
        if op == "LpPool":
            attrs["p"] = (float(rng.choice([1, 2, 3, 0.5, 1.5, 2.5])) if version == 1
                          else int(rng.integers(1, 4)))
        geometry = spec_geometry(shape, attrs)
        if all(g[0] > 0 for g in geometry):
            dtypes = [t for t in FLOAT_DTYPES if t != BF16 or version >= 22]
            return shape, attrs, dtypes[i % len(dtypes)], geometry


def reference_exact(version, shape, attrs, geometry):
    """Whether onnx.reference's AveragePool follows the spec on this configuration. It does not:
    at version 1 with padding (it counts the padding, as count_include_pad=1 would); with auto_pad,
    for ceil_mode (it asserts), dilations (its pads ignore them) or a negative pad formula (np.pad
    fails); with ceil_mode, when the floor-mode length exceeds the ceil-mode one or a pad reaches
    the kernel size (its loop overruns its buffer), or when the last window overhangs the padded
    input by 2 or more (it moves half of that overhang to the begin side, shifting every
    window)."""
    ceil = attrs.get("ceil_mode", 0)
    for (n, k, s, d, _, _), (length, b, e) in zip(axes(shape, attrs), geometry):
        dk = (k - 1) * d + 1
        if version == 1 and b + e > 0:
            return False
        if "auto_pad" in attrs:
            if ceil or d > 1 or (attrs["auto_pad"] != "VALID" and (length - 1) * s + k - n < 0):
                return False
        elif ceil and ((length - 1) * s + dk - (n + b + e) >= 2 or max(b, e) >= k
                       or (n + b + e - dk) // s + 1 > length):
            return False
    return True


def ort_exact(shape, attrs):
    """Whether onnxruntime's LpPool follows the spec here. It rejects pads >= kernel; with
    auto_pad, it computes pads from the undilated kernel, applies ceil_mode to the output size,
    and pads negatively (crops) where the SAME pad formula is negative."""
    auto_pad = attrs.get("auto_pad", "NOTSET")
    for n, k, s, d, b, e in axes(shape, attrs):
        if auto_pad == "NOTSET":
            if max(b, e) >= k:
                return False
        elif d > 1 or attrs.get("ceil_mode", 0) or (
                auto_pad != "VALID" and (math.ceil(n / s) - 1) * s + k - n < 0):
            return False
    return True


class Config(NamedTuple):
    """Configuration `index` of `op` at `opset`: a valid shape, attributes, dtype and the spec
    geometry, drawn from a generator seeded by (op, opset, index)."""

    op: str
    opset: int
    index: int
    shape: tuple[int, ...]
    attrs: dict
    dtype: np.dtype
    geometry: list

    @property
    def name(self) -> str:
        return (f"{self.op}-opset{self.opset}-{self.index:03d}-{self.dtype.name}-"
                f"{len(self.shape) - 2}d")

    def input(self) -> np.ndarray:
        rng = np.random.default_rng([SEED, RUN_ORDER.index(self.op), self.opset, self.index, 1])
        return random(rng, self.shape, self.dtype)


def configurations(op: str, opsets: tuple[int, ...]) -> list[Config]:
    configs = []
    for opset in opsets:
        for i in range(CONFIGS):
            rng = np.random.default_rng([SEED, RUN_ORDER.index(op), opset, i, 0])
            configs.append(Config(op, opset, i, *draw(rng, op, opset, i)))
    return configs


AVG_CONFIGS = configurations("AveragePool", (1, 7, 10, 11, 19, 21, 22))
LP_CONFIGS = configurations("LpPool", (1, 2, 11, 18, 22))


def quick(c: Config) -> bool:
    """Whether configuration `c` stays in the quick subset (pytest -m "not slow")."""
    return c.index % 4 == 0


def reference_checked(c: Config) -> bool:
    """Whether configuration `c` compares onnx.reference's AveragePool with the oracle."""
    return reference_exact(version_of(c.op, c.opset), c.shape, c.attrs, c.geometry)


def ort_checked(c: Config) -> bool:
    """Whether configuration `c` compares onnxruntime's LpPool with the oracle (no LpPool-1)."""
    return c.opset >= 2 and ort_exact(c.shape, c.attrs)


@pytest.mark.parametrize("c", parameters(AVG_CONFIGS, lambda c: c.name, quick))
def test_average_pool(c, backend):
    x = c.input()
    x64 = x.astype(np.float64)
    expected = spec_oracle("AveragePool", x64, c.attrs, c.geometry)
    if reference_checked(c):
        model = node_model("AveragePool", [("X", np.float64)], c.attrs, c.opset)
        ref = reference(model, {"X": x64})[0]
        np.testing.assert_allclose(ref, expected, rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=f"oracle vs ReferenceEvaluator: {c.shape} {c.attrs}")
        expected = ref
    check(average_pool(to_backend(x, backend), opset=c.opset, **c.attrs), expected, c.dtype,
          c.attrs)


@pytest.mark.parametrize("c", parameters(LP_CONFIGS, lambda c: c.name, quick))
def test_lp_pool(c, backend):
    x = c.input()
    expected = spec_oracle("LpPool", x.astype(np.float64), c.attrs, c.geometry)
    if ort_checked(c):
        x32 = x.astype(np.float32)  # onnxruntime's LpPool takes float32 and float16 only
        # onnx has no opset 2-4 models; LpPool-2 is in force up to opset 10
        model = node_model("LpPool", [("X", np.float32)], c.attrs, max(c.opset, 5))
        assert_close(onnxruntime(model, {"X": x32})[0],
                     spec_oracle("LpPool", x32.astype(np.float64), c.attrs, c.geometry),
                     np.float32)
    check(lp_pool(to_backend(x, backend), opset=c.opset, **c.attrs), expected, c.dtype, c.attrs)


@pytest.mark.parametrize("op, configs, checked", [
    ("AveragePool", AVG_CONFIGS, reference_checked), ("LpPool", LP_CONFIGS, ort_checked)])
def test_runtime_compared_often_enough(op, configs, checked):
    """At every opset a runtime has, at least 1/8 of the configurations compare it with the
    oracle (onnx.reference for AveragePool, onnxruntime for LpPool)."""
    for opset in sorted({c.opset for c in configs} - ({1} if op == "LpPool" else set())):
        assert sum(checked(c) for c in configs if c.opset == opset) >= CONFIGS // 8, (op, opset)


def check(got, expected, dtype, attrs):
    try:
        assert_close(got, expected, dtype)
    except AssertionError as exc:
        raise AssertionError(f"{expected.shape} {np.dtype(dtype)} {attrs}") from exc


def pooled(backend, op, x, opset, **attrs):
    return RUN[op](to_backend(x, backend), opset=opset, **attrs)


AVG_CEIL = ((7, 0), (10, 0), (10, 1), (11, 0), (11, 1), (18, 1), (19, 0), (21, 1), (22, 0),
            (22, 1))


@pytest.mark.parametrize("opset, ceil", AVG_CEIL)
def test_auto_pad_lengths_every_version(backend, rng, opset, ceil):
    """SAME: ceil(n / s); VALID: floor((n - dk) / s) + 1, at every version and ceil_mode (the
    v11 text's floor forms give 3 and 1 here; onnxruntime and onnx.reference 4 and 2)."""
    x = random(rng, (1, 3, 7), np.float64)
    # n=7, k=3, s=2: 4 windows, pad total 3 * 2 + 3 - 7 = 2 split 1+1, starting at -1, 1, 3, 5
    got = pooled(backend, "AveragePool", x, opset, kernel_shape=[3], strides=[2],
                 auto_pad="SAME_LOWER", ceil_mode=ceil)
    assert_close(got, np.stack([x[..., a:b].mean(-1) for a, b in ((0, 2), (1, 4), (3, 6),
                                                                   (5, 7))], -1))
    got = pooled(backend, "AveragePool", x[:1, :1, :3], opset, kernel_shape=[1], strides=[2],
                 auto_pad="VALID", ceil_mode=ceil)
    assert_close(got, x[:1, :1, [0, 2]])


@pytest.mark.parametrize("op, opset", [("AveragePool", o) for o in (10, 11, 19, 21, 22)]
                         + [("LpPool", 18), ("LpPool", 22)])
def test_ceil_mode_window_starting_in_right_padding(backend, rng, op, opset):
    """n=4, kernel 2, stride 3, pads [1, 1], ceil_mode: ceil(3 / 3) + 1 = 2 windows, at -1 and 2;
    a third (start 5) would lie in the right padding. Every version drops it (as onnxruntime,
    onnx.reference and AveragePool-22's text)."""
    x = random(rng, (2, 3, 4), np.float64)
    attrs = {"kernel_shape": [2], "strides": [3], "pads": [1, 1], "ceil_mode": 1}
    if op == "LpPool":
        expected = np.stack([np.abs(x[..., 0]), np.hypot(x[..., 2], x[..., 3])], -1)
        assert_close(pooled(backend, op, x, opset, p=2, **attrs), expected)
        return
    pair = x[..., 2:].mean(-1)
    assert_close(pooled(backend, op, x, opset, **attrs), np.stack([x[..., 0], pair], -1))
    assert_close(pooled(backend, op, x, opset, count_include_pad=1, **attrs),
                 np.stack([x[..., 0] / 2, pair], -1))
    # n=4, kernel 2, stride 2, pads [0, 1]: the third window (start 4) is dropped too
    attrs = {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1}
    assert_close(pooled(backend, op, x, opset, **attrs),
                 np.stack([x[..., :2].mean(-1), pair], -1))


@pytest.mark.parametrize("opset, p", [(1, 1.5), (2, 3), (11, 2), (18, 1), (22, 2)])
def test_lp_pool_padding_adds_nothing(backend, rng, opset, p):
    """Padding contributes 0 to the sum of |x|^p: no rescaling by the kernel size."""
    x = random(rng, (2, 3, 5), np.float64)
    got = pooled(backend, "LpPool", x, opset, kernel_shape=[3], pads=[2, 1], strides=[2], p=p)
    a = np.abs(x) ** p
    # windows over positions -2..0, 0..2, 2..4
    sums = np.stack([a[..., :1].sum(-1), a[..., 0:3].sum(-1), a[..., 2:5].sum(-1)], -1)
    assert_close(got, sums ** (1 / p))


@pytest.mark.parametrize("auto_pad, positions", [
    # n=5, kernel 2, dilation 3: extent 4, pad (5 - 1) + 4 - 5 = 3 split 1+2 (UPPER) or 2+1 (LOWER)
    ("SAME_UPPER", [(2,), (0, 3), (1, 4), (2,), (3,)]),
    ("SAME_LOWER", [(1,), (2,), (0, 3), (1, 4), (2,)]),
])
def test_auto_pad_uses_dilated_kernel_extent(backend, rng, auto_pad, positions):
    x = random(rng, (1, 2, 5), np.float64)
    attrs = {"kernel_shape": [2], "dilations": [3], "auto_pad": auto_pad}
    assert_close(pooled(backend, "AveragePool", x, 19, **attrs),
                 np.stack([x[..., list(w)].mean(-1) for w in positions], -1))
    assert_close(pooled(backend, "LpPool", x, 18, p=1, **attrs),
                 np.stack([np.abs(x[..., list(w)]).sum(-1) for w in positions], -1))


def test_negative_same_pad_clamps_to_zero(backend, rng):
    """n=5, kernel 1, stride 3: ceil(5 / 3) = 2 windows, pad formula (2 - 1) * 3 + 1 - 5 = -1 -> 0
    (TensorFlow's max(0, ...)): windows at 0 and 3, nothing cropped."""
    x = random(rng, (1, 1, 5), np.float64)
    attrs = {"kernel_shape": [1], "strides": [3], "auto_pad": "SAME_UPPER"}
    assert_close(pooled(backend, "AveragePool", x, 19, **attrs), x[..., [0, 3]])
    assert_close(pooled(backend, "LpPool", x, 11, p=1, **attrs), np.abs(x[..., [0, 3]]))


@pytest.mark.parametrize("op, opset", [("AveragePool", 1), ("AveragePool", 11), ("AveragePool", 22),
                                       ("LpPool", 2), ("LpPool", 18)])
def test_auto_pad_empty_string_is_notset(backend, rng, op, opset):
    x = random(rng, (2, 3, 6, 5), np.float64)
    attrs = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 2, 1]}
    assert_close(pooled(backend, op, x, opset, auto_pad="", **attrs),
                 pooled(backend, op, x, opset, **attrs))


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
@pytest.mark.parametrize("op, opset", [("AveragePool", 7), ("AveragePool", 19), ("LpPool", 11),
                                       ("LpPool", 22)])
def test_pads_beside_auto_pad_are_ignored(backend, rng, op, opset, auto_pad):
    """As onnxruntime and onnx.reference do (the text forbids the combination)."""
    x = random(rng, (1, 2, 7, 4), np.float64)
    attrs = {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": auto_pad}
    assert_close(pooled(backend, op, x, opset, pads=[2, 1, 2, 1], **attrs),
                 pooled(backend, op, x, opset, **attrs))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_zero_length_gives_an_empty_output(backend, rng, dtype):
    """n + pads - dk = -1: floor(-1 / s) + 1 = 0 windows, an empty output (as both runtimes)."""
    x = random(rng, (2, 3, 4, 2), dtype)
    for op, attrs in (("AveragePool", {"kernel_shape": [2, 3]}),
                      ("LpPool", {"kernel_shape": [5, 1], "strides": [2, 1]}),
                      ("AveragePool", {"kernel_shape": [5, 1], "auto_pad": "VALID"})):
        got = pooled(backend, op, x, 22, **attrs)
        assert got.shape == ((2, 3, 3, 0) if op == "AveragePool" and "auto_pad" not in attrs
                             else (2, 3, 0, 2)) and got.dtype == x.dtype
    assert pooled(backend, "LpPool", x[:0], 22, kernel_shape=[2, 2]).shape == (0, 3, 3, 1)


def test_windows_covering_no_input_element(backend, rng):
    """n=3, kernel 2, pads [3, 2]: windows at -3 and -2 and at 3 lie in the padding. AveragePool
    divides 0 by 0 elements (NaN, as onnx.reference; onnxruntime rejects pads >= kernel) or by
    the pads counted; LpPool sums nothing (0)."""
    x = random(rng, (1, 2, 3), np.float64)
    attrs = {"kernel_shape": [2], "pads": [3, 2]}
    a, b, c = x[..., 0], x[..., 1], x[..., 2]
    nan, zero = np.full_like(a, np.nan), np.zeros_like(a)
    assert_close(pooled(backend, "AveragePool", x, 19, **attrs),
                 np.stack([nan, nan, a, (a + b) / 2, (b + c) / 2, c, nan], -1))
    assert_close(pooled(backend, "AveragePool", x, 19, count_include_pad=1, **attrs),
                 np.stack([zero, zero, a / 2, (a + b) / 2, (b + c) / 2, c / 2, zero], -1))
    assert_close(pooled(backend, "LpPool", x, 18, p=1, **attrs),
                 np.stack([zero, zero, abs(a), abs(a) + abs(b), abs(b) + abs(c), abs(c), zero],
                          -1))
