"""torchvision.ops-style region pooling on CuPy and NumPy arrays and PyTorch tensors:
`roi_align` and `roi_pool` with torchvision's argument names, defaults and results, run as ONNX
RoiAlign-22 and MaxRoiPool-22 (onnx_cupy.roi); public as `onnx_cupy.ops`.

Boxes are (x1, y1, x2, y2) in the input's pixel coordinates before `spatial_scale`, given as one
(K, 5) array whose first column is each box's image index, or as a list of (L_i, 4) arrays, one
per image of the batch. They take the input's array type and dtype. A PyTorch tensor in gives a
tensor out on its device, zero-copy through DLPack (interop/tensors.py); no autograd graph is
recorded. docs/pytorch.md says how each call maps to the ONNX node an exporter writes.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from ..core import execution
from ..core.attributes import is_int
from ..core.execution import NDArray
from ..elementwise import api as elementwise_api
from ..roi import api as roi_api
from . import tensors

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["roi_align", "roi_pool"]

_In = TypeVar("_In", bound="NDArray | Tensor")
_OPSET = 22   # the newest RoiAlign and MaxRoiPool


def _size(name: str, output_size: Any) -> tuple[int, int]:
    """torchvision's output_size: an int or a pair of ints (torch.nn.modules.utils._pair)."""
    if is_int(output_size):
        return int(output_size), int(output_size)
    if isinstance(output_size, Sequence) and len(output_size) == 2 and all(
            map(is_int, output_size)):
        return int(output_size[0]), int(output_size[1])
    raise ValueError(f"{name}: output_size must be an int or a pair of ints, got "
                     f"{output_size!r}")


def _as(a: Any, dtype: Any, name: str) -> Any:
    """`a` of `dtype`: on the device converted by the library's kernel (CuPy's casts flush
    subnormals to zero), NumPy's astype on the host; `a` itself where it has the dtype."""
    if execution.is_cupy_array(a):
        return elementwise_api.convert(a, dtype, name)
    return np.asarray(a, dtype=dtype)


def _part(value: Any, x: Any, name: str) -> Any:
    """One boxes array as an array of x's kind and dtype."""
    a, _ = tensors.intake(value, name)
    if not (isinstance(a, np.ndarray) or execution.is_cupy_array(a)):
        interface = hasattr(a, "__dlpack__") or hasattr(a, "__cuda_array_interface__")
        a = execution.as_array(a, name) if interface else np.asarray(a)
    if execution.is_cupy_array(a) != execution.is_cupy_array(x):
        raise TypeError(f"{name}: boxes must be on the input's device, as {type(x).__name__}")
    return _as(a, x.dtype, name)


def _rois(name: str, boxes: Any, x: Any) -> tuple[Any, Any]:
    """(the (K, 4) boxes, their int64 image indices) from torchvision's two forms: a (K, 5)
    array (the index in the first column, truncated) or a list of (L_i, 4) arrays per image."""
    xp = execution.cupy_module() if execution.is_cupy_array(x) else np
    if isinstance(boxes, (list, tuple)):
        parts = [_part(b, x, name) for b in boxes]
        if any(p.ndim != 2 or p.shape[1] != 4 for p in parts):
            raise ValueError(f"{name}: boxes given as a list must hold (L, 4) arrays, got "
                             f"shapes {[tuple(p.shape) for p in parts]}")
        batch = np.repeat(np.arange(len(parts), dtype=np.int64), [p.shape[0] for p in parts])
        rois = xp.concatenate(parts) if parts else xp.zeros((0, 4), x.dtype)
        return rois, xp.asarray(batch)
    rois = _part(boxes, x, name)
    if rois.ndim != 2 or rois.shape[1] != 5:
        raise ValueError(f"{name}: boxes must be a (K, 5) array (index, x1, y1, x2, y2) or a list "
                         f"of (L, 4) arrays, got shape {tuple(rois.shape)}")
    return xp.ascontiguousarray(rois[:, 1:]), _as(rois[:, 0], np.int64, name)


