"""The public MaxUnpool function: validate and plan on the host (plan.py), then run the plan on
the path the input picks: NumPy (numpy.py) or the CUDA kernels on the GPU or the CPU emulator
(kernel.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import arrays, kernel_call
from ..core.execution import ArrayT, NDArray
from . import kernel, plan
from . import numpy as numpy_path
from .plan import OP


def max_unpool(X: ArrayT, I: NDArray, output_shape: Any = None, *,
               kernel_shape: Any = None, pads: Any = None, strides: Any = None,
               opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    """ONNX MaxUnpool (versions 9, 11, 22) on a NumPy or CuPy array: MaxPool's partial inverse.

    Y = 0, then Y[unravel(I[e], U)] = X[e] for every element e of X, where U = (N, C, U1, ...,
    Uk) is the unpooled shape, Ui = (Di - 1) * strides_i - (pads_begin_i + pads_end_i) +
    kernel_shape_i (MaxPool's output length solved for its input), and I holds MaxPool's
    Indices: flat row-major indices into U. Where several elements of X name one position, the
    last of them in X's row-major order wins (as onnxruntime).

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        (N, C, D1, ..., Dk), 1 <= k <= 8; float16, float32, float64, and bfloat16 (ml_dtypes
        on NumPy) from opset 22.
    I : numpy.ndarray or cupy.ndarray
        int64 indices of X's shape and array type, in [0, prod(U)).
    output_shape : array or sequence of int, optional
        The output shape (read on the host): X's N and C, and on every spatial axis at least
        U's length; U's block then sits at the start of each axis, zeros after it (as ONNX's
        node test and onnx.reference; onnxruntime reads the indices in output_shape instead).
        Omitted: U.
    kernel_shape : sequence of int
        Window size per spatial axis (required), >= 1.
    pads : sequence of int, optional
        [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (default 0); negative pads enlarge U.
    strides : sequence of int, optional
        Step per spatial axis, >= 1 (default 1).
    opset : int, default 22
        Picks the version in force: MaxUnpool-9, -11 (the same rules) or -22 (bfloat16 too).
    out : array, optional
        Written instead of a new array: C-contiguous, Y's shape and X's dtype, on X's device,
        apart from X and I.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        Y: X's dtype, on X's device, of shape U or `output_shape`.

    Raises
    ------
    ValueError
        An attribute of the wrong length or out of range, a negative unpooled length, I of
        another shape than X, an output_shape of the wrong length, other N or C, or shorter
        than U; on NumPy arrays an index outside [0, prod(U)) (the GPU path, which would have to
        synchronize to check, skips such an index).
    TypeError
        An unsupported dtype, I not int64 or of another array type than X.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[[5.0, 6.0], [7.0, 8.0]]]], dtype=np.float32)
    >>> i = np.array([[[[5, 7], [13, 15]]]])
    >>> oc.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2])[0, 0]
    array([[0., 0., 0., 0.],
           [0., 5., 0., 6.],
           [0., 0., 0., 0.],
           [0., 7., 0., 8.]], dtype=float32)
    """
    y: ArrayT = CALL(X, I, parts=(opset, "unpooled", {
        "kernel_shape": kernel_shape, "pads": pads, "strides": strides}),
        vectors=(output_shape,), out=out)
    return y   # the array type of X


def run(X: Any, I: Any, output_shape: Any, opset: int, attrs: dict[str, Any], *,
        index_space: str = "unpooled", checked: bool = True, out: Any = None) -> Any:
    """The MaxUnpool family's one entry point (the ONNX function, the node runner, the PyTorch
    layer and Dask all come here): validated and planned on the host on the first call of its
    key (onnx_cupy.core.kernel_call), then run on the path the input picks, the indices of host
    arrays checked at every call (where `checked`; False for a caller that checks them itself:
    every index of a host array must then lie in [0, index_total)). `index_space`: what I's
    flat indices address, "unpooled" (ONNX's U) or "plane" (PyTorch's: one (n, c) plane of Y;
    plan.py)."""
    call = CALL if checked else UNCHECKED
    return call(X, I, parts=(opset, index_space, attrs), vectors=(output_shape,), out=out)


def _plan(x: Any, indices: Any, opset: int, index_space: str, attrs: dict[str, Any],
          output_shape: Any) -> plan.UnpoolPlan:
    return plan.make(tuple(x.shape), x.dtype, tuple(indices.shape), indices.dtype, output_shape,
                     opset, index_space=index_space, **attrs)


# X and I; the kernels walk C-contiguous arrays. Host indices are checked at every call, as
# onnxruntime checks them (the GPU path, which would have to synchronize, skips them).
_INPUTS = (kernel_call.Input("X", contiguous=True), kernel_call.Input("I", contiguous=True))
CALL = kernel_call.KernelCall(OP, _INPUTS, _plan, numpy_path.prepare, kernel.prepare,
                              check=lambda pl, x, indices: check_indices(pl, indices))
UNCHECKED = kernel_call.KernelCall(OP, _INPUTS, _plan, numpy_path.prepare,
                                   kernel.prepare)


def gradient(X: Any, I: Any, dY: Any, output_shape: Any, opset: int, attrs: dict[str, Any], *,
             index_space: str = "unpooled", out: Any = None) -> Any:
    """MaxUnpool's gradient entry point (onnx_cupy.vjp and the PyTorch-style functions'
    autograd come here): dX[e] = dY at the position I[e] names in Y, for every element e of X
    (PyTorch's max_unpool gradient: an element whose position a later one overwrote in Y
    receives that position's cotangent too); an index outside [0, prod(U)) is an error on
    host arrays, as in the forward (the GPU path gives such an element 0)."""
    return GRADIENT(X, I, dY, parts=(opset, index_space, attrs), vectors=(output_shape,),
                    out=out)


def _gradient_plan(x: Any, indices: Any, dy: Any, opset: int, index_space: str,
                   attrs: dict[str, Any], output_shape: Any) -> plan.UnpoolPlan:
    pl = _plan(x, indices, opset, index_space, attrs, output_shape)
    arrays.check_like(f"{OP} gradient", "dY", dy, pl.out_shape, x.dtype, "Y's")
    return pl


GRADIENT = kernel_call.KernelCall(
    f"{OP} gradient", (*_INPUTS, kernel_call.Input("dY", contiguous=True)), _gradient_plan,
    numpy_path.prepare_gradient, kernel.prepare_gradient,
    output=lambda pl, x, *others: (pl.in_shape, x.dtype),
    check=lambda pl, x, indices, dy: check_indices(pl, indices))


def check_indices(pl: plan.UnpoolPlan, indices: np.ndarray) -> None:
    """ValueError for an index of the host array `indices` outside [0, pl.index_total), naming
    the first one (as onnxruntime's check); per plane, none where the output has no elements
    (nothing reads them, as PyTorch)."""
    if not indices.size or (pl.per_plane and not pl.index_total):
        return
    if indices.min() >= 0 and indices.max() < pl.index_total:
        return
    bad = (indices < 0) | (indices >= pl.index_total)
    where = np.unravel_index(int(np.argmax(bad)), indices.shape)
    within = " within each (n, c) plane" if pl.per_plane else ""
    raise ValueError(f"{OP}: input 'I' holds {int(indices[where])} at {tuple(map(int, where))}, "
                     f"outside [0, {pl.index_total}): the flat indices of the shape "
                     f"{pl.index_shape} it addresses{within}")
