"""Differential MaxUnpool: seeded random configurations (opsets 9-22, 1-3 spatial axes and a few
with 4, every dtype, kernels, strides, pads beyond the kernel and negative ones, an output_shape
larger and a few shorter than the unpooled shape, indices from MaxPool-like windows or anywhere,
with repeats, values with NaN, infinities and -0.0), drawn in the package
(tests/cases/unpool.py, which the kernel checker runs too), run on onnx-cupy and judged
by a loop oracle written out here, onnxruntime, onnx.reference and ONNX shape inference.

`evaluate(index)` runs configuration `index` once (cached) and records, per check: onnx-cupy
equals the oracle bit for bit or rejects what it rejects (numpy always, emulated on every fourth);
its shape and values equal the runtimes' where those agree (both rejecting counts as agreeing),
shape inference's where it infers a static shape they agree with; where the runtimes disagree, a
listed case (`KNOWN`) applies and onnx-cupy gives the side it names; where only one runs, its
result unless a listed case names the other side. onnxruntime, which has float16 and float32
kernels only, runs float64 and bfloat16 through float32 (every value is a float32: exact).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from cases import unpool as drawn
from cases.unpool import Config

from helpers.differential import Listed, Record
from helpers.util import inferred_shape, node_model, onnxruntime, reference
from onnx_cupy.core import execution

# the configurations, drawn in the package (the kernel checker runs them too)
CONFIGS, configuration, sample, unpooled = (drawn.CONFIGS, drawn.configuration, drawn.sample,
                                            drawn.unpooled)
EMULATED_EVERY = 4
ORT_NATIVE = ("float16", "float32")


def oracle(x: np.ndarray, indices: np.ndarray, u: tuple[int, ...],
           output_shape: tuple[int, ...] | None) -> np.ndarray:
    """One element at a time in X's row-major order (the last of a repeated index wins) into a
    zero tensor of U, placed at the start of every axis of the output."""
    flat = np.zeros(math.prod(u), x.dtype)
    for e in range(x.size):
        flat[int(indices.flat[e])] = x.flat[e]
    y = np.zeros(output_shape or u, x.dtype)
    y[tuple(slice(0, n) for n in u)] = flat.reshape(u)
    return y


def window_attributes(rng: np.random.Generator, shape: tuple[int, ...], strides_to: int = 3,
                      least: int = 1) -> tuple[list[int], list[int], list[int]]:
    """Random (kernel_shape, strides, pads) for an X of `shape`: kernels 1-3, strides 1 up to
    `strides_to` - 1, pads -1 up to the kernel (all 0 where they would leave an unpooled length
    below `least`)."""
    k = len(shape) - 2
    kernel = [int(v) for v in rng.integers(1, 4, k)]
    strides = [int(v) for v in rng.integers(1, strides_to, k)]
    pads = [int(rng.integers(-1, kk + 1)) for kk in kernel * 2]
    if min(unpooled(shape, kernel, strides, pads)[2:]) < least:
        pads = [0] * (2 * k)
    return kernel, strides, pads


def plane_oracle(x: np.ndarray, indices: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    """Per-plane indices (PyTorch's): per (n, c) plane, each element in X's row-major order to
    its index in the plane of the output (the last of a repeated index wins); an index outside
    the plane is skipped (what the kernel does; host arrays are rejected before)."""
    planes = x.reshape(out_shape[0] * out_shape[1], -1)
    where = indices.reshape(planes.shape)
    y = np.zeros((planes.shape[0], math.prod(out_shape[2:])), x.dtype)
    for p in range(planes.shape[0] if y.size else 0):   # an empty output reads nothing
        for e in range(planes.shape[1]):
            if 0 <= where[p, e] < y.shape[1]:
                y[p, where[p, e]] = planes[p, e]
    return y.reshape(out_shape)


def _expected(config: Config, x: np.ndarray, indices: np.ndarray) -> Any:
    """The oracle's result, or ValueError where onnx-cupy must reject the configuration (a
    negative unpooled length, an output_shape shorter than U, indices where U has no element)."""
    u = config.u
    if min(u) < 0:
        return ValueError("negative unpooled length")
    if x.size and not math.prod(u):
        return ValueError("no index is valid in an empty U")
    if config.output_shape and any(m < n for m, n in zip(config.output_shape, u)):
        return ValueError("output_shape shorter than U")
    return oracle(x, indices, u, config.output_shape)


# ---------------------------------------------------------------- running

def model(config: Config, dtype: np.dtype, initializers: bool = False) -> onnx.ModelProto:
    """The one-node model; output_shape an input or (shape inference) an initializer."""
    names = [("X", dtype), ("I", np.dtype(np.int64))]
    if config.output_shape is not None:
        names.append(("output_shape", np.dtype(np.int64)))
    init = {"output_shape": np.array(config.output_shape, np.int64)} if (
        initializers and config.output_shape is not None) else None
    m = node_model("MaxUnpool", names, config.attrs, config.opset,
                   shape=config.shape if initializers else None, initializers=init)
    if initializers:   # shape inference needs I's shape too
        m.graph.input[1].type.tensor_type.shape.CopyFrom(m.graph.input[0].type.tensor_type.shape)
    return m


def _feeds(config: Config, x: np.ndarray, indices: np.ndarray) -> dict[str, np.ndarray]:
    feeds = {"X": x, "I": indices}
    if config.output_shape is not None:
        feeds["output_shape"] = np.array(config.output_shape, np.int64)
    return feeds


def run_onnxruntime(config: Config, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    carrier = x.dtype if x.dtype.name in ORT_NATIVE else np.dtype(np.float32)
    y = onnxruntime(model(config, carrier), _feeds(config, x.astype(carrier), indices))[0]
    return y.astype(x.dtype)


def run_reference(config: Config, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
    return reference(model(config, x.dtype), _feeds(config, x, indices))[0]


def run_ours(config: Config, x: np.ndarray, indices: np.ndarray,
             backend: str = "numpy") -> np.ndarray:
    with execution.backend(backend):
        return drawn.run(config, x, indices)


def _attempt(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a rejection is an outcome)
        return exc


def same(a: Any, b: Any) -> bool:
    """Both arrays of one shape and the same bits, or both rejections."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and a.tobytes() == b.tobytes()
    return isinstance(a, Exception) and isinstance(b, Exception)


