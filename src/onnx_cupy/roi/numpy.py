"""The NumPy path of RoiAlign and MaxRoiPool: the formulas of onnx_cupy.roi.plan in the
accumulate dtype, operation by operation as kernels/roi.cu (so that the two paths agree bit for
bit), vectorized over regions, bins and channels: X is viewed once as (N * H * W, C) rows, and
each step gathers one row per (region, bin) for all channels.

RoiAlign groups the regions by their sampling grid (gh, gw) (one group for a fixed
sampling_ratio) and walks the grid's samples in order, in blocks of samples, adding (or taking
the max of) each sample's four weighted corners; each chunk of regions goes straight into Y, so
that a call holds Y, X in rows and one chunk's scratch. MaxRoiPool walks the offsets of the
largest bin in row-major order, each bin folding in the pixels it holds."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes
from ..core.calls import Call
from .plan import CORNER_LIMIT, MAX_GRID, ROI_ALIGN, RoiPlan

CHUNK_ELEMENTS = 1 << 18   # (region, bin, channel) elements per step of the walk (in cache)
LOWEST = float(np.finfo(np.float32).min)   # -FLT_MAX: MaxRoiPool's start


def _corners(pl: RoiPlan, rois: np.ndarray, acc: np.dtype
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x0, y0, x2, y2, finite) of each region: its coordinates times spatial_scale (minus
    RoiAlign's offset), and whether all four are finite."""
    r = rois.astype(acc)
    first = 0 if pl.op == ROI_ALIGN else 1
    s, d = acc.type(pl.spatial_scale), acc.type(pl.offset)
    with np.errstate(all="ignore"):
        x0, y0, x2, y2 = (r[:, first + i] * s - d if pl.op == ROI_ALIGN else r[:, first + i] * s
                          for i in range(4))
        finite = np.isfinite(x0) & np.isfinite(y0) & np.isfinite(x2) & np.isfinite(y2)
    return x0, y0, x2, y2, finite


def _grid_count(b: np.ndarray) -> np.ndarray:
    """The adaptive grid's samples per axis: ceil(b), 0 where <= 0, at most MAX_GRID."""
    c = np.ceil(b)
    return np.where(c <= 0, 0, np.where(c >= MAX_GRID, MAX_GRID, c)).astype(np.int64)


