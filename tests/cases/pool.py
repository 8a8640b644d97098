"""AveragePool and LpPool: CONFIGS seeded random configurations per operator (every opset and
dtype in turn, ranks 1-3, pads up to and beyond the kernel, auto_pad, dilations, ceil_mode,
count_include_pad, p). Configuration `index` of `op` is drawn from its own generator (stream
0), its input from another (stream 1)."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from onnx_cupy import average_pool, lp_pool

from .common import BF16, FLOAT_DTYPES, Case, wanted_ops

CONFIGS = 1000
SEED = 20261123
QUICK_EVERY = 50     # the checker's representative subset: every 50th configuration
OPS = ("AveragePool", "LpPool")
RUN = {"AveragePool": average_pool, "LpPool": lp_pool}
# opsets drawn: every version, and opsets in between (the version in force decides)
OPSETS = {"AveragePool": (1, 7, 9, 10, 11, 15, 19, 21, 22),
          "LpPool": (1, 2, 8, 11, 17, 18, 22)}
SINCE = {"AveragePool": {"count_include_pad": 7, "ceil_mode": 10, "dilations": 19},
         "LpPool": {"ceil_mode": 18, "dilations": 18}}
VERSIONS = {"AveragePool": (1, 7, 10, 11, 19, 22), "LpPool": (1, 2, 11, 18, 22)}


def version_of(op: str, opset: int) -> int:
    return max(v for v in VERSIONS[op] if v <= opset)


def draw(rng: np.random.Generator, op: str, opset: int) -> tuple[tuple[int, ...], dict[str, Any]]:
    """A small random shape and attributes: pads up to kernel + 1, auto_pad (also "") sometimes
    with pads, dilations, ceil_mode, count_include_pad, p."""
    nd = int(rng.integers(1, 4))
    spatial = [int(rng.integers(1, {1: 10, 2: 7, 3: 5}[nd])) for _ in range(nd)]
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *spatial)
    attrs: dict[str, Any] = {"kernel_shape": rng.integers(1, 4, nd).tolist()}
    if rng.random() < 0.7:
        attrs["strides"] = rng.integers(1, 4, nd).tolist()
    if opset >= SINCE[op]["dilations"] and rng.random() < 0.4:
        attrs["dilations"] = rng.integers(1, 4, nd).tolist()
    auto_pad = str(rng.choice(["NOTSET", "NOTSET", "", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto_pad != "NOTSET" or rng.random() < 0.3:
        attrs["auto_pad"] = auto_pad
    if rng.random() < (0.8 if auto_pad in ("NOTSET", "") else 0.15):
        if rng.random() < 0.25:   # up to and beyond the kernel
            attrs["pads"] = rng.integers(0, max(attrs["kernel_shape"]) + 2, 2 * nd).tolist()
        else:                     # below the kernel, as onnxruntime requires
            attrs["pads"] = [int(rng.integers(0, k)) for k in 2 * attrs["kernel_shape"]]
    for name in ("ceil_mode", "count_include_pad"):
        if opset >= SINCE[op].get(name, 99) and rng.random() < 0.5:
            attrs[name] = 1
    if op == "LpPool":
        attrs["p"] = (float(rng.choice([1, 2, 3, 0.5, 1.5])) if opset == 1
                      else int(rng.integers(1, 4)))
    return shape, attrs


@dataclasses.dataclass(frozen=True)
class Config:
    """Configuration `index` of `op`: the opset (every listed one in turn), the dtype (those the
    version takes, in turn), the input shape and the attributes drawn."""

    op: str
    index: int
    opset: int
    dtype: np.dtype
    shape: tuple[int, ...]
    attrs: dict[str, Any]

    @property
    def version(self) -> int:
        return version_of(self.op, self.opset)

    @property
    def name(self) -> str:
        """The test id: operator, index, opset, dtype and spatial rank."""
        return (f"{self.op}-{self.index:04d}-opset{self.opset}-{self.dtype.name}-"
                f"{len(self.shape) - 2}d")

    def __str__(self) -> str:
        return (f"config {self.index}: {self.op} opset {self.opset} {self.shape} "
                f"{self.dtype.name} {self.attrs}")


def generator(op: str, index: int, stream: int) -> np.random.Generator:
    """The generator of configuration `index`: stream 0 draws it, stream 1 its input."""
    return np.random.default_rng([SEED, OPS.index(op), index, stream])


@functools.cache
def configuration(op: str, index: int) -> Config:
    opset = OPSETS[op][index % len(OPSETS[op])]
    dtypes: list[np.dtype] = [t for t in FLOAT_DTYPES if t != BF16 or version_of(op, opset) >= 22]
    dtype = np.dtype(dtypes[(index // len(OPSETS[op])) % len(dtypes)])
    shape, attrs = draw(generator(op, index, 0), op, opset)
    return Config(op, index, opset, dtype, shape, attrs)


def sample(c: Config) -> np.ndarray:
    """The input of configuration `c`: uniform in [-2, 3)."""
    return generator(c.op, c.index, 1).uniform(-2, 3, c.shape).astype(c.dtype)


def run(c: Config, x: np.ndarray) -> Any:
    """onnx-cupy on configuration `c` with input `x` (current backend)."""
    call: Any = RUN[c.op]
    return call(x, opset=c.opset, **c.attrs)


def _run_sampled(c: Config) -> Any:
    return run(c, sample(c))


def cases(ops: set[str] | None = None) -> list[Case]:
    return [Case(op, configuration(op, i).name,
                 functools.partial(_run_sampled, configuration(op, i)), i % QUICK_EVERY == 0)
            for op in wanted_ops(OPS, ops) for i in range(CONFIGS)]
