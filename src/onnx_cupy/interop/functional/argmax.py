"""one_hot_argmax: PyTorch's one-hot argmax idiom as ONNX Hardmax-13."""
from __future__ import annotations

from typing import cast

from ...core.attributes import is_int
from ...hardmax.api import hardmax
from .arguments import _array, _In, _tensors


@_tensors
def one_hot_argmax(input: _In, dim: int = -1) -> _In:
    """PyTorch's one-hot argmax idiom on a NumPy or CuPy array or a PyTorch tensor: the
    result of `torch.zeros_like(x).scatter_(dim, x.argmax(dim=dim, keepdim=True), 1)`.

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
