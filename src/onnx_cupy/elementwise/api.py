"""The elementwise steps' entry point: the PyTorch-style functions (onnx_cupy.interop) run their
elementwise arithmetic and conversions here, on the path their arrays pick: NumPy (numpy.py) or
the library's kernels on the GPU or the CPU emulator (kernel.py), never CuPy's own ufuncs and
casts, which CuPy compiles to flush subnormals to zero (onnx_cupy.elementwise.kernel).

A family without public functions: its steps (plan.py) are what lp_pool, avg_pool's
divisor_override and torchvision's boxes need beyond the operators' kernels, each the NumPy call
the NumPy path makes, so that every path computes it alike."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import calls, execution
from . import kernel, plan
from . import numpy as numpy_path
from .plan import Step

_CALLS = calls.Cache("elementwise")


def prepared(step: Step, x: Any, backend: str) -> calls.Call:
    """The call of `step` on inputs laid out as `x` (a NumPy or CuPy array of the step's source
    dtype) on `backend`, prepared on the first occurrence of its key, then kept:
    call(X, out) -> Y (a new array where `out` is None)."""
    key = calls.key(x, backend, step)
    return _CALLS.get(key) or _CALLS.put(key, _prepare(step, x, backend))


def _prepare(step: Step, x: Any, backend: str) -> calls.Call:
    if np.dtype(x.dtype).name != step.source:   # in either byte order (NumPy's)
        raise TypeError(f"{step.op}: its {step.kind} step takes {step.source}, got {x.dtype}")
    return numpy_path.prepare(step) if backend == "numpy" else kernel.prepare(step, x, backend)


def convert(a: Any, dtype: Any, op: str) -> Any:
    """`a` (a NumPy or CuPy array) as an array of `dtype` (a float dtype, or int64 from a
    float): `a` itself where it has that dtype, else a new array, rounded as NumPy's astype
    (plan.CONVERT); `op` names the function in errors."""
    x, backend = execution.select(a, op)
    target = np.dtype(dtype)
    if x.dtype == target:
        return x
    if x.dtype == np.bool_:   # its bytes are 0 and 1
        x = x.view(np.uint8)
    key = calls.key(x, backend, plan.CONVERT, op, target.name)
    call = _CALLS.get(key)
    if call is None:
        call = _CALLS.put(key, _prepare(plan.convert(op, tuple(x.shape), x.dtype, target), x,
                                        backend))
    return call(x, None)
