"""PyTorch-style functions on CuPy and NumPy arrays and PyTorch tensors: `torch.nn.functional`'s
pooling (adaptive pooling included) and interpolation (and the one-hot argmax idiom) with
PyTorch's argument names, order, defaults, errors and results, built on the ONNX operators'
plans and the pool family's adaptive pooling; public as `onnx_cupy.nn.functional`.

Arrays are channels-first, (N, C, *spatial) (or (C, *spatial) where PyTorch takes an unbatched
input). A PyTorch tensor in gives tensors out on its device, zero-copy through DLPack (a CPU
tensor runs the NumPy path, a CUDA tensor the CuPy path; interop/tensors.py); no autograd graph
is recorded, so a tensor that requires grad is a TypeError. Each function names the ONNX
attributes it runs with and PyTorch's quirks it reproduces; docs/pytorch.md maps every call to
what an exporter writes.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    ParamSpec,
    Protocol,
    TypeVar,
    cast,
    overload,
)

import numpy as np

from ..core import arrays, calls, execution, numerics
from ..core.attributes import EXTENT_LIMIT, is_int, is_real
from ..core.execution import ArrayT, Indices, NDArray, NumPyArray, ScalarT
from ..grid import api as grid_api
from ..grid import plan as grid_plan
from ..hardmax.api import hardmax
from ..pool import api as pool_api
from ..pool import plan as pool_plan
from ..resize import api as resize_api
from ..resize import plan as resize_plan
from . import tensors

if TYPE_CHECKING:
    from torch import Tensor
from ..unpool import api as unpool_api

__all__ = ["affine_grid", "avg_pool1d", "avg_pool2d", "avg_pool3d", "grid_sample", "interpolate",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "one_hot_argmax"]

# The input's kind, which the result keeps: a NumPy or CuPy array, or a PyTorch tensor
_In = TypeVar("_In", bound="NDArray | Tensor")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _tensors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A PyTorch-style function that also takes a PyTorch tensor as its `input` and then gives
    tensors (zero-copy, interop/tensors.py)."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not args and "input" not in kwargs:
            return fn(*args, **kwargs)   # fn names what is missing
        given = args[0] if args else kwargs.pop("input")
        x, give = tensors.intake(given, fn.__name__)
        return give(fn(x, *args[1:], **kwargs))
    return cast(Callable[_P, _R], call)


_POOL_OPSET = 22    # the newest AveragePool, MaxPool and MaxUnpool
_RESIZE_OPSET = 19  # the newest Resize
_GRID_OPSET = 22    # the newest GridSample (AffineGrid-20 in force)
_DIMS = {1: "one int", 2: "a tuple of two ints", 3: "a tuple of three ints"}


def _xp(x: Any) -> Any:
    """The array module of `x` (cupy for CuPy arrays, numpy otherwise)."""
    return execution.cupy_module() if execution.is_cupy_array(x) else np


def _array(x: Any, name: str) -> Any:
    return execution.select(arrays.plain(x, name), name)[0]


def _tuple(name: str, what: str, value: Any, k: int, optional: bool = False) -> tuple[int, ...]:
    """An int or a sequence of k ints (PyTorch's _single/_pair/_triple), as a tuple of k."""
    if is_int(value):
        return (int(value),) * k
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(
            map(is_int, value)):
        if len(value) == 1:
            return (int(value[0]),) * k
        if len(value) == k:
            return tuple(int(v) for v in value)
    omitted = "be omitted, " if optional else ""
    raise ValueError(f"{name}: {what} must either {omitted}be a single int, or "
                     f"{_DIMS[k]}, got {value!r}")


def _batched(x: Any, name: str, k: int, channels_may_be_empty: bool = False
             ) -> tuple[Any, bool]:
    """`x` with a batch axis (added where PyTorch takes the unbatched (C, *spatial) form); only
    a batched input's batch axis may be empty (and, where `channels_may_be_empty`, as for
    PyTorch's max_unpool, an unbatched input's channel axis)."""
    first = 1 if channels_may_be_empty or x.ndim == k + 2 else 0
    if x.ndim not in (k + 1, k + 2) or 0 in x.shape[first:]:
        raise ValueError(f"{name}: expected a {k + 1}D (unbatched) or {k + 2}D (batched) input "
                         f"with non-zero sizes except the batch, got shape {tuple(x.shape)}")
    return (x[None], True) if x.ndim == k + 1 else (x, False)


def _check_bools(name: str, optional: tuple[str, ...] = (), **flags: Any) -> None:
    """TypeError for a flag that is not a bool (or None, where `optional`), as PyTorch's argument
    parser raises."""
    for what, value in flags.items():
        if not (isinstance(value, (bool, np.bool_)) or (value is None and what in optional)):
            raise TypeError(f"{name}: {what} must be a bool, got {value!r}")


def _strides(name: str, stride: Any, kernel: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's stride: the kernel size where omitted (None or an empty sequence)."""
    if stride is None or (isinstance(stride, Sequence) and not stride):
        return kernel
    return _tuple(name, "stride", stride, len(kernel), optional=True)


def _check_pool(name: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                stride: tuple[int, ...], padding: tuple[int, ...], ceil_mode: bool,
                dilation: tuple[int, ...] | None = None) -> None:
    """PyTorch's checks, including output lengths >= 1: floor_or_ceil((n + 2p - dk) / s) + 1
    with dk = d * (k - 1) + 1, the last window dropped where ceil_mode starts it in the right
    padding; the pad at most half the (undilated) kernel."""
    dilation = dilation or (1,) * len(kernel)
    if any(k <= 0 for k in kernel):
        raise ValueError(f"{name}: kernel size should be greater than zero, got {list(kernel)}")
    if any(s <= 0 for s in stride):
        raise ValueError(f"{name}: stride should be greater than zero, got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise ValueError(f"{name}: dilation should be greater than zero, got {list(dilation)}")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{name}: pad should be at least 0 and at most half of kernel size, got "
                         f"padding {list(padding)} for kernel_size {list(kernel)}")
    spatial = shape[2:]
    out = [pool_plan.spatial_axis(n, k, s, d, p, p, "NOTSET", ceil_mode)[0]
           for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    if any(o < 1 for o in out):
        raise ValueError(f"{name}: given input size {list(spatial)}, the calculated output size "
                         f"{out} is too small (kernel_size {list(kernel)}, stride {list(stride)}, "
                         f"padding {list(padding)}, dilation {list(dilation)})")


_CALLS = calls.Cache("nn.functional")
Prepared = Callable[[Any], Any]   # the prepared call of a function on inputs of one layout


def _cached(prepare: Callable[..., Callable[..., Any]], input: Any, name: str, *args: Any,
            others: tuple[Any, ...] = ()) -> Any:
    """`name`(input, *args): the call `prepare(x, backend, name, *args, *others)` made
    (PyTorch's checks, the ONNX attributes, the family's prepared call) on the first occurrence
    of its key (onnx_cupy.core.calls: the input's layout, path and device, the arguments, the
    array type and layout of each further array in `others`), then kept; it takes
    (x, *others)."""
    x, backend = execution.select(arrays.plain(input, name, "input"), name)
    key = calls.key(x, backend, name, *args, *(
        (type(a).__name__, a.shape + a.strides, a.dtype.str) for a in others))
    call = _CALLS.get(key) or _CALLS.put(key, prepare(x, backend, name, *args, *others))
    return call(x, *others)


def _unbatched(call: Callable[[Any], Any], unbatched: bool) -> Prepared:
    """`call` on (C, *spatial) inputs through a batch axis of 1, where `unbatched`."""
    if not unbatched:
        return call
    return lambda x: _first(call(x[None]))


def _first(y: Any) -> Any:
    return tuple(a[0] for a in y) if isinstance(y, tuple) else y[0]


def _avg_pool(name: str, k: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> Any:
    return _cached(_prepare_avg_pool, input, name, k, kernel_size, stride, padding, ceil_mode,
                   count_include_pad, divisor_override)


def _prepare_avg_pool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                      padding: Any, ceil_mode: bool, count_include_pad: bool,
                      divisor_override: int | None) -> Prepared:
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
    attrs = {"kernel_shape": list(kernel), "auto_pad": "NOTSET", "ceil_mode": int(bool(ceil_mode)),
             "count_include_pad": int(bool(count_include_pad) and divisor_override is None),
             "dilations": None, "pads": list(pads) * 2, "strides": list(strides)}
    pool = pool_api.prepared("AveragePool", x, backend, _POOL_OPSET, attrs)
    if divisor_override is None:
        return _unbatched(lambda xb: pool(xb, None), unbatched)
    # sum / divisor = mean over the real elements * (their count / divisor), in float64 and
    # rounded once to x's dtype (as PyTorch divides its sum): one table, uploaded once; the
    # float64 input and mean in the workspace, so that a call allocates only its output
    wide = np.dtype(np.float64)
    pl = pool_plan.prepare("AveragePool", tuple(x.shape), wide, _POOL_OPSET, **attrs)
    counts = pool_plan.divisor(pl, wide)
    with arrays.on_device(x, backend):
        (factor,) = calls.upload(backend, counts / divisor_override)

    def call(xb: Any) -> Any:
        with arrays.on_device(xb, backend):
            xw, yw = calls.scratch(backend, (tuple(xb.shape), wide), (pl.out_shape, wide))
            xw[...] = xb
            pool_api.prepared("AveragePool", xw, backend, _POOL_OPSET, attrs)(xw, yw)
            yw *= factor
            return yw.astype(xb.dtype)   # a new array, rounded once
    return _unbatched(call, unbatched)


_WINDOW_DOC = """    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}.
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    padding : int or sequence of int, default 0
        Implicit {pad} at both ends, at most half the kernel size."""


_RETURNS_DOC = """    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        Input's dtype, on its device.

    Raises
    ------"""


def _window_doc(k: int, pad: str) -> str:
    """The window parameters of a PyTorch-style pooling docstring for k spatial axes."""
    shape = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)",
             3: "(N, C, D, H, W) or (C, D, H, W)"}[k]
    return _WINDOW_DOC.format(shape=shape, pad=pad)


_AVG_DOC = """PyTorch's `torch.nn.functional.avg_pool{k}d` on a NumPy or CuPy array.

    Runs ONNX AveragePool with kernel_shape = kernel_size, strides = stride (default
    kernel_size), pads = padding at both ends, ceil_mode and count_include_pad as given (what
    PyTorch's ONNX exporter writes); the two agree everywhere, including ceil_mode's last window
    (dropped where it would start in the right padding) and count_include_pad's divisor (pads
    count, a ceil_mode overhang past them does not). divisor_override (not expressible in ONNX)
    divides each window's sum by that number instead.

    Parameters
    ----------
{window}
    ceil_mode : bool, default False
    count_include_pad : bool, default True{divisor}

{returns}
    ValueError
        Where PyTorch raises: kernel_size, stride or padding of the wrong length; kernel or
        stride <= 0; padding above half the kernel; an output length < 1; a zero
        divisor_override; a wrong input rank.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.arange(1.0, 6.0, dtype=np.float32).reshape({example_shape})
    >>> F.avg_pool{k}d(x, {example_kernel}, ceil_mode=True)
    {example_result}
    """
_DIVISOR_DOC = """
    divisor_override : int, optional
        Divide each window's sum by this instead of the window's size."""


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


avg_pool1d.__doc__ = _AVG_DOC.format(
    k=1, returns=_RETURNS_DOC, window=_window_doc(1, "zeros"), divisor="", example_shape="1, 1, 5", example_kernel="2",
    example_result="array([[[1.5, 3.5, 5. ]]], dtype=float32)")
avg_pool2d.__doc__ = _AVG_DOC.format(
    k=2, returns=_RETURNS_DOC, window=_window_doc(2, "zeros"), divisor=_DIVISOR_DOC, example_shape="1, 1, 5",
    example_kernel="(1, 2)", example_result="array([[[1.5, 3.5, 5. ]]], dtype=float32)")
avg_pool3d.__doc__ = _AVG_DOC.format(
    k=3, returns=_RETURNS_DOC, window=_window_doc(3, "zeros"), divisor=_DIVISOR_DOC,
    example_shape="1, 1, 1, 5", example_kernel="(1, 1, 2)",
    example_result="array([[[[1.5, 3.5, 5. ]]]], dtype=float32)")


def _lp_pool(name: str, k: int, input: Any, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Any:
    return _cached(_prepare_lp_pool, input, name, k, norm_type, kernel_size, stride, ceil_mode)


def _prepare_lp_pool(x: Any, backend: str, name: str, k: int, norm_type: float,
                     kernel_size: Any, stride: Any, ceil_mode: bool) -> Prepared:
    if not is_real(norm_type):
        raise TypeError(f"{name}: norm_type must be a number, got {norm_type!r}")
    if norm_type == 0:   # PyTorch raises Python's ZeroDivisionError from 1.0 / norm_type
        raise ValueError(f"{name}: norm_type must not be 0 (the result is raised to the power "
                         f"1 / norm_type), got {norm_type!r}")
    _check_bools(name, ceil_mode=ceil_mode)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    # every check before x ** p is computed (avg_pool repeats them on the power)
    _check_pool(name, tuple(_batched(x, name, k)[0].shape), kernel,
                _strides(name, stride, kernel), (0,) * k, ceil_mode)
    p = float(norm_type)
    xp = _xp(x)
    scale = x.dtype.type(math.prod(kernel))
    # x ** p goes to the workspace (a call allocates no more than its output)
    layout = (tuple(x.shape), x.dtype)
    with arrays.on_device(x, backend):
        (powered,) = calls.scratch(backend, layout)
    mean = _prepare_avg_pool(powered, backend, name, k, kernel, stride, 0, ceil_mode, True, None)

    def call(x: Any) -> Any:
        with arrays.on_device(x, backend), np.errstate(invalid="ignore", over="ignore"):
            (powered,) = calls.scratch(backend, layout)
            xp.power(x, p, out=powered)   # x ** p: NaN and inf as PyTorch's
            total = mean(powered)
            total *= scale
            return xp.power(total, 1.0 / p, out=total)
    return call


_LP_DOC = """PyTorch's `torch.nn.functional.lp_pool{k}d` on a NumPy or CuPy array.

    PyTorch computes `avg_pool{k}d(input ** norm_type, kernel_size, stride, 0, ceil_mode) *
    prod(kernel_size)` raised to `1 / norm_type`, and so does this (ONNX AveragePool with
    count_include_pad=1), quirks included: `input ** norm_type` takes no absolute value (a
    negative input with an odd or fractional norm_type can give NaN, where ONNX LpPool sums
    |x|^p), and with ceil_mode a window overhanging the input is averaged over its real elements
    and scaled up to the full kernel size (ONNX LpPool sums the real elements only). For inputs
    >= 0 without an overhang the result equals ONNX LpPool with p = norm_type.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}.
    norm_type : int or float
        The power p.
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    ceil_mode : bool, default False

{returns}
    ValueError
        As avg_pool{k}d (kernel_size, stride, output length, input rank).
    TypeError
        norm_type not a number.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.lp_pool{k}d(x, 2, {example_kernel})
    {example_result}
    """


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
    k=1, returns=_RETURNS_DOC, shape="(N, C, L) or (C, L)", example_x="[[[3.0, 4.0, 0.0, 1.0]]]", example_kernel="2",
    example_result="array([[[5., 1.]]], dtype=float32)")
lp_pool2d.__doc__ = _LP_DOC.format(
    k=2, returns=_RETURNS_DOC, shape="(N, C, H, W) or (C, H, W)", example_x="[[[[3.0, 4.0, 0.0, 1.0]]]]",
    example_kernel="(1, 2)", example_result="array([[[[5., 1.]]]], dtype=float32)")
lp_pool3d.__doc__ = _LP_DOC.format(
    k=3, returns=_RETURNS_DOC, shape="(N, C, D, H, W) or (C, D, H, W)", example_x="[[[[[3.0, 4.0, 0.0, 1.0]]]]]",
    example_kernel="(1, 1, 2)", example_result="array([[[[[5., 1.]]]]], dtype=float32)")


@_tensors
def one_hot_argmax(input: _In, dim: int = -1) -> _In:
    """PyTorch's one-hot argmax idiom on a NumPy or CuPy array: the result of
    `torch.zeros_like(x).scatter_(dim, x.argmax(dim=dim, keepdim=True), 1)`.

    ONNX Hardmax-13 with axis = dim: 1 at the first maximum along `dim` (a NaN counts as the
    maximum, the first NaN wins, as torch.argmax), 0 elsewhere.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        Any rank >= 1, a float dtype.
    dim : int, default -1
        The axis, negative counting from the end.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        Input's shape and dtype, on its device.

    Raises
    ------
    ValueError
        `dim` out of range for the input's rank.
    TypeError
        `dim` not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> F.one_hot_argmax(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], np.float32), dim=1)
    array([[0., 1., 0.],
           [1., 0., 0.]], dtype=float32)
    """
    x = _array(input, "one_hot_argmax")
    if not is_int(dim):
        raise TypeError(f"one_hot_argmax: dim must be an int, got {dim!r}")
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        raise ValueError(f"one_hot_argmax: dim = {dim!r} is out of range for an input of rank "
                         f"{x.ndim} (expected an int in [{-max(x.ndim, 1)}, {max(x.ndim, 1) - 1}])")
    return cast(_In, hardmax(x, axis=int(dim), opset=13))


# ---------------------------------------------------------------- interpolate

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_RANK_OF_MODE = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_ONNX_MODE = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear",
              "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}


def _interpolate_target(x: Any, size: Any, scale_factor: Any, recompute_scale_factor: Any
                        ) -> tuple[list[int], list[float] | None]:
    """PyTorch's output lengths and the scale factors its kernels see (None: from the sizes)."""
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size.")
        sizes = _per_axis(size, spatial, "output", "output size of", "size", is_int, "an int")
        return [int(v) for v in sizes], None
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    factors = _per_axis(scale_factor, spatial, "scale_factor", "scale_factor of shape",
                        "scale_factor", is_real, "a number")
    factors = [float(v) for v in factors]
    if not all(math.isfinite(v) for v in factors):
        raise ValueError(f"interpolate: scale_factor must be finite, got {factors}")
    sizes = [math.floor(n * f) for n, f in zip(spatial, factors)]
    return sizes, None if recompute_scale_factor else factors


def _per_axis(value: Any, spatial: list[int], subject: str, named: str, name: str, valid: Any,
              kind: str) -> list[Any]:
    """interpolate's `size` or `scale_factor`: one value or one per spatial axis, each `valid`,
    with PyTorch's errors (`subject` and `named` name it in the length mismatch, `name` and
    `kind` in the type error)."""
    values = list(value) if isinstance(value, Sequence) else [value] * len(spatial)
    if len(values) != len(spatial):
        raise ValueError(f"interpolate: input and {subject} must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {spatial} and "
                         f"{named} {values}")
    if not all(map(valid, values)):
        raise TypeError(f"interpolate: {name} must be {kind} or a sequence of {kind}s, "
                        f"got {value!r}")
    return values


@_tensors
def interpolate(input: _In, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> _In:
    """PyTorch's `torch.nn.functional.interpolate` on a NumPy or CuPy array.

    Runs ONNX Resize-19 on the spatial axes (N and C kept):

    ==============================  =====================================================
    PyTorch                         Resize attributes
    ==============================  =====================================================
    nearest                         asymmetric, nearest_mode floor
    nearest-exact                   half_pixel, nearest_mode round_prefer_ceil
    linear/bilinear/trilinear       linear, half_pixel (align_corners: align_corners)
    bicubic                         cubic, cubic_coeff_a -0.75, half_pixel or align_corners
    antialias=True                  antialias 1, exclude_outside 1 (bicubic: a = -0.5)
    area                            none: adaptive average pooling (adaptive_avg_pool*d)
    ==============================  =====================================================

    with PyTorch's lengths and coordinates: the output length is floor(n * scale_factor) in
    float64; with scale_factor given (recompute_scale_factor not set) the source coordinate
    is computed from 1 / scale_factor (also for an output length of 1, where ONNX's
    pytorch_half_pixel takes x = 0), otherwise from n / size; nearest and nearest-exact compute
    it in float32, multiplying by float32(1 / scale_factor) (or float32(n) / float32(size)) as
    PyTorch does, and so do the other modes on float16, bfloat16 and float32 inputs, with
    PyTorch's float32 weights and fused multiply-adds (float64 inputs: float64). An axis whose length stays is copied in the linear and antialiased modes and
    in 2-D nearest, whatever the scale factor (1-D and 3-D nearest, nearest-exact and bicubic
    resample it), and 2-D nearest takes element y // 2 where the length doubles (e.g. at
    scale_factor 2.05), as PyTorch's CPU kernels do. The antialiased modes sample
    x = (y + 0.5) * step - 0.5 and stretch the filter by step where step > 1: step is
    1 / scale_factor or n / size, and with align_corners (n - 1) / (size - 1) (0 for one
    output); where the output width is 1 and the height changes, every output row takes row 0's
    samples, as PyTorch's kernels do. The model an exporter writes (scales =
    float32(scale_factor)) can differ from these results; see docs/pytorch.md.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, C, *spatial) with 1-3 spatial axes (linear: 1, bilinear/bicubic: 2, trilinear: 3).
    size : int or sequence of int, optional
        Output spatial lengths.
    scale_factor : float or sequence of float, optional
        Multipliers of the spatial lengths; give size or scale_factor.
    mode : str, default "nearest"
        nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area (adaptive average
        pooling to the output lengths, as adaptive_avg_pool1d/2d/3d).
    align_corners : bool, optional
        For linear, bilinear, bicubic and trilinear only (default False).
    recompute_scale_factor : bool, optional
        Compute the coordinates from the output lengths instead of scale_factor.
    antialias : bool, default False
        bilinear and bicubic on 4-D inputs: the filter stretched by 1 / scale when shrinking.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        Input's dtype, on its device.

    Raises
    ------
    ValueError
        Where PyTorch raises ValueError: both or neither of size and scale_factor; a length
        mismatch; align_corners with a nearest mode; recompute_scale_factor with size;
        antialias outside bilinear/bicubic on 4-D input; output or input lengths < 1.
    NotImplementedError
        Where PyTorch raises it (a mode that does not fit the input's rank).

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 1, 8)
    >>> F.interpolate(x, scale_factor=0.3, mode="nearest-exact")
    array([[[1., 5.]]], dtype=float32)
    >>> F.interpolate(np.array([[[0.0, 1.0]]]), size=4, mode="linear")
    array([[[0.  , 0.25, 0.75, 1.  ]]])
    """
    return cast(_In, _cached(_prepare_interpolate, input, resize_plan.OP, size, scale_factor,
                             mode, align_corners, recompute_scale_factor, antialias))


def _prepare_interpolate(x: Any, backend: str, name: str, size: Any, scale_factor: Any,
                         mode: str, align_corners: bool | None,
                         recompute_scale_factor: bool | None, antialias: bool) -> Prepared:
    if not isinstance(mode, str):
        raise TypeError(f"interpolate: mode must be a string, got {mode!r}")
    _check_bools("interpolate", ("align_corners", "recompute_scale_factor"),
                 align_corners=align_corners, recompute_scale_factor=recompute_scale_factor,
                 antialias=antialias)
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (expected one of "
                                  f"{', '.join(_MODES)})")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("interpolate: align_corners option can only be set with the "
                         "interpolating modes: linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError("interpolate: anti-alias option is restricted to bilinear and bicubic "
                         "modes and requires a 4-D tensor as input")
    if x.ndim not in (3, 4, 5):
        raise NotImplementedError(f"interpolate: only 3D, 4D and 5D inputs are supported (got "
                                  f"{x.ndim}D) for the modes: {' | '.join(_MODES)} (got {mode})")
    if mode in _RANK_OF_MODE and x.ndim != _RANK_OF_MODE[mode]:
        raise NotImplementedError(f"interpolate: got {x.ndim}D input, but {mode} mode needs "
                                  f"{_RANK_OF_MODE[mode]}D input")
    sizes, factors = _interpolate_target(x, size, scale_factor, recompute_scale_factor)
    spatial = list(x.shape[2:])
    if mode == "area":   # adaptive average pooling to the output lengths (which may be 0)
        if any(n < 1 for n in spatial):
            raise ValueError(f"interpolate: expected input to have non-zero size for non-batch "
                             f"dimensions, got input {spatial}")
        return lambda xb: pool_api.adaptive_pool("AdaptiveAveragePool", xb, sizes)
    if any(n < 1 for n in spatial) or any(m < 1 for m in sizes):
        raise ValueError(f"interpolate: input and output sizes should be greater than 0, but got "
                         f"input {spatial} and output {sizes}")
    attrs: dict[str, Any] = {"mode": _ONNX_MODE[mode],
                             "coordinate_transformation_mode": "half_pixel"}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif mode == "nearest-exact":
        attrs.update(nearest_mode="round_prefer_ceil")
    elif align_corners:
        attrs.update(coordinate_transformation_mode="align_corners")
    if mode == "bicubic":
        attrs.update(cubic_coeff_a=-0.5 if antialias else -0.75)
    if antialias:
        attrs.update(antialias=1, exclude_outside=1)
    # PyTorch copies an axis whose length stays in the linear and antialiased modes and in 2-D
    # nearest, whose kernel also takes y // 2 where the length doubles (1-D and 3-D resample)
    copies = mode in ("linear", "bilinear", "trilinear") or antialias or (
        mode == "nearest" and len(spatial) == 2)
    halves = mode == "nearest" and len(spatial) == 2
    source: _Coordinates | None = None
    if mode.startswith("nearest"):  # float32(1 / scale_factor) or float32(n) / float32(m)
        source = _Coordinates(mode == "nearest-exact", tuple(
            1.0 if copies and m == n else 0.5 if halves and m == 2 * n else
            float(np.float32(1.0 / f)) if factors else float(np.float32(n) / np.float32(m))
            for n, m, f in zip(spatial, sizes, factors or sizes)))
    elif align_corners:  # antialias: half-pixel centres at the align_corners step
        source = _Coordinates(antialias, tuple((n - 1) / (m - 1) if m > 1 else 0.0
                                               for n, m in zip(spatial, sizes)),
                              single_steps=tuple(_F32(n - 1) / _F32(m - 1) if m > 1 else 0.0
                                                 for n, m in zip(spatial, sizes)))
    else:   # float32: PyTorch's float steps, float32(1 / scale_factor) or float32(n) / m
        source = _Coordinates(True, tuple(1.0 if copies and m == n else 1.0 / f if factors
                                          else n / m
                                          for n, m, f in zip(spatial, sizes, factors or sizes)),
                              single_steps=tuple(
                                  1.0 if copies and m == n else _F32(1.0 / f) if factors
                                  else _F32(n) / _F32(m)
                                  for n, m, f in zip(spatial, sizes, factors or sizes)))
    if source is not None and antialias and sizes[-1] == 1 and sizes[0] != spatial[0]:
        source = dataclasses.replace(source, first_row=True)
    resize = resize_api.prepared(x, backend, None, None, [*x.shape[:2], *sizes], _RESIZE_OPSET,
                                 {**resize_plan.DEFAULTS, **attrs}, source)
    return lambda x: resize(x, None)


_FLOAT32_EXACT = 2**24   # longest axis whose every index float32 holds (nearest in float32)
_F32 = np.float32
# The multiply-adds PyTorch's x86-64 CPU kernels (compiled for AVX2 and AVX-512, where the
# compiler contracts a * b + c into one fused multiply-add) round once, in the Keys polynomials
# of resize_plan.keys32: bicubic's weights, and the antialiased bicubic filter
_CUBIC_FUSED = ("inner", "first", "second")
_FILTER_FUSED = ("inner", "outer", "first", "second", "last")


@dataclass(frozen=True)
class _Coordinates:
    """PyTorch's source coordinates, as a Resize coordinate source: along spatial axis d, output
    coordinate y samples x = (y + 0.5) * step_d - 0.5 (`half_pixel`) or x = y * step_d, with
    step_d the input distance between output samples (1 / scale_factor, or n / m; antialias with
    align_corners: (n - 1) / (m - 1), 0 for m = 1), computed in float32 for the nearest modes
    (as PyTorch does; float64 past 2^24) and float64 otherwise (linear and cubic on 16- and
    32-bit floats take PyTorch's float32 tables instead: `single`); antialias filters stretch by
    step_d (not below 1), and `first_row` gives every output row of axis 2 output row 0's
    coordinate (PyTorch's antialiased kernels where the output width is 1). Rounding ties are
    exact (nearest-exact floors (y + 0.5) * step_d). An axis of step 1 that keeps its length is
    copied, and so are the batch and channel axes."""

    half_pixel: bool
    steps: tuple[float, ...]   # per spatial axis
    first_row: bool = False    # every output row samples output row 0's coordinate
    single_steps: tuple[float, ...] = ()   # PyTorch's float32 steps (linear and cubic modes)

    def coordinates(self, a: resize_plan.Axis, nearest: bool
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        step = self.steps[a.axis - 2] if a.axis >= 2 else 1.0
        if step == 1 and a.m == a.n:
            return None
        single = nearest and max(a.n, a.m) <= _FLOAT32_EXACT
        f: Any = np.float32 if single else np.float64
        y = np.arange(a.m, dtype=f)
        x = (y + f(0.5)) * f(step) - f(0.5) if self.half_pixel else y * f(step)
        if self.first_row and a.axis == 2:
            x = np.full_like(x, x[:1])
        return x.astype(np.float64), np.zeros(a.m, dtype=bool)

    def filter_scale(self, a: resize_plan.Axis) -> float:
        step = self.steps[a.axis - 2]
        return 1.0 / step if step else math.inf

    def tie(self, a: resize_plan.Axis) -> float:
        return 0.0   # PyTorch floors (y + 0.5) * step: an exact test

    def single(self, a: resize_plan.Axis, at: resize_plan.Attributes, dtype: np.dtype
               ) -> resize_plan.Table | None:
        """PyTorch's float32 tables (its float kernels' arithmetic; on 16-bit floats bicubic's
        weights are then rounded to the dtype, as PyTorch stores them), with s = the float32
        step: x = fma(s, y + 0.5, -0.5) (`half_pixel`; linear: not below 0) or s * y,
        i = min(floor(x), n - 1), t = x - i clamped into [0, 1], then
          linear     taps i and min(i + 1, n - 1), weights (1 - t, t)
          cubic      taps i - 1 ... i + 2 clamped into [0, n), the Keys weights of
                     float32(t + 1), t, 1 - t, float32((1 - t) + 1) (_CUBIC_FUSED)
          antialias  PyTorch's (Pillow's) windows: centre c = float32(s * (y + 0.5)), support
                     1 or 2 (times s where s >= 1), taps from int(c - support + 0.5) (at least
                     0) to int(c + support + 0.5) (at most n), filter of
                     float32((k - c) + 0.5) / max(1, s)) (_FILTER_FUSED), each weight divided
                     by their float32 sum."""
        step = self.steps[a.axis - 2] if a.axis >= 2 else 1.0
        if step == 1 and a.m == a.n:
            return None
        s = _F32(self.single_steps[a.axis - 2])
        y = np.arange(a.m, dtype=_F32)
        if at.antialias:
            index, weight = _antialias32(at, s, a.n, a.m)
        else:
            x = numerics.fma32(s, y + _F32(0.5), _F32(-0.5)) if self.half_pixel else s * y
            if at.mode == "linear":
                x = np.maximum(x, _F32(0))
            low = np.minimum(np.floor(x).astype(np.int64), a.n - 1)
            t = np.clip(x - low.astype(_F32), _F32(0), _F32(1)).astype(_F32)
            if at.mode == "linear":
                index = np.stack([low, low + (low < a.n - 1)], axis=1)
                weight = np.stack([_F32(1) - t, t], axis=1)
            else:
                far = (_F32(1) - t).astype(np.float64) + 1.0
                index = np.clip(low[:, None] + np.arange(-1, 3), 0, a.n - 1)
                weight = resize_plan.keys32(at.cubic_coeff_a, (
                    t.astype(np.float64) + 1.0, t, _F32(1) - t, far), _CUBIC_FUSED)
        if self.first_row and a.axis == 2:
            index, weight = (np.repeat(v[:1], a.m, axis=0) for v in (index, weight))
        if dtype != np.float32 and at.mode == "cubic" and not at.antialias:
            weight = weight.astype(dtype)
        return index, weight.astype(np.float64), np.zeros(a.m, dtype=bool)


def _antialias32(at: resize_plan.Attributes, s: np.float32, n: int, m: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's antialias windows in float32 (see `_Coordinates.single`)."""
    half = 1.0 if at.mode == "linear" else 2.0
    support = _F32(half * float(s)) if s >= 1 else _F32(half)
    shrink = _F32(1.0 / float(s)) if s >= 1 else _F32(1)
    centre = (float(s) * (np.arange(m) + 0.5)).astype(_F32)
    low = np.maximum(np.trunc((centre - support).astype(np.float64) + 0.5), 0).astype(np.int64)
    count = np.minimum(np.trunc((centre + support).astype(np.float64) + 0.5), n) - low
    width = math.ceil(support) * 2 + 1
    count = np.clip(count, 0, width).astype(np.int64)
    taps = max(int(count.max(initial=1)), 1)
    k = low[:, None] + np.arange(taps)
    inside = np.arange(taps) < count[:, None]
    u = (((k.astype(_F32) - centre[:, None]).astype(np.float64) + 0.5)
         * float(shrink)).astype(_F32)
    u = np.abs(u)
    if at.mode == "linear":
        w = np.where(u < 1, (1.0 - u.astype(np.float64)).astype(_F32), _F32(0))
    else:
        keys = resize_plan.keys32(at.cubic_coeff_a, (u, u, u, u), _FILTER_FUSED)
        w = np.where(u < 1, keys[:, 1], np.where(u < 2, keys[:, 0], _F32(0)))
    w = np.where(inside, w, _F32(0)).astype(_F32)
    total = resize_plan.sum32(w)
    w = np.where((total != 0)[:, None], w / np.where(total == 0, _F32(1), total)[:, None], w)
    return np.clip(k, 0, n - 1), np.where(inside, w, _F32(0)).astype(_F32)


def _max_pool(name: str, k: int, input: Any, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    return _cached(_prepare_max_pool, input, name, k, kernel_size, stride, padding, dilation,
                   ceil_mode, return_indices)


def _prepare_max_pool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                      padding: Any, dilation: Any, ceil_mode: bool, return_indices: bool
                      ) -> Prepared:
    x, unbatched = _batched(x, name, k)
    _check_bools(name, ceil_mode=ceil_mode, return_indices=return_indices)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    strides = _strides(name, stride, kernel)
    pads = _tuple(name, "padding", padding, k)
    dilations = _tuple(name, "dilation", dilation, k)
    _check_pool(name, tuple(x.shape), kernel, strides, pads, ceil_mode, dilations)
    attrs = {"kernel_shape": list(kernel), "auto_pad": "NOTSET", "ceil_mode": int(bool(ceil_mode)),
             "dilations": list(dilations), "pads": list(pads) * 2, "strides": list(strides),
             "storage_order": 0}
    pool = pool_api.prepared("MaxPool", x, backend, _POOL_OPSET, attrs, bool(return_indices))
    if not return_indices:
        return _unbatched(lambda xb: pool(xb, None), unbatched)
    xp = _xp(x)
    plane = math.prod(x.shape[2:])   # ONNX counts whole (n, c) planes; PyTorch does not

    def call(xb: Any) -> Any:
        y, indices = pool(xb, None)
        with arrays.on_device(xb, backend):
            if plane == 1:   # every index within its plane is 0; -1 (no element) stays
                xp.minimum(indices, 0, out=indices)
            else:            # the remainder keeps the sign: -1 (no element) stays
                xp.fmod(indices, plane, out=indices)
        return y, indices
    return _unbatched(call, unbatched)


_MAX_DOC = """PyTorch's `torch.nn.functional.max_pool{k}d` on a NumPy or CuPy array.

    Runs ONNX MaxPool with kernel_shape = kernel_size, strides = stride (default kernel_size),
    pads = padding at both ends, dilations = dilation and ceil_mode as given (what PyTorch's
    exporter writes); the two agree on the windows (ceil_mode's last window dropped where it
    would start in the right padding), on ties (the first wins) and on NaN (it propagates, the
    last NaN's index). With return_indices, the indices are PyTorch's: flattened over the spatial
    dims of each (n, c) plane (ONNX's Indices also count the planes before it).

    Parameters
    ----------
{window}
    dilation : int or sequence of int, default 1
    ceil_mode : bool, default False
    return_indices : bool, default False

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor, or (output, indices)
        Input's dtype, on its device; indices int64.

    Raises
    ------
    ValueError
        Where PyTorch raises: kernel_size, stride, padding or dilation of the wrong length;
        kernel, stride or dilation <= 0; padding above half the kernel; an output length < 1; a
        wrong input rank.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.max_pool{k}d(x, {example_kernel}, ceil_mode=True, return_indices=True)
    {example_result}
    """


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
    k=1, window=_window_doc(1, "-inf"), example_x="[[[1.0, 3.0, 2.0, 5.0, 4.0]], [[0, 1, 0, 1, 2]]]",
    example_kernel="2",
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


# ---------------------------------------------------------------- adaptive pooling

__all__ += ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
            "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"]


def _output_size(name: str, value: Any, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's adaptive output_size: an int, or a sequence of one int per spatial axis (from
    2-D on, None keeps that axis' length), each >= 0."""
    k = len(spatial)
    if is_int(value):
        values: list[Any] = [int(value)] * k
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        values = list(value)
        if k == 1 and len(values) != 1:
            raise ValueError(f"{name}: output_size should contain one int (got {len(values)})")
        if len(values) != k:
            raise ValueError(f"{name}: output_size must be {k}, got {values}")
    else:
        raise TypeError(f"{name}: output_size must be an int or a tuple of ints, got {value!r}")
    if not all(is_int(v) or (v is None and k > 1) or isinstance(v, (bool, np.bool_))
               for v in values):
        raise TypeError(f"{name}: output_size must be a tuple of ints"
                        f"{' (or None)' if k > 1 else ''}, got {value!r}")
    sizes = tuple(n if v is None else int(v) for v, n in zip(values, spatial))
    if any(m < 0 for m in sizes):
        raise ValueError(f"{name}: elements of output_size must be greater than or equal to 0 "
                         f"but received {list(sizes)}")
    return sizes


def _adaptive(name: str, op: str, k: int, input: Any, output_size: Any,
              return_indices: bool = False) -> Any:
    return _cached(_prepare_adaptive, input, name, op, k, output_size, return_indices)


def _prepare_adaptive(x: Any, backend: str, name: str, op: str, k: int, output_size: Any,
                      return_indices: bool) -> Prepared:
    if x.ndim not in (k + 1, k + 2):
        raise ValueError(f"{name}: expected a {k + 1}D (unbatched) or {k + 2}D (batched) "
                         f"input, got shape {tuple(x.shape)}")
    if any(d == 0 for d in x.shape[-k:]):
        raise ValueError(f"{name}: expected input to have non-zero size for non-batch "
                         f"dimensions, got shape {tuple(x.shape)}")
    _check_bools(name, return_indices=return_indices)
    unbatched = x.ndim == k + 1
    sizes = _output_size(name, output_size, tuple(x.shape[-k:]))
    return _unbatched(lambda xb: pool_api.adaptive_pool(op, xb, sizes, bool(return_indices)),
                      unbatched)


_ADAPTIVE_DOC = """PyTorch's `torch.nn.functional.adaptive_{kind}_pool{k}d` on a NumPy or CuPy
    array.

    Output o is the {what} over its window: along a spatial axis of input length n and output
    length m, [floor(o * n / m), ceil((o + 1) * n / m)).{rule}

    ONNX has no adaptive pooling: an exported model expresses it where the lengths divide
    (docs/pytorch.md); this runs the pool family's own kernel (or its NumPy path).

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}, float16, bfloat16, float32 or float64; spatial lengths >= 1.
    output_size : int or sequence of int
        The output's spatial lengths (>= 0; {none}).{indices}

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        Where PyTorch raises: a wrong input rank, an empty spatial axis, an output_size of the
        wrong length or below 0.
    TypeError
        An output_size that is no int or sequence of ints; an unsupported dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.adaptive_{kind}_pool{k}d(x, {example_size}{example_more})
    {example_result}
    """


def _adaptive_doc(kind: str, k: int, **parts: str) -> str:
    shape = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)",
             3: "(N, C, D, H, W) or (C, D, H, W)"}[k]
    maximum = kind == "max"
    return _ADAPTIVE_DOC.format(
        kind=kind, k=k, shape=shape,
        what="maximum" if maximum else "mean",
        rule=("\n    The first of equal values wins; a NaN propagates (the last NaN, with its index)."
              if maximum else ""),
        none="None keeps an axis' length" if k > 1 else "one int",
        indices="""
    return_indices : bool, default False
        Also return the maximum's index within each (n, c) plane (row-major over the spatial
        axes, PyTorch's convention), int64.""" if maximum else "",
        returns=("numpy.ndarray, cupy.ndarray or torch.Tensor"
                 + (", or (output, indices)" if maximum else "")
                 + "\n        Input's dtype, on its device"
                 + ("; indices int64." if maximum else ".")), **parts)


@_tensors
def adaptive_avg_pool1d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool1d", "AdaptiveAveragePool", 1, input,
                               output_size))


