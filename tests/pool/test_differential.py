"""AveragePool and LpPool on random seeded configurations, every opset and dtype, against four
judges: the loop oracle (tests/pool_oracle.py), onnxruntime, onnx.reference and ONNX shape
inference.

Per configuration: onnx-cupy (numpy backend; the emulated kernels on every 10th) must match the
oracle; its output shape must equal the runtimes' wherever onnxruntime and onnx.reference give the
same shape (unless documented cases put both off, where a shared shape is a coincidence of two
deviations), and shape inference's static shape wherever both runtimes give that shape too; its
values must match each runtime's unless a documented case in CASES puts that runtime off for the
configuration. Every configuration on which the runtimes do not agree must fall under such a
case, and the counts of what reached each check are asserted, so the test cannot pass by
skipping. The runtimes run float32 models on the same input values.
"""
from __future__ import annotations

import collections
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import onnx
import pytest
from helpers.pool_oracle import geometry, output_shape
from helpers.pool_oracle import pool as oracle
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    TOL,
    assert_close,
    inferred_shape,
    node_model,
    onnxruntime,
    reference,
)

import onnx_cupy
from onnx_cupy import average_pool, lp_pool

CONFIGS = 1000
RUN = {"AveragePool": average_pool, "LpPool": lp_pool}
# opsets drawn: every version, and opsets in between (the version in force decides)
OPSETS = {"AveragePool": (1, 7, 9, 10, 11, 15, 19, 21, 22),
          "LpPool": (1, 2, 8, 11, 17, 18, 22)}
SINCE = {"AveragePool": {"count_include_pad": 7, "ceil_mode": 10, "dilations": 19},
         "LpPool": {"ceil_mode": 18, "dilations": 18}}
VERSIONS = {"AveragePool": (1, 7, 10, 11, 19, 22), "LpPool": (1, 2, 11, 18, 22)}


def version_of(op: str, opset: int) -> int:
    return max(v for v in VERSIONS[op] if v <= opset)


