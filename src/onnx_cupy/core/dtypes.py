"""The dtype table: NumPy dtype <-> kernel storage type and accumulate type.

bfloat16 comes from ml_dtypes (NumPy) and is the same dtype object CuPy uses.
"""
from __future__ import annotations

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


def check_bfloat16(dtype: np.dtype, op: str, version: int, since: int | None) -> None:
    """TypeError for a bfloat16 input before version `since` of `op` (None: no version takes it)."""
    if np.dtype(dtype) == BFLOAT16 and BFLOAT16 is not None and (since is None or version < since):
        raise TypeError(
            f"{op}: input dtype bfloat16 requires opset >= {since} "
            f"(got the opset-{version} version)"
        )


def check_float(dtype: np.dtype, op: str, version: int, bf16_from: int | None) -> str:
    """Validate an operator input dtype; returns its table name.

    float16/float32/float64 at every version; bfloat16 from version `bf16_from` on.
    """
    name = float_name(dtype)
    if name is None:
        raise TypeError(
            f"{op}: input dtype {np.dtype(dtype)} is not supported "
            f"(expected float16, float32, float64"
            f"{' or bfloat16' if bf16_from is not None else ''})"
        )
    check_bfloat16(dtype, op, version, bf16_from)
    return name


def accumulate_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for 16-bit and 32-bit floats, float64 for float64."""
    return FLOAT_TYPES[np.dtype(dtype).name][2]


def index_bits(*extents: int) -> int:
    """32 when every offset/extent fits a signed 32-bit int, else 64."""
    return 32 if max(extents, default=0) <= INT32_LIMIT else 64
