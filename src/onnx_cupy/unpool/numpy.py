"""The NumPy path of MaxUnpool: every index turned into an element offset of Y at once (the plan's
remap, plus the start of its element's (n, c) plane for per-plane indices), then one scatter of X
where no two offsets coincide; where some do, the last element of X per offset is found first (a
maximum of positions per offset, as the kernel's winners), so that the result never depends on
NumPy's unspecified order of repeated assignments."""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from .plan import UnpoolPlan


def offsets(pl: UnpoolPlan, flat: np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """Element offsets in Y of the flat indices `flat` (into pl.index_shape, all valid), plus,
    per plane, the start in Y of each element's plane (`starts`, one per (n, c) plane)."""
    if starts is not None:   # plane-major: flat's rows are the planes
        planes: np.ndarray = offsets(pl, flat.reshape(starts.size, -1)) + starts[:, None]
        return planes.reshape(-1)
    if len(pl.remap) == 1:   # Y has the index space's lengths (from axis 1 on): offset = index
        return flat
    rest, offset = flat, np.zeros_like(flat)
    for extent, stride in reversed(pl.remap[1:]):
        rest, coordinate = np.divmod(rest, extent)
        offset += coordinate * stride
    offset += rest * pl.remap[0][1]
    return offset


def prepare(pl: UnpoolPlan, x: np.ndarray, indices: np.ndarray
            ) -> Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray]:
    """The call of plan `pl` (on inputs laid out as `x` and `indices`): call(x, indices, out)
    -> max_unpool(x, indices)."""
    return functools.partial(run, pl, plane_starts(pl))


def plane_starts(pl: UnpoolPlan) -> np.ndarray | None:
    """Per-plane indices: the offset in Y of each (n, c) plane's start, p * prod(Y.shape[2:]);
    else None."""
    if not pl.per_plane:
        return None
    return np.arange(pl.out_shape[0] * pl.out_shape[1], dtype=np.int64) * pl.index_total


def run(pl: UnpoolPlan, starts: np.ndarray | None, x: np.ndarray, indices: np.ndarray,
        out: np.ndarray | None) -> np.ndarray:
    """max_unpool(x, indices) per plan `pl` into `out` (or a new array); every index lies in
    [0, pl.index_total) (the caller checked); `starts`: plane_starts(pl)."""
    y: np.ndarray = np.empty(pl.out_shape, x.dtype) if out is None else out
    if not y.size:
        return y
    y.fill(0)
    flat_y = y.reshape(-1)
    at = offsets(pl, indices.reshape(-1), starts)
    values = x.reshape(-1)
    seen = np.zeros(y.size, dtype=np.bool_)
    seen[at] = True
    if np.count_nonzero(seen) == at.size:   # no offset twice: one scatter, in any order
        flat_y[at] = values
        return y
    del seen
    position = np.arange(1, at.size + 1, dtype=np.int32 if at.size < 2**31 else np.int64)
    winner = np.zeros(y.size, dtype=position.dtype)
    np.maximum.at(winner, at, position)
    last = winner[at] == position   # the last element of X at its offset
    flat_y[at[last]] = values[last]
    return y


def prepare_gradient(pl: UnpoolPlan, x: np.ndarray, indices: np.ndarray, dy: np.ndarray
                     ) -> Callable[..., np.ndarray]:
    """MaxUnpool's gradient (PyTorch's): call(x, indices, dy, out) -> dX with dX[e] = dY at the
    offset I[e] names (every index lies in [0, pl.index_total): the caller checked)."""
    starts = plane_starts(pl)

    def call(x: np.ndarray, indices: np.ndarray, dy: np.ndarray, out: np.ndarray | None
             ) -> np.ndarray:
        dx: np.ndarray = np.empty(pl.in_shape, x.dtype) if out is None else out
        if dx.size:
            dx.reshape(-1)[...] = dy.reshape(-1)[offsets(pl, indices.reshape(-1), starts)]
        return dx
    return call
