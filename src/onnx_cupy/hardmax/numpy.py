"""The NumPy path of Hardmax: np.argmax over the plan's [outer, n, inner] view, in chunks of outer
rows (first maximum; the first NaN wins, as NumPy defines argmax), then a zero fill and one scatter
of ones. 16-bit floats are ranked through int16 keys, which NumPy's argmax scans much faster than
float16."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.calls import Call

if TYPE_CHECKING:
    from .plan import HardmaxPlan

CHUNK_BYTES = 1 << 20  # input (and key) bytes per chunk
INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80}  # |bits| of inf; larger magnitudes are NaN


def order_key(x: np.ndarray, inf_bits: int) -> np.ndarray:
    """int16 keys of 16-bit floats ordered as the floats, with -0 == +0 and every NaN equal to
    the largest key (read in x's byte order)."""
    s = x.view(np.dtype(np.int16).newbyteorder(x.dtype.byteorder))
    mag = s & np.int16(0x7FFF)
    sign = s >> 15                 # 0 or -1
    key: np.ndarray = (mag ^ sign) - sign  # -mag for negative values
    np.putmask(key, mag > inf_bits, np.int16(0x7FFF))
    return key


def prepare(pl: HardmaxPlan, dtype: np.dtype) -> Call:
    """The call of plan `pl` on inputs of `dtype`: call(x, out) -> hardmax(x), into `out` when
    given (C-contiguous) or a new array. The chunks and where each row's 1 goes (its first
    element's flat position in Y, plus inner times the winner's index) are made here, once."""
    inf_bits = INF_BITS.get(dtype.name)
    chunk = max(1, CHUNK_BYTES // max(1, pl.n * pl.inner * dtype.itemsize))
    first = (np.arange(pl.outer, dtype=np.intp)[:, None] * (pl.n * pl.inner)
             + np.arange(pl.inner, dtype=np.intp)).reshape(-1)

    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y: np.ndarray = np.empty(pl.shape, x.dtype) if out is None else out
        if not y.size:
            return y
        x3 = x.reshape(pl.outer, pl.n, pl.inner)
        won = np.empty((pl.outer, pl.inner), dtype=np.intp)
        for r in range(0, pl.outer, chunk):
            src = x3[r:r + chunk]
            np.argmax(src if inf_bits is None else order_key(src, inf_bits), axis=1,
                      out=won[r:r + chunk])
        y.fill(0)
        won *= pl.inner
        won += first.reshape(won.shape)
        y.reshape(-1)[won.reshape(-1)] = 1
        return y
    return call
