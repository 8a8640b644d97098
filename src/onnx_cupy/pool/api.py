"""The public AveragePool, LpPool, MaxPool and global pooling functions: validate and plan on the
host (plan.py), then run the plan on the path the input picks: NumPy (numpy.py) or the CUDA kernels
on the GPU or the CPU emulator (kernel.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

import numpy as np

from ..core import kernel_call, opsets
from ..core.execution import ArrayT, Indices, NumPyArray, ScalarT
from . import kernel, kernel_grad, numpy_global, numpy_grad, plan
from . import numpy as numpy_path

_F = TypeVar("_F", bound=Callable[..., Any])


def check_return_indices(op: str, opset: int, return_indices: Any) -> None:
    """TypeError for a return_indices that is not a bool, ValueError for True where the
    version in force has no Indices output."""
    if not isinstance(return_indices, bool):
        raise TypeError(f"{op}: return_indices must be a bool, got {return_indices!r}")
    if return_indices and opsets.version(op, opset) < plan.INDICES_FROM:
        raise ValueError(f"{op}: the Indices output (return_indices=True) is not defined at "
                         f"{opsets.in_force(op, opset)}; it came with {op}-{plan.INDICES_FROM}")


def run(op: str, X: Any, opset: int, attrs: dict[str, Any], *, out: Any = None,
        return_indices: bool = False) -> Any:
    """The pooling family's one entry point (the ONNX functions, the node runner, the PyTorch
    layer and Dask all come here): `op` (AveragePool, LpPool, MaxPool or a global pool) on X
    with the ONNX attributes `attrs`, validated and planned on the host on the first call of
    its key (onnx_cupy.core.kernel_call), then run on the path the input picks, NumPy or the
    CUDA kernels (on the GPU or the CPU emulator). Returns Y, or (Y, Indices) with
    `return_indices` (MaxPool)."""
    parts = (opset, attrs) if return_indices is False else (opset, attrs, return_indices)
    return CALLS[op](X, parts=parts, out=out)


def _window(op: str) -> kernel_call.KernelCall:
    """The call of a windowed pool `op`: planned as (plan, whether MaxPool's Indices are
    returned)."""
    def make(x: Any, opset: int, attrs: dict[str, Any], return_indices: Any = False
             ) -> tuple[plan.PoolPlan, bool]:
        check_return_indices(op, opset, return_indices)
        return plan.make(op, tuple(x.shape), x.dtype, opset, **attrs), return_indices
    return kernel_call.KernelCall(
        op, _X, make,
        lambda request, x: numpy_path.prepare(request[0], np.dtype(x.dtype), request[1]),
        lambda request, device, x: kernel.prepare(request[0], device, x, request[1]),
        output=lambda request, x: (request[0].out_shape, x.dtype))


def _global(op: str) -> kernel_call.KernelCall:
    """The call of a global pool `op`."""
    return kernel_call.KernelCall(
        op, _X,
        lambda x, opset, attrs: plan.make_global(op, opset, tuple(x.shape), np.dtype(x.dtype),
                                                 attrs.get("p")),
        lambda pl, x: numpy_global.prepare_global(pl, np.dtype(x.dtype)),
        kernel.prepare_global,
        walks=kernel.walks_global)


def _adaptive(op: str) -> kernel_call.KernelCall:
    """The call of PyTorch's adaptive pooling `op`, planned as (plan, whether Indices are
    returned)."""
    return kernel_call.KernelCall(
        op, _X,
        lambda x, sizes, return_indices: (plan.make_adaptive(op, tuple(x.shape), x.dtype, sizes),
                                          bool(return_indices)),
        lambda request, x: numpy_path.prepare_adaptive(*request),
        lambda request, device, x: kernel.prepare_adaptive(request[0], device, x, request[1]),
        output=lambda request, x: (request[0].out_shape, x.dtype))


_X = (kernel_call.Input("X"),)
CALLS = {**{op: _window(op) for op in plan.OPS}, **{op: _global(op) for op in plan.GLOBAL_OPS},
         **{op: _adaptive(op) for op in plan.ADAPTIVE_OPS}}


_POOL_DOC = """ONNX {op} (versions {versions}) on a NumPy or CuPy array.

    {formula}

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Input of shape (N, C, D1, ..., Dk), 1 <= k <= 8; {dtypes}
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
    {returns}
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


_FLOATS = """float16, float32, float64, and bfloat16
        (ml_dtypes on NumPy) from opset 22. 16-bit types accumulate in float32; windows of
        more than 2**24 terms in float64 (every dtype, every path)."""


def _pool_doc(**parts: str) -> Callable[[_F], _F]:
    """Give a pooling function the shared docstring, filled with its own parts."""
    def apply(fn: _F) -> _F:
        fn.__doc__ = _POOL_DOC.format(**{"dtypes": _FLOATS,
                                         "returns": "numpy.ndarray or cupy.ndarray", **parts})
        return fn
    return apply


