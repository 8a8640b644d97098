"""avg_pool1d/2d/3d, lp_pool1d/2d/3d and max_pool1d/2d/3d: ONNX AveragePool and MaxPool with
PyTorch's arguments, checks and results."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

import numpy as np

from ...core import execution, workspaces
from ...core.attributes import is_int, is_real
from ...core.execution import ArrayT, Indices, NumPyArray, ScalarT
from ...elementwise import api as elementwise_api
from ...elementwise import plan as elementwise_plan
from ...pool import api as pool_api
from ...pool import plan as pool_plan
from .arguments import (
    _POOL_OPSET,
    _batched,
    _check_bools,
    _check_pool,
    _In,
    _on_device,
    _strides,
    _tensors,
    _tuple,
    _xp,
)
from .docs import _AVG_DOC, _DIVISOR_DOC, _LP_DOC, _MAX_DOC, _RETURNS_DOC, _window_doc
from .prepared import (
    Gradient,
    Prepared,
    _cached,
    _check_grad_output,
    _unbatched,
    _unbatched_gradient,
)

if TYPE_CHECKING:
    from torch import Tensor


def _avg_pool(name: str, k: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Any:
    return _cached(_prepare_avg_pool, input, name, k, kernel_size, stride, padding, ceil_mode,
                   count_include_pad, divisor_override)


def _avg_pool_args(x: Any, name: str, k: int, kernel_size: Any, stride: Any, padding: Any,
                   ceil_mode: bool, count_include_pad: bool, divisor_override: int | None
                   ) -> tuple[Any, bool, dict[str, Any]]:
    """PyTorch's checks of an average pooling: (x with a batch axis, whether it had none,
    AveragePool's attributes)."""
    x, unbatched = _batched(x, name, k)
    _check_bools(name, ceil_mode=ceil_mode, count_include_pad=count_include_pad)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    strides = _strides(name, stride, kernel)
    pads = _tuple(name, "padding", padding, k)
    if divisor_override is not None and not is_int(divisor_override):
        raise TypeError(f"{name}: divisor_override must be an int, got {divisor_override!r}")
    if divisor_override is not None and divisor_override == 0:
        raise ValueError(f"{name}: divisor_override must be not zero")
    _check_pool(name, tuple(x.shape), kernel, strides, pads, ceil_mode)
    return x, unbatched, _average(kernel, strides, pads, ceil_mode,
                                  bool(count_include_pad) and divisor_override is None)


def _prepare_avg_pool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                      padding: Any, ceil_mode: bool, count_include_pad: bool,
                      divisor_override: int | None) -> Prepared:
    x, unbatched, attrs = _avg_pool_args(x, name, k, kernel_size, stride, padding, ceil_mode,
                                         count_include_pad, divisor_override)
    if divisor_override is None:
        return _unbatched(lambda xb: pool_api.run("AveragePool", xb, _POOL_OPSET, attrs),
                          unbatched)
    # sum / divisor = mean over the real elements * (their count / divisor), in float64 and
    # rounded once to x's dtype (as PyTorch divides its sum): X widened to float64 (a float64 X
    # pooled as it is) and the mean in the workspace (the STEPS level, between the family calls
    # this chains), the factors a table of the step that narrows, so that a call allocates only
    # its output
    wide = np.dtype(np.float64)
    pl = pool_plan.make("AveragePool", tuple(x.shape), wide, _POOL_OPSET, **attrs)
    factor = pool_plan.divisor(pl, wide) / divisor_override
    widen = elementwise_plan.widen(name, x.shape, x.dtype) if x.dtype != wide else None
    narrow = elementwise_plan.narrow(name, pl.out_shape, x.dtype, factor)
    space = _steps_scratch(x, *(((tuple(x.shape), wide),) if widen is not None else ()),
                           (pl.out_shape, wide))

    def call(xb: Any) -> Any:
        with _on_device(xb):
            *xw, yw = space()
            if widen is not None:
                xb = elementwise_api.run(widen, xb, out=xw[0])
            pool_api.run("AveragePool", xb, _POOL_OPSET, attrs, out=yw)
            return elementwise_api.run(narrow, yw)   # a new array, rounded once
    return _unbatched(call, unbatched)



def _avg_pool_gradient(name: str, k: int, input: Any, grad_output: Any, saved: Any,
                       kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                       count_include_pad: bool, divisor_override: int | None) -> Any:
    """The gradient of avg_pool{k}d's input: AveragePool's gradient (each output's share, its
    gradient over its divisor or divisor_override, to the elements of its window)."""
    return _cached(_prepare_avg_pool_gradient, input, name, k, kernel_size, stride, padding,
                   ceil_mode, count_include_pad, divisor_override, others=(grad_output, saved))


