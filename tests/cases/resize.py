"""Resize: COUNT seeded random configurations (opsets 10-19, every mode, coordinate
transformation mode and nearest mode, antialias, cubic_coeff_a, exclude_outside,
extrapolation_value, roi, axes with negative values, keep_aspect_ratio_policy, scales and sizes,
float and integer dtypes), mostly of the shapes onnxruntime's CPU kernels accept (linear: ranks
2-5 resizing inner axes; cubic: ranks 2 and 4), then EXTRAS, rare cases the draw seldom
reaches. Configuration `index` is drawn from its own generator (stream 0), its input from
another (stream 1)."""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple, Protocol

import numpy as np

from onnx_cupy import resize

from .common import BF16, Case, wanted_ops

COUNT = 2400
SEED = 20261123
QUICK_EVERY = 80     # the checker's representative subset
OPS = ("Resize",)
VERSIONS = (10, 11, 13, 18, 19)
COMMON = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize")
COORDINATE_MODES = {10: ("asymmetric",), 11: (*COMMON, "tf_half_pixel_for_nn"), 13: COMMON,
                    18: COMMON, 19: (*COMMON, "half_pixel_symmetric")}
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
POLICIES = ("stretch", "not_larger", "not_smaller")
SCALES = (0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 1.0, 1.25, 1.3, 1.4, 1.5, 1.7, 2.0, 2.5, 2.8, 3.0)
FLOATS = [np.dtype(t) for t in ("float16", "float32", "float64")] + [BF16]
INTEGERS = [np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                                  "uint64")]
MAX_OUT = 2500  # output elements of a configuration


@dataclasses.dataclass
class Config:
    """One Resize node: opset, X's shape and dtype, attributes (ours: axes may be negative) and
    the roi/scales/sizes inputs given."""

    opset: int
    shape: tuple[int, ...]
    dtype: np.dtype
    attrs: dict[str, Any]
    inputs: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @property
    def mode(self) -> str:
        return str(self.attrs.get("mode", "nearest"))

    @property
    def ctm(self) -> str:
        return str(self.attrs.get("coordinate_transformation_mode",
                                  "asymmetric" if self.opset == 10 else "half_pixel"))

    def axes(self) -> list[int]:
        rank = len(self.shape)
        return [a % rank for a in self.attrs.get("axes", range(rank))]


class Axis(NamedTuple):
    """One resized axis: input and output length, target width, scale, roi; computed here
    independently of onnx-cupy."""

    n: int
    m: int
    w: float
    s: float
    r0: float
    r1: float

    @property
    def roi(self) -> tuple[float, float]:
        return self.r0, self.r1


class Node(Protocol):
    """What axes_of reads of a Resize configuration (this module's Config, nearest's)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def attrs(self) -> dict[str, Any]: ...
    @property
    def inputs(self) -> dict[str, np.ndarray]: ...
    def axes(self) -> list[int]: ...


def axes_of(config: Node) -> list[Axis]:
    ns = [config.shape[a] for a in config.axes()]
    k = len(ns)
    roi = config.inputs.get("roi")
    rois = [(0.0, 1.0)] * k if roi is None or roi.size == 0 else [
        (float(roi[i]), float(roi[k + i])) for i in range(k)]
    if config.inputs.get("scales", np.zeros(0)).size:
        ss = [float(s) for s in config.inputs["scales"]]
        return [Axis(n, math.floor(n * s), n * s, s, *r) for n, s, r in zip(ns, ss, rois)]
    sizes = [int(m) for m in config.inputs["sizes"]]
    policy = config.attrs.get("keep_aspect_ratio_policy", "stretch")
    if policy == "stretch":
        return [Axis(n, m, float(m), m / n, *r) for n, m, r in zip(ns, sizes, rois)]
    ratios = [m / n for m, n in zip(sizes, ns)]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    return [Axis(n, math.floor(s * n + 0.5), s * n, s, *r) for n, r in zip(ns, rois)]


def _scale(rng: np.random.Generator) -> float:
    if rng.random() < 0.7:
        return float(rng.choice(SCALES))
    return float(np.float32(rng.uniform(0.2, 3.2)))


def draw(rng: np.random.Generator) -> Config:
    """A random configuration of at most MAX_OUT output elements, mostly of the shapes
    onnxruntime's CPU kernels accept."""
    while True:
        config = _draw_once(rng)
        out = list(config.shape)
        for d, a in zip(config.axes(), axes_of(config)):
            out[d] = a.m
        if math.prod(out) <= MAX_OUT:
            return config


