"""Differential GridSample: configurations run on onnx-cupy, the loop oracle
(helpers/grid_oracle.py), onnxruntime (CPU) and onnx.reference, compared per configuration.

The configurations are drawn in tests/cases/grid.py (the kernel checker
runs them too): configuration `index` takes its mode, padding mode, align_corners, X dtype and
spatial rank from the product BASES (so every combination of them comes up, COUNT // len(BASES)
times), and draws the rest from its own seeded generator: the opset (16 for 2-D only, with its
mode names), shapes (odd sizes, several channels and batch items), the grid's dtype (mostly
X's), its positions (uniform within 1 to 6 of the ends, on a 1/8 lattice where exact ties come
up) and, in some, NaN, infinite and far-away positions. `KNOWN` lists, as predicates on the
configuration, every case where the runtimes disagree and the side onnx-cupy follows ("ort", "ref",
or "exact": neither, the oracle decides); `evaluate(index)` keeps (cached) what each check found."""
from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from cases import grid as drawn
from cases.grid import BF16, Config, configuration, inputs, name

from helpers import grid_oracle
from helpers.differential import Record
from helpers.util import node_model, onnxruntime, reference
from onnx_cupy.core import execution

# the configurations, drawn in the package (the kernel checker runs them too)
BASES, COUNT = drawn.BASES, drawn.COUNT
EMULATED_EVERY = 10
# values compared in float64 (rtol, atol) per dtype: the runtimes sum in another order
TOL = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2), "float32": (1e-4, 1e-5),
       "float64": (1e-9, 1e-10)}


# ---------------------------------------------------------------- running

def run_ours(c: Config, x: np.ndarray, g: np.ndarray, backend: str = "numpy") -> np.ndarray:
    with execution.backend(backend):
        return drawn.run(c, x, g)


def _model(c: Config) -> Any:
    return node_model("GridSample", [("X", c.dtype), ("grid", c.grid_dtype)], c.attrs, c.opset)