def _prepare_avg_pool_gradient(x: Any, backend: str, name: str, k: int, kernel_size: Any,
                               stride: Any, padding: Any, ceil_mode: bool,
                               count_include_pad: bool, divisor_override: int | None, dy: Any,
                               saved: Any) -> Gradient:
    xb, unbatched, attrs = _avg_pool_args(x, name, k, kernel_size, stride, padding, ceil_mode,
                                          count_include_pad, divisor_override)
    pl = pool_plan.make("AveragePool", tuple(xb.shape), xb.dtype, _POOL_OPSET, **attrs)
    _check_grad_output(name, dy, x, pl.out_shape[unbatched:])
    parts = (_POOL_OPSET, attrs) if divisor_override is None else \
        (_POOL_OPSET, attrs, int(divisor_override))
    return _unbatched_gradient(
        lambda xg, dyg, _: pool_api.gradient("AveragePool", xg, dyg, parts), unbatched)


def _steps_scratch(x: Any, *layouts: tuple[tuple[int, ...], np.dtype]) -> Callable[[], Any]:
    """The arrays of `layouts` a chain of family calls passes between them: carved from the
    workspace (at its STEPS level) for a CuPy `x`, new NumPy arrays for a NumPy `x` (the NumPy
    and emulated paths)."""
    if execution.is_cupy_array(x):
        return workspaces.Scratch(_xp(x), *layouts, level=workspaces.STEPS)
    return lambda: tuple(np.empty(shape, dtype) for shape, dtype in layouts)


def _average(kernel: tuple[int, ...], strides: tuple[int, ...], pads: tuple[int, ...],
             ceil_mode: bool, count_include_pad: bool) -> dict[str, Any]:
    """AveragePool's attributes of a PyTorch average pooling."""
    return {"kernel_shape": list(kernel), "auto_pad": "NOTSET", "ceil_mode": int(bool(ceil_mode)),
            "count_include_pad": int(count_include_pad), "dilations": None,
            "pads": list(pads) * 2, "strides": list(strides)}


@_tensors
def avg_pool1d(input: _In, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> _In:
    return cast(_In, _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None))


@_tensors
def avg_pool2d(input: _In, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> _In:
    return cast(_In, _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override))


@_tensors
def avg_pool3d(input: _In, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> _In:
    return cast(_In, _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override))


_OVERRIDE_DOC = """ divisor_override (not expressible in ONNX)
    divides each window's sum by that number instead."""
avg_pool1d.__doc__ = _AVG_DOC.format(
    k=1, returns=_RETURNS_DOC, window=_window_doc(1, "zeros"), divisor="", override="",
    zero_override="",
    example_shape="1, 1, 5", example_kernel="2",
    example_result="array([[[1.5, 3.5, 5. ]]], dtype=float32)")
avg_pool2d.__doc__ = _AVG_DOC.format(
    k=2, returns=_RETURNS_DOC, window=_window_doc(2, "zeros"), divisor=_DIVISOR_DOC,
    override=_OVERRIDE_DOC, zero_override=" a zero divisor_override;",
    example_shape="1, 1, 5", example_kernel="(1, 2)",
    example_result="array([[[1.5, 3.5, 5. ]]], dtype=float32)")
avg_pool3d.__doc__ = _AVG_DOC.format(
    k=3, returns=_RETURNS_DOC, window=_window_doc(3, "zeros"), divisor=_DIVISOR_DOC,
    override=_OVERRIDE_DOC, zero_override=" a zero divisor_override;",
    example_shape="1, 1, 1, 5", example_kernel="(1, 1, 2)",
    example_result="array([[[[1.5, 3.5, 5. ]]]], dtype=float32)")


def _lp_pool(name: str, k: int, input: Any, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool, saving: bool = False) -> Any:
    """lp_pool{k}d; where `saving`, (its result, the pooled powers its gradient reads)."""
    return _cached(_prepare_lp_pool, input, name, k, norm_type, kernel_size, stride, ceil_mode,
                   saving)


