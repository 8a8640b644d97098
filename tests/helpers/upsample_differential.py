"""Differential Upsample: seeded random configurations (opsets 7, 9 and 10, nearest and linear,
ranks 1-5, scales of 1, whole and fractional, a few below 1, float, integer, bool and complex
dtypes; drawn in tests/cases/upsample.py, which the kernel checker runs too)
run on onnx-cupy and judged by an oracle written out here (floor(n * s) outputs,
x = y / s, nearest: element floor(x) with x in float32 as onnxruntime computes it; linear: the
two elements around x weighted (1 - t, t), axis by axis in float64, integers rounded half to even
and saturated), onnxruntime, onnx.reference and ONNX shape inference.

The runtimes overlap little: onnx.reference runs nearest with whole scales only, and not the
attribute form of Upsample-7; onnxruntime rejects Upsample-10 (deprecated) models, linear outside
its rank rules and dtypes it lacks (float64 and integers other than int8, uint8 and int32 run
through float32 and int32 here, holding the same values). `evaluate(index)` records, per check:
onnx-cupy equals the oracle (numpy; emulated = numpy on every fourth); where both runtimes run,
their shape and values; shape inference's static shape (whatever runs); where one runtime runs,
its result unless a listed case (`KNOWN`) puts it off (then the oracle judges).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from cases import upsample as drawn
from cases.upsample import Config

from helpers.differential import Listed, Record
from helpers.util import inferred_shape, node_model, onnxruntime, reference
from onnx_cupy.core import execution, numerics

# the configurations, drawn in the package (the kernel checker runs them too)
CONFIGS, configuration, sample = drawn.CONFIGS, drawn.configuration, drawn.sample
EMULATED_EVERY = 4
ORT_NATIVE = ("float16", "float32", "int8", "uint8", "int32")
ORT_FLOAT = np.dtype(np.float32)   # onnxruntime's carrier of float64
TOL = {"float16": (4e-3, 4e-3), "float32": (1e-5, 1e-5), "float64": (1e-9, 1e-9)}


# ---------------------------------------------------------------- the oracle

def oracle(x: np.ndarray, scales: tuple[float, ...], mode: str) -> np.ndarray:
    """Upsample's formula axis by axis (see the module docstring)."""
    y = x if mode == "nearest" else x.astype(np.complex128 if x.dtype.kind == "c"
                                             else np.float64)
    for axis, s in enumerate(scales):
        n, m = x.shape[axis], math.floor(x.shape[axis] * s)
        if mode == "nearest":
            at = np.floor(np.arange(m, dtype=np.float32) / np.float32(s)).astype(np.int64)
            y = np.take(y, np.minimum(at, n - 1), axis=axis)
            continue
        pos = np.arange(m) / s
        low = np.floor(pos).astype(np.int64)
        t = (pos - low).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
        y = (np.take(y, np.minimum(low, n - 1), axis=axis) * (1 - t)
             + np.take(y, np.minimum(low + 1, n - 1), axis=axis) * t)
    if mode == "nearest":
        return y
    if x.dtype.kind in "iu":
        return numerics.round_saturate(y, x.dtype)
    return y.astype(x.dtype)