def _taps(v: np.ndarray, n: int, acc: np.dtype
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(outside, lo, hi, l, h) of samples at v along an axis of n pixels (roi::tap)."""
    A = acc.type
    outside = (v < A(-1)) | (v > A(n))
    v = np.where(outside, A(0), v)
    v = np.where(v <= A(0), A(0), v)
    lo = v.astype(np.int64)
    big = lo >= n - 1
    lo = np.where(big, n - 1, lo)
    hi = np.where(big, n - 1, lo + 1)
    v = np.where(big, lo.astype(acc), v)
    low = v - lo.astype(acc)
    return outside, lo, hi, low, A(1) - low


def _align_group(pl: RoiPlan, xt: np.ndarray, acc: np.dtype, base: np.ndarray,
                 x0: np.ndarray, y0: np.ndarray, bh: np.ndarray, bw: np.ndarray, gh: int,
                 gw: int) -> np.ndarray:
    """RoiAlign's (k, ph, pw, c) outputs of regions sharing the grid (gh, gw) >= 1: the taps of
    every sample row and column at once, then the samples in blocks (as many as the chunk's
    budget holds: all of them for a small call), each of the four corners of a block gathered
    and weighed in one operation, the samples folded into the output in row-major order."""
    A = acc.type
    _, _, H, W = pl.shape
    PH, PW = pl.pooled
    top = y0[:, None] + np.arange(PH).astype(acc) * bh[:, None]
    left = x0[:, None] + np.arange(PW).astype(acc) * bw[:, None]
    # (k, PH, gh) and (k, PW, gw): sample i at top + ((i + 0.5) bh) / gh, as the kernel rounds
    yo, ylo, yhi, yl, yh = _taps(top[:, :, None] + (np.arange(gh).astype(acc) + A(0.5))
                                 * bh[:, None, None] / A(gh), H, acc)
    xo, xlo, xhi, xl, xh = _taps(left[:, :, None] + (np.arange(gw).astype(acc) + A(0.5))
                                 * bw[:, None, None] / A(gw), W, acc)
    ylo, yhi = ylo * W, yhi * W
    k, C, samples = len(base), xt.shape[1], gh * gw
    block = max(1, min(samples, CHUNK_ELEMENTS // max(1, k * PH * PW * C)))
    out = np.zeros((k, PH, PW, C), acc)
    start = base[:, None, None, None]
    for first in range(0, samples, block):
        at_sample = np.arange(first, min(first + block, samples))
        iy, ix = at_sample // gw, at_sample % gw

        def rows(a: np.ndarray, iy: np.ndarray = iy) -> np.ndarray:   # (k, PH, 1, b)
            return a[:, :, iy][:, :, None, :]

        def cols(a: np.ndarray, ix: np.ndarray = ix) -> np.ndarray:   # (k, 1, PW, b)
            return a[:, :, ix][:, None, :, :]

        outside = rows(yo) | cols(xo)
        # ((t1 + t2) + t3) + t4, each t = (wy wx) X[corner], the kernel's order
        terms: list[np.ndarray] = []
        for r, c, wy, wx in ((ylo, xlo, yh, xh), (ylo, xhi, yh, xl), (yhi, xlo, yl, xh),
                             (yhi, xhi, yl, xl)):
            at = np.where(outside, start, start + rows(r) + cols(c))
            w = np.where(outside, A(0), rows(wy) * cols(wx))
            values = np.take(xt, at, axis=0, out=terms[1] if len(terms) > 1 else None)
            np.multiply(w[..., None], values, out=values)
            if not terms:
                terms.append(values)
                continue
            term = terms[0]
            if pl.mode == "max":
                np.copyto(term, values, where=term < values)   # keep_max(term, t)
            else:
                term += values
            terms[1:] = [values]
        term = terms[0]
        for j, at_j in enumerate(at_sample):   # (k, PH, PW, b, C): the samples in order
            if pl.mode != "max":
                out += term[:, :, :, j]
            elif at_j == 0:
                out[...] = term[:, :, :, j]
            else:
                np.copyto(out, term[:, :, :, j], where=out < term[:, :, :, j])
    if pl.mode == "avg":
        out /= A(max(samples, 1))
    return out


def _align(pl: RoiPlan, x: np.ndarray, rois: np.ndarray, batch: np.ndarray, acc: np.dtype,
           y: np.ndarray) -> None:
    """RoiAlign's outputs into y (K, C, PH, PW), a chunk of regions at a time."""
    N, C, H, W = pl.shape
    PH, PW = pl.pooled
    A = acc.type
    x0, y0, x2, y2, finite = _corners(pl, rois, acc)
    y[...] = 0
    y[~finite] = np.nan
    ok = finite & (batch >= 0) & (batch < N) & (H > 0) & (W > 0)
    if not ok.any():
        return
    with np.errstate(all="ignore"):
        h, w = y2 - y0, x2 - x0
        if not pl.half_pixel:
            h, w = np.where(h < A(1), A(1), h), np.where(w < A(1), A(1), w)
        bh, bw = h / A(PH), w / A(PW)
    if pl.sampling_ratio > 0:
        gh = gw = np.full(pl.regions, pl.sampling_ratio, np.int64)
    else:
        gh, gw = _grid_count(np.where(ok, bh, 0)), _grid_count(np.where(ok, bw, 0))
    xt = np.ascontiguousarray(x.astype(acc).transpose(0, 2, 3, 1)).reshape(N * H * W, C)
    ok &= (gh > 0) & (gw > 0)   # an empty grid gives 0
    chosen = np.flatnonzero(ok)
    # the regions by grid (gh, gw), as one number (one grid where sampling_ratio is fixed)
    grids = gh[chosen] * (MAX_GRID + 1) + gw[chosen]
    step = max(1, CHUNK_ELEMENTS // max(1, PH * PW * C))
    for g in np.unique(grids) if pl.sampling_ratio <= 0 else grids[:1]:
        members = chosen[grids == g] if pl.sampling_ratio <= 0 else chosen
        for i in range(0, len(members), step):
            k = members[i:i + step]
            y[k] = _align_group(pl, xt, acc, batch[k].astype(np.int64) * (H * W), x0[k], y0[k],
                                bh[k], bw[k], *map(int, divmod(g, MAX_GRID + 1))
                                ).transpose(0, 3, 1, 2)


def _round_away(v: np.ndarray) -> np.ndarray:
    """v rounded to an integer, halves away from zero (C's round), exactly."""
    t = np.trunc(v)
    rounded: np.ndarray = t + np.where(np.abs(v - t) >= 0.5, np.sign(v), 0)
    return rounded


def _pool(pl: RoiPlan, x: np.ndarray, rois: np.ndarray, acc: np.dtype, y: np.ndarray) -> None:
    """MaxRoiPool's outputs into y (K, C, PH, PW), a chunk of regions at a time."""
    N, C, H, W = pl.shape
    PH, PW = pl.pooled
    A = acc.type
    x0, y0, x2, y2, finite = _corners(pl, rois, acc)
    b = rois[:, 0].astype(acc)
    y[...] = 0
    y[~finite] = np.nan
    ok = finite & (b > A(-1)) & (b < A(N))
    if not ok.any():
        return
    k = np.flatnonzero(ok)
    left, top, right, bottom = (np.clip(_round_away(v[k]), -CORNER_LIMIT, CORNER_LIMIT)
                                .astype(np.int64) for v in (x0, y0, x2, y2))
    h, w = np.maximum(bottom - top + 1, 1), np.maximum(right - left + 1, 1)
    bh, bw = h.astype(acc) / A(PH), w.astype(acc) / A(PW)

    def bins(size: np.ndarray, start: np.ndarray, count: int, n: int
             ) -> tuple[np.ndarray, np.ndarray]:
        at = np.arange(count).astype(acc)
        lo = np.floor(at * size[:, None]).astype(np.int64) + start[:, None]
        hi = np.ceil((at + A(1)) * size[:, None]).astype(np.int64) + start[:, None]
        return np.clip(lo, 0, n), np.clip(hi, 0, n)

    hs, he = bins(bh, top, PH, H)
    ws, we = bins(bw, left, PW, W)
    xt = np.ascontiguousarray(x.astype(acc).transpose(0, 2, 3, 1)).reshape(N * H * W, C)
    base = np.trunc(b[k]).astype(np.int64) * (H * W)
    step = max(1, CHUNK_ELEMENTS // max(1, PH * PW * C))
    for i in range(0, len(k), step):
        part = slice(i, i + step)
        y[k[part]] = _pool_part(xt, W, base[part], hs[part], he[part], ws[part], we[part],
                                acc).transpose(0, 3, 1, 2)


def _pool_part(xt: np.ndarray, W: int, base: np.ndarray, hs: np.ndarray, he: np.ndarray,
               ws: np.ndarray, we: np.ndarray, acc: np.dtype) -> np.ndarray:
    """MaxRoiPool's (k, ph, pw, c) outputs of some regions, each bin [hs, he) x [ws, we) of the
    image starting at row `base` of `xt`: the fold acc = (v < acc) ? acc : v over its pixels in
    row-major order from -FLT_MAX, 0 for an empty bin (its pixels' offsets taken in turn, the
    largest bin's count of them)."""
    A = acc.type
    empty = (he <= hs)[:, :, None] | (we <= ws)[:, None, :]
    shape = (*empty.shape, xt.shape[1])
    folded = np.empty(shape, acc)
    folded[...] = np.where(empty, A(0), A(LOWEST))[..., None]
    pixel, taken = np.empty(shape, acc), np.empty(shape, bool)
    start = base[:, None, None]
    for dh in range(int((he - hs).max(initial=0))):
        r = hs + dh
        for dw in range(int((we - ws).max(initial=0))):
            q = ws + dw
            inside = (r < he)[:, :, None] & (q < we)[:, None, :]
            if not inside.any():
                continue
            np.take(xt, np.where(inside, start + (r * W)[:, :, None] + q[:, None, :], 0),
                    axis=0, out=pixel)
            np.less(pixel, folded, out=taken)
            np.logical_not(taken, out=taken)
            taken &= inside[..., None]
            np.copyto(folded, pixel, where=taken)
    return folded


def prepare(pl: RoiPlan, x: np.ndarray, *others: np.ndarray) -> Call:
    """The call of plan `pl` on inputs laid out as `x` (and the boxes and, for RoiAlign, the
    batch indices): call(X, rois, [batch_indices,] out) -> Y, into `out` when given or a new
    array."""
    acc = dtypes.accumulate_dtype(x.dtype)

    def call(X: np.ndarray, rois: np.ndarray, *rest: Any) -> np.ndarray:
        *batches, out = rest
        batch = batches[0] if batches else None
        Y: np.ndarray = np.empty(pl.out_shape, X.dtype) if out is None else out
        if not Y.size:
            return Y
        with np.errstate(all="ignore"):
            if batch is not None:   # RoiAlign
                _align(pl, X, rois, batch, acc, Y)
            else:
                _pool(pl, X, rois, acc, Y)
        return Y
    return call
