"""A pooling oracle independent of onnx_cupy: Python loops over output elements and window taps,
in float64, small shapes only.

Per spatial axis, with extent dk = (k - 1) * d + 1:
  NOTSET      L = floor((n + b + e - dk) / s) + 1, or ceil(...) + 1 with ceil_mode, and then
              L - 1 if the last window starts in the right padding ((L - 1) * s >= n + b)
  VALID       L = floor((n - dk) / s) + 1, no pads (any `pads` given are ignored)
  SAME_*      L = ceil(n / s), pads total t = max(0, (L - 1) * s + dk - n), begin t // 2
              (SAME_UPPER) or t - t // 2 (SAME_LOWER), the rest at the end
Window o covers positions o * s - b + j * d, 0 <= j < k. AveragePool divides the sum over the
positions inside X by the number of positions inside X (count_include_pad=0) or inside
[-b, n + e) (count_include_pad=1); LpPool takes (sum over positions inside X of |x|^p)^(1/p).
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np


def axis_geometry(n: int, k: int, s: int, d: int, b: int, e: int, auto_pad: str,
                  ceil_mode: int) -> tuple[int, int, int]:
    """(output length, begin pad, end pad) of one spatial axis."""
    dk = (k - 1) * d + 1
    if auto_pad in ("", "NOTSET"):
        span = n + b + e - dk
        length = (math.ceil(span / s) if ceil_mode else math.floor(span / s)) + 1
        if ceil_mode and (length - 1) * s >= n + b:
            length -= 1
        return length, b, e
    if auto_pad == "VALID":
        return math.floor((n - dk) / s) + 1, 0, 0
    length = math.ceil(n / s)
    total = max(0, (length - 1) * s + dk - n)
    begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    return length, begin, total - begin


def geometry(shape: tuple[int, ...], attrs: dict[str, Any]) -> list[tuple[int, ...]]:
    """Per spatial axis (n, k, s, d, output length, begin pad, end pad)."""
    nd = len(shape) - 2
    pads = attrs.get("pads") or [0] * (2 * nd)
    auto_pad = attrs.get("auto_pad", "NOTSET")
    axes = []
    for i, n in enumerate(shape[2:]):
        k = attrs["kernel_shape"][i]
        s = (attrs.get("strides") or [1] * nd)[i]
        d = (attrs.get("dilations") or [1] * nd)[i]
        axes.append((n, k, s, d, *axis_geometry(n, k, s, d, pads[i], pads[nd + i], auto_pad,
                                                attrs.get("ceil_mode", 0))))
    return axes


def output_shape(shape: tuple[int, ...], attrs: dict[str, Any]) -> tuple[int, ...]:
    return (*shape[:2], *(g[4] for g in geometry(shape, attrs)))


def pool(op: str, x: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """AveragePool or LpPool of `x` (any float dtype) in float64, window by window."""
    axes = geometry(x.shape, attrs)
    x = x.astype(np.float64)
    include = attrs.get("count_include_pad", 0)
    p = float(attrs.get("p", 2))
    y = np.empty((*x.shape[:2], *(a[4] for a in axes)))
    for nc in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*(range(a[4]) for a in axes)):
            total, count = 0.0, 0
            for j in itertools.product(*(range(a[1]) for a in axes)):
                pos = [oi * s - b + ji * d for oi, ji, (_, _, s, d, _, b, _) in zip(o, j, axes)]
                inside = all(0 <= q < a[0] for q, a in zip(pos, axes))
                if inside:
                    v = x[(*nc, *pos)]
                    total += abs(v) ** p if op == "LpPool" else v
                if inside or include and all(-a[5] <= q < a[0] + a[6] for q, a in zip(pos, axes)):
                    count += 1
            if op == "LpPool":
                y[(*nc, *o)] = total ** (1.0 / p)
            else:
                y[(*nc, *o)] = total / count if count else math.nan
    return y