def _lp_pool_args(x: Any, name: str, k: int, norm_type: float, kernel_size: Any, stride: Any,
                  ceil_mode: bool) -> tuple[Any, bool, float, int, dict[str, Any]]:
    """PyTorch's checks of an Lp pooling: (x with a batch axis, whether it had none, p, the
    kernel's volume, the attributes of the AveragePool it runs)."""
    if not is_real(norm_type):
        raise TypeError(f"{name}: norm_type must be a number, got {norm_type!r}")
    if norm_type == 0:   # PyTorch raises Python's ZeroDivisionError from 1.0 / norm_type
        raise ValueError(f"{name}: norm_type must not be 0 (the result is raised to the power "
                         f"1 / norm_type), got {norm_type!r}")
    _check_bools(name, ceil_mode=ceil_mode)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    x, unbatched = _batched(x, name, k)
    strides = _strides(name, stride, kernel)
    # every check before x ** p is computed
    _check_pool(name, tuple(x.shape), kernel, strides, (0,) * k, ceil_mode)
    return (x, unbatched, float(norm_type), math.prod(kernel),
            _average(kernel, strides, (0,) * k, ceil_mode, True))


def _prepare_lp_pool(x: Any, backend: str, name: str, k: int, norm_type: float,
                     kernel_size: Any, stride: Any, ceil_mode: bool, saving: bool) -> Prepared:
    x, unbatched, p, volume, attrs = _lp_pool_args(x, name, k, norm_type, kernel_size, stride,
                                                   ceil_mode)
    pl = pool_plan.make("AveragePool", tuple(x.shape), x.dtype, _POOL_OPSET, **attrs)
    # (mean of x ** p) * kernel volume, to the power 1 / p, each step on x's dtype as NumPy
    # computes it (NaN and inf as PyTorch's); x ** p and the mean go to the workspace, so that
    # a call allocates only its output (and, `saving`, the mean its gradient reads)
    native = x.dtype.newbyteorder("=")
    power = elementwise_plan.power(name, x.shape, x.dtype, p)
    root = elementwise_plan.power(name, pl.out_shape, x.dtype, 1.0 / p, scale=volume)
    space = _steps_scratch(x, (tuple(x.shape), native), (pl.out_shape, native))
    xp = _xp(x)

    def call(xb: Any) -> Any:
        with _on_device(xb):
            powered, pooled = space()
            if saving:
                pooled = xp.empty(pl.out_shape, native)
            elementwise_api.run(power, xb, out=powered)
            pool_api.run("AveragePool", powered, _POOL_OPSET, attrs, out=pooled)
            y = elementwise_api.run(root, pooled)
            return (y, pooled) if saving else y
    return _unbatched(call, unbatched)


def _lp_pool_gradient(name: str, k: int, input: Any, grad_output: Any, saved: Any,
                      norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool) -> Any:
    """The gradient of lp_pool{k}d's input, as PyTorch's autograd takes it through the ops of
    its forward (`saved`: the pooled powers, computed again where None)."""
    return _cached(_prepare_lp_pool_gradient, input, name, k, norm_type, kernel_size, stride,
                   ceil_mode, others=(grad_output, saved))


def _prepare_lp_pool_gradient(x: Any, backend: str, name: str, k: int, norm_type: float,
                              kernel_size: Any, stride: Any, ceil_mode: bool, dy: Any,
                              saved: Any) -> Gradient:
    """PyTorch's lp_pool is y = d ** (1 / p), d = (sign(m) * relu(abs(m))) * V, m the mean of
    x ** p over each window (AveragePool, padding 0), V the kernel's volume; its autograd
    gives, each product rounded to x's dtype as PyTorch's ops round it:

      g(o)  = T(T(dY * T((1 / p) * d ** (1 / p - 1))) * V), 0 where m = 0, g - g where m is
              NaN (sign(NaN) = 0; relu passes NaN): the elementwise PRODUCT step, masked by m
      dX[w] = T(G[w] * T(p * x ** (p - 1))), G AveragePool's gradient of g

    so a zero window (m = 0) passes nothing back, x = 0 in a window that is not takes
    G * p * 0 ** (p - 1) (0 for p > 1, G for p = 1, inf for p < 1), and a negative x with a
    fractional p NaN, as PyTorch's."""
    xb, unbatched, p, volume, attrs = _lp_pool_args(x, name, k, norm_type, kernel_size, stride,
                                                    ceil_mode)
    pl = pool_plan.make("AveragePool", tuple(xb.shape), xb.dtype, _POOL_OPSET, **attrs)
    _check_grad_output(name, dy, x, pl.out_shape[unbatched:])
    native = xb.dtype.newbyteorder("=")
    shape, out_shape = tuple(xb.shape), pl.out_shape
    power = elementwise_plan.power(name, shape, xb.dtype, p)
    root = elementwise_plan.power(name, out_shape, xb.dtype, 1.0 / p - 1.0, scale=volume)
    outer = elementwise_plan.product(name, out_shape, xb.dtype, 1.0 / p, scale=volume,
                                     masked=True)
    derivative = elementwise_plan.power(name, shape, xb.dtype, p - 1.0)
    inner = elementwise_plan.product(name, shape, xb.dtype, p)
    space = _steps_scratch(xb, (shape, native), (shape, native), (out_shape, native),
                           (out_shape, native), (out_shape, native))

    def gradient(xg: Any, dyg: Any, pooled: Any) -> Any:
        with _on_device(xg):
            first, second, mean, rooted, shares = space()
            if pooled is None:   # the forward's mean of x ** p
                elementwise_api.run(power, xg, out=first)
                pooled = pool_api.run("AveragePool", first, _POOL_OPSET, attrs, out=mean)
            elementwise_api.run(root, pooled, out=rooted)
            elementwise_api.product(outer, dyg, rooted, pooled, out=shares)
            pool_api.gradient("AveragePool", xg, shares, (_POOL_OPSET, attrs), out=first)
            elementwise_api.run(derivative, xg, out=second)
            return elementwise_api.product(inner, first, second)   # a new array
    return _unbatched_gradient(gradient, unbatched)