def _draw_once(rng: np.random.Generator) -> Config:
    opset = int(rng.choice(VERSIONS, p=[0.1, 0.2, 0.2, 0.2, 0.3]))
    modes = ["nearest", "linear"] + (["cubic"] if opset > 10 else [])
    mode = str(rng.choice(modes))
    rank = int(rng.choice([2, 4]) if mode == "cubic" else rng.choice([1, 2, 3, 4, 5]))
    if mode == "linear" and rank == 1 and rng.random() < 0.8:
        rank = 2
    shape = [int(v) for v in rng.integers(1, 7, size=rank)]
    inner = rank if rank <= 3 and mode != "cubic" else 2  # axes linear/cubic may resize
    ctm = str(rng.choice(COORDINATE_MODES[opset]))
    attrs: dict[str, Any] = {"mode": mode}
    if opset > 10:
        attrs["coordinate_transformation_mode"] = ctm
        if mode == "nearest":
            attrs["nearest_mode"] = str(rng.choice(NEAREST_MODES))
        else:
            attrs["exclude_outside"] = int(rng.random() < 0.3)
        if mode == "cubic":
            attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5, -0.6]))
        if opset >= 18 and mode != "nearest":
            attrs["antialias"] = int(rng.random() < 0.3)
        if ctm == "tf_crop_and_resize":
            attrs["extrapolation_value"] = float(rng.choice([0.0, 10.0, -2.5, 0.5]))
    resized = list(range(rank)) if mode == "nearest" else list(range(rank - inner, rank))
    axes = list(range(rank))
    if opset >= 18 and rng.random() < 0.5:
        pick = sorted(rng.choice(resized, size=int(rng.integers(1, len(resized) + 1)),
                                 replace=False).tolist())
        axes = [int(a) for a in (pick if rng.random() < 0.7 else rng.permutation(pick))]
        attrs["axes"] = [a - rank if rng.random() < 0.3 else a for a in axes]
    k = len(axes)
    inputs: dict[str, np.ndarray] = {}
    use_sizes = opset > 10 and rng.random() < 0.4
    if use_sizes:
        sizes = [int(rng.integers(1, 9)) if a in resized else shape[a] for a in axes]
        inputs["sizes"] = np.array(sizes, dtype=np.int64)
        if opset >= 18:
            attrs["keep_aspect_ratio_policy"] = str(rng.choice(POLICIES))
    else:
        scales = [_scale(rng) if a in resized else 1.0 for a in axes]
        inputs["scales"] = np.array(scales, dtype=np.float32)
    if opset > 10 and (ctm == "tf_crop_and_resize" or rng.random() < 0.1):
        grid = rng.random() < 0.6
        starts = [float(rng.choice([-0.25, 0, 0.1, 0.25, 0.4])) if grid else rng.uniform(-0.3, 0.6)
                  for _ in range(k)]
        ends = [float(rng.choice([0.5, 0.6, 0.8, 1, 1.2])) if grid else rng.uniform(0.4, 1.3)
                for _ in range(k)]
        roi_type = np.float64 if rng.random() < 0.2 else np.float32
        inputs["roi"] = np.array(starts + ends, dtype=roi_type)
    if mode == "nearest":
        dtype = FLOATS[int(rng.integers(4))] if rng.random() < 0.6 else INTEGERS[
            int(rng.integers(len(INTEGERS)))]
    else:
        dtype = FLOATS[int(rng.integers(4))] if rng.random() < 0.75 else INTEGERS[
            int(rng.integers(len(INTEGERS)))]
    if dtype == BF16 and opset < 13:
        dtype = np.dtype(np.float32)
    return Config(opset, tuple(shape), dtype, attrs, inputs)


def sample(rng: np.random.Generator, config: Config) -> np.ndarray:
    """Random X: floats in [-2, 3), integers within the dtype and int32."""
    if config.dtype.kind in "iu":
        info = np.iinfo(config.dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000), size=config.shape,
                            endpoint=True).astype(config.dtype)
    return rng.uniform(-2, 3, size=config.shape).astype(config.dtype)


# rare cases the draw seldom reaches, run after the drawn configurations
EXTRAS = (
    # 7 -> 17 half_pixel: output 8 at x = 3.0000000000000004 (reference_window_shift)
    Config(19, (2, 7), np.dtype(np.float32), {"mode": "linear"},
           {"sizes": np.array([2, 17], np.int64)}),
    Config(13, (3, 7), np.dtype(np.float32), {"mode": "nearest"},
           {"roi": np.zeros(0, np.float32), "scales": np.zeros(0, np.float32),
            "sizes": np.array([3, 17], np.int64)}),
    # 5 * 1.4f = 6.99999988: onnxruntime's float32 product is 7 (length_float32)
    Config(19, (2, 5), np.dtype(np.float32), {"mode": "nearest"},
           {"scales": np.array([1, 1.4], np.float32)}),
)


def generator(index: int, stream: int) -> np.random.Generator:
    """The generator of configuration `index`: stream 0 draws it, stream 1 its input."""
    return np.random.default_rng([SEED, index, stream])


@functools.cache
def configuration(index: int) -> Config:
    """Drawn configuration `index` (0 <= index < COUNT), then EXTRAS."""
    return draw(generator(index, 0)) if index < COUNT else EXTRAS[index - COUNT]


def name(index: int) -> str:
    """The test id: index (or extra), opset, mode, coordinate transformation mode, dtype."""
    c = configuration(index)
    at = f"{index:04d}" if index < COUNT else f"extra{index - COUNT}"
    return f"{at}-opset{c.opset}-{c.mode}-{c.ctm}-{c.dtype.name}"


def run(config: Config, x: np.ndarray) -> Any:
    """onnx-cupy on `config` with input `x` (current backend)."""
    arguments: dict[str, Any] = {**config.attrs, **config.inputs}
    return resize(x, opset=config.opset, **arguments)


def _run_sampled(index: int) -> Any:
    return run(configuration(index), sample(generator(index, 1), configuration(index)))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [Case("Resize", name(i), functools.partial(_run_sampled, i), i % QUICK_EVERY == 0)
            for i in range(COUNT + len(EXTRAS))]
