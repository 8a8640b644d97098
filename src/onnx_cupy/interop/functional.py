"""PyTorch-style functions on CuPy and NumPy arrays: `torch.nn.functional`'s pooling and
interpolation (and the one-hot argmax idiom) with PyTorch's argument names, order, defaults,
errors and results, built on the ONNX operators' plans; public as `onnx_cupy.nn.functional`.

Arrays are channels-first, (N, C, *spatial) (or (C, *spatial) where PyTorch takes an unbatched
input). Each function names the ONNX attributes it runs with and PyTorch's quirks it reproduces;
docs/pytorch.md maps every call to what an exporter writes.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import arrays, calls, execution
from ..core.attributes import is_int, is_real
from ..hardmax.api import hardmax
from ..pool import api as pool_api
from ..pool import plan as pool_plan
from ..resize import api as resize_api
from ..resize import plan as resize_plan

__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool3d", "interpolate", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "one_hot_argmax"]

_POOL_OPSET = 22    # the newest AveragePool and MaxPool
_RESIZE_OPSET = 19  # the newest Resize
_DIMS = {1: "one int", 2: "a tuple of two ints", 3: "a tuple of three ints"}


def _xp(x: Any) -> Any:
    """The array module of `x` (cupy for CuPy arrays, numpy otherwise)."""
    return execution.cupy_module() if execution.is_cupy_array(x) else np


def _array(x: Any, name: str) -> Any:
    return execution.select(x, name)[0]


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


def _batched(x: Any, name: str, k: int) -> tuple[Any, bool]:
    """`x` with a batch axis (added where PyTorch takes the unbatched (C, *spatial) form)."""
    if x.ndim not in (k + 1, k + 2) or any(d == 0 for d in x.shape[1:]):
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


def _cached(prepare: Callable[..., Prepared], input: Any, name: str, *args: Any) -> Any:
    """`name`(input, *args): the call `prepare(x, backend, name, *args)` made (PyTorch's checks,
    the ONNX attributes, the family's prepared call) on the first occurrence of its key
    (onnx_cupy.core.calls: the input's layout, path and device, the arguments), then kept."""
    x, backend = execution.select(input, name)
    key = calls.key(x, backend, name, *args)
    call = _CALLS.get(key) or _CALLS.put(key, prepare(x, backend, name, *args))
    return call(x)


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
    # sum / divisor = mean over the real elements * their count: one table, uploaded once
    pl = pool_plan.prepare("AveragePool", tuple(x.shape), x.dtype, _POOL_OPSET, **attrs)
    counts = pool_plan.divisor(pl, np.dtype(np.float64))
    with arrays.on_device(x, backend):
        (factor,) = calls.upload(backend, (counts / divisor_override).astype(x.dtype))

    def call(xb: Any) -> Any:
        y = pool(xb, None)
        y *= factor
        return y
    return _unbatched(call, unbatched)


_WINDOW_DOC = """    input : numpy.ndarray or cupy.ndarray
        {shape}.
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    padding : int or sequence of int, default 0
        Implicit {pad} at both ends, at most half the kernel size."""


_RETURNS_DOC = """    Returns
    -------
    numpy.ndarray or cupy.ndarray
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


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Any:
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Any:
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Any:
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


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
    input : numpy.ndarray or cupy.ndarray
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


def lp_pool1d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Any, norm_type: float, kernel_size: Any, stride: Any = None,
              ceil_mode: bool = False) -> Any:
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


lp_pool1d.__doc__ = _LP_DOC.format(
    k=1, returns=_RETURNS_DOC, shape="(N, C, L) or (C, L)", example_x="[[[3.0, 4.0, 0.0, 1.0]]]", example_kernel="2",
    example_result="array([[[5., 1.]]], dtype=float32)")
lp_pool2d.__doc__ = _LP_DOC.format(
    k=2, returns=_RETURNS_DOC, shape="(N, C, H, W) or (C, H, W)", example_x="[[[[3.0, 4.0, 0.0, 1.0]]]]",
    example_kernel="(1, 2)", example_result="array([[[[5., 1.]]]], dtype=float32)")
lp_pool3d.__doc__ = _LP_DOC.format(
    k=3, returns=_RETURNS_DOC, shape="(N, C, D, H, W) or (C, D, H, W)", example_x="[[[[[3.0, 4.0, 0.0, 1.0]]]]]",
    example_kernel="(1, 1, 2)", example_result="array([[[[[5., 1.]]]]], dtype=float32)")


def one_hot_argmax(input: Any, dim: int = -1) -> Any:
    """PyTorch's one-hot argmax idiom on a NumPy or CuPy array: the result of
    `torch.zeros_like(x).scatter_(dim, x.argmax(dim=dim, keepdim=True), 1)`.

    ONNX Hardmax-13 with axis = dim: 1 at the first maximum along `dim` (a NaN counts as the
    maximum, the first NaN wins, as torch.argmax), 0 elsewhere.

    Parameters
    ----------
    input : numpy.ndarray or cupy.ndarray
        Any rank >= 1, a float dtype.
    dim : int, default -1
        The axis, negative counting from the end.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
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
    return hardmax(x, axis=int(dim), opset=13)


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


def interpolate(input: Any, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Any:
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
    ==============================  =====================================================

    with PyTorch's lengths and coordinates: the output length is floor(n * scale_factor) in
    float64; with scale_factor given (recompute_scale_factor not set) the source coordinate
    is computed from 1 / scale_factor (also for an output length of 1, where ONNX's
    pytorch_half_pixel takes x = 0), otherwise from n / size; nearest and nearest-exact compute
    it in float32, multiplying by float32(1 / scale_factor) (or float32(n) / float32(size)) as
    PyTorch does. An axis whose length stays is copied in the linear and antialiased modes and
    in 2-D nearest, whatever the scale factor (1-D and 3-D nearest, nearest-exact and bicubic
    resample it), and 2-D nearest takes element y // 2 where the length doubles (e.g. at
    scale_factor 2.05), as PyTorch's CPU kernels do. Not reproduced: PyTorch 2.13's antialiased
    modes give every row the same values when the output width is 1 and the height changes (a
    defect of its kernel); this function gives the filtered rows. The model an exporter writes
    (scales = float32(scale_factor)) can differ from these results; see docs/pytorch.md.

    Parameters
    ----------
    input : numpy.ndarray or cupy.ndarray
        (N, C, *spatial) with 1-3 spatial axes (linear: 1, bilinear/bicubic: 2, trilinear: 3).
    size : int or sequence of int, optional
        Output spatial lengths.
    scale_factor : float or sequence of float, optional
        Multipliers of the spatial lengths; give size or scale_factor.
    mode : str, default "nearest"
        nearest, nearest-exact, linear, bilinear, bicubic, trilinear ("area" is not supported).
    align_corners : bool, optional
        For linear, bilinear, bicubic and trilinear only (default False).
    recompute_scale_factor : bool, optional
        Compute the coordinates from the output lengths instead of scale_factor.
    antialias : bool, default False
        bilinear and bicubic on 4-D inputs: the filter stretched by 1 / scale when shrinking.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        Input's dtype, on its device.

    Raises
    ------
    ValueError
        Where PyTorch raises ValueError: both or neither of size and scale_factor; a length
        mismatch; align_corners with a nearest mode; recompute_scale_factor with size;
        antialias outside bilinear/bicubic on 4-D input; output or input lengths < 1.
    NotImplementedError
        Where PyTorch raises it (a mode that does not fit the input's rank), and for "area".

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
    return _cached(_prepare_interpolate, input, resize_plan.OP, size, scale_factor, mode,
                   align_corners, recompute_scale_factor, antialias)


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
    if mode == "area":
        raise NotImplementedError("interpolate: mode 'area' (adaptive average pooling) is not "
                                  "supported by onnx_cupy.nn.functional")
    sizes, factors = _interpolate_target(x, size, scale_factor, recompute_scale_factor)
    spatial = list(x.shape[2:])
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
    elif not align_corners:
        source = _Coordinates(True, tuple(1.0 if copies and m == n else 1.0 / f if factors
                                          else n / m
                                          for n, m, f in zip(spatial, sizes, factors or sizes)))
    resize = resize_api.prepared(x, backend, None, None, [*x.shape[:2], *sizes], _RESIZE_OPSET,
                                 {**resize_plan.DEFAULTS, **attrs}, source)
    return lambda x: resize(x, None)


@dataclass(frozen=True)
class _Coordinates:
    """PyTorch's source coordinates, as a Resize coordinate source: along spatial axis d, output
    coordinate y samples x = (y + 0.5) * step_d - 0.5 (`half_pixel`) or x = y * step_d, with
    step_d the input distance between output samples (1 / scale_factor, or n / m), computed in
    float32 for the nearest modes (as PyTorch does; float64 past 2^24) and float64 otherwise;
    antialias filters stretch by step_d. An axis of step 1 that keeps its length is copied, and
    so are the batch and channel axes."""

    half_pixel: bool
    steps: tuple[float, ...]   # per spatial axis

    def coordinates(self, a: resize_plan.Axis, nearest: bool
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        step = self.steps[a.axis - 2] if a.axis >= 2 else 1.0
        if step == 1 and a.m == a.n:
            return None
        single = nearest and max(a.n, a.m) <= resize_plan.FLOAT32_EXACT
        f: Any = np.float32 if single else np.float64
        y = np.arange(a.m, dtype=f)
        x = (y + f(0.5)) * f(step) - f(0.5) if self.half_pixel else y * f(step)
        return x.astype(np.float64), np.zeros(a.m, dtype=bool)

    def filter_scale(self, a: resize_plan.Axis) -> float:
        return 1.0 / self.steps[a.axis - 2]


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
        xp.fmod(indices, plane, out=indices)   # the remainder of a sign: -1 (no element) stays
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
    numpy.ndarray or cupy.ndarray, or (output, indices)
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


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


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
