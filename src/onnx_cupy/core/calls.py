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
validation with exactly these values. A value that cannot key a cache (a CuPy array, an object
of a type of its own) makes the call run unkeyed: validated and prepared every time, its error
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
import dataclasses
import functools
import math
import pickle
import threading
from collections.abc import Callable, Hashable, Iterator
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


def frozen(value: Any) -> Hashable:
    """`value` as a key part that equals another only for a value of the same type and value:
    an int, a string or None as it is, anything else as its pickle (made at C speed), which
    spells floats and NumPy scalars with their type and bits (-0.0 differs from 0.0), bools
    apart from ints, lists apart from tuples, dicts as their names and values, NumPy arrays by
    dtype, shape and bytes, frozen dataclass instances by class and fields. Any other object (a
    CuPy array, ...) raises Unkeyed before any code of its own runs: a device array is never
    read to key a call. (Equal sets may pickle in different orders: they miss each other.)"""
    if type(value) in _EXACT:
        return cast(Hashable, value)
    local = _picklers.__dict__   # this thread's: its key pickler, taken while it pickles
    pickler, written = local.pop("kept", None) or _pickler()
    try:
        pickler.dump(value)
        return written[0] if len(written) == 1 else b"".join(written)   # large: in frames
    except Unkeyed:
        raise
    except Exception as exc:   # what pickle refuses (a class defined in a function, a cycle)
        raise Unkeyed(type(value)) from exc
    finally:
        written.clear()
        local["kept"] = (pickler, written)


def _pickler() -> tuple[_KeyPickler, list[bytes]]:
    """A key pickler and the list it writes its pickle to."""
    written: list[bytes] = []
    pickler = _KeyPickler(_Sink(written.append), pickle.HIGHEST_PROTOCOL)
    pickler.fast = True   # no memo: equal values pickle alike, whatever objects they share
    return pickler, written


_EXACT = frozenset({int, str, type(None)})   # types whose values equal only their own type's
_picklers = threading.local()   # `kept`: each thread's idle key pickler and what it writes to


class _Sink:
    """A file for a pickler: `write` appends each chunk to a list."""

    __slots__ = ("write",)

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write


def _key_part(*fields: Any) -> None:
    """What a NumPy value or a frozen dataclass instance pickles as in a key (never called:
    keys are not unpickled)."""
    raise TypeError("a key part is not unpickled")


def _is_frozen_dataclass(kind: Any) -> bool:
    return bool(getattr(getattr(kind, "__dataclass_params__", None), "frozen", False))


class _KeyPickler(pickle.Pickler):
    """The pickler of key parts: NumPy arrays (not of objects) and scalars by kind, dtype,
    shape and bytes, frozen dataclass instances by class and fields, builtin values as pickle
    spells them; Unkeyed for any other object (reducer_override sees every object that is not
    of a builtin type)."""

    __slots__ = ()   # `fast` is the C pickler's own

    def reducer_override(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is np.ndarray or isinstance(obj, np.generic):
            if obj.dtype.kind in "OV":   # objects, or fields that dtype.str does not name
                raise Unkeyed(kind)
            return _key_part, (kind is np.ndarray, obj.dtype.str, obj.shape, obj.tobytes())
        if obj is _key_part or (isinstance(obj, type) and _is_frozen_dataclass(obj)):
            return NotImplemented   # pickled by name
        if _is_frozen_dataclass(kind):
            return _key_part, (kind, *(getattr(obj, f.name) for f in dataclasses.fields(obj)))
        raise Unkeyed(kind)


def key(x: Any, backend: str, *parts: Any, arrays: tuple[Any, ...] = (),
        vectors: tuple[Any, ...] = ()) -> tuple[Hashable, ...] | None:
    """The key of a call on the array `x` (its shape, strides, dtype and, on the GPU, device)
    and the further `arrays` (the type, shape, strides and dtype of each) on `backend` with
    `parts` (the operator, opset, attributes) and the host `vectors` (such as Resize's scales),
    or None where a part cannot key a cache. Parts and vectors that are all ints, strings or
    None, or dicts of them, key as they are (`_plain`), others `frozen` together; where NumPy arrays are among the vectors,
    each vector's place holds its dtype, shape and bytes, or None for a vector of another type
    (which then goes with the parts)."""
    layout: tuple[Hashable, ...] = (backend, x.device.id if backend == "cupy" else None,
                                    x.shape, x.strides, x.dtype)
    for a in arrays:
        layout += (type(a), a.shape, a.strides, a.dtype)
    for v in vectors:
        if type(v) is np.ndarray:   # the arrays' bytes without a pickle
            places, vectors = _apart(vectors)
            layout += places
            break
    parts += vectors
    plain = _plain(parts)
    if plain is not None:
        return (*layout, plain)
    try:
        return (*layout, frozen(parts))
    except Unkeyed:
        return None


def _plain(parts: tuple[Any, ...]) -> tuple[Hashable, ...] | None:
    """`parts` as they are where all are ints, strings or None, a dict of such values (an
    operator's attributes) spelled as its size, names and values; else None (the parts are
    pickled). Such a tuple never equals a pickle, so the two kinds of key never meet."""
    flat: list[Hashable] = []
    for p in parts:
        kind = type(p)
        if kind is dict:
            values = p.values()
            for v in values:   # the first other value ends the look (a list: pickled)
                if type(v) not in _EXACT:
                    return None
            flat += (len(p), *p, *values)
        elif kind in _EXACT:
            flat.append(p)
        else:
            return None
    return tuple(flat)


def _apart(vectors: tuple[Any, ...]) -> tuple[tuple[Hashable, ...], tuple[Any, ...]]:
    """(each vector's place in a key: a NumPy array's dtype, shape and bytes, or None; the
    vectors of other types, which go with the parts)."""
    places: list[Hashable] = []
    others: list[Any] = []
    for v in vectors:
        if type(v) is np.ndarray and v.dtype.kind not in "OV":
            places.append((v.dtype.str, v.shape, v.tobytes()))
        else:
            places.append(None)
            others.append(v)
    return tuple(places), tuple(others)


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
    ((shape, dtype) each) as `scratch` carves them from the workspace, those whose positions
    are in `zeroed` set to zero bits at every call (the partial results a launch accumulates
    into). On the 'cupy' path a prepared call runs on the one device its key names, so the
    arrays carved for the current stream and host thread, and their memsets, are kept for the
    call's next run there (for at most PLACES pairs): a repeated call finds them with one
    look-up."""

    def __init__(self, backend: str, *layouts: tuple[tuple[int, ...], np.dtype],
                 zeroed: tuple[int, ...] = ()) -> None:
        self.backend, self.layouts, self.zeroed = backend, layouts, zeroed
        self._stream = execution.cupy_module().cuda.get_current_stream if backend == "cupy" \
            else None
        # (stream, thread) -> (the carved arrays, the memsets of those zeroed)
        self._kept: dict[tuple[int, int], tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def __call__(self) -> tuple[Any, ...]:
        if self._stream is None:
            views = tuple(scratch(self.backend, *self.layouts))
            for i in self.zeroed:
                arrays.zero(views[i], self.backend)
            return views
        at = (self._stream().ptr, threading.get_ident())
        kept = self._kept.get(at)
        if kept is None:
            if len(self._kept) >= PLACES:
                self._kept.clear()
            views = tuple(scratch(self.backend, *self.layouts))
            kept = self._kept[at] = (views, tuple(
                functools.partial(views[i].data.memset_async, 0, views[i].nbytes)
                for i in self.zeroed))
        for memset in kept[1]:   # on the current stream, as arrays.zero
            memset()
        return kept[0]


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
