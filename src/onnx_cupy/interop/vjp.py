"""`onnx_cupy.vjp`: the gradient of an operator's output with respect to its inputs, on NumPy or
CuPy arrays, without torch: the vector-Jacobian product, the cotangent of the first output in,
one gradient per input out (None for an input with none, such as indices). The pooling
functions and interpolate of onnx_cupy.nn.functional too, with PyTorch's gradients
(interop/functional/gradients.py)."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, overload

from ..core import opsets
from ..core.execution import ArrayT
from ..pool import api as pool_api
from ..resize import api as resize_api
from ..resize import plan as resize_plan
from ..unpool import api as unpool_api

Gradient = Callable[[tuple[Any, ...], Any, int, dict[str, Any], Any], tuple[Any, ...]]


def _pooled(op: str) -> Gradient:
    """The gradient of the pooling `op` (inputs: X): (dX,)."""
    def gradient(inputs: tuple[Any, ...], cotangent: Any, opset: int,
                 attributes: dict[str, Any], out: Any) -> tuple[Any, ...]:
        return (pool_api.gradient(op, inputs[0], cotangent, (opset, attributes), out=out),)
    return gradient


def _unpooled(inputs: tuple[Any, ...], cotangent: Any, opset: int, attributes: dict[str, Any],
              out: Any) -> tuple[Any, ...]:
    """MaxUnpool's gradient (inputs: X, I and the optional output_shape): (dX, None[, None])."""
    X, I, *shape = inputs
    dx = unpool_api.gradient(X, I, cotangent, shape[0] if shape else None, opset, attributes,
                             out=out)
    return (dx, None, *(None for _ in shape))


def _resized(inputs: tuple[Any, ...], cotangent: Any, opset: int, attributes: dict[str, Any],
             out: Any) -> tuple[Any, ...]:
    """Resize's gradient (inputs: X and the optional roi, scales and sizes): (dX, None, ...)."""
    X, *vectors = inputs
    padded = (*vectors, *(None,) * (3 - len(vectors)))
    dx = resize_api.gradient(X, cotangent, (opset, None, attributes), padded, out=out)
    return (dx, *(None for _ in vectors))


def _upsampled(inputs: tuple[Any, ...], cotangent: Any, opset: int, attributes: dict[str, Any],
               out: Any) -> tuple[Any, ...]:
    """Upsample's gradient (inputs: X and scales): (dX, None)."""
    X, scales = inputs
    dx = resize_api.gradient(X, cotangent, (opset, attributes["mode"]), (scales,),
                             op=resize_plan.UPSAMPLE, out=out)
    return (dx, None)


# function -> (its operator, its fewest and most inputs, its gradient)
_GRADIENTS: dict[Callable[..., Any], tuple[str, int, int, Gradient]] = {
    **{f: (op, 1, 1, _pooled(op)) for f, op in (
        (pool_api.average_pool, "AveragePool"), (pool_api.lp_pool, "LpPool"),
        (pool_api.max_pool, "MaxPool"), (pool_api.global_average_pool, "GlobalAveragePool"),
        (pool_api.global_lp_pool, "GlobalLpPool"), (pool_api.global_max_pool, "GlobalMaxPool"))},
    unpool_api.max_unpool: ("MaxUnpool", 2, 3, _unpooled),
    resize_api.resize: (resize_plan.OP, 1, 4, _resized),
    resize_api.upsample: (resize_plan.UPSAMPLE, 2, 2, _upsampled),
}


_CHECKED: set[tuple[Any, ...]] = set()   # (operator, opset, attribute names) found defined


@functools.cache
def _functional_gradients() -> Any:
    """onnx_cupy.interop.functional.gradients (the PyTorch-style functions' gradients), imported
    at the first call (it imports this module's neighbours) and then kept."""
    from .functional import gradients
    return gradients


@functools.cache
def _defaults(function: Callable[..., Any]) -> dict[str, Any]:
    """The attributes `function` takes as keywords, with their defaults (those a call of the
    function passes on when left out)."""
    return {name: p.default for name, p in inspect.signature(function).parameters.items()
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty
            and name not in ("opset", "out", "return_indices")}


@functools.cache
def _default_opset(function: Callable[..., Any]) -> int:
    """The opset `function` follows where its caller gives none."""
    opset: int = inspect.signature(function).parameters["opset"].default
    return opset


