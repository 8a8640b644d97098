"""Hardmax, opset versions 1, 11 and 13.

  Y[o, k, i] = 1 if k == argmax_j X[o, j, i] else 0,   X viewed as [outer, n, inner]

Version 13 reduces along `axis` alone: outer = prod(shape[:axis]), n = shape[axis],
inner = prod(shape[axis+1:]); the default axis is -1. Versions 1 and 11 coerce X to the 2-D
[prod(shape[:axis]), prod(shape[axis:])] and take the one-hot over each whole row of that view
(inner = 1); the default axis is 1. Every version takes axes in [-r, r-1], a negative axis counting
from the end (Hardmax-1's text names no negative axis; onnxruntime and ONNX's checker accept one);
so X needs rank >= 1.

argmax picks the first maximum: among equal maxima the smallest index wins. A NaN counts as the
maximum and the first NaN wins (NumPy's argmax rule, as onnx.reference); +inf and -inf compare as
numbers, so a row of -inf selects its first element.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import attributes, dtypes, opsets

OP = "Hardmax"
# Per operator, the version that brought each input dtype (read by core.dtypes.check)
DTYPES: dict[str, dict[str, int]] = {
    OP: {**dtypes.since(1, *dtypes.FLOATS), **dtypes.since(13, "bfloat16")},
}


@dataclass(frozen=True)
class HardmaxPlan:
    """The [outer, n, inner] view of X that both execution paths reduce, computed once."""

    version: int
    shape: tuple[int, ...]
    axis: int     # in [0, rank)
    stop: int     # X's dimensions [axis, stop) form n: axis + 1 (version 13) or rank (1, 11)
    outer: int
    n: int
    inner: int

    @property
    def op(self) -> str:
        """The operator the plan serves."""
        return OP


def _axis_value(axis: Any) -> int | None:
    if axis is None:
        return None
    if not attributes.is_int(axis):
        raise TypeError(f"{OP}: attribute 'axis' must be an int, got {axis!r}")
    return int(axis)


@functools.lru_cache(maxsize=512, typed=True)  # typed: opset 13.0 must not hit 13's plan
def plan(opset: int, shape: tuple[int, ...], dtype: np.dtype, axis: int | None) -> HardmaxPlan:
    """Validate dtype and axis for the opset version in force and compute the reduction view."""
    version = opsets.version(OP, opset)
    dtypes.check(OP, DTYPES[OP], dtype, version, opset)
    rank = len(shape)
    if rank == 0:
        raise ValueError(f"{OP}: X must have rank >= 1, got a rank-0 input")
    given = axis is not None
    if axis is None:
        axis = -1 if version >= 13 else 1
    if not -rank <= axis < rank:
        raise ValueError(f"{OP}: attribute 'axis' = {axis}{'' if given else ' (the default)'} is "
                         f"out of range [{-rank}, {rank - 1}] for an input of rank {rank} "
                         f"({opsets.in_force(OP, opset)})")
    axis %= rank
    stop = axis + 1 if version >= 13 else rank
    outer, n, inner = (math.prod(shape[a:b]) for a, b in ((0, axis), (axis, stop), (stop, rank)))
    return HardmaxPlan(version, shape, axis, stop, outer, n, inner)


def make(shape: tuple[int, ...], dtype: Any, axis: Any, opset: int) -> HardmaxPlan:
    """The plan for an input of `shape` and `dtype` (axis validated, default filled in)."""
    return attributes.cached(plan, opset, shape, np.dtype(dtype), _axis_value(axis))

