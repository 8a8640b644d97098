"""The plan of Resize's gradient (and Upsample's and interpolate's, which run on Resize's plan):
the transpose of each resized axis' table, and the order the axes are passed in.

The forward is linear in X, separable per resized axis: along axis d, output coordinate o takes
sum over its taps t of weight[o, t] * X[index[o, t]] (onnx_cupy.resize.plan's tables; a
tf_crop_and_resize coordinate outside the crop takes the extrapolation value and no term). So
dX = T_1' ... T_k' dY, with T_d' along axis d:

    dA[..., i, ...] = sum over (o, t) with index[o, t] = i of weight[o, t] * dB[..., o, ...]

where dB is the cotangent the pass reads (dY, or the previous pass's result) and dA what it writes.
The terms of each i are added in ascending (o, t) order, from +0, in the dtype's accumulate type
(float32 for float16, bfloat16 and float32; float64 for float64), every product and sum rounded
(no fused multiply-add); every tap of the table is a term, a weight of 0 included (0 * inf is
NaN, as in the forward). Between passes the partial gradient stays in the accumulate type; the
last pass rounds once to X's dtype. The passes run in ascending order of the ratio of their
output's length to their input's (the pass that shrinks the array most first, keeping the
partial results small), ties by axis. Both paths (numpy_grad and kernel_grad) follow this order
term for term: the same bits on NumPy, the emulator and the GPU."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core import arrays
from .plan import AxisTable, ResizePlan


@dataclass(frozen=True, eq=False)
class Transposed:
    """One pass of the gradient along `axis`: the terms of input coordinate i are
    terms[start[i]:start[i + 1]], each the output coordinate `source` it reads and its
    `weight`, in ascending (output coordinate, tap) order."""

    axis: int
    n: int                 # the pass's output length: X's along the axis
    m: int                 # its input length: Y's
    start: np.ndarray      # int64 [n + 1]
    source: np.ndarray     # int64 [terms]
    weight: np.ndarray     # float64 [terms]

    @property
    def most(self) -> int:
        """The most terms of one input coordinate."""
        return int(np.diff(self.start).max(initial=0))


@dataclass(frozen=True, eq=False)
class GradientPlan:
    """The gradient of a Resize plan `forward`: `passes` in the order they run, and the shape of
    the partial gradient after each (the last: X's)."""

    forward: ResizePlan
    passes: tuple[Transposed, ...]
    shapes: tuple[tuple[int, ...], ...]


def transposed(table: AxisTable, n: int) -> Transposed:
    """The transpose of one axis' table (input length n): its terms sorted stably by the input
    coordinate they reach, so each coordinate's terms keep their (o, t) order."""
    m, taps = table.index.shape
    kept = np.repeat(~table.outside, taps)
    index = table.index.ravel()[kept]
    order = np.argsort(index, kind="stable")
    source = np.repeat(np.arange(m, dtype=np.int64), taps)[kept][order]
    start = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(index, minlength=n), out=start[1:])
    return Transposed(table.axis, n, m, arrays.readonly(start), arrays.readonly(source),
                      arrays.readonly(table.weight.ravel()[kept][order]))


def gradient(forward: ResizePlan, dtype: np.dtype, dy: object, op: str) -> GradientPlan:
    """Validate a gradient of the plan `forward` (X of a floating `dtype`; the cotangent dY an
    array of Y's shape and X's dtype) and plan it. `op` names the gradient in errors."""
    arrays.check_cotangent(f"{op} gradient", dtype, dy, forward.out_shape)
    passes = sorted((transposed(t, forward.in_shape[t.axis]) for t in forward.tables),
                    key=lambda p: (p.n / p.m if p.m else 0.0, p.axis))
    shape, shapes = list(forward.out_shape), []
    for p in passes:
        shape[p.axis] = p.n
        shapes.append(tuple(shape))
    return GradientPlan(forward, tuple(passes), tuple(shapes))