# ---------------------------------------------------------------- listed disagreements

def _pads(c: Config) -> list[int]:
    return c.attrs.get("pads") or [0] * (2 * (len(c.shape) - 2))


# where a runtime gives another result than onnx-cupy ('exact': the oracle judges)
KNOWN = (
    Listed("indices_in_output_shape",
           lambda c: c.output_shape is not None and c.output_shape != c.u, "ref",
           "output_shape other than the unpooled shape U: onnxruntime reads the indices as flat "
           "indices into output_shape; onnx.reference and ONNX's node test "
           "maxunpool_export_with_output_shape read them in U and place U at the start"),
    Listed("pad_not_below_kernel",
           lambda c: any(p >= c.attrs["kernel_shape"][i % (len(c.shape) - 2)]
                         for i, p in enumerate(_pads(c))), "ref",
           "a pad >= the kernel size: onnxruntime rejects the attributes; the text allows any "
           "pad and onnx.reference computes"),
    Listed("unpooled_length_zero", lambda c: 0 in c.u[2:], "ref",
           "an unpooled length of 0: onnxruntime rejects it ('not positive'), onnx.reference "
           "gives an empty output (as onnx-cupy's pooling does for a length of 0)"),
    Listed("output_shape_shorter",
           lambda c: c.output_shape is not None and any(
               m < n for m, n in zip(c.output_shape, c.u)), "exact",
           "an output_shape shorter than U on an axis: onnxruntime accepts it where it holds as "
           "many elements (its indices address output_shape); onnx.reference fails, or drops U's "
           "elements along a length of 0; onnx-cupy rejects it (ValueError: its indices address "
           "U, as the node test's)"),
    Listed("four_spatial_axes", lambda c: len(c.shape) > 5, "exact",
           "more than 3 spatial axes: both runtimes reject ('Unsupported pooling size'); "
           "onnx-cupy computes (its MaxPool writes indices for up to 8)"),
)


