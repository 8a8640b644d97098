"""MaxUnpool: CONFIGS seeded random configurations (opsets 9-22, 1-3 spatial axes and a few with
4, every dtype, kernels, strides, pads beyond the kernel and negative ones, an output_shape larger
and a few shorter than the unpooled shape, indices from MaxPool-like windows or anywhere, with
repeats, values with NaN, infinities and -0.0). Configuration `index` is drawn from its own
generator (stream 0), redrawn until the unpooled shape is small enough; its inputs from another
(stream 1)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import max_unpool
from .common import BF16, Case, seeded, wanted_ops

CONFIGS = 900
SEED = 20261126
QUICK_EVERY = 12     # the checker's representative subset: every 12th float32 one
OPS = ("MaxUnpool",)
OPSETS = (9, 11, 13, 22)
DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
MAX_OUT = 4000   # elements of the unpooled shape


def unpooled(shape: tuple[int, ...], kernel: list[int], strides: list[int] | None,
             pads: list[int] | None) -> tuple[int, ...]:
    """U = (N, C, (D - 1) * s - (b + e) + k ...), written out here."""
    k = len(kernel)
    strides = strides or [1] * k
    pads = pads or [0] * (2 * k)
    return (*shape[:2], *((d - 1) * s - (pads[i] + pads[k + i]) + kk
                          for i, (d, kk, s) in enumerate(zip(shape[2:], kernel, strides))))


@dataclass(frozen=True)
class Config:
    """Configuration `index`: opset, X's shape and dtype, the attributes, the output_shape input
    (None: omitted), whether the indices follow MaxPool's windows (else anywhere in U)."""

    index: int
    opset: int
    dtype: np.dtype
    shape: tuple[int, ...]
    attrs: dict[str, Any]
    output_shape: tuple[int, ...] | None
    windowed: bool

    @property
    def u(self) -> tuple[int, ...]:
        return unpooled(self.shape, self.attrs["kernel_shape"], self.attrs.get("strides"),
                        self.attrs.get("pads"))

    @property
    def name(self) -> str:
        """The test id: index, opset, dtype, shape, output_shape given."""
        shape = "x".join(map(str, self.shape))
        return (f"{self.index:04d}-opset{self.opset}-{self.dtype.name}-{shape}"
                f"{'-output_shape' if self.output_shape else ''}")

    def __str__(self) -> str:
        return (f"config {self.index}: opset {self.opset} X {self.shape} {self.dtype.name} "
                f"{self.attrs} output_shape={self.output_shape} windowed={self.windowed}")


def generator(index: int, stream: int) -> np.random.Generator:
    return seeded(SEED, index, stream)


def _draw(rng: np.random.Generator, index: int) -> Config:
    opset = int(rng.choice(OPSETS))
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    if dtype == BF16 and opset < 22:
        dtype = np.dtype(np.float32)
    k = int(rng.choice([1, 2, 3, 4], p=[0.3, 0.35, 0.3, 0.05]))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)),
             *(int(v) for v in rng.integers(1, 5 if k < 3 else 4, size=k)))
    if rng.random() < 0.05:   # an empty spatial axis: U's length there is k - s - pads
        shape = (*shape[:-1], 0)
    kernel = [int(v) for v in rng.integers(1, 4, size=k)]
    attrs: dict[str, Any] = {"kernel_shape": kernel}
    if rng.random() < 0.8:
        attrs["strides"] = [int(v) for v in rng.integers(1, 4, size=k)]
    if rng.random() < 0.5:   # -1 up to the kernel size (a pad >= kernel is allowed)
        attrs["pads"] = [int(rng.integers(-1, kernel[i % k] + 1)) for i in range(2 * k)]
    config = Config(index, opset, dtype, shape, attrs, None, bool(rng.random() < 0.6))
    u = config.u
    if rng.random() < 0.35 and min(u[2:]) >= 0:
        grow = rng.integers(0, 3, size=k) - (rng.random(k) < 0.05)   # a few shorter
        config = Config(index, opset, dtype, shape, attrs,
                        (*shape[:2], *(max(0, n + int(g)) for n, g in zip(u[2:], grow))),
                        config.windowed)
    return config


@functools.cache
def configuration(index: int) -> Config:
    """Configuration `index`, redrawn until the unpooled shape is small enough."""
    rng = generator(index, 0)
    while True:
        config = _draw(rng, index)
        if math.prod(max(n, 0) for n in config.u) <= MAX_OUT:
            return config


def sample(rng: np.random.Generator, config: Config) -> tuple[np.ndarray, np.ndarray]:
    """(X, I): values float32-exact in every dtype (NaN, infinities, -0.0 among them); indices
    in U's range, in a MaxPool-like window of their element or anywhere (repeats likely)."""
    v = rng.uniform(-3, 3, size=config.shape).astype(np.float32)
    mask = rng.random(config.shape)
    v[mask < 0.03] = np.nan
    v[(mask >= 0.03) & (mask < 0.05)] = np.inf
    v[(mask >= 0.05) & (mask < 0.07)] = -0.0
    x = v.astype(config.dtype)
    u = config.u
    total = math.prod(u) if min(u) >= 0 else 0
    if not total:
        return x, np.zeros(config.shape, np.int64)
    if not config.windowed:
        return x, rng.integers(0, total, size=config.shape).astype(np.int64)
    k = len(config.shape) - 2
    strides = config.attrs.get("strides") or [1] * k
    pads = config.attrs.get("pads") or [0] * (2 * k)
    index = np.zeros(config.shape, np.int64)
    for a in range(k):  # a position of the element's window along each axis, clipped into U
        o = np.arange(config.shape[2 + a]).reshape((-1,) + (1,) * (k - 1 - a))
        tap = rng.integers(0, config.attrs["kernel_shape"][a], size=config.shape)
        index = index * u[2 + a] + np.clip(o * strides[a] - pads[a] + tap, 0, u[2 + a] - 1)
    planes = np.arange(config.shape[0] * config.shape[1]).reshape(config.shape[:2] + (1,) * k)
    return x, index + planes * math.prod(u[2:])


def run(config: Config, x: np.ndarray, indices: np.ndarray) -> Any:
    """onnx-cupy on `config` with inputs `x` and `indices` (current backend)."""
    return max_unpool(x, indices, config.output_shape, opset=config.opset, **config.attrs)


def _run_sampled(index: int) -> Any:
    c = configuration(index)
    return run(c, *sample(generator(index, 1), c))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [Case("MaxUnpool", configuration(i).name, functools.partial(_run_sampled, i),
                 quick(i)) for i in range(CONFIGS)]


def quick(index: int) -> bool:
    """In the checker's representative subset (few kernel instantiations to build)."""
    return index % QUICK_EVERY == 0 and configuration(index).dtype == np.float32
