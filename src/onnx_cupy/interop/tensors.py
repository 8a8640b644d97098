"""PyTorch tensors in and out of onnx_cupy.nn.functional, zero-copy through DLPack, without
importing torch.

A tensor is an object with `__dlpack__` and `requires_grad` (torch.Tensor); the module defining
its type (torch) gives tensors back with its `from_dlpack`. A CPU tensor becomes a NumPy array
(the NumPy path), a CUDA tensor a CuPy array (the CuPy path, on the tensor's device); the
results become tensors of the same device. bfloat16, which DLPack's NumPy reader lacks, crosses
as int16 bits (`tensor.view(int16)`) and is viewed back (ml_dtypes.bfloat16 on the array side).
A tensor that requires grad, with grad mode on, is a TypeError here: the pooling functions and
interpolate take it through their autograd Function instead (interop/autograd.py), the others record
no graph. Under torch.no_grad() such a tensor is taken as it is, and no graph is recorded, as
PyTorch's own functions do."""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import dtypes, execution


def is_tensor(x: Any) -> bool:
    """A PyTorch tensor (or an object that behaves as one): DLPack and `requires_grad`, and no
    NumPy or CuPy array."""
    if type(x) is np.ndarray:   # the common inputs first, without an attribute look-up
        return False
    return (not isinstance(x, np.ndarray) and not execution.is_cupy_array(x)
            and hasattr(x, "__dlpack__") and hasattr(x, "requires_grad"))


def torch_of(x: Any) -> Any:
    """The torch module of the tensor `x`, imported already: the module defining its type, or
    where that has no `from_dlpack` (torch.nn.Parameter's), its package."""
    module = importlib.import_module(type(x).__module__)
    if hasattr(module, "from_dlpack"):
        return module
    return importlib.import_module(type(x).__module__.partition(".")[0])


def records_graph(x: Any) -> bool:
    """Whether `x` is a tensor that requires grad while grad mode is on (its result would
    carry a graph in PyTorch)."""
    if not (is_tensor(x) and x.requires_grad):
        return False
    enabled = getattr(torch_of(x), "is_grad_enabled", None)   # on where it cannot be asked
    return enabled is None or bool(enabled())


def intake(x: Any, name: str) -> tuple[Any, Callable[[Any], Any]]:
    """(`x` as the array the operators take, a function giving results back as `x`'s kind):
    a tensor becomes a NumPy or CuPy array and its results tensors; anything else passes
    through both ways unchanged. TypeError for a tensor that requires grad while grad mode is
    on: the functions that reach here record no graph."""
    if not is_tensor(x):
        return x, _unchanged
    if x.requires_grad:
        if records_graph(x):
            raise TypeError(
                f"{name}: a tensor that requires grad was given, and {name} has no gradient "
                f"in onnx_cupy.nn.functional (its pooling functions and interpolate have: "
                f"avg_pool, lp_pool, max_pool, adaptive pooling, max_unpool, interpolate); pass "
                f"tensor.detach(), or call it "
                f"under torch.no_grad()")
        x = x.detach()
    torch = torch_of(x)
    bf16 = x.dtype == getattr(torch, "bfloat16", None)
    array = execution.as_array(x.view(torch.int16) if bf16 else x, name)
    if bf16:
        if dtypes.BFLOAT16 is None:
            raise TypeError(f"{name}: a bfloat16 tensor needs ml_dtypes (pip install ml_dtypes)")
        array = array.view(dtypes.BFLOAT16)

    def give(result: Any) -> Any:
        if isinstance(result, tuple):
            return tuple(give(r) for r in result)
        if result.dtype == dtypes.BFLOAT16:
            return torch.from_dlpack(result.view(np.int16)).view(torch.bfloat16)
        return torch.from_dlpack(result)
    return array, give


def _unchanged(result: Any) -> Any:
    return result
