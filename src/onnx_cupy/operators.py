"""The public operators: validate and plan on the host (onnx_cupy.plans), then run the plan on the
path the input picks: the NumPy fallback (onnx_cupy.fallback) or the CUDA kernels on the GPU or
the CPU emulator (onnx_cupy.ops)."""
from __future__ import annotations

import functools
from typing import Any

from . import arrays, backends
from .fallback import hardmax as numpy_hardmax
from .fallback import pool as numpy_pool
from .fallback import resize as numpy_resize
from .ops import hardmax as kernel_hardmax
from .ops import pool as kernel_pool
from .ops import resize as kernel_resize
from .plans import hardmax as hardmax_plans
from .plans import pool as pool_plans
from .plans import resize as resize_plans

def _compute(numpy_run: Any, kernel_run: Any, pl: Any, X: Any, Y: Any, backend: str) -> None:
    """Run plan `pl` on X into Y: the NumPy fallback, or the kernels ('cupy', 'emulated')."""
    if backend == "numpy":
        numpy_run(pl, X, Y)
    else:
        kernel_run(pl, X, Y, backend)


def _pool(op: str, X: Any, opset: int, out: Any, **attrs: Any) -> Any:
    X, backend = backends.select(X, op)
    pl = pool_plans.prepare(op, tuple(X.shape), X.dtype, opset, **attrs)
    return arrays.execute(op, X, backend, out, pl.out_shape,
                          functools.partial(_compute, numpy_pool.run, kernel_pool.run, pl))


def average_pool(X: Any, *, kernel_shape: Any = None, auto_pad: str = "NOTSET",
                 ceil_mode: int = 0, count_include_pad: int = 0, dilations: Any = None,
                 pads: Any = None, strides: Any = None, opset: int = 22, out: Any = None) -> Any:
    """ONNX AveragePool (versions 1, 7, 10, 11, 19, 22) on a NumPy or CuPy array."""
    return _pool("AveragePool", X, opset, out, kernel_shape=kernel_shape, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad, dilations=dilations,
                 pads=pads, strides=strides)


def lp_pool(X: Any, *, kernel_shape: Any = None, p: float = 2, auto_pad: str = "NOTSET",
            ceil_mode: int = 0, dilations: Any = None, pads: Any = None, strides: Any = None,
            opset: int = 22, out: Any = None) -> Any:
    """ONNX LpPool (versions 1, 2, 11, 18, 22) on a NumPy or CuPy array."""
    return _pool("LpPool", X, opset, out, kernel_shape=kernel_shape, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations, pads=pads, strides=strides, p=p)


def hardmax(X: Any, *, axis: int | None = None, opset: int = 13, out: Any = None) -> Any:
    """ONNX Hardmax (versions 1, 11, 13) on a NumPy or CuPy array: 1 at the first maximum along
    `axis` (version 13) or of each row of the coerced 2-D view (versions 1, 11), 0 elsewhere.
    `axis` defaults to -1 from opset 13 on, to 1 before."""
    X, backend = backends.select(X, hardmax_plans.OP)
    pl = hardmax_plans.prepare(tuple(X.shape), X.dtype, axis, opset)
    return arrays.execute(hardmax_plans.OP, X, backend, out, pl.shape,
                          functools.partial(_compute, numpy_hardmax.run, kernel_hardmax.run, pl))


def _resize_compute(pl: resize_plans.ResizePlan, X: Any, Y: Any, backend: str) -> None:
    if not pl.tables:  # every axis maps onto itself
        Y[...] = X
    else:
        _compute(numpy_resize.run, kernel_resize.run, pl, X, Y, backend)


def resize(X: Any, roi: Any = None, scales: Any = None, sizes: Any = None, *, antialias: int = 0,
           axes: Any = None, coordinate_transformation_mode: str = "half_pixel",
           cubic_coeff_a: float = -0.75, exclude_outside: int = 0,
           extrapolation_value: float = 0.0, keep_aspect_ratio_policy: str = "stretch",
           mode: str = "nearest", nearest_mode: str = "round_prefer_floor", opset: int = 19,
           out: Any = None) -> Any:
    """ONNX Resize (versions 10, 11, 13, 18, 19) on a NumPy or CuPy array.

    roi, scales and sizes are NumPy/CuPy arrays or sequences (read on the host); give exactly one
    of scales and sizes (an empty one counts as not given). Resize-10 takes X and scales only.
    See onnx_cupy.plans.resize for the formulas and dtype rules.
    """
    op = resize_plans.OP
    X, backend = backends.select(X, op)
    pl, _, _ = resize_plans.prepare(tuple(X.shape), X.dtype, roi, scales, sizes, opset,
                                    antialias=antialias, axes=axes,
                                    coordinate_transformation_mode=coordinate_transformation_mode,
                                    cubic_coeff_a=cubic_coeff_a, exclude_outside=exclude_outside,
                                    extrapolation_value=extrapolation_value,
                                    keep_aspect_ratio_policy=keep_aspect_ratio_policy, mode=mode,
                                    nearest_mode=nearest_mode)
    if backend != "numpy" and X.dtype.kind in "OUS":
        raise TypeError(f"{op}: string tensors run on the NumPy backend only "
                        f"(got dtype {X.dtype} on backend {backend!r})")
    return arrays.execute(op, X, backend, out, pl.out_shape,
                          functools.partial(_resize_compute, pl))
