"""The public Resize function: validate and plan on the host (plan.py), then run the plan on the
path the input picks: NumPy (numpy.py) or the CUDA kernels on the GPU or the CPU emulator
(kernel.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import arrays, calls, kernel_call
from ..core.execution import ArrayT
from . import kernel, kernel_grad, numpy_grad, plan, plan_grad
from . import numpy as numpy_path


def resize(X: ArrayT, roi: Any = None, scales: Any = None, sizes: Any = None, *,
           antialias: int = 0, axes: Any = None,
           coordinate_transformation_mode: str = "half_pixel",
           cubic_coeff_a: float = -0.75, exclude_outside: int = 0,
           extrapolation_value: float = 0.0, keep_aspect_ratio_policy: str = "stretch",
           mode: str = "nearest", nearest_mode: str = "round_prefer_floor", opset: int = 19,
           out: ArrayT | None = None) -> ArrayT:
    """ONNX Resize (versions 10, 11, 13, 18, 19) on a NumPy or CuPy array.

    Each resized axis (input length n, scale s) maps output coordinate y to an input coordinate
    x by `coordinate_transformation_mode`, e.g. half_pixel x = (y + 0.5) / s - 0.5, asymmetric
    x = y / s, align_corners x = y * (n - 1) / (m - 1); X is sampled at the taps around x (1 for
    nearest, 2 for linear, 4 for cubic, more with antialias), indices clamped into [0, n), and
    Y is the tensor product of the per-axis weights applied to X (onnx_cupy.resize.plan gives
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
    y: ArrayT = RESIZE(X, parts=(opset, None, {
        "antialias": antialias, "axes": axes,
        "coordinate_transformation_mode": coordinate_transformation_mode,
        "cubic_coeff_a": cubic_coeff_a, "exclude_outside": exclude_outside,
        "extrapolation_value": extrapolation_value,
        "keep_aspect_ratio_policy": keep_aspect_ratio_policy, "mode": mode,
        "nearest_mode": nearest_mode}), vectors=(roi, scales, sizes), out=out)
    return y   # the array type of X


def run(X: Any, roi: Any, scales: Any, sizes: Any, opset: int, attrs: dict[str, Any], *,
        source: plan.CoordinateSource | calls.Keyed | None = None, out: Any = None,
        op: str = plan.OP) -> Any:
    """The Resize family's one entry point (the ONNX function, the node runner, the PyTorch
    layer and Dask all come here): validated and planned on the host on the first call of its
    key (onnx_cupy.core.kernel_call; `source`: where the axes sample, default the coordinate
    transform of `attrs`), then run on the path the input picks, NumPy or the CUDA kernels (on
    the GPU or the CPU emulator). roi, scales and sizes given as CuPy arrays are read back to
    the host at every call (they decide the output's shape): give them as lists or NumPy
    arrays where a call must not synchronize. `op`: the operator served, named in errors
    (Upsample runs here as Resize-10, after its own checks)."""
    call = RESIZE if op == plan.OP else UPSAMPLE_AS_RESIZE
    return call(X, parts=(opset, source, attrs), vectors=(roi, scales, sizes), out=out)


def _plan(op: str) -> Any:
    """The plan function of Resize serving `op`."""
    def make(x: Any, opset: int, source: plan.CoordinateSource | None, attrs: dict[str, Any],
             roi: Any, scales: Any, sizes: Any) -> plan.ResizePlan:
        return plan.make(tuple(x.shape), x.dtype, roi, scales, sizes, opset, source, op,
                         **attrs)[0]
    return make


def _plan_upsample(x: Any, opset: int, mode: str, scales: Any) -> plan.ResizePlan:
    """Upsample's own checks, then Resize-10's plan."""
    checked = plan.upsample_scales(tuple(x.shape), x.dtype, scales, mode, opset)
    return plan.make(tuple(x.shape), x.dtype, None, checked, None, plan.UPSAMPLE_AS, None,
                     plan.UPSAMPLE, mode=mode)[0]


def gradient(X: Any, dY: Any, parts: tuple[Any, ...], vectors: tuple[Any, ...], *,
             op: str = plan.OP, out: Any = None) -> Any:
    """The Resize family's gradient entry point (onnx_cupy.vjp and interpolate's autograd come
    here): dX, the vector-Jacobian product of the forward call of `parts` and `vectors` (those
    `run` takes: (opset, source, attributes) and (roi, scales, sizes); Upsample's, with `op`
    Upsample: (opset, mode) and (scales,)) at X with the cotangent dY; the formula and its
    order: onnx_cupy.resize.plan_grad, the same bits on every path."""
    call = GRADIENTS[op]
    return call(X, dY, parts=parts, vectors=vectors, out=out)


def _gradient(op: str, forward: Any) -> kernel_call.KernelCall:
    """The declared gradient of `op`, planned by the forward's plan function `forward`: inputs
    X (read for its shape and dtype) and dY."""
    def make(x: Any, dy: Any, *arguments: Any) -> plan_grad.GradientPlan:
        return plan_grad.gradient(forward(x, *arguments), np.dtype(x.dtype), dy, op)
    return kernel_call.KernelCall(
        f"{op} gradient", (kernel_call.Input("X"), kernel_call.Input("dY", contiguous=True)),
        make, lambda gp, x, dy: numpy_grad.prepare(gp, np.dtype(x.dtype)), kernel_grad.prepare,
        output=lambda gp, x, dy: (gp.forward.in_shape, x.dtype),
        walks=lambda gp, index, a: index == 0 or arrays.whole_element_strides(a) is not None)


_X = (kernel_call.Input("X"),)
RESIZE = kernel_call.KernelCall(plan.OP, _X, _plan(plan.OP), numpy_path.prepare,
                                kernel.prepare, walks=kernel.walks)
UPSAMPLE_AS_RESIZE = kernel_call.KernelCall(plan.UPSAMPLE, _X, _plan(plan.UPSAMPLE),
                                            numpy_path.prepare, kernel.prepare,
                                            walks=kernel.walks)
UPSAMPLE = kernel_call.KernelCall(plan.UPSAMPLE, _X, _plan_upsample,
                                  numpy_path.prepare, kernel.prepare, walks=kernel.walks)
GRADIENTS = {plan.OP: _gradient(plan.OP, _plan(plan.OP)),
             plan.UPSAMPLE: _gradient(plan.UPSAMPLE, _plan_upsample)}


def upsample(X: ArrayT, scales: Any = None, *, mode: str = "nearest", opset: int = 10,
             out: ArrayT | None = None) -> ArrayT:
    """ONNX Upsample (versions 7, 9, 10; deprecated since opset 10) on a NumPy or CuPy array.

    Upsample is Resize-10 under its former name and runs on Resize's plan and kernels: each axis
    of length n and scale s >= 1 gets floor(n * s) outputs, and output coordinate y samples the
    input at x = y / s (asymmetric): nearest takes element floor(x), linear weighs elements
    floor(x) and floor(x) + 1 by (1 - t, t), t = x - floor(x), the last index clamped to n - 1.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Any rank >= 1. Nearest takes every fixed-size dtype (and strings on NumPy); linear takes
        float16, float32, float64 and the integer types (no bfloat16 at any version).
    scales : array or sequence of float
        One per axis of X, each >= 1 (read on the host, rounded to float32): the attribute of
        Upsample-7, the input of Upsample-9 and -10.
    mode : {"nearest", "linear"}, default "nearest"
        linear interpolates every axis whose scale is not 1 (bilinear, trilinear, ...).
    opset : int, default 10
        Picks the version in force: Upsample-7, -9 or -10, the same rules (10 is deprecated:
        onnxruntime rejects its models).
    out : array, optional
        Written instead of a new array: C-contiguous, of the result's shape, X's dtype and
        device, apart from X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        X upsampled, X's dtype, on X's device. Integer results of linear are rounded half to
        even and saturated (as Resize's).

    Raises
    ------
    ValueError
        Missing scales, or scales not one per axis, not finite or below 1 (Upsample only
        enlarges: Resize shrinks); a mode other than nearest and linear; an opset below 7.
    TypeError
        A dtype the mode does not take (bfloat16 in any mode, bool, complex or strings in
        linear), or an array or argument of the wrong type.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([1.0, 2.0, 4.0], dtype=np.float32)
    >>> oc.upsample(x, [2.5])                      # x = y / 2.5 rounded down
    array([1., 1., 1., 2., 2., 4., 4.], dtype=float32)
    >>> oc.upsample(x, [2.0], mode="linear")
    array([1. , 1.5, 2. , 3. , 4. , 4. ], dtype=float32)
    """
    y: ArrayT = UPSAMPLE(X, parts=(opset, mode), vectors=(scales,), out=out)
    return y   # the array type of X
