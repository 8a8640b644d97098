"""The public GridSample and AffineGrid functions: validate and plan on the host (plan.py), then
run the plan on the path the input picks: NumPy (numpy.py) or the CUDA kernels on the GPU or the
CPU emulator (kernel.py)."""
from __future__ import annotations

from typing import Any

from ..core import kernel_call
from ..core.execution import ArrayT
from . import kernel, plan
from . import numpy as numpy_path


def grid_sample(X: ArrayT, grid: Any, *, align_corners: int = 0, mode: str | None = None,
                padding_mode: str = "zeros", opset: int = 22, out: ArrayT | None = None
                ) -> ArrayT:
    """ONNX GridSample (versions 16, 20, 22) on a NumPy or CuPy array.

    Y[n, c, o] samples X[n, c] at the normalized position grid[n, o] (last axis: x along the
    innermost axis first, then y, ...; -1 and 1 the ends of each axis). Along an axis of length
    n a grid value g is the pixel coordinate x = ((g + 1) * n - 1) / 2 (align_corners=0) or
    x = (g + 1) / 2 * (n - 1) (align_corners=1); `mode` samples the pixels around x (nearest:
    x rounded half to even; linear: 2 taps per axis, weights 1 - t and t; cubic: 4 taps, Keys
    weights with a = -0.75) and `padding_mode` what lies outside (zeros: 0; border: the edge
    pixel; reflection: X mirrored at its edges). onnx_cupy.grid.plan gives every formula.

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        (N, C, D1, ..., Dr): 4-D at opset 16, 1 <= r <= 5 from opset 20. Nearest takes every
        fixed-size dtype (and strings on NumPy); linear and cubic take float16, float32,
        float64, the integer types, and bfloat16 from opset 22.
    grid : array
        (N, O1, ..., Or, r) of float16, float32, float64 (bfloat16 from opset 22), on X's
        device: the positions, normalized to [-1, 1] (values outside are padded, NaN allowed).
    align_corners : {0, 1}, default 0
        1: -1 and 1 are the centres of the end pixels; 0: their outer edges.
    mode : str, optional
        "linear" (the default), "nearest" or "cubic"; at opset 16 "bilinear" (the default),
        "nearest" or "bicubic".
    padding_mode : {"zeros", "border", "reflection"}, default "zeros"
        What a position outside X samples: 0, the nearest edge pixel, or X mirrored.
    opset : int, default 22
        The ONNX opset whose GridSample version the call runs.
    out : array, optional
        The result's C-contiguous array (its shape and dtype, X's device), apart from X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        (N, C, O1, ..., Or) of X's dtype, on X's device; integer results rounded half to even
        and saturated to the dtype's range.

    Raises
    ------
    ValueError
        Shapes that do not fit (grid's batch or last axis, X's rank for the version), an empty
        spatial axis of X with a non-empty output, or an attribute value not defined at the
        opset in force (named with the opset).
    TypeError
        An unsupported dtype of X for the mode or of grid, or an attribute of the wrong type.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=np.float32)
    >>> grid = np.array([[[[-1.0, -1.0], [0.0, 0.0], [1.0, 1.0]]]], dtype=np.float32)
    >>> oc.grid_sample(x, grid, align_corners=1)
    array([[[[1. , 2.5, 4. ]]]], dtype=float32)
    """
    y: ArrayT = SAMPLE(X, grid, parts=(opset, 0, 0, {
        "align_corners": align_corners, "mode": mode, "padding_mode": padding_mode}), out=out)
    return y   # the array type of X