@_tensors
def adaptive_avg_pool2d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool2d", "AdaptiveAveragePool", 2, input,
                               output_size))


@_tensors
def adaptive_avg_pool3d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool3d", "AdaptiveAveragePool", 3, input,
                               output_size))


class _AdaptiveMaxPooling(Protocol):
    """adaptive_max_pool1d/2d/3d as a type checker sees them: an array in, that array type out
    (with int64 indices, of the array type too); a PyTorch tensor in, tensors out."""

    @overload
    def __call__(self, input: NumPyArray[ScalarT], output_size: Any,
                 return_indices: Literal[True]) -> tuple[NumPyArray[ScalarT], Indices]: ...

    @overload
    def __call__(self, input: ArrayT, output_size: Any, return_indices: Literal[True]
                 ) -> tuple[ArrayT, ArrayT]: ...

    @overload
    def __call__(self, input: Tensor, output_size: Any, return_indices: Literal[True]
                 ) -> tuple[Tensor, Tensor]: ...

    @overload
    def __call__(self, input: _In, output_size: Any, return_indices: Literal[False] = ...
                 ) -> _In: ...

    @overload
    def __call__(self, input: _In, output_size: Any, return_indices: bool = ...) -> Any: ...


def _adaptive_max_pooling(fn: Callable[..., Any]) -> _AdaptiveMaxPooling:
    return cast(_AdaptiveMaxPooling, _tensors(fn))


