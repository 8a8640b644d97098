"""Which input element Resize's nearest mode picks, by the text's coordinate formulas computed
independently of onnx-cupy: every operation in float32 in the order onnxruntime's source writes
them (what onnx-cupy computes), or in float64 (onnx.reference)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

ROUNDING_CTMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                 "tf_half_pixel_for_nn")


def coordinates(ctm: str, n: int, m: int, s: float, w: float, single: bool,
                nudge: int = 0) -> np.ndarray:
    """x of every output coordinate y of one axis (input n, output m, scale s, width w); `nudge`
    (-1, 1) moves each quotient by s one unit in the last place down or up."""
    f = np.float32 if single else np.float64
    y = np.arange(m, dtype=f)
    half, one, s_, n_, w_ = f(0.5), f(1), f(s), f(n), f(w)

    def per_scale(v: np.ndarray) -> np.ndarray:
        q = v / s_
        return np.nextafter(q, f(nudge * np.inf)) if nudge else q

    if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and m > 1):
        x = per_scale(y + half) - half
    elif ctm == "pytorch_half_pixel":
        x = np.zeros(m, f)
    elif ctm == "align_corners":
        x = y * (n_ - one) / (w_ - one) if w > 1 else np.zeros(m, f)
    elif ctm == "asymmetric":
        x = per_scale(y)
    else:  # tf_half_pixel_for_nn
        x = per_scale(y + half)
    return x.astype(np.float64)


def picks(x: np.ndarray, rule: str, n: int, s: float) -> np.ndarray:
    """Input index per coordinate: `rule` is a nearest_mode or "" (Resize-10: floor where
    s >= 1, ceil where s < 1), clamped into [0, n)."""
    if not rule:
        rule = "ceil" if s < 1 else "floor"
    fl = np.floor(x)
    frac = x - fl
    up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5,
          "floor": np.zeros_like(frac, bool), "ceil": frac > 0}[rule]
    return np.clip(fl + up, 0, n - 1).astype(np.int64)


def axes(shape: tuple[int, ...], attrs: dict[str, Any],
         inputs: dict[str, np.ndarray]) -> list[tuple[int, int, float, float]]:
    """(n, m, s, w) per resized axis, as onnx_cupy.resize.plan defines them."""
    rank = len(shape)
    ns = [shape[a % rank] for a in attrs.get("axes", range(rank))]
    scales = inputs.get("scales")
    if scales is not None and scales.size:
        return [(n, math.floor(n * float(s)), float(s), n * float(s)) for n, s in zip(ns, scales)]
    sizes = [int(v) for v in inputs["sizes"]]
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return [(n, m, m / n if n else 1.0, float(m)) for n, m in zip(ns, sizes)]
    ratios = [m / n for m, n in zip(sizes, ns)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    return [(n, math.floor(s * n + 0.5), s, s * n) for n in ns]


def float32_decides(opset: int, shape: tuple[int, ...], attrs: dict[str, Any],
                    inputs: dict[str, np.ndarray]) -> bool:
    """Whether nearest picks other elements from float32 coordinates than from float64 ones
    (onnx.reference) on some resized axis."""
    ctm = attrs.get("coordinate_transformation_mode", "asymmetric" if opset == 10 else
                    "half_pixel")
    if attrs.get("mode", "nearest") != "nearest" or ctm not in ROUNDING_CTMS:
        return False
    rule = attrs.get("nearest_mode", "" if opset == 10 else "round_prefer_floor")
    for n, m, s, w in axes(shape, attrs, inputs):
        if (s == 1 and m == n) or m == 0 or n == 0:
            continue
        single, double = (picks(coordinates(ctm, n, m, s, w, f), rule, n, s) for f in (1, 0))
        if not np.array_equal(single, double):
            return True
    return False