def close(config: Config, a: np.ndarray, b: np.ndarray, dtype: np.dtype | None = None) -> bool:
    """Same shape and values: nearest exact; linear within the tolerance of `dtype` (default:
    the configuration's; float32 for onnxruntime's float32 results of float64), integers within
    1 (a float sum near k + 0.5 may round either way)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if config.mode == "nearest":
        return a.tobytes() == b.tobytes()
    if config.dtype.kind in "iu":
        return bool(np.all(np.abs(a.astype(np.float64) - b.astype(np.float64)) <= 1))
    rtol, atol = TOL[(dtype or config.dtype).name]
    return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol))


# ---------------------------------------------------------------- running

def model(config: Config, dtype: np.dtype, initializers: bool = False) -> onnx.ModelProto:
    """The one-node model: scales the attribute (opset 7), else an input or (shape inference)
    an initializer."""
    attrs: dict[str, Any] = {"mode": config.mode}
    if config.opset < 9:
        attrs["scales"] = list(config.scales)
        return node_model("Upsample", [("X", dtype)], attrs, config.opset,
                          shape=config.shape if initializers else None)
    init = {"scales": np.array(config.scales, np.float32)} if initializers else None
    return node_model("Upsample", [("X", dtype), ("scales", np.dtype(np.float32))], attrs,
                      config.opset, shape=config.shape if initializers else None,
                      initializers=init)


def _feeds(config: Config, x: np.ndarray) -> dict[str, np.ndarray]:
    return {"X": x} if config.opset < 9 else {"X": x, "scales": np.array(config.scales,
                                                                          np.float32)}


def run_onnxruntime(config: Config, x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "bc":
        raise TypeError(f"onnxruntime has no Upsample kernel for {x.dtype}")
    carrier = x.dtype if x.dtype.name in ORT_NATIVE else np.dtype(
        np.float32 if x.dtype.kind == "f" else np.int32)
    y = onnxruntime(model(config, carrier), _feeds(config, x.astype(carrier)))[0]
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        return np.clip(y.astype(np.int64), info.min, info.max).astype(x.dtype)
    return y.astype(x.dtype)


def run_reference(config: Config, x: np.ndarray) -> np.ndarray:
    return reference(model(config, x.dtype), _feeds(config, x))[0]


def run_ours(config: Config, x: np.ndarray, backend: str = "numpy") -> np.ndarray:
    with execution.backend(backend):
        return drawn.run(config, x)


def _attempt(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 (a rejection is an outcome)
        return exc


# ---------------------------------------------------------------- listed cases

# where onnxruntime gives another result than onnx-cupy (the oracle's side, 'exact')
KNOWN = (
    Listed("integer_linear", lambda c: c.mode == "linear" and c.dtype.kind in "iu", "exact",
           "integer linear: onnxruntime truncates the float result; onnx-cupy rounds half to "
           "even and saturates, as its Resize (and onnx.reference's Resize) do"),
    Listed("length_float32",
           lambda c: any(math.floor(np.float32(n) * np.float32(s)) != math.floor(n * s)
                         for n, s in zip(c.shape, c.scales)), "exact",
           "output length: onnxruntime floors n * scale in float32 (5 x 1.4f: 7); shape "
           "inference, onnx-cupy (and its Resize) in float64 (6)"),
    Listed("same_shape_copied",
           lambda c: c.out_shape == c.shape and any(s != 1 for s in c.scales), "exact",
           "an output shape equal to the input's while a scale differs from 1 (2 x 1.25): "
           "onnxruntime copies X; the formula (and onnx-cupy, as its Resize) resamples"),
)


def known(config: Config) -> list[Listed]:
    return [k for k in KNOWN if k.applies(config)]


# ---------------------------------------------------------------- one configuration

def _ort_tolerance(c: Config) -> np.dtype | None:
    """The dtype whose tolerance onnxruntime's result is held to: its carrier's."""
    return ORT_FLOAT if c.dtype.name == "float64" else None


def _shape(result: Any) -> Any:
    return result.shape if isinstance(result, np.ndarray) else repr(result)[:160]


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index`; checks: `oracle`, `emulated`, `shape = runtimes`, `values =
    runtimes`, `shape = inference`, `only_ort`, `only_ref`; events: `ort ran`, `reference ran`,
    `rejected` (a scale below 1), `listed:<name>`, `oracle side` (one runtime runs it, a listed
    case puts it off)."""
    c = configuration(index)
    record = Record(c)
    x = sample(drawn.generator(index, 1), c)
    x0 = x.copy()
    ours = _attempt(run_ours, c, x)
    if min(c.scales) < 1:
        record.check("rejected", isinstance(ours, ValueError), _shape(ours))
        return record
    expected = oracle(x, c.scales, c.mode)
    record.check("oracle", isinstance(ours, np.ndarray) and close(c, ours, expected)
                 and np.array_equal(x, x0), f"ours {_shape(ours)}, oracle {expected.shape}")
    if index % EMULATED_EVERY == 0:
        emulated = _attempt(run_ours, c, x, "emulated")
        record.check("emulated", isinstance(emulated, np.ndarray) and isinstance(ours, np.ndarray)
                     and close(c, emulated, ours), f"emulated {_shape(emulated)}")
    ort, ref = _attempt(run_onnxruntime, c, x), _attempt(run_reference, c, x)
    kinds = known(c)
    for k in kinds:
        record.count(f"listed:{k.name}")
    ran = [(name, r) for name, r in (("ort", ort), ("ref", ref)) if isinstance(r, np.ndarray)]
    for name, _ in ran:
        record.count(f"{'ort' if name == 'ort' else 'reference'} ran")
    if len(ran) == 2:
        record.check("shape = runtimes", _shape(ours) == ort.shape == ref.shape,
                     f"onnxruntime {ort.shape}, onnx.reference {ref.shape}, ours {_shape(ours)}")
        record.check("values = runtimes", isinstance(ours, np.ndarray)
                     and close(c, ours, ort, _ort_tolerance(c)) and close(c, ours, ref),
                     "ours differs from the runtimes")
    inferred = _attempt(inferred_shape, model(c, c.dtype, True))
    if isinstance(inferred, tuple):   # static whatever runs: ours follows it everywhere
        record.check("shape = inference", _shape(ours) == inferred,
                     f"shape inference {inferred}, ours {_shape(ours)}")
    if len(ran) == 1:
        (name, result), = ran
        if name == "ort" and kinds:
            record.count("oracle side")
        else:
            tolerance = _ort_tolerance(c) if name == "ort" else None
            record.check(f"only_{name}", isinstance(ours, np.ndarray)
                         and close(c, ours, result, tolerance),
                         f"ours {_shape(ours)}, {name} {result.shape}")
    return record