@_tensors
def lp_pool1d(input: _In, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> _In:
    return cast(_In, _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode))


@_tensors
def lp_pool2d(input: _In, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> _In:
    return cast(_In, _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode))


@_tensors
def lp_pool3d(input: _In, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> _In:
    return cast(_In, _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode))


lp_pool1d.__doc__ = _LP_DOC.format(
    k=1, returns=_RETURNS_DOC, shape="(N, C, L) or (C, L)", example_x="[[[3.0, 4.0, 0.0, 1.0]]]",
    example_kernel="2", example_result="array([[[5., 1.]]], dtype=float32)")
lp_pool2d.__doc__ = _LP_DOC.format(
    k=2, returns=_RETURNS_DOC, shape="(N, C, H, W) or (C, H, W)",
    example_x="[[[[3.0, 4.0, 0.0, 1.0]]]]", example_kernel="(1, 2)",
    example_result="array([[[[5., 1.]]]], dtype=float32)")
lp_pool3d.__doc__ = _LP_DOC.format(
    k=3, returns=_RETURNS_DOC, shape="(N, C, D, H, W) or (C, D, H, W)",
    example_x="[[[[[3.0, 4.0, 0.0, 1.0]]]]]", example_kernel="(1, 1, 2)",
    example_result="array([[[[[5., 1.]]]]], dtype=float32)")


def _max_pool(name: str, k: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool, saving: bool = False) -> Any:
    """max_pool{k}d; where `saving`, (its result, MaxPool's Indices its gradient reads)."""
    return _cached(_prepare_max_pool, input, name, k, kernel_size, stride, padding, dilation,
                   ceil_mode, return_indices, saving)


def _max_pool_args(x: Any, name: str, k: int, kernel_size: Any, stride: Any, padding: Any,
                   dilation: Any, ceil_mode: bool, return_indices: bool
                   ) -> tuple[Any, bool, dict[str, Any]]:
    """PyTorch's checks of a max pooling: (x with a batch axis, whether it had none, MaxPool's
    attributes)."""
    x, unbatched = _batched(x, name, k)
    _check_bools(name, ceil_mode=ceil_mode, return_indices=return_indices)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    strides = _strides(name, stride, kernel)
    pads = _tuple(name, "padding", padding, k)
    dilations = _tuple(name, "dilation", dilation, k)
    _check_pool(name, tuple(x.shape), kernel, strides, pads, ceil_mode, dilations)
    return x, unbatched, {
        "kernel_shape": list(kernel), "auto_pad": "NOTSET", "ceil_mode": int(bool(ceil_mode)),
        "dilations": list(dilations), "pads": list(pads) * 2, "strides": list(strides),
        "storage_order": 0}


def _prepare_max_pool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                      padding: Any, dilation: Any, ceil_mode: bool, return_indices: bool,
                      saving: bool) -> Prepared:
    x, unbatched, attrs = _max_pool_args(x, name, k, kernel_size, stride, padding, dilation,
                                         ceil_mode, return_indices)
    if not return_indices and not saving:
        return _unbatched(lambda xb: pool_api.run("MaxPool", xb, _POOL_OPSET, attrs), unbatched)
    xp = _xp(x)
    plane = math.prod(x.shape[2:])   # ONNX counts whole (n, c) planes; PyTorch does not

    def call(xb: Any) -> Any:
        y, indices = pool_api.run("MaxPool", xb, _POOL_OPSET, attrs, return_indices=True)
        if not return_indices:
            return y, indices
        kept = indices.copy() if saving else indices
        with _on_device(xb):
            if plane == 1:   # every index within its plane is 0; -1 (no element) stays
                xp.minimum(indices, 0, out=indices)
            else:            # the remainder keeps the sign: -1 (no element) stays
                xp.fmod(indices, plane, out=indices)
        return ((y, indices), kept) if saving else (y, indices)
    return _unbatched(call, unbatched)