@_adaptive_max_pooling
def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool1d", "AdaptiveMaxPool", 1, input, output_size,
                     return_indices)


@_adaptive_max_pooling
def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool2d", "AdaptiveMaxPool", 2, input, output_size,
                     return_indices)


@_adaptive_max_pooling
def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool3d", "AdaptiveMaxPool", 3, input, output_size,
                     return_indices)


adaptive_avg_pool1d.__doc__ = _adaptive_doc(
    "avg", 1, example_x="[[[1.0, 2.0, 4.0, 8.0, 16.0]]]", example_size="2", example_more="",
    example_result="array([[[2.3333333, 9.333333 ]]], dtype=float32)")
adaptive_avg_pool2d.__doc__ = _adaptive_doc(
    "avg", 2, example_x="[[[[1.0, 2.0, 4.0, 8.0, 16.0]]]]", example_size="(None, 2)",
    example_more="", example_result="array([[[[2.3333333, 9.333333 ]]]], dtype=float32)")
adaptive_avg_pool3d.__doc__ = _adaptive_doc(
    "avg", 3, example_x="[[[[[1.0, 2.0, 4.0, 8.0, 16.0]]]]]", example_size="(1, 1, 2)",
    example_more="", example_result="array([[[[[2.3333333, 9.333333 ]]]]], dtype=float32)")
