"""Differential Resize nearest: which input element each output takes, on seeded random
configurations, against the installed onnxruntime and an oracle computed here independently of
onnx-cupy.

The configurations are drawn in tests/cases/nearest.py, which the kernel
checker runs too): opsets 10-19, every coordinate transformation mode (roi for
tf_crop_and_resize) and nearest mode, scales (decimal ones such as 0.3 and 0.6 whose float32 form
is not exact, and random ones) or sizes, up- and down-sampling, 1-3 resized axes of up to a few
hundred elements, keep_aspect_ratio_policy and axes from opset 18. X holds each element's own flat
index (int32), so an output names the element it took. `evaluate(index)` runs onnx-cupy (NumPy
path; the emulated kernels too on every EMULATED_EVERY-th), onnxruntime and the oracle:
- onnx-cupy equals the oracle everywhere: onnxruntime's float32 formulas and tie band
  (nearest_rounding.TIE), with the lengths and coordinates docs/semantics.md keeps, and
  half_pixel_symmetric in exact rational arithmetic (its text);
- onnx-cupy equals onnxruntime element for element, except where a case of LISTED applies: each
  names a row of docs/semantics.md where onnx-cupy keeps another length or coordinate than
  onnxruntime, and what it is checked against there instead."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from cases import nearest as drawn
from cases.nearest import FILL, Config, configuration

from helpers import nearest_rounding
from helpers.differential import Record
from helpers.util import node_model, onnxruntime, reference
from onnx_cupy.core import execution

# the configurations, drawn in the package (the kernel checker runs them too)
COUNT, name = drawn.COUNT, drawn.name
COORDINATE_MODES, NEAREST_MODES = drawn.COORDINATE_MODES, drawn.NEAREST_MODES
EMULATED_EVERY = 10


class Axis:
    """One resized axis as docs/semantics.md defines it (input n, output m, scale s, width w,
    roi r0..r1), computed here from the configuration."""

    def __init__(self, n: int, m: int, s: float, w: float, r0: float, r1: float) -> None:
        self.n, self.m, self.s, self.w, self.r0, self.r1 = n, m, s, w, r0, r1

    def kept(self, crop: bool) -> bool:
        """Left as is: scale 1 and length kept (under tf_crop_and_resize only with roi 0..1)."""
        return self.s == 1 and self.m == self.n and (not crop or (self.r0, self.r1) == (0, 1))


def axes_of(config: Config) -> list[Axis]:
    k = len(config.axes())
    roi = config.inputs.get("roi")
    rois = [(0.0, 1.0)] * k if roi is None else [(float(roi[i]), float(roi[k + i]))
                                                 for i in range(k)]
    return [Axis(n, m, s, w, *r) for (n, m, s, w), r in zip(
        nearest_rounding.axes(config.shape, config.attrs, config.inputs), rois)]


# ---------------------------------------------------------------- the oracle

def _exact_scale(config: Config, a: Axis) -> Fraction:
    """The axis's scale as a rational: the float32 scale given, or from sizes m / n (with a
    keep_aspect_ratio_policy, the least or greatest of the axes' ratios)."""
    if "scales" in config.inputs:
        return Fraction(a.s)
    ratios = [Fraction(int(m), b.n) for m, b in zip(config.inputs["sizes"], axes_of(config))]
    policy = config.attrs.get("keep_aspect_ratio_policy", "stretch")
    return {"stretch": Fraction(a.m, a.n), "not_larger": min(ratios),
            "not_smaller": max(ratios)}[policy]


def _exact_symmetric(a: Axis, s: Fraction, rule: str) -> np.ndarray:
    """half_pixel_symmetric's picks in exact arithmetic: x = n/2 (1 - m/w) + (y + 1/2)/s - 1/2
    with w = n s."""
    w = a.n * s
    offset = Fraction(a.n, 2) * (1 - a.m / w)
    out = []
    for y in range(a.m):
        x = offset + (y + Fraction(1, 2)) / s - Fraction(1, 2)
        low = math.floor(x)
        up = {"floor": False, "ceil": x > low, "round_prefer_floor": x - low > Fraction(1, 2),
              "round_prefer_ceil": x - low >= Fraction(1, 2)}[rule]
        out.append(min(max(low + up, 0), a.n - 1))
    return np.array(out, np.int64)


def _crop(a: Axis, rule: str) -> tuple[np.ndarray, np.ndarray]:
    """tf_crop_and_resize's picks and outside mask: x in float32 as onnxruntime computes it
    (r0 (n - 1) + y (r1 - r0) (n - 1) / (m - 1); one output: 0.5 (r0 + r1) (n - 1))."""
    f = np.float32
    r0, r1, last = f(a.r0), f(a.r1), f(a.n - 1)
    if a.m > 1:
        x = r0 * last + np.arange(a.m, dtype=f) * (r1 - r0) * last / f(a.m - 1)
    else:
        x = np.full(a.m, f(0.5 * float(r0 + r1) * (a.n - 1)))
    x = x.astype(np.float64)
    return nearest_rounding.picks(x, rule, a.n, a.s, nearest_rounding.TIE), (x < 0) | (x > a.n - 1)


