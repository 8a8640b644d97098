"""Differential RoiAlign and MaxRoiPool: the seeded configurations of
tests/cases/roi.py (which the kernel checker runs too), run on onnx-cupy and judged by
onnxruntime and onnx.reference. onnxruntime has float32 and float64 RoiAlign kernels (versions
10 and 16) and a float32 MaxRoiPool (version 1): float16 and bfloat16 inputs run through
float32 (exact: onnx-cupy accumulates them in float32 too, and rounds once), RoiAlign-22
through RoiAlign-16 (22 brought bfloat16 only) and MaxRoiPool-22 through MaxRoiPool-1.
onnx.reference has RoiAlign only, without versions: it is judged from opset 16 on, in float32
and float64 (it computes float16 partly in float16). `expected(config)` gives the runtimes'
outputs where they run, else None."""
from __future__ import annotations

from typing import Any

import numpy as np
from cases import roi as drawn
from cases.roi import Config

from helpers.util import node_model, onnxruntime, reference

CONFIGS, configuration, inputs = drawn.CONFIGS, drawn.configuration, drawn.inputs
NAMES = {"RoiAlign": ("X", "rois", "batch_indices"), "MaxRoiPool": ("X", "rois")}


def _model(c: Config, dtype: np.dtype, opset: int) -> Any:
    names = NAMES[c.op]
    types = [dtype, dtype, np.int64][:len(names)]
    attrs = dict(c.attrs)
    if c.op == "MaxRoiPool":
        attrs["pooled_shape"] = list(attrs["pooled_shape"])
    return node_model(c.op, list(zip(names, types)), attrs, opset)


def _wide(c: Config) -> np.dtype:
    """The dtype onnxruntime runs `c` in."""
    if c.op == "RoiAlign" and c.dtype == np.float64:
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def runtime_supported(c: Config) -> bool:
    """Whether onnxruntime runs `c` (MaxRoiPool: float32 only, so no float64 input, whose
    bin arithmetic onnx-cupy does in float64)."""
    return c.op == "RoiAlign" or c.dtype != np.float64


def by_onnxruntime(c: Config, args: tuple[np.ndarray, ...]) -> np.ndarray:
    wide = _wide(c)
    opset = min(c.opset, 16) if c.op == "RoiAlign" else 1
    feeds = {n: (a.astype(wide) if a.dtype != np.int64 else a)
             for n, a in zip(NAMES[c.op], args)}
    (y,) = onnxruntime(_model(c, wide, opset), feeds)
    return y.astype(c.dtype)


def reference_supported(c: Config) -> bool:
    return c.op == "RoiAlign" and c.opset >= 16 and c.dtype in (np.float32, np.float64)


def by_reference(c: Config, args: tuple[np.ndarray, ...]) -> np.ndarray:
    (y,) = reference(_model(c, c.dtype, c.opset), dict(zip(NAMES[c.op], args)))
    return np.asarray(y)


def oracle(c: Config, args: tuple[np.ndarray, ...]) -> np.ndarray:
    """A loop per output element over its samples or pixels, in the accumulate dtype's scalars,
    as onnx_cupy.roi.plan's docstring writes the formulas (not the code under test)."""
    x = args[0]
    acc = np.float64 if x.dtype == np.float64 else np.float32
    xs = x.astype(acc)
    attrs = dict(c.attrs)
    _n, ch, _h, _w = x.shape
    s = acc(attrs["spatial_scale"])
    if c.op == "RoiAlign":
        ph_n, pw_n = attrs["output_height"], attrs["output_width"]
    else:
        ph_n, pw_n = attrs["pooled_shape"]
    k_n = args[1].shape[0]
    y = np.zeros((k_n, ch, ph_n, pw_n), acc)
    for k in range(k_n):
        box = args[1][k].astype(acc)
        for cc in range(ch):
            for ph in range(ph_n):
                for pw in range(pw_n):
                    y[k, cc, ph, pw] = (_align_one(c, xs, box, int(args[2][k]), cc, ph, pw, s)
                                        if c.op == "RoiAlign" else
                                        _pool_one(xs, box, cc, ph, pw, s, ph_n, pw_n))
    return y.astype(x.dtype)