@_pool_doc(
    op="AveragePool", versions="1, 7, 10, 11, 19, 22", ceil_from="10", dilations_from="19",
    at_21="19",
    formula="""Y[n, c, o] = sum over the taps w of window o inside X of X[n, c, w] / count(o), where
    window o along axis i holds positions o_i * s_i - begin_i + j * d_i (0 <= j < k_i) and count(o)
    is the number of its positions inside X (count_include_pad=0) or inside X plus its pads
    (count_include_pad=1; a ceil_mode overhang past the end pad never counts).""",
    own="""count_include_pad : {0, 1}, default 0 (from opset 7)
        Whether pad positions count in the divisor.""",
    example=""">>> import numpy as np, onnx_cupy as oc
    >>> x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    >>> oc.average_pool(x, kernel_shape=[2, 2], strides=[2, 2])[0, 0]
    array([[ 2.5,  4.5],
           [10.5, 12.5]], dtype=float32)""")
def average_pool(X: ArrayT, *, kernel_shape: Any = None, auto_pad: str = "NOTSET",
                 ceil_mode: int = 0, count_include_pad: int = 0, dilations: Any = None,
                 pads: Any = None, strides: Any = None, opset: int = 22,
                 out: ArrayT | None = None) -> ArrayT:
    y: ArrayT = CALLS["AveragePool"](X, parts=(opset, {
        "kernel_shape": kernel_shape, "auto_pad": auto_pad, "ceil_mode": ceil_mode,
        "count_include_pad": count_include_pad, "dilations": dilations, "pads": pads,
        "strides": strides}), out=out)
    return y   # the array type of X


@_pool_doc(
    op="LpPool", versions="1, 2, 11, 18, 22", ceil_from="18", dilations_from="18", at_21="18",
    formula="""Y[n, c, o] = (sum over the taps w of window o inside X of abs(X[n, c, w])^p)^(1/p);
    pads contribute 0. Window o along axis i holds positions o_i * s_i - begin_i + j * d_i
    (0 <= j < k_i).""",
    own="""p : int or float, default 2
        The norm's order, > 0; an integer from opset 2 (LpPool-1 takes any float).""",
    example=""">>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[3.0, 4.0, 0.0, 1.0]]], dtype=np.float32)
    >>> oc.lp_pool(x, kernel_shape=[2], strides=[2], p=2)
    array([[[5., 1.]]], dtype=float32)""")
