"""Differential tests on random seeded configurations: AveragePool against onnx.reference's
ReferenceEvaluator (opset-specific models), LpPool against onnxruntime; both against a float64
oracle, onnx.reference's `pool` core evaluated on the geometry transcribed from each version's spec
text. Where the spec deliberately differs from onnx.reference, hand-computed cases pin it down."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from onnx.reference.ops.op_pool_common import pool
from util import (BF16, FLOAT_DTYPES, assert_close, node_model, onnxruntime, random, reference,
                  to_backend)

from onnx_cupy import average_pool, lp_pool

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # oracles average empty windows

CONFIGS = 60
AVG_VERSIONS = (1, 7, 10, 11, 19, 22)
LP_VERSIONS = (1, 2, 11, 18, 22)
# opset at which each attribute appears
SINCE = {"AveragePool": {"count_include_pad": 7, "ceil_mode": 10, "dilations": 19},
         "LpPool": {"ceil_mode": 18, "dilations": 18}}
RUN = {"AveragePool": average_pool, "LpPool": lp_pool}


def version_of(op: str, opset: int) -> int:
    return max(v for v in (AVG_VERSIONS if op == "AveragePool" else LP_VERSIONS) if v <= opset)


def axes(shape, attrs):
    """Per spatial axis: (n, kernel, stride, dilation, pad_begin, pad_end)."""
    nd = len(shape) - 2
    pads = attrs.get("pads", [0] * 2 * nd)
    return list(zip(shape[2:], attrs["kernel_shape"], attrs.get("strides", [1] * nd),
                    attrs.get("dilations", [1] * nd), pads[:nd], pads[nd:]))


def spec_geometry(op, version, shape, attrs):
    """Per spatial axis (output length, begin pad, end pad), transcribed from the version's spec."""
    auto_pad, ceil = attrs.get("auto_pad", "NOTSET"), attrs.get("ceil_mode", 0)
    geometry = []
    for n, k, s, d, b, e in axes(shape, attrs):
        dk = (k - 1) * d + 1
        if auto_pad == "NOTSET":
            rounding = math.ceil if ceil else math.floor
            length = rounding((n + b + e - dk) / s + 1)
            # AveragePool-22: "Sliding windows that would start in the right padded region are
            # ignored."
            if op == "AveragePool" and version >= 22 and ceil and (length - 1) * s >= n + b:
                length -= 1
        else:
            valid = auto_pad == "VALID"
            if op == "AveragePool" and 11 <= version < 19 and not ceil:   # v11's floor forms
                length = math.floor((n - dk + 1) / s) if valid else math.floor(n / s)
            elif op == "AveragePool" and version >= 19 and not ceil:      # v19's floor forms
                length = math.floor((n - dk) / s) + 1 if valid else math.floor((n - 1) / s) + 1
            else:
                length = math.ceil((n - dk + 1) / s) if valid else math.ceil(n / s)
            # pad_shape = (out - 1) * stride + dk - n, clamped at 0 as TensorFlow and onnxruntime do
            total = 0 if valid else max(0, (length - 1) * s + dk - n)
            b = total - total // 2 if auto_pad == "SAME_LOWER" else total // 2
            e = total - b
        geometry.append((length, b, e))
    return geometry


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
        geometry = spec_geometry(op, version, shape, attrs)
        if all(g[0] > 0 for g in geometry):
            dtypes = [t for t in FLOAT_DTYPES if t != BF16 or version >= 22]
            return shape, attrs, dtypes[i % len(dtypes)], geometry