adaptive_max_pool1d.__doc__ = _adaptive_doc(
    "max", 1, example_x="[[[1.0, 5.0, 4.0, 8.0, 3.0]]]", example_size="2",
    example_more=", return_indices=True",
    example_result="(array([[[5., 8.]]], dtype=float32), array([[[1, 3]]]))")
adaptive_max_pool2d.__doc__ = _adaptive_doc(
    "max", 2, example_x="[[[[1.0, 5.0, 4.0, 8.0, 3.0]]]]", example_size="(None, 2)",
    example_more=", return_indices=True",
    example_result="(array([[[[5., 8.]]]], dtype=float32), array([[[[1, 3]]]]))")
adaptive_max_pool3d.__doc__ = _adaptive_doc(
    "max", 3, example_x="[[[[[1.0, 5.0, 4.0, 8.0, 3.0]]]]]", example_size="(1, 1, 2)",
    example_more=", return_indices=True",
    example_result="(array([[[[[5., 8.]]]]], dtype=float32), array([[[[[1, 3]]]]]))")


# ---------------------------------------------------------------- max_unpool

def _unpool_size(name: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[int, ...], output_size: Any
                 ) -> list[int]:
    """PyTorch's output lengths: default (n - 1) * stride + kernel - 2 * padding; an
    output_size (k lengths, or k + 2 with N and C, which are dropped) must lie strictly between
    default - stride and default + stride; every length >= 0."""
    k = len(kernel)
    default = [(n - 1) * s + kk - 2 * p for n, kk, s, p in zip(shape[-k:], kernel, stride,
                                                                padding)]
    sizes = default
    if output_size is not None:
        if not isinstance(output_size, Sequence) or isinstance(output_size, (str, bytes)) or \
                not all(map(is_int, output_size)):
            raise TypeError(f"{name}: output_size must be a sequence of ints, got "
                            f"{output_size!r}")
        sizes = [int(v) for v in output_size]
        if len(sizes) == k + 2:
            sizes = sizes[2:]
        if len(sizes) != k:
            raise ValueError(f"{name}: output_size should be a sequence containing {k} or "
                             f"{k + 2} elements, but it has a length of '{len(output_size)}'")
        for d, (m, n, s) in enumerate(zip(sizes, default, stride)):
            if not n - s < m < n + s:
                raise ValueError(f'{name}: invalid output_size "{sizes}" (dim {d} must be '
                                 f"between {n - s} and {n + s})")
    for d, m in enumerate(sizes):
        if m < 0:
            raise ValueError(f"{name}: max_unpooling: output_size must contain non-negative "
                             f"spatial dimensions, but got output_size[{d}]={m}")
    return sizes


