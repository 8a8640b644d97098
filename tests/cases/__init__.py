"""The randomized configurations of every operator family, seeded and deterministic: the
differential tests judge onnx-cupy on them against the runtimes (tests/helpers/*_differential.py
import them from here), and `onnx-cupy check-kernels` runs them under the emulator's checker.

Each family's module gives its configurations as `Case`s: the operator (its ONNX name; for
PyTorch's adaptive pooling, which no ONNX operator has, the pool family's AdaptiveAveragePool and
AdaptiveMaxPool), the test id, and the onnx-cupy call on the configuration's seeded input, on
whatever backend is current. `cases(ops, quick)` lists them (`quick`: a representative subset).
Families: pool (AveragePool, LpPool), maxpool, global_pool, adaptive, hardmax, resize, nearest
(Resize's nearest rounding, as Resize cases), upsample, unpool (MaxUnpool), grid (GridSample,
AffineGrid), roi (RoiAlign, MaxRoiPool), gradients (the pools', MaxUnpool's, Resize's and
Upsample's, as AveragePoolGrad ... UpsampleGrad: for the kernel checker); then layouts.
"""
from __future__ import annotations

from collections.abc import Iterable

from . import (
    adaptive,
    global_pool,
    gradients,
    grid,
    hardmax,
    layouts,
    maxpool,
    nearest,
    pool,
    resize,
    roi,
    unpool,
    upsample,
)
from .common import Case

__all__ = ["Case", "cases", "operators"]
# each with OPS and cases(wanted)
FAMILIES = (pool, maxpool, global_pool, adaptive, hardmax, resize, nearest, upsample, unpool,
            grid, roi, gradients)


def cases(ops: Iterable[str] | None = None, quick: bool = False) -> list[Case]:
    """Every family's cases (those of `ops` only, if given; the quick subset if `quick`), in a
    fixed order, then the layouts at every alignment."""
    wanted = None if ops is None else set(ops)
    found = [c for module in (*FAMILIES, layouts) for c in module.cases(wanted)]
    return [c for c in found if not quick or c.quick]


def operators() -> list[str]:
    """The operators that have cases (the names --op takes)."""
    return sorted({op for m in FAMILIES for op in m.OPS})
