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


_POOL_DOC = """ONNX {op} (versions {versions}) on a NumPy or CuPy array.

    {formula}

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Input of shape (N, C, D1, ..., Dk), 1 <= k <= 8; float16, float32, float64, and bfloat16
        (ml_dtypes on NumPy) from opset 22. 16-bit types accumulate in float32.
    kernel_shape : sequence of int
        Window size per spatial axis (required).
    {own}
    auto_pad : {{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}}, default "NOTSET"
        "" counts as "NOTSET". SAME: output length ceil(D / s), the pad total
        max(0, (out - 1) * s + dk - D) split evenly, the odd one at the end (UPPER) or at the
        start (LOWER). VALID: no pads, output length floor((D - dk) / s) + 1.
    ceil_mode : {{0, 1}}, default 0
        Round the output length up instead of down (from opset {ceil_from}); a last window that
        would start in the right padding is dropped.
    dilations : sequence of int, optional
        Tap spacing per axis (default 1; from opset {dilations_from}).
    pads : sequence of int, optional
        [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (default 0); ignored next to an auto_pad
        other than NOTSET (as onnxruntime and onnx.reference do).
    strides : sequence of int, optional
        Step per spatial axis (default 1).
    opset : int
        The ONNX opset the call follows; the operator version in force at it decides the rules
        and the attributes allowed (e.g. opset 21 runs {op}-{at_21}).
    out : array, optional
        C-contiguous output of the result's shape and dtype, on X's device, not overlapping X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        (N, C, O1, ..., Ok) of X's dtype, on X's device, where with explicit pads
        Oi = floor_or_ceil((Di + begin_i + end_i - dk_i) / s_i) + 1 and dk_i = (k_i - 1) * d_i + 1.

    Raises
    ------
    ValueError
        An attribute out of range, of the wrong length, or not defined at the opset version in
        force (the message names the attribute, the value and the opset); an output length < 0
        (a length of 0 gives an empty output).
    TypeError
        An unsupported dtype or array type, or an attribute of the wrong type.

    Examples
    --------
    {example}
    """


def _pool_doc(**parts: str) -> Any:
    """Give a pooling function the shared docstring, filled with its own parts."""
    def apply(fn: Any) -> Any:
        fn.__doc__ = _POOL_DOC.format(**parts)
        return fn
    return apply


@_pool_doc(
    op="AveragePool", versions="1, 7, 10, 11, 19, 22", ceil_from="10", dilations_from="19",
    at_21="19",
    formula="""Y[n, c, o] = sum over the taps w of window o inside X of X[n, c, w] / count(o), where window
    o along axis i holds positions o_i * s_i - begin_i + j * d_i (0 <= j < k_i) and count(o) is
    the number of its positions inside X (count_include_pad=0) or inside X plus its pads
    (count_include_pad=1; a ceil_mode overhang past the end pad never counts).""",
    own="""count_include_pad : {0, 1}, default 0 (from opset 7)
        Whether pad positions count in the divisor.""",
    example=""">>> import numpy as np, onnx_cupy as oc
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> oc.average_pool(x, kernel_shape=[2, 2], strides=[2, 2])[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)""")
def average_pool(X: Any, *, kernel_shape: Any = None, auto_pad: str = "NOTSET",
                 ceil_mode: int = 0, count_include_pad: int = 0, dilations: Any = None,
                 pads: Any = None, strides: Any = None, opset: int = 22, out: Any = None) -> Any:
    return _pool("AveragePool", X, opset, out, kernel_shape=kernel_shape, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, count_include_pad=count_include_pad, dilations=dilations,
                 pads=pads, strides=strides)


@_pool_doc(
    op="LpPool", versions="1, 2, 11, 18, 22", ceil_from="18", dilations_from="18", at_21="18",
    formula="""Y[n, c, o] = (sum over the taps w of window o inside X of |X[n, c, w]|^p)^(1/p); pads
    contribute 0. Window o along axis i holds positions o_i * s_i - begin_i + j * d_i
    (0 <= j < k_i).""",
    own="""p : int or float, default 2
        The norm's order, > 0; an integer from opset 2 (LpPool-1 takes any float).""",
    example=""">>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[3.0, 4.0, 0.0, 1.0]]], dtype=np.float32)
    >>> oc.lp_pool(x, kernel_shape=[2], strides=[2], p=2)
    array([[[5., 1.]]], dtype=float32)""")
def lp_pool(X: Any, *, kernel_shape: Any = None, p: float = 2, auto_pad: str = "NOTSET",
            ceil_mode: int = 0, dilations: Any = None, pads: Any = None, strides: Any = None,
            opset: int = 22, out: Any = None) -> Any:
    return _pool("LpPool", X, opset, out, kernel_shape=kernel_shape, auto_pad=auto_pad,
                 ceil_mode=ceil_mode, dilations=dilations, pads=pads, strides=strides, p=p)


