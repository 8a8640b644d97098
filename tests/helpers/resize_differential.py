"""Differential Resize: seeded random configurations run on onnx-cupy, onnxruntime (CPU),
onnx.reference and onnx shape inference, compared per configuration.

`draw` makes a configuration (opsets 10-19, every mode, coordinate transformation mode and
nearest mode, antialias, cubic_coeff_a, exclude_outside, extrapolation_value, roi, axes with
negative values, keep_aspect_ratio_policy, scales and sizes, float and integer dtypes), mostly of
the shapes onnxruntime's CPU kernels accept (linear: ranks 2-5 resizing inner axes; cubic: ranks
2 and 4). `compare` runs it everywhere and returns an `Outcome`; `KNOWN` lists, as predicates on
the configuration, every case where the runtimes disagree and which side onnx-cupy follows;
`evaluate(index)` draws configuration `index` from its own seeded generator, compares it and keeps
(cached) what each check found.
onnxruntime runs dtypes it lacks (bfloat16, float64; 16-, 64- and unsigned 32-bit integers)
through a carrier dtype holding the same values (float32, int32)."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from cases import resize as drawn
from cases.resize import (
    BF16,
    Axis,
    Config,
    axes_of,
    configuration,
    sample,
)

from helpers import nearest_rounding
from helpers.differential import Record
from helpers.util import inferred_shape, node_model, onnxruntime, reference
from onnx_cupy.core import execution

# the configurations, drawn in the package (the kernel checker runs them too)
COUNT, EXTRAS, generator = drawn.COUNT, drawn.EXTRAS, drawn.generator

ORT_NATIVE = {"float16", "float32", "int8", "uint8", "int32"}
# values compared in float64: (rtol, atol) per dtype; float64 runs onnxruntime in float32
TOL = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-4),
       "float64": (1e-4, 1e-4)}


# ---------------------------------------------------------------- running

def _node_inputs(config: Config) -> list[str]:
    if config.opset == 10:
        return ["X", "scales"]
    names = ["X"] + [n if n in config.inputs else "" for n in ("roi", "scales", "sizes")]
    if config.opset < 18:  # roi (and at 11 scales) are required inputs: empty when unused
        names[1] = "roi"
        if config.opset == 11:
            names[2] = "scales"
    while not names[-1]:
        names.pop()
    return names


def _feeds(config: Config) -> dict[str, np.ndarray]:
    feeds = dict(config.inputs)
    for name in _node_inputs(config)[1:]:
        if name and name not in feeds:
            feeds[name] = np.zeros(0, np.float32)
    return feeds


def model(config: Config, dtype: np.dtype, initializers: bool = False) -> onnx.ModelProto:
    """The one-node model; roi/scales/sizes as initializers, X's shape declared (shape
    inference), or as inputs."""
    attrs = dict(config.attrs)
    if "axes" in attrs and not initializers:  # onnx.reference takes no negative axes
        attrs["axes"] = config.axes()
    names = _node_inputs(config)
    feeds = _feeds(config)
    inputs = [("X", dtype)] + [(n, feeds[n].dtype if n else None) for n in names[1:]]
    return node_model("Resize", inputs, attrs, config.opset,
                      shape=config.shape if initializers else None,
                      initializers={n: feeds[n] for n in names[1:] if n} if initializers else None)


def _carrier(dtype: np.dtype) -> np.dtype:
    if dtype.name in ORT_NATIVE:
        return dtype
    return np.dtype(np.float32 if dtype.kind == "f" or dtype == BF16 else np.int32)


def run_onnxruntime(config: Config, x: np.ndarray) -> np.ndarray:
    carrier = _carrier(x.dtype)
    y = onnxruntime(model(config, carrier), {"X": x.astype(carrier), **_feeds(config)})[0]
    if carrier == x.dtype:
        return y
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(y.astype(np.int64), info.min, info.max).astype(x.dtype)
    return y.astype(x.dtype)


def run_reference(config: Config, x: np.ndarray) -> np.ndarray:
    return reference(model(config, x.dtype), {"X": x, **_feeds(config)})[0]


def infer_shape(config: Config) -> tuple[int, ...] | None:
    """The output shape onnx shape inference gives (scales/sizes as initializers), None when it
    infers no static shape."""
    return inferred_shape(model(config, config.dtype, True))


def run_ours(config: Config, x: np.ndarray, backend: str = "numpy") -> np.ndarray:
    with execution.backend(backend):
        return drawn.run(config, x)


def _attempt(fn: Callable, *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a runtime rejecting a configuration is an outcome)
        return exc


# ---------------------------------------------------------------- comparing

def close(config: Config, a: np.ndarray, b: np.ndarray, integer_slack: int = 0) -> bool:
    """Same shape and values within the dtype's tolerance; integers exact, or within
    `integer_slack` for interpolation (both runtimes weigh cubic taps in float32, so a float64
    sum near k + 0.5 may round the other way)."""
    if a.shape != b.shape:
        return False
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if config.dtype.kind in "iu":
        slack = 0 if config.mode == "nearest" else integer_slack
        return bool(np.all(np.abs(a64 - b64) <= slack))
    rtol, atol = TOL[config.dtype.name]
    if config.mode == "cubic":
        rtol, atol = max(rtol, 1e-4), max(atol, 1e-4)
    return bool(np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))


@dataclass
class Outcome:
    """One configuration: what each runs gave (an array or the exception raised)."""

    config: Config
    ours: Any
    ort: Any
    ref: Any
    inferred: Any
    emulated: Any = None

    def ok(self, name: str) -> bool:
        return isinstance(getattr(self, name), np.ndarray)

    def runtimes_agree_on_shape(self) -> bool:
        return self.ok("ort") and self.ok("ref") and self.ort.shape == self.ref.shape

    def runtimes_agree(self) -> bool:
        return self.runtimes_agree_on_shape() and close(self.config, self.ort, self.ref)


def compare(config: Config, x: np.ndarray, emulated: bool = False) -> Outcome:
    out = Outcome(config, _attempt(run_ours, config, x), _attempt(run_onnxruntime, config, x),
                  _attempt(run_reference, config, x), _attempt(infer_shape, config))
    if emulated:
        out.emulated = _attempt(run_ours, config, x, "emulated")
    return out


# ---------------------------------------------------------------- known disagreements

def _moved(a: Axis, config: Config) -> bool:
    """Whether the axis is resampled at all (not scale 1 with its whole length kept)."""
    crop = config.ctm == "tf_crop_and_resize" and a.roi != (0.0, 1.0)
    return not (a.s == 1 and a.m == a.n) or crop


def coordinates(config: Config, a: Axis, single: bool = False,
                rounded_roi: bool = False) -> np.ndarray:
    """x of every output coordinate of the axis by the text's formula: in float64, or every
    operation in float32 (`single`, as onnxruntime), or with onnx.reference's float32 roi terms
    (`rounded_roi`; its width w stands where the text has length_resized)."""
    f = np.float32 if single else np.float64
    y = np.arange(a.m, dtype=f)
    n, m, w, s, (r0, r1) = f(a.n), f(a.m), f(a.w), f(a.s), map(f, a.roi)
    ctm, half, one = config.ctm, f(0.5), f(1)
    if ctm in ("half_pixel", "pytorch_half_pixel"):
        x = (y + half) / s - half
        if ctm == "pytorch_half_pixel" and a.m <= 1:
            x = np.zeros_like(y)
    elif ctm == "half_pixel_symmetric":  # onnxruntime: float32 offset, (y + 0.5) / s in double
        offset = n / f(2) * (one - m / (s * n if single else w))
        x = f(offset + (y.astype(np.float64) + 0.5) / float(s) - 0.5)
    elif ctm == "align_corners":
        x = y * (n - one) / (w - one) if a.w > 1 else np.zeros_like(y)
    elif ctm == "asymmetric":
        x = y / s
    elif ctm == "tf_half_pixel_for_nn":
        x = (y + half) / s
    elif rounded_roi:  # in the roi's dtype
        t = config.inputs["roi"].dtype.type if "roi" in config.inputs else np.float32
        start, span = float(t(t(r0) * (a.n - 1))), float(t(r1) - t(r0))
        x = start + y * span * (a.n - 1) / (a.w - 1) if a.w != 1 else np.full(a.m, start + span
                                                                             * (a.n - 1) / 2)
    else:
        x = r0 * (n - one) + y * (r1 - r0) * (n - one) / (m - one) if a.m > 1 else np.full(
            a.m, half * (r0 + r1) * (n - one), dtype=f)
    return np.asarray(x, dtype=np.float64)


def decisions(config: Config, x: np.ndarray, a: Axis, tie: float = 0.0) -> tuple:
    """What a coordinate decides beyond interpolation weights: the tf_crop_and_resize outside
    mask and, for nearest, the input index chosen (a fraction within `tie` of 0.5 rounding as
    the tie)."""
    outside = tuple((x < 0) | (x > a.n - 1)) if config.ctm == "tf_crop_and_resize" else ()
    if config.mode != "nearest":
        return outside, ()
    rule = config.attrs.get("nearest_mode", "round_prefer_floor" if config.opset > 10 else "")
    return outside, tuple(nearest_rounding.picks(x, rule, a.n, a.s, tie))


def _runtimes_decide_differently(config: Config) -> bool:
    """Whether onnxruntime's float32 coordinates and tie band and onnx.reference's coordinates
    (float64; float32 roi terms; exact ties) fall on different sides of a rounding or crop
    boundary."""
    crop = config.ctm == "tf_crop_and_resize"
    return any(decisions(config, coordinates(config, a, single=True), a, nearest_rounding.TIE)
               != decisions(config, coordinates(config, a, rounded_roi=crop), a)
               for a in axes_of(config) if _moved(a, config))


def _reference_loses_fraction(config: Config) -> bool:
    """onnx.reference finds the taps around x + p (p = half the taps, rounded up): where x has
    a fraction below half a unit in the last place of x + p, that sum is an integer and its
    window starts one tap early."""
    for a in axes_of(config):
        if not _moved(a, config) or a.m == 0:
            continue
        s = min(a.s, 1.0) if config.attrs.get("antialias") else 1.0
        support = 2 if config.mode == "cubic" else 1
        start = math.floor(-support / s) + 1 if s < 1 else 1 - support
        pad = math.ceil((2 - 2 * start) / 2)
        x = coordinates(config, a, rounded_roi=config.ctm == "tf_crop_and_resize")
        if np.any((x != np.floor(x)) & (x + pad == np.floor(x + pad))):
            return True
    return False


def _integer_fill_differs(config: Config) -> bool:
    """onnxruntime converts extrapolation_value to an integer dtype by a C cast (truncation,
    wrapping out of range), onnx.reference rounds half to even and saturates."""
    if config.dtype.kind not in "iu" or config.ctm != "tf_crop_and_resize":
        return False
    v = config.attrs.get("extrapolation_value", 0.0)
    info = np.iinfo(config.dtype)
    return v != int(v) or not info.min <= v <= info.max


@dataclass(frozen=True)
class Known:
    """A documented case where onnxruntime and onnx.reference disagree: `applies` tells it from
    the configuration alone; `follows` is the side onnx-cupy gives ('ort' or 'ref'; 'exact':
    neither: test_resize.py::test_half_pixel_symmetric_exact_coordinates)."""

    name: str
    follows: str
    applies: Callable[[Config], bool]
    why: str


KNOWN = (
    Known("integer_interpolation", "ref",
          lambda c: c.dtype.kind in "iu" and c.mode != "nearest",
          "integer linear/cubic: onnxruntime truncates the float result, onnx.reference rounds "
          "half to even (kept: rounding is the more useful, exact-tie behaviour)"),
    Known("align_corners_fractional_width", "ref",
          lambda c: c.ctm == "align_corners" and any(a.w != a.m for a in axes_of(c)),
          "align_corners where n * scale is fractional: onnx.reference divides by "
          "output_width - 1 (ONNX's node tests expect it), onnxruntime by length_resized - 1"),
    Known("pytorch_half_pixel_length_one", "ort",
          lambda c: c.ctm == "pytorch_half_pixel" and any(a.m == 1 and _moved(a, c)
                                                          for a in axes_of(c)),
          "pytorch_half_pixel with output length 1: the text and onnxruntime sample x = 0; "
          "onnx.reference takes -0.5 (width 1) or the general formula (fractional width)"),
    Known("crop_fractional_width", "ort",
          lambda c: c.ctm == "tf_crop_and_resize" and any(a.w != a.m for a in axes_of(c)),
          "tf_crop_and_resize where the target width is fractional: the text and onnxruntime "
          "divide by length_resized - 1, onnx.reference by output_width - 1"),
    Known("crop_roi_on_unscaled_axis", "ref",
          lambda c: c.ctm == "tf_crop_and_resize" and any(
              a.s == 1 and a.m == a.n and a.roi != (0.0, 1.0) for a in axes_of(c)),
          "tf_crop_and_resize with a roi on an axis of scale 1: onnxruntime ignores the roi "
          "there; the text and onnx.reference crop"),
    Known("same_shape_resampled", "ref",
          lambda c: all(a.m == a.n for a in axes_of(c)) and any(_moved(a, c)
                                                                for a in axes_of(c)),
          "output shape equal to the input's while a scale differs from 1: onnxruntime copies "
          "X; the text and onnx.reference resample (x = f(y, scale))"),
    Known("antialias_same_length", "ref",
          lambda c: bool(c.attrs.get("antialias")) and any(a.m == a.n and a.s != 1
                                                           for a in axes_of(c)),
          "antialias on an axis whose length stays while its scale differs from 1: onnxruntime "
          "leaves the axis as is; the text and onnx.reference resample it"),
    Known("coordinates_float32", "ort",
          lambda c: c.ctm not in ("tf_crop_and_resize", "half_pixel_symmetric")
          and _runtimes_decide_differently(c),
          "nearest at a rounding boundary: onnxruntime computes the coordinate in float32 and "
          "rounds a fraction within 1e-6 of 0.5 as the tie, landing on the other side than "
          "onnx.reference's float64 value and exact ties; onnx-cupy computes it as onnxruntime "
          "(test_nearest_rounding.py, test_nearest_differential.py)"),
    Known("half_pixel_symmetric_boundary", "exact",
          lambda c: c.ctm == "half_pixel_symmetric" and (_runtimes_decide_differently(c)
                                                          or _reference_loses_fraction(c)),
          "half_pixel_symmetric at a rounding boundary: onnxruntime (float32) and "
          "onnx.reference (five float64 roundings, then its window search) land on different "
          "sides; onnx-cupy computes the equal (n - 1) / 2 + (2y + 1 - m) / (2s), one rounding"),
    Known("crop_coordinates_float32", "ort",
          lambda c: c.ctm == "tf_crop_and_resize" and _runtimes_decide_differently(c),
          "tf_crop_and_resize at a crop or rounding boundary: onnxruntime computes the "
          "coordinate in float32 (as TensorFlow's CropAndResize), onnx.reference in float64 "
          "from float32 roi terms; they land on different sides"),
    Known("reference_window_shift", "ort",
          lambda c: c.ctm != "half_pixel_symmetric" and _reference_loses_fraction(c),
          "x a few units in the last place above an integer: onnx.reference searches taps "
          "around x + padding, where the fraction rounds away, and starts its window one tap "
          "early (onnxruntime and the text take the taps around x)"),
    Known("integer_extrapolation_value", "ref",
          _integer_fill_differs,
          "a fractional or out-of-range extrapolation_value in an integer dtype: onnxruntime "
          "truncates (and wraps), onnx.reference rounds half to even and saturates"),
    Known("length_float32", "ref",
          lambda c: c.inputs.get("scales", np.zeros(0)).size > 0 and any(
              math.floor(np.float32(a.n) * np.float32(a.s)) != a.m for a in axes_of(c)),
          "output length: onnxruntime floors n * scale rounded to float32, onnx.reference and "
          "shape inference floor it in float64"),
)


def known(config: Config) -> list[Known]:
    return [k for k in KNOWN if k.applies(config)]


EMULATED_EVERY = 10
name = drawn.name  # the test ids


# ---------------------------------------------------------------- one configuration

def _follow(record: Record, o: Outcome, kinds: list[Known], side: str, check: str) -> None:
    """Where every known case applying follows `side`, onnx-cupy must give that side's result."""
    sides = {k.follows for k in kinds}
    if sides == {"exact"}:
        record.count("exact_side")
    elif kinds and sides != {side}:
        record.count("mixed_sides")
    else:
        record.check(check, o.ok("ours") and close(o.config, o.ours, getattr(o, side), 1),
                     f"ours {_shape(o.ours)}, {side} {_shape(getattr(o, side))}")