@overload   # a pooling operator, or a pooling function or interpolate of nn.functional
def vjp(function: Callable[..., Any], X: ArrayT, /, *, cotangent: ArrayT,
        opset: int | None = ..., out: ArrayT | None = ...,
        **attributes: Any) -> tuple[ArrayT]: ...


@overload   # max_unpool(X, I), or max_unpool1d/2d/3d(input, indices)
def vjp(function: Callable[..., Any], X: ArrayT, I: Any, /, *, cotangent: ArrayT,
        opset: int | None = ..., out: ArrayT | None = ...,
        **attributes: Any) -> tuple[ArrayT, None]: ...


@overload   # max_unpool(X, I, output_shape)
def vjp(function: Callable[..., Any], X: ArrayT, I: Any, output_shape: Any, /, *,
        cotangent: ArrayT, opset: int | None = ..., out: ArrayT | None = ...,
        **attributes: Any) -> tuple[ArrayT, None, None]: ...


def vjp(function: Callable[..., Any], /, *inputs: Any, cotangent: Any, opset: int | None = None,
        out: Any = None, **attributes: Any) -> tuple[Any, ...]:
    """The vector-Jacobian product of a pooling operator, MaxUnpool, Resize or Upsample on NumPy
    or CuPy arrays: with Y = function(*inputs, **attributes) and the cotangent dY (Y's shape and
    dtype), the gradient of sum(dY * Y) with respect to each input, one entry per input (None
    for an input with no gradient, such as indices, roi, scales and sizes).

    Each gradient is a sum over the outputs that read an element, in ascending output order
    from +0 in float32 (float64 for float64 inputs), rounded once to X's dtype; no
    floating-point atomics, so the same bits on every run and on the NumPy, emulated and CuPy
    paths given the same forward output (but for the powers of lp_pool and global_lp_pool with
    p other than 1 and 2: each path's `pow`, within a few ulps).

    - average_pool: dX[w] = sum over the windows o holding w of dY[o] / count(o), count(o) the
      forward's divisor (count_include_pad as the forward);
    - lp_pool, global_lp_pool: dX[w] = f(X[w]) * sum over o of dY[o] / Y[o]^(p-1), with
      f(x) = sign(x) |x|^(p-1) (f(0) = 0) and a window whose Y is 0 (all zeros) giving 0;
    - max_pool, global_max_pool: each dY[o] to the one element MaxPool's Indices name (the
      first maximum in window order, the last NaN), the others 0;
    - global_average_pool: dX = dY / (D1 * ... * Dk);
    - resize, upsample (any mode, every attribute: the forward is linear in X): the transpose
      of the forward's per-axis tables, one resized axis at a time, each element's terms
      weight * dY in ascending (output coordinate, tap) order, the partial sums in float32
      (float64) between axes (onnx_cupy.resize.plan_grad); a tf_crop_and_resize output outside
      the crop gives nothing;
    - max_unpool(X, I[, output_shape]): dX[e] = dY at the position of Y that I[e] names, for
      every e (PyTorch's rule, also where a later element of X overwrote that position).

    The forward's output that a gradient reads (MaxPool's Indices, LpPool's Y) is computed
    from X at each call.

    The pooling functions of onnx_cupy.nn.functional (avg_pool1d/2d/3d, lp_pool1d/2d/3d,
    max_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d, adaptive_max_pool1d/2d/3d, max_unpool1d/2d/3d) and
    its interpolate give PyTorch's gradient of their input (what their autograd records for a tensor
    that requires grad): `inputs` are the input (and max_unpool's indices), the function's other
    arguments its keywords, with no opset and no out; (dX,), or (dX, None) for max_unpool.

    Parameters
    ----------
    function : callable
        One of onnx_cupy.average_pool, lp_pool, max_pool, global_average_pool,
        global_lp_pool, global_max_pool, max_unpool, resize, upsample, or a pooling function
        of onnx_cupy.nn.functional or its interpolate.
    *inputs : numpy.ndarray or cupy.ndarray
        The function's inputs, as it takes them: X (a floating dtype) for the pools; X, I and
        optionally output_shape for max_unpool; X and optionally roi, scales and sizes for
        resize (None where not given); X and scales for upsample.
    cotangent : numpy.ndarray or cupy.ndarray
        dY: Y's shape, X's dtype and array type, on X's device.
    opset : int, optional
        Picks the operator version in force, as for the function (ONNX operators only); by
        default the function's own (22; resize 19, upsample 10).
    out : array, optional
        Written with the first gradient instead of a new array: C-contiguous, X's shape and
        dtype, on X's device (ONNX operators only).
    **attributes
        The function's attributes (kernel_shape, strides, pads, p, ...), checked as the
        function checks them at `opset`; one left out takes the function's default (as
        lp_pool's p = 2).

    Returns
    -------
    tuple of numpy.ndarray or cupy.ndarray (None for the inputs without a gradient)
        (dX,) for the pools, (dX, None) or (dX, None, None) for max_unpool, dX and a None per
        further input for resize and upsample; dX has X's shape, dtype and array type.

    Raises
    ------
    TypeError
        Another function, the wrong number of inputs, an attribute the function does not
        have, an X that is not of a floating dtype, or a cotangent of another dtype or array
        type.
    ValueError
        A cotangent of another shape or device, and what the forward call would refuse.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[1.0, 3.0, 2.0, 5.0]]], dtype=np.float32)
    >>> oc.vjp(oc.max_pool, x, cotangent=np.ones((1, 1, 2), np.float32), kernel_shape=[2],
    ...        strides=[2])
    (array([[[0., 1., 0., 1.]]], dtype=float32),)
    >>> oc.vjp(oc.average_pool, x, cotangent=np.ones((1, 1, 2), np.float32), kernel_shape=[2],
    ...        strides=[2])
    (array([[[0.5, 0.5, 0.5, 0.5]]], dtype=float32),)
    >>> from onnx_cupy.nn import functional as F
    >>> oc.vjp(F.avg_pool1d, x, cotangent=np.ones((1, 1, 3), np.float32), kernel_size=2,
    ...        stride=1)
    (array([[[0.5, 1. , 1. , 0.5]]], dtype=float32),)
    >>> oc.vjp(oc.resize, x, None, [1.0, 1.0, 0.5], cotangent=np.ones((1, 1, 2), np.float32),
    ...        mode="linear")
    (array([[[0.5, 0.5, 0.5, 0.5]]], dtype=float32), None, None)
    """
    functional = _functional_gradients().differentiable(function)
    if functional is not None:
        return _functional(functional, inputs, cotangent, opset, out, attributes)
    known = _GRADIENTS.get(function)
    name = getattr(function, "__name__", repr(function))
    if known is None:
        raise TypeError(f"vjp: {name} has no gradient here (gradients: "
                        f"{', '.join(f.__name__ for f in _GRADIENTS)})")
    op, fewest, most, gradient = known
    if not fewest <= len(inputs) <= most:
        raise TypeError(f"vjp: {name} takes {fewest} to {most} inputs, got {len(inputs)}")
    opset = _default_opset(function) if opset is None else opset
    names = (op, opset, *attributes)
    if names not in _CHECKED:   # the names given, checked once per operator and opset
        opsets.check_given(op, opset, dict.fromkeys(attributes, True))
        _CHECKED.add(names)
    return gradient(inputs, cotangent, opset, {**_defaults(function), **attributes}, out)


def _functional(entry: Any, inputs: tuple[Any, ...], cotangent: Any, opset: int | None,
                out: Any, attributes: dict[str, Any]) -> tuple[Any, ...]:
    """vjp of a pooling function of onnx_cupy.nn.functional (gradients.Differentiable)."""
    name = entry.name
    arrays = 2 if name.startswith("max_unpool") else 1
    if len(inputs) != arrays:
        raise TypeError(f"vjp: {name} takes {arrays} input{'s' * (arrays > 1)} (its "
                        f"{'input and indices' if arrays > 1 else 'input'}; its other arguments "
                        f"as keywords), got {len(inputs)}")
    if opset is not None or out is not None:
        raise TypeError(f"vjp: {name} takes no {'opset' if opset is not None else 'out'} "
                        f"(a PyTorch-style function)")
    dx = entry.backward(entry.bind(inputs[0], inputs[1:], attributes), cotangent, None)
    return (dx, None) if arrays > 1 else (dx,)
