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
    return tuple(a[0] for a in y) if isinstance(y, tuple) else y[0]
