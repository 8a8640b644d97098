"""Differential Hardmax: seeded random configurations (opsets 1-13 and beyond, ranks 1-5, every
axis incl. negative ones, every float dtype, ties, +/-inf and NaN) run on onnx-cupy and judged by
an oracle written out here (first maximum of each row, NaN the maximum, the first NaN winning),
onnxruntime, onnx.reference and ONNX shape inference.

`evaluate(index)` runs configuration `index` once (cached) and records, per check: onnx-cupy
equals the oracle (numpy always, emulated on every fourth); its shape equals onnxruntime's and
onnx.reference's where those two agree, and shape inference's where it infers a static shape they
agree with; its values equal the runtimes' where they agree. Where they disagree the case is
classified (docs/semantics.md) and counted; below opset 13 onnx-cupy gives onnxruntime's values.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import onnx

from helpers.differential import Record
from helpers.util import BF16, inferred_shape, node_model, onnxruntime, reference
from onnx_cupy import hardmax
from onnx_cupy.core import execution

CONFIGS = 1200
SEED = 20261122
EMULATED_EVERY = 4
DTYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))
OPSETS = (1, 7, 11, 12, 13, 18, 21)
MAX_ELEMENTS = 1 << 20  # of an input: the oracle loops over rows in Python


def oracle(x: np.ndarray, axis: int, opset: int) -> np.ndarray:
    """The one-hot of the first maximum (NaN above everything, first NaN wins) per row: rows along
    `axis` (opset >= 13) or of the 2-D [prod(shape[:axis]), prod(shape[axis:])] view (below 13).
    The winners of a row are its NaNs if it has any, else the elements equal to its maximum."""
    rank = x.ndim
    axis %= rank
    if opset >= 13:
        v = np.moveaxis(x.astype(np.float64), axis, -1)
    else:
        v = x.astype(np.float64).reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
    rows = v.reshape(-1, v.shape[-1])
    nan = np.isnan(rows)
    with np.errstate(invalid="ignore"):
        winners = np.where(nan.any(axis=1, keepdims=True), nan,
                           rows == rows.max(axis=1, keepdims=True))
    y = np.zeros(rows.shape)
    y[np.arange(len(rows)), winners.argmax(axis=1)] = 1  # the first winner of each row
    y = y.reshape(v.shape)
    return (np.moveaxis(y, -1, axis) if opset >= 13 else y.reshape(x.shape)).astype(x.dtype)


def model(shape: tuple[int, ...], dtype: np.dtype, axis: int | None, opset: int) -> onnx.ModelProto:
    """A one-node model with the input shape declared, as exporters write it."""
    return node_model("Hardmax", [("X", dtype)], {} if axis is None else {"axis": axis}, opset,
                      shape=shape)


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype, nan: bool) -> np.ndarray:
    """Small integers (frequent ties), fractions, +/-inf, and NaN when `nan`; exact in every dtype."""
    x = rng.integers(-4, 5, size=shape).astype(np.float64)
    mask = rng.random(shape)
    x = np.where(mask < 0.4, rng.uniform(-3, 3, size=shape), x)
    x[(mask > 0.95) & (mask <= 0.97)] = np.inf
    x[mask > 0.97] = -np.inf
    if nan:
        x[mask < 0.02] = np.nan
    return x.astype(dtype)


def _try(fn, *args):
    try:
        return fn(*args)[0]
    except Exception:  # noqa: BLE001 (a runtime without a kernel for this dtype/opset)
        return None


class Config(NamedTuple):
    """Configuration `index`: opset, input shape and dtype, axis (None: the default), whether
    the input holds NaN."""

    index: int
    opset: int
    dtype: np.dtype
    shape: tuple[int, ...]
    axis: int | None
    nan: bool

    @property
    def name(self) -> str:
        """The test id: index, opset, dtype, shape and axis."""
        shape = "x".join(map(str, self.shape))
        axis = "default" if self.axis is None else self.axis
        return f"{self.index:04d}-opset{self.opset}-{self.dtype.name}-{shape}-axis{axis}"

    def __str__(self) -> str:
        return (f"config {self.index}: opset {self.opset} {self.shape} {self.dtype.name} "
                f"axis={self.axis}{' with NaN' if self.nan else ''}")


def _generator(index: int, stream: int) -> np.random.Generator:
    """The generator of configuration `index`: stream 0 draws it, stream 1 its input."""
    return np.random.default_rng([SEED, index, stream])


@functools.cache
def configuration(index: int) -> Config:
    rng = _generator(index, 0)
    opset = int(rng.choice(OPSETS))
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    if dtype == BF16 and opset < 13:
        dtype = np.dtype(np.float32)
    rank = int(rng.integers(1, 6))
    shape = (MAX_ELEMENTS + 1,)
    while math.prod(shape) > MAX_ELEMENTS:
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 7, 33], size=rank))
    axis = None if rng.random() < 0.15 else int(rng.integers(-rank, rank))
    if axis is None and opset < 13 and rank < 2:
        axis = 0
    return Config(index, opset, dtype, shape, axis, bool(rng.random() < 0.2))


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index` on onnx-cupy and the judges; checks: `oracle`, `emulated`,
    `shape = runtimes`, `shape = inference`, `values = runtimes` (where the runtimes agree),
    `values = onnxruntime below 13` (where they differ there); events: `ort ran`,
    `reference ran`, `runtimes agree` and the `differ: ...` classes."""
    c = configuration(index)
    record = Record(c)
    x = sample(_generator(index, 1), c.shape, c.dtype, c.nan)
    m = model(c.shape, c.dtype, c.axis, c.opset)
    default = -1 if c.opset >= 13 else 1
    expected = oracle(x, default if c.axis is None else c.axis, c.opset)
    kw = {} if c.axis is None else {"axis": c.axis}
    got = hardmax(x, opset=c.opset, **kw)
    record.check_raises_nothing("oracle", np.testing.assert_array_equal, got, expected)
    if index % EMULATED_EVERY == 0:
        with execution.backend("emulated"):
            emulated = hardmax(x, opset=c.opset, **kw)
        record.check_raises_nothing("emulated", np.testing.assert_array_equal, emulated, expected)

    ort = _try(onnxruntime, m, {"X": x})
    ref = _try(reference, m, {"X": x})
    if ort is not None:
        record.count("ort ran")
    if ref is not None:
        record.count("reference ran")
    if ort is None or ref is None or ort.shape != ref.shape:
        return record
    record.check("shape = runtimes", got.shape == ort.shape,
                 f"runtimes {ort.shape}, ours {got.shape}")
    inferred = inferred_shape(m)
    if inferred is not None and inferred == ort.shape:
        record.check("shape = inference", got.shape == inferred,
                     f"shape inference {inferred}, ours {got.shape}")
    if np.array_equal(ort, ref):
        record.count("runtimes agree")
        record.check("values = runtimes", np.array_equal(got, ort),
                     "onnxruntime and onnx.reference agree, ours differs")
    elif c.nan and np.isnan(x.astype(np.float64)).any():
        record.count("differ: NaN (ORT skips it; reference and onnx-cupy: first NaN wins)")
    elif c.opset < 13:
        record.count("differ: coerced 2-D rows below 13 (reference applies v13)")
        # onnxruntime implements the version's text
        record.check_raises_nothing("values = onnxruntime below 13",
                                    np.testing.assert_array_equal, got, ort)
    else:
        record.check("differ: unexplained", False, "the runtimes differ without a listed reason")
    return record