def _align_one(c: Config, x: np.ndarray, box: np.ndarray, b: int, ch: int, ph: int, pw: int,
               s: Any) -> Any:
    A = type(s)
    attrs = dict(c.attrs)
    _, _, H, W = x.shape
    ctm = attrs.get("coordinate_transformation_mode",
                    "half_pixel" if c.opset >= 16 else "output_half_pixel")
    d = A(0.5) if ctm == "half_pixel" else A(0)
    x0, y0, x2, y2 = (box[i] * s - d for i in range(4))
    if not all(np.isfinite(v) for v in (x0, y0, x2, y2)):
        return np.nan
    rh, rw = y2 - y0, x2 - x0
    if d == 0:
        rh, rw = max(rh, A(1)), max(rw, A(1))
    bh, bw = rh / A(attrs["output_height"]), rw / A(attrs["output_width"])
    ratio = attrs["sampling_ratio"]
    gh = ratio if ratio > 0 else max(0, min(int(np.ceil(bh)), 4096))
    gw = ratio if ratio > 0 else max(0, min(int(np.ceil(bw)), 4096))
    out, first = A(0), True
    for iy in range(gh):
        sy = y0 + A(ph) * bh + (A(iy) + A(0.5)) * bh / A(gh)
        for ix in range(gw):
            sx = x0 + A(pw) * bw + (A(ix) + A(0.5)) * bw / A(gw)
            if sy < -1 or sy > H or sx < -1 or sx > W:
                t = [A(0) * x[b, ch, 0, 0]] * 4
            else:
                (ylo, yhi, ly, hy), (xlo, xhi, lx, hx) = _tap(sy, H), _tap(sx, W)
                t = [hy * hx * x[b, ch, ylo, xlo], hy * lx * x[b, ch, ylo, xhi],
                     ly * hx * x[b, ch, yhi, xlo], ly * lx * x[b, ch, yhi, xhi]]
            if attrs["mode"] == "max":
                v = t[0]
                for u in t[1:]:
                    v = max(v, u)
                out = v if first else (max(out, v))
                first = False
            else:
                out = out + (((t[0] + t[1]) + t[2]) + t[3])
    if attrs["mode"] == "avg":
        out = out / A(max(gh * gw, 1))
    return out


def _tap(v: Any, n: int) -> tuple[int, int, Any, Any]:
    A = type(v)
    v = max(v, A(0))
    lo = int(v)
    if lo >= n - 1:
        lo = hi = n - 1
        v = A(lo)
    else:
        hi = lo + 1
    low = v - A(lo)
    return lo, hi, low, A(1) - low


def _pool_one(x: np.ndarray, box: np.ndarray, ch: int, ph: int, pw: int, s: Any, ph_n: int,
              pw_n: int) -> Any:
    A = type(s)
    _, _, H, W = x.shape
    corners = [box[i] * s for i in range(1, 5)]
    if not all(np.isfinite(v) for v in corners):
        return np.nan
    b = int(box[0])
    x1, y1, x2, y2 = (int(np.sign(v) * np.floor(abs(float(v)) + 0.5)) for v in corners)
    rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
    bh, bw = A(rh) / A(ph_n), A(rw) / A(pw_n)
    hs = min(max(int(np.floor(A(ph) * bh)) + y1, 0), H)
    he = min(max(int(np.ceil(A(ph + 1) * bh)) + y1, 0), H)
    ws = min(max(int(np.floor(A(pw) * bw)) + x1, 0), W)
    we = min(max(int(np.ceil(A(pw + 1) * bw)) + x1, 0), W)
    if he <= hs or we <= ws:
        return A(0)
    out = A(np.finfo(np.float32).min)
    for r in range(hs, he):
        for q in range(ws, we):
            v = x[b, ch, r, q]
            out = max(v, out)
    return out
