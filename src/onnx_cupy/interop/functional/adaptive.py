"""adaptive_avg_pool1d/2d/3d and adaptive_max_pool1d/2d/3d: the pool family's adaptive pooling
with PyTorch's arguments and checks."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, overload

import numpy as np

from ...core.attributes import is_int
from ...core.execution import ArrayT, Indices, NumPyArray, ScalarT
from ...pool import api as pool_api
from .arguments import _check_bools, _In, _tensors
from .docs import _adaptive_doc
from .prepared import (
    Gradient,
    Prepared,
    _cached,
    _check_grad_output,
    _unbatched,
    _unbatched_gradient,
)

if TYPE_CHECKING:
    from torch import Tensor


def _output_size(name: str, value: Any, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's adaptive output_size: an int, or a sequence of one int per spatial axis (from
    2-D on, None keeps that axis' length), each >= 0."""
    k = len(spatial)
    if is_int(value):
        values: list[Any] = [int(value)] * k
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        values = list(value)
        if k == 1 and len(values) != 1:
            raise ValueError(f"{name}: output_size should contain one int (got {len(values)})")
        if len(values) != k:
            raise ValueError(f"{name}: output_size must be {k}, got {values}")
    else:
        raise TypeError(f"{name}: output_size must be an int or a tuple of ints, got {value!r}")
    if not all(is_int(v) or (v is None and k > 1) or isinstance(v, (bool, np.bool_))
               for v in values):
        raise TypeError(f"{name}: output_size must be a tuple of ints"
                        f"{' (or None)' if k > 1 else ''}, got {value!r}")
    sizes = tuple(n if v is None else int(v) for v, n in zip(values, spatial))
    if any(m < 0 for m in sizes):
        raise ValueError(f"{name}: elements of output_size must be greater than or equal to 0 "
                         f"but received {list(sizes)}")
    return sizes


def _adaptive(name: str, op: str, k: int, input: Any, output_size: Any,
              return_indices: bool = False, saving: bool = False) -> Any:
    """An adaptive pooling; where `saving`, (its result, the maximum's indices its gradient
    reads, None for the average)."""
    return _cached(_prepare_adaptive, input, name, op, k, output_size, return_indices, saving)


def _adaptive_args(x: Any, name: str, k: int, output_size: Any, return_indices: bool
                   ) -> tuple[bool, tuple[int, ...]]:
    """PyTorch's checks of an adaptive pooling: (whether x has no batch axis, the output's
    spatial lengths)."""
    if x.ndim not in (k + 1, k + 2):
        raise ValueError(f"{name}: expected a {k + 1}D (unbatched) or {k + 2}D (batched) "
                         f"input, got shape {tuple(x.shape)}")
    if any(d == 0 for d in x.shape[-k:]):
        raise ValueError(f"{name}: expected input to have non-zero size for non-batch "
                         f"dimensions, got shape {tuple(x.shape)}")
    _check_bools(name, return_indices=return_indices)
    return x.ndim == k + 1, _output_size(name, output_size, tuple(x.shape[-k:]))


def _prepare_adaptive(x: Any, backend: str, name: str, op: str, k: int, output_size: Any,
                      return_indices: bool, saving: bool) -> Prepared:
    unbatched, sizes = _adaptive_args(x, name, k, output_size, return_indices)
    if not saving:
        return _unbatched(lambda xb: pool_api.adaptive_pool(op, xb, sizes, bool(return_indices)),
                          unbatched)
    if op == "AdaptiveAveragePool":
        return _unbatched(lambda xb: (pool_api.adaptive_pool(op, xb, sizes), None), unbatched)

    def call(xb: Any) -> Any:
        y, indices = pool_api.adaptive_pool(op, xb, sizes, True)
        return ((y, indices), indices) if return_indices else (y, indices)
    return _unbatched(call, unbatched)


def _adaptive_gradient(name: str, op: str, k: int, input: Any, grad_output: Any, saved: Any,
                       output_size: Any, return_indices: bool = False) -> Any:
    """The gradient of an adaptive pooling's input: each output's gradient over its window's
    elements (the average) or to the element its index names (the maximum; `saved`: the
    indices within each plane, found again where None)."""
    return _cached(_prepare_adaptive_gradient, input, name, op, k, output_size, return_indices,
                   others=(grad_output, saved))


