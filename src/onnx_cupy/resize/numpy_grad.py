"""The NumPy path of Resize's gradient: the passes of onnx_cupy.resize.plan_grad, each input
coordinate's terms added in their order. A pass holds its terms as slots: slot j is the j-th term
of every input coordinate that has more than j, so adding slot after slot (each a gather of the
partial gradient along the axis, a multiply by the slot's weights and an add into the rows it
reaches) adds each coordinate's terms in order, as the kernel's loop does, every product and sum
rounded in the accumulate type (NumPy's elementwise multiply and add, no BLAS)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core import dtypes
from .plan_grad import GradientPlan, Transposed

Body = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], np.ndarray]


@dataclass(frozen=True)
class _Slot:
    """The j-th term of the input coordinates that have one: those coordinates (`rows`, None:
    all), or where most have one the coordinates that do not (`lacking`, whose terms are then
    made +0); the output coordinate each term reads and its weight in the accumulate type."""

    rows: np.ndarray | None
    lacking: np.ndarray | None
    source: np.ndarray
    weight: np.ndarray          # [terms, 1]: broadcast along the axes after the pass's


def _slots(p: Transposed, acc: np.dtype) -> tuple[_Slot, ...]:
    counts = np.diff(p.start)
    slots = []
    for j in range(p.most):
        has = counts > j
        if 2 * has.sum() >= p.n:   # every coordinate, those without a term fed any, made +0
            terms = np.where(has, p.start[:-1] + j, 0)
            slots.append(_Slot(None, None if has.all() else np.flatnonzero(~has),
                               p.source[terms], p.weight[terms].astype(acc)[:, None]))
        else:
            terms = p.start[:-1][has] + j
            slots.append(_Slot(np.flatnonzero(has), None, p.source[terms],
                               p.weight[terms].astype(acc)[:, None]))
    return tuple(slots)


def _pass(p: Transposed, slots: tuple[_Slot, ...], a: np.ndarray, shape: tuple[int, ...]
          ) -> np.ndarray:
    """One pass on the partial gradient `a` (the accumulate type): its result, of `shape`.
    A coordinate without a slot's term adds +0, which leaves its sum as it is: a sum that
    starts at +0 never is -0 (x + +0 = x but for x = -0), so NaN, infinities and every bit
    stay those of its own terms."""
    lead, inner = int(np.prod(shape[:p.axis])), int(np.prod(shape[p.axis + 1:]))
    src = a.reshape(lead, p.m, inner)
    dst = np.zeros((lead, p.n, inner), a.dtype)
    for s in slots:
        term = np.take(src, s.source, axis=1)
        term *= s.weight
        if s.lacking is not None:
            term[:, s.lacking] = 0
        if s.rows is None:
            dst += term
        else:
            dst[:, s.rows] += term
    return dst.reshape(shape)


def prepare(gp: GradientPlan, dtype: np.dtype) -> Body:
    """The NumPy gradient of `gp` for an X of `dtype`: body(x, dy, out) -> dX."""
    acc = dtypes.accumulate_dtype(dtype)
    slots = [_slots(p, acc) for p in gp.passes]
    shape = gp.forward.in_shape

    def body(x: np.ndarray, dy: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        dx: np.ndarray = np.empty(shape, x.dtype) if out is None else out
        if not dx.size:
            return dx
        a = dy.astype(acc, copy=False)   # exact: acc holds every value of X's dtype
        if a.size:
            with np.errstate(over="ignore", invalid="ignore"):
                for p, s, after in zip(gp.passes, slots, gp.shapes):
                    a = _pass(p, s, a, after)
        else:   # no output: no term
            a = np.zeros(shape, acc)
        np.copyto(dx, a, casting="unsafe")   # rounded once to X's dtype
        return dx
    return body