def affine_grid(theta: ArrayT, size: Any, *, align_corners: int = 0, opset: int = 20,
                out: ArrayT | None = None) -> ArrayT:
    """ONNX AffineGrid (version 20) on a NumPy or CuPy array.

    grid[n, ..., k] = sum_j theta[n, k, j] * v_j + theta[n, k, r] over the positions
    v = (x, y[, z]) of an output image of `size`, each coordinate normalized to [-1, 1]: along
    an axis of length L position i is at (2i + 1 - L) / L (align_corners=0, pixel centres with
    -1 and 1 at the outer edges) or (2i - (L - 1)) / (L - 1) (align_corners=1; 0 where L = 1):
    the grid GridSample takes to apply the affine map theta.

    Parameters
    ----------
    theta : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        (N, 2, 3) for 2-D or (N, 3, 4) for 3-D; float16, bfloat16, float32 or float64.
    size : array or sequence of int
        (N, C, H, W) for 2-D or (N, C, D, H, W) for 3-D (C is not used), read on the host.
    align_corners : {0, 1}, default 0
    opset : int, default 20
        The ONNX opset the call follows.
    out : array, optional
        C-contiguous output of the result's shape and dtype, on theta's device.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        (N, H, W, 2) or (N, D, H, W, 3) of theta's dtype, on theta's device (16-bit types are
        computed in float32).

    Raises
    ------
    ValueError
        theta not (N, 2, 3) or (N, 3, 4); size of the wrong length, with negative values or
        another batch size; an opset before 20.
    TypeError
        An unsupported dtype, or a size that does not hold integers.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> theta = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=np.float32)
    >>> oc.affine_grid(theta, [1, 1, 2, 3], align_corners=1)[0]
    array([[[-1., -1.],
            [ 0., -1.],
            [ 1., -1.]],
    <BLANKLINE>
           [[-1.,  1.],
            [ 0.,  1.],
            [ 1.,  1.]]], dtype=float32)
    """
    y: ArrayT = run_affine(theta, size, opset, {"align_corners": align_corners}, out=out)
    return y   # the array type of X


def run_sample(X: Any, grid: Any, opset: int, attrs: dict[str, Any], *,
               pad_before_rounding: bool = False, fused_unnormalize: bool = False,
               out: Any = None) -> Any:
    """GridSample's one entry point (the ONNX function, the node runner, the PyTorch layer and
    Dask all come here): validated and planned on the host on the first call of its key
    (onnx_cupy.core.kernel_call; `pad_before_rounding`: nearest pads, then rounds, as PyTorch;
    `fused_unnormalize`: PyTorch's 2-D float32 coordinates, onnx_cupy.grid.plan), then run on
    the path X picks, NumPy or the CUDA kernels (on the GPU or the CPU emulator); grid must be
    of X's array type."""
    return SAMPLE(X, grid, parts=(opset, int(pad_before_rounding), int(fused_unnormalize),
                                  attrs), out=out)


def run_affine(theta: Any, size: Any, opset: int, attrs: dict[str, Any], *, out: Any = None
               ) -> Any:
    """AffineGrid's one entry point (every caller comes here): validated and planned on the
    host on the first call of its key (`size` read there), then run on the path theta picks."""
    return AFFINE(theta, parts=(opset, attrs), vectors=(size,), out=out)


def _plan_sample(x: Any, g: Any, opset: int, pad_before_rounding: int, fused_unnormalize: int,
                 attrs: dict[str, Any]) -> plan.SamplePlan:
    return plan.make_sample(tuple(x.shape), x.dtype, tuple(g.shape), g.dtype, opset,
                            pad_before_rounding=bool(pad_before_rounding),
                            fused_unnormalize=bool(fused_unnormalize), **attrs)


SAMPLE = kernel_call.KernelCall(
    plan.SAMPLE, (kernel_call.Input("X"), kernel_call.Input("grid")), _plan_sample,
    numpy_path.prepare_sample, kernel.prepare_sample)
AFFINE = kernel_call.KernelCall(
    plan.AFFINE, (kernel_call.Input("theta"),),
    lambda t, opset, attrs, size: plan.make_affine(tuple(t.shape), t.dtype, size, opset,
                                                   **attrs),
    numpy_path.prepare_affine, kernel.prepare_affine)