def _prepare_adaptive_gradient(x: Any, backend: str, name: str, op: str, k: int,
                               output_size: Any, return_indices: bool, dy: Any, saved: Any
                               ) -> Gradient:
    unbatched, sizes = _adaptive_args(x, name, k, output_size, return_indices)
    _check_grad_output(name, dy, x, (*x.shape[:-k], *sizes))
    return _unbatched_gradient(lambda xg, dyg, indices: pool_api.gradient(
        op, xg, dyg, (sizes,), saved=indices), unbatched)


@_tensors
def adaptive_avg_pool1d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool1d", "AdaptiveAveragePool", 1, input,
                               output_size))


@_tensors
def adaptive_avg_pool2d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool2d", "AdaptiveAveragePool", 2, input,
                               output_size))


@_tensors
def adaptive_avg_pool3d(input: _In, output_size: Any) -> _In:
    return cast(_In, _adaptive("adaptive_avg_pool3d", "AdaptiveAveragePool", 3, input,
                               output_size))


class _AdaptiveMaxPooling(Protocol):
    """adaptive_max_pool1d/2d/3d as a type checker sees them: an array in, that array type out
    (with int64 indices, of the array type too); a PyTorch tensor in, tensors out."""

    @overload
    def __call__(self, input: NumPyArray[ScalarT], output_size: Any,
                 return_indices: Literal[True]) -> tuple[NumPyArray[ScalarT], Indices]: ...

    @overload
    def __call__(self, input: ArrayT, output_size: Any, return_indices: Literal[True]
                 ) -> tuple[ArrayT, ArrayT]: ...

    @overload
    def __call__(self, input: Tensor, output_size: Any, return_indices: Literal[True]
                 ) -> tuple[Tensor, Tensor]: ...

    @overload
    def __call__(self, input: _In, output_size: Any, return_indices: Literal[False] = ...
                 ) -> _In: ...

    @overload
    def __call__(self, input: _In, output_size: Any, return_indices: bool = ...) -> Any: ...


def _adaptive_max_pooling(fn: Callable[..., Any]) -> _AdaptiveMaxPooling:
    return cast(_AdaptiveMaxPooling, _tensors(fn))


@_adaptive_max_pooling
def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool1d", "AdaptiveMaxPool", 1, input, output_size,
                     return_indices)


@_adaptive_max_pooling
def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool2d", "AdaptiveMaxPool", 2, input, output_size,
                     return_indices)


@_adaptive_max_pooling
def adaptive_max_pool3d(input: Any, output_size: Any, return_indices: bool = False) -> Any:
    return _adaptive("adaptive_max_pool3d", "AdaptiveMaxPool", 3, input, output_size,
                     return_indices)


adaptive_avg_pool1d.__doc__ = _adaptive_doc(
    "avg", 1, example_x="[[[1.0, 2.0, 4.0, 8.0, 16.0]]]", example_size="2", example_more="",
    example_result="array([[[2.3333333, 9.333333 ]]], dtype=float32)")
adaptive_avg_pool2d.__doc__ = _adaptive_doc(
    "avg", 2, example_x="[[[[1.0, 2.0, 4.0, 8.0, 16.0]]]]", example_size="(None, 2)",
    example_more="", example_result="array([[[[2.3333333, 9.333333 ]]]], dtype=float32)")
adaptive_avg_pool3d.__doc__ = _adaptive_doc(
    "avg", 3, example_x="[[[[[1.0, 2.0, 4.0, 8.0, 16.0]]]]]", example_size="(1, 1, 2)",
    example_more="", example_result="array([[[[[2.3333333, 9.333333 ]]]]], dtype=float32)")
adaptive_max_pool1d.__doc__ = _adaptive_doc(
    "max", 1, example_x="[[[1.0, 5.0, 4.0, 8.0, 3.0]]]", example_size="2",
    example_more=", return_indices=True",
    example_result="(array([[[5., 8.]]], dtype=float32), array([[[1, 3]]]))")
adaptive_max_pool2d.__doc__ = _adaptive_doc(
    "max", 2, example_x="[[[[1.0, 5.0, 4.0, 8.0, 3.0]]]]", example_size="(None, 2)",
    example_more=", return_indices=True",
    example_result="(array([[[[5., 8.]]]], dtype=float32), array([[[[1, 3]]]]))")
adaptive_max_pool3d.__doc__ = _adaptive_doc(
    "max", 3, example_x="[[[[[1.0, 5.0, 4.0, 8.0, 3.0]]]]]", example_size="(1, 1, 2)",
    example_more=", return_indices=True",
    example_result="(array([[[[[5., 8.]]]]], dtype=float32), array([[[[[1, 3]]]]]))")
