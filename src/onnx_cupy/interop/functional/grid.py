"""grid_sample and affine_grid: ONNX GridSample-22 and AffineGrid-20 with PyTorch's arguments,
checks and coordinate rounding."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ...core.attributes import is_int
from ...grid import api as grid_api
from ...grid import plan as grid_plan
from .. import tensors
from .arguments import _GRID_OPSET, _array, _check_bools, _In, _tensors
from .prepared import Prepared, _cached

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
    fma(g + 1, n / 2, -0.5), rounded once, as its vectorized kernel); a NaN coordinate samples the
    first pixel under border and reflection and gives 0 (nearest) or NaN (bilinear, bicubic) under
    zeros, as PyTorch's 2-D kernels do.

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
    attrs = {"mode": onnx_mode, "padding_mode": padding_mode,
             "align_corners": int(bool(align_corners))}
    return lambda xb, gb: grid_api.run_sample(xb, gb, _GRID_OPSET, attrs,
                                              pad_before_rounding=True, fused_unnormalize=True)


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
