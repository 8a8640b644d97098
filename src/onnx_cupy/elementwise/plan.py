"""The elementwise steps as host plans: what each computes, element for element, as the NumPy call
that is its NumPy path computes it (numpy.py; the kernels of kernel.py compute the same numbers).

  POWER    y = T(T(x * scale) ** exponent) in X's float dtype T: the exponent rounded to T as
           NumPy takes a Python number with an array of T (NEP 50: a weak scalar; to inf past
           T's range), as PyTorch's pow of a 16-bit tensor takes it too; the scale as PyTorch's
           product of a tensor of T and a Python number takes it: rounded to T's operation type
           (float32 for float16 and bfloat16, T otherwise), the product computed in it and
           rounded once to T. x ** p is NumPy's power loop of T with a scalar exponent (a scale
           of 1 multiplies by nothing). lp_pool's x ** p, and its mean times the kernel volume,
           to the power 1 / p.
  WIDEN    y = float64(x) (exact; a copy of a float64 X): divisor_override pools X in float64.
  NARROW   y = T(w * factor[i % plane]) from a float64 w: the float64 product, rounded once to
           T, factor a float64 table (C-contiguous) of the last axes' elements (divisor_override:
           count / divisor per output position of a plane).
  CONVERT  y = x.astype(target): X of a float or integer dtype to a float dtype, or of a float
           dtype to int64 (truncated); torchvision's boxes and image indices.
  PRODUCT  y = T(T(a * T(coefficient * b)) * scale) of two arrays A and B of T, coefficient and
           scale, and the products by them, in T's operation type as for POWER's scale (a scale
           of 1 multiplies by nothing); masked by a third array Z
           of T: 0 where z = 0, y - y where z is NaN (0, or NaN for an infinite or NaN y),
           which is what PyTorch's autograd gives through sign(z) * relu(abs(z)). lp_pool's
           gradient: dY times the derivative of the root (masked by the pooled powers), and
           the pooled gradient times p x ** (p - 1).

A Step names its dtypes by name, so that it keys a prepared call as it is (onnx_cupy.core.calls).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core import dtypes

POWER, WIDEN, NARROW, CONVERT, PRODUCT = "power", "widen", "narrow", "convert", "product"
FLOAT64 = "float64"
INT64 = "int64"
# X's dtypes of CONVERT: floats and integers (a bool array is taken as its uint8 view)
SOURCES = (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)


@dataclass(frozen=True)
class Step:
    """One elementwise step (see the module docstring): `op` names the function it is a step of
    (in messages), `shape` is X's and Y's, `source` and `target` X's and Y's dtype names."""

    op: str
    kind: str
    shape: tuple[int, ...]
    source: str
    target: str
    exponent: float = 1.0   # POWER: rounded to T
    scale: float = 1.0      # POWER, PRODUCT: rounded to T's operation type (1: no product)
    factor: np.ndarray | None = field(default=None, compare=False)   # NARROW: float64 table
    coefficient: float = 1.0   # PRODUCT: rounded to T's operation type
    masked: bool = False       # PRODUCT: by a third array Z

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def plane(self) -> int:
        """NARROW: the factor table's entries (1 otherwise)."""
        return 1 if self.factor is None else self.factor.size

    @property
    def table(self) -> np.ndarray:
        """NARROW's factor table (ValueError for another step)."""
        if self.factor is None:
            raise ValueError(f"{self.op}: a {self.kind} step has no factor table")
        return self.factor


def _float(op: str, dtype: Any) -> str:
    name = dtypes.float_name(np.dtype(dtype))
    if name is None:
        raise TypeError(f"{op}: an elementwise step takes float16, bfloat16, float32 or float64, "
                        f"got {np.dtype(dtype)}")
    return name


def dtype_of(name: str) -> np.dtype:
    """The NumPy dtype of a dtype name of the table (bfloat16: ml_dtypes')."""
    if name == "bfloat16" and dtypes.BFLOAT16 is not None:
        return dtypes.BFLOAT16
    return np.dtype(name)


def operation_type(dtype_name: str) -> str:
    """The dtype in which PyTorch multiplies a tensor of `dtype_name` by a Python number (its
    opmath type): float32 for float16 and bfloat16, the dtype itself otherwise."""
    return "float32" if dtype_name in ("float16", "bfloat16") else dtype_name


def rounded(value: float, dtype_name: str) -> float:
    """`value` as NumPy takes a Python float with an array of `dtype_name` (cast to nearest; inf
    past the dtype's range)."""
    with np.errstate(over="ignore"):
        return float(np.asarray(float(value)).astype(dtype_of(dtype_name)))


def power(op: str, shape: tuple[int, ...], dtype: Any, exponent: float, scale: float = 1.0
          ) -> Step:
    """POWER on X of `shape` and float `dtype`: T(T(x * scale) ** exponent)."""
    name = _float(op, dtype)
    return Step(op, POWER, tuple(shape), name, name, rounded(exponent, name),
                rounded(scale, operation_type(name)))


def widen(op: str, shape: tuple[int, ...], dtype: Any) -> Step:
    """WIDEN of X of `shape` and a float `dtype` (float64: a copy, in native byte order)."""
    return Step(op, WIDEN, tuple(shape), _float(op, dtype), FLOAT64)


def narrow(op: str, shape: tuple[int, ...], dtype: Any, factor: np.ndarray) -> Step:
    """NARROW of a float64 W of `shape` to the float `dtype` by `factor`, a float64 table of the
    elements of W's last axes (its shape, those axes' lengths)."""
    name = _float(op, dtype)
    table = np.array(factor, dtype=np.float64, order="C")   # a copy: the step owns it
    if table.ndim > len(shape) or table.shape != tuple(shape)[len(shape) - table.ndim:]:
        raise ValueError(f"{op}: factors of shape {table.shape} are not the last axes of "
                         f"{tuple(shape)}")
    table.flags.writeable = False
    return Step(op, NARROW, tuple(shape), FLOAT64, name, factor=table)


def convert(op: str, shape: tuple[int, ...], source: Any, target: Any) -> Step:
    """CONVERT of X of `shape` and dtype `source` to `target`: a float dtype (from a float or an
    integer) or int64 (from a float); TypeError for others."""
    s, t = np.dtype(source), np.dtype(target)
    pair = (s.name, t.name)
    if not (s.name in SOURCES and (dtypes.float_name(t) is not None or (
            t.name == INT64 and s.name in dtypes.FLOAT_TYPES)) and s != t):
        raise TypeError(f"{op}: no elementwise conversion from {pair[0]} to {pair[1]} (floats and "
                        f"integers to a float, floats to int64)")
    return Step(op, CONVERT, tuple(shape), s.name, t.name)


def product(op: str, shape: tuple[int, ...], dtype: Any, coefficient: float, scale: float = 1.0,
            masked: bool = False) -> Step:
    """PRODUCT of A and B of `shape` and float `dtype`: T(T(a * T(coefficient * b)) * scale),
    masked by a third array Z where `masked`."""
    name = _float(op, dtype)
    wide = operation_type(name)
    return Step(op, PRODUCT, tuple(shape), name, name, scale=rounded(scale, wide),
                coefficient=rounded(coefficient, wide), masked=bool(masked))
