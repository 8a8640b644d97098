"""A MaxPool oracle independent of onnx_cupy: Python loops over output elements and window taps,
small shapes only, with the geometry of helpers/pool_oracle.py.

Window o covers positions o * s - b + j * d, 0 <= j < k per axis, visited axis 0 outermost, taps
ascending. A position inside X replaces the running maximum when it is the first one, greater,
or NaN (so NaN propagates and the last NaN wins; the first of equal values wins). A window with
no position inside X gives -inf (an integer dtype's minimum) and index -1. The index of X[n, c, p]
is (n * C + c) * prod(D) + the row-major (storage_order=0) or column-major (1) flat index of p.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from helpers.pool_oracle import geometry


def flat_index(pos: tuple[int, ...], dims: tuple[int, ...], storage_order: int) -> int:
    """Flat index of spatial position `pos` over `dims`, row- or column-major."""
    order = range(len(dims)) if storage_order else reversed(range(len(dims)))
    index, step = 0, 1
    for a in order:
        index += pos[a] * step
        step *= dims[a]
    return index


def max_pool(x: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """(Y, Indices) of MaxPool on `x`, in x's dtype."""
    axes = geometry(x.shape, attrs)
    dims = x.shape[2:]
    order = attrs.get("storage_order", 0)
    empty = np.iinfo(x.dtype).min if x.dtype.kind in "iu" else -np.inf
    y = np.empty((*x.shape[:2], *(a[4] for a in axes)), x.dtype)
    ids = np.empty(y.shape, np.int64)
    for nc in itertools.product(*map(range, x.shape[:2])):
        plane = (nc[0] * x.shape[1] + nc[1]) * math.prod(dims)
        for o in itertools.product(*(range(a[4]) for a in axes)):
            best, at = None, -1
            for j in itertools.product(*(range(a[1]) for a in axes)):
                pos = tuple(oi * s - b + ji * d
                            for oi, ji, (_, _, s, d, _, b, _) in zip(o, j, axes))
                if not all(0 <= q < a[0] for q, a in zip(pos, axes)):
                    continue
                v = x[(*nc, *pos)]
                if best is None or v > best or np.isnan(v):
                    best, at = v, plane + flat_index(pos, dims, order)
            y[(*nc, *o)] = empty if best is None else best
            ids[(*nc, *o)] = at
    return y, ids
