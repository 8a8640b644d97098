"""The functions' argument translations: PyTorch's checks and the ONNX attributes computed on the
first call of a layout and arguments, then kept in one bounded cache (onnx_cupy.core.calls). A
translation holds arguments, never a family's call: it runs the family's entry point at every
call, which finds the call prepared for the inputs' own layout (alignment, device) by its key."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core import calls, execution

_CALLS = calls.Cache("nn.functional")
Prepared = Callable[[Any], Any]   # the prepared call of a function on inputs of one layout


def _cached(prepare: Callable[..., Callable[..., Any]], input: Any, name: str, *args: Any,
            others: tuple[Any, ...] = ()) -> Any:
    """`name`(input, *args): the translation `prepare(x, backend, name, *args, *others)` made
    (PyTorch's checks, the ONNX attributes, the family's entry point with them) on the first
    occurrence of its key (onnx_cupy.core.calls: the arrays' layouts, path and device, the
    arguments), then kept; it takes (x, *others). Each array of `others` is of the input's
    kind (the translation checks it, naming it)."""
    x, backend = execution.select(input, name, "input")
    key = calls.key(backend, (x, *others) if type(others[0]) is type(x) else (x,),
                    (name, *args, *(type(a).__name__ for a in others))) if others else \
        calls.key(backend, (x,), (name, *args))
    call = _CALLS.get(key) or _CALLS.put(key, prepare(x, backend, name, *args, *others))
    return call(x, *others)


def _unbatched(call: Callable[[Any], Any], unbatched: bool) -> Prepared:
    """`call` on (C, *spatial) inputs through a batch axis of 1, where `unbatched`."""
    if not unbatched:
        return call
    return lambda x: _first(call(x[None]))


def _first(y: Any) -> Any:
    """The first item of each array of `y` (an array, None, or a tuple of them, nested)."""
    if isinstance(y, tuple):
        return tuple(_first(a) for a in y)
    return None if y is None else y[0]


Gradient = Callable[[Any, Any, Any], Any]   # gradient(x, grad_output, saved) -> grad_input


def _unbatched_gradient(call: Gradient, unbatched: bool) -> Gradient:
    """`call` on (C, *spatial) inputs, their gradients and saved arrays through a batch axis of
    1, where `unbatched`."""
    if not unbatched:
        return call
    return lambda x, dy, saved: call(x[None], dy[None], None if saved is None else saved[None])[0]


def _check_grad_output(name: str, dy: Any, x: Any, shape: tuple[int, ...]) -> None:
    """TypeError where the gradient of the output `dy` is not an array of the input's kind and
    dtype, ValueError where it has not the output's `shape`."""
    if type(dy) is not type(x):
        raise TypeError(f"{name}: grad_output must be a {type(x).__module__}."
                        f"{type(x).__name__} like input, got {type(dy).__module__}."
                        f"{type(dy).__name__}")
    if dy.dtype != x.dtype:
        raise TypeError(f"{name}: grad_output must have the input's dtype {x.dtype}, got "
                        f"{dy.dtype}")
    if tuple(dy.shape) != tuple(shape):
        raise ValueError(f"{name}: grad_output has shape {tuple(dy.shape)}, expected the "
                         f"output's shape {tuple(shape)}")
