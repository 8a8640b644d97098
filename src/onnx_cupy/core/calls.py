"""Prepared calls: what a repeated call needs, kept so that it does only what each call must.

A family's call (onnx_cupy.core.kernel_call.KernelCall) keys a call by everything that decides
its work (`key`: every input's layout, execution path and device, and the operator's
arguments) and keeps, per key, the call prepared on its first occurrence (on the NumPy path the
plan and its tables, on the kernel paths the launches, with their records, grids, parameter
structs, uploaded tables and scratch) in the family's bounded cache (`Cache`). A repeated call
then builds its key, looks it up, allocates its outputs and launches: no validation beyond the
key, no NumPy work on the host, no host-device copy, no synchronization.

A key part equals another only for a value of the same type and value (`frozen`): 2.0, True and
numpy.float64(2) never hit the entry that 2 made, so a hit stands for a call that passed
validation with exactly these values. A value that cannot key a cache (a CuPy array, an object
of a type of its own) makes the call run unkeyed: validated and prepared every time, its error
raised by the validation as on a first call.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import pickle
import threading
from collections.abc import Callable, Hashable, Iterator
from typing import Any, cast

import numpy as np

from . import loader, workspaces

MAX_CALLS = 512   # prepared calls kept per family (the least recently used goes first)

Call = Callable[..., Any]   # call(*inputs, out) -> the outputs

_caches: list[Cache] = []


class Unkeyed(Exception):
    """A value that cannot key a cache (raised by `frozen`, caught by `key`)."""


class Cache:
    """The prepared calls of one declared call (or of a layer in front), by key: at most
    MAX_CALLS of them, the least recently used evicted first (each entry holds the tick of its
    last use: a hit hashes its key once). The one cache of those calls: what a kept call's
    launches read (parameter structs, uploaded tables, scratch) is owned by the call, never by
    a cache below it."""

    __slots__ = ("_entries", "_lock", "_ticks", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._entries: dict[Hashable, list[Any]] = {}   # key -> [call, tick of its last use]
        self._ticks = itertools.count()
        self._lock = threading.Lock()
        _caches.append(self)

    def get(self, key: Hashable | None) -> Call | None:
        """The call kept for `key`, made the most recently used; None where none is kept (a
        None key, an unkeyed call, is never kept)."""
        try:
            entry = self._entries[key]
        except (KeyError, TypeError):   # not kept (or evicted meanwhile), or unhashable
            return None
        entry[1] = next(self._ticks)
        return cast(Call, entry[0])

    def put(self, key: Hashable | None, call: Call) -> Call:
        """Keep `call` for `key` (unless the call is unkeyed); returns `call`."""
        if key is not None:
            entries = self._entries
            with self._lock:
                while len(entries) >= MAX_CALLS:
                    del entries[min(entries, key=lambda k: entries[k][1])]
                entries[key] = [call, next(self._ticks)]
        return call

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def clear(self) -> None:
        self._entries.clear()


def clear() -> None:
    """Empty every family's prepared calls (their device tables go with them)."""
    for cache in _caches:
        cache.clear()


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Inside the block, no prepared call, workspace or compiled function from outside it (and
    none of the block's after it): for a substitute cupy module (an emulated device), whose
    arrays and functions must not reach the real one, nor the real one's the substitute."""
    kept = [c._entries for c in _caches]
    for cache in _caches:
        cache._entries = {}
    functions = loader.swap_functions({})
    try:
        with workspaces.isolated():
            yield
    finally:
        for cache, entries in zip(_caches, kept):
            cache._entries = entries
        loader.swap_functions(functions)


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
    try:   # an idle key pickler (one per thread pickling at once; list pop and append are atomic)
        pickler, written = _idle.pop()
    except IndexError:
        pickler, written = _pickler()
    try:
        pickler.dump(value)
        part = written[0] if len(written) == 1 else b"".join(written)   # large: in frames
    except Unkeyed:
        raise
    except Exception as exc:   # what pickle refuses (a class defined in a function, a cycle)
        raise Unkeyed(type(value)) from exc
    finally:
        written.clear()
        _idle.append((pickler, written))
    return part


def _pickler() -> tuple[_KeyPickler, list[bytes]]:
    """A key pickler and the list it writes its pickle to."""
    written: list[bytes] = []
    pickler = _KeyPickler(_Sink(written.append), pickle.HIGHEST_PROTOCOL)
    pickler.fast = True   # no memo: equal values pickle alike, whatever objects they share
    return pickler, written


_idle: list[tuple[_KeyPickler, list[bytes]]] = []   # key picklers not pickling, with their output


class _Sink:
    """A file for a pickler: `write` appends each chunk to a list."""

    __slots__ = ("write",)

    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write


def _key_part(*fields: Any) -> None:
    """What a NumPy value or a frozen dataclass instance pickles as in a key (never called:
    keys are not unpickled)."""
    raise TypeError("a key part is not unpickled")


class Keyed:
    """A key part keyed once: `value` (anything `frozen` takes) with its frozen key, made here,
    for a part a caller passes unchanged at every call (a PyTorch-style function's coordinate
    source): keying it then writes its key's bytes instead of pickling the value again. The
    plan gets the value (core.kernel_call unwraps it)."""

    __slots__ = ("key", "value")

    def __init__(self, value: Any) -> None:
        self.value, self.key = value, frozen(value)


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
        if kind is Keyed:
            return _key_part, (Keyed, obj.key)
        if kind is np.ndarray or isinstance(obj, np.generic):
            if obj.dtype.kind in "OV":   # objects, or fields that dtype.str does not name
                raise Unkeyed(kind)
            return _key_part, (kind is np.ndarray, obj.dtype.str, obj.shape, obj.tobytes())
        if obj is _key_part or obj is Keyed or (isinstance(obj, type)
                                                and _is_frozen_dataclass(obj)):
            return NotImplemented   # pickled by name
        if _is_frozen_dataclass(kind):
            return _key_part, (kind, *(getattr(obj, f.name) for f in dataclasses.fields(obj)))
        raise Unkeyed(kind)


def key(backend: str, inputs: tuple[Any, ...], parts: tuple[Any, ...],
        vectors: tuple[Any, ...] = ()) -> tuple[Hashable, ...] | None:
    """The key of a call on `backend` of arrays `inputs` (each input's shape, strides and dtype;
    on the kernel paths its address modulo 8, which the alignment policy reads; on the GPU its
    device; None for an absent one) with `parts` (the operator's arguments: opset, attributes)
    and the host `vectors` (such as Resize's scales), or None where a part cannot key a cache.
    Parts and vectors that are all ints, strings or None, or dicts of them, key as they are
    (`_plain`), others `frozen` together (a pickle, faster than spelling lists in Python);
    where NumPy arrays are among the vectors, each vector's place holds its dtype, shape and
    bytes, or None for a vector of another type (which then goes with the parts)."""
    if len(inputs) == 1:   # the common call, without a loop
        x = inputs[0]
        if backend == "numpy":
            layout: tuple[Hashable, ...] = ((x.shape, x.strides, x.dtype),)
        elif backend == "cupy":
            data = x.data
            layout = ((data.device_id, x.shape, x.strides, x.dtype, data.ptr % 8),)
        else:
            layout = ((x.shape, x.strides, x.dtype, x.__array_interface__["data"][0] % 8),)
    elif backend == "numpy":
        layout = tuple(None if a is None else (a.shape, a.strides, a.dtype) for a in inputs)
    elif backend == "cupy":
        layout = tuple(None if a is None else (a.data.device_id, a.shape, a.strides, a.dtype,
                                               a.data.ptr % 8) for a in inputs)
    else:
        layout = tuple(None if a is None else (a.shape, a.strides, a.dtype,
                                               a.__array_interface__["data"][0] % 8)
                       for a in inputs)
    if vectors:
        for v in vectors:
            if type(v) is np.ndarray:   # the arrays' bytes without a pickle
                places, vectors = _apart(vectors)
                layout += places
                break
        parts += vectors
    plain = _plain(parts)
    if plain is not None:
        return (backend, *layout, plain)
    try:
        return (backend, *layout, frozen(parts))
    except Unkeyed:
        return None


_EXACT = frozenset({int, str, type(None)})   # types whose values equal only their own type's


def _plain(parts: tuple[Any, ...]) -> tuple[Hashable, ...] | None:
    """`parts` as they are where all are ints, strings or None, or dicts of such values (an
    operator's attributes, spelled as their size, names and values); else None (the parts are
    pickled). Such a tuple never equals a pickle, so the two kinds of key never meet."""
    flat: list[Hashable] = []
    for p in parts:
        kind = type(p)
        if kind is dict:
            if not _EXACT.issuperset(map(type, p.values())):
                return None   # a list, a float, ...: pickled
            flat += (len(p), *p, *p.values())
        elif kind in _EXACT:
            flat.append(p)
        else:
            return None
    return (*flat,)


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
