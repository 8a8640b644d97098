"""The pooling family's gradients on the NumPy path: vector-Jacobian products, dY in, dX out.

  AveragePool:   dX[n,c,w] = sum_{o : w in W(o)} dY[n,c,o] / D(o)
                 D(o): the forward's divisor, or PyTorch's divisor_override where given
  LpPool:        dX[n,c,w] = f(X[n,c,w]) * sum_{o : w in W(o)} g(o),
                 g(o) = dY[n,c,o] / Y[n,c,o]^(p-1) (0 where Y[n,c,o] = 0),
                 f(x) = sign(x) |x|^(p-1) (0 at x = 0)
  MaxPool:       dX[n,c,w] = sum_{o : w in W(o), Indices[n,c,o] = w} dY[n,c,o]
  adaptive mean: dX[n,c,w] = sum_{o : w in A(o)} dY[n,c,o] / len_1(o) / ... / len_d(o)
  adaptive max:  as MaxPool, over the windows A(o), the indices counted within each plane

W(o) is the forward's window (plan.py), A(o) the adaptive window. Every sum runs over the
outputs o in row-major order, from +0, in the accumulation type (float32 for 16- and 32-bit
floats, float64 for float64), each term rounded to it before it is added, and is rounded to
X's dtype once at the end: PyTorch's CPU order (each output's share added to the elements of
its window, outputs in order) and the kernels' (kernels/pool.cu, pool_grad: each input element
gathers the same terms in the same order), so the paths agree bit for bit given the same Y or
Indices; LpPool with p other than 1 and 2 raises to p - 1 by each path's `pow` (NumPy's own,
the C library's on the emulator, CUDA's on a GPU: docs/semantics.md), whose ulps a sum with
cancellation can widen. p is rounded to the accumulation type first, as the forward's powers
take it. A sum never holds -0 (it starts at +0), so adding +0 where a term is absent changes
nothing.

Here the terms go in by one slice-add per window tap, the taps in descending order (tap j of
output o lands on o*s - b + j*d: for one element, a later tap is an earlier output), so every
element receives its terms in ascending output order; the adaptive windows, whose starts are
not evenly spaced (and repeat where an axis grows), by one gather per step into the range of
outputs holding each element (`adaptive`); MaxPool's, whose terms each go to one element, by
np.add.at in row-major output order (`maximum`).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import dtypes
from . import numpy as numpy_path
from . import numpy_global, plan

if TYPE_CHECKING:
    from .plan import AdaptivePlan, GradientPlan, PoolPlan

Body = Callable[..., Any]


def prepare(gp: GradientPlan, dtype: np.dtype) -> Body:
    """The NumPy gradient of `gp` for an X of `dtype`: body(x, dy, saved, out) -> dX, the saved
    forward output (Y or Indices) computed where None."""
    fw = gp.forward
    if isinstance(fw, plan.AdaptivePlan):
        return adaptive(fw, numpy_path.prepare_adaptive(fw, indices=True))
    if fw.op == "MaxPool":
        return maximum(fw, numpy_path.prepare(fw, dtype, indices=True))
    if fw.op == "LpPool":
        source = numpy_global.prepare_global(gp.source, dtype) if gp.source is not None \
            else numpy_path.prepare(fw, dtype)
        return lp(fw, source)
    acc = dtypes.accumulate_dtype(dtype)
    divisor = plan.divisor(fw, np.dtype(np.int64)).astype(acc) if gp.divisor_override is None \
        else acc.type(gp.divisor_override)
    return average(fw, divisor)


def window_sums(pl: PoolPlan, terms: np.ndarray) -> np.ndarray:
    """S[n,c,w] = sum of terms[n,c,o] over the outputs o whose window W(o) holds w, in
    ascending o, in terms' dtype (the shape of X)."""
    n_c, in_sp, out_sp = pl.in_shape[:2], pl.in_shape[2:], pl.out_shape[2:]
    if _whole_plane(pl):   # one window, the plane: one term per element
        whole = np.zeros(pl.in_shape, terms.dtype)
        whole += terms
        return whole
    # the positions any tap reaches, from -b on: [0, extent) of the padded sums
    extent = [max(n + b, (m - 1) * s + (k - 1) * d + 1 if m else 0)
              for n, m, k, s, d, b in zip(in_sp, out_sp, pl.kernel, pl.strides, pl.dilations,
                                          pl.pads_begin)]
    sums = np.zeros((*n_c, *extent), terms.dtype)
    if terms.size:
        for taps in itertools.product(*(range(k - 1, -1, -1) for k in pl.kernel)):
            at: tuple[Any, ...] = (Ellipsis, *(
                slice(j * d, j * d + (m - 1) * s + 1, s)
                for j, d, m, s in zip(taps, pl.dilations, out_sp, pl.strides)))
            sums[at] += terms
    inside: tuple[Any, ...] = (Ellipsis, *(slice(b, b + n)
                                           for b, n in zip(pl.pads_begin, in_sp)))
    within: np.ndarray = sums[inside]
    return within