def roi_align(input: _In, boxes: Any, output_size: Any, spatial_scale: float = 1.0,
              sampling_ratio: int = -1, aligned: bool = False) -> _In:
    """torchvision.ops.roi_align on a NumPy or CuPy array or a PyTorch tensor.

    Each box's (output_size) bins average a grid of bilinear samples: ONNX RoiAlign-22 with
    mode avg, sampling_ratio max(sampling_ratio, 0) (<= 0: adaptive, ceil(box size / output
    size) per axis) and coordinate_transformation_mode half_pixel where `aligned` (boxes shifted
    by -0.5 pixel, any size) or output_half_pixel (unshifted, at least 1 x 1).

    Parameters
    ----------
    input : array or tensor
        (N, C, H, W); float16, bfloat16, float32 or float64.
    boxes : array or tensor (K, 5), or list of arrays or tensors (L_i, 4)
        (index, x1, y1, x2, y2), or per image (x1, y1, x2, y2); converted to the input's dtype.
    output_size : int or (int, int)
    spatial_scale : float, default 1.0
        Multiplies the box coordinates: a double for float64 inputs, as torchvision (an
        exported node's FLOAT attribute holds it rounded to float32).
    sampling_ratio : int, default -1
    aligned : bool, default False

    Returns
    -------
    array or tensor
        (K, C, output_size[0], output_size[1]), the input's kind, dtype and device.

    Raises
    ------
    ValueError
        Boxes of another shape, an image index outside the batch, a box coordinate that is
        not finite (host arrays), a negative output size.
    TypeError
        Boxes on another device than the input, an unsupported dtype, a tensor requiring grad.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy import ops
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ops.roi_align(x, [np.array([[0, 0, 2, 2]], np.float32)], 2, sampling_ratio=1)[0, 0]
    array([[2.5, 3.5],
           [6.5, 7.5]], dtype=float32)
    """
    name = "roi_align"
    given, give = tensors.intake(input, name)
    x, _ = execution.select(given, name)
    rois, batch = _rois(name, boxes, x)
    height, width = _size(name, output_size)
    if not isinstance(aligned, (bool, np.bool_)):
        raise TypeError(f"{name}: aligned must be a bool, got {aligned!r}")
    if not is_int(sampling_ratio):
        raise TypeError(f"{name}: sampling_ratio must be an int, got {sampling_ratio!r}")
    y = roi_api.run_align(x, rois, batch, _OPSET, {
        "mode": "avg", "output_height": height, "output_width": width,
        "sampling_ratio": max(int(sampling_ratio), 0), "spatial_scale": spatial_scale,
        "coordinate_transformation_mode": "half_pixel" if aligned else "output_half_pixel"},
        scale_as_float32=False)
    return cast(_In, give(y))


def roi_pool(input: _In, boxes: Any, output_size: Any, spatial_scale: float = 1.0) -> _In:
    """torchvision.ops.roi_pool on a NumPy or CuPy array or a PyTorch tensor.

    Each box's corners, scaled and rounded half away from zero, span whole pixels split into
    (output_size) bins; each output is the max of its bin, 0 for an empty one: ONNX
    MaxRoiPool-22 with pooled_shape = output_size (a NaN in a bin follows MaxRoiPool's rule,
    not torchvision's, which passes NaN over: docs/pytorch.md).

    Parameters
    ----------
    input : array or tensor
        (N, C, H, W); float16, bfloat16, float32 or float64.
    boxes : array or tensor (K, 5), or list of arrays or tensors (L_i, 4)
    output_size : int or (int, int)
    spatial_scale : float, default 1.0

    Returns
    -------
    array or tensor
        (K, C, output_size[0], output_size[1]), the input's kind, dtype and device.

    Raises
    ------
    ValueError
        Boxes of another shape, an image index outside the batch, a box coordinate that is
        not finite (host arrays), an output size < 1.
    TypeError
        Boxes on another device than the input, an unsupported dtype, a tensor requiring grad.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy import ops
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> ops.roi_pool(x, np.array([[0, 0, 0, 3, 3]], np.float32), 2)[0, 0]
    array([[ 5.,  7.],
           [13., 15.]], dtype=float32)
    """
    name = "roi_pool"
    given, give = tensors.intake(input, name)
    x, _ = execution.select(given, name)
    if isinstance(boxes, (list, tuple)):
        rois, batch = _rois(name, boxes, x)
        xp = execution.cupy_module() if execution.is_cupy_array(x) else np
        full = xp.concatenate([_as(batch, x.dtype, name)[:, None], rois], axis=1)
    else:
        full = _part(boxes, x, name)
    y = roi_api.run_pool(x, full, _OPSET, {"pooled_shape": _size(name, output_size),
                                           "spatial_scale": spatial_scale},
                         scale_as_float32=False)
    return cast(_In, give(y))
