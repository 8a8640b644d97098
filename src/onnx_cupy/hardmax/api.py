"""The public Hardmax function: validate and plan on the host (plan.py), then run the plan on the
path the input picks: NumPy (numpy.py) or the CUDA kernels on the GPU or the CPU emulator
(kernel.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import kernel_call
from ..core.execution import ArrayT
from . import kernel, plan
from . import numpy as numpy_path


def hardmax(X: ArrayT, *, axis: int | None = None, opset: int = 13,
            out: ArrayT | None = None) -> ArrayT:
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
    y: ArrayT = CALL(X, parts=(opset, axis), out=out)
    return y   # the array type of X


def run(X: Any, opset: int, axis: Any, *, out: Any = None) -> Any:
    """The Hardmax family's one entry point (the ONNX function, the node runner, the PyTorch
    layer and Dask all come here): validated and planned on the host on the first call of its
    key (onnx_cupy.core.kernel_call), then run on the path the input picks, NumPy or the CUDA
    kernels (on the GPU or the CPU emulator)."""
    return CALL(X, parts=(opset, axis), out=out)


CALL = kernel_call.KernelCall(
    plan.OP, (kernel_call.Input("X"),),
    lambda x, opset, axis: plan.make(tuple(x.shape), x.dtype, axis, opset),
    lambda pl, x: numpy_path.prepare(pl, np.dtype(x.dtype)), kernel.prepare,
    output=lambda pl, x: (pl.shape, x.dtype), walks=kernel.walks)
