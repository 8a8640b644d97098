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

import numpy as np
import onnx
from cases import hardmax as drawn

from helpers.differential import Record
from helpers.util import inferred_shape, node_model, onnxruntime, reference
from onnx_cupy import hardmax
from onnx_cupy.core import execution

# the configurations, drawn in the package (the kernel checker runs them too)
CONFIGS, configuration, input_values = drawn.CONFIGS, drawn.configuration, drawn.input_values

EMULATED_EVERY = 4


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


def _try(fn, *args):
    try:
        return fn(*args)[0]
    except Exception:  # noqa: BLE001 (a runtime without a kernel for this dtype/opset)
        return None


@functools.cache
def evaluate(index: int) -> Record:
    """Configuration `index` on onnx-cupy and the judges; checks: `oracle`, `emulated`,
    `shape = runtimes`, `shape = inference`, `values = runtimes` (where the runtimes agree),
    `values = onnxruntime below 13` (where they differ there); events: `ort ran`,
    `reference ran`, `runtimes agree` and the `differ: ...` classes."""
    c = configuration(index)
    record = Record(c)
    x = input_values(c)
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
