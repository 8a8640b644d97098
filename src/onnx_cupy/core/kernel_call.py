"""The kernel path's calls: one GPU code path for both kernel backends, one alignment policy.

A family's kernel preparation (`prepare(pl, *inputs, backend, ...)` in its kernel.py, marked
`prepares`) builds the CuPy path's call: device arrays, by-value structs passed as pointers,
uploaded tables, workspaces, the current stream. On the 'emulated' path the same preparation
runs over the emulated device (onnx_cupy.core.standin: a stand-in cupy that executes each launch
on the emulator, reading its arguments as the driver does, on device memory of its own), and
the call takes and returns NumPy arrays, copying them to the device and back as a user of CuPy
would.

The alignment policy, the same for every family: a kernel reads and writes each array as
elements of its storage type, which need their address at a multiple of `alignment(dtype)`
(min(itemsize, 8) bytes). A call whose inputs are not all so aligned runs on aligned copies
of them (C-contiguous, by a call prepared for that layout once and kept by this one); an `out`
that is not is a ValueError. Element strides that are not whole elements, and layouts a family's
kernels cannot walk, are copied by the family's preparation (onnx_cupy.core.calls.contiguous);
faster instantiations for wider alignment (Hardmax's 16-byte loads) are the family's choice."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from . import arrays, calls, execution

_F = TypeVar("_F", bound=Callable[..., calls.Call])
INPUT_NAMES = {"x": "X", "batch": "batch_indices"}   # a preparation's parameter -> the input


def alignment(dtype: np.dtype) -> int:
    """Bytes an element of `dtype` needs its address to be a multiple of, as the kernels' storage
    types read it (16-byte elements as two 8-byte words)."""
    return min(dtype.itemsize, 8)


def prepares(prepare: _F) -> _F:
    """A family's kernel preparation `prepare(pl, *inputs, backend, ...)` (the input arrays
    between the plan and the path; its call runs with the first input's device current) as the
    kernel path's one builder of calls: string tensors refused; on the 'cupy' path its call
    under the alignment policy (`aligning`), run on the inputs' device (calls.device_bound); on
    the 'emulated' path that call prepared and run on the emulated device (`emulated`)."""
    parameters = list(inspect.signature(prepare).parameters)
    at = parameters.index("backend")
    names = tuple(INPUT_NAMES.get(n, n) for n in parameters[1:at])

    @functools.wraps(prepare)
    def prepared(*args: Any, **kwargs: Any) -> calls.Call:
        head, inputs, backend, tail = args[:1], args[1:at], args[at], args[at + 1:]
        op = args[0].op
        for a in inputs:
            if a is not None and a.dtype.kind in "OUS":
                raise TypeError(f"{op}: string tensors run on the NumPy backend only (got dtype "
                                f"{a.dtype} on backend {backend!r})")

        def build(*layouts: Any) -> calls.Call:
            call = prepare(*head, *layouts, "cupy", *tail, **kwargs)
            return calls.device_bound(layouts[0], "cupy", aligning(op, call, layouts, build, names))
        if backend == "emulated":
            return emulated(build, *inputs, op=op, names=names)
        return build(*inputs)
    return prepared  # type: ignore[return-value]


def aligning(op: str, call: calls.Call, layouts: tuple[Any, ...],
             again: Callable[..., calls.Call], names: tuple[str, ...] = ()) -> calls.Call:
    """`call` (of inputs laid out as `layouts`, None for an absent one) under the alignment
    policy; a call's key holds its inputs' addresses modulo 8 (onnx_cupy.core.calls.key), so
    its inputs are aligned as `layouts` are. Where `layouts` has an input unaligned, every call
    copies them all into the workspace (C-contiguous, aligned) and runs the call
    `again(*copies)` prepared for those, here, once; else `call` itself. An `out` not aligned is
    a ValueError, one overlapping an input too (the kernels read the inputs while they write it;
    `names`: the inputs' names; X's overlap and `out`'s alignment are also the call's own
    check, arrays.output)."""
    aligns = tuple(1 if a is None else alignment(a.dtype) for a in layouts)
    address = arrays.address_of("cupy")

    def check_out(xs: tuple[Any, ...] | list[Any], out: Any, copied: bool = False) -> None:
        if type(out) is not type(xs[0]):
            return   # the call's own check names the type
        if address(out) % aligns[0]:
            raise ValueError(f"{op}: out must be aligned to {aligns[0]} bytes for the kernel "
                             f"path (its address is {address(out)})")
        for i, x in enumerate(xs):   # X's own check sees only its copy where `copied`
            if x is not None and (i or copied) and arrays.overlap(out, x):
                raise ValueError(f"{op}: out overlaps the input {names[i]}")

    def unaligned(xs: Any) -> bool:
        return any(align > 1 and address(x) % align for x, align in zip(xs, aligns))

    if unaligned(layouts):   # this call's inputs are unaligned: copies in the workspace
        space = calls.Scratch("cupy", *((tuple(a.shape), a.dtype) for a in layouts
                                        if a is not None), level=1)   # beside the call's own

        def placed(xs: Any, carved: tuple[Any, ...]) -> list[Any]:
            it = iter(carved)
            return [None if x is None else next(it) for x in xs]
        with arrays.on_device(layouts[0], "cupy"):   # the copies live on the inputs' device
            held = again(*placed(layouts, space()))

        def copied(*args: Any) -> Any:
            *xs, out = args
            if out is not None:
                check_out(xs, out, copied=True)
            copies = placed(xs, space())
            for c, x in zip(copies, xs):
                if c is not None:
                    c[...] = x
            return held(*copies, out)
        return copied

    if len(aligns) == 1:   # one input: its alignment is the call's key's, `out`'s the call's
        return call      # own check (arrays.output)

    def run(*args: Any) -> Any:   # the inputs' alignment is the call's key's
        if args[-1] is not None:
            check_out(args[:-1], args[-1])
        return call(*args)
    return run


def emulated(build: Callable[..., calls.Call], *inputs: np.ndarray, op: str,
             names: tuple[str, ...] = ()) -> calls.Call:
    """The emulated call of NumPy `inputs`: `build(*device arrays)`, the CuPy path's call for
    inputs laid out as `inputs` (same shapes, strides and alignment), prepared on the emulated
    device; call(*inputs, out) copies the inputs to the device, runs it there and returns its
    outputs copied back (written into `out`, a NumPy array, where given)."""
    from . import standin

    device = standin.emulated_device()
    with execution.device_module(device):
        body = build(*(None if a is None else device.mirror(a, copy=False) for a in inputs))

    def call(*args: Any) -> Any:
        *xs, out = args
        if out is not None:
            _check_host_out(op, out, xs, names)
        with execution.device_module(device):
            ys = body(*(None if a is None else device.mirror(a) for a in xs),
                      None if out is None else device.mirror(out, copy=False, native=False))
        if isinstance(ys, tuple):
            return tuple(_host(y, out if i == 0 else None) for i, y in enumerate(ys))
        return _host(ys, out)
    return call


def _check_host_out(op: str, out: Any, inputs: list[Any], names: tuple[str, ...]) -> None:
    """What the device copy of a NumPy `out` cannot show: its type, that it can be written,
    that it shares no memory with an input (the call checks the rest on the copy)."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{op}: out must be a ndarray like X, got {type(out).__name__}")
    if isinstance(out, np.ma.MaskedArray):
        raise TypeError(f"{op}: out is a numpy.ma.MaskedArray; masked arrays are not taken")
    arrays.writeable(op, out)
    for i, x in enumerate(inputs):
        if isinstance(x, np.ndarray) and np.may_share_memory(out, x):
            raise ValueError(f"{op}: out overlaps the input {names[i] if i else 'X'}")


def _host(y: Any, out: np.ndarray | None) -> Any:
    """A device output as a NumPy array: copied into `out`, or a new copy."""
    if out is None:
        return y.host.copy()
    out[...] = y.host
    return out
