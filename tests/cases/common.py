"""What every family's configurations share: the Case record, the float dtypes drawn, the
operator filter."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from onnx_cupy.core import dtypes

if dtypes.BFLOAT16 is None:  # pragma: no cover - exercised only without ml_dtypes
    raise ModuleNotFoundError("the configurations draw bfloat16 inputs: they need ml_dtypes "
                              "(pip install 'onnx-cupy[onnx]')")
BF16: np.dtype = dtypes.BFLOAT16
FLOAT_DTYPES: tuple[np.dtype, ...] = (np.dtype(np.float16), BF16, np.dtype(np.float32),
                                     np.dtype(np.float64))


@dataclasses.dataclass(frozen=True)
class Case:
    """One configuration: `op` (ONNX name), `name` (its id), `run()` (the onnx-cupy call on its
    input, on the current backend; a ValueError where the configuration is invalid, as the
    differential tests expect), `quick` (in the representative subset)."""

    op: str
    name: str
    run: Callable[[], Any]
    quick: bool


def wanted_ops(ops: Sequence[str], wanted: set[str] | None) -> list[str]:
    """`ops` that `wanted` names (all of them for None)."""
    return [op for op in ops if wanted is None or op in wanted]


def seeded(seed: int, index: int, stream: int) -> np.random.Generator:
    """The generator of configuration `index` of a family seeded `seed`: stream 0 draws the
    configuration, stream 1 its inputs."""
    return np.random.default_rng([seed, index, stream])
