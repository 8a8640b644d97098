"""The dtype table: NumPy dtype <-> kernel storage type and accumulate type; and the one checker
of the families' per-version dtype tables (which dtypes each operator version takes).

bfloat16 comes from ml_dtypes (NumPy) and is the same dtype object CuPy uses.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

try:  # optional: bfloat16 exists only when ml_dtypes is installed
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    BFLOAT16 = None

# name -> (kernel storage type, kernel accumulate type, NumPy accumulate dtype)
FLOAT_TYPES: dict[str, tuple[str, str, np.dtype]] = {
    "float16": ("oc::half_t", "float", np.dtype(np.float32)),
    "bfloat16": ("oc::bf16_t", "float", np.dtype(np.float32)),
    "float32": ("float", "float", np.dtype(np.float32)),
    "float64": ("double", "double", np.dtype(np.float64)),
}

# name -> kernel storage type of the integer dtypes (Resize interpolates them in double)
INT_TYPES: dict[str, str] = {
    "int8": "signed char", "uint8": "unsigned char", "int16": "short", "uint16": "unsigned short",
    "int32": "int", "uint32": "unsigned int", "int64": "long long", "uint64": "unsigned long long",
}

INDEX_TYPES = {32: "int", 64: "long long"}
# the same, as NumPy dtypes
INDEX_DTYPES: dict[int, np.dtype] = {32: np.dtype(np.int32), 64: np.dtype(np.int64)}
INT32_LIMIT = 2**31 - 1


def storage_type(name: str) -> str:
    """The kernels' storage type of elements of the dtype `name` (a float or an integer)."""
    return FLOAT_TYPES[name][0] if name in FLOAT_TYPES else INT_TYPES[name]


def float_name(dtype: np.dtype) -> str | None:
    """The table name of a floating dtype, or None if the table has no such float."""
    name = np.dtype(dtype).name
    return name if name in FLOAT_TYPES else None


# The per-version dtype tables of the families (e.g. pool.plan.DTYPES) map each input dtype an
# operator takes to the version of the operator that brought it: a version takes every dtype
# brought by it or before it (no version of these operators dropped one). Keys are NumPy dtype
# names, and STRING for every string dtype.
STRING = "string"   # NumPy kinds U and S, and object arrays (of strings)
FLOATS = ("float16", "float32", "float64")


def since(version: int, *names: str) -> dict[str, int]:
    """A table fragment: each of `names` brought by `version`."""
    return dict.fromkeys(names, version)


def table_name(dtype: np.dtype) -> str:
    """A dtype's key in the per-version tables."""
    dtype = np.dtype(dtype)
    return STRING if dtype.kind in "OUS" else dtype.name


def check(op: str, table: Mapping[str, int], dtype: Any, version: int, opset: int | None = None,
          mode: str = "", input: str = "input") -> str:
    """Validate the dtype of an input of `op`-`version` (in force at `opset`, where given) against
    its `table` (of `mode`, for an operator whose modes take different dtypes; `input` names the
    input in the message where an operator has several tables); returns the dtype's table key.
    The TypeError lists what the version takes, and for a dtype that a later version brought,
    names the opset that brought it."""
    name = table_name(dtype)
    brought = table.get(name)
    if brought is not None and brought <= version:
        return name
    in_mode = f" in mode {mode!r}" if mode else ""
    takes = (f"{op}-{version}{f', in force at opset {opset},' if opset is not None else ''} "
             f"takes {', '.join(n for n, v in table.items() if v <= version)}{in_mode}")
    if brought is None:
        raise TypeError(f"{op}: {input} dtype {np.dtype(dtype)} is not supported{in_mode}; "
                        f"{takes}")
    raise TypeError(f"{op}: {input} dtype {name} requires opset >= {brought} (it came with "
                    f"{op}-{brought}); {takes}")


def accumulate_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16-bit and 32-bit floats, float64 for float64."""
    return FLOAT_TYPES[np.dtype(dtype).name][2]


def offset_bits(*extents: int) -> int:
    """32 when every offset/extent fits a signed 32-bit int, else 64."""
    return 32 if max(extents, default=0) <= INT32_LIMIT else 64
