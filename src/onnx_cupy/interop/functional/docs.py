"""The docstring templates that the pooling functions share, one per function family (k, the
spatial rank, and the examples filled in where each function is defined)."""
from __future__ import annotations

_WINDOW_DOC = """    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}.
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    padding : int or sequence of int, default 0
        Implicit {pad} at both ends, at most half the kernel size."""


_RETURNS_DOC = """    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        Input's dtype, on its device.

    Raises
    ------"""


def _window_doc(k: int, pad: str) -> str:
    """The window parameters of a PyTorch-style pooling docstring for k spatial axes."""
    shape = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)",
             3: "(N, C, D, H, W) or (C, D, H, W)"}[k]
    return _WINDOW_DOC.format(shape=shape, pad=pad)



_AVG_DOC = """PyTorch's `torch.nn.functional.avg_pool{k}d` on a NumPy or CuPy array or a PyTorch
    tensor.

    Runs ONNX AveragePool with kernel_shape = kernel_size, strides = stride (default
    kernel_size), pads = padding at both ends, ceil_mode and count_include_pad as given (what
    PyTorch's ONNX exporter writes); the two agree everywhere, including ceil_mode's last window
    (dropped where it would start in the right padding) and count_include_pad's divisor (pads
    count, a ceil_mode overhang past them does not).{override}

    Parameters
    ----------
{window}
    ceil_mode : bool, default False
    count_include_pad : bool, default True{divisor}

{returns}
    ValueError
        Where PyTorch raises: kernel_size, stride or padding of the wrong length; kernel or
        stride <= 0; padding above half the kernel; an output length < 1;{zero_override} a
        wrong input rank.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.arange(1.0, 6.0, dtype=np.float32).reshape({example_shape})
    >>> F.avg_pool{k}d(x, {example_kernel}, ceil_mode=True)
    {example_result}
    """
_DIVISOR_DOC = """
    divisor_override : int, optional
        Divide each window's sum by this instead of the window's size."""



_LP_DOC = """PyTorch's `torch.nn.functional.lp_pool{k}d` on a NumPy or CuPy array or a PyTorch
    tensor.

    PyTorch computes `avg_pool{k}d(input ** norm_type, kernel_size, stride, 0, ceil_mode) *
    prod(kernel_size)` raised to `1 / norm_type`, and so does this (ONNX AveragePool with
    count_include_pad=1), quirks included: `input ** norm_type` takes no absolute value (a
    negative input with an odd or fractional norm_type can give NaN, where ONNX LpPool sums
    |x|^p), and with ceil_mode a window overhanging the input is averaged over its real elements
    and scaled up to the full kernel size (ONNX LpPool sums the real elements only). For inputs
    >= 0 without an overhang the result equals ONNX LpPool with p = norm_type.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}.
    norm_type : int or float
        The power p.
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    ceil_mode : bool, default False

{returns}
    ValueError
        As avg_pool{k}d (kernel_size, stride, output length, input rank).
    TypeError
        norm_type not a number.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.lp_pool{k}d(x, 2, {example_kernel})
    {example_result}
    """



_MAX_DOC = """PyTorch's `torch.nn.functional.max_pool{k}d` on a NumPy or CuPy array or a PyTorch
    tensor.

    Runs ONNX MaxPool with kernel_shape = kernel_size, strides = stride (default kernel_size),
    pads = padding at both ends, dilations = dilation and ceil_mode as given (what PyTorch's
    exporter writes); the two agree on the windows (ceil_mode's last window dropped where it
    would start in the right padding), on ties (the first wins) and on NaN (it propagates, the
    last NaN's index). With return_indices, the indices are PyTorch's: flattened over the spatial
    dims of each (n, c) plane (ONNX's Indices also count the planes before it).

    Parameters
    ----------
{window}
    dilation : int or sequence of int, default 1
    ceil_mode : bool, default False
    return_indices : bool, default False

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor, or (output, indices)
        Input's dtype, on its device; indices int64.

    Raises
    ------
    ValueError
        Where PyTorch raises: kernel_size, stride, padding or dilation of the wrong length;
        kernel, stride or dilation <= 0; padding above half the kernel; an output length < 1; a
        wrong input rank.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.max_pool{k}d(x, {example_kernel}, ceil_mode=True, return_indices=True)
    {example_result}
    """



