"""Differential MaxPool: seeded random configurations (every opset and dtype, ranks 1-3, pads up
to and beyond the kernel, auto_pad, dilations, ceil_mode, storage_order, Indices) run on
onnx-cupy and judged by the loop oracle (helpers/maxpool_oracle.py), onnxruntime and
onnx.reference, each runtime in the input's dtype (bfloat16 inputs as float32: the same values).

`evaluate(index)` runs configuration `index` once (cached) and returns its Record: onnx-cupy
(numpy backend; the emulated kernels on every EMULATED_EVERY-th) equals the oracle bit for bit,
values and indices, or rejects a negative length as the oracle does; it equals each runtime that
accepts the configuration (onnxruntime rejects pads >= kernel; onnx.reference fails on some
windows with no element of X), except where a documented case in CASES puts that runtime off.
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np
from cases import maxpool as drawn
from cases.maxpool import Config
from onnx import helper

import onnx_cupy
from helpers.differential import Record
from helpers.maxpool_oracle import max_pool as oracle
from helpers.pool_oracle import geometry, output_shape
from helpers.util import BF16, onnxruntime, reference, tensor_type

# the configurations, drawn in the package (the kernel checker runs them too)
CONFIGS, configs, input_values, name, version_of = (drawn.CONFIGS, drawn.configs,
                                                    drawn.input_values, drawn.name,
                                                    drawn.version_of)

EMULATED_EVERY = 5

# Where a runtime gives other values than onnx-cupy, and why (docs/semantics.md, MaxPool table):
# the configurations each case covers, and the runtimes it puts off.
CASES = {
    "empty window": (
        ("onnxruntime", "onnx.reference"),
        ("a window with no element of X: onnxruntime gives the dtype's lowest value and a stray "
         "index, onnx.reference 0 and -1; onnx-cupy -inf (the integer minimum) and -1")),
    "kernel beyond input": (
        ("onnxruntime", "onnx.reference"),
        ("an axis whose kernel extent passes the padded input: onnxruntime truncates the negative "
         "length toward 0 (length 1), onnx-cupy floors it (empty)")),
    "ceil_mode with auto_pad": (
        ("onnxruntime",),
        ("onnxruntime rounds VALID/SAME lengths up with ceil_mode; onnx-cupy keeps the auto_pad "
         "lengths (as AveragePool)")),
    "reference SAME_LOWER": (
        ("onnx.reference",),
        ("onnx.reference places SAME_LOWER pads otherwise than onnxruntime and the spec (the odd "
         "pad at the beginning)")),
    "pad >= kernel with ceil_mode": (
        ("onnx.reference",),
        ("onnx.reference's ceil_mode length with a pad >= the kernel (onnxruntime rejects such "
         "pads)")),
    "negative SAME pad total": (
        ("onnxruntime", "onnx.reference"),
        ("a SAME pad total < 0 (stride above the kernel): onnxruntime crops, shifting the windows, "
         "onnx.reference shifts them otherwise; onnx-cupy takes the total as 0 (pooling table)")),
    "auto_pad with dilation": (
        ("onnxruntime", "onnx.reference"),
        ("onnxruntime derives SAME pads from the undilated kernel, onnx.reference ignores the "
         "dilation under auto_pad; onnx-cupy uses the dilated extent (pooling table)")),
    "reference MaxPool-1 pads": (
        ("onnx.reference",),
        ("onnx.reference's MaxPool-1 ignores `pads` (onnxruntime and the spec apply them)")),
    "reference indices": (
        ("onnx.reference",),
        ("onnx.reference leaves the (n, c) plane out of some indices (the spec and onnxruntime "
         "include it)")),
    "runtimes disagree": (
        ("onnx.reference",),
        ("onnx.reference gives another shape or index than onnxruntime, which agrees with "
         "onnx-cupy (and the spec)")),
}


def model(c: Config) -> Any:
    outputs = ["Y", "I"] if c.indices else ["Y"]
    runtime_dtype = np.dtype(np.float32) if c.dtype == BF16 else c.dtype
    node = helper.make_node("MaxPool", ["X"], outputs, **c.attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("X", tensor_type(runtime_dtype), None)],
        [helper.make_tensor_value_info("Y", tensor_type(runtime_dtype), None)]
        + ([helper.make_tensor_value_info("I", tensor_type(np.int64), None)] if c.indices
           else []))
    imports = [helper.make_opsetid("", c.opset)]
    try:
        return helper.make_model_gen_version(graph, opset_imports=imports)
    except ValueError:
        return helper.make_model(graph, opset_imports=imports, ir_version=3)


def _same(got: list[np.ndarray], expected: list[np.ndarray]) -> bool:
    return all(np.asarray(g).shape == np.asarray(e).shape
               and np.array_equal(np.asarray(g).astype(np.float64),
                                  np.asarray(e).astype(np.float64), equal_nan=True)
               for g, e in zip(got, expected))


@functools.cache
def evaluate(index: int) -> Record:
    c = configs()[index]
    record = Record(name(index))
    x = input_values(c, index)
    backend = "emulated" if index % EMULATED_EVERY == 0 else "numpy"
    record.count(backend)
    record.count(f"dtype {c.dtype}")
    record.count(f"rank {len(c.shape) - 2}")
    for attr in ("dilations", "ceil_mode", "storage_order", "auto_pad", "pads"):
        if attr in c.attrs:
            record.count(attr)
    if c.indices:
        record.count("indices")
    if any(v < 0 for v in output_shape(c.shape, c.attrs)):
        record.count("negative length")
        with onnx_cupy.backend(backend):
            try:
                onnx_cupy.max_pool(x.copy(), opset=c.opset, return_indices=c.indices, **c.attrs)
                record.check("rejects negative length", False)
            except ValueError:
                record.check("rejects negative length", True)
        return record
    with onnx_cupy.backend(backend):
        got = onnx_cupy.max_pool(x, opset=c.opset, return_indices=c.indices, **c.attrs)
    got = list(got) if c.indices else [got]
    y, ids = oracle(x, c.attrs)
    expected = [y, ids] if c.indices else [y]
    record.check("oracle", _same(got, expected), f"{got} != {expected}")
    cases = set()
    if (ids < 0).any():
        cases.add("empty window")
    if any(g[5] + g[0] + g[6] < (g[1] - 1) * g[3] + 1 for g in geometry(c.shape, c.attrs)):
        cases.add("kernel beyond input")
    auto_pad = c.attrs.get("auto_pad", "NOTSET")
    if auto_pad != "NOTSET" and c.attrs.get("ceil_mode"):
        cases.add("ceil_mode with auto_pad")
    if auto_pad == "SAME_LOWER":
        cases.add("reference SAME_LOWER")
    if auto_pad.startswith("SAME") and any(
            (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n < 0
            for n, k, s, d, *_ in geometry(c.shape, c.attrs)):
        cases.add("negative SAME pad total")
    if auto_pad != "NOTSET" and any(d > 1 for d in c.attrs.get("dilations", [])):
        cases.add("auto_pad with dilation")
    if version_of(c.opset) < 8 and auto_pad == "NOTSET" and any(c.attrs.get("pads") or []):
        cases.add("reference MaxPool-1 pads")
    pads = c.attrs.get("pads") or []
    if c.attrs.get("ceil_mode") and auto_pad == "NOTSET" and any(
            p >= k for p, k in zip(pads, c.attrs["kernel_shape"] * 2)):
        cases.add("pad >= kernel with ceil_mode")
    feeds = {"X": x.astype(np.float32) if c.dtype == BF16 else x}
    m = model(c)
    mine = [got[0].astype(np.float32) if c.dtype == BF16 else got[0], *got[1:]]
    agreed: set[str] = set()
    for runtime, run in (("onnxruntime", onnxruntime), ("onnx.reference", reference)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = run(m, feeds)
        except Exception:  # noqa: BLE001 (a runtime that rejects the configuration)
            record.count(f"{runtime} rejects")
            continue
        here = set(cases)
        if runtime == "onnx.reference":
            if "onnxruntime" in agreed:
                here.add("runtimes disagree")
            if c.indices and _same(mine[:1], theirs[:1]) and np.array_equal(
                    np.asarray(theirs[1]) % math.prod(c.shape[2:]), mine[1] % math.prod(
                        c.shape[2:])):
                here.add("reference indices")
        off = sorted(k for k in here if runtime in CASES[k][0])
        if record.check(runtime, _same(mine, theirs), f"{mine} != {theirs}", tolerate=bool(off)):
            agreed.add(runtime)
        elif off:
            for k in off:
                record.count(f"{runtime} off: {k}")
    return record
