"""max_unpool1d/2d/3d: ONNX MaxUnpool-22's plan with PyTorch's output lengths, indices and
checks."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from ...core import execution
from ...core.attributes import EXTENT_LIMIT, is_int
from ...unpool import api as unpool_api
from .. import tensors
from .arguments import _POOL_OPSET, _array, _batched, _In, _strides, _tensors, _tuple
from .docs import _RETURNS_DOC, _UNPOOL_DOC
from .prepared import _cached, _check_grad_output


def _unpool_size(name: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                 stride: tuple[int, ...], padding: tuple[int, ...], output_size: Any
                 ) -> list[int]:
    """PyTorch's output lengths: default (n - 1) * stride + kernel - 2 * padding; an
    output_size (k lengths, or k + 2 with N and C, which are dropped) must lie strictly between
    default - stride and default + stride; every length >= 0."""
    k = len(kernel)
    default = [(n - 1) * s + kk - 2 * p for n, kk, s, p in zip(shape[-k:], kernel, stride,
                                                                padding)]
    sizes = default
    if output_size is not None:
        if not isinstance(output_size, Sequence) or isinstance(output_size, (str, bytes)) or \
                not all(map(is_int, output_size)):
            raise TypeError(f"{name}: output_size must be a sequence of ints, got "
                            f"{output_size!r}")
        sizes = [int(v) for v in output_size]
        if len(sizes) == k + 2:
            sizes = sizes[2:]
        if len(sizes) != k:
            raise ValueError(f"{name}: output_size should be a sequence containing {k} or "
                             f"{k + 2} elements, but it has a length of '{len(output_size)}'")
        for d, (m, n, s) in enumerate(zip(sizes, default, stride)):
            if not n - s < m < n + s:
                raise ValueError(f'{name}: invalid output_size "{sizes}" (dim {d} must be '
                                 f"between {n - s} and {n + s})")
    for d, m in enumerate(sizes):
        if m < 0:
            raise ValueError(f"{name}: max_unpooling: output_size must contain non-negative "
                             f"spatial dimensions, but got output_size[{d}]={m}")
    return sizes


def _indices(name: str, indices: Any) -> Any:
    """max_unpool's indices (a tensor's too) as an array."""
    try:
        return _array(tensors.intake(indices, name)[0], name)
    except TypeError as exc:   # as PyTorch: argument 'indices' must be a tensor
        raise TypeError(f"{name}: argument 'indices' must be an array like input, got "
                        f"{type(indices).__module__}.{type(indices).__name__}") from exc


def _max_unpool(name: str, k: int, input: Any, indices: Any, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any) -> Any:
    return _cached(_prepare_max_unpool, input, name, k, kernel_size, stride, padding,
                   output_size, others=(_indices(name, indices),))


def _max_unpool_args(x: Any, name: str, k: int, kernel_size: Any, stride: Any, padding: Any,
                     output_size: Any, i: Any
                     ) -> tuple[Any, bool, list[int], dict[str, Any], list[int]]:
    """PyTorch's checks of a max unpooling: (x with a batch axis, whether it had none,
    MaxUnpool's output_shape and attributes, the output's spatial lengths)."""
    if execution.is_cupy_array(i) != execution.is_cupy_array(x):
        raise TypeError(f"{name}: indices must be a {type(x).__module__}.{type(x).__name__} "
                        f"like input, got {type(i).__module__}.{type(i).__name__}")
    if i.shape != x.shape:
        raise ValueError(f"{name}: Expected shape of indices to be same as that of the input "
                         f"tensor ({list(x.shape)}) but got indices tensor with shape: "
                         f"{list(i.shape)}")
    if i.dtype != np.int64:
        raise TypeError(f"{name}: elements in indices should be type int64, got {i.dtype}")
    x, unbatched = _batched(x, name, k, channels_may_be_empty=True)
    kernel = _tuple(name, "kernel_size", kernel_size, k)
    strides = _strides(name, stride, kernel)
    pads = _tuple(name, "padding", padding, k)
    if any(n <= 0 for n in kernel):
        raise ValueError(f"{name}: kernel_size must be greater than zero, but got kernel_size: "
                         f"{list(kernel)}")
    if any(s <= 0 for s in strides):
        raise ValueError(f"{name}: strides should be greater than zero, but got stride: "
                         f"{list(strides)}")
    sizes = _unpool_size(name, tuple(x.shape), kernel, strides, pads, output_size)
    if any(abs(m) > EXTENT_LIMIT for m in sizes):
        raise ValueError(f"{name}: kernel_size {list(kernel)}, stride {list(strides)} and "
                         f"padding {list(pads)} give the output lengths {list(sizes)}, past "
                         f"2**62, the most the kernels' 64-bit offsets hold")
    output_shape = [*x.shape[:2], *sizes]
    attrs = {"kernel_shape": list(kernel), "strides": list(strides), "pads": list(pads) * 2}
    return x, unbatched, output_shape, attrs, sizes


def _prepare_max_unpool(x: Any, backend: str, name: str, k: int, kernel_size: Any, stride: Any,
                        padding: Any, output_size: Any, i: Any) -> Callable[[Any, Any], Any]:
    x, unbatched, output_shape, attrs, sizes = _max_unpool_args(
        x, name, k, kernel_size, stride, padding, output_size, i)
    plane = math.prod(sizes)
    volumes = "x".join(map(str, sizes if k > 1 else [*sizes, 1]))
    # PyTorch returns an empty output without reading the indices; the GPU skips invalid ones
    checked = backend != "cupy" and plane > 0

    def call(xb: Any, ib: Any) -> Any:
        if unbatched:
            xb, ib = xb[None], ib[None]
        if checked and ib.size and (ib.min() < 0 or ib.max() >= plane):
            bad = int(ib.reshape(-1)[np.argmax((ib < 0) | (ib >= plane))])
            raise ValueError(f"{name}: Found an invalid max index: {bad} (output volumes are "
                             f"of size {volumes})")
        y = unpool_api.run(xb, ib, output_shape, _POOL_OPSET, attrs, index_space="plane",
                           checked=False)   # PyTorch's indices and error, checked above
        return y[0] if unbatched else y
    return call


def _max_unpool_gradient(name: str, k: int, input: Any, grad_output: Any, saved: Any,
                         indices: Any, kernel_size: Any, stride: Any, padding: Any,
                         output_size: Any) -> Any:
    """The gradient of max_unpool{k}d's input: each element's gradient is the output's
    gradient where its index puts it (a gather; an index that repeats gives each element
    that position's gradient, as PyTorch's)."""
    return _cached(_prepare_max_unpool_gradient, input, name, k, kernel_size, stride, padding,
                   output_size, others=(_indices(name, indices), grad_output))


def _prepare_max_unpool_gradient(x: Any, backend: str, name: str, k: int, kernel_size: Any,
                                 stride: Any, padding: Any, output_size: Any, i: Any, dy: Any
                                 ) -> Callable[[Any, Any, Any], Any]:
    xb, unbatched, output_shape, attrs, _ = _max_unpool_args(
        x, name, k, kernel_size, stride, padding, output_size, i)
    _check_grad_output(name, dy, x, tuple(output_shape[unbatched:]))

    def gradient(xg: Any, ig: Any, dyg: Any) -> Any:
        if unbatched:
            xg, ig, dyg = xg[None], ig[None], dyg[None]
        dx = unpool_api.gradient(xg, ig, dyg, output_shape, _POOL_OPSET, attrs,
                                 index_space="plane")
        return dx[0] if unbatched else dx
    return gradient


@_tensors
def max_unpool1d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride,
                                 padding, output_size))


@_tensors
def max_unpool2d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride,
                                 padding, output_size))


@_tensors
def max_unpool3d(input: _In, indices: Any, kernel_size: Any, stride: Any = None,
                 padding: Any = 0, output_size: Any = None) -> _In:
    return cast(_In, _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride,
                                 padding, output_size))


max_unpool1d.__doc__ = _UNPOOL_DOC.format(
    k=1, returns=_RETURNS_DOC, k2=3, shape="(N, C, L) or (C, L)",
    example_x="[[[1.0, 3.0, 2.0, 5.0]]]", example_kernel="2",
    example_result="array([[[0., 3., 0., 5.]]], dtype=float32)")
max_unpool2d.__doc__ = _UNPOOL_DOC.format(
    k=2, returns=_RETURNS_DOC, k2=4, shape="(N, C, H, W) or (C, H, W)",
    example_x="[[[[1.0, 3.0, 2.0, 5.0]]]]", example_kernel="(1, 2)",
    example_result="array([[[[0., 3., 0., 5.]]]], dtype=float32)")
max_unpool3d.__doc__ = _UNPOOL_DOC.format(
    k=3, returns=_RETURNS_DOC, k2=5, shape="(N, C, D, H, W) or (C, D, H, W)",
    example_x="[[[[[1.0, 3.0, 2.0, 5.0]]]]]", example_kernel="(1, 1, 2)",
    example_result="array([[[[[0., 3., 0., 5.]]]]], dtype=float32)")