_ADAPTIVE_DOC = """PyTorch's `torch.nn.functional.adaptive_{kind}_pool{k}d` on a NumPy or CuPy
    array or a PyTorch tensor.

    Output o is the {what} over its window: along a spatial axis of input length n and output
    length m, [floor(o * n / m), ceil((o + 1) * n / m)).{rule}

    ONNX has no adaptive pooling: an exported model expresses it where the lengths divide
    (docs/pytorch.md); this runs the pool family's own kernel (or its NumPy path).

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}, float16, bfloat16, float32 or float64; spatial lengths >= 1.
    output_size : int or sequence of int
        The output's spatial lengths (>= 0; {none}).{indices}

    Returns
    -------
    {returns}

    Raises
    ------
    ValueError
        Where PyTorch raises: a wrong input rank, an empty spatial axis, an output_size of the
        wrong length or below 0.
    TypeError
        An output_size that is no int or sequence of ints; an unsupported dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> F.adaptive_{kind}_pool{k}d(x, {example_size}{example_more})
    {example_result}
    """


def _adaptive_doc(kind: str, k: int, **parts: str) -> str:
    shape = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)",
             3: "(N, C, D, H, W) or (C, D, H, W)"}[k]
    maximum = kind == "max"
    return _ADAPTIVE_DOC.format(
        kind=kind, k=k, shape=shape,
        what="maximum" if maximum else "mean",
        rule=("\n    The first of equal values wins; a NaN propagates (the last NaN, with its "
              "index)." if maximum else ""),
        none="None keeps an axis' length" if k > 1 else "one int",
        indices="""
    return_indices : bool, default False
        Also return the maximum's index within each (n, c) plane (row-major over the spatial
        axes, PyTorch's convention), int64.""" if maximum else "",
        returns=("numpy.ndarray, cupy.ndarray or torch.Tensor"
                 + (", or (output, indices)" if maximum else "")
                 + "\n        Input's dtype, on its device"
                 + ("; indices int64." if maximum else ".")), **parts)



_UNPOOL_DOC = """PyTorch's `torch.nn.functional.max_unpool{k}d` on a NumPy or CuPy array or a
    PyTorch tensor.

    Y = 0, then Y[n, c][indices[n, c, e]] = input[n, c, e] within each (n, c) plane: PyTorch's
    indices (max_pool{k}d's with return_indices) count the output's spatial positions of their
    plane; where several name one position the last in row-major order wins. The output length
    per axis is (n - 1) * stride + kernel_size - 2 * padding, or output_size (strictly between
    that minus and plus the stride). Runs ONNX MaxUnpool-22's plan with kernel_shape =
    kernel_size, strides = stride, pads = padding at both ends and output_shape = (N, C,
    *output_size), its indices read per plane of the output, as PyTorch reads them (the kernels
    add each plane's start, (n * C + c) * the plane's size; ONNX's node tests read them in the
    unpooled shape instead; see docs/pytorch.md).

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        {shape}; float16, bfloat16 (ml_dtypes on NumPy), float32 or float64.
    indices : numpy.ndarray, cupy.ndarray or torch.Tensor
        int64, input's shape and array kind, each in [0, the plane's output size).
    kernel_size : int or sequence of int
    stride : int or sequence of int, optional
        Default: kernel_size.
    padding : int or sequence of int, default 0
    output_size : sequence of int, optional
        {k} lengths, or {k2} with N and C first (ignored).

{returns}
    ValueError
        Where PyTorch raises: kernel_size, stride or padding of the wrong length; an
        output_size of the wrong length or outside its range; a negative output length; a
        wrong input rank or an empty non-batch dimension; indices of another shape; on NumPy
        arrays an index outside its plane ('Found an invalid max index'; the GPU path, which
        would have to synchronize to check, skips it). Also a stride <= 0 (PyTorch's
        max_unpool3d rejects it, its 1-D and 2-D forms take it).
    TypeError
        Indices not int64; an unsupported dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.array({example_x}, dtype=np.float32)
    >>> y, i = F.max_pool{k}d(x, {example_kernel}, return_indices=True)
    >>> F.max_unpool{k}d(y, i, {example_kernel})
    {example_result}
    """
