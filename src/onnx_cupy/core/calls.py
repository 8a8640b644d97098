"""Prepared calls: what a repeated call needs, kept so that it does only what each call must.

A family's entry point keys a call by everything that decides its work (`key`: the operator,
opset and attributes, and the input's shape, strides, dtype, execution path and device) and
keeps, per key, the call prepared on its first occurrence (a `Call`: on the NumPy path the plan
and its tables, on the kernel paths the launches, with their records, grids, parameter structs
and uploaded tables) in a bounded cache (`Cache`). A repeated call then builds its key, looks it
up, allocates its outputs and launches: no validation beyond the key, no NumPy work on the host,
no host-device copy, no synchronization.

A key part equals another only for a value of the same type and value (`frozen`): 2.0, True and
numpy.float64(2) never hit the entry that 2 made, so a hit stands for a call that passed
validation with exactly these values. A value that cannot key a cache (a set, a CuPy array, an
object of another type) makes the call run unkeyed: validated and prepared every time, its error
raised by the validation as on a first call.

The pattern, in a family's api.py (`_CALLS = calls.Cache("<family>")` at module level):

    x, backend = execution.select(X, op)
    key = calls.key(x, backend, op, opset, attrs)
    call = _CALLS.get(key)
    if call is None:
        pl = plan.prepare(...)                        # validation, raised before anything runs
        call = _CALLS.put(key, numpy_path.prepare(pl, x.dtype) if backend == "numpy"
                          else kernel.prepare(pl, x, backend))
    return call(x, out)
"""
from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, cast

import numpy as np

from . import arrays, execution, loader

MAX_CALLS = 512   # prepared calls kept per family (the oldest goes first)

Call = Callable[..., Any]   # call(x, out, ...) -> the outputs

_caches: list[Cache] = []


class Unkeyed(Exception):
    """A value that cannot key a cache (raised by `frozen`, caught by `key`)."""


class Cache(dict[Hashable, Call]):
    """The prepared calls of one family, by key: at most `size` of them, the oldest evicted
    first. `get` is the dict's own (a None key, an unkeyed call, finds nothing)."""

    def __init__(self, name: str, size: int = MAX_CALLS) -> None:
        super().__init__()
        self.name, self.size = name, size
        self._lock = threading.Lock()
        _caches.append(self)

    def put(self, key: Hashable | None, call: Call) -> Call:
        """Keep `call` for `key` (unless the call is unkeyed); returns `call`."""
        if key is not None:
            with self._lock:
                while len(self) >= self.size:
                    self.pop(next(iter(self)))
                self[key] = call
        return call


