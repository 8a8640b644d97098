"""PyTorch autograd for onnx_cupy.nn.functional's pooling functions: a tensor that requires grad
(with grad mode on) runs through a torch.autograd.Function whose forward is the function's and
whose backward is its gradient on arrays (interop/functional/gradients.py: the families'
gradient entry points, on the NumPy path for CPU tensors and the CuPy path for CUDA tensors).

The Function class is made on first use from the tensor's own torch module, so onnx-cupy never
imports torch. The forward saves its input tensor (PyTorch's check of in-place changes before
backward applies) and, as arrays, what the gradient reads (MaxPool's Indices, lp_pool's pooled
powers); indices among the outputs are marked non-differentiable. Second derivatives are not
implemented: a backward run with create_graph=True gives gradients whose own backward raises a
RuntimeError naming the function.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from . import tensors
from .functional import gradients

_FUNCTIONS: dict[Any, Any] = {}   # torch module -> its Function class


@dataclasses.dataclass(frozen=True, eq=False)
class _Call:
    """One call of a differentiable function: its gradient record and arguments (the input's
    place filled at each use)."""

    entry: gradients.Differentiable
    arguments: gradients.Arguments

    def with_input(self, x: Any) -> gradients.Arguments:
        return {**self.arguments, "input": x}


def second_derivative_message(name: str) -> str:
    return (f"{name}: onnx_cupy.nn.functional gives first derivatives only; the gradient of "
            f"its gradient (double backward, gradgradcheck, a Hessian) is not implemented: use "
            f"torch.nn.functional.{name} for those")


def apply(name: str, input: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """`name`(input, *args, **kwargs) for a tensor `input` that requires grad: its result
    tensors with a graph node whose backward is the function's gradient. TypeError for a
    function without a gradient (naming it) and for arguments that do not fit."""
    entry = gradients.differentiable(name)
    if entry is None:
        tensors.intake(input, name)   # raises: the function has no gradient
        raise AssertionError(name)
    call = _Call(entry, entry.bind(input, args, kwargs))
    return _function(tensors.torch_of(input)).apply(input, call)


def _function(torch: Any) -> Any:
    """The autograd Function of the torch module `torch` (made once)."""
    made = _FUNCTIONS.get(torch)
    if made is not None:
        return made

    class OnnxCupyPooling(torch.autograd.Function):  # type: ignore[misc]
        """An onnx_cupy.nn.functional pooling function and its gradient."""

        @staticmethod
        def forward(ctx: Any, x: Any, call: _Call) -> Any:
            name = call.entry.name
            array, give = tensors.intake(x.detach(), name)
            result, saved = call.entry.forward(call.with_input(array))
            ctx.call, ctx.saved = call, saved
            ctx.save_for_backward(x)
            out = give(result)
            if isinstance(out, tuple):   # (values, indices)
                ctx.mark_non_differentiable(*out[1:])
            return out

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            call: _Call = ctx.call
            name = call.entry.name
            (x,) = ctx.saved_tensors
            array, give = tensors.intake(x.detach(), name)
            dy, _ = tensors.intake(grads[0].detach(), name)
            dx = give(call.entry.backward(call.with_input(array), dy, ctx.saved))
            if torch.is_grad_enabled():   # create_graph: its own backward is an error
                dx = _delayed_error(torch, dx, second_derivative_message(name))
            return dx, None

    _FUNCTIONS[torch] = OnnxCupyPooling   # its nodes: OnnxCupyPoolingBackward
    return OnnxCupyPooling


def _delayed_error(torch: Any, dx: Any, message: str) -> Any:
    """`dx` as a tensor whose backward raises RuntimeError(message) (as
    torch.autograd.function.once_differentiable marks its results, with this message); the
    error at once where this torch has no such node."""
    delayed = getattr(getattr(torch._C, "_functions", None), "DelayedError", None)
    if delayed is None:
        raise RuntimeError(message)
    alias = dx.detach()
    alias.requires_grad = True
    return delayed(message.encode(), 1)(alias)
