"""Which input element Resize's nearest mode picks, by the text's coordinate formulas computed
independently of onnx-cupy: every operation in float32 in the order onnxruntime's source writes
them, a fraction within TIE of 0.5 rounding as the tie (onnxruntime 1.32, what onnx-cupy
computes), or in float64 with exact ties (onnx.reference)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

ROUNDING_CTMS = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                 "tf_half_pixel_for_nn")
# onnxruntime 1.32's tie band, probed: a float32 x at 2^-20 from k + 0.5 rounds as the tie, one
# at 2^-19 does not (and no float32 coordinate of these formulas falls between)
TIE = 1e-6


def coordinates(ctm: str, n: int, m: int, s: float, w: float, single: bool) -> np.ndarray:
    """x of every output coordinate y of one axis (input n, output m, scale s, width w): in
    float32 as onnxruntime (`single`; from sizes, w = m, its scale is float32(m) / float32(n)),
    or in float64."""
    f = np.float32 if single else np.float64
    y = np.arange(m, dtype=f)
    half, one, n_, w_ = f(0.5), f(1), f(n), f(w)
    s_ = f(m) / f(n) if single and w == m and n else f(s)
    if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and m > 1):
        x = (y + half) / s_ - half
    elif ctm == "pytorch_half_pixel":
        x = np.zeros(m, f)
    elif ctm == "align_corners":
        x = y * (n_ - one) / (w_ - one) if w > 1 else np.zeros(m, f)
    elif ctm == "asymmetric":
        x = y / s_
    else:  # tf_half_pixel_for_nn
        x = (y + half) / s_
    return x.astype(np.float64)


def picks(x: np.ndarray, rule: str, n: int, s: float, tie: float = 0.0) -> np.ndarray:
    """Input index per coordinate: `rule` is a nearest_mode or "" (Resize-10: floor where
    s >= 1, ceil where s < 1), a fraction within `tie` of 0.5 rounding as 0.5; clamped into
    [0, n)."""
    if not rule:
        rule = "ceil" if s < 1 else "floor"
    fl = np.floor(x)
    frac = x - fl
    at_tie = np.abs(frac - 0.5) <= tie
    up = {"round_prefer_floor": (frac > 0.5) & ~at_tie, "round_prefer_ceil": (frac > 0.5) | at_tie,
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
    """Whether nearest picks other elements from onnxruntime's float32 coordinates and tie band
    than from float64 ones with exact ties (onnx.reference) on some resized axis."""
    ctm = attrs.get("coordinate_transformation_mode", "asymmetric" if opset == 10 else
                    "half_pixel")
    if attrs.get("mode", "nearest") != "nearest" or ctm not in ROUNDING_CTMS:
        return False
    rule = attrs.get("nearest_mode", "" if opset == 10 else "round_prefer_floor")
    for n, m, s, w in axes(shape, attrs, inputs):
        if (s == 1 and m == n) or m == 0 or n == 0:
            continue
        single = picks(coordinates(ctm, n, m, s, w, True), rule, n, s, TIE)
        double = picks(coordinates(ctm, n, m, s, w, False), rule, n, s)
        if not np.array_equal(single, double):
            return True
    return False