def _whole_plane(pl: PoolPlan) -> bool:
    """Whether each (n, c) plane is one window (a global pool's plan): no padding, no
    dilation, one output per plane."""
    return (all(m == 1 for m in pl.out_shape[2:]) and tuple(pl.kernel) == tuple(pl.in_shape[2:])
            and not any(pl.pads_begin) and all(d == 1 for d in pl.dilations))


def average(pl: PoolPlan, divisor: np.ndarray | float) -> Body:
    """AveragePool's gradient: body(x, dy, _, out) -> dX, the terms dY / D in the
    accumulation type."""
    def body(x: np.ndarray, dy: np.ndarray, _: Any, out: np.ndarray | None) -> np.ndarray:
        acc = dtypes.accumulate_dtype(x.dtype)
        terms = dy.astype(acc) / divisor
        return _result(window_sums(pl, terms), x.dtype, out)
    return body


def lp(pl: PoolPlan, forward: Body) -> Body:
    """LpPool's gradient: body(x, dy, y, out) -> dX (Y computed by `forward` where None)."""
    def body(x: np.ndarray, dy: np.ndarray, y: np.ndarray | None, out: np.ndarray | None
             ) -> np.ndarray:
        acc = dtypes.accumulate_dtype(x.dtype)
        if y is None:
            y = forward(x, None)
        terms = lp_shares(dy.astype(acc), y.astype(acc), pl.p)
        return _result(window_sums(pl, terms) * lp_factor(x.astype(acc), pl.p), x.dtype, out)
    return body


