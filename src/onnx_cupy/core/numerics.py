"""Integer arithmetic the host shares (ceiling division), and integer results of float
arithmetic, computed alike on every path: round half to even with a tie band, then saturate. The
kernels' oc::round_half_even (kernels/common.cuh) does the same, operation for operation, with
TIE_BAND and TIE_BAND_MAX passed to it as OC_TIE_BAND and OC_TIE_BAND_MAX (DEFINES). Also the
rounding of a double result to a float storage type, as the kernels store one (narrow)."""
from __future__ import annotations

import numpy as np


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for b > 0 and any sign of a, in integers."""
    return -(-a // b)


TIE_BAND = 2.0**-40      # relative half-width of the band around k + 0.5 read as a tie
TIE_BAND_MAX = 2.0**-12  # its most, absolute (beyond 2^40 the spacing of doubles takes over)
DEFINES = {"OC_TIE_BAND": TIE_BAND.hex(), "OC_TIE_BAND_MAX": TIE_BAND_MAX.hex()}


def round_half_even(values: np.ndarray) -> np.ndarray:
    """Round to the nearest integer, ties to even, reading as a tie every value within
    min(TIE_BAND * max(|v|, 1), TIE_BAND_MAX) of k + 0.5: a sum of terms whose exact value is a
    tie rounds the same whatever order its terms were added in."""
    low: np.ndarray = np.floor(values)
    band = np.minimum(TIE_BAND * np.maximum(np.abs(values), 1.0), TIE_BAND_MAX)
    tie: np.ndarray = np.abs(values - low - 0.5) <= band
    even: np.ndarray = low + np.mod(low, 2.0)  # the even one of low and low + 1
    nearest: np.ndarray = np.rint(values)
    return np.where(tie, even, nearest)


def round_saturate(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round half to even (round_half_even), then saturate to the integer dtype's range."""
    info = np.iinfo(dtype)
    r = round_half_even(values)
    if info.bits < 64:
        return np.clip(r, info.min, info.max, out=r).astype(dtype)
    hi, lo = r >= float(info.max), r <= float(info.min)  # float(max) rounds up to 2^63 / 2^64
    out = np.where(hi | lo, 0.0, r).astype(dtype)
    out[hi], out[lo] = info.max, info.min
    return out


def fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c for float32 operands rounded once to float32, as a fused multiply-add: the
    product is exact in float64; the sum, where not exact there, is rounded to odd (its error,
    from a two-sum, moves an even result one ulp towards it), which float32 then rounds as it
    would the exact value."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    c64 = np.asarray(c, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c64
        back = s - p
        error = (p - (s - back)) + (c64 - back)
        nudge = np.isfinite(error) & (error != 0) & (s.view(np.int64) % 2 == 0)
        s = np.where(nudge, np.nextafter(s, np.where(error > 0, np.inf, -np.inf)), s)
        return np.asarray(s.astype(np.float32))


def narrow(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 `values` rounded once to the float `dtype`, as the kernels store a double
    (oc::cvt<double, T>, kernels/common.cuh): float32 and float64 directly; float16 and bfloat16
    through a float32 rounded to odd (toward zero, its last bit set where inexact), which
    rounding to nearest even then takes to the double's own nearest, without relying on how a
    library converts float64 to them. A NaN stays a NaN."""
    dtype = np.dtype(dtype)
    v = np.asarray(values, np.float64)
    if dtype.itemsize >= 4:
        return v.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        f = v.astype(np.float32)
        inexact = (f != v) & (v == v)
        bits = f.view(np.uint32)
        bits -= (inexact & (np.abs(f) > np.abs(v))).astype(np.uint32)   # back toward zero
        bits |= inexact.astype(np.uint32)
        return f.astype(dtype)
