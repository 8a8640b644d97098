"""A family's call, declared: what it takes, and the one dispatcher that builds every call from it.

A family states its call as data (`KernelCall`): the operator, its inputs by name with what
its kernels need of their layout (`Input`), how a call is planned (validation and the host
semantics), the NumPy path's and the kernel path's preparation of a plan, and the output's
shape and dtype. From that the dispatcher builds, here and nowhere else:

- the key of a call (onnx_cupy.core.calls.key): every input's layout (shape, strides, dtype),
  its address modulo 8 on the kernel paths and its device, with the operator's arguments;
- the prepared call, kept in the family's cache on its first occurrence: planned (all
  validation raised before anything is allocated), then prepared for the path the input picks;
- on the kernel paths, the copies of inputs the kernels cannot read as they lie (an address
  not aligned to the elements, `alignment`; a layout the family's kernels do not walk; an input
  declared `contiguous` that is not): C-contiguous copies in the workspace, made by the call;
- the device: every input on X's device (a ValueError naming the one that is not), the call
  run with that device current;
- the `out=` check (arrays.check_out), the same on every path;
- the emulated path: the CuPy path's call prepared and run on the emulated device
  (onnx_cupy.core.emulated_device), NumPy arrays copied to it and back as a user of CuPy
  would.

A family's kernel preparation `kernel(plan, device, *inputs)` gets the device object the call
runs on (the cupy module, or the emulated device) and device arrays laid out as the call's
inputs (after the copies above); it returns the body `body(*inputs, out) -> outputs`, which
allocates its outputs (`device.empty`) where `out` is None and launches. The NumPy
preparation `numpy(plan, *inputs)` returns a body of the same form on NumPy arrays.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from . import arrays, calls, execution, workspaces

Body = Callable[..., Any]   # body(*inputs, out) -> the outputs


def alignment(dtype: np.dtype) -> int:
    """Bytes an element of `dtype` needs its address to be a multiple of, as the kernels' storage
    types read it (16-byte elements as two 8-byte words)."""
    return min(dtype.itemsize, 8)


@dataclasses.dataclass(frozen=True)
class Input:
    """One input of a call: its name as the operator's specification spells it (in every
    message about it), whether it may be absent (None), and whether the kernels read it only
    C-contiguous (`contiguous`: any other layout is copied)."""

    name: str
    optional: bool = False
    contiguous: bool = False


def _whole_elements(pl: Any, a: Any) -> bool:
    """The default of what a family's kernels walk: any strides that are whole elements."""
    return arrays.whole_element_strides(a) is not None


