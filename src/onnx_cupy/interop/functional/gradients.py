"""The gradients of onnx_cupy.nn.functional's pooling functions and interpolate on arrays,
without torch: the backward the PyTorch bridge (interop/autograd.py) runs for a tensor that
requires grad, and what onnx_cupy.vjp gives for these functions.

Each function's gradient is PyTorch's (its CPU backward, or for lp_pool its autograd through the
forward's ops) computed by the families' gradient entry points: pool.api.gradient (AveragePool,
divisor_override included, MaxPool, the adaptive pools), unpool.api.gradient (max_unpool),
resize.api.gradient (interpolate; mode "area": the adaptive average pool's), and for lp_pool the
elementwise steps around AveragePool's. A function's forward `saving` gives beside its result what
its gradient reads (MaxPool's Indices, the adaptive maximum's, lp_pool's pooled powers), so that the
backward finds no window again.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from . import adaptive, arguments, interpolation, pooling, unpool

Arguments = dict[str, Any]   # a call's arguments by name, defaults applied


@dataclasses.dataclass(frozen=True)
class Differentiable:
    """A function with a gradient: `forward(arguments)` -> (its result, what its gradient
    reads); `backward(arguments, grad_output, saved)` -> the gradient of its input (`saved`:
    the forward's, or None: found again)."""

    function: Callable[..., Any]
    forward: Callable[[Arguments], tuple[Any, Any]]
    backward: Callable[[Arguments, Any, Any], Any]

    @property
    def name(self) -> str:
        return self.function.__name__

    def bind(self, input: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Arguments:
        """The arguments of `function(input, *args, **kwargs)` by name, defaults applied; a
        TypeError naming the function where they do not fit its signature."""
        try:
            bound = inspect.signature(self.function).bind(input, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}(): {exc}") from None
        bound.apply_defaults()
        return dict(bound.arguments)


def _avg(k: int) -> tuple[Callable[[Arguments], tuple[Any, Any]],
                          Callable[[Arguments, Any, Any], Any]]:
    name = f"avg_pool{k}d"

    def forward(a: Arguments) -> tuple[Any, Any]:
        return pooling._avg_pool(name, k, a["input"], a["kernel_size"], a["stride"],
                                 a["padding"], a["ceil_mode"], a["count_include_pad"],
                                 a.get("divisor_override")), None

    def backward(a: Arguments, dy: Any, saved: Any) -> Any:
        return pooling._avg_pool_gradient(name, k, a["input"], dy, saved, a["kernel_size"],
                                          a["stride"], a["padding"], a["ceil_mode"],
                                          a["count_include_pad"], a.get("divisor_override"))
    return forward, backward


def _lp(k: int) -> tuple[Callable[[Arguments], tuple[Any, Any]],
                         Callable[[Arguments, Any, Any], Any]]:
    name = f"lp_pool{k}d"

    def forward(a: Arguments) -> tuple[Any, Any]:
        result: tuple[Any, Any] = pooling._lp_pool(name, k, a["input"], a["norm_type"],
                                                   a["kernel_size"], a["stride"],
                                                   a["ceil_mode"], saving=True)
        return result

    def backward(a: Arguments, dy: Any, saved: Any) -> Any:
        return pooling._lp_pool_gradient(name, k, a["input"], dy, saved, a["norm_type"],
                                         a["kernel_size"], a["stride"], a["ceil_mode"])
    return forward, backward


def _max(k: int) -> tuple[Callable[[Arguments], tuple[Any, Any]],
                          Callable[[Arguments, Any, Any], Any]]:
    name = f"max_pool{k}d"

    def forward(a: Arguments) -> tuple[Any, Any]:
        result: tuple[Any, Any] = pooling._max_pool(
            name, k, a["input"], a["kernel_size"], a["stride"], a["padding"], a["dilation"],
            a["ceil_mode"], a["return_indices"], saving=True)
        return result

    def backward(a: Arguments, dy: Any, saved: Any) -> Any:
        return pooling._max_pool_gradient(name, k, a["input"], dy, saved, a["kernel_size"],
                                          a["stride"], a["padding"], a["dilation"],
                                          a["ceil_mode"], a["return_indices"])
    return forward, backward


def _adaptive(kind: str, k: int) -> tuple[Callable[[Arguments], tuple[Any, Any]],
                                          Callable[[Arguments, Any, Any], Any]]:
    name = f"adaptive_{kind}_pool{k}d"
    op = "AdaptiveAveragePool" if kind == "avg" else "AdaptiveMaxPool"

    def forward(a: Arguments) -> tuple[Any, Any]:
        result: tuple[Any, Any] = adaptive._adaptive(
            name, op, k, a["input"], a["output_size"], a.get("return_indices", False),
            saving=True)
        return result

    def backward(a: Arguments, dy: Any, saved: Any) -> Any:
        return adaptive._adaptive_gradient(name, op, k, a["input"], dy, saved,
                                           a["output_size"], a.get("return_indices", False))
    return forward, backward


def _unpool(k: int) -> tuple[Callable[[Arguments], tuple[Any, Any]],
                             Callable[[Arguments, Any, Any], Any]]:
    name = f"max_unpool{k}d"

    def forward(a: Arguments) -> tuple[Any, Any]:
        return unpool._max_unpool(name, k, a["input"], a["indices"], a["kernel_size"],
                                  a["stride"], a["padding"], a["output_size"]), None

    def backward(a: Arguments, dy: Any, saved: Any) -> Any:
        return unpool._max_unpool_gradient(name, k, a["input"], dy, saved, a["indices"],
                                           a["kernel_size"], a["stride"], a["padding"],
                                           a["output_size"])
    return forward, backward


def _interpolate_forward(a: Arguments) -> tuple[Any, Any]:
    return interpolation._interpolate(a["input"], a["size"], a["scale_factor"], a["mode"],
                                      a["align_corners"], a["recompute_scale_factor"],
                                      a["antialias"]), None


def _interpolate_backward(a: Arguments, dy: Any, saved: Any) -> Any:
    return interpolation._interpolate_gradient(a["input"], dy, a["size"], a["scale_factor"],
                                               a["mode"], a["align_corners"],
                                               a["recompute_scale_factor"], a["antialias"])


# every function with a gradient, by name
DIFFERENTIABLE: dict[str, Differentiable] = {
    "interpolate": Differentiable(interpolation.interpolate, _interpolate_forward,
                                  _interpolate_backward)}
for _k in (1, 2, 3):
    for _fn, _make in ((getattr(pooling, f"avg_pool{_k}d"), _avg(_k)),
                       (getattr(pooling, f"lp_pool{_k}d"), _lp(_k)),
                       (getattr(pooling, f"max_pool{_k}d"), _max(_k)),
                       (getattr(adaptive, f"adaptive_avg_pool{_k}d"), _adaptive("avg", _k)),
                       (getattr(adaptive, f"adaptive_max_pool{_k}d"), _adaptive("max", _k)),
                       (getattr(unpool, f"max_unpool{_k}d"), _unpool(_k))):
        DIFFERENTIABLE[_fn.__name__] = Differentiable(_fn, *_make)
del _k, _fn, _make
arguments.GRADIENTS.update(DIFFERENTIABLE)   # the tensors' autograd finds them there


def differentiable(function: Any) -> Differentiable | None:
    """The gradient of `function` (a function of onnx_cupy.nn.functional, or its name), None
    where it has none."""
    name = function if isinstance(function, str) else getattr(function, "__name__", None)
    entry = DIFFERENTIABLE.get(name) if isinstance(name, str) else None
    if entry is None or (not isinstance(function, str) and function is not entry.function):
        return None
    return entry


def backward(function: Any, input: Any, grad_output: Any, *args: Any, saved: Any = None,
             **kwargs: Any) -> Any:
    """The gradient of `function(input, *args, **kwargs)`'s first output with respect to
    `input`, given that output's gradient `grad_output` (an array of the input's kind and
    dtype, of the output's shape): PyTorch's, on the path the input picks. TypeError for a
    function without a gradient."""
    entry = differentiable(function)
    if entry is None:
        name = getattr(function, "__name__", function)
        raise TypeError(f"{name} has no gradient in onnx_cupy.nn.functional (gradients: "
                        f"{', '.join(DIFFERENTIABLE)})")
    return entry.backward(entry.bind(input, args, kwargs), grad_output, saved)
