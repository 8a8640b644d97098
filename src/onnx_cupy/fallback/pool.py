"""NumPy AveragePool/LpPool: per kernel tap, one strided slice-add of the input into the
accumulator (no window copies), over blocks of N*C rows so temporaries stay cache-sized."""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from .. import dtypes

if TYPE_CHECKING:
    from ..plans.pool import PoolPlan

BLOCK_BYTES = 1 << 21  # accumulator + converted input per block


def _taps(n: int, out: int, k: int, s: int, d: int, b: int) -> list[tuple[slice, slice]]:
    """(output slice, input slice) for each tap j whose positions o*s - b + j*d fall inside [0, n)."""
    taps = []
    for j in range(k):
        shift = j * d - b
        lo = max(0, -(shift // s))           # first o with o*s + shift >= 0
        hi = min(out, -((shift - n) // s))   # first o with o*s + shift >= n
        if hi > lo:
            start = lo * s + shift
            taps.append((slice(lo, hi), slice(start, start + (hi - lo - 1) * s + 1, s)))
    return taps


def counts(n_out: int, k: int, s: int, d: int, b: int, lo: int, hi: int) -> np.ndarray:
    """Per output index: number of taps whose position lies in [lo, hi)."""
    start = np.arange(n_out, dtype=np.int64) * s - b
    j0 = np.maximum(0, -((start - lo) // d))
    j1 = np.minimum(k, -((start - hi) // d))
    return np.maximum(j1 - j0, 0)


def divisor(pl: PoolPlan, acc: np.dtype) -> np.ndarray:
    """Product over axes of the per-axis counted-window sizes, shaped like the output's spatial dims."""
    total = np.ones((), dtype=acc)
    for i, args in enumerate(zip(pl.out_shape[2:], pl.kernel, pl.strides, pl.dilations,
                                 pl.pads_begin, pl.cnt_lo, pl.cnt_hi)):
        c = counts(*args).astype(acc)
        total = np.multiply.outer(total, c) if i else c
    return total


def run(pl: PoolPlan, x: np.ndarray, y: np.ndarray) -> None:
    """Write pool(x) per plan `pl` into the C-contiguous output `y`."""
    acc_t = dtypes.accumulate_dtype(x.dtype)
    in_sp, out_sp = pl.in_shape[2:], pl.out_shape[2:]
    rows = pl.in_shape[0] * pl.in_shape[1]
    xs = x.reshape(rows, *in_sp)
    ys = y.reshape(rows, *out_sp)
    per_row = max(1, int(np.prod(in_sp)) + int(np.prod(out_sp))) * acc_t.itemsize
    block = max(1, BLOCK_BYTES // per_row)
    taps = list(itertools.product(*(
        _taps(n, o, k, s, d, b) for n, o, k, s, d, b in zip(
            in_sp, out_sp, pl.kernel, pl.strides, pl.dilations, pl.pads_begin))))
    div = None if pl.lp else divisor(pl, acc_t)
    convert = x.dtype != acc_t
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for r in range(0, rows, block):
            src = xs[r:r + block]
            if convert:
                src = src.astype(acc_t)
            if pl.lp:
                src = np.abs(src, out=src) if convert else np.abs(src)
                if pl.p == 2:
                    np.square(src, out=src)
                elif pl.p != 1:
                    np.power(src, acc_t.type(pl.p), out=src)
            acc = np.zeros((src.shape[0], *out_sp), dtype=acc_t)
            for tap in taps:
                acc[(slice(None), *(t[0] for t in tap))] += src[(slice(None), *(t[1] for t in tap))]
            if pl.lp:
                if pl.p == 2:
                    np.sqrt(acc, out=acc)
                elif pl.p != 1:
                    np.power(acc, acc_t.type(1.0 / pl.p), out=acc)
            else:
                acc /= div
            ys[r:r + block] = acc