def known(config: Config) -> list[Listed]:
    return [k for k in KNOWN if k.applies(config)]


# ---------------------------------------------------------------- one configuration

@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index` on onnx-cupy and the judges; checks: `oracle`, `emulated`,
    `shape = runtimes`, `values = runtimes` (the runtimes agree: values or both reject),
    `shape = inference`, `disagreement listed`, `follows listed side`, `only_ort`,
    `only_ref`; events: `ort ran`, `reference ran`, `listed:<name>`."""
    c = configuration(index)
    record = Record(c)
    x, indices = sample(drawn.generator(index, 1), c)
    x0, i0 = x.copy(), indices.copy()
    expected = _expected(c, x, indices)
    ours = _attempt(run_ours, c, x, indices)
    record.check("oracle", same(ours, expected) and (
        not isinstance(ours, Exception) or isinstance(ours, ValueError)),
        f"ours {_shape(ours)}, oracle {_shape(expected)}")
    if isinstance(ours, np.ndarray):
        record.count("ours ran")
    record.check("inputs kept", x.tobytes() == x0.tobytes() and np.array_equal(indices, i0))
    if index % EMULATED_EVERY == 0:
        emulated = _attempt(run_ours, c, x, indices, "emulated")
        record.check("emulated", same(emulated, ours), f"emulated {_shape(emulated)}")
    ort = _attempt(run_onnxruntime, c, x, indices)
    ref = _attempt(run_reference, c, x, indices)
    for name, result in (("ort ran", ort), ("reference ran", ref)):
        if isinstance(result, np.ndarray):
            record.count(name)
    kinds = known(c)
    for k in kinds:
        record.count(f"listed:{k.name}")
    if same(ort, ref):
        if isinstance(ort, np.ndarray):
            record.check("shape = runtimes", _shape(ours) == ort.shape,
                         f"runtimes {ort.shape}, ours {_shape(ours)}")
            inferred = _attempt(inferred_shape, model(c, c.dtype, True))
            if isinstance(inferred, tuple) and inferred == ort.shape:
                record.check("shape = inference", _shape(ours) == inferred,
                             f"shape inference {inferred}, ours {_shape(ours)}")
        if any(k.follows == "exact" for k in kinds):
            record.count("oracle side")   # the oracle check above judged it
        else:
            record.check("values = runtimes", same(ours, ort),
                         f"the runtimes agree ({_shape(ort)}), ours {_shape(ours)}")
        return record
    ran = "ort" if isinstance(ort, np.ndarray) else "ref"
    single = isinstance(ort, np.ndarray) != isinstance(ref, np.ndarray)
    if not kinds:
        record.check(f"only_{ran}" if single else "disagreement listed",
                     single and same(ours, ort if ran == "ort" else ref),
                     f"ours {_shape(ours)}, onnxruntime {_shape(ort)}, onnx.reference "
                     f"{_shape(ref)}: no listed case")
        return record
    sides = {k.follows for k in kinds}
    if len(sides) > 1 or "exact" in sides:
        record.count("oracle side")   # the oracle check above judged it
        return record
    (side,) = sides
    record.check("follows listed side", same(ours, ort if side == "ort" else ref),
                 f"ours {_shape(ours)}, {side} {_shape(ort if side == 'ort' else ref)}")
    return record


def _shape(result: Any) -> Any:
    return result.shape if isinstance(result, np.ndarray) else repr(result)[:160]
