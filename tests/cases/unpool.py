"""MaxUnpool: CONFIGS seeded random configurations (opsets 9-22, 1-3 spatial axes and a few with
4, every dtype, kernels, strides, pads beyond the kernel and negative ones, an output_shape larger
and a few shorter than the unpooled shape, indices from MaxPool-like windows or anywhere, with
repeats, values with NaN, infinities and -0.0). Configuration `index` is drawn from its own
generator (stream 0), redrawn until the unpooled shape is small enough; its inputs from another
(stream 1).

Then PLANE_CONFIGS of PyTorch's max_unpool1d/2d/3d (the per-plane index space and its scatter;
batched and unbatched, every dtype, paddings up to half the kernel, output sizes within a stride
of the default), drawn from a generator of their own: most through the function, some with
indices outside their plane run as the GPU path runs them (no host check: the kernel skips
them)."""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_cupy import max_unpool
from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F
from onnx_cupy.unpool import api as unpool_api

from .common import BF16, Case, seeded, wanted_ops

CONFIGS = 900
SEED = 20261126
QUICK_EVERY = 12     # the checker's representative subset: every 12th float32 one
OPS = ("MaxUnpool",)
OPSETS = (9, 11, 13, 22)
DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
MAX_OUT = 4000   # elements of the unpooled shape
PLANE_CONFIGS = 96
PLANE_SEED = 20261128


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
    x = _values(rng, config.shape, config.dtype)
    u = config.u
    total = math.prod(u) if min(u) >= 0 else 0
    if not total:
        return x, np.zeros(config.shape, np.int64)
    if not config.windowed:
        return x, rng.integers(0, total, size=config.shape).astype(np.int64)
    k = len(config.shape) - 2
    index = _windowed(rng, config.shape, config.attrs["kernel_shape"],
                      config.attrs.get("strides") or [1] * k,
                      config.attrs.get("pads") or [0] * (2 * k), u[2:])
    planes = np.arange(config.shape[0] * config.shape[1]).reshape(config.shape[:2] + (1,) * k)
    return x, index + planes * math.prod(u[2:])


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Values float32-exact in every dtype, NaN, infinities and -0.0 among them."""
    v = rng.uniform(-3, 3, size=shape).astype(np.float32)
    mask = rng.random(shape)
    v[mask < 0.03] = np.nan
    v[(mask >= 0.03) & (mask < 0.05)] = np.inf
    v[(mask >= 0.05) & (mask < 0.07)] = -0.0
    return v.astype(dtype)


def _windowed(rng: np.random.Generator, shape: tuple[int, ...], kernel: Any, strides: Any,
              pads: Any, lengths: tuple[int, ...]) -> np.ndarray:
    """Per element of an X of `shape` (N, C, *spatial), the flat index within its plane (of
    spatial `lengths`) of a position of its window, clipped into the plane along each axis."""
    k = len(lengths)
    index = np.zeros(shape, np.int64)
    for a in range(k):
        o = np.arange(shape[2 + a]).reshape((-1,) + (1,) * (k - 1 - a))
        tap = rng.integers(0, kernel[a], size=shape)
        index = index * lengths[a] + np.clip(o * strides[a] - pads[a] + tap, 0, lengths[a] - 1)
    return index


def run(config: Config, x: np.ndarray, indices: np.ndarray) -> Any:
    """onnx-cupy on `config` with inputs `x` and `indices` (current backend)."""
    return max_unpool(x, indices, config.output_shape, opset=config.opset, **config.attrs)


def _run_sampled(index: int) -> Any:
    c = configuration(index)
    return run(c, *sample(generator(index, 1), c))


@dataclass(frozen=True)
class PlaneConfig:
    """PyTorch's max_unpool{k}d call `index`: X's dtype and shape ((N, C, *spatial), or (C,
    *spatial) unbatched), kernel_size, stride, padding, output_size (None: the default),
    `invalid`: some indices lie outside their plane (run as the GPU path runs them)."""

    index: int
    dtype: np.dtype
    shape: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    output_size: tuple[int, ...] | None
    invalid: bool

    @property
    def default(self) -> tuple[int, ...]:
        """PyTorch's output lengths: (n - 1) * stride + kernel - 2 * padding."""
        spatial = self.shape[-len(self.kernel):]
        return tuple((n - 1) * s + k - 2 * p for n, k, s, p in zip(spatial, self.kernel,
                                                                    self.stride, self.padding))

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The output's shape, batched: (N, C, *lengths)."""
        batched = self.shape if len(self.shape) == len(self.kernel) + 2 else (1, *self.shape)
        return (*batched[:2], *(self.output_size or self.default))

    @property
    def name(self) -> str:
        """The test id: index, rank, dtype, shape, output_size given, invalid indices."""
        shape = "x".join(map(str, self.shape))
        return (f"plane-{self.index:03d}-{len(self.kernel)}d-{self.dtype.name}-{shape}"
                f"{'-output_size' if self.output_size else ''}"
                f"{'-invalid' if self.invalid else ''}")


