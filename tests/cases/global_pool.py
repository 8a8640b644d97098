"""GlobalAveragePool, GlobalMaxPool, GlobalLpPool: every version and dtype over SHAPES (1-5
spatial axes, long and length-1 planes), p in turn for GlobalLpPool; the input of each from its
own seeded generator."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from onnx_cupy import global_average_pool, global_lp_pool, global_max_pool

from .common import BF16, FLOAT_DTYPES, Case, wanted_ops

SEED = 20261126
QUICK_EVERY = 12     # the checker's representative subset
OPS = ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
RUN = {"GlobalAveragePool": global_average_pool, "GlobalMaxPool": global_max_pool,
       "GlobalLpPool": global_lp_pool}
SHAPES = ((2, 3, 17), (1, 4, 9, 11), (3, 2, 5, 4, 3), (1, 2, 3, 2, 3, 2), (2, 1, 2, 3, 2, 3, 2),
          (1, 1, 1000), (2, 2, 1))
VERSIONS = {"GlobalAveragePool": (1, 22), "GlobalMaxPool": (1, 22), "GlobalLpPool": (1, 2, 22)}


class Config(NamedTuple):
    """An operator at a version (the opset of that number), an input dtype and shape, and p
    (GlobalLpPool; None otherwise)."""

    op: str
    version: int
    dtype: np.dtype
    shape: tuple[int, ...]
    p: float | None

    @property
    def name(self) -> str:
        """The test id."""
        return f"{self.op}-{self.version}-{self.dtype}-{self.shape}-p{self.p}"


@functools.cache
def configurations() -> tuple[Config, ...]:
    found = []
    for op in OPS:
        for version in VERSIONS[op]:
            for dtype in FLOAT_DTYPES:
                if dtype == BF16 and version < 22:
                    continue
                for i, shape in enumerate(SHAPES):
                    p = (([1, 2, 3] if version >= 2 else [1.5, 2.0, 0.5])[i % 3]
                         if op == "GlobalLpPool" else None)
                    found.append(Config(op, version, dtype, shape, p))
    return tuple(found)


def input_values(index: int) -> np.ndarray:
    """The input of configuration `index`: uniform in [-2, 3)."""
    c = configurations()[index]
    return np.random.default_rng([SEED, index]).uniform(-2, 3, c.shape).astype(c.dtype)


def run(c: Config, x: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with input `x` (current backend)."""
    call: Any = RUN[c.op]
    return call(x, opset=c.version, **({} if c.p is None else {"p": c.p}))


def _run_sampled(index: int) -> Any:
    return run(configurations()[index], input_values(index))


def cases(ops: set[str] | None = None) -> list[Case]:
    wanted = set(wanted_ops(OPS, ops))
    return [Case(c.op, c.name, functools.partial(_run_sampled, i), i % QUICK_EVERY == 0)
            for i, c in enumerate(configurations()) if c.op in wanted]
