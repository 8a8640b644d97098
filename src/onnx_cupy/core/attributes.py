"""Attribute values as ONNX types them, validated once for every family: 0/1 flags, int lists,
FLOATs; each error names the operator, the attribute and the value. Also the limits every plan
holds its sizes to: an INTS value fits int64 (ONNX's type for it), a coordinate or extent the
kernels compute from the attributes stays within EXTENT_LIMIT (their 64-bit offsets add two
such values), and an output or scratch array fits the host's memory (`fits`)."""
from __future__ import annotations

import functools
import math
import os
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1   # an INTS attribute's range (int64)
EXTENT_LIMIT = 2**62   # most a coordinate, extent or element count a plan may reach


@functools.cache
def memory_limit() -> int:
    """The bytes one array may take: the host's physical memory (where the NumPy and emulated
    paths hold it; the same limit on the GPU path, so that every path refuses alike)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):   # no sysconf: no limit but int64's
        return EXTENT_LIMIT


def extent(op: str, value: int, what: str, cause: str) -> None:
    """ValueError where `value`, an extent or coordinate that `cause` (the attributes and
    values that make it) gives, passes EXTENT_LIMIT (2**62: the kernels' 64-bit offsets add two
    such values)."""
    if abs(value) > EXTENT_LIMIT:
        raise ValueError(f"{op}: {what} {value} (from {cause}) passes 2**62, the most the "
                         f"kernels' 64-bit offsets hold")


def fits(op: str, shape: tuple[int, ...], dtype: Any, cause: str, what: str = "the output"
         ) -> None:
    """ValueError, before anything is allocated, where an array of `shape` and `dtype` (`what`:
    the output, a workspace) made by `cause` (the attributes or inputs and their values that
    decide its shape) holds more than EXTENT_LIMIT elements or more bytes than memory_limit()."""
    elements = math.prod(shape)
    nbytes = elements * np.dtype(dtype).itemsize
    if elements > EXTENT_LIMIT or nbytes > memory_limit():
        raise ValueError(f"{op}: {what} would have the shape {tuple(shape)} (from {cause}): "
                         f"{elements} elements, {nbytes} bytes, past 2**62 elements or this "
                         f"machine's memory ({memory_limit()} bytes)")


def is_int(value: Any) -> bool:
    """An integer, Python or NumPy, and not a bool (True is no axis, length or opset)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """A real number (an integer or a float, Python or NumPy), and not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def differs(value: Any, default: Any) -> bool:
    """Whether an attribute counts as given: its value differs from the default (a value that
    does not compare, such as an array, differs)."""
    if default is None:
        return value is not None
    try:
        return bool(value != default)
    except (TypeError, ValueError):
        return True


def cached(fn: functools._lru_cache_wrapper[T], *args: Any) -> T:
    """`fn(*args)` through `fn`'s cache, for arguments checked only as far as a key needs: INTS
    as tuples of ints (`ints`), scalars as they are, `fn` caching by type (`typed=True`) so
    that no value equal to a valid one (1.0, True) hits without validation. Arguments that
    cannot key a cache (a list where a number belongs) go to the function itself, whose
    validation raises the error that names them."""
    try:
        return fn(*args)
    except TypeError:
        try:
            hash(args)
        except TypeError:
            return fn.__wrapped__(*args)
        raise


def flag(op: str, name: str, value: Any) -> int:
    """A 0/1 integer attribute (ceil_mode, count_include_pad, antialias, exclude_outside)."""
    if not isinstance(value, (int, np.integer)) or value not in (0, 1):
        raise ValueError(f"{op}: attribute '{name}' must be 0 or 1, got {value!r}")
    return int(value)


def ints(op: str, name: str, value: Any, length: int | None = None, minimum: int | None = None,
         per: str = "") -> tuple[int, ...]:
    """An INTS attribute: a sequence (or 1-D array) of ints, `length` of them when given (`per`
    says what sets that length), each >= `minimum` when given."""
    seq = value.tolist() if isinstance(value, np.ndarray) else value
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__") or not all(
            map(is_int, seq)):
        raise TypeError(f"{op}: attribute '{name}' must be a sequence of ints, got {value!r}")
    seq = tuple(int(v) for v in seq)
    if any(not INT64_MIN <= v <= INT64_MAX for v in seq):
        raise ValueError(f"{op}: attribute '{name}' values must fit in int64 (an ONNX INTS "
                         f"attribute), got {list(seq)}")
    if length is not None and len(seq) != length:
        raise ValueError(f"{op}: attribute '{name}' has {len(seq)} values, expected {length}"
                         f"{' ' + per if per else ''}: {list(seq)}")
    if minimum is not None and any(v < minimum for v in seq):
        raise ValueError(f"{op}: attribute '{name}' values must be >= {minimum}, got {list(seq)}")
    return seq


def float32(op: str, name: str, value: Any) -> float:
    """A FLOAT attribute: a real number, rounded to float32 as a model stores it."""
    if not is_real(value):
        raise TypeError(f"{op}: attribute '{name}' must be a float, got {value!r}")
    with np.errstate(over="ignore"):
        return float(np.float32(value))