def _max_pool_gradient(name: str, k: int, input: Any, grad_output: Any, saved: Any,
                       kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                       ceil_mode: bool, return_indices: bool) -> Any:
    """The gradient of max_pool{k}d's input: each output's gradient to the element its index
    names (`saved`: MaxPool's Indices, over the whole batch; found again where None)."""
    return _cached(_prepare_max_pool_gradient, input, name, k, kernel_size, stride, padding,
                   dilation, ceil_mode, return_indices, others=(grad_output, saved))


def _prepare_max_pool_gradient(x: Any, backend: str, name: str, k: int, kernel_size: Any,
                               stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                               return_indices: bool, dy: Any, saved: Any) -> Gradient:
    xb, unbatched, attrs = _max_pool_args(x, name, k, kernel_size, stride, padding, dilation,
                                          ceil_mode, return_indices)
    pl = pool_plan.make("MaxPool", tuple(xb.shape), xb.dtype, _POOL_OPSET, **attrs)
    _check_grad_output(name, dy, x, pl.out_shape[unbatched:])
    return _unbatched_gradient(lambda xg, dyg, indices: pool_api.gradient(
        "MaxPool", xg, dyg, (_POOL_OPSET, attrs), saved=indices), unbatched)


class _MaxPooling(Protocol):
    """max_pool1d/2d/3d as a type checker sees them: an array in, that array type out (with
    int64 indices: a NumPy int64 array for a NumPy input, a cupy.ndarray for a CuPy one); a
    PyTorch tensor in, tensors out."""

    @overload
    def __call__(self, input: NumPyArray[ScalarT], kernel_size: Any, stride: Any = ...,
                 padding: Any = ..., dilation: Any = ..., ceil_mode: bool = ..., *,
                 return_indices: Literal[True]) -> tuple[NumPyArray[ScalarT], Indices]: ...

    @overload
    def __call__(self, input: ArrayT, kernel_size: Any, stride: Any = ..., padding: Any = ...,
                 dilation: Any = ..., ceil_mode: bool = ..., *, return_indices: Literal[True]
                 ) -> tuple[ArrayT, ArrayT]: ...

    @overload
    def __call__(self, input: Tensor, kernel_size: Any, stride: Any = ..., padding: Any = ...,
                 dilation: Any = ..., ceil_mode: bool = ..., *, return_indices: Literal[True]
                 ) -> tuple[Tensor, Tensor]: ...

    @overload
    def __call__(self, input: _In, kernel_size: Any, stride: Any = ..., padding: Any = ...,
                 dilation: Any = ..., ceil_mode: bool = ...,
                 return_indices: Literal[False] = ...) -> _In: ...

    @overload
    def __call__(self, input: _In, kernel_size: Any, stride: Any = ..., padding: Any = ...,
                 dilation: Any = ..., ceil_mode: bool = ..., return_indices: bool = ...
                 ) -> Any: ...


def _max_pooling(fn: Callable[..., Any]) -> _MaxPooling:
    return cast(_MaxPooling, _tensors(fn))


@_max_pooling
def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


@_max_pooling
def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


@_max_pooling
def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


max_pool1d.__doc__ = _MAX_DOC.format(
    k=1, window=_window_doc(1, "-inf"),
    example_x="[[[1.0, 3.0, 2.0, 5.0, 4.0]], [[0, 1, 0, 1, 2]]]", example_kernel="2",
    example_result="""(array([[[3., 5., 4.]],
    <BLANKLINE>
           [[1., 1., 2.]]], dtype=float32), array([[[1, 3, 4]],
    <BLANKLINE>
           [[1, 3, 4]]]))""")
max_pool2d.__doc__ = _MAX_DOC.format(
    k=2, window=_window_doc(2, "-inf"), example_x="[[[1.0, 3.0, 2.0, 5.0, 4.0]]]",
    example_kernel="(1, 2)",
    example_result="(array([[[3., 5., 4.]]], dtype=float32), array([[[1, 3, 4]]]))")
max_pool3d.__doc__ = _MAX_DOC.format(
    k=3, window=_window_doc(3, "-inf"), example_x="[[[[1.0, 3.0, 2.0, 5.0, 4.0]]]]",
    example_kernel="(1, 1, 2)",
    example_result="(array([[[[3., 5., 4.]]]], dtype=float32), array([[[[1, 3, 4]]]]))")
