"""Hardmax: CONFIGS seeded random configurations (opsets 1-13 and beyond, ranks 1-5, every axis
incl. negative ones, every float dtype, ties, +/-inf and NaN). Configuration `index` is drawn
from its own generator (stream 0), its input from another (stream 1)."""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from onnx_cupy import hardmax

from .common import BF16, FLOAT_DTYPES, Case, wanted_ops

CONFIGS = 1200
SEED = 20261122
QUICK_EVERY = 40     # the checker's representative subset
OPS = ("Hardmax",)
DTYPES = FLOAT_DTYPES
OPSETS = (1, 7, 11, 12, 13, 18, 21)
MAX_ELEMENTS = 1 << 20  # of an input: the tests' oracle loops over rows in Python


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, nan: bool
           ) -> np.ndarray:
    """Small integers (frequent ties), fractions, +/-inf, and NaN when `nan`; exact in every
    dtype."""
    x = rng.integers(-4, 5, size=shape).astype(np.float64)
    mask = rng.random(shape)
    x = np.where(mask < 0.4, rng.uniform(-3, 3, size=shape), x)
    x[(mask > 0.95) & (mask <= 0.97)] = np.inf
    x[mask > 0.97] = -np.inf
    if nan:
        x[mask < 0.02] = np.nan
    return x.astype(dtype)


@dataclasses.dataclass(frozen=True)
class Config:
    """Configuration `index`: opset, input shape and dtype, axis (None: the default), whether
    the input holds NaN."""

    index: int
    opset: int
    dtype: np.dtype
    shape: tuple[int, ...]
    axis: int | None
    nan: bool

    @property
    def name(self) -> str:
        """The test id: index, opset, dtype, shape and axis."""
        shape = "x".join(map(str, self.shape))
        axis = "default" if self.axis is None else self.axis
        return f"{self.index:04d}-opset{self.opset}-{self.dtype.name}-{shape}-axis{axis}"

    def __str__(self) -> str:
        return (f"config {self.index}: opset {self.opset} {self.shape} {self.dtype.name} "
                f"axis={self.axis}{' with NaN' if self.nan else ''}")


def generator(index: int, stream: int) -> np.random.Generator:
    """The generator of configuration `index`: stream 0 draws it, stream 1 its input."""
    return np.random.default_rng([SEED, index, stream])


@functools.cache
def configuration(index: int) -> Config:
    rng = generator(index, 0)
    opset = int(rng.choice(OPSETS))
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    if dtype == BF16 and opset < 13:
        dtype = np.dtype(np.float32)
    rank = int(rng.integers(1, 6))
    shape: tuple[int, ...] = (MAX_ELEMENTS + 1,)
    while math.prod(shape) > MAX_ELEMENTS:
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 7, 33], size=rank))
    axis = None if rng.random() < 0.15 else int(rng.integers(-rank, rank))
    if axis is None and opset < 13 and rank < 2:
        axis = 0
    return Config(index, opset, dtype, shape, axis, bool(rng.random() < 0.2))


def input_values(c: Config) -> np.ndarray:
    return sample(generator(c.index, 1), c.shape, c.dtype, c.nan)


def run(c: Config, x: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with input `x` (current backend)."""
    axis: dict[str, Any] = {} if c.axis is None else {"axis": c.axis}
    return hardmax(x, opset=c.opset, **axis)


def _run_sampled(c: Config) -> Any:
    return run(c, input_values(c))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [Case("Hardmax", configuration(i).name,
                 functools.partial(_run_sampled, configuration(i)), i % QUICK_EVERY == 0)
            for i in range(CONFIGS)]