def _max_unpool(name: str, k: int, input: Any, indices: Any, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any) -> Any:
    try:
        i = _array(tensors.intake(indices, name)[0], name)   # a tensor's indices too
    except TypeError as exc:   # as PyTorch: argument 'indices' must be a tensor
        raise TypeError(f"{name}: argument 'indices' must be an array like input, got "
                        f"{type(indices).__module__}.{type(indices).__name__}") from exc
    return _cached(_prepare_max_unpool, input, name, k, kernel_size, stride, padding,
                   output_size, others=(i,))


def _prepare_max_unpool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                        padding: Any, output_size: Any, i: Any) -> Callable[[Any, Any], Any]:
    if execution.is_cupy_array(i) != execution.is_cupy_array(x):
        raise TypeError(f"{name}: indices must be a {type(x).__module__}.{type(x).__name__} "
                        f"like input, got {type(i).__module__}.{type(i).__name__}")
    if i.shape != x.shape:
        raise ValueError(f"{name}: Expected shape of indices to be same as that of the input "
                         f"tensor ({list(x.shape)}) but got indices tensor with shape: "
                         f"{list(i.shape)}")
    if i.dtype != np.int64:
        raise TypeError(f"{name}: elements in indices should be type int64, got {i.dtype}")
    x, unbatched = _batched(x, name, k, channels_may_be_empty=True)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    strides = _strides(name, stride, kernel)
    pads = _tuple(name, "padding", padding, k)
    if any(n <= 0 for n in kernel):
        raise ValueError(f"{name}: kernel_size must be greater than zero, but got kernel_size: "
                         f"{list(kernel)}")
    if any(s <= 0 for s in strides):
        raise ValueError(f"{name}: strides should be greater than zero, but got stride: "
                         f"{list(strides)}")
    sizes = _unpool_size(name, tuple(x.shape), kernel, strides, pads, output_size)
    if any(abs(m) > EXTENT_LIMIT for m in sizes):
        raise ValueError(f"{name}: kernel_size {list(kernel)}, stride {list(strides)} and "
                         f"padding {list(pads)} give the output lengths {list(sizes)}, past "
                         f"2**62, the most the kernels' 64-bit offsets hold")
    unpool = unpool_api.prepared(
        x, i[None] if unbatched else i, backend, [*x.shape[:2], *sizes], _POOL_OPSET,
        {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads) * 2},
        index_space="plane", checked=False)   # PyTorch's indices and error, checked below
    plane = math.prod(sizes)
    volumes = "x".join(map(str, sizes if k > 1 else [*sizes, 1]))
    # PyTorch returns an empty output without reading the indices; the GPU skips invalid ones
    checked = backend != "cupy" and plane > 0

    def call(xb: Any, ib: Any) -> Any:
        if unbatched:
            xb, ib = xb[None], ib[None]
        if checked and ib.size and (ib.min() < 0 or ib.max() >= plane):
            bad = int(ib.reshape(-1)[np.argmax((ib < 0) | (ib >= plane))])
            raise ValueError(f"{name}: Found an invalid max index: {bad} (output volumes are "
                             f"of size {volumes})")
        y = unpool(xb, ib, None)
        return y[0] if unbatched else y
    return call


