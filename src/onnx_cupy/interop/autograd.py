"""PyTorch autograd for onnx_cupy.nn.functional's pooling functions and interpolate: a tensor that
requires grad (with grad mode on) runs through a torch.autograd.Function whose forward is the
function's and whose backward is its gradient on arrays (interop/functional/gradients.py: the
families' gradient entry points, on the NumPy path for CPU tensors and the CuPy path for CUDA
tensors).

The Function class is made on first use from the tensor's own torch module, so onnx-cupy never
imports torch. The forward saves its input tensor (PyTorch's check of in-place changes before
backward applies) and, as arrays, what the gradient reads (MaxPool's Indices, lp_pool's pooled
powers); indices among the outputs are marked non-differentiable. Second derivatives are not
implemented: with create_graph=True, the backward computes the gradient through a second Function
of the input and the output's gradient (OnnxCupyFunctionGradient), so that the gradient is
connected to both and differentiating it again (double backward, gradgradcheck, a Hessian)
reaches that Function's backward, which raises a RuntimeError naming the function.
(torch.autograd.function.once_differentiable's error node would not do: it hangs off a detached
alias of the gradient, so torch.autograd.grad with respect to the input never runs it and
gives zeros, silently.)
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from . import tensors

if TYPE_CHECKING:
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


def apply(entry: gradients.Differentiable, input: Any, args: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Any:
    """`entry`'s function (input, *args, **kwargs) for a tensor `input` that requires grad: its
    result tensors with a graph node whose backward is the function's gradient. TypeError for
    arguments that do not fit."""
    call = _Call(entry, entry.bind(input, args, kwargs))
    return _function(tensors.torch_of(input)).apply(input, call)


def _function(torch: Any) -> Any:
    """The autograd Function of the torch module `torch` (made once)."""
    made = _FUNCTIONS.get(torch)
    if made is not None:
        return made

    class OnnxCupyFunction(torch.autograd.Function):  # type: ignore[misc]
        """An onnx_cupy.nn.functional function (pooling, interpolate) and its gradient."""

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
            (x,) = ctx.saved_tensors
            # with create_graph=True (grad mode on here), a graph node of x and the output's
            # gradient whose own backward is the second derivative's error
            return OnnxCupyFunctionGradient.apply(x, grads[0], ctx.call, ctx.saved), None

    class OnnxCupyFunctionGradient(torch.autograd.Function):  # type: ignore[misc]
        """The gradient of an onnx_cupy.nn.functional function (of its input and of
        its output's gradient); differentiating it again is a RuntimeError naming the
        function."""

        @staticmethod
        def forward(ctx: Any, x: Any, grad_output: Any, call: _Call, saved: Any) -> Any:
            name = call.entry.name
            ctx.name = name
            array, give = tensors.intake(x.detach(), name)
            dy, _ = tensors.intake(grad_output.detach(), name)
            return give(call.entry.backward(call.with_input(array), dy, saved))

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            raise RuntimeError(second_derivative_message(ctx.name))

    _FUNCTIONS[torch] = OnnxCupyFunction   # its nodes: OnnxCupyFunctionBackward
    return OnnxCupyFunction

