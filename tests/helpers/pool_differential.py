"""Differential AveragePool and LpPool: seeded random configurations (every opset and dtype,
pads up to and beyond the kernel, auto_pad, dilations, ceil_mode, count_include_pad, p) run on
onnx-cupy and judged by four: the loop oracle (helpers/pool_oracle.py), onnxruntime,
onnx.reference and ONNX shape inference. The runtimes run float32 models on the same input values.

`evaluate(op, index)` runs configuration `index` once (cached) and records, per check: onnx-cupy
(numpy backend; the emulated kernels on every 10th) matches the oracle, or rejects a negative
length; its output shape equals the runtimes' wherever onnxruntime and onnx.reference give the
same shape (unless documented cases put both off, where a shared shape is a coincidence of two
deviations), and shape inference's static shape wherever both runtimes give that shape too; its
values match each runtime's unless a documented case in CASES puts that runtime off; a
configuration on which the runtimes do not agree falls under such a case.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import onnx
from cases import pool as drawn

import onnx_cupy
from helpers.differential import Record
from helpers.pool_oracle import geometry, output_shape
from helpers.pool_oracle import pool as oracle
from helpers.util import (
    TOL,
    assert_close,
    inferred_shape,
    node_model,
    onnxruntime,
    reference,
)

# the configurations, drawn in the package (the kernel checker runs them too)
CONFIGS, OPS, RUN, configuration, sample = (drawn.CONFIGS, drawn.OPS, drawn.RUN,
                                            drawn.configuration, drawn.sample)

EMULATED_EVERY = 10


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
         "AveragePool-7/10/11 rejects it, its later kernels pad negatively (crop, shift windows)",
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


# --- one configuration ------------------------------------------------------------------------

def ours(op: str, x: np.ndarray, opset: int, attrs: dict, backend: str) -> np.ndarray | str:
    with onnx_cupy.backend(backend):
        try:
            return RUN[op](x, opset=opset, **attrs)
        except ValueError as exc:
            return f"error: {exc}"


def describe(v: Any) -> Any:
    return v if isinstance(v, str) else v.shape


@functools.cache
def evaluate(op: str, index: int) -> Record:
    """Configuration `index` of `op` on onnx-cupy and the four judges; checks: `oracle` (or
    `rejected`), `emulated`, `runtimes_differ` (listed), `runtimes_shape`, `agree_ort` /
    `agree_ref` (each counted as `judged_by_*` too), `inference`; events: `case:<name>`,
    `runtimes_shape_coincide`, `all_reject`, `inference_differs`."""
    c = configuration(op, index)
    record = Record(c)
    x = sample(c)

    # the oracle
    got = ours(op, x, c.opset, c.attrs, "numpy")
    if min(output_shape(c.shape, c.attrs)) < 0:
        record.check("rejected", isinstance(got, str) and "output spatial size" in got,
                     f"a negative output length must be rejected, got {describe(got)}")
    elif isinstance(got, str):
        record.check("oracle", False, got)
    else:
        record.check_raises_nothing("oracle", assert_close, got, oracle(op, x, c.attrs), c.dtype)
        if index % EMULATED_EVERY == 0:
            record.check_raises_nothing("emulated", assert_close,
                                        ours(op, x, c.opset, c.attrs, "emulated"), got, c.dtype)

    # the runtimes, on the same values in float32
    m = model(op, c.opset, c.shape, c.attrs)
    results = {"ort": run_ort(m, x.astype(np.float32)),
               "ref": run_reference(m, x.astype(np.float32))}
    ort, ref = results["ort"], results["ref"]
    cases = off_cases(op, c.version, c.shape, c.attrs)
    off = frozenset().union(*(case.off for case in cases))
    for case in cases:
        record.count(f"case:{case.name}")
    rejected = all(isinstance(r, str) for r in (ort, ref, got))
    if rejected:
        record.count("all_reject")
    if not (close(ort, ref) or rejected):
        record.check("runtimes_differ", bool(cases),
                     f"undocumented difference: onnxruntime {describe(ort)}, onnx.reference "
                     f"{describe(ref)}, ours {describe(got)}")
    both_shape = not isinstance(ort, str) and not isinstance(ref, str) and (
        ort.shape == ref.shape)
    if both_shape and off >= {"ort", "ref"}:
        record.count("runtimes_shape_coincide")   # two documented deviations that coincide
    elif both_shape:
        record.check("runtimes_shape", describe(got) == ort.shape,
                     f"runtimes {ort.shape}, ours {describe(got)}")
    for judge in ("ort", "ref"):
        if judge not in off:
            record.count(f"judged_by_{judge}")
            record.check(f"agree_{judge}", close(got, results[judge], c.dtype) or all(
                isinstance(r, str) for r in (got, results[judge])),
                f"{judge} {describe(results[judge])}, ours {describe(got)}")

    # shape inference
    inferred = static_shape(m)
    if inferred is not None and both_shape and inferred == ort.shape and not off >= {
            "ort", "ref"}:
        record.check("inference", describe(got) == inferred,
                     f"shape inference {inferred}, ours {describe(got)}")
    elif inferred is not None and describe(got) != inferred:
        record.count("inference_differs")
    return record
