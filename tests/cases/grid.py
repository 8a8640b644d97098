"""GridSample and AffineGrid.

GridSample: COUNT seeded random configurations. Configuration `index` takes its mode, padding
mode, align_corners, X dtype and spatial rank from the product BASES (so every combination of
them comes up, COUNT // len(BASES) times), and draws the rest from its own generator (stream 0):
the opset (16 for 2-D only, with its mode names), shapes (odd sizes, several channels and batch
items), the grid's dtype (mostly X's) and whether the grid holds NaN, infinite or far-away
positions; its inputs come from another (stream 1): X, and the positions (uniform within 1 to 6
of the ends, on a 1/8 lattice where exact ties come up).

AffineGrid: AFFINE_COUNT seeded random configurations, every dtype, rank (2-D, 3-D) and
align_corners in turn, with odd lengths, axes of length 1, empty outputs and, in some, a strided
theta (a view of a larger array)."""
from __future__ import annotations

import dataclasses
import functools
import itertools
from typing import Any

import numpy as np

from onnx_cupy import affine_grid, grid_sample

from .common import BF16, FLOAT_DTYPES, Case, seeded, wanted_ops

OPS = ("GridSample", "AffineGrid")
MODES = ("nearest", "linear", "cubic")
PADDING = ("zeros", "border", "reflection")
DTYPES = tuple(np.dtype(t) for t in ("float16", "float32", "float64", "int8", "uint8",
                                     "int32")) + (BF16,)
BASES = list(itertools.product(MODES, PADDING, (0, 1), DTYPES, (2, 3)))
COUNT = 3 * len(BASES)   # 756
SEED = 20261207
NAMES_16 = {"linear": "bilinear", "nearest": "nearest", "cubic": "bicubic"}


@dataclasses.dataclass
class Config:
    """One GridSample node: opset, mode (the kind: nearest, linear, cubic), padding mode,
    align_corners, X's and the grid's shapes and dtypes, and what the grid holds."""

    opset: int
    mode: str
    padding: str
    align_corners: int
    shape: tuple[int, ...]
    dtype: np.dtype
    grid_shape: tuple[int, ...]
    grid_dtype: np.dtype
    special: str   # "": positions only; "nonfinite": NaN and infinities; "far": |g| up to 1e9

    @property
    def rank(self) -> int:
        return len(self.shape) - 2

    @property
    def attrs(self) -> dict[str, Any]:
        name = NAMES_16[self.mode] if self.opset == 16 else self.mode
        return {"mode": name, "padding_mode": self.padding, "align_corners": self.align_corners}


def draw(index: int) -> Config:
    mode, padding, ac, dtype, rank = BASES[index % len(BASES)]
    rng = generator(index, 0)
    opset = 22 if dtype == BF16 else int(rng.choice([16, 20, 22] if rank == 2 else [20, 22]))
    n_items, channels = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    shape = (n_items, channels, *(int(v) for v in rng.integers(1, 7, size=rank)))
    out = tuple(int(v) for v in rng.integers(1, 6 if rank == 2 else 4, size=rank))
    floats = dtype.name in ("float16", "float32", "float64") or dtype == BF16
    grid_dtype = dtype if floats and rng.random() < 0.8 else np.dtype(
        rng.choice(["float16", "float32", "float64"]))
    special = str(rng.choice(["", "nonfinite", "far"], p=[0.7, 0.15, 0.15]))
    return Config(opset, mode, padding, ac, shape, dtype, (n_items, *out, rank), grid_dtype,
                  special)


def generator(index: int, stream: int) -> np.random.Generator:
    return seeded(SEED, index, stream)


@functools.cache
def configuration(index: int) -> Config:
    return draw(index)


def name(index: int) -> str:
    """The test id: index, opset, mode, padding, align_corners, dtype, rank, special grid."""
    c = configuration(index)
    return (f"{index:04d}-opset{c.opset}-{c.mode}-{c.padding}-ac{c.align_corners}-"
            f"{c.dtype.name}-{c.rank}d{'-' + c.special if c.special else ''}")


