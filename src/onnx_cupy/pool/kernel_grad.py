"""The kernel path of the pooling family's gradients: pool_grad (AveragePool, LpPool, MaxPool and
the global pools as one window per plane) and pool_adaptive_grad (PyTorch's adaptive pools) of
kernels/pool.cu, one thread per input element gathering its terms in a fixed order (the formulas
and the order: onnx_cupy.pool.numpy_grad; the same bits as the NumPy path, LpPool's powers
apart). The forward output a gradient reads (LpPool's Y, MaxPool's Indices) is computed by the
forward's own kernels where the caller does not give it."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, records
from . import kernel, plan
from .plan import MAX_SPATIAL, AdaptivePlan, GradientPlan, PoolPlan

_GRAD_GEOM = np.dtype(
    [(f, "<i8") for f in ("total", "channels", "stride_n", "stride_c", "mode", "divisor",
                          "plane_size", "out_plane")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in ("in_shape", "in_stride", "out_shape", "out_stride",
                                             "kernel", "step", "dilation", "pad_begin",
                                             "count_begin", "count_end", "index_stride")]
    + [("p", "<f8")],
    align=True)
_ADAPTIVE_GRAD_GEOM = np.dtype(
    [(f, "<i8") for f in ("total", "max", "out_plane")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in ("in_shape", "out_shape", "out_stride",
                                             "plane_stride")],
    align=True)

FLOATS = tuple(dtypes.FLOAT_TYPES)   # gradients: floating dtypes only
# by (dtype, bits, rank): the windowed pools' gradient, input elements on grid x
GRADIENT = {(t, b, r): records.Instantiation(
    kernel.FAMILY, "pool_grad", (*kernel._typed(t, b), records.argument("rank", r)),
    tuple(f"{op} gradient" for op in (*plan.OPS, *plan.GLOBAL_OPS)), (t,), grid_stride="x",
    variant="gradient, per spatial rank", rank=r)
    for t in FLOATS for b in dtypes.INDEX_TYPES for r in kernel.RANKS}
# by (dtype, bits, rank): the adaptive pools' gradient
ADAPTIVE_GRADIENT = {(t, b, r): records.Instantiation(
    kernel.FAMILY, "pool_adaptive_grad", (*kernel._typed(t, b), records.argument("rank", r)),
    tuple(f"{op} gradient" for op in plan.ADAPTIVE_OPS), (t,), grid_stride="x",
    variant="gradient, per spatial rank", rank=r)
    for t in FLOATS for b in dtypes.INDEX_TYPES for r in kernel.ADAPTIVE_RANKS}

loader.register(kernel.FAMILY, [*GRADIENT.values(), *ADAPTIVE_GRADIENT.values()],
                {"PoolGradGeom": _GRAD_GEOM, "PoolAdaptiveGradGeom": _ADAPTIVE_GRAD_GEOM})


def walks(gp: GradientPlan, index: int, a: Any) -> bool:
    """Whether the gradient's kernels read input `index` laid out as `a`: X with whole-element
    strides (a global pool's forward, which computes its Y, as pool_global walks it), the
    others C-contiguous (declared so)."""
    if index == 0 and gp.source is not None:
        return kernel.walks_global(gp.source, 0, a)
    return arrays.whole_element_strides(a) is not None


@functools.lru_cache(maxsize=512)
def gradient_args(gp: GradientPlan, dtype: np.dtype, x_strides: tuple[int, ...]
                  ) -> launcher.LaunchSpec:
    """pool_grad's launch for an X of `dtype` with these element strides: one thread per input
    element, grid-stride; 32-bit offsets where every coordinate, offset and index fits."""
    pl = gp.forward
    assert isinstance(pl, PoolPlan)
    total = math.prod(pl.in_shape)
    bits = launcher.grid_offset_bits(total, kernel.reach(pl, x_strides),
                                     math.prod(pl.out_shape), total)
    out_plane = math.prod(pl.out_shape[2:])
    g = launcher.parameter_struct(
        _GRAD_GEOM, total=total, channels=pl.in_shape[1], stride_n=x_strides[0],
        stride_c=x_strides[1], mode=kernel.GENERIC_MODES[pl.op],
        divisor=gp.divisor_override or 0, plane_size=math.prod(pl.in_shape[2:]),
        out_plane=out_plane, in_shape=pl.in_shape[2:], in_stride=x_strides[2:],
        out_shape=pl.out_shape[2:], out_stride=arrays.c_strides(pl.out_shape[2:]), kernel=pl.kernel,
        step=pl.strides, dilation=pl.dilations, pad_begin=pl.pads_begin, count_begin=pl.cnt_lo,
        count_end=pl.cnt_hi, index_stride=pl.index_strides, p=pl.p)
    return launcher.LaunchSpec(GRADIENT[np.dtype(dtype).name, bits, pl.nd], None, total, (g,))


@functools.lru_cache(maxsize=512)
def adaptive_gradient_args(pl: AdaptivePlan, dtype: np.dtype) -> launcher.LaunchSpec:
    """pool_adaptive_grad's launch: one thread per input element, grid-stride; 32-bit offsets
    where every offset and window bound numerator ((w + 1) * m + n - 1, (o + 1) * n + m - 1)
    fits an int."""
    total = math.prod(pl.in_shape)
    ins, outs = pl.in_shape[2:], pl.out_shape[2:]
    bits = launcher.grid_offset_bits(total, math.prod(pl.out_shape), *(
        (n + 1) * m + n + (m + 1) * n + m for n, m in zip(ins, outs)))
    g = launcher.parameter_struct(
        _ADAPTIVE_GRAD_GEOM, total=total, max=pl.op == "AdaptiveMaxPool",
        out_plane=math.prod(outs), in_shape=ins, out_shape=outs, out_stride=arrays.c_strides(outs),
        plane_stride=arrays.c_strides(ins))
    return launcher.LaunchSpec(ADAPTIVE_GRADIENT[np.dtype(dtype).name, bits, pl.nd], None,
                               total, (g,))


def prepare(gp: GradientPlan, device: Any, x: Any, dy: Any, saved: Any
            ) -> kernel_call.Body:
    """The body of the gradient `gp` on `device` for inputs laid out as (x, dy, saved):
    body(X, dY, saved, out) -> dX; the saved output (Y or Indices) computed by the forward's
    kernels where None."""
    empty, dtype, shape = device.empty, x.dtype, tuple(x.shape)   # X's: the key holds them
    if not math.prod(shape):
        return lambda X, dY, s, out: empty(shape, dtype) if out is None else out
    forward = None if saved is not None or not gp.saved else _forward(gp, device, x)
    pl = gp.forward
    if isinstance(pl, AdaptivePlan):
        spec = adaptive_gradient_args(pl, np.dtype(dtype))
    else:
        strides = arrays.whole_element_strides(x)
        assert strides is not None   # walks
        spec = gradient_args(gp, np.dtype(dtype), strides)
    step = launcher.Launch(device, spec)
    adaptive, kept = isinstance(pl, AdaptivePlan), gp.saved

    def body(X: Any, dY: Any, s: Any, out: Any) -> Any:
        if s is None and forward is not None:
            s = forward(X)
        dX = empty(shape, dtype) if out is None else out
        if adaptive:
            step(dY, s, dX)
        else:
            step(X, dY, s if kept == "Y" else None, s if kept == "Indices" else None, dX)
        return dX
    return body


def _forward(gp: GradientPlan, device: Any, x: Any) -> Any:
    """forward(X) -> the saved output the gradient reads (Y, or Indices), by the forward's own
    kernels."""
    pl = gp.forward
    if isinstance(pl, AdaptivePlan):
        adaptive = kernel.prepare_adaptive(pl, device, x, indices=True)
        return lambda X: adaptive(X, None)[1]
    if gp.saved == "Indices":
        windowed = kernel.prepare(pl, device, x, indices=True)
        return lambda X: windowed(X, None)[1]
    if gp.source is not None:
        whole = kernel.prepare_global(gp.source, device, x)
        return lambda X: whole(X, None)
    lp = kernel.prepare(pl, device, x)
    return lambda X: lp(X, None)
