"""The kernel path of Resize's gradient: resize_grad of kernels/resize.cu, one launch per pass of
onnx_cupy.resize.plan_grad (the same terms in the same order as the NumPy path: the same bits),
its transposed tables uploaded once per prepared call, the partial gradients between passes in
the call's scratch (the accumulate type)."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..core import dtypes, kernel_call, launcher, loader, records, workspaces
from .kernel import FAMILY
from .plan import OP, UPSAMPLE
from .plan_grad import GradientPlan, Transposed

_GRAD_GEOM = np.dtype([(f, "<i8") for f in ("total", "n", "m", "inner")])
FLOATS = tuple(dtypes.FLOAT_TYPES)   # gradients: floating dtypes only
OPS = (f"{OP} gradient", f"{UPSAMPLE} gradient")


def _key(dtype_name: str, first: bool, last: bool) -> tuple[str, bool, bool]:
    """The instantiation of a pass on X of `dtype_name`: (storage dtype, whether it reads
    the storage type, whether it writes it; else the accumulate type). A chain's first pass
    reads X's type, its last writes it; between them the partial gradient is the accumulate
    type, so a pass of float32 or float64 (whose storage is their accumulate type) and a pass
    between two others (float32 to float32) are float32's or float64's own."""
    if dtype_name in ("float32", "float64"):
        return dtype_name, True, True
    if not first and not last:
        return "float32", True, True
    return dtype_name, first, last


def _instantiation(key: tuple[str, bool, bool], bits: int) -> records.Instantiation:
    name, first, last = key
    acc = dtypes.FLOAT_TYPES[name][1]
    names = tuple(t for t in FLOATS if any(_key(t, f, la) == key for f in (True, False)
                                           for la in (True, False)))
    flag = {True: "true", False: "false"}
    return records.Instantiation(
        FAMILY, "resize_grad", (records.storage(name), records.argument("accumulate", acc),
                                records.argument("from_storage", first, flag[first]),
                                records.argument("to_storage", last, flag[last]),
                                records.index(bits)),
        OPS, names, grid_stride="x", variant="gradient pass")


# by (storage dtype, reads it, writes it, bits)
GRADIENT = {(*key, b): _instantiation(key, b) for b in dtypes.INDEX_TYPES
            for key in dict.fromkeys(_key(t, first, last) for t in FLOATS
                                     for first in (True, False) for last in (True, False))}

loader.register(FAMILY, list(GRADIENT.values()), {"ResizeGradGeom": _GRAD_GEOM})


@functools.lru_cache(maxsize=512)
def pass_args(p: Transposed, shape: tuple[int, ...], dtype_name: str, first: bool, last: bool
              ) -> launcher.LaunchSpec:
    """resize_grad's launch for pass `p` writing an array of `shape`: one thread per output
    element, grid-stride; 32-bit offsets where every element of its input and output and every
    table entry fits an int."""
    total = math.prod(shape)
    inner = math.prod(shape[p.axis + 1:])
    bits = launcher.grid_offset_bits(total, total // max(p.n, 1) * p.m, len(p.source))
    g = launcher.parameter_struct(_GRAD_GEOM, total=total, n=p.n, m=p.m, inner=inner)
    name, reads, writes = _key(dtype_name, first, last)
    return launcher.LaunchSpec(GRADIENT[name, reads, writes, bits], None, total, (g,))


def prepare(gp: GradientPlan, device: Any, x: Any, dy: Any) -> kernel_call.Body:
    """The body of the gradient `gp` on `device` for inputs laid out as (x, dy): body(X, dY,
    out) -> dX; the tables uploaded here, once."""
    empty, dtype, shape = device.empty, x.dtype, gp.forward.in_shape   # X's: the key holds them
    if not math.prod(shape):
        return lambda X, dY, out: empty(shape, dtype) if out is None else out
    if not math.prod(gp.forward.out_shape):   # no output: no term
        def zeros(X: Any, dY: Any, out: Any) -> Any:
            dX = empty(shape, dtype) if out is None else out
            dX.fill(0)
            return dX
        return zeros
    if not gp.passes:   # every axis onto itself
        def copy(X: Any, dY: Any, out: Any) -> Any:
            dX = empty(shape, dtype) if out is None else out
            dX[...] = dY
            return dX
        return copy
    name, count = np.dtype(dtype).name, len(gp.passes)
    acc = dtypes.accumulate_dtype(dtype)
    steps = []
    for i, (p, after) in enumerate(zip(gp.passes, gp.shapes)):
        tables = workspaces.upload(device, p.start, p.source, p.weight.astype(acc))
        steps.append(launcher.Launch(device, pass_args(p, after, name, i == 0, i == count - 1),
                                     *tables))
    space = workspaces.Scratch(device, *((s, acc) for s in gp.shapes[:-1]))

    def body(X: Any, dY: Any, out: Any) -> Any:
        dX = empty(shape, dtype) if out is None else out
        partial = space() if count > 1 else ()
        source = dY
        for step, target in zip(steps, (*partial, dX)):
            step(source, target)
            source = target
        return dX
    return body