def oracle(config: Config) -> np.ndarray:
    """The expected output: each element's flat input index, FILL where extrapolated."""
    index = np.arange(math.prod(config.shape)).reshape(config.shape)
    outside = np.zeros(config.shape, bool)
    crop = config.ctm == "tf_crop_and_resize"
    for d, a in zip(config.axes(), axes_of(config)):
        if a.kept(crop):
            continue
        if crop:
            picked, out = _crop(a, config.rule)
        elif config.ctm == "half_pixel_symmetric":
            picked = _exact_symmetric(a, _exact_scale(config, a), config.rule)
            out = np.zeros(a.m, bool)
        else:
            x = nearest_rounding.coordinates(config.ctm, a.n, a.m, a.s, a.w, True)
            picked = nearest_rounding.picks(x, config.rule, a.n, a.s, nearest_rounding.TIE)
            out = np.zeros(a.m, bool)
        if a.n == 0:   # an empty axis stays empty (m = 0)
            picked = np.zeros(0, np.int64)
        index, outside = np.take(index, picked, axis=d), np.take(outside, picked, axis=d)
        shape = [1] * len(config.shape)
        shape[d] = a.m
        outside = outside | out.reshape(shape)
    return np.where(outside, FILL, index)


# ---------------------------------------------------------------- where onnxruntime differs

def _ort_length(a: Axis, config: Config) -> int:
    """onnxruntime's output length: floor(float32(n) * float32(s)) from scales."""
    if "scales" in config.inputs:
        return math.floor(np.float32(a.n) * np.float32(a.s))
    return a.m


@dataclass(frozen=True)
class Listed:
    """A row of docs/semantics.md where onnx-cupy keeps another length or coordinate than
    onnxruntime: `on(config, axis)` tells the resized axes it puts onnxruntime off on (None:
    the whole output); `checked` says what onnx-cupy is checked against there instead of
    onnxruntime (besides the oracle)."""

    name: str
    on: Callable[[Config, Axis], bool] | None
    checked: str
    why: str
    whole: Callable[[Config], bool] = lambda c: False

    def applies(self, config: Config) -> bool:
        if self.on is None:
            return self.whole(config)
        return any(self.on(config, a) for a in axes_of(config))


def _symmetric(config: Config) -> bool:
    return config.ctm == "half_pixel_symmetric"


LISTED = (
    Listed("length_float32", lambda c, a: _ort_length(a, c) != a.m,
           "the oracle",
           "output length: onnxruntime floors n * scale rounded to float32, onnx-cupy (as "
           "onnx.reference and shape inference) in float64"),
    Listed("align_corners_fractional_width",
           lambda c, a: c.ctm == "align_corners" and a.w != a.m and not a.kept(False),
           "the oracle",
           "align_corners where n * scale is fractional: onnx-cupy (as onnx.reference, which "
           "ONNX's node tests expect) divides by the width n * s - 1, onnxruntime by m - 1"),
    Listed("same_shape_resampled", None, "the oracle",
           "output shape equal to the input's while a scale differs from 1 (or a roi crops): "
           "onnxruntime copies X; onnx-cupy (as the text and onnx.reference) resamples",
           lambda c: all(a.m == a.n for a in axes_of(c)) and not all(
               a.kept(c.ctm == "tf_crop_and_resize") for a in axes_of(c))),
    Listed("crop_roi_on_unscaled_axis",
           lambda c, a: c.ctm == "tf_crop_and_resize" and a.s == 1 and a.m == a.n and (
               a.r0, a.r1) != (0, 1),
           "the oracle",
           "tf_crop_and_resize with a roi on an axis of scale 1: onnxruntime ignores the roi "
           "there; onnx-cupy (as the text and onnx.reference) crops"),
    Listed("half_pixel_symmetric_exact", lambda c, a: _symmetric(c),
           "the oracle (exact arithmetic); where onnxruntime differs, onnx.reference is run",
           "half_pixel_symmetric: onnx-cupy computes the text's formula with one rounding (exact "
           "integers and ties); onnxruntime's float32 offset n/2 (1 - m/w) (then float64) lands "
           "a rounding off an exact integer or tie, and onnx.reference (five float64 roundings) "
           "sides with exact arithmetic there, except rarely where its roundings land off it "
           "the same way"),
)


def listed(config: Config) -> list[Listed]:
    return [k for k in LISTED if k.applies(config)]


# ---------------------------------------------------------------- running

def run_ours(config: Config, backend: str = "numpy") -> np.ndarray:
    with execution.backend(backend):
        return drawn.run(config)


def _model(config: Config) -> tuple[Any, dict[str, np.ndarray]]:
    """The one-node model (roi/scales/sizes as initializers) and its feeds."""
    feeds = dict(config.inputs)
    if config.opset == 10:
        names = ["scales"]
    else:
        names = ["roi", "scales"] + (["sizes"] if "sizes" in feeds else [])
        feeds.setdefault("roi", np.zeros(0, np.float32))
        feeds.setdefault("scales", np.zeros(0, np.float32))
    model = node_model("Resize", [("X", np.int32)] + [(n, feeds[n].dtype) for n in names],
                       config.attrs, config.opset, initializers={n: feeds[n] for n in names})
    return model, {"X": drawn.sample(config)}