def hardmax(X: Any, *, axis: int | None = None, opset: int = 13, out: Any = None) -> Any:
    """ONNX Hardmax (versions 1, 11, 13) on a NumPy or CuPy array.

    Y = 1 at the first maximum of each row of X, 0 elsewhere. From opset 13 a row runs along
    `axis`; at opsets 1 and 11 X is viewed as the 2-D [prod(shape[:axis]), prod(shape[axis:])]
    and a row is a whole row of that view. Among equal maxima the first wins; a NaN counts as the
    maximum (the first NaN wins); -0.0 equals +0.0.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Rank >= 1; float16, float32, float64, and bfloat16 from opset 13.
    axis : int, optional
        In [-rank, rank - 1]; default -1 from opset 13, 1 before.
    opset : int, default 13
        The ONNX opset the call follows.
    out : array, optional
        C-contiguous output of X's shape and dtype, on X's device, not overlapping X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The one-hot array, X's shape and dtype, on X's device.

    Raises
    ------
    ValueError
        `axis` out of range (the message names the opset) or a rank-0 X.
    TypeError
        An unsupported dtype or array type, or a non-integer `axis`.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> oc.hardmax(np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], dtype=np.float32))
    array([[0., 1., 0.],
           [1., 0., 0.]], dtype=float32)
    """
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

    Each resized axis (input length n, scale s) maps output coordinate y to an input coordinate
    x by `coordinate_transformation_mode`, e.g. half_pixel x = (y + 0.5) / s - 0.5, asymmetric
    x = y / s, align_corners x = y * (n - 1) / (m - 1); X is sampled at the taps around x (1 for
    nearest, 2 for linear, 4 for cubic, more with antialias), indices clamped into [0, n), and
    Y is the tensor product of the per-axis weights applied to X (onnx_cupy.plans.resize gives
    every formula).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Any rank >= 1. Nearest takes every fixed-size dtype (and strings on NumPy); linear and
        cubic take float16, bfloat16 (from opset 13), float32, float64 and the integer types.
    roi : array or sequence of float, optional
        [start..., end...] per resized axis, normalized; used by tf_crop_and_resize (omitted:
        the whole axis, 0..1).
    scales : array or sequence of float, optional
        Per resized axis; the output length is floor(n * scale). Give scales or sizes.
    sizes : array or sequence of int, optional
        Output length per resized axis (not at opset 10).
    antialias : {0, 1}, default 0 (from opset 18)
        Linear/cubic downsampling with the filter stretched by 1 / scale.
    axes : sequence of int, optional (from opset 18)
        The axes roi, scales and sizes refer to (negative counts from the end); default all.
    coordinate_transformation_mode : str, default "half_pixel"
        half_pixel, half_pixel_symmetric (19), pytorch_half_pixel, align_corners, asymmetric,
        tf_half_pixel_for_nn (11), tf_crop_and_resize (from opset 11).
    cubic_coeff_a : float, default -0.75
        The Keys cubic kernel's a (-0.5: TensorFlow, -0.75: PyTorch).
    exclude_outside : {0, 1}, default 0
        Give taps outside X weight 0 and renormalize (linear, cubic).
    extrapolation_value : float, default 0.0
        The value of tf_crop_and_resize samples outside X.
    keep_aspect_ratio_policy : {"stretch", "not_larger", "not_smaller"}, default "stretch"
        With sizes (from opset 18): one scale for every axis in `axes`.
    mode : {"nearest", "linear", "cubic"}, default "nearest"
    nearest_mode : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}
        Rounding of x for mode nearest (default round_prefer_floor; from opset 11; Resize-10
        rounds down when upsampling and up when downsampling).
    opset : int, default 19
        The ONNX opset the call follows.
    out : array, optional
        C-contiguous output of the result's shape and dtype, on X's device, not overlapping X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        X resized, X's dtype, on X's device. Integer results are rounded half to even and
        saturated to the dtype's range.

    Raises
    ------
    ValueError
        Both or neither of scales and sizes; lengths that do not match the axes; an attribute
        value not defined at the opset in force (named with the opset).
    TypeError
        An unsupported dtype for the mode, or an array or attribute of the wrong type.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    >>> oc.resize(x, scales=[2.0, 2.0], mode="nearest")
    array([[1., 1., 2., 2.],
           [1., 1., 2., 2.],
           [3., 3., 4., 4.],
           [3., 3., 4., 4.]], dtype=float32)
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