_UNPOOL_DOC = """PyTorch's `torch.nn.functional.max_unpool{k}d` on a NumPy or CuPy array or a PyTorch
    tensor.

    Y = 0, then Y[n, c][indices[n, c, e]] = input[n, c, e] within each (n, c) plane: PyTorch's
    indices (max_pool{k}d's with return_indices) count the output's spatial positions of their
    plane; where several name one position the last in row-major order wins. The output length
    per axis is (n - 1) * stride + kernel_size - 2 * padding, or output_size (strictly between
    that minus and plus the stride). Runs ONNX MaxUnpool-22's plan with kernel_shape =
    kernel_size, strides = stride, pads = padding at both ends and output_shape = (N, C,
    *output_size), its indices read per plane of the output, as PyTorch reads them (the kernels
    add each plane's start, (n * C + c) * the plane's size; ONNX's node tests read them in the
    unpooled shape instead; see docs/pytorch.md).

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}; float16, bfloat16 (ml_dtypes on NumPy), float32 or float64.
    indices : numpy.ndarray, cupy.ndarray or torch.Tensor
        int64, input's shape and array kind, each in [0, the plane's output size).
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    padding : int or sequence of int, default 0
    output_size : sequence of int, optional
        {k} lengths, or {k2} with N and C first (ignored).

{returns}
    ValueError
        Where PyTorch raises: kernel_size, stride or padding of the wrong length; an
        output_size of the wrong length or outside its range; a negative output length; a
        wrong input rank or an empty non-batch dimension; indices of another shape; on NumPy
        arrays an index outside its plane ('Found an invalid max index'; the GPU path, which
        would have to synchronize to check, skips it). Also a stride <= 0 (PyTorch's
        max_unpool3d rejects it, its 1-D and 2-D forms take it).
    TypeError
        Indices not int64; an unsupported dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> y, i = F.max_pool{k}d(x, {example_kernel}, return_indices=True)
    >>> F.max_unpool{k}d(y, i, {example_kernel})
    {example_result}
    """