def draw(rng: np.random.Generator, op: str, opset: int) -> tuple[tuple[int, ...], dict]:
    """A small random shape and attributes: pads up to kernel + 1, auto_pad (also "") sometimes
    with pads, dilations, ceil_mode, count_include_pad, p."""
    nd = int(rng.integers(1, 4))
    spatial = [int(rng.integers(1, {1: 10, 2: 7, 3: 5}[nd])) for _ in range(nd)]
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *spatial)
    attrs: dict[str, Any] = {"kernel_shape": rng.integers(1, 4, nd).tolist()}
    if rng.random() < 0.7:
        attrs["strides"] = rng.integers(1, 4, nd).tolist()
    if opset >= SINCE[op]["dilations"] and rng.random() < 0.4:
        attrs["dilations"] = rng.integers(1, 4, nd).tolist()
    auto_pad = str(rng.choice(["NOTSET", "NOTSET", "", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto_pad != "NOTSET" or rng.random() < 0.3:
        attrs["auto_pad"] = auto_pad
    if rng.random() < (0.8 if auto_pad in ("NOTSET", "") else 0.15):
        if rng.random() < 0.25:   # up to and beyond the kernel
            attrs["pads"] = rng.integers(0, max(attrs["kernel_shape"]) + 2, 2 * nd).tolist()
        else:                     # below the kernel, as onnxruntime requires
            attrs["pads"] = [int(rng.integers(0, k)) for k in 2 * attrs["kernel_shape"]]
    for name in ("ceil_mode", "count_include_pad"):
        if opset >= SINCE[op].get(name, 99) and rng.random() < 0.5:
            attrs[name] = 1
    if op == "LpPool":
        attrs["p"] = (float(rng.choice([1, 2, 3, 0.5, 1.5])) if opset == 1
                      else int(rng.integers(1, 4)))
    return shape, attrs


# --- the runtimes ---------------------------------------------------------------------------

def model(op: str, opset: int, shape: tuple[int, ...], attrs: dict) -> onnx.ModelProto:
    """One node at `opset`, float32, the input shape declared."""
    return node_model(op, [("X", np.float32)], attrs, opset, shape=shape)


def _outcome(run: Callable[..., list[np.ndarray]], m: onnx.ModelProto, x: np.ndarray
             ) -> np.ndarray | str:
    """A runtime's output, or its error as text (a rejected configuration is an outcome)."""
    try:
        return run(m, {"X": x})[0]
    except Exception as exc:  # noqa: BLE001
        return f"error: {exc}"


def run_ort(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray | str:
    return _outcome(onnxruntime, m, x)


def run_reference(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray | str:
    return _outcome(reference, m, x)


def static_shape(m: onnx.ModelProto) -> tuple[int, ...] | None:
    """The static output shape ONNX shape inference gives, or None (also where it fails)."""
    try:
        return inferred_shape(m)
    except Exception:  # noqa: BLE001
        return None


def close(a: Any, b: Any, dtype: Any = np.float32) -> bool:
    """Both arrays, same shape, values within `dtype`'s tolerance (and float32's), NaN = NaN."""
    if isinstance(a, str) or isinstance(b, str) or a.shape != b.shape:
        return False
    rtol, atol = (max(t, u) for t, u in zip(TOL[np.dtype(dtype).name], TOL["float32"]))
    return bool(np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol,
                            atol=atol, equal_nan=True))


# --- where the runtimes differ: documented cases ----------------------------------------------

def _pads(shape, attrs):
    return attrs.get("pads") or [0] * (2 * (len(shape) - 2))


def _auto(attrs):
    return attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "")


def _same(attrs):
    return attrs.get("auto_pad") in ("SAME_UPPER", "SAME_LOWER")


def _pads_ge_kernel(shape, attrs):
    return any(p >= k for p, k in zip(_pads(shape, attrs), 2 * list(attrs["kernel_shape"])))


def _empty_window(n, k, s, d, length, b, e):
    """Whether some window along this axis has no tap inside [0, n)."""
    return any(not any(0 <= o * s - b + j * d < n for j in range(k)) for o in range(length))


def _ort_truncates(n, k, s, d, length, b, e, auto_pad, ceil_mode):
    """Whether onnxruntime's length, which truncates a negative (n + pads - dk) / s toward 0
    (C++ integer division), differs from the floored one."""
    span = (n if auto_pad == "VALID" else n + b + e) - (k - 1) * d - 1
    if auto_pad not in ("NOTSET", "", "VALID") or span >= 0:
        return False
    return (math.ceil(span / s) if ceil_mode else int(span / s)) + 1 != length


class Case(NamedTuple):
    """A documented difference: the runtimes it puts off (their outputs are not compared
    there), what happens, and when it applies: when(op, version, shape, attrs, axes), axes as
    pool_oracle.geometry gives them: (n, k, s, d, length, begin, end) per spatial axis."""

    name: str
    off: frozenset[str]
    what: str
    when: Callable[..., bool]


ORT, REF = frozenset({"ort"}), frozenset({"ref"})
CASES = [
    Case("ort_no_opset_1", ORT, "onnxruntime has no AveragePool-1 or LpPool-1 kernel",
         lambda op, v, shape, a, axes: v == 1),
    Case("ref_average_pool_1_counts_pads", REF,
         "onnx.reference's AveragePool-1 counts pads in the divisor",
         lambda op, v, shape, a, axes: op == "AveragePool" and v == 1
         and any(b or e for *_, b, e in axes)),
    Case("ort_pads_ge_kernel", ORT,
         "onnxruntime rejects a pad >= the kernel size, even next to an auto_pad that "
         "overrides the pads",
         lambda op, v, shape, a, axes: _pads_ge_kernel(shape, a)),
    Case("ref_ceil_with_auto_pad", REF, "onnx.reference rejects ceil_mode=1 with an auto_pad",
         lambda op, v, shape, a, axes: _auto(a) and a.get("ceil_mode", 0) == 1),
    Case("ort_ceil_valid", ORT,
         "onnxruntime rounds VALID's length up under ceil_mode: ceil((n - dk) / s) + 1",
         lambda op, v, shape, a, axes: a.get("auto_pad") == "VALID" and a.get("ceil_mode", 0)
         and any((n - (k - 1) * d - 1) % s for n, k, s, d, *_ in axes)),
    Case("negative_same_total", ORT | REF,
         "a SAME pad total (out - 1) * s + dk - n < 0: onnx.reference fails, onnxruntime's "
         "AveragePool-7/10 rejects it, its later kernels pad negatively (crop, shift windows)",
         lambda op, v, shape, a, axes: _same(a) and any(
             (math.ceil(n / s) - 1) * s + min(k, (k - 1) * d + 1) - n < 0
             for n, k, s, d, *_ in axes)),
    Case("ref_ceil_pads_ge_kernel", REF,
         "ceil_mode with a pad >= the kernel size: onnx.reference indexes past its buffer",
         lambda op, v, shape, a, axes: a.get("ceil_mode", 0) == 1 and _pads_ge_kernel(shape, a)),
    Case("ref_auto_pad_dilations", REF, "onnx.reference's auto_pad ignores dilations",
         lambda op, v, shape, a, axes: _auto(a) and any(d > 1 for d in a.get("dilations", []))),
    Case("ort_same_dilations", ORT, "onnxruntime sizes SAME pads by the undilated kernel",
         lambda op, v, shape, a, axes: _same(a) and any(d > 1 for d in a.get("dilations", []))),
    Case("ref_lp_pool_padding", REF,
         "onnx.reference's LpPool scales the sum over input elements by kernel size / their "
         "number where a window covers padding",
         lambda op, v, shape, a, axes: op == "LpPool" and any(
             b or e or (ln - 1) * s + (k - 1) * d + 1 > n for n, k, s, d, ln, b, e in axes)),
    Case("ref_ceil_overhang", REF,
         "ceil_mode with the last window past the padded end: onnx.reference pads half the "
         "overhang at the start (shifting windows) or indexes past its buffer",
         lambda op, v, shape, a, axes: a.get("ceil_mode", 0) == 1 and any(
             (ln - 1) * s + (k - 1) * d + 1 > n + b + e for n, k, s, d, ln, b, e in axes)),
    Case("ort_truncated_length", ORT,
         "a kernel extent beyond the (padded) input: onnxruntime truncates (n + pads - dk) / s "
         "toward 0 where the text floors it",
         lambda op, v, shape, a, axes: any(_ort_truncates(
             *g, a.get("auto_pad", "NOTSET"), a.get("ceil_mode", 0)) for g in axes)),
    Case("ort_empty_window", ORT,
         "a window with no element of X (count_include_pad=0): onnxruntime gives 0, "
         "onnx.reference and the text 0/0 = NaN",
         lambda op, v, shape, a, axes: op == "AveragePool" and not a.get("count_include_pad")
         and any(_empty_window(*g) for g in axes)),
]


def off_cases(op: str, version: int, shape: tuple[int, ...], attrs: dict) -> list[Case]:
    axes = geometry(shape, attrs)
    return [c for c in CASES if c.when(op, version, shape, attrs, axes)]


# --- the test --------------------------------------------------------------------------------

def ours(op: str, x: np.ndarray, opset: int, attrs: dict, backend: str) -> np.ndarray | str:
    with onnx_cupy.backend(backend):
        try:
            return RUN[op](x, opset=opset, **attrs)
        except ValueError as exc:
            return f"error: {exc}"


def describe(v: Any) -> Any:
    return v if isinstance(v, str) else v.shape


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("op", ["AveragePool", "LpPool"])
def test_differential(op):
    rng = np.random.default_rng(20261123 + len(op))
    counts: collections.Counter = collections.Counter()
    misses = []
    for i in range(CONFIGS):
        opset = OPSETS[op][i % len(OPSETS[op])]
        version = version_of(op, opset)
        dtypes = [t for t in FLOAT_DTYPES if t != BF16 or version >= 22]
        dtype = dtypes[(i // len(OPSETS[op])) % len(dtypes)]
        shape, attrs = draw(rng, op, opset)
        where = f"config {i}: {op} opset {opset} {shape} {np.dtype(dtype).name} {attrs}"
        x = rng.uniform(-2, 3, shape).astype(dtype)

        # the oracle
        expected_shape = output_shape(shape, attrs)
        got = ours(op, x, opset, attrs, "numpy")
        if min(expected_shape) < 0:
            assert isinstance(got, str) and "output spatial size" in got, where
            counts["rejected"] += 1
        else:
            assert not isinstance(got, str), f"{where}: {got}"
            assert_close(got, oracle(op, x, attrs), dtype), where
            counts["oracle"] += 1
            if i % 10 == 0:
                assert_close(ours(op, x, opset, attrs, "emulated"), got, dtype), where
                counts["emulated"] += 1

        # the runtimes, on the same values in float32
        m = model(op, opset, shape, attrs)
        results = {"ort": run_ort(m, x.astype(np.float32)),
                   "ref": run_reference(m, x.astype(np.float32))}
        ort, ref = results["ort"], results["ref"]
        cases = off_cases(op, version, shape, attrs)
        off = frozenset().union(*(c.off for c in cases))
        for case in cases:
            counts[f"case:{case.name}"] += 1
        rejected = all(isinstance(r, str) for r in (ort, ref, got))
        counts["all_reject"] += rejected
        if not (close(ort, ref) or rejected):
            assert cases, (f"{where}: undocumented difference: onnxruntime {describe(ort)}, "
                           f"onnx.reference {describe(ref)}, ours {describe(got)}")
            counts["runtimes_differ"] += 1
        both_shape = not isinstance(ort, str) and not isinstance(ref, str) and (
            ort.shape == ref.shape)
        if both_shape and off >= {"ort", "ref"}:
            counts["runtimes_shape_coincide"] += 1   # two documented deviations that coincide
        elif both_shape:
            assert describe(got) == ort.shape, f"{where}: runtimes {ort.shape}, ours {got}"
            counts["runtimes_shape"] += 1
        for judge in ("ort", "ref"):
            if judge in off:
                continue
            counts[f"judged_by_{judge}"] += 1
            if close(got, results[judge], dtype) or all(
                    isinstance(r, str) for r in (got, results[judge])):
                counts[f"agree_{judge}"] += 1
            else:
                misses.append(f"{where}: {judge} {describe(results[judge])}, ours "
                              f"{describe(got)}")

        # shape inference
        inferred = static_shape(m)
        if inferred is not None and both_shape and inferred == ort.shape and not off >= {
                "ort", "ref"}:
            assert got.shape == inferred, where
            counts["inference"] += 1
        elif inferred is not None and describe(got) != inferred:
            counts["inference_differs"] += 1

    print(f"\n{op}: {dict(sorted(counts.items()))}")
    judged = counts["judged_by_ort"] + counts["judged_by_ref"]
    assert (counts["agree_ort"] + counts["agree_ref"]) / judged >= 0.999, "\n".join(misses)
    for case in CASES:   # every documented case is live
        only = {"ref_lp_pool_padding": "LpPool", "ref_average_pool_1_counts_pads": "AveragePool",
                "ort_empty_window": "AveragePool"}.get(case.name, op)
        assert only != op or counts[f"case:{case.name}"] >= 5, case.name
    assert counts["oracle"] + counts["rejected"] == CONFIGS
    assert counts["emulated"] >= CONFIGS // 12
    assert counts["runtimes_shape"] >= CONFIGS * 0.45
    assert counts["judged_by_ort"] >= CONFIGS * 0.4 and counts["judged_by_ref"] >= CONFIGS * 0.3
    assert counts["inference"] >= CONFIGS * 0.4
