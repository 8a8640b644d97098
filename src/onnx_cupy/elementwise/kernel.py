"""The kernel path of the elementwise steps: records, parameter struct and launches of
kernels/elementwise.cu for a step (onnx_cupy.elementwise.plan), on the GPU or the emulator.

One grid-stride launch per step, one thread per element and loop iteration, over C-contiguous X
and Y (an X of other strides is copied first, by onnx_cupy.core.kernel_call); int offsets where
the element count fits, else long long. The float16, bfloat16 and float32 powers are held to
BUDGET instructions per element in the kernel report (pow's evaluation is most of it); the
conversions, which read or write float64 or integers, are reported, not budgeted.

Why these steps are kernels of the library's own rather than CuPy's ufuncs and casts: CuPy
compiles its own kernels with -ftz=true, so on the GPU they flush float32 subnormals (operands,
results, and inputs of a conversion to float64) where the NumPy path keeps them; these kernels are
compiled with the library's IEEE options, as every family's."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..core import dtypes, kernel_call, launcher, loader, records, workspaces
from .plan import INT64, NARROW, POWER, PRODUCT, SOURCES, WIDEN, Step, dtype_of

FAMILY = "elementwise"
# the operators whose PyTorch-style functions run these steps: lp_pool*d and avg_pool*d with
# divisor_override run AveragePool (and these), torchvision's roi_align and roi_pool RoiAlign and
# MaxRoiPool (with their boxes converted)
POOLING = ("AveragePool",)
REGIONS = ("MaxRoiPool", "RoiAlign")
# instructions per element of a float16/bfloat16/float32 power: most of it pow's evaluation in
# float (about a hundred), past the ~80 that float32's bandwidth pays for on an H100, so that a
# power by a general exponent is bound by its arithmetic (by 1 or 2, which skip pow, it is not)
BUDGET = 140

_GEOM = np.dtype([("count", "<i8"), ("plane", "<i8"), ("by_plane", "<u4", (2,)),
                  ("scale_f", "<f4"), ("exponent_f", "<f4"), ("scale_d", "<f8"),
                  ("exponent_d", "<f8"), ("coefficient_f", "<f4"),
                  ("coefficient_d", "<f8")], align=True)


def _accumulate(dtype_name: str) -> records.Argument:
    """Acc: float for 16/32-bit floats, double for float64."""
    return records.argument("accumulate", dtypes.FLOAT_TYPES[dtype_name][1])


def _source(dtype_name: str) -> records.Argument:
    return records.Argument("source", dtype_name, dtypes.storage_type(dtype_name))


def _target(dtype_name: str) -> records.Argument:
    """A conversion's output: its storage (the kernel report's column)."""
    return records.Argument("storage", dtype_name, dtypes.storage_type(dtype_name))


# the kernels by (dtype name, bits); the conversions by (source, target, bits)
POWERS = {(t, b): records.Instantiation(
    FAMILY, "elementwise_power", (records.storage(t), _accumulate(t), records.index(b)),
    POOLING, (t,), grid_stride="x", fast=True,
    budget=records.fast_budget(BUDGET, b) if t != "float64" else None)
    for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
WIDENS = {(t, b): records.Instantiation(
    FAMILY, "elementwise_widen", (records.storage(t), records.index(b)), POOLING, (t,),
    grid_stride="x", variant="to float64")
    for t in dtypes.FLOAT_TYPES if t != "float64" for b in dtypes.INDEX_TYPES}
NARROWS = {(t, b): records.Instantiation(
    FAMILY, "elementwise_narrow", (records.storage(t), records.index(b)), POOLING, (t,),
    grid_stride="x", variant="from float64, by a table")
    for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}
CONVERTS = {(s, t, b): records.Instantiation(
    FAMILY, "elementwise_convert", (_source(s), _target(t), records.index(b)), REGIONS,
    (t,) if t in dtypes.FLOAT_TYPES else (s,), grid_stride="x", variant=f"from {s}")
    for s in SOURCES for t in (*dtypes.FLOAT_TYPES, INT64)
    if s != t and (t in dtypes.FLOAT_TYPES or s in dtypes.FLOAT_TYPES)
    for b in dtypes.INDEX_TYPES}
# lp_pool's gradient (its products, AveragePool's gradient between them)
PRODUCTS = {(t, b): records.Instantiation(
    FAMILY, "elementwise_product", (records.storage(t), _accumulate(t), records.index(b)),
    tuple(f"{op} gradient" for op in POOLING), (t,), grid_stride="x", variant="gradient")
    for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES}

loader.register(FAMILY, [*POWERS.values(), *WIDENS.values(), *NARROWS.values(),
                         *CONVERTS.values(), *PRODUCTS.values()], {"ElementwiseGeom": _GEOM})


def instantiation(step: Step, bits: int) -> records.Instantiation:
    """The kernel of `step` with `bits`-bit offsets."""
    if step.kind == POWER:
        return POWERS[step.target, bits]
    if step.kind == WIDEN:
        return WIDENS[step.source, bits]
    if step.kind == NARROW:
        return NARROWS[step.target, bits]
    if step.kind == PRODUCT:
        return PRODUCTS[step.target, bits]
    return CONVERTS[step.source, step.target, bits]


def kernel_args(step: Step) -> launcher.LaunchSpec:
    """The launch of a step (its ElementwiseGeom struct, after NARROW's table): 32-bit offsets
    where the elements, and the loop index past them, fit an int."""
    size = step.size
    bits = launcher.grid_offset_bits(size, size)
    by_plane = {"by_plane": launcher.divider(step.plane)} if bits == 32 else {}
    with np.errstate(over="ignore"):   # a float64 step's scalars past float's range: unread
        single = {"scale_f": np.float32(step.scale), "exponent_f": np.float32(step.exponent),
                  "coefficient_f": np.float32(step.coefficient)}
    g = launcher.parameter_struct(_GEOM, count=size, plane=step.plane, scale_d=step.scale,
                                  exponent_d=step.exponent, coefficient_d=step.coefficient,
                                  **single, **by_plane)
    return launcher.LaunchSpec(instantiation(step, bits), None, size, (g,))


def prepare(step: Step, device: Any, x: Any) -> kernel_call.Body:
    """The body of `step` on `device` for a C-contiguous X laid out as `x`: body(X, out) -> Y
    (a new array where `out` is None)."""
    size, target, empty = step.size, dtype_of(step.target), device.empty
    if not size:
        return lambda X, out: empty(step.shape, target) if out is None else out
    if step.kind == WIDEN and step.source == step.target:   # float64: a copy (a byte swap)
        def copy(X: Any, out: Any) -> Any:   # one dtype: CuPy's copy, no float instruction
            Y = empty(step.shape, target) if out is None else out
            Y[...] = X
            return Y
        return copy
    tables = workspaces.upload(device, step.table) if step.kind == NARROW else ()
    launch = launcher.Launch(device, kernel_args(step), *tables)

    def body(X: Any, out: Any) -> Any:
        Y = empty(step.shape, target) if out is None else out
        launch(X, Y)
        return Y
    return body


def prepare_product(step: Step, device: Any, a: Any, b: Any, z: Any) -> kernel_call.Body:
    """The body of a PRODUCT `step` on `device` for C-contiguous A, B (and Z where the step is
    masked): body(A, B, Z, out) -> Y."""
    size, target, empty = step.size, dtype_of(step.target), device.empty
    if not size:
        return lambda A, B, Z, out: empty(step.shape, target) if out is None else out
    launch = launcher.Launch(device, kernel_args(step))

    def body(A: Any, B: Any, Z: Any, out: Any) -> Any:
        Y = empty(step.shape, target) if out is None else out
        launch(A, B, Z, Y)
        return Y
    return body