def run_onnxruntime(c: Config, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return onnxruntime(_model(c), {"X": x, "grid": g})[0]


def run_reference(c: Config, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return reference(_model(c), {"X": x, "grid": g})[0]


def run_oracle(c: Config, x: np.ndarray, g: np.ndarray) -> np.ndarray:
    y = grid_oracle.grid_sample(x, g, c.mode, c.padding, bool(c.align_corners))
    if c.dtype.kind in "iu" and c.mode != "nearest":
        info = np.iinfo(c.dtype)
        y = np.clip(np.nan_to_num(y, nan=0.0), info.min, info.max)
    return y


def _attempt(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a runtime rejecting a configuration is an outcome)
        return exc


def close(c: Config, a: np.ndarray, b: np.ndarray, tolerance: str | None = None) -> bool:
    """Same shape and values within the tolerance of X's dtype and, where coordinates are
    float32, float32's (`tolerance` names a coarser one); integers within 1 (a float sum near
    k + 0.5 may round either way), exact for nearest; NaN equals NaN."""
    if a.shape != b.shape:
        return False
    if a.dtype.kind not in "iufV" or b.dtype.kind not in "iufV":
        return bool(np.array_equal(a, b))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if c.dtype.kind in "iu":
        return bool(np.all(np.abs(a64 - b64) <= (0 if c.mode == "nearest" else 1)))
    names = [c.dtype.name, "float32" if c.grid_dtype != np.float64 else c.dtype.name]
    if tolerance:
        names.append(tolerance)
    rtol, atol = (max(TOL[n][i] for n in names) for i in (0, 1))
    return bool(np.allclose(a64, b64, rtol=rtol, atol=atol, equal_nan=True))


def oracle_close(c: Config, ours: np.ndarray, oracle: np.ndarray) -> bool:
    """Ours against the oracle: integers within a half of its float sum (rounded, saturated)."""
    if c.dtype.kind in "iu" and c.mode != "nearest":
        return ours.shape == oracle.shape and bool(
            np.all(np.abs(ours.astype(np.float64) - oracle) <= 0.5 + 1e-9))
    return close(c, ours, oracle)


# ---------------------------------------------------------------- known disagreements

def _coordinates(c: Config, g: np.ndarray) -> list[np.ndarray]:
    """Per spatial axis, the pixel coordinates of the grid (float64)."""
    spatial = c.shape[2:]
    out = []
    for d, n in enumerate(spatial):
        v = g[..., c.rank - 1 - d].astype(np.float64)
        out.append((v + 1) / 2 * (n - 1) if c.align_corners else ((v + 1) * n - 1) / 2)
    return out


def _outside(c: Config, g: np.ndarray) -> bool:
    """Some coordinate lies outside the image [lo, hi]."""
    for x, n in zip(_coordinates(c, g), c.shape[2:]):
        lo, hi = (0, n - 1) if c.align_corners else (-0.5, n - 0.5)
        with np.errstate(invalid="ignore"):
            if np.any((x < lo) | (x > hi)):
                return True
    return False


@dataclass(frozen=True)
class Known:
    """A documented case where onnxruntime and onnx.reference disagree: `applies` tells it from
    the configuration and its grid; `follows` is the side onnx-cupy gives."""

    name: str
    follows: str
    applies: Callable[[Config, np.ndarray], bool]
    why: str


KNOWN = (
    Known("cubic_border_clamps_taps", "ort",
          lambda c, g: c.mode == "cubic" and c.padding == "border" and _outside(c, g),
          "cubic, border, a position outside the image: onnxruntime (as PyTorch) clamps each of "
          "the 4 taps; onnx.reference clamps the coordinate first"),
    Known("nonfinite_coordinates", "exact",
          lambda c, g: not np.all(np.isfinite(g.astype(np.float64))),
          "NaN or infinite positions: onnxruntime samples the image's lower edge; "
          "onnx.reference fails or indexes with INT_MIN; onnx-cupy follows PyTorch's 2-D "
          "kernels (the oracle)"),
    Known("far_coordinates", "exact",
          lambda c, g: bool(np.any(np.abs(g.astype(np.float64)) >= 1e5)),
          "positions 10^5 and more outside: onnxruntime's float32 arithmetic loses them (it "
          "samples the lower edge or mixes taps); onnx.reference's reflection rounds in "
          "float64; onnx-cupy reflects exactly (the oracle)"),
    Known("reference_16bit_arithmetic", "ort",
          lambda c, g: c.grid_dtype.itemsize == 2 or (c.dtype.itemsize == 2
                                                       and c.dtype.kind == "f")
          or c.dtype == BF16,
          "a float16 or bfloat16 X or grid: onnx.reference computes coordinates and weights in "
          "that type; onnxruntime (and onnx-cupy) in float32"),
    Known("reference_float32_coordinates", "ort",
          lambda c, g: c.grid_dtype == np.float64,
          "a float64 grid: onnx.reference stores the coordinates in float32; onnxruntime (and "
          "onnx-cupy) keep float64"),
    Known("reference_opset16_names", "ort",
          lambda c, g: c.opset == 16 and c.mode != "nearest",
          "GridSample-16's mode names bilinear and bicubic: onnx.reference knows only linear and "
          "cubic and fails; onnxruntime runs them"),
    Known("reference_reflection_one_pixel", "ort",
          lambda c, g: c.padding == "reflection" and c.align_corners == 1 and 1 in c.shape[2:],
          "reflection with align_corners=1 along an axis of one pixel: onnx.reference divides "
          "by zero; onnxruntime (and PyTorch) sample the pixel"),
    Known("reference_integer_weights", "exact",
          lambda c, g: c.dtype.kind in "iu" and c.mode != "nearest",
          "integer X, linear or cubic: onnx.reference casts the weights to X's integer type "
          "(0 or 1); onnxruntime has no kernel; onnx-cupy sums in float64, rounds half to even "
          "and saturates (the oracle)"),
)


def known(c: Config, g: np.ndarray) -> list[Known]:
    return [k for k in KNOWN if k.applies(c, g)]


# ---------------------------------------------------------------- one configuration

class Outcome(dict[str, Any]):
    """What each run gave ("ours", "oracle", "ort", "ref", "emulated"): an array, or the
    exception raised; `ok(name)`: an array."""

    def ok(self, name: str) -> bool:
        return isinstance(self.get(name), np.ndarray)


def _shape(result: Any) -> Any:
    return result.shape if isinstance(result, np.ndarray) else repr(result)[:120]


def _follow(record: Record, c: Config, o: Outcome, kinds: list[Known], side: str,
            check: str) -> None:
    """onnx-cupy gives `side`'s result unless a case applying names another: "exact" (the
    oracle, checked for every configuration, decides) or the runtime that does not run it."""
    sides = {k.follows for k in kinds} | {side}
    if sides != {side} or side == "exact":
        record.count("exact_side" if "exact" in sides else "other_side")
        return
    record.check(check, o.ok("ours") and close(c, o["ours"], o[side]),
                 f"ours {_shape(o['ours'])}, {side} {_shape(o[side])}")


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index` on onnx-cupy (numpy; emulated on every EMULATED_EVERY-th), the
    oracle and the runtimes. Checks: `ours_ran`, `oracle`, `emulated_equals_numpy`, `shape`
    (each runtime that runs), `values` (where the runtimes agree), `disagreement_listed`,
    `follows_listed_side`, `only_ort` / `only_ref`. Events: `ort_ran`, `ref_ran`,
    `applies:<name>` (a listed case applies), `exact_side` (a case names neither runtime: the
    oracle decides), `other_side` (a case names the runtime that did not run)."""
    c = configuration(index)
    x, g = inputs(index)
    with np.errstate(all="ignore"):
        o = Outcome(ours=_attempt(run_ours, c, x, g), oracle=_attempt(run_oracle, c, x, g),
                    ort=_attempt(run_onnxruntime, c, x, g), ref=_attempt(run_reference, c, x, g))
        if index % EMULATED_EVERY == 0:
            o["emulated"] = _attempt(run_ours, c, x, g, "emulated")
    record = Record(name(index))
    ours = o["ours"]
    record.check("ours_ran", o.ok("ours"), _shape(ours))
    record.check("oracle", o.ok("ours") and o.ok("oracle") and oracle_close(c, ours, o["oracle"]),
                 f"ours {_shape(ours)}, oracle {_shape(o['oracle'])}")
    if "emulated" in o:
        em = o["emulated"]
        record.check("emulated_equals_numpy", o.ok("ours") and o.ok("emulated") and bool(
            np.array_equal(ours.view(f"u{ours.dtype.itemsize}"),
                           em.view(f"u{em.dtype.itemsize}"))), f"emulated {_shape(em)}")
    for runtime in ("ort", "ref"):
        if o.ok(runtime):
            record.count(f"{runtime}_ran")
            record.check("shape", o.ok("ours") and ours.shape == o[runtime].shape,
                         f"{runtime} {_shape(o[runtime])}, ours {_shape(ours)}")
    kinds = known(c, g)
    for k in kinds:
        record.count(f"applies:{k.name}")
    both = o.ok("ort") and o.ok("ref")
    if both and close(c, o["ort"], o["ref"]):
        record.check("values", o.ok("ours") and (close(c, ours, o["ort"])
                                                 or close(c, ours, o["ref"])),
                     "the runtimes agree, ours differs", tolerate=bool(kinds))
    elif both:
        record.check("disagreement_listed", bool(kinds),
                     "the runtimes disagree and no listed case applies")
        if kinds:
            _follow(record, c, o, kinds, kinds[0].follows, "follows_listed_side")
    elif o.ok("ort") != o.ok("ref"):
        side = "ort" if o.ok("ort") else "ref"
        _follow(record, c, o, kinds, side, f"only_{side}")
    return record