def reference_exact(version, shape, attrs, geometry):
    """Whether onnx.reference's AveragePool follows the spec on this configuration. It does not:
    at version 1 with padding (it counts the padding, as count_include_pad=1 would); with auto_pad,
    for ceil_mode (it asserts), dilations (its pads ignore them), a negative pad formula (np.pad
    fails) or versions 11-18 (it uses the v19 floor forms); with ceil_mode, when a window starts
    in the right padding before version 22 (it drops it at every version), at version 22 when
    even a floor-mode window starts there (its loop overruns the output), or when the last window
    overhangs the padded input by 2 or more (it moves half of that overhang to the begin side,
    shifting every window)."""
    ceil = attrs.get("ceil_mode", 0)
    for (n, k, s, d, _, _), (length, b, e) in zip(axes(shape, attrs), geometry):
        dk = (k - 1) * d + 1
        if version == 1 and b + e > 0:
            return False
        if "auto_pad" in attrs:
            if ceil or d > 1 or 11 <= version < 19 or (
                    attrs["auto_pad"] != "VALID" and (length - 1) * s + k - n < 0):
                return False
        elif ceil and ((length - 1) * s + dk - (n + b + e) >= 2
                       or (length - 1) * s >= n + b
                       or (n + b + e - dk) // s + 1 > length):
            return False
    return True


def ort_exact(shape, attrs):
    """Whether onnxruntime's LpPool follows the spec here. It rejects pads >= kernel; with
    auto_pad, it computes pads from the undilated kernel, applies ceil_mode to the output size,
    and pads negatively (crops) where the SAME pad formula is negative; with ceil_mode, it drops
    a window that starts in the right padding, as AveragePool-22 does."""
    auto_pad, ceil = attrs.get("auto_pad", "NOTSET"), attrs.get("ceil_mode", 0)
    for n, k, s, d, b, e in axes(shape, attrs):
        dk = (k - 1) * d + 1
        if auto_pad == "NOTSET":
            if max(b, e) >= k or ceil and math.ceil((n + b + e - dk) / s) * s >= n + b:
                return False
        elif d > 1 or ceil or (auto_pad != "VALID" and (math.ceil(n / s) - 1) * s + k - n < 0):
            return False
    return True


@pytest.mark.parametrize("opset", [1, 7, 10, 11, 19, 21, 22])
def test_average_pool(opset, backend, rng):
    version = version_of("AveragePool", opset)
    exact = 0
    for i in range(CONFIGS):
        shape, attrs, dtype, geometry = draw(rng, "AveragePool", opset, i)
        x = random(rng, shape, dtype)
        x64 = x.astype(np.float64)
        expected = spec_oracle("AveragePool", x64, attrs, geometry)
        if reference_exact(version, shape, attrs, geometry):
            model = node_model("AveragePool", [("X", np.float64)], attrs, opset)
            ref = reference(model, {"X": x64})[0]
            np.testing.assert_allclose(ref, expected, rtol=1e-12, atol=0, equal_nan=True,
                                       err_msg=f"oracle vs ReferenceEvaluator: {shape} {attrs}")
            expected = ref
            exact += 1
        check(average_pool(to_backend(x, backend), opset=opset, **attrs), expected, dtype, attrs)
    assert exact >= CONFIGS // 8


@pytest.mark.parametrize("opset", [1, 2, 11, 18, 22])
def test_lp_pool(opset, backend, rng):
    ort_checked = 0
    for i in range(CONFIGS):
        shape, attrs, dtype, geometry = draw(rng, "LpPool", opset, i)
        x = random(rng, shape, dtype)
        expected = spec_oracle("LpPool", x.astype(np.float64), attrs, geometry)
        if opset >= 2 and ort_exact(shape, attrs):
            x32 = x.astype(np.float32)  # onnxruntime's LpPool takes float32 and float16 only
            # onnx has no opset 2-4 models; LpPool-2 is in force up to opset 10
            model = node_model("LpPool", [("X", np.float32)], attrs, max(opset, 5))
            assert_close(onnxruntime(model, {"X": x32})[0],
                         spec_oracle("LpPool", x32.astype(np.float64), attrs, geometry), np.float32)
            ort_checked += 1
        check(lp_pool(to_backend(x, backend), opset=opset, **attrs), expected, dtype, attrs)
    assert opset == 1 or ort_checked >= CONFIGS // 8  # onnxruntime has no LpPool-1


def check(got, expected, dtype, attrs):
    try:
        assert_close(got, expected, dtype)
    except AssertionError as exc:
        raise AssertionError(f"{expected.shape} {np.dtype(dtype)} {attrs}") from exc


def pooled(backend, op, x, opset, **attrs):
    return RUN[op](to_backend(x, backend), opset=opset, **attrs)


def test_average_pool_v11_auto_pad_floor_forms(backend, rng):
    x = random(rng, (1, 1, 6), np.float64)
    v = x[0, 0]
    same = {"kernel_shape": [2], "strides": [2], "auto_pad": "SAME_UPPER"}
    # v11-18, ceil_mode=0: floor(5 / 2) = 2 windows, pad max(0, (2 - 1) * 2 + 2 - 5) = 0
    assert_close(pooled(backend, "AveragePool", x[..., :5], 11, **same),
                 np.array([[[v[:2].mean(), v[2:4].mean()]]]))
    # ceil(5 / 2) (v1-10, or ceil_mode=1) = floor((5 - 1) / 2) + 1 (v19): 3 windows, the last over
    # x4 and one pad
    for opset, ceil in ((10, 0), (11, 1), (18, 1), (19, 0), (22, 0)):
        assert_close(pooled(backend, "AveragePool", x[..., :5], opset, ceil_mode=ceil, **same),
                     np.array([[[v[:2].mean(), v[2:4].mean(), v[4]]]]))
    valid = {"kernel_shape": [2], "strides": [4], "auto_pad": "VALID"}
    # v11: floor((6 - 2 + 1) / 4) = 1 window; ceil(5 / 4) = floor((6 - 2) / 4) + 1 = 2 windows
    assert_close(pooled(backend, "AveragePool", x, 11, **valid), np.array([[[v[:2].mean()]]]))
    for opset, ceil in ((10, 0), (11, 1), (19, 0)):
        assert_close(pooled(backend, "AveragePool", x, opset, ceil_mode=ceil, **valid),
                     np.array([[[v[:2].mean(), v[4:].mean()]]]))


def test_ceil_mode_window_starting_in_right_padding(backend, rng):
    """n=4, kernel 2, stride 2, pads [0, 1], ceil_mode: ceil(3 / 2) + 1 = 3 windows; the third
    starts at 4, in the right padding. AveragePool-22 ignores it; earlier versions (21 maps to 19)
    and LpPool keep it, with no input element in it."""
    x = random(rng, (1, 1, 4), np.float64)
    v = x[0, 0]
    attrs = {"kernel_shape": [2], "strides": [2], "pads": [0, 1], "ceil_mode": 1}
    pairs = [v[:2].mean(), v[2:].mean()]
    assert_close(pooled(backend, "AveragePool", x, 22, **attrs), np.array([[pairs]]))
    assert_close(pooled(backend, "AveragePool", x, 22, count_include_pad=1, **attrs),
                 np.array([[pairs]]))
    for opset in (10, 11, 19, 21):
        # nothing counted: 0 / 0; with count_include_pad the pad at 4 counts (5 is past the padding)
        assert_close(pooled(backend, "AveragePool", x, opset, **attrs),
                     np.array([[pairs + [np.nan]]]))
        assert_close(pooled(backend, "AveragePool", x, opset, count_include_pad=1, **attrs),
                     np.array([[pairs + [0.0]]]))
    for opset in (18, 22):
        assert_close(pooled(backend, "LpPool", x, opset, p=2, **attrs),
                     np.array([[[np.hypot(*v[:2]), np.hypot(*v[2:]), 0.0]]]))


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
