"""Attribute values as ONNX types them, validated once for every family: 0/1 flags, int lists,
FLOATs; each error names the operator, the attribute and the value."""
from __future__ import annotations

from typing import Any

import numpy as np


def hashable(value: Any) -> Any:
    """An attribute list as a tuple (plans are cached by their arguments); anything else as is,
    to be validated by the plan."""
    if value is None or isinstance(value, (str, bytes)):
        return value
    try:
        return tuple(value.tolist() if hasattr(value, "tolist") else value)
    except TypeError:
        return value


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
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in seq):
        raise TypeError(f"{op}: attribute '{name}' must be a sequence of ints, got {value!r}")
    seq = tuple(int(v) for v in seq)
    if length is not None and len(seq) != length:
        raise ValueError(f"{op}: attribute '{name}' has {len(seq)} values, expected {length}"
                         f"{' ' + per if per else ''}: {list(seq)}")
    if minimum is not None and any(v < minimum for v in seq):
        raise ValueError(f"{op}: attribute '{name}' values must be >= {minimum}, got {list(seq)}")
    return seq


def float32(op: str, name: str, value: Any) -> float:
    """A FLOAT attribute: a real number, rounded to float32 as a model stores it."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer,
                                                                      np.floating)):
        raise TypeError(f"{op}: attribute '{name}' must be a float, got {value!r}")
    with np.errstate(over="ignore"):
        return float(np.float32(value))