def clear() -> None:
    """Empty every family's prepared calls (their device tables go with them)."""
    for cache in _caches:
        cache.clear()


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Inside the block, no prepared call, workspace or compiled function from outside it (and
    none of the block's after it): for a substitute cupy module (the stand-in), whose arrays and
    functions must not reach the real one, nor the real one's the substitute."""
    kept = ([dict(c) for c in _caches], dict(_workspaces), loader.swap_functions({}))
    for cache in _caches:
        cache.clear()
    _workspaces.clear()
    _carved.clear()
    try:
        yield
    finally:
        for cache, entries in zip(_caches, kept[0]):
            cache.clear()
            cache.update(entries)
        _workspaces.clear()
        _workspaces.update(kept[1])
        _carved.clear()
        loader.swap_functions(kept[2])


_EXACT = frozenset({int, str, type(None)})   # types whose values equal only their own type's
_PLAIN = _EXACT | {float, bool}   # the types of a sequence keyed by its values and their types


def frozen(value: Any) -> Hashable:
    """`value` as a key part that equals another only for the same type and value: ints,
    strings and None as they are; floats with their type (a zero with its sign: -0.0 differs
    from 0.0; a NaN equals only itself), bools and NumPy scalars with their type and bits;
    lists and tuples of such, with their type; a dict as its names and values; NumPy arrays by
    dtype, shape and bytes; instances of frozen dataclasses as they are (their equality
    compares the class). Anything else raises Unkeyed."""
    kind = type(value)
    if kind in _EXACT:
        return cast(Hashable, value)
    if kind is dict:   # attributes: names, then values
        return _frozen_dict(value)
    if kind is list or kind is tuple:
        return _frozen_sequence(kind, value)
    if kind is float:
        return _frozen_float(value)
    if kind is bool:
        return (kind, value)          # (bool, True) comes from a bool only
    if isinstance(value, np.generic):
        return (kind, value.tobytes())
    if getattr(getattr(kind, "__dataclass_params__", None), "frozen", False):
        return cast(Hashable, value)   # a frozen dataclass: equal to its own class only
    if kind is np.ndarray and not value.dtype.hasobject:
        return (kind, value.dtype.str, value.shape, value.tobytes())
    raise Unkeyed(kind)


def _frozen_float(value: float) -> Hashable:
    """A float as a key part: (float, value), equal only to a float of the same bits (a NaN to
    itself only), a zero as (float, its hex spelling), which keeps its sign."""
    return (float, value) if value else (float, value.hex())


def _frozen_sequence(kind: type, value: Any) -> Hashable:
    """A list or tuple as a key part: (kind, *values) where every value is an int, a string or
    None; (kind, the values' types, *values) where they are also floats (no zero among them)
    or bools; else (kind, *each value frozen). The three forms never equal one another (their
    lengths or second items differ)."""
    types = set(map(type, value))
    if types <= _EXACT:
        return (kind, *value)
    if types <= _PLAIN and 0.0 not in value:   # a zero (or False) keeps its sign below
        return (kind, tuple(map(type, value)), *value)
    return (kind, *map(frozen, value))


def _frozen_dict(value: dict[str, Any]) -> Hashable:
    """A dict's names, then its values frozen."""
    out: list[Hashable] = [tuple(value)]
    _freeze_values(value.values(), out)
    return tuple(out)


def _freeze_values(values: Iterable[Any], out: list[Hashable]) -> None:
    """Append `values` frozen to `out`: ints, strings, None, lists of them and floats inline
    (the common attributes, frozen without a call), a dict as its names, then its values."""
    append = out.append
    for v in values:
        kind = type(v)
        if kind in _EXACT:
            append(v)
        elif kind is list and _EXACT.issuperset(map(type, v)):
            append((list, *v))
        elif kind is float:
            append((float, v) if v else (float, v.hex()))
        elif kind is dict:   # attributes: names, then values
            append(tuple(v))
            _freeze_values(v.values(), out)
        else:
            append(frozen(v))


def key(x: Any, backend: str, *parts: Any, arrays: tuple[Any, ...] = ()
        ) -> tuple[Hashable, ...] | None:
    """The key of a call on the array `x` (its shape, strides, dtype and, on the GPU, device)
    and the further `arrays` (the type, shape, strides and dtype of each) on `backend` with
    `parts` (the operator, opset, attributes: each `frozen`), or None where a part cannot key
    a cache."""
    body: list[Hashable] = [backend, x.device.id if backend == "cupy" else None, x.shape,
                            x.strides, x.dtype]
    for a in arrays:
        body += (cast(Hashable, type(a)), a.shape, a.strides, a.dtype)
    try:
        _freeze_values(parts, body)
    except Unkeyed:
        return None
    return tuple(body)


def on_device(x: Any, backend: str, body: Call) -> Call:
    """`body` as the prepared call of inputs on `x`'s device: on the 'cupy' path run with that
    device current (every input the call is given lives there: its key names the device),
    directly where it is current already, else inside cupy.cuda.Device; on the other paths
    `body` itself."""
    if backend != "cupy":
        return body
    device = x.device.id
    cuda = execution.cupy_module().cuda
    current, Device = cuda.runtime.getDevice, cuda.Device

    def call(*args: Any) -> Any:
        if current() == device:
            return body(*args)
        with Device(device):
            return body(*args)
    return call


def allocating(shape: tuple[int, ...], backend: str, op: str) -> Call:
    """The call of an empty output: call(X, out) -> the output of `shape` (X's dtype, on X's
    device), with nothing to launch."""
    def call(x: Any, out: Any) -> Any:
        with arrays.on_device(x, backend):
            return arrays.output(out, x, shape, x.dtype, backend, op)
    return call


def upload(backend: str, *host: np.ndarray) -> tuple[Any, ...]:
    """`host` arrays where the kernels read them: on the 'cupy' path copied to the current
    device and waited for, once (so that a launch on any stream reads them without waiting);
    on the emulated path the arrays themselves. A prepared call uploads its tables at its
    first occurrence and keeps them."""
    if backend != "cupy":
        return host
    cp = execution.cupy_module()
    device = tuple(cp.asarray(a) for a in host)
    done = cp.cuda.Event(disable_timing=True)
    done.record()
    done.synchronize()
    return device


SCRATCH_ALIGN = 256   # bytes: each array `scratch` carves starts at a multiple of this


def scratch(backend: str, *layouts: tuple[tuple[int, ...], np.dtype]) -> list[Any]:
    """C-contiguous arrays of these (shape, dtype) for one call's launches, carved from the
    `workspace` (each at a multiple of SCRATCH_ALIGN bytes): a call's copies of inputs that its
    kernels cannot walk, and partial results between its launches, allocate nothing. On the
    'cupy' path the arrays carved from a workspace buffer are kept with it, for the next call
    of the same layouts."""
    spans, end = _spans(layouts)
    space = workspace(backend, end)
    if backend == "cupy":
        carved = _carved.get((id(space), layouts))
        if carved is not None and carved[0] is space:
            return list(carved[1])
    views = [space[at:at + nbytes].view(dtype).reshape(shape)
             for (at, nbytes), (shape, dtype) in zip(spans, layouts)]
    if backend == "cupy":
        if len(_carved) >= MAX_CALLS:   # bounded as the prepared calls are
            _carved.clear()
        _carved[id(space), layouts] = (space, tuple(views))
    return views


PLACES = 16   # (stream, host thread) pairs a Scratch keeps its carved arrays for


class Scratch:
    """The scratch arrays of one prepared call's launches: C-contiguous arrays of `layouts`
    ((shape, dtype) each) as `scratch` carves them from the workspace. On the 'cupy' path a
    prepared call runs on the one device its key names, so the arrays carved for the current
    stream and host thread are kept for the call's next run there (for at most PLACES pairs):
    a repeated call finds them with one look-up."""

    def __init__(self, backend: str, *layouts: tuple[tuple[int, ...], np.dtype]) -> None:
        self.backend, self.layouts = backend, layouts
        self._stream = execution.cupy_module().cuda.get_current_stream if backend == "cupy" \
            else None
        self._kept: dict[tuple[int, int], tuple[Any, ...]] = {}

    def __call__(self) -> tuple[Any, ...]:
        if self._stream is None:
            return tuple(scratch(self.backend, *self.layouts))
        at = (self._stream().ptr, threading.get_ident())
        views = self._kept.get(at)
        if views is None:
            if len(self._kept) >= PLACES:
                self._kept.clear()
            views = self._kept[at] = tuple(scratch(self.backend, *self.layouts))
        return views


@functools.lru_cache(maxsize=256)
def _spans(layouts: tuple[tuple[tuple[int, ...], np.dtype], ...]
           ) -> tuple[list[tuple[int, int]], int]:
    """(byte offset, bytes) of each layout in a workspace, and the bytes they need in all."""
    spans, end = [], 0
    for shape, dtype in layouts:
        nbytes = math.prod(shape) * dtype.itemsize
        spans.append((end, nbytes))
        end += -(-nbytes // SCRATCH_ALIGN) * SCRATCH_ALIGN
    return spans, end


def contiguous(backend: str, x: Any) -> Any:
    """`x` copied into a C-contiguous `scratch` array (the copy a kernel reads where it cannot
    walk `x`'s strides)."""
    (copy,) = scratch(backend, (tuple(x.shape), x.dtype))
    copy[...] = x
    return copy


_workspaces: dict[tuple[int, int, int], list[Any]] = {}
# (id of a workspace buffer, layouts) -> (that buffer, the arrays `scratch` carved from it)
_carved: dict[tuple[int, Any], tuple[Any, tuple[Any, ...]]] = {}
_workspace_lock = threading.Lock()


def workspace(backend: str, nbytes: int) -> Any:
    """A buffer of at least `nbytes` bytes for the scratch data of one call's launches. On the
    'cupy' path the current device's, stream's and host thread's (as cuBLAS workspaces are kept
    per stream; per thread too, since threads share the null stream and their launches
    interleave on it): allocated once and grown to the largest request, never freed, so that a
    CUDA graph captured on a stream keeps a valid buffer (calls of one thread on one stream run
    in order; a captured graph replayed on another stream must not run beside calls on the
    stream it was captured on). On the emulated path a new host buffer."""
    if backend != "cupy":
        return np.empty(nbytes, np.uint8)
    cp = execution.cupy_module()
    at = (cp.cuda.runtime.getDevice(), cp.cuda.get_current_stream().ptr, threading.get_ident())
    with _workspace_lock:
        kept = _workspaces.setdefault(at, [])
        if not kept or kept[-1].nbytes < nbytes:
            kept.append(cp.empty(max(nbytes, 2 * kept[-1].nbytes if kept else 0), np.uint8))
        return kept[-1]
