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
from .prepared import Prepared, _cached, _unbatched

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
              return_indices: bool = False) -> Any:
    return _cached(_prepare_adaptive, input, name, op, k, output_size, return_indices)


def _prepare_adaptive(x: Any, backend: str, name: str, op: str, k: int, output_size: Any,
                      return_indices: bool) -> Prepared:
    if x.ndim not in (k + 1, k + 2):
        raise ValueError(f"{name}: expected a {k + 1}D (unbatched) or {k + 2}D (batched) "
                         f"input, got shape {tuple(x.shape)}")
    if any(d == 0 for d in x.shape[-k:]):
        raise ValueError(f"{name}: expected input to have non-zero size for non-batch "
                         f"dimensions, got shape {tuple(x.shape)}")
    _check_bools(name, return_indices=return_indices)
    unbatched = x.ndim == k + 1
    sizes = _output_size(name, output_size, tuple(x.shape[-k:]))
    return _unbatched(lambda xb: pool_api.adaptive_pool(op, xb, sizes, bool(return_indices)),
                      unbatched)


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