@functools.cache
def plane_configuration(index: int) -> PlaneConfig:
    """PyTorch's call `index` (its own generator, stream 0)."""
    rng = seeded(PLANE_SEED, index, 0)
    k = int(rng.integers(1, 4))
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    kernel = tuple(int(v) for v in rng.integers(1, 4, size=k))
    stride = tuple(int(v) for v in rng.integers(1, 4, size=k))
    padding = tuple(int(rng.integers(0, n // 2 + 1)) if rng.random() < 0.4 else 0
                    for n in kernel)   # a padding empties the output of a length-1 axis
    spatial = tuple(int(v) for v in rng.integers(1, 6 if k < 3 else 4, size=k))
    channels = int(rng.integers(1, 4))
    shape = (channels, *spatial) if rng.random() < 0.2 else \
        (int(rng.integers(1, 3)), channels, *spatial)
    config = PlaneConfig(index, dtype, shape, kernel, stride, padding, None,
                         bool(rng.random() < 0.2))
    if rng.random() < 0.4:   # within a stride of the default, >= 0
        config = dataclasses.replace(config, output_size=tuple(
            max(0, n + int(rng.integers(1 - s, s))) for n, s in zip(config.default, stride)))
    return config


def plane_sample(config: PlaneConfig) -> tuple[np.ndarray, np.ndarray]:
    """(input, indices) of PyTorch's call (stream 1): indices within their plane, in a
    MaxPool-like window of their element or anywhere (repeats likely); where `invalid`, about
    one in eight (at least one) outside it (negative, the plane's size, beyond)."""
    rng = seeded(PLANE_SEED, config.index, 1)
    x = _values(rng, config.shape, config.dtype)
    out = config.out_shape
    plane = math.prod(out[2:])
    batched = out[:2] + x.shape[-len(config.kernel):]
    if not plane:
        return x, np.zeros(x.shape, np.int64)
    if rng.random() < 0.5:
        index = rng.integers(0, plane, size=batched)
    else:
        index = _windowed(rng, batched, config.kernel, config.stride, config.padding, out[2:])
    if config.invalid:
        bad = rng.random(batched) < 0.125
        bad.flat[int(rng.integers(bad.size))] = True   # at least one
        index[bad] = rng.choice([-1, -7, plane, plane + 5], size=int(bad.sum()))
    return x, index.reshape(x.shape)


def run_plane(config: PlaneConfig, x: np.ndarray, indices: np.ndarray) -> Any:
    """PyTorch's call on the current backend; where `invalid`, the call the function prepares,
    without the host check, on the emulated path (what a GPU runs: the kernel skips them)."""
    k = len(config.kernel)
    if not config.invalid:
        unpool = getattr(F, f"max_unpool{k}d")
        return unpool(x, indices, config.kernel, config.stride, config.padding,
                      config.output_size)
    xb, ib = (x, indices) if x.ndim == k + 2 else (x[None], indices[None])
    with execution.backend("emulated"):
        y = unpool_api.run(
            xb, ib, config.out_shape, 22,
            {"kernel_shape": list(config.kernel), "strides": list(config.stride),
             "pads": list(config.padding) * 2}, index_space="plane", checked=False)
    return y if x.ndim == k + 2 else y[0]


def _run_plane(index: int) -> Any:
    c = plane_configuration(index)
    return run_plane(c, *plane_sample(c))


def cases(ops: set[str] | None = None) -> list[Case]:
    if not wanted_ops(OPS, ops):
        return []
    return [*(Case("MaxUnpool", configuration(i).name, functools.partial(_run_sampled, i),
                   quick(i)) for i in range(CONFIGS)),
            *(Case("MaxUnpool", plane_configuration(i).name, functools.partial(_run_plane, i),
                   plane_quick(i)) for i in range(PLANE_CONFIGS))]


def quick(index: int) -> bool:
    """In the checker's representative subset (few kernel instantiations to build)."""
    return index % QUICK_EVERY == 0 and configuration(index).dtype == np.float32


def plane_quick(index: int) -> bool:
    """PyTorch's calls in the checker's representative subset: float32 ones whose index is a
    multiple of 3."""
    return index % 3 == 0 and plane_configuration(index).dtype == np.float32
