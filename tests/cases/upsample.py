"""Upsample (opsets 7, 9 and 10; it runs on the Resize kernels): CONFIGS seeded random
configurations (nearest and linear, ranks 1-5, scales of 1, whole and fractional, a few below 1,
float, integer, bool and complex dtypes). Configuration `index` is drawn from its own generator
(stream 0), redrawn until the output is small enough; its input from another (stream 1)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_cupy import upsample

from .common import Case, seeded, wanted_ops

CONFIGS = 900
SEED = 20261127
QUICK_EVERY = 10     # the checker's representative subset: every 10th float32 one
OPS = ("Upsample",)
OPSETS = (7, 9, 10)
SCALES = (1.0, 1.0, 2.0, 3.0, 1.25, 1.4, 1.5, 1.7, 2.5)
FLOATS = tuple(np.dtype(t) for t in ("float16", "float32", "float64"))
INTEGERS = tuple(np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32",
                                       "int64", "uint64"))
OTHERS = (np.dtype(np.bool_), np.dtype(np.complex64))
MAX_OUT = 3000


@dataclass(frozen=True)
class Config:
    """Configuration `index`: opset, mode, X's shape and dtype, the scales (float32)."""

    index: int
    opset: int
    mode: str
    dtype: np.dtype
    shape: tuple[int, ...]
    scales: tuple[float, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(math.floor(n * s) for n, s in zip(self.shape, self.scales))

    @property
    def name(self) -> str:
        return (f"{self.index:04d}-opset{self.opset}-{self.mode}-{self.dtype.name}-"
                f"{'x'.join(map(str, self.shape))}")

    def __str__(self) -> str:
        return (f"config {self.index}: opset {self.opset} {self.mode} X {self.shape} "
                f"{self.dtype.name} scales {list(self.scales)}")


def generator(index: int, stream: int) -> np.random.Generator:
    return seeded(SEED, index, stream)


def _draw(rng: np.random.Generator, index: int) -> Config:
    opset = int(rng.choice(OPSETS))
    mode = "linear" if rng.random() < 0.45 else "nearest"
    rank = int(rng.choice([1, 2, 3, 4, 5], p=[0.1, 0.25, 0.2, 0.35, 0.1]))
    shape = tuple(int(v) for v in rng.integers(1, 6, size=rank))
    scales = [float(np.float32(rng.choice(SCALES))) for _ in range(rank)]
    if rank >= 4 and rng.random() < 0.6:   # NCHW and NCDHW as models write them
        scales[0] = scales[1] = 1.0
    if rng.random() < 0.04:   # below 1: rejected
        scales[int(rng.integers(rank))] = 0.5
    kinds = FLOATS + INTEGERS + (OTHERS if mode == "nearest" else ())
    weights = np.array([4.0] * len(FLOATS) + [1.0] * (len(kinds) - len(FLOATS)))
    dtype = kinds[int(rng.choice(len(kinds), p=weights / weights.sum()))]
    return Config(index, opset, mode, dtype, shape, tuple(scales))


@functools.cache
def configuration(index: int) -> Config:
    rng = generator(index, 0)
    while True:
        config = _draw(rng, index)
        if math.prod(config.out_shape) <= MAX_OUT:
            return config


def sample(rng: np.random.Generator, config: Config) -> np.ndarray:
    """Random X: floats in [-2, 3), integers within the dtype (and int32), booleans, complex."""
    if config.dtype.kind in "iu":
        info = np.iinfo(config.dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=config.shape,
                            endpoint=True).astype(config.dtype)
    if config.dtype.kind == "b":
        return rng.random(config.shape) < 0.5
    v = rng.uniform(-2, 3, size=config.shape).astype(np.float32)   # float32-exact values
    if config.dtype.kind == "c":
        v = v + 1j * rng.uniform(-2, 3, size=config.shape)
    return v.astype(config.dtype)


def run(config: Config, x: np.ndarray) -> Any:
    """onnx-cupy on `config` with input `x` (current backend)."""
    return upsample(x, np.array(config.scales, np.float32), mode=config.mode, opset=config.opset)


def _run_sampled(index: int) -> Any:
    c = configuration(index)
    return run(c, sample(generator(index, 1), c))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [Case("Upsample", configuration(i).name, functools.partial(_run_sampled, i),
                 quick(i)) for i in range(CONFIGS)]


def quick(index: int) -> bool:
    """In the checker's representative subset (few kernel instantiations to build)."""
    return index % QUICK_EVERY == 0 and configuration(index).dtype == np.float32
