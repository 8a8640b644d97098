"""Hardmax against the runtimes, on 1,200 random configurations (opsets 1-13 and beyond, ranks 1-5,
every axis incl. negative ones, every float dtype): an oracle written out here (first maximum of each
row, NaN the maximum, the first NaN winning), onnxruntime, onnx.reference and ONNX shape inference.

Per configuration: onnx-cupy equals the oracle (numpy always, emulated on every fourth); its shape
equals onnxruntime's and onnx.reference's where those two agree and shape inference's where it infers
a static shape they agree with; its values equal the runtimes' where they agree. Where they disagree
the case is classified (docs/semantics.md) and counted. The counts are asserted."""
from __future__ import annotations

import collections

import numpy as np
import onnx
from helpers.util import BF16, inferred_shape, node_model, onnxruntime, reference

from onnx_cupy import hardmax
from onnx_cupy.core import execution

CONFIGS = 1200
OPSETS = (1, 7, 11, 12, 13, 18, 21)


def oracle(x: np.ndarray, axis: int, opset: int) -> np.ndarray:
    """The one-hot of the first maximum (NaN above everything, first NaN wins) per row: rows along
    `axis` (opset >= 13) or of the 2-D [prod(shape[:axis]), prod(shape[axis:])] view (below 13)."""
    rank = x.ndim
    axis %= rank
    if opset >= 13:
        v = np.moveaxis(x.astype(np.float64), axis, -1)
    else:
        v = x.astype(np.float64).reshape(int(np.prod(x.shape[:axis], dtype=np.int64)), -1)
    rows = v.reshape(-1, v.shape[-1])
    y = np.zeros(rows.shape)
    for r, row in enumerate(rows):
        if row.size == 0:
            continue
        best = 0
        for j in range(1, row.size):
            if np.isnan(row[best]):
                break
            if np.isnan(row[j]) or row[j] > row[best]:
                best = j
        y[r, best] = 1
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


def test_hardmax_against_runtimes():
    rng = np.random.default_rng(20261122)
    counts: collections.Counter[str] = collections.Counter()
    dtypes = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
    for i in range(CONFIGS):
        opset = int(rng.choice(OPSETS))
        dtype = dtypes[int(rng.integers(len(dtypes)))]
        if dtype == BF16 and opset < 13:
            dtype = np.dtype(np.float32)
        rank = int(rng.integers(1, 6))
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 7, 33], size=rank))
        axis = None if rng.random() < 0.15 else int(rng.integers(-rank, rank))
        if axis is None and opset < 13 and rank < 2:
            axis = 0
        nan = rng.random() < 0.2
        x = sample(rng, shape, dtype, nan)
        m = model(shape, dtype, axis, opset)
        expected = oracle(x, -1 if axis is None and opset >= 13 else (1 if axis is None else axis),
                          opset)
        kw = {} if axis is None else {"axis": axis}
        got = hardmax(x, opset=opset, **kw)
        np.testing.assert_array_equal(got, expected, err_msg=f"{shape} axis={axis} opset={opset}")
        counts["oracle"] += 1
        if i % 4 == 0:
            with execution.backend("emulated"):
                np.testing.assert_array_equal(hardmax(x, opset=opset, **kw), expected)
            counts["emulated"] += 1

        ort = _try(onnxruntime, m, {"X": x})
        ref = _try(reference, m, {"X": x})
        counts["ort ran"] += ort is not None
        counts["reference ran"] += ref is not None
        if ort is not None and ref is not None and ort.shape == ref.shape:
            assert got.shape == ort.shape
            counts["shape = runtimes"] += 1
            inferred = inferred_shape(m)
            if inferred is not None and inferred == ort.shape:
                assert got.shape == inferred
                counts["shape = inference"] += 1
            if np.array_equal(ort, ref):
                counts["runtimes agree"] += 1
                counts["values = runtimes"] += np.array_equal(got, ort)
            elif nan and np.isnan(x.astype(np.float64)).any():
                counts["differ: NaN (ORT skips it; reference and onnx-cupy: first NaN wins)"] += 1
            elif opset < 13:
                counts["differ: coerced 2-D rows below 13 (reference applies v13)"] += 1
                np.testing.assert_array_equal(got, ort)  # ORT implements the version's text
            else:
                counts["differ: unexplained"] += 1
    print(dict(counts))
    assert counts["oracle"] == CONFIGS and counts["emulated"] == CONFIGS // 4
    assert counts["differ: unexplained"] == 0
    assert counts["shape = runtimes"] >= 300 and counts["shape = inference"] >= 300
    assert counts["runtimes agree"] >= 250
    assert counts["values = runtimes"] >= 0.999 * counts["runtimes agree"]
    assert counts["differ: coerced 2-D rows below 13 (reference applies v13)"] >= 50
