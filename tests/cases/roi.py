"""RoiAlign and MaxRoiPool: CONFIGS seeded random configurations (every opset version, every
float dtype, 1-3 images of 1-5 channels and 1-13 pixels a side, 0-6 regions with boxes on a
quarter-pixel lattice (ties of MaxRoiPool's rounding), partly or wholly outside the image,
zero-size and reversed ones, spatial scales, fixed and adaptive sampling, both modes and both
coordinate transformations; values with +/-inf and NaN in some). Configuration `index` is drawn
from its own generator (stream 0), its inputs from another (stream 1)."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from onnx_cupy import max_roi_pool, roi_align

from .common import BF16, FLOAT_DTYPES, Case, seeded, wanted_ops

CONFIGS = 400
SEED = 20261129
QUICK_EVERY = 20
OPS = ("RoiAlign", "MaxRoiPool")
OPSETS = {"RoiAlign": (10, 11, 16, 21, 22), "MaxRoiPool": (1, 12, 22)}
SCALES = (1.0, 0.5, 0.25, 2.0, 0.0625)


@dataclasses.dataclass(frozen=True)
class Config:
    """Configuration `index`: operator, opset, X's shape and dtype, the number of regions, the
    attributes, whether the values hold NaN and infinities."""

    index: int
    op: str
    opset: int
    dtype: np.dtype
    shape: tuple[int, int, int, int]
    regions: int
    attrs: tuple[tuple[str, Any], ...]
    special: bool

    @property
    def name(self) -> str:
        shape = "x".join(map(str, self.shape))
        attrs = "-".join(f"{k}{v}" for k, v in self.attrs if k != "pooled_shape") + (
            "-pooled{}x{}".format(*dict(self.attrs)["pooled_shape"])
            if self.op == "MaxRoiPool" else "")
        return (f"{self.index:04d}-{self.op}{self.opset}-{self.dtype.name}-{shape}-"
                f"k{self.regions}-{attrs}{'-special' if self.special else ''}")


@functools.cache
def configuration(index: int) -> Config:
    rng = seeded(SEED, index, 0)
    op = OPS[index % 2]
    opset = int(rng.choice(OPSETS[op]))
    dtype = FLOAT_DTYPES[int(rng.integers(len(FLOAT_DTYPES)))]
    if dtype == BF16 and opset < 22:
        dtype = np.dtype(np.float32)
    shape = (int(rng.integers(1, 4)), int(rng.integers(1, 6)), int(rng.integers(1, 14)),
             int(rng.integers(1, 14)))
    regions = int(rng.choice([0, 1, 2, 3, 6]))
    scale = float(rng.choice(SCALES))
    size = (int(rng.integers(1, 6)), int(rng.integers(1, 6)))
    attrs: dict[str, Any]
    if op == "RoiAlign":
        attrs = {"mode": str(rng.choice(["avg", "max"])), "output_height": size[0],
                 "output_width": size[1], "sampling_ratio": int(rng.choice([0, 0, 1, 2, 3])),
                 "spatial_scale": scale}
        if opset >= 16 and rng.random() < 0.7:
            attrs["coordinate_transformation_mode"] = str(
                rng.choice(["half_pixel", "output_half_pixel"]))
    else:
        attrs = {"pooled_shape": size, "spatial_scale": scale}
    return Config(index, op, opset, dtype, shape, regions, tuple(attrs.items()),
                  bool(rng.random() < 0.2))


def inputs(c: Config) -> tuple[np.ndarray, ...]:
    """(X, rois[, batch_indices]) of configuration `c`: boxes on a quarter-pixel lattice of the
    unscaled image (scaled by 1 / spatial_scale), some reversed, zero-size or outside."""
    rng = seeded(SEED, c.index, 1)
    n, _, h, w = c.shape
    x = rng.uniform(-4, 4, c.shape)
    if c.special:
        mask = rng.random(c.shape)
        x[mask < 0.03] = np.nan
        x[(mask >= 0.03) & (mask < 0.06)] = np.inf
        x[(mask >= 0.06) & (mask < 0.09)] = -np.inf
    scale = dict(c.attrs)["spatial_scale"]
    k = c.regions
    corners = np.round(rng.uniform(-3, max(h, w) + 3, (k, 4)) * 4) / 4 / scale
    kind = rng.random(k)
    corners[kind < 0.5, 2:] = np.maximum(corners[kind < 0.5, 2:], corners[kind < 0.5, :2])
    corners[(kind >= 0.5) & (kind < 0.6), 2:] = corners[(kind >= 0.5) & (kind < 0.6), :2]
    batch = rng.integers(0, n, k)
    if c.op == "RoiAlign":
        return x.astype(c.dtype), corners.astype(c.dtype), batch.astype(np.int64)
    rois = np.concatenate([batch[:, None] + rng.uniform(0, 0.9, (k, 1)), corners], axis=1)
    return x.astype(c.dtype), rois.astype(c.dtype)


def run(c: Config, *args: Any) -> Any:
    """onnx-cupy on configuration `c` with its inputs `args` (current backend)."""
    if c.op == "RoiAlign":
        return roi_align(*args, opset=c.opset, **dict(c.attrs))
    return max_roi_pool(*args, opset=c.opset, **dict(c.attrs))


def _run_sampled(c: Config) -> Any:
    return run(c, *inputs(c))


def cases(ops: set[str] | None = None) -> list[Case]:
    chosen = wanted_ops(OPS, ops)
    return [Case(configuration(i).op, configuration(i).name,
                 functools.partial(_run_sampled, configuration(i)), i % QUICK_EVERY < 2)
            for i in range(CONFIGS) if configuration(i).op in chosen]