def _shape(result: Any) -> Any:
    return result.shape if isinstance(result, np.ndarray) else repr(result)


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index` on onnx-cupy (numpy; emulated on every EMULATED_EVERY-th), the
    runtimes and shape inference. Checks: `ours_ran`, `emulated_equals_numpy`, `shape` (where
    the runtimes agree on it), `shape_inference` (where it is static and equals theirs),
    `values` (where the runtimes agree; a failure inside a listed case is tolerated: the runtimes
    can agree by coincidence there), `disagreement_listed`, `follows_listed_side`, `only_ort` /
    `only_ref` (where one runtime rejects the configuration). Events: `ort_ran`, `ref_ran`,
    `inferred_static`, `inference_differs_from_runtimes`, `known:<name>`, `exact_side`,
    `mixed_sides`."""
    config = configuration(index)
    o = compare(config, sample(generator(index, 1), config), index % EMULATED_EVERY == 0)
    record = Record(config)
    record.check("ours_ran", o.ok("ours"), _shape(o.ours))
    for runtime in ("ort", "ref"):
        if o.ok(runtime):
            record.count(f"{runtime}_ran")
    if o.emulated is not None:
        record.check("emulated_equals_numpy", o.ok("ours") and o.ok("emulated")
                     and close(config, o.ours, o.emulated), f"emulated {_shape(o.emulated)}")
    inferred = o.inferred if isinstance(o.inferred, tuple) else None
    if inferred is not None:
        record.count("inferred_static")
    if o.runtimes_agree_on_shape():
        record.check("shape", o.ok("ours") and o.ours.shape == o.ort.shape,
                     f"runtimes {o.ort.shape}, ours {_shape(o.ours)}")
        if inferred is not None and inferred != o.ort.shape:
            record.count("inference_differs_from_runtimes")
        elif inferred is not None:
            record.check("shape_inference", o.ok("ours") and o.ours.shape == inferred,
                         f"shape inference {inferred}, ours {_shape(o.ours)}")
    if o.runtimes_agree():
        record.check("values", o.ok("ours") and (close(config, o.ours, o.ref, 1)
                                                 or close(config, o.ours, o.ort, 1)),
                     "the runtimes agree, ours differs", tolerate=bool(known(config)))
    elif o.ok("ort") and o.ok("ref"):
        kinds = known(config)
        record.check("disagreement_listed", bool(kinds),
                     f"the runtimes disagree (onnxruntime {o.ort.shape}, onnx.reference "
                     f"{o.ref.shape}) and no listed case applies")
        for k in kinds:
            record.count(f"known:{k.name}")
        if kinds:
            _follow(record, o, kinds, kinds[0].follows, "follows_listed_side")
    elif o.ok("ort") != o.ok("ref"):
        side = "ort" if o.ok("ort") else "ref"
        _follow(record, o, known(config), side, f"only_{side}")
    return record
