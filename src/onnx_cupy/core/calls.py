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
        pl = plan.make(...)                        # validation, raised before anything runs
        call = _CALLS.put(key, numpy_path.prepare(pl, x.dtype) if backend == "numpy"
                          else kernel.prepare(pl, x, backend))
    return call(x, out)
"""
from __future__ import annotations

import collections
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

MAX_CALLS = 512   # prepared calls kept per family (the least recently used goes first)

Call = Callable[..., Any]   # call(x, out, ...) -> the outputs

_caches: list[Cache] = []


class Unkeyed(Exception):
    """A value that cannot key a cache (raised by `frozen`, caught by `key`)."""


class Cache(collections.OrderedDict[Hashable, Call]):
    """The prepared calls of one family, by key: at most `size` of them, the least recently
    used evicted first. The one cache of the family's calls: what a kept call's launches read
    (parameter structs, uploaded tables, scratch) is owned by the call, never by a cache below
    it. `get` finds a call (None for a None key, an unkeyed call) and makes it the most
    recently used."""

    def __init__(self, name: str, size: int = MAX_CALLS) -> None:
        super().__init__()
        self.name, self.size = name, size
        self._lock = threading.Lock()
        _caches.append(self)

    def get(self, key: Hashable | None,  # type: ignore[override]
            default: Call | None = None) -> Call | None:
        try:
            self.move_to_end(key)   # (a None key is never kept)
            return self[key]
        except (KeyError, TypeError):   # not kept (or evicted meanwhile), or unhashable
            return default

    def put(self, key: Hashable | None, call: Call) -> Call:
        """Keep `call` for `key` (unless the call is unkeyed); returns `call`."""
        if key is not None:
            with self._lock:
                while len(self) >= self.size:
                    self.popitem(last=False)
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
    kept = ([dict(c) for c in _caches], dict(_workspaces), loader.swap_functions({}),
            list(_pinned), list(_graph_kept))
    for cache in _caches:
        cache.clear()
    _workspaces.clear()
    _pinned.clear()
    _graph_kept.clear()
    try:
        yield
    finally:
        for cache, entries in zip(_caches, kept[0]):
            cache.clear()
            cache.update(entries)
        _workspaces.clear()
        _workspaces.update(kept[1])
        _pinned[:] = kept[3]
        _graph_kept[:] = kept[4]
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
    """The key of a call on the array `x` (its shape, strides, dtype, address modulo 8 on the
    kernel paths, where the alignment policy reads it, and on the GPU its device) and the
    further `arrays` (the type, shape, strides, dtype and address modulo 8 of each) on
    `backend` with
    `parts` (the operator, opset, attributes) and the host `vectors` (such as Resize's scales),
    or None where a part cannot key a cache. Parts and vectors that are all ints, strings or
    None, or dicts of them, key as they are (`_plain`), others `frozen` together; where NumPy arrays are among the vectors,
    each vector's place holds its dtype, shape and bytes, or None for a vector of another type
    (which then goes with the parts)."""
    layout: tuple[Hashable, ...] = (
        (backend, x.device.id, x.shape, x.strides, x.dtype, x.data.ptr % 8)
        if backend == "cupy" else (backend, None, x.shape, x.strides, x.dtype, _skew(x, backend)))
    for a in arrays:
        layout += (type(a), a.shape, a.strides, a.dtype, _skew(a, backend))
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


def _skew(a: Any, backend: str) -> int | None:
    """`a`'s address modulo 8 on the kernel paths (None on the NumPy path and for a None)."""
    if backend == "numpy" or a is None:
        return None
    return int(a.data.ptr if backend == "cupy" else a.__array_interface__["data"][0]) % 8


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


def device_bound(x: Any, backend: str, body: Call) -> Call:
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
MAX_STREAMS = 8       # workspaces kept per host thread and device: its most recently used streams


def scratch(backend: str, *layouts: tuple[tuple[int, ...], np.dtype]) -> list[Any]:
    """C-contiguous arrays of these (shape, dtype) for one call's launches, carved from the
    `workspace` (each at a multiple of SCRATCH_ALIGN bytes): a call's copies of inputs that its
    kernels cannot walk, and partial results between its launches, allocate nothing. On the
    'cupy' path the arrays carved from a workspace are kept with it, for the next call of the
    same layouts on its stream and thread."""
    if backend != "cupy":
        return _carve(np.empty(_spans(layouts)[1], np.uint8), layouts)
    return list(_place(execution.cupy_module()).carved(layouts)[0])


class Scratch:
    """The scratch arrays of one prepared call's launches: C-contiguous arrays of `layouts`
    ((shape, dtype) each) as `scratch` carves them from the workspace, those whose positions
    are in `zeroed` set to zero bits at every call (the partial results a launch accumulates
    into), by memsets on the current stream. A repeated call finds its arrays, carved for the
    current stream and host thread, with one look-up in the workspace of that place (which
    owns them: they go with it). `level`: the workspace's level, 1 for a call's copies of its
    inputs that another call then reads (whose own scratch is at level 0)."""

    def __init__(self, backend: str, *layouts: tuple[tuple[int, ...], np.dtype],
                 zeroed: tuple[int, ...] = (), level: int = 0) -> None:
        self.backend, self.layouts, self.zeroed, self.level = backend, layouts, zeroed, level
        self._cupy = execution.cupy_module() if backend == "cupy" else None
        self._stream: Any = self._cupy.cuda.get_current_stream if self._cupy is not None else None
        # (stream, host thread) -> the workspace found there last (a prepared call runs on the
        # one device its key names), while it lives
        self._spaces: dict[tuple[int, int], Workspace] = {}

    def __call__(self) -> tuple[Any, ...]:
        if self._cupy is None:
            views = tuple(scratch(self.backend, *self.layouts))
            for i in self.zeroed:
                arrays.zero(views[i], self.backend)
            return views
        at = (self._stream().ptr, threading.get_ident())
        space = self._spaces.get(at)
        if space is None or not space.alive:
            if len(self._spaces) >= MAX_STREAMS:
                self._spaces.clear()
            space = self._spaces[at] = _place(self._cupy, self.level)
        views, memsets = space.carved(self.layouts, self.zeroed)
        for memset in memsets:   # on the current stream, as arrays.zero
            memset()
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


def _carve(buffer: Any, layouts: tuple[tuple[tuple[int, ...], np.dtype], ...]) -> list[Any]:
    return [buffer[at:at + nbytes].view(dtype).reshape(shape)
            for (at, nbytes), (shape, dtype) in zip(_spans(layouts)[0], layouts)]


def contiguous(backend: str, x: Any) -> Any:
    """`x` copied into a C-contiguous `scratch` array (the copy a kernel reads where it cannot
    walk `x`'s strides)."""
    (copy,) = scratch(backend, (tuple(x.shape), x.dtype))
    copy[...] = x
    return copy


class Workspace:
    """The scratch memory of one place (cupy module, device, host thread, stream, level): a
    device buffer grown to the largest request, and the arrays carved from it per layouts, with
    their memsets. `pinned` once a call ran on it while its stream was being captured into a
    CUDA graph: the graph reads it, so its buffer is never replaced, and the first call on its
    place outside a capture (or one that needs more) hands the place a new workspace; only
    `release_workspaces` frees a pinned one."""

    __slots__ = ("alive", "buffer", "cupy", "kept", "pinned", "place", "stream")

    def __init__(self, cupy: Any, stream: Any, place: tuple[int, ...]) -> None:
        self.cupy, self.stream, self.place, self.buffer, self.pinned = cupy, stream, place, \
            None, False
        self.alive = True   # False once its place dropped it (a Scratch looks it up again)
        self.kept: dict[Any, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def carved(self, layouts: tuple[tuple[tuple[int, ...], np.dtype], ...],
               zeroed: tuple[int, ...] = ()) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(the arrays of `layouts`, the memsets of those at `zeroed`), carved on first need."""
        if self.stream.is_capturing():
            self.pinned = True
        elif self.pinned:   # a captured graph's: this place's calls get a workspace of their own
            return _succeed(self).carved(layouts, zeroed)
        kept = self.kept.get((layouts, zeroed))
        if kept is not None:
            return kept
        end = _spans(layouts)[1]
        with _workspace_lock:
            if self.buffer is None or self.buffer.nbytes < end:
                if self.buffer is not None and self.pinned:   # never replaced under a graph
                    return _succeed(self).carved(layouts, zeroed)
                self.grow(end)
            views = tuple(_carve(self.buffer, layouts))
            kept = self.kept[layouts, zeroed] = (views, tuple(
                functools.partial(views[i].data.memset_async, 0, views[i].nbytes)
                for i in zeroed))
        return kept

    def grow(self, nbytes: int) -> None:
        """A buffer of at least `nbytes` (twice the old one's, at least), the carved arrays
        dropped (carved from the old buffer)."""
        size = max(nbytes, 2 * self.buffer.nbytes if self.buffer is not None else 0)
        self.buffer = self.cupy.empty(size, np.uint8)
        self.kept.clear()


# (cupy module's id, device, host thread, stream, level) -> its workspace, least recently used
# first; the pinned workspaces a place has handed on (CUDA graphs read them)
_workspaces: collections.OrderedDict[tuple[int, ...], Workspace] = collections.OrderedDict()
_pinned: list[Workspace] = []
# what captured CUDA graphs read that prepared calls own (their uploaded tables): kept past
# the calls' eviction from their caches, until release_workspaces()
_graph_kept: list[Any] = []
_workspace_lock = threading.RLock()
_threads = threading.local()   # `ending`: this thread's _ThreadEnd


class _ThreadEnd:
    """Held by one host thread (threading.local): when the thread ends, its workspaces go."""

    def __init__(self, ident: int) -> None:
        self.ident = ident

    def __del__(self) -> None:
        lock = _workspace_lock
        if lock is None:   # at interpreter exit
            return
        with lock:
            for place, space in list(_workspaces.items()):
                if place[2] == self.ident:
                    _drop(place, space)


def _drop(place: tuple[int, ...], space: Workspace) -> None:
    """Free a place's workspace (kept among the pinned where a graph reads it); under the lock."""
    if _workspaces.get(place) is space:
        del _workspaces[place]
    space.alive = False
    if space.pinned:
        _pinned.append(space)


def _succeed(space: Workspace) -> Workspace:
    """A new workspace for a pinned one's place (the pinned one kept for its graph)."""
    with _workspace_lock:
        _drop(space.place, space)
        new = _workspaces[space.place] = Workspace(space.cupy, space.stream, space.place)
    return new


def _place(cp: Any, level: int = 0) -> Workspace:
    """The workspace of the current place: `cp`'s current device, this host thread, its
    current stream (as cuBLAS keeps a workspace per stream; per thread too, since threads share
    the null stream and their launches interleave on it), `level`. Made on first use; at most
    MAX_STREAMS of one thread and device are kept, the least recently used freed first."""
    stream = cp.cuda.get_current_stream()
    place = (id(cp), cp.cuda.runtime.getDevice(), threading.get_ident(), stream.ptr, level)
    space = _workspaces.get(place)
    if space is not None and space.cupy is cp:
        if next(reversed(_workspaces), None) != place:   # not already the most recent
            with _workspace_lock:
                if _workspaces.get(place) is space:
                    _workspaces.move_to_end(place)
        return space
    with _workspace_lock:
        if getattr(_threads, "ending", None) is None:
            _threads.ending = _ThreadEnd(place[2])
        space = _workspaces[place] = Workspace(cp, stream, place)
        same = [(p, w) for p, w in list(_workspaces.items()) if p[:3] == place[:3]]
        for p, w in same[:max(0, len(same) - MAX_STREAMS)]:
            _drop(p, w)
        for p, w in list(_workspaces.items()):
            if w.cupy is not cp and p[0] == id(cp):
                w.alive = False
                del _workspaces[p]   # a module gone whose id was reused
    return space


def workspace(backend: str, nbytes: int) -> Any:
    """A buffer of at least `nbytes` bytes for the scratch data of one call's launches: on the
    'cupy' path the current place's (`_place`), kept and grown to the largest request, freed
    with its thread, when its stream is among the least recently used past MAX_STREAMS, or by
    `release_workspaces`; elsewhere a new host buffer."""
    if backend != "cupy":
        return np.empty(nbytes, np.uint8)
    space = _place(execution.cupy_module())
    with _workspace_lock:
        if space.buffer is None or space.buffer.nbytes < nbytes:
            if space.buffer is not None and space.pinned:
                space = _succeed(space)
            space.grow(nbytes)
    return space.buffer


def keep_for_graphs(owned: Any) -> None:
    """Where the current stream is being captured into a CUDA graph, keep `owned` (device
    tables that a call's launches read, which its prepared call owns) for as long as the graph
    may be replayed: past the call's eviction from its cache, until release_workspaces()."""
    if execution.cupy_module().cuda.get_current_stream().is_capturing():
        with _workspace_lock:
            if not any(kept is owned for kept in _graph_kept):
                _graph_kept.append(owned)


def release_workspaces() -> int:
    """Free the GPU scratch memory that calls keep between runs.

    A call whose kernels need scratch memory (copies of inputs they cannot walk, partial
    results between launches) carves it from a workspace kept per device, host thread and
    stream: allocated once, grown to the largest request, freed when its thread ends or when it
    is among the least recently used past the MAX_STREAMS streams of one thread and device.
    This frees every workspace now (those of CUDA graphs captured through onnx-cupy calls
    included), and the tables of prepared calls dropped from their caches that such graphs
    kept; the next call allocates anew.

    Returns
    -------
    int
        How many workspaces were freed.

    Notes
    -----
    A CUDA graph captured through onnx-cupy calls must not be launched after this: its scratch
    memory (and the tables of calls no longer kept) is gone. Kernels still running on the GPU keep theirs (CuPy's memory pool frees in
    stream order).

    Examples
    --------
    >>> import onnx_cupy as oc
    >>> freed = oc.release_workspaces()
    >>> oc.release_workspaces()
    0
    """
    with _workspace_lock:
        count = len(_workspaces) + len(_pinned)
        for space in _workspaces.values():
            space.alive = False
        _workspaces.clear()
        _pinned.clear()
        _graph_kept.clear()
    return count
