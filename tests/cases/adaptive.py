"""PyTorch's adaptive pooling (no ONNX operator has it; the kernel pool_adaptive): COUNT seeded
random configurations of the two operators the pool family names it by, AdaptiveAveragePool
(adaptive_avg_pool1d/2d/3d, and interpolate(mode="area"), which is that pooling) and
AdaptiveMaxPool (adaptive_max_pool1d/2d/3d, with and without indices). Configuration `index`
takes its dtype, spatial rank and call from the product BASES and draws the rest from its own
generator (stream 0): odd lengths, output lengths shrinking, equal, growing (overlapping
windows) or 0, a transposed, stepped or reversed view; its input from another (stream 1):
uniform values with, in some, NaN and infinities. EXTRAS take 64-bit offsets (a window bound
(o + 1) n past 2^31 - 1)."""
from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Any

import numpy as np

from onnx_cupy.nn import functional
from onnx_cupy.pool.api import adaptive_pool

from .common import FLOAT_DTYPES, Case, wanted_ops

OPS = ("AdaptiveAveragePool", "AdaptiveMaxPool")
# how a configuration calls the kernel: the pool family's entry point, or the PyTorch layer
CALLS = {"AdaptiveAveragePool": ("adaptive_pool", "adaptive_avg_pool", "interpolate_area"),
         "AdaptiveMaxPool": ("adaptive_pool", "adaptive_max_pool", "adaptive_max_pool_indices")}
BASES = [(op, call, dtype, rank) for op in OPS for call in CALLS[op]
         for dtype, rank in itertools.product(FLOAT_DTYPES, (1, 2, 3))]
COUNT = 3 * len(BASES)   # 216
SEED = 20261209
VIEWS = ("", "", "", "transposed", "stepped", "reversed")
LONGEST = {1: 40, 2: 12, 3: 7}   # input lengths drawn, per spatial rank


@dataclasses.dataclass(frozen=True)
class Config:
    """Configuration `index`: the operator, the call, X's dtype, shape and view, the output
    lengths, whether X holds NaN and infinities."""

    index: int
    op: str
    call: str
    dtype: np.dtype
    shape: tuple[int, ...]
    sizes: tuple[int, ...]
    view: str           # "": contiguous; "transposed" (N and C), "stepped", "reversed"
    special: bool

    @property
    def name(self) -> str:
        return (f"{self.index:04d}-{self.call}-{self.dtype.name}-"
                f"{'x'.join(map(str, self.shape))}-to-{'x'.join(map(str, self.sizes))}"
                f"{'-' + self.view if self.view else ''}{'-nonfinite' if self.special else ''}")


def _size(rng: np.random.Generator, n: int) -> int:
    """An output length: shrinking, equal, growing (up to 2n + 1) or, rarely, 0."""
    kind = rng.random()
    if kind < 0.05:
        return 0
    if kind < 0.2:
        return n
    return int(rng.integers(1, 2 * n + 2))


@functools.cache
def configuration(index: int) -> Config:
    if index >= COUNT:
        return EXTRAS[index - COUNT]
    op, call, dtype, rank = BASES[index % len(BASES)]
    rng = np.random.default_rng([SEED, index, 0])
    spatial = tuple(int(v) for v in rng.integers(1, LONGEST[rank] + 1, size=rank))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
    sizes = tuple(_size(rng, n) for n in spatial)
    return Config(index, op, call, dtype, shape, sizes, str(rng.choice(VIEWS)),
                  bool(rng.random() < 0.15))


def quick(c: Config) -> bool:
    """In the checker's representative subset: float32, the first pass over BASES (every
    operator, call and rank)."""
    return c.index < len(BASES) and c.dtype == np.float32


def sample(c: Config) -> np.ndarray:
    """X of c.shape (the view c.view of a larger or permuted array): uniform in [-2, 3), with
    NaN, inf and -inf among them where c.special."""
    rng = np.random.default_rng([SEED, c.index, 1])
    base = {"transposed": (c.shape[1], c.shape[0], *c.shape[2:]),
            "stepped": (*c.shape[:-1], 2 * c.shape[-1])}.get(c.view, c.shape)
    v = rng.uniform(-2, 3, size=base)
    if c.special:
        mask = rng.random(base)
        v[mask < 0.05] = np.nan
        v[(mask >= 0.05) & (mask < 0.08)] = np.inf
        v[(mask >= 0.08) & (mask < 0.1)] = -np.inf
    x: np.ndarray = v.astype(c.dtype)
    if c.view == "transposed":
        x = x.swapaxes(0, 1)
    elif c.view == "stepped":
        x = x[..., ::2]
    elif c.view == "reversed":
        x = x[..., ::-1]
    return x


def run(c: Config, x: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with input `x` (current backend), through its call."""
    rank, sizes = len(c.shape) - 2, list(c.sizes)
    if c.call == "adaptive_pool":
        return adaptive_pool(c.op, x, sizes, return_indices=c.op == "AdaptiveMaxPool")
    if c.call == "interpolate_area":
        return functional.interpolate(x, size=sizes, mode="area")
    call: Any = getattr(functional, f"{c.call.removesuffix('_indices')}{rank}d")
    if c.call == "adaptive_max_pool_indices":
        return call(x, sizes, return_indices=True)
    return call(x, sizes)


def _run_sampled(c: Config) -> Any:
    with np.errstate(invalid="ignore"):
        return run(c, sample(c))


# 64-bit offsets: (o + 1) * n passes 2^31 - 1 along a 1-D axis of 50,000
EXTRAS = tuple(Config(COUNT + i, op, "adaptive_pool", np.dtype(np.float32), (1, 1, 50000),
                      (50000,), "", False) for i, op in enumerate(OPS))


def cases(ops: set[str] | None = None) -> list[Case]:
    wanted = wanted_ops(OPS, ops)
    found = [configuration(i) for i in range(COUNT + len(EXTRAS))]
    return [Case(c.op, c.name, functools.partial(_run_sampled, c), quick(c))
            for c in found if c.op in wanted]