def lp_pool(X: ArrayT, *, kernel_shape: Any = None, p: float = 2, auto_pad: str = "NOTSET",
            ceil_mode: int = 0, dilations: Any = None, pads: Any = None, strides: Any = None,
            opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    y: ArrayT = CALLS["LpPool"](X, parts=(opset, {
        "kernel_shape": kernel_shape, "auto_pad": auto_pad, "ceil_mode": ceil_mode,
        "dilations": dilations, "pads": pads, "strides": strides, "p": p}), out=out)
    return y   # the array type of X


@overload
def max_pool(X: ArrayT, *, kernel_shape: Any = ..., auto_pad: str = ..., ceil_mode: int = ...,
             dilations: Any = ..., pads: Any = ..., storage_order: int = ..., strides: Any = ...,
             opset: int = ..., out: ArrayT | None = ...,
             return_indices: Literal[False] = ...) -> ArrayT: ...


@overload
def max_pool(X: NumPyArray[ScalarT], *, kernel_shape: Any = ..., auto_pad: str = ...,
             ceil_mode: int = ..., dilations: Any = ..., pads: Any = ..., storage_order: int = ...,
             strides: Any = ..., opset: int = ..., out: NumPyArray[ScalarT] | None = ...,
             return_indices: Literal[True]) -> tuple[NumPyArray[ScalarT], Indices]: ...


@overload   # a CuPy array: Indices are a cupy.ndarray too (of dtype int64)
def max_pool(X: ArrayT, *, kernel_shape: Any = ..., auto_pad: str = ..., ceil_mode: int = ...,
             dilations: Any = ..., pads: Any = ..., storage_order: int = ..., strides: Any = ...,
             opset: int = ..., out: ArrayT | None = ...,
             return_indices: Literal[True]) -> tuple[ArrayT, ArrayT]: ...


@overload
def max_pool(X: ArrayT, *, kernel_shape: Any = ..., auto_pad: str = ..., ceil_mode: int = ...,
             dilations: Any = ..., pads: Any = ..., storage_order: int = ..., strides: Any = ...,
             opset: int = ..., out: ArrayT | None = ...,
             return_indices: bool = ...) -> ArrayT | tuple[ArrayT, Any]: ...


@_pool_doc(
    op="MaxPool", versions="1, 8, 10, 11, 12, 22", ceil_from="10", dilations_from="10",
    at_21="12",
    dtypes="""float16, float32, float64; int8 and uint8 from opset
        12; bfloat16 (ml_dtypes on NumPy) from opset 22.""",
    returns="""numpy.ndarray or cupy.ndarray, or (Y, Indices) with return_indices""",
    formula="""Y[n, c, o] = max over the taps w of window o inside X of X[n, c, w] (pads never
    win), where window o along axis i holds positions o_i * s_i - begin_i + j * d_i (0 <= j < k_i).
    Taps are visited axis 0 outermost, taps ascending: the first of equal maxima wins, a NaN always
    wins (the last NaN of a window: NaN propagates as in PyTorch). A window with no element of X
    gives -inf (an integer dtype's minimum) and index -1. Indices[n, c, o] (int64, opset >= 8) is
    the winner's flat index into X: ((n * C + c) * D1 + p1) * D2 + p2 ... (storage_order=0), or
    (n * C + c) * D1 * ... * Dk + p1 + p2 * D1 + p3 * D1 * D2 ... (storage_order=1).""",
    own="""storage_order : {0, 1}, default 0 (from opset 8)
        Row-major (0) or column-major (1) order of the spatial dims in Indices.
    return_indices : bool, default False
        Also return Indices (MaxPool's second output; from opset 8).""",
    example=""">>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[1.0, 3.0, 2.0, 5.0, 4.0]]], dtype=np.float32)
    >>> y, i = oc.max_pool(x, kernel_shape=[2], strides=[2], ceil_mode=1, return_indices=True)
    >>> y, i
    (array([[[3., 5., 4.]]], dtype=float32), array([[[1, 3, 4]]]))""")
def max_pool(X: ArrayT, *, kernel_shape: Any = None, auto_pad: str = "NOTSET",
             ceil_mode: int = 0, dilations: Any = None, pads: Any = None,
             storage_order: int = 0, strides: Any = None, opset: int = 22,
             out: ArrayT | None = None,
             return_indices: bool = False) -> ArrayT | tuple[ArrayT, Any]:
    result: ArrayT | tuple[ArrayT, Any] = run("MaxPool", X, opset, {
        "kernel_shape": kernel_shape, "auto_pad": auto_pad, "ceil_mode": ceil_mode,
        "dilations": dilations, "pads": pads, "strides": strides,
        "storage_order": storage_order}, out=out, return_indices=return_indices)
    return result   # the array type of X


def _global_pool(op: str, X: ArrayT, opset: int, out: Any, p: Any = None) -> ArrayT:
    y: ArrayT = CALLS[op](X, parts=(opset, {"p": p}), out=out)
    return y   # the array type of X


_GLOBAL_DOC = """ONNX {op} (versions {versions}) on a NumPy or CuPy array: {what} over
    every spatial axis.

    {formula}

    Parameters
    ----------
    X : numpy.ndarray or cupy.ndarray (or a DLPack / __cuda_array_interface__ array)
        Input of shape (N, C, D1, ..., Dk), k >= 1; float16, float32, float64, and bfloat16
        (ml_dtypes on NumPy) from opset 22. Sums add segments of 16 terms in float32 (float64
        for float64) into float64, in the kernel's order on every path (the same bits), and
        round once to X's dtype.
    {own}opset : int
        The ONNX opset the call follows (the version in force decides the rules).
    out : array, optional
        C-contiguous output of the result's shape and dtype, on X's device, not overlapping X.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        (N, C, 1, ..., 1) of X's dtype, on X's device. An empty plane (some Di = 0) gives
        {empty}.

    Raises
    ------
    ValueError
        X of rank < 3{p_error}.
    TypeError
        An unsupported dtype or array type.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.array([[[[1.0, -2.0], [3.0, 2.0]]]], dtype=np.float32)
    >>> oc.{name}(x{example_args})
    {example}
    """


def _global_doc(**parts: str) -> Callable[[_F], _F]:
    def apply(fn: _F) -> _F:
        fn.__doc__ = _GLOBAL_DOC.format(**{"own": "", "p_error": "", **parts})
        return fn
    return apply


@_global_doc(op="GlobalAveragePool", versions="1, 22", what="the mean", name="global_average_pool",
             formula="Y[n, c, 0, ..., 0] = sum over w of X[n, c, w] / (D1 * ... * Dk)",
             empty="NaN (0/0)", example_args="", example="array([[[[1.]]]], dtype=float32)")
def global_average_pool(X: ArrayT, *, opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    return _global_pool("GlobalAveragePool", X, opset, out)


@_global_doc(op="GlobalMaxPool", versions="1, 22", what="the maximum", name="global_max_pool",
             formula="Y[n, c, 0, ..., 0] = max over w of X[n, c, w] (a NaN propagates)",
             empty="-inf", example_args="", example="array([[[[3.]]]], dtype=float32)")
def global_max_pool(X: ArrayT, *, opset: int = 22, out: ArrayT | None = None) -> ArrayT:
    return _global_pool("GlobalMaxPool", X, opset, out)


@_global_doc(op="GlobalLpPool", versions="1, 2, 22", what="the Lp norm", name="global_lp_pool",
             formula="Y[n, c, 0, ..., 0] = (sum over w of abs(X[n, c, w])^p)^(1/p)",
             own="""p : int or float, default 2
        The norm's order, > 0; an integer from opset 2 (GlobalLpPool-1 takes any float).
    """, p_error="; p <= 0, or not an integer from opset 2", empty="0",
             example_args=", p=1", example="array([[[[8.]]]], dtype=float32)")
def global_lp_pool(X: ArrayT, *, p: float = 2, opset: int = 22,
                   out: ArrayT | None = None) -> ArrayT:
    return _global_pool("GlobalLpPool", X, opset, out, p)


def adaptive_pool(op: str, X: ArrayT, sizes: Any, return_indices: bool = False) -> Any:
    """PyTorch's adaptive pooling (no ONNX operator has it), `op` one of plan.ADAPTIVE_OPS:
    the family's one entry point for it (onnx_cupy.nn.functional's adaptive_avg_pool*d,
    adaptive_max_pool*d and interpolate(mode="area") call it).

    Y[n, c, o] reduces the window W(o) with W(o)_i = [floor(o_i D_i / O_i),
    ceil((o_i + 1) D_i / O_i)) along each spatial axis i (input length D_i, output length
    O_i = sizes[i]): AdaptiveAveragePool the mean over the window; AdaptiveMaxPool the maximum,
    as MaxPool takes it (the first of equal values, a NaN propagates: the last NaN), and with
    `return_indices` also (Y, Indices), Indices[n, c, o] (int64) the winner's index within its
    (n, c) plane, row-major over the spatial axes.

    X is (N, C, D1, ...) with 1-3 spatial axes of length >= 1, float16, bfloat16, float32 or
    float64 (16-bit types accumulate in float32, windows of more than 2**24 elements in
    float64); sizes has one int >= 0 per spatial axis.
    ValueError for another rank, an empty spatial axis or bad sizes; TypeError for another dtype.
    """
    return CALLS[op](X, parts=(sizes, int(bool(return_indices))))


def gradient(op: str, X: Any, dY: Any, parts: tuple[Any, ...], *, saved: Any = None,
             out: Any = None) -> Any:
    """The pooling family's gradient entry point (onnx_cupy.vjp and the PyTorch-style
    functions' autograd come here): dX, the vector-Jacobian product of `op` at X with the
    cotangent dY (the formulas of pool/numpy_grad.py, the same bits on every path but for
    LpPool's powers with p other than 1 and 2, each path's `pow`). `parts`:
    the forward's (opset, attributes), an AveragePool's (opset, attributes, divisor_override)
    with PyTorch's divisor, an adaptive pool's (sizes,). `saved`: the forward's Y (LpPool,
    GlobalLpPool) or Indices (MaxPool's, an adaptive maximum's within each plane), computed
    from X where None."""
    return GRADIENTS[op](X, dY, saved, parts=parts, out=out)


def _gradient(op: str) -> kernel_call.KernelCall:
    """The declared gradient of `op`: inputs X, dY and the saved output, planned as
    plan.GradientPlan."""
    def make(x: Any, dy: Any, saved: Any, *parts: Any) -> plan.GradientPlan:
        forward: plan.PoolPlan | plan.GlobalPlan | plan.AdaptivePlan
        if op in plan.ADAPTIVE_OPS:
            forward = plan.make_adaptive(op, tuple(x.shape), x.dtype, parts[0])
            return plan.gradient(op, forward, x.dtype, dy, saved)
        opset, attrs, *override = parts
        if op in plan.GLOBAL_OPS:
            forward = plan.make_global(op, opset, tuple(x.shape), x.dtype, attrs.get("p"))
        else:
            forward = plan.make(op, tuple(x.shape), x.dtype, opset, **attrs)
        return plan.gradient(op, forward, x.dtype, dy, saved, *override)
    return kernel_call.KernelCall(
        f"{op} gradient",
        (kernel_call.Input("X"), kernel_call.Input("dY", contiguous=True),
         kernel_call.Input(plan.saved_name(op), optional=True, contiguous=True)),
        make, lambda gp, x, dy, saved: numpy_grad.prepare(gp, np.dtype(x.dtype)),
        kernel_grad.prepare, output=lambda gp, x, *rest: (tuple(x.shape), x.dtype),
        walks=kernel_grad.walks)


GRADIENTS = {op: _gradient(op) for op in (*plan.OPS, *plan.GLOBAL_OPS, *plan.ADAPTIVE_OPS)}
