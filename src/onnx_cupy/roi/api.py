"""The public RoiAlign and MaxRoiPool functions: validate and plan on the host (plan.py), then run
the plan on the path the input picks: NumPy (numpy.py) or the CUDA kernels on the GPU or the CPU
emulator (kernel.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import kernel_call
from ..core.execution import ArrayT
from . import kernel, plan
from . import numpy as numpy_path
from .plan import MAX_ROI_POOL, ROI_ALIGN


def roi_align(X: ArrayT, rois: Any, batch_indices: Any, *, mode: str = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0, coordinate_transformation_mode: str | None = None,
              opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    """ONNX RoiAlign (versions 10, 16, 22) on a NumPy or CuPy array: each region's bins
    averaged (or maxed) over a grid of bilinear samples.

    Region k = rois[k] = (x1, y1, x2, y2) of image batch_indices[k], scaled by spatial_scale and
    shifted by d = -0.5 (half_pixel) or 0; bin (ph, pw) of its (PH, PW) = (output_height,
    output_width) bins samples a gh x gw grid at y = y1 s - d + (ph + (iy + 0.5) / gh) h / PH
    (x likewise), gh = sampling_ratio or, where 0, ceil(h / PH):

        Y[k, c, ph, pw] = (1 / (gh gw)) sum over the grid of bilinear(X[b, c], y, x)   (avg)

    max: the largest weighted corner of any sample (as onnxruntime and onnx.reference; the full
    rules, and where the runtimes differ, are in onnx_cupy.roi.plan and docs/semantics.md).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        (N, C, H, W); float16, float32, float64, and bfloat16 from opset 22.
    rois : array of X's type and dtype
        (K, 4): x1, y1, x2, y2 per region, in X's pixel coordinates before spatial_scale.
    batch_indices : int64 array of X's type
        (K,): the image of each region, in [0, N).
    mode : {"avg", "max"}
    output_height, output_width : int >= 0
    sampling_ratio : int >= 0
        Samples per bin along each axis; 0: adaptive, ceil(region size / output size).
    spatial_scale : float
        Multiplies the box coordinates (a float32, as a model stores it).
    coordinate_transformation_mode : {"half_pixel", "output_half_pixel"}, optional
        From opset 16 (default half_pixel there): half_pixel shifts the scaled boxes by -0.5
        and lets them be smaller than a pixel; output_half_pixel (RoiAlign-10's only rule)
        does not shift and makes every region at least 1 x 1.
    opset : int, default 22
    out : array, optional
        C-contiguous, Y's shape and X's dtype, on X's device, apart from X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        Y: (K, C, output_height, output_width), X's dtype.

    Raises
    ------
    ValueError
        rois not (K, 4), batch_indices not (K,), a negative output size, a negative
        sampling_ratio, an unknown mode, an attribute the opset does not define, or (host
        arrays) a box coordinate that is not finite or a batch index outside [0, N) (the GPU
        path, which would have to synchronize to check, gives NaN and zeros for such regions).
    TypeError
        An unsupported dtype, rois of another dtype than X, batch_indices not int64.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> oc.roi_align(x, np.array([[0, 0, 2, 2]], np.float32), np.array([0]),
    ...              output_height=2, output_width=2, sampling_ratio=1)[0, 0]
    array([[0., 1.],
           [4., 5.]], dtype=float32)
    """
    attrs = {"mode": mode, "output_height": output_height, "output_width": output_width,
             "sampling_ratio": sampling_ratio, "spatial_scale": spatial_scale,
             "coordinate_transformation_mode": coordinate_transformation_mode}
    y: ArrayT = ALIGN(X, rois, batch_indices, parts=(opset, attrs, "float32"), out=out)
    return y


def max_roi_pool(X: ArrayT, rois: Any, *, pooled_shape: Any, spatial_scale: float = 1.0,
                 opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    """ONNX MaxRoiPool (versions 1, 22) on a NumPy or CuPy array: the max over each bin of
    whole pixels of each region.

    Region k = rois[k] = (b, x1, y1, x2, y2): corners x1 s, ... rounded half away from zero,
    h = max(y2' - y1' + 1, 1) rows split into PH bins, bin ph holding rows
    [floor(ph h / PH), ceil((ph + 1) h / PH)) + y1' clipped to [0, H] (columns likewise):

        Y[k, c, ph, pw] = max over the bin of X[b, c]   (0 for an empty bin)

    (as onnxruntime, whose std::max fold also decides where a NaN is: onnx_cupy.roi.plan).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray
        (N, C, H, W); float16, float32, float64, and bfloat16 from opset 22.
    rois : array of X's type and dtype
        (K, 5): batch index (truncated), x1, y1, x2, y2 per region.
    pooled_shape : sequence of 2 ints >= 1
        (PH, PW).
    spatial_scale : float
    opset : int, default 22
    out : array, optional
        C-contiguous, Y's shape and X's dtype, on X's device, apart from X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        Y: (K, C, PH, PW), X's dtype.

    Raises
    ------
    ValueError
        rois not (K, 5), pooled_shape missing, not 2 values or < 1, or (host arrays) a box
        coordinate that is not finite or a batch index outside [0, N) (the GPU path gives NaN
        and zeros for such regions).
    TypeError
        An unsupported dtype, or rois of another dtype than X.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> oc.max_roi_pool(x, np.array([[0, 0, 0, 3, 3]], np.float32), pooled_shape=[2, 2])[0, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    y: ArrayT = run_pool(X, rois, opset, {"pooled_shape": pooled_shape,
                                          "spatial_scale": spatial_scale}, out=out)
    return y


def run_align(X: Any, rois: Any, batch_indices: Any, opset: int, attrs: dict[str, Any], *,
              out: Any = None, scale_as_float32: bool = True) -> Any:
    """RoiAlign's one entry point (the ONNX function, the node runner, the PyTorch-style
    function and Dask all come here). `scale_as_float32`: spatial_scale rounded to float32 as
    ONNX stores it (False: torchvision's double, for its float64 results)."""
    return ALIGN(X, rois, batch_indices, parts=(opset, attrs, _scale(scale_as_float32)),
                 out=out)


def run_pool(X: Any, rois: Any, opset: int, attrs: dict[str, Any], *, out: Any = None,
             scale_as_float32: bool = True) -> Any:
    """MaxRoiPool's one entry point (`scale_as_float32` as run_align's)."""
    return POOL(X, rois, parts=(opset, attrs, _scale(scale_as_float32)), out=out)


def _scale(as_float32: bool) -> str:
    """How spatial_scale is read, as a key part that is a str (a bool would key as an int)."""
    return "float32" if as_float32 else "as given"


def _check_align(pl: plan.RoiPlan, x: Any, rois: Any, batch: Any) -> None:
    """The boxes and batch indices of host arrays, checked at every call (the GPU path, which
    would have to synchronize, skips the checks and gives NaN and zeros for such regions)."""
    plan.check_boxes(pl, rois)
    plan.check_batches(pl, batch)


def _check_pool(pl: plan.RoiPlan, x: Any, rois: Any) -> None:
    plan.check_boxes(pl, rois)
    plan.check_batches(pl, rois[:, 0].astype(np.float64))


# the kernels read C-contiguous inputs
ALIGN = kernel_call.KernelCall(
    ROI_ALIGN, (kernel_call.Input("X", contiguous=True), kernel_call.Input("rois", contiguous=True),
                kernel_call.Input("batch_indices", contiguous=True)),
    lambda x, r, b, opset, attrs, scale: plan.make_align(x, r, b, opset, attrs,
                                                         scale == "float32"),
    numpy_path.prepare, kernel.prepare, check=_check_align)
POOL = kernel_call.KernelCall(
    MAX_ROI_POOL, (kernel_call.Input("X", contiguous=True),
                   kernel_call.Input("rois", contiguous=True)),
    lambda x, r, opset, attrs, scale: plan.make_pool(x, r, opset, attrs, scale == "float32"),
    numpy_path.prepare, kernel.prepare, check=_check_pool)