def lp_shares(dy: np.ndarray, y: np.ndarray, p: float) -> np.ndarray:
    """g = dY / Y^(p-1), 0 where Y = 0 (the norm's subgradient there), in dy's dtype: p rounded
    to it first, as the forward's power and the kernel (oc::lp_share) take it."""
    pa, one = dy.dtype.type(p), dy.dtype.type(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if pa == one:
            g: np.ndarray = dy.copy()
        elif pa == 2:
            g = dy / y
        else:
            g = dy / np.power(y, pa - one)
    g[y == 0] = 0
    return g


def lp_factor(x: np.ndarray, p: float) -> np.ndarray:
    """f(x) = sign(x) |x|^(p-1), 0 at x = 0, in x's dtype: p rounded to it first, as the
    kernel's oc::lp_factor takes it."""
    pa, one = x.dtype.type(p), x.dtype.type(1)
    if pa == 2:
        return x
    sign: np.ndarray = np.sign(x)
    if pa == one:
        return sign
    with np.errstate(divide="ignore", invalid="ignore"):
        f: np.ndarray = sign * np.power(np.abs(x), pa - one)
    f[x == 0] = 0
    return f


def maximum(pl: PoolPlan, forward: Body) -> Body:
    """MaxPool's gradient: body(x, dy, indices, out) -> dX (Indices computed by `forward`
    where None): each output's dY to the element its index names, added in row-major output
    order from +0 (np.add.at adds in the order of its operands: each element's outputs in
    ascending order, as the kernels sum them). Indices are flat over N, C and the spatial
    axes; one of another (n, c) plane than its output's wins nothing."""
    in_sp = pl.in_shape[2:]
    plane = math.prod(in_sp)
    n_c = pl.in_shape[:2]   # each (n, c) plane's first flat index, broadcast over the outputs
    base = (np.arange(math.prod(n_c), dtype=np.int64) * plane).reshape(*n_c, *(1,) * len(in_sp))

    def body(x: np.ndarray, dy: np.ndarray, indices: np.ndarray | None,
             out: np.ndarray | None) -> np.ndarray:
        if indices is None:
            indices = forward(x, None)[1]
        terms = dy.astype(dtypes.accumulate_dtype(x.dtype), copy=False).reshape(-1)
        at = indices.astype(np.int64, copy=False).reshape(-1)
        column_major = pl.storage_order and len(in_sp) > 1
        if column_major or not _in_planes(at, base.reshape(-1), plane):
            within = np.subtract(indices, base, dtype=np.int64)
            hit = within.view(np.uint64) < plane   # in its own plane (a negative one wraps)
            if column_major:   # the row-major positions of column-major indices
                rows = np.ravel_multi_index(np.unravel_index(np.where(hit, within, 0), in_sp,
                                                             order="F"), in_sp)
                at = (rows + base).reshape(-1)
            keep = hit.reshape(-1)
            at, terms = at[keep], terms[keep]
        sums = np.zeros(math.prod(pl.in_shape), terms.dtype)
        np.add.at(sums, at, terms)
        return _result(sums.reshape(pl.in_shape), x.dtype, out)
    return body


def _in_planes(at: np.ndarray, base: np.ndarray, plane: int) -> bool:
    """Whether every row p of `at` (as many rows as `base`) lies in [base[p], base[p] + plane)
    (two reductions: the common case needs no mask)."""
    if not at.size:
        return False
    at = at.reshape(len(base), -1)
    return bool((at.min(axis=1) >= base).all() and (at.max(axis=1) < base + plane).all())


def adaptive(pl: AdaptivePlan, forward: Body) -> Body:
    """The adaptive pools' gradient: body(x, dy, indices, out) -> dX (the maximum's Indices,
    within each plane, computed by `forward` where None). Each input element w gathers over
    the outputs whose window holds it, along each axis o in [floor(w m / n), ceil((w + 1) m /
    n)): one masked gather-add per tuple of steps t into those ranges, the tuples in
    lexicographic order, so every element receives its terms in row-major output order (the
    kernel's, pool_adaptive_grad) however the windows overlap."""
    spans = []   # per axis: the first output holding each input position, and the end
    for axis in range(pl.nd):
        n, m = pl.in_shape[2 + axis], pl.out_shape[2 + axis]
        w = np.arange(n, dtype=np.int64)
        spans.append((w * m // n, -(-(w + 1) * m // n)))
    most = [int((end - first).max(initial=0)) for first, end in spans]
    bounds = [pl.bounds(axis) for axis in range(pl.nd)]
    position = np.arange(math.prod(pl.in_shape[2:]), dtype=np.int64).reshape(pl.in_shape[2:])
    mean = pl.op == "AdaptiveAveragePool"

    def body(x: np.ndarray, dy: np.ndarray, indices: np.ndarray | None,
             out: np.ndarray | None) -> np.ndarray:
        acc = dtypes.accumulate_dtype(x.dtype)
        terms = dy.astype(acc)
        if mean:   # dY / len_1 / ... / len_d, each division rounded, as PyTorch's
            for axis, (start, end) in enumerate(bounds):
                terms = terms / (end - start).astype(acc).reshape(
                    (-1,) + (1,) * (pl.nd - 1 - axis))
            indices = None   # the mean reads no saved output
        elif indices is None:
            indices = forward(x, None)[1]
        sums = np.zeros(pl.in_shape, acc)
        if terms.size:
            for steps in itertools.product(*map(range, most)):
                at: list[Any] = [...]
                inside = np.ones((), bool)
                for axis, (t, (first, end)) in enumerate(zip(steps, spans)):
                    shape = (-1,) + (1,) * (pl.nd - 1 - axis)
                    o = first + t
                    inside = inside & (o < end).reshape(shape)
                    at.append(np.minimum(o, pl.out_shape[2 + axis] - 1).reshape(shape))
                where = tuple(at)
                hit = inside if indices is None else inside & (indices[where] == position)
                np.add(sums, terms[where], out=sums, where=hit)
        return _result(sums, x.dtype, out)
    return body


def _result(sums: np.ndarray, dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    """The sums rounded once to `dtype`, into `out` where given."""
    if out is None:
        return sums.astype(dtype, order="C", copy=False)
    np.copyto(out, sums, casting="unsafe")
    return out