@_tensors
def max_unpool1d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride,
                                 padding, output_size))


@_tensors
def max_unpool2d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride,
                                 padding, output_size))


@_tensors
def max_unpool3d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride,
                                 padding, output_size))


max_unpool1d.__doc__ = _UNPOOL_DOC.format(
    k=1, returns=_RETURNS_DOC, k2=3, shape="(N, C, L) or (C, L)", example_x="[[[1.0, 3.0, 2.0, 5.0]]]",
    example_kernel="2", example_result="array([[[0., 3., 0., 5.]]], dtype=float32)")
max_unpool2d.__doc__ = _UNPOOL_DOC.format(
    k=2, returns=_RETURNS_DOC, k2=4, shape="(N, C, H, W) or (C, H, W)", example_x="[[[[1.0, 3.0, 2.0, 5.0]]]]",
    example_kernel="(1, 2)", example_result="array([[[[0., 3., 0., 5.]]]], dtype=float32)")
max_unpool3d.__doc__ = _UNPOOL_DOC.format(
    k=3, returns=_RETURNS_DOC, k2=5, shape="(N, C, D, H, W) or (C, D, H, W)",
    example_x="[[[[[1.0, 3.0, 2.0, 5.0]]]]]", example_kernel="(1, 1, 2)",
    example_result="array([[[[[0., 3., 0., 5.]]]]], dtype=float32)")


# ---------------------------------------------------------------- grid_sample, affine_grid

_GRID_MODES = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def _choose(name: str, what: str, value: Any, allowed: tuple[str, ...]) -> str:
    """A string argument of PyTorch's grid_sample, with its ValueError."""
    if value not in allowed:
        raise ValueError(f"{name}(): expected {what} to be "
                         f"{', '.join(repr(a) for a in allowed[:-1])} or {allowed[-1]!r}, "
                         f"but got: {value!r}")
    return str(value)


