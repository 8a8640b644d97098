"""Resize nearest, which input element each output takes: COUNT seeded random configurations
(opsets 10-19, every coordinate transformation mode (roi for tf_crop_and_resize) and nearest
mode, scales (decimal ones such as 0.3 and 0.6 whose float32 form is not exact, and random ones)
or sizes, up- and down-sampling, 1-3 resized axes of up to a few hundred elements,
keep_aspect_ratio_policy and axes from opset 18). X holds each element's own flat index (int32),
so an output names the element it took. Configuration `index` is drawn from its own generator."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_cupy import resize as run_resize

from . import resize
from .common import Case, wanted_ops
from .resize import COORDINATE_MODES, NEAREST_MODES, POLICIES, VERSIONS

DECIMALS = (0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.1, 1.2, 1.25, 1.3, 1.4,
            1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.1, 2.5, 2.9, 3.0, 3.3, 3.4, 3.5, 4.0)
MAX_ELEMENTS = 12000   # input and output elements of a configuration
FILL = -1              # extrapolation_value (tf_crop_and_resize): no element's index
COUNT = 2400
SEED = 20261125
QUICK_EVERY = 240    # the checker's representative subset
OPS = ("Resize",)


@dataclass(frozen=True)
class Config:
    """One nearest Resize node: opset, X's shape, attributes and the roi/scales/sizes given."""

    opset: int
    shape: tuple[int, ...]
    attrs: dict[str, Any]
    inputs: dict[str, np.ndarray]

    @property
    def ctm(self) -> str:
        return str(self.attrs.get("coordinate_transformation_mode", "asymmetric"))

    @property
    def rule(self) -> str:
        """The nearest_mode, "" at Resize-10 (floor where growing, ceil where shrinking)."""
        return str(self.attrs.get("nearest_mode", ""))

    def axes(self) -> list[int]:
        rank = len(self.shape)
        return [a % rank for a in self.attrs.get("axes", range(rank))]


def _length(rng: np.random.Generator, resized: int) -> int:
    if rng.random() < 0.4:
        return int(rng.integers(1, 13))
    return int(rng.integers(13, 400 if resized == 1 else 70 if resized == 2 else 20))


def _scale(rng: np.random.Generator) -> float:
    if rng.random() < 0.6:
        return float(np.float32(rng.choice(DECIMALS)))
    return float(np.float32(rng.uniform(0.1, 4.0)))


def draw(rng: np.random.Generator) -> Config:
    """A random configuration of at most MAX_ELEMENTS input and output elements."""
    while True:
        config = _draw_once(rng)
        out = list(config.shape)
        for d, a in zip(config.axes(), resize.axes_of(config)):
            out[d] = a.m
        if math.prod(out) <= MAX_ELEMENTS and math.prod(config.shape) <= MAX_ELEMENTS:
            return config


def _draw_once(rng: np.random.Generator) -> Config:
    opset = int(rng.choice(VERSIONS, p=[0.1, 0.2, 0.2, 0.2, 0.3]))
    rank = int(rng.integers(1, 5))
    resized = sorted(rng.choice(rank, size=int(rng.integers(1, min(3, rank) + 1)),
                                replace=False).tolist())
    shape = tuple(_length(rng, len(resized)) if d in resized else int(rng.integers(1, 4))
                  for d in range(rank))
    attrs: dict[str, Any] = {"mode": "nearest"}
    ctm = str(rng.choice(COORDINATE_MODES[opset]))
    if opset > 10:
        attrs.update(coordinate_transformation_mode=ctm,
                     nearest_mode=str(rng.choice(NEAREST_MODES)))
    axes = list(range(rank))
    if opset >= 18 and rng.random() < 0.5:
        axes = [int(a) for a in rng.permutation(resized)]
        attrs["axes"] = axes
    inputs: dict[str, np.ndarray] = {}
    if opset > 10 and rng.random() < 0.45:
        inputs["sizes"] = np.array([_length(rng, len(resized)) if a in resized else shape[a]
                                    for a in axes], np.int64)
        if opset >= 18 and rng.random() < 0.3:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(POLICIES))
    else:
        inputs["scales"] = np.array([_scale(rng) if a in resized else 1.0 for a in axes],
                                    np.float32)
    if ctm == "tf_crop_and_resize" and opset > 10:
        attrs["extrapolation_value"] = float(FILL)
        k = len(axes)
        if rng.random() < 0.6:
            roi = [float(rng.choice([-0.2, 0.0, 0.1, 0.25, 0.3])) for _ in range(k)] + [
                float(rng.choice([0.6, 0.75, 0.8, 1.0, 1.2])) for _ in range(k)]
        else:
            roi = list(rng.uniform(-0.3, 0.5, k)) + list(rng.uniform(0.5, 1.3, k))
        inputs["roi"] = np.array(roi, np.float32)
    return Config(opset, shape, attrs, inputs)


def generator(index: int) -> np.random.Generator:
    return np.random.default_rng([SEED, index])


@functools.cache
def configuration(index: int) -> Config:
    return draw(generator(index))


def name(index: int) -> str:
    """The test id: index, opset, coordinate mode, nearest mode, scales or sizes."""
    c = configuration(index)
    given = "sizes" if "sizes" in c.inputs else "scales"
    return f"{index:04d}-opset{c.opset}-{c.ctm}-{c.rule or 'resize10'}-{given}"


def sample(config: Config) -> np.ndarray:
    """X: each element's flat index (int32)."""
    return np.arange(math.prod(config.shape), dtype=np.int32).reshape(config.shape)


def run(config: Config) -> Any:
    """onnx-cupy on `config` (current backend)."""
    arguments: dict[str, Any] = {**config.attrs, **config.inputs}
    return run_resize(sample(config), opset=config.opset, **arguments)


def cases(ops: set[str] | None = None) -> list[Case]:
    """The configurations as Resize cases, named "nearest-" and the test id."""
    if not wanted_ops(OPS, ops):
        return []
    return [Case("Resize", f"nearest-{name(i)}", functools.partial(run, configuration(i)),
                 i % QUICK_EVERY == 0) for i in range(COUNT)]
