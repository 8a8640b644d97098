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

from ..core import execution, kernel_call
from . import kernel, plan
from . import numpy as numpy_path
from .plan import Step


def run(step: Step, X: Any, out: Any = None) -> Any:
    """`step` on X (a NumPy or CuPy array of the step's source dtype), on the path X picks:
    prepared on the first occurrence of its key (onnx_cupy.core.kernel_call), then kept; Y
    written into `out` where given, else a new array."""
    return STEP(X, parts=(step,), out=out)


def _plan(x: Any, step: Step) -> Step:
    if np.dtype(x.dtype).name != step.source:   # in either byte order (NumPy's)
        raise TypeError(f"{step.op}: its {step.kind} step takes {step.source}, got {x.dtype}")
    if tuple(x.shape) != step.shape:
        raise ValueError(f"{step.op}: its {step.kind} step takes shape {step.shape}, got "
                         f"{tuple(x.shape)}")
    return step


# the kernels read X C-contiguous
STEP = kernel_call.KernelCall(
    "elementwise step", (kernel_call.Input("X", contiguous=True),), _plan,
    lambda step, x: numpy_path.prepare(step), kernel.prepare,
    output=lambda step, x: (step.shape, plan.dtype_of(step.target)))


def product(step: Step, A: Any, B: Any, Z: Any = None, out: Any = None) -> Any:
    """A PRODUCT `step` (plan.product) on A and B (and Z, where the step is masked), arrays of
    the step's dtype and shape on one device, on the path A picks; Y into `out` where given."""
    return PRODUCT(A, B, Z, parts=(step,), out=out)


def _plan_product(a: Any, b: Any, z: Any, step: Step) -> Step:
    for name, v in (("A", a), ("B", b), ("Z", z)):
        if v is None:
            if name != "Z" or step.masked:
                raise TypeError(f"{step.op}: its product step takes {name}")
            continue
        if name == "Z" and not step.masked:
            raise TypeError(f"{step.op}: its product step is not masked, got Z")
        _plan(v, step)
    return step


PRODUCT = kernel_call.KernelCall(
    "elementwise product", (kernel_call.Input("A", contiguous=True),
                            kernel_call.Input("B", contiguous=True),
                            kernel_call.Input("Z", optional=True, contiguous=True)),
    _plan_product, lambda step, a, b, z: numpy_path.prepare(step), kernel.prepare_product,
    output=lambda step, *arrays: (step.shape, plan.dtype_of(step.target)))


def convert(a: Any, dtype: Any, op: str) -> Any:
    """`a` (a NumPy or CuPy array) as an array of `dtype` (a float dtype, or int64 from a
    float): `a` itself where it has that dtype, else a new array, rounded as NumPy's astype
    (plan.CONVERT); `op` names the function in errors."""
    x, _ = execution.select(a, op)
    target = np.dtype(dtype)
    if x.dtype == target:
        return x
    if x.dtype == np.bool_:   # its bytes are 0 and 1
        x = x.view(np.uint8)
    return run(plan.convert(op, tuple(x.shape), x.dtype, target), x)