@_tensors
def grid_sample(input: _In, grid: Any, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> _In:
    """PyTorch's `torch.nn.functional.grid_sample` on a NumPy or CuPy array or a PyTorch
    tensor.

    Runs ONNX GridSample-22 with mode linear (bilinear), nearest or cubic (bicubic),
    padding_mode and align_corners as given (align_corners None: False, PyTorch's default), what
    PyTorch's exporter writes (at opset 16 with the names bilinear and bicubic). The one rule
    that differs, reproduced here: PyTorch pads a nearest coordinate before rounding it (ONNX
    runtimes round first), which changes the pixel only at an exact tie under reflection with
    align_corners=False. Coordinates are computed in float32 (float64 for float64 inputs),
    operation by operation as PyTorch does (a 2-D grid with align_corners=False: x =
    fma(g + 1, n / 2, -0.5), rounded once, as its vectorized kernel); a NaN coordinate samples the first pixel under border
    and reflection and gives 0 (nearest) or NaN (bilinear, bicubic) under zeros, as PyTorch's
    2-D kernels do.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, C, H, W) or (N, C, D, H, W) (bicubic: 4-D only) of a float dtype.
    grid : numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3) of input's dtype: positions (x, y[,
        z]) normalized to [-1, 1].
    mode : {"bilinear", "nearest", "bicubic"}, default "bilinear"
    padding_mode : {"zeros", "border", "reflection"}, default "zeros"
    align_corners : bool, optional
        True: -1 and 1 are the centres of the corner pixels; False (the default): their outer
        corners.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out) of input's dtype, on its device.

    Raises
    ------
    ValueError
        Where PyTorch raises: an unknown mode or padding_mode; a rank other than 4 or 5, grid
        and input of other ranks, batch sizes or last axis; an empty spatial axis; bicubic on
        5-D input.
    TypeError
        Input and grid of different dtypes, or input not of a float dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=np.float32)
    >>> F.grid_sample(x, np.array([[[[0.0, 0.0], [1.0, -1.0]]]], dtype=np.float32))
    array([[[[2.5, 0.5]]]], dtype=float32)
    """
    name = "grid_sample"
    g = _array(tensors.intake(grid, name)[0], name)   # a tensor's grid too
    return cast(_In, _cached(_prepare_grid_sample, input, name, mode, padding_mode,
                             align_corners, others=(g,)))


def _prepare_grid_sample(x: Any, backend: str, name: str, mode: Any, padding_mode: Any,
                         align_corners: Any, g: Any) -> Callable[[Any, Any], Any]:
    onnx_mode = _GRID_MODES[_choose(name, "mode", mode, tuple(_GRID_MODES))]
    _choose(name, "padding_mode", padding_mode, grid_plan.PADDING_MODES)
    _check_bools(name, ("align_corners",), align_corners=align_corners)
    if x.dtype.newbyteorder("=") != g.dtype.newbyteorder("="):   # byte order aside
        raise TypeError(f"{name}(): expected input and grid to have same dtype, but input has "
                        f"{x.dtype} and grid has {g.dtype}")
    if x.dtype.name not in _FLOATS:
        raise TypeError(f"{name}(): expected input of a floating point dtype, got {x.dtype}")
    shapes = f"input with sizes {list(x.shape)} and grid with sizes {list(g.shape)}"
    if x.ndim not in (4, 5) or g.ndim != x.ndim:
        raise ValueError(f"{name}(): expected 4D or 5D input and grid with same number of "
                         f"dimensions, but got {shapes}")
    if g.shape[0] != x.shape[0]:
        raise ValueError(f"{name}(): expected grid and input to have same batch size, but got "
                         f"{shapes}")
    if g.shape[-1] != x.ndim - 2:
        raise ValueError(f"{name}(): expected grid to have size {x.ndim - 2} in last dimension, "
                         f"but got grid with sizes {list(g.shape)}")
    empty = [d for d in range(2, x.ndim) if x.shape[d] == 0]
    if empty:
        raise ValueError(f"{name}(): expected input to have non-empty spatial dimensions, but "
                         f"input has sizes {list(x.shape)} with dimension {empty[0]} being empty")
    if onnx_mode == "cubic" and x.ndim != 4:
        raise ValueError(f"{name}(): bicubic interpolation only supports 4D input")
    if type(g) is not type(x):   # the family's entry point names the mismatch
        return lambda xb, gb: grid_api.run_sample(xb, gb, _GRID_OPSET, {})
    sample = grid_api.prepared_sample(x, g, backend, _GRID_OPSET, {
        "mode": onnx_mode, "padding_mode": padding_mode,
        "align_corners": int(bool(align_corners))}, pad_before_rounding=True,
        fused_unnormalize=True)
    return lambda xb, gb: sample(xb, gb, None)


@_tensors
def affine_grid(theta: _In, size: Any, align_corners: bool | None = None) -> _In:
    """PyTorch's `torch.nn.functional.affine_grid` on a NumPy or CuPy array or a PyTorch
    tensor.

    Runs ONNX AffineGrid-20 with align_corners as given (None: False, PyTorch's default), what
    PyTorch's exporter writes: grid[n, ..., k] = theta[n, k, :r] . (x, y[, z]) + theta[n, k, r]
    over the positions of an output of `size` normalized to [-1, 1]. An axis of length 1 has
    the coordinate 0, also with align_corners=True (PyTorch's; onnxruntime writes 1 there and
    onnx.reference -1).

    Parameters
    ----------
    theta : numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, 2, 3) for a 4-D size or (N, 3, 4) for a 5-D size, of a float dtype.
    size : sequence of int
        (N, C, H, W) or (N, C, D, H, W).
    align_corners : bool, optional

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, H, W, 2) or (N, D, H, W, 3) of theta's dtype, on its device.

    Raises
    ------
    ValueError
        Where PyTorch raises: theta not of a float dtype or not of the shape the size needs,
        sizes <= 0, another batch size than theta's.
    NotImplementedError
        A size of other than 4 or 5 values (as PyTorch).

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> theta = np.array([[[2.0, 0.0, 0.0], [0.0, 1.0, 0.5]]], dtype=np.float32)
    >>> F.affine_grid(theta, [1, 3, 1, 2])
    array([[[[-1. ,  0.5],
             [ 1. ,  0.5]]]], dtype=float32)
    """
    return cast(_In, _cached(_prepare_affine_grid, theta, "affine_grid", size, align_corners))


def _prepare_affine_grid(t: Any, backend: str, name: str, size: Any, align_corners: Any
                         ) -> Prepared:
    _check_bools(name, ("align_corners",), align_corners=align_corners)
    if t.dtype.name not in _FLOATS:
        raise ValueError(f"{name}: expected theta to have floating point type, but got "
                         f"{t.dtype}")
    if not isinstance(size, Sequence) or not all(map(is_int, size)):
        raise TypeError(f"{name}: size must be a sequence of ints, got {size!r}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"{name} only supports 4D and 5D sizes, for 2D and 3D affine "
                                  f"transforms, respectively. Got size {list(size)}.")
    rank = len(size) - 2
    if t.ndim != 3 or t.shape[1:] != (rank, rank + 1):
        raise ValueError(f"{name}: expected a batch of {rank}D affine matrices of shape "
                         f"Nx{rank}x{rank + 1} for size {list(size)}. Got {tuple(t.shape)}.")
    if not (align_corners and min(size[2:]) == 1) and min(size) <= 0:
        raise ValueError(f"{name}: expected non-zero, positive output size. Got {list(size)}")
    sizes, attrs = [int(v) for v in size], {"align_corners": int(bool(align_corners))}
    return lambda tb: grid_api.run_affine(tb, sizes, _GRID_OPSET, attrs)