def run_onnxruntime(config: Config) -> np.ndarray:
    return onnxruntime(*_model(config))[0]


def run_reference(config: Config) -> np.ndarray:
    return reference(*_model(config))[0]


def _attempt(fn: Callable[..., np.ndarray], *args: Any) -> np.ndarray | Exception:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a runtime rejecting a configuration is an outcome)
        return exc


def _equal(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape and bool(
        np.array_equal(a, b))


def _differing(a: Any, b: np.ndarray) -> str:
    """Where a result differs from the expected one, briefly."""
    if not isinstance(a, np.ndarray):
        return repr(a)[:200]
    if a.shape != b.shape:
        return f"shape {a.shape}, expected {b.shape}"
    at = np.argwhere(a != b)[:3]
    return ", ".join(f"{tuple(int(v) for v in i)}: {a[tuple(i)]} (expected {b[tuple(i)]})"
                     for i in at)


def axis_picks(config: Config, result: np.ndarray) -> list[np.ndarray]:
    """Per resized axis (config.axes() order), the input coordinate each output coordinate took
    (FILL where extrapolated), read off a result of X = flat indices along a line of that axis
    whose other coordinates are inside (not extrapolated), where there is one."""
    picks, inside = [], result != FILL
    first = [int(np.argmax(inside.any(axis=tuple(o for o in range(result.ndim) if o != e))))
             for e in range(result.ndim)]
    for d in config.axes():
        line = result[tuple(slice(None) if e == d else first[e] for e in range(result.ndim))]
        along = np.unravel_index(np.maximum(line, 0), config.shape)[d]
        picks.append(np.where(line == FILL, FILL, along))
    return picks


def _judge_symmetric(record: Record, config: Config, ort: np.ndarray,
                     expected: np.ndarray) -> None:
    """half_pixel_symmetric where onnxruntime's result differs from the exact one: wherever
    its pick along an axis differs, onnx.reference's equals the exact one
    (`reference_sides_with_exact`) or onnxruntime's (`runtimes_round_off_exact`: both off)."""
    ref = _attempt(run_reference, config)
    if not (isinstance(ref, np.ndarray) and ref.shape == ort.shape == expected.shape):
        record.check("reference_sides_with_exact", False, _differing(ref, expected))
        return
    sides, both, seen = True, False, []
    for exact, by_ort, by_ref in zip(*(axis_picks(config, r) for r in (expected, ort, ref))):
        off = exact != by_ort
        both |= bool(np.any(off & (by_ref == by_ort)))
        sides &= bool(np.all((by_ref == exact) | ~off | (by_ref == by_ort)))
        seen.append(f"exact {exact}, onnxruntime {by_ort}, onnx.reference {by_ref}")
    if both:
        record.count("runtimes_round_off_exact")
    record.check("reference_sides_with_exact", sides, "; ".join(seen))


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index`: checks `oracle` (onnx-cupy equals it), `emulated_equals_numpy`
    (every EMULATED_EVERY-th), `equals_onnxruntime` (where no listed case applies),
    events `ort_rejects`, `listed:<name>`, `listed_ort_differs` (a listed case applies and
    onnxruntime's result differs from ours) and, for half_pixel_symmetric where onnxruntime
    differs, `reference_sides_with_exact` or `runtimes_round_off_exact` (onnx.reference gives
    onnxruntime's result: both off exact arithmetic)."""
    config = configuration(index)
    record = Record(config)
    expected = oracle(config)
    ours = _attempt(run_ours, config)
    record.check("oracle", _equal(ours, expected), _differing(ours, expected))
    if index % EMULATED_EVERY == 0:
        emulated = _attempt(run_ours, config, "emulated")
        record.check("emulated_equals_numpy", _equal(emulated, ours), _differing(emulated, ours))
    ort = _attempt(run_onnxruntime, config)
    if not isinstance(ort, np.ndarray):
        record.count("ort_rejects")
        return record
    cases = listed(config)
    for case in cases:
        record.count(f"listed:{case.name}")
    if not cases:
        record.check("equals_onnxruntime", _equal(ours, ort), _differing(ours, ort))
        return record
    if _equal(ours, ort):
        return record
    record.count("listed_ort_differs")
    if _symmetric(config):
        _judge_symmetric(record, config, ort, expected)
    elif all(case.on is not None for case in cases) and 0 not in ort.shape and not (
            np.all(expected == FILL) or np.all(ort == FILL)):   # else nothing to read
        compared = [(by_ours, by_ort) for a, by_ours, by_ort in zip(axes_of(config), *(
            axis_picks(config, r) for r in (expected, ort)))       # the axes no case puts
                    if not any(case.on(config, a) for case in cases)]  # onnxruntime off on
        if compared:
            record.check("axis_equals_onnxruntime", all(_equal(*c) for c in compared),
                         "; ".join(f"ours {a}, onnxruntime {b}" for a, b in compared))
    return record
