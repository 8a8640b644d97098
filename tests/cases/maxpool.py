"""MaxPool: CONFIGS seeded random configurations (every opset and dtype, ranks 1-3, pads up to
and beyond the kernel, auto_pad, dilations, ceil_mode, storage_order, Indices), drawn in turn
from one generator; the input of configuration `index` from its own."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from onnx_cupy import max_pool

from .common import BF16, Case, wanted_ops

CONFIGS = 300
SEED = 20261125
QUICK_EVERY = 15     # the checker's representative subset
OPS = ("MaxPool",)
OPSETS = (1, 7, 8, 9, 10, 11, 12, 17, 21, 22)
VERSIONS = (1, 8, 10, 11, 12, 22)
FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
INTS = (np.dtype(np.int8), np.dtype(np.uint8))


class Config(NamedTuple):
    opset: int
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict[str, Any]
    indices: bool


def version_of(opset: int) -> int:
    return max(v for v in VERSIONS if v <= opset)


def draw(rng: np.random.Generator) -> Config:
    opset = int(rng.choice(OPSETS))
    version = version_of(opset)
    dtypes: list[np.dtype] = [*FLOATS, *(INTS if version >= 12 else ())]
    if version >= 22 and rng.random() < 0.4:
        dtypes = [BF16]
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    nd = int(rng.integers(1, 4))
    spatial = tuple(int(v) for v in rng.integers(1, 8 if nd < 3 else 5, nd))
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
    kernel = [int(rng.integers(1, 4)) for _ in spatial]
    attrs: dict[str, Any] = {"kernel_shape": kernel}
    if rng.random() < 0.7:
        attrs["strides"] = rng.integers(1, 4, nd).tolist()
    if version >= 10 and rng.random() < 0.4:
        attrs["dilations"] = rng.integers(1, 3, nd).tolist()
    if version >= 10 and rng.random() < 0.4:
        attrs["ceil_mode"] = 1
    if version >= 8 and rng.random() < 0.3:
        attrs["storage_order"] = 1
    if rng.random() < 0.2:
        attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    elif rng.random() < 0.7:
        attrs["pads"] = [int(rng.integers(0, k + 2)) for k in kernel * 2]
    indices = version >= 8 and rng.random() < 0.6
    return Config(opset, shape, dtype, attrs, indices)


@functools.cache
def configs() -> tuple[Config, ...]:
    rng = np.random.default_rng(SEED)
    return tuple(draw(rng) for _ in range(CONFIGS))


def name(index: int) -> str:
    c = configs()[index]
    return f"{index}-opset{c.opset}-{c.dtype}-{len(c.shape) - 2}d" + ("-idx" if c.indices else "")


def input_values(c: Config, index: int) -> np.ndarray:
    rng = np.random.default_rng((SEED, index))
    if c.dtype.kind in "iu":
        info = np.iinfo(c.dtype)
        return rng.integers(info.min, int(info.max) + 1, c.shape).astype(c.dtype)
    # few distinct values: ties are common
    return (rng.integers(-6, 7, c.shape) * 0.5).astype(c.dtype)


def run(c: Config, x: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with input `x` (current backend)."""
    return max_pool(x, opset=c.opset, return_indices=c.indices, **c.attrs)


def _run_sampled(index: int) -> Any:
    c = configs()[index]
    return run(c, input_values(c, index))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [Case("MaxPool", name(i), functools.partial(_run_sampled, i), i % QUICK_EVERY == 0)
            for i in range(CONFIGS)]
