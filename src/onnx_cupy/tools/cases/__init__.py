"""The randomized configurations of every operator family, seeded and deterministic: the
differential tests judge onnx-cupy on them against the runtimes (tests/helpers/*_differential.py
import them from here), and `onnx-cupy check-kernels` runs them under the emulator's checker.

Each family's module gives its configurations as `Case`s: the operator (its ONNX name), the
test id, and the onnx-cupy call on the configuration's seeded input, on whatever backend is
current. `cases(ops, quick)` lists them (`quick`: a representative subset).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ...core import dtypes

if dtypes.BFLOAT16 is None:  # pragma: no cover - exercised only without ml_dtypes
    raise ModuleNotFoundError("the configurations draw bfloat16 inputs: they need ml_dtypes "
                              "(pip install 'onnx-cupy[onnx]')")
BF16: np.dtype = dtypes.BFLOAT16
FLOAT_DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration: `op` (ONNX name), `name` (its id), `run()` (the onnx-cupy call on its
    input, on the current backend; a ValueError where the configuration is invalid, as the
    differential tests expect), `quick` (in the representative subset)."""

    op: str
    name: str
    run: Callable[[], Any]
    quick: bool


def cases(ops: Iterable[str] | None = None, quick: bool = False) -> list[Case]:
    """Every family's cases (those of `ops` only, if given; the quick subset if `quick`), in a
    fixed order."""
    from . import global_pool, hardmax, layouts, maxpool, pool, resize

    wanted = None if ops is None else set(ops)
    found = [c for module in (pool, maxpool, global_pool, hardmax, resize, layouts)
             for c in module.cases(wanted)]
    return [c for c in found if not quick or c.quick]


def operators() -> list[str]:
    """The ONNX operators that have cases."""
    from . import global_pool, hardmax, maxpool, pool, resize

    return sorted({op for m in (pool, maxpool, global_pool, hardmax, resize) for op in m.OPS})


def wanted_ops(ops: Sequence[str], wanted: set[str] | None) -> list[str]:
    """`ops` that `wanted` names (all of them for None)."""
    return [op for op in ops if wanted is None or op in wanted]