def inputs(index: int) -> tuple[np.ndarray, np.ndarray]:
    """X (floats in [-2, 3), integers in [-100, 100] within the dtype) and the grid."""
    c = configuration(index)
    rng = generator(index, 1)
    if c.dtype.kind in "iu":
        info = np.iinfo(c.dtype)
        x = rng.integers(max(info.min, -100), min(info.max, 100), size=c.shape,
                         endpoint=True).astype(c.dtype)
    else:
        x = rng.uniform(-2, 3, size=c.shape).astype(c.dtype)
    spread = float(rng.choice([1.0, 1.3, 2.5, 6.0]))
    g = rng.uniform(-spread, spread, size=c.grid_shape)
    if rng.random() < 0.3:   # a 1/8 lattice: coordinates on pixel centres and halfway
        g = np.round(g * 8) / 8
    flat = g.reshape(-1)
    if c.special == "nonfinite":
        at = rng.choice(flat.size, size=max(1, flat.size // 5), replace=False)
        flat[at] = rng.choice([np.nan, np.inf, -np.inf], size=at.size)
    elif c.special == "far":
        at = rng.choice(flat.size, size=max(1, flat.size // 5), replace=False)
        flat[at] = rng.choice([1e5, -3e6, 1e8, -1e9], size=at.size)
    return x, g.astype(c.grid_dtype)


def quick(index: int) -> bool:
    """In the checker's representative subset (few kernel instantiations to build): the first
    pass over BASES, X and grid float32, 2-D with zeros padding (the fast kernel, linear and
    nearest) or 3-D (the generic kernels, every mode and padding)."""
    c = configuration(index)
    return (index < len(BASES) and c.dtype == c.grid_dtype == np.float32
            and (c.rank == 3 or c.padding == "zeros"))


def run(c: Config, x: np.ndarray, g: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with inputs `x` and `g` (current backend)."""
    return grid_sample(x, g, opset=c.opset, **c.attrs)


def _run_sampled(index: int) -> Any:
    with np.errstate(all="ignore"):   # far positions overflow a float16 grid: inf
        return run(configuration(index), *inputs(index))


# ---------------------------------------------------------------- AffineGrid

AFFINE_COUNT = 160
AFFINE_SEED = 20261208
AFFINE_BASES = list(itertools.product(FLOAT_DTYPES, (2, 3), (0, 1)))


@dataclasses.dataclass(frozen=True)
class AffineConfig:
    """AffineGrid configuration `index`: theta's dtype, the size input, align_corners, and the
    step of the view theta is taken as (1: contiguous)."""

    index: int
    dtype: np.dtype
    size: tuple[int, ...]
    align_corners: int
    step: int

    @property
    def name(self) -> str:
        return (f"affine-{self.index:04d}-{self.dtype.name}-{'x'.join(map(str, self.size))}-"
                f"ac{self.align_corners}{'-strided' if self.step > 1 else ''}")


@functools.cache
def affine_configuration(index: int) -> AffineConfig:
    dtype, rank, ac = AFFINE_BASES[index % len(AFFINE_BASES)]
    rng = np.random.default_rng([AFFINE_SEED, index, 0])
    lengths = [int(v) if rng.random() < 0.9 else int(rng.choice([0, 1]))
               for v in rng.integers(1, 12 if rank == 2 else 7, size=rank)]
    size = (int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 4)),
            int(rng.integers(1, 4)), *lengths)
    return AffineConfig(index, dtype, size, ac, 2 if rng.random() < 0.3 else 1)


def affine_quick(index: int) -> bool:
    """In the checker's representative subset: float32, the first two passes over AFFINE_BASES
    (2-D and 3-D, both align_corners)."""
    return index < 2 * len(AFFINE_BASES) and affine_configuration(index).dtype == np.float32


def theta(c: AffineConfig) -> np.ndarray:
    """theta (N, r, r + 1), uniform in [-2, 2); a view with step `c.step` along every axis."""
    rank = len(c.size) - 2
    shape = [n * c.step for n in (c.size[0], rank, rank + 1)]
    base = np.random.default_rng([AFFINE_SEED, c.index, 1]).uniform(-2, 2, shape)
    return base.astype(c.dtype)[::c.step, ::c.step, ::c.step]


def run_affine(c: AffineConfig) -> Any:
    """onnx-cupy's AffineGrid on configuration `c` (current backend)."""
    return affine_grid(theta(c), list(c.size), align_corners=c.align_corners)


def cases(ops: set[str] | None = None) -> list[Case]:
    wanted = wanted_ops(OPS, ops)
    found = [Case("GridSample", name(i), functools.partial(_run_sampled, i), quick(i))
             for i in range(COUNT) if "GridSample" in wanted]
    return found + [Case("AffineGrid", affine_configuration(i).name,
                         functools.partial(run_affine, affine_configuration(i)), affine_quick(i))
                    for i in range(AFFINE_COUNT) if "AffineGrid" in wanted]