@dataclasses.dataclass(frozen=True, eq=False)
class KernelCall:
    """A family's call (see the module docstring): `op` names it in messages; `inputs` are X
    and those after it; `plan(*inputs, *parts)` validates and plans (inputs: the arrays of the
    first call, read for their shape and dtype); `numpy(plan, *inputs)` and
    `kernel(plan, device, *inputs)` prepare the paths' bodies; `output(plan, *inputs)` is the
    (shape, dtype) of the first output, which `out` must match; `walks(plan, index, array)`
    whether the kernels read input `index` laid out as it is (else a C-contiguous copy);
    `check(plan, *inputs)` runs at every call on host arrays (checks of values the GPU path
    leaves to the kernels, as MaxUnpool's indices). Each call keeps its prepared calls in a
    bounded cache of its own (`cache`, onnx_cupy.core.calls.Cache)."""

    op: str
    inputs: tuple[Input, ...]
    plan: Callable[..., Any]
    numpy: Callable[..., Body]
    kernel: Callable[..., Body]
    output: Callable[..., tuple[tuple[int, ...], np.dtype]] = \
        lambda pl, x, *others: (pl.out_shape, x.dtype)
    walks: Callable[[Any, int, Any], bool] = lambda pl, i, a: _whole_elements(pl, a)
    check: Callable[..., None] | None = None
    cache: calls.Cache = dataclasses.field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache", calls.Cache(self.op))

    def __call__(self, X: Any, *others: Any, parts: tuple[Any, ...] = (),
                 vectors: tuple[Any, ...] = (), out: Any = None) -> Any:
        """Run the call on X and the inputs after it, with the operator's arguments `parts`
        (attributes, opset: key parts) and host `vectors` (such as Resize's scales: keyed by
        value), writing the first output into `out` where given."""
        if type(X) is np.ndarray and execution.forced() is None:
            x, backend = X, "numpy"
        else:
            x, backend = execution.select(X, self.op, self.inputs[0].name)
        xs = (x, *self._partners(x, others)) if others else (x,)
        key = calls.key(backend, xs, parts, vectors)
        call = self.cache.get(key)
        if call is None:
            call = self.cache.put(key, self.prepare(backend, xs, (*parts, *vectors)))
        return call(*xs, out)

    def _partners(self, x: Any, others: tuple[Any, ...]) -> tuple[Any, ...]:
        """The inputs after X as arrays of X's kind (arrays.partner), None where absent."""
        kind = type(x)
        for a in others:
            if type(a) is not kind and a is not None:
                break
        else:   # all of X's type already: as they are
            return others
        return tuple(None if a is None else arrays.partner(a, x, self.op, spec.name)
                     for a, spec in zip(others, self.inputs[1:]))

    def prepare(self, backend: str, xs: tuple[Any, ...], arguments: tuple[Any, ...]) -> Body:
        """The call of these arguments on inputs laid out as `xs` on `backend`: planned (every
        error raised here, before anything is allocated), then prepared for the path; takes
        (*inputs, out)."""
        for spec, a in zip(self.inputs, xs):
            if a is None and not spec.optional:
                raise TypeError(f"{self.op}: input '{spec.name}' is required")
        pl = self.plan(*xs, *(a.value if type(a) is calls.Keyed else a for a in arguments))
        for spec, a in zip(self.inputs, xs):   # what the plan takes but no kernel has
            if backend != "numpy" and a is not None and a.dtype.kind in "OUS":
                which = "" if spec is self.inputs[0] else f"input '{spec.name}': "
                raise TypeError(f"{self.op}: {which}string tensors run on the NumPy backend "
                                f"only (got dtype {a.dtype} on backend {backend!r})")
        return self.prepare_plan(backend, pl, xs)

    def prepare_plan(self, backend: str, pl: Any, xs: tuple[Any, ...]) -> Body:
        """The call of the plan `pl` on inputs laid out as `xs` on `backend` (after every
        check: from here on a call allocates and launches)."""
        shape, dtype = self.output(pl, *xs)
        if backend == "numpy":
            body = self.numpy(pl, *xs)
        else:
            if backend == "emulated":
                return self._emulated(pl, xs, shape, dtype)
            body = self._on_device(execution.cupy_module(), pl, xs, shape, dtype)
        return self._host_checked(pl, body, shape, dtype) if backend == "numpy" else body

    # ------------------------------------------------------------------------- NumPy path

    def _host_checked(self, pl: Any, body: Body, shape: tuple[int, ...], dtype: np.dtype
                      ) -> Body:
        """The NumPy path's call: `out` checked, `check` run, then the body."""
        op, names, check = self.op, self._names(), self.check

        def call(*args: Any) -> Any:
            *xs, out = args
            if out is not None:
                arrays.check_out(op, out, shape, dtype, xs, names, None)
            if check is not None:
                check(pl, *xs)
            return body(*args)
        return call

    def _names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.inputs)

    # ------------------------------------------------------------------------- kernel paths

    def _on_device(self, device: Any, pl: Any, xs: tuple[Any, ...], shape: tuple[int, ...],
                   dtype: np.dtype) -> Body:
        """The kernel path's call on `device` (the cupy module or the emulated device) for
        device arrays laid out as `xs`: the inputs on X's device, copies where the kernels
        cannot read an input as it lies, `out` checked, run with X's device current."""
        op, names = self.op, self._names()
        device_id = xs[0].device.id
        for name, a in zip(names[1:], xs[1:]):
            if a is not None and a.device.id != device_id:
                raise ValueError(f"{op}: input '{name}' is on device {a.device.id}, X on device "
                                 f"{device_id}")
        address = _address
        copied = tuple(a is not None and bool(
            address(a) % alignment(a.dtype) or (spec.contiguous and not a.flags.c_contiguous)
            or not self.walks(pl, i, a)) for i, (spec, a) in enumerate(zip(self.inputs, xs)))
        with device.cuda.Device(device_id):
            if any(copied):   # C-contiguous copies in the workspace, beside the body's scratch
                space = workspaces.Scratch(device, *((tuple(a.shape), a.dtype)
                                                for a, c in zip(xs, copied) if c),
                                           level=workspaces.COPIES)
                body = self.kernel(pl, device, *_placed(xs, copied, space()))
            else:
                space, body = None, self.kernel(pl, device, *xs)
        current, Device = device.cuda.runtime.getDevice, device.cuda.Device

        def call(*args: Any) -> Any:
            out = args[-1]
            if out is not None:
                arrays.check_out(op, out, shape, dtype, args[:-1], names, device_id)
            if space is not None:
                if current() != device_id:
                    with Device(device_id):
                        return body(*_copied(args[:-1], copied, space()), out)
                return body(*_copied(args[:-1], copied, space()), out)
            if current() != device_id:
                with Device(device_id):
                    return body(*args)
            return body(*args)
        return call

    def _emulated(self, pl: Any, xs: tuple[Any, ...], shape: tuple[int, ...],
                  dtype: np.dtype) -> Body:
        """The emulated call of NumPy inputs laid out as `xs`: the CuPy path's call prepared on
        the emulated device for device arrays of the same layouts (shapes, strides,
        alignment); a call copies its inputs to the device, runs there and copies its outputs
        back (into `out`, a NumPy array, where given)."""
        from . import emulated_device

        device = emulated_device.emulated_device()
        mirrored = tuple(None if a is None else device.mirror(a, copy=False) for a in xs)
        body = self._on_device(device, pl, mirrored, shape, dtype)
        op, names, check = self.op, self._names(), self.check

        def call(*args: Any) -> Any:
            *inputs, out = args
            if out is not None:
                arrays.check_out(op, out, shape, dtype, inputs, names, None)
            if check is not None:
                check(pl, *inputs)
            ys = body(*(None if a is None else device.mirror(a) for a in inputs),
                      None if out is None else device.mirror(out, copy=False, native=False))
            if isinstance(ys, tuple):
                return tuple(_host(y, out if i == 0 else None) for i, y in enumerate(ys))
            return _host(ys, out)
        return call


def _address(a: Any) -> int:
    """A device array's address."""
    return int(a.data.ptr)


def _placed(xs: tuple[Any, ...], copied: tuple[bool, ...], carved: tuple[Any, ...]
            ) -> list[Any]:
    """`xs` with each input marked in `copied` replaced by the next of the `carved` arrays."""
    it = iter(carved)
    return [next(it) if c else a for a, c in zip(xs, copied)]


def _copied(xs: tuple[Any, ...], copied: tuple[bool, ...], carved: tuple[Any, ...]) -> list[Any]:
    """`xs` with each input marked in `copied` copied into the next of the `carved` arrays."""
    it = iter(carved)
    out = []
    for a, c in zip(xs, copied):
        if c:
            copy = next(it)
            copy[...] = a
            a = copy
        out.append(a)
    return out


def _host(y: Any, out: np.ndarray | None) -> Any:
    """A device output as a NumPy array: copied into `out`, or a new copy."""
    if out is None:
        return y.host.copy()
    out[...] = y.host
    return out
