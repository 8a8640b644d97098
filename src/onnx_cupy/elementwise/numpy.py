"""The NumPy path of the elementwise steps: each step is the NumPy call it is defined by
(onnx_cupy.elementwise.plan), into `out` or a new array."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core.calls import Call
from .plan import CONVERT, NARROW, POWER, PRODUCT, Step, dtype_of, operation_type


def prepare(step: Step) -> Call:
    """call(X, out) -> Y of `step` on NumPy arrays."""
    target = dtype_of(step.target)
    wide = dtype_of(operation_type(step.target))   # products by a scalar: computed in it

    def output(x: np.ndarray, out: Any) -> np.ndarray:
        y: np.ndarray = np.empty(step.shape, target) if out is None else out
        return y

    if step.kind == POWER:
        exponent, scale = target.type(step.exponent), wide.type(step.scale)
        scaled = step.scale != 1

        def power(x: np.ndarray, out: Any) -> np.ndarray:
            y = output(x, out)
            # NaN, inf and 0 ** -p = inf as PyTorch's, without NumPy's warnings
            with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
                if scaled:
                    np.multiply(x, scale, out=y, dtype=wide, casting="unsafe")
                    x = y
                np.power(x, exponent, out=y)
            return y
        return power
    if step.kind == NARROW:
        factor = step.table

        def narrow(w: np.ndarray, out: Any) -> np.ndarray:
            y = output(w, out)   # the float64 product, then rounded once (NumPy's cast)
            np.multiply(w, factor, out=y, dtype=np.float64, casting="unsafe")
            return y
        return narrow
    if step.kind == PRODUCT:
        coefficient, scale = wide.type(step.coefficient), wide.type(step.scale)
        scaled = step.scale != 1

        def product(a: np.ndarray, b: np.ndarray, z: np.ndarray | None, out: Any
                    ) -> np.ndarray:
            y = output(a, out)
            with np.errstate(all="ignore"):
                np.multiply(b, coefficient, out=y, dtype=wide, casting="unsafe")
                np.multiply(a, y, out=y)
                if scaled:
                    np.multiply(y, scale, out=y, dtype=wide, casting="unsafe")
                if z is not None:   # y * sign(z) * sign(z) (sign(NaN) = 0), 0 where z = 0
                    np.subtract(y, y, out=y, where=np.isnan(z))
                    y[z == 0] = 0
            return y
        return product
    assert step.kind in (CONVERT, "widen")

    def convert(x: np.ndarray, out: Any) -> np.ndarray:
        y = output(x, out)
        with np.errstate(invalid="ignore"):   # NaN to int64
            y[...] = x
        return y
    return convert
