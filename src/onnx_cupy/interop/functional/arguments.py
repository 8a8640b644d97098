"""The arguments of the PyTorch-style functions as PyTorch parses and checks them (ints or
tuples of k ints, bools, strides, pool windows, (C, *spatial) inputs), PyTorch tensors in and
out, and the ONNX opsets the functions run at."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

import numpy as np

from ...core import execution
from ...core.attributes import is_int
from ...core.execution import NDArray
from ...pool import plan as pool_plan
from .. import tensors

if TYPE_CHECKING:
    from torch import Tensor


# The input's kind, which the result keeps: a NumPy or CuPy array, or a PyTorch tensor
_In = TypeVar("_In", bound="NDArray | Tensor")
_P = ParamSpec("_P")
_R = TypeVar("_R")


# the functions with a gradient by name (gradients.Differentiable), entered by gradients.py
GRADIENTS: dict[str, Any] = {}


def _tensors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A PyTorch-style function that also takes a PyTorch tensor as its `input` and then gives
    tensors (zero-copy, interop/tensors.py); a tensor that requires grad, with grad mode on,
    goes through the autograd Function (interop/autograd.py), which records the function's
    gradient or raises a TypeError where it has none."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not args and "input" not in kwargs:
            return fn(*args, **kwargs)   # fn names what is missing
        given = args[0] if args else kwargs.pop("input")
        if tensors.records_graph(given):
            entry = GRADIENTS.get(fn.__name__)
            if entry is None:
                tensors.intake(given, fn.__name__)   # raises: the function has no gradient
                raise AssertionError(fn.__name__)
            from .. import autograd  # the bridge, loaded where a graph is recorded
            return autograd.apply(entry, given, args[1:], kwargs)
        x, give = tensors.intake(given, fn.__name__)
        return give(fn(x, *args[1:], **kwargs))
    return cast(Callable[_P, _R], call)


_POOL_OPSET = 22    # the newest AveragePool, MaxPool and MaxUnpool
_RESIZE_OPSET = 19  # the newest Resize
_GRID_OPSET = 22    # the newest GridSample (AffineGrid-20 in force)
_DIMS = {1: "one int", 2: "a tuple of two ints", 3: "a tuple of three ints"}


def _xp(x: Any) -> Any:
    """The array module of `x` (cupy for CuPy arrays, numpy otherwise)."""
    return execution.cupy_module() if execution.is_cupy_array(x) else np


def _on_device(x: Any) -> contextlib.AbstractContextManager[Any]:
    """Inside the block, a CuPy `x`'s device is the current one (nothing for a NumPy `x`)."""
    return x.device if execution.is_cupy_array(x) else contextlib.nullcontext()


def _array(x: Any, name: str) -> Any:
    return execution.select(x, name)[0]


def _tuple(name: str, what: str, value: Any, k: int, optional: bool = False) -> tuple[int, ...]:
    """An int or a sequence of k ints (PyTorch's _single/_pair/_triple), as a tuple of k."""
    if is_int(value):
        return (int(value),) * k
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and all(
            map(is_int, value)):
        if len(value) == 1:
            return (int(value[0]),) * k
        if len(value) == k:
            return tuple(int(v) for v in value)
    omitted = "be omitted, " if optional else ""
    raise ValueError(f"{name}: {what} must either {omitted}be a single int, or "
                     f"{_DIMS[k]}, got {value!r}")


def _batched(x: Any, name: str, k: int, channels_may_be_empty: bool = False
             ) -> tuple[Any, bool]:
    """`x` with a batch axis (added where PyTorch takes the unbatched (C, *spatial) form); only
    a batched input's batch axis may be empty (and, where `channels_may_be_empty`, as for
    PyTorch's max_unpool, an unbatched input's channel axis)."""
    first = 1 if channels_may_be_empty or x.ndim == k + 2 else 0
    if x.ndim not in (k + 1, k + 2) or 0 in x.shape[first:]:
        raise ValueError(f"{name}: expected a {k + 1}D (unbatched) or {k + 2}D (batched) input "
                         f"with non-zero sizes except the batch, got shape {tuple(x.shape)}")
    return (x[None], True) if x.ndim == k + 1 else (x, False)


def _check_bools(name: str, optional: tuple[str, ...] = (), **flags: Any) -> None:
    """TypeError for a flag that is not a bool (or None, where `optional`), as PyTorch's argument
    parser raises."""
    for what, value in flags.items():
        if not (isinstance(value, (bool, np.bool_)) or (value is None and what in optional)):
            raise TypeError(f"{name}: {what} must be a bool, got {value!r}")


def _strides(name: str, stride: Any, kernel: tuple[int, ...]) -> tuple[int, ...]:
    """PyTorch's stride: the kernel size where omitted (None or an empty sequence)."""
    if stride is None or (isinstance(stride, Sequence) and not stride):
        return kernel
    return _tuple(name, "stride", stride, len(kernel), optional=True)


def _check_pool(name: str, shape: tuple[int, ...], kernel: tuple[int, ...],
                stride: tuple[int, ...], padding: tuple[int, ...], ceil_mode: bool,
                dilation: tuple[int, ...] | None = None) -> None:
    """PyTorch's checks, including output lengths >= 1: floor_or_ceil((n + 2p - dk) / s) + 1
    with dk = d * (k - 1) + 1, the last window dropped where ceil_mode starts it in the right
    padding; the pad at most half the (undilated) kernel."""
    dilation = dilation or (1,) * len(kernel)
    if any(k <= 0 for k in kernel):
        raise ValueError(f"{name}: kernel size should be greater than zero, got {list(kernel)}")
    if any(s <= 0 for s in stride):
        raise ValueError(f"{name}: stride should be greater than zero, got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise ValueError(f"{name}: dilation should be greater than zero, got {list(dilation)}")
    if any(p < 0 or p > k // 2 for p, k in zip(padding, kernel)):
        raise ValueError(f"{name}: pad should be at least 0 and at most half of kernel size, got "
                         f"padding {list(padding)} for kernel_size {list(kernel)}")
    spatial = shape[2:]
    out = [pool_plan.spatial_axis(n, k, s, d, p, p, "NOTSET", ceil_mode)[0]
           for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]
    if any(o < 1 for o in out):
        raise ValueError(f"{name}: given input size {list(spatial)}, the calculated output size "
                         f"{out} is too small (kernel_size {list(kernel)}, stride {list(stride)}, "
                         f"padding {list(padding)}, dilation {list(dilation)})")
