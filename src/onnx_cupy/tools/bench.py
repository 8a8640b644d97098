"""`onnx-cupy bench`: throughput of one backend on canonical cases against the peers installed
in the same run (onnxruntime CPU with 1 thread, its CUDA provider, PyTorch, onnx.reference), with
each row's correctness against onnxruntime, the NumPy fallback's peak additional memory and, on a
GPU, the bandwidth achieved against a device-to-device copy.

Peers run as their users run them: onnxruntime gets the model an exporter writes (input and output
shapes declared, Resize scales as initializers) with every graph optimization on, so that it picks
its shape-specialized kernels (NCHWc pooling). Ours and the peers are timed in turns (ours, peer,
..., ours, peer, ...) after warm-ups, and each one's median is taken, so that a change in machine
load affects all alike. Throughput counts the elements of X and Y per second. A peer's ratio is
our throughput over the peer's; a peer counts for a case only when its output matches ours within
the dtype's tolerance in the same run ("n/a" otherwise, with the reason in the JSON report).
"""
from __future__ import annotations

import datetime
import functools
import importlib
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import onnx_cupy as oc

from .. import __version__
from ..core import execution
from . import host
from .progress import Progress

OPSET = 22                 # model opset: the pools' version 22, Hardmax-13, Resize-19, GridSample-22
UPSAMPLE_OPSET = 9         # Upsample's (deprecated from opset 10: onnxruntime rejects it there)
DTYPES = ("float32", "float16")
TOLERANCE = {"float32": 1e-4, "float16": 1e-2}   # agreement: max |a - b| <= tol * max(1, max |b|)
MEMORY_TARGET = 2.0        # NumPy fallback: peak additional bytes / bytes of X and Y
# ... judged where X and Y hold at least this many bytes: tracemalloc counts a call's Python
# objects too (keys, views: a few KiB), which smaller data cannot hold twice over
MEMORY_JUDGED_BYTES = 1 << 16
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "AveragePool": oc.average_pool, "LpPool": oc.lp_pool, "MaxPool": oc.max_pool,
    "GlobalAveragePool": oc.global_average_pool, "Hardmax": oc.hardmax, "Resize": oc.resize,
    "Upsample": oc.upsample, "MaxUnpool": oc.max_unpool, "GridSample": oc.grid_sample,
    "RoiAlign": oc.roi_align}
# (warm-up calls, timed calls) per clock and mode: the fewest. On the CPU (not --quick) a row
# whose calls are short makes more of both, until our calls fill WARM_SECONDS and TIMED_SECONDS
# (at most MOST_CALLS): a short call's median is otherwise taken over a few milliseconds, which a
# change in the machine's state (the rows before, the other core's work) can cover whole
REPEATS = {("cpu", False): (3, 25), ("cpu", True): (1, 3), ("gpu", False): (10, 100),
           ("gpu", True): (2, 10)}
WARM_SECONDS, TIMED_SECONDS, MOST_CALLS = 0.02, 0.1, 2000


SIZES = ("tiny", "batch 1", "canonical")   # the shapes a case runs at (--quick: its quick one)
TINY_TARGET_US = 25.0      # NumPy fallback: most microseconds of a tiny call (float32)


@dataclass(frozen=True)
class Case:
    """One benchmark: an ONNX node (attributes, inputs after X) and its input shapes: the
    canonical one (batch 8 for the pools and Resize), batch 1 and a tiny one (float32 only)."""

    name: str
    op: str
    attrs: dict[str, Any]
    shape: tuple[int, ...]       # canonical input shape
    reduced: tuple[int, ...]     # input shape for slow peers (onnx.reference)
    quick: tuple[int, ...]       # input shape under --quick, for every peer
    onnxruntime_target: float    # NumPy fallback's minimum ratio to onnxruntime CPU (float32)
    torch: Callable[[Any, Any], Any] | None = None   # (torch module, X tensor) -> equivalent
    inputs: dict[str, np.ndarray] = field(default_factory=dict)  # by ONNX input name
    reference_target: float | None = None  # minimum throughput ratio to onnx.reference (float32)
    batch1: tuple[int, ...] | None = None  # batch-1 input shape
    tiny: tuple[int, ...] | None = None    # tiny input shape
    batch1_target: float | None = None  # minimum ratio to onnxruntime at batch 1
    tiny_target: float | None = None    # ... at the tiny size
    torch_target: float | None = None   # minimum ratio to PyTorch CPU at batch 1 and canonical
    opset: int = OPSET           # the model's opset and the call's
    # inputs that follow X's shape and dtype (MaxUnpool's indices, a GridSample grid), by ONNX
    # input name: made once per shape and dtype (`inputs_for`)
    shaped_inputs: Callable[[tuple[int, ...], str], dict[str, np.ndarray]] | None = None


    def inputs_for(self, shape: tuple[int, ...], dtype: str) -> dict[str, np.ndarray]:
        """Every input after X for an X of `shape` and `dtype`."""
        if self.shaped_inputs is None:
            return self.inputs
        return {**self.inputs, **_shaped(self.shaped_inputs, tuple(shape), dtype)}

    def shapes(self, quick: bool) -> dict[str, tuple[int, ...]]:
        """Size -> input shape (--quick: its quick shape, as the canonical size)."""
        if quick:
            return {"canonical": self.quick}
        found = {"tiny": self.tiny, "batch 1": self.batch1, "canonical": self.shape}
        return {k: v for k, v in found.items() if v is not None}

    def targets(self, dtype: str, size: str = "canonical") -> dict[str, float]:
        """The required ratios per peer at a size; targets are set for float32, the canonical
        dtype: onnxruntime's at each size (where the case sets one), PyTorch's at batch 1 and
        canonical, onnx.reference's at canonical (where it runs)."""
        if dtype != "float32":
            return {}
        canonical = size == "canonical"
        ort = {"canonical": self.onnxruntime_target, "batch 1": self.batch1_target,
               "tiny": self.tiny_target}[size]
        found = {"onnxruntime": ort,
                 "torch": self.torch_target if size != "tiny" else None,
                 "onnx.reference": self.reference_target if canonical else None}
        return {k: v for k, v in found.items() if v is not None}


def _scales(s: float) -> dict[str, np.ndarray]:
    return {"scales": np.array([1, 1, s, s], dtype=np.float32)}


@functools.lru_cache(maxsize=16)
def _shaped(make: Callable[[tuple[int, ...], str], dict[str, np.ndarray]],
            shape: tuple[int, ...], dtype: str) -> dict[str, np.ndarray]:
    return make(shape, dtype)


def _pooled_indices(shape: tuple[int, ...], dtype: str) -> dict[str, np.ndarray]:
    """MaxUnpool's I for a pooled X of `shape` (N, C, H, W): the Indices a 2x2 stride-2 MaxPool
    of a (N, C, 2H, 2W) input writes, each window's maximum at a position drawn once."""
    n, c, h, w = shape
    rng = np.random.default_rng(0)
    row = 2 * np.arange(h).reshape(h, 1) + rng.integers(0, 2, size=shape)
    column = 2 * np.arange(w) + rng.integers(0, 2, size=shape)
    planes = np.arange(n * c).reshape(n, c, 1, 1)
    return {"I": (planes * (2 * h) + row) * (2 * w) + column}


def _torch_unpool(torch: Any, x: Any) -> Any:
    """PyTorch's max_unpool2d with the indices of `_pooled_indices`, made per plane."""
    h, w = x.shape[2:]
    indices = _shaped(_pooled_indices, tuple(x.shape), "float32")["I"] % (4 * h * w)
    return torch.nn.functional.max_unpool2d(x, torch.from_numpy(indices).to(x.device), 2, 2)


def _grid(shape: tuple[int, ...], dtype: str) -> dict[str, np.ndarray]:
    """GridSample's grid for X of `shape`: one position per pixel of X's image, uniform in
    [-1.1, 1.1] (some outside), of X's dtype, as a flow field or an affine warp gives."""
    rng = np.random.default_rng(1)
    return {"grid": rng.uniform(-1.1, 1.1, (shape[0], *shape[2:], len(shape) - 2)).astype(dtype)}


_torch_grids: dict[tuple[Any, ...], Any] = {}


def _torch_grid_sample(mode: str) -> Callable[[Any, Any], Any]:
    """PyTorch's grid_sample on X with the benchmark's grid, moved to X's device once."""
    def call(torch: Any, x: Any) -> Any:
        key = (tuple(x.shape), str(x.dtype), str(x.device))
        if key not in _torch_grids:
            grid = _grid(tuple(x.shape), str(x.dtype).removeprefix("torch."))["grid"]
            _torch_grids[key] = torch.from_numpy(grid).to(x.device)
        return torch.nn.functional.grid_sample(x, _torch_grids[key], mode=mode,
                                               padding_mode="zeros", align_corners=False)
    return call


def _torch_hardmax(axis: int) -> Callable[[Any, Any], Any]:
    return lambda torch, x: torch.zeros_like(x).scatter_(axis, x.argmax(axis, keepdim=True), 1)


def _boxes(shape: tuple[int, ...], dtype: str) -> dict[str, np.ndarray]:
    """RoiAlign's rois and batch_indices for a feature map of `shape` at stride 16 (spatial_scale
    1/16): 1000 proposals of 16 to 400 pixels a side in its image, as a detector's head pools
    (one per 8 pixels of a map of fewer than 1000: the quick and tiny shapes)."""
    rng = np.random.default_rng(2)
    n, _, h, w = shape
    count = 1000 if h * w >= 1000 else max(1, h * w // 8)
    corner = rng.uniform(0, 16, (count, 2)) * (w, h)
    size = rng.uniform(16, 400, (count, 2))
    return {"rois": np.concatenate([corner, corner + size], axis=1).astype(dtype),
            "batch_indices": rng.integers(0, n, count)}


def _torch_roi_align(torch: Any, x: Any) -> Any:
    """torchvision's roi_align with the benchmark's boxes (torchvision's (K, 5) form)."""
    ops = _module("torchvision.ops")
    if ops is None:
        raise NotApplicable("torchvision is not installed")

    b = _shaped(_boxes, tuple(x.shape), str(x.dtype).removeprefix("torch."))
    rois = np.concatenate([b["batch_indices"][:, None].astype(b["rois"].dtype), b["rois"]], 1)
    return ops.roi_align(x, torch.from_numpy(rois).to(x.device), 7, 1 / 16, 2, aligned=False)


_P3: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
_P2: dict[str, Any] = {"kernel_shape": [2, 2], "strides": [2, 2]}
_TINY = (1, 3, 8, 8)
_POOL: dict[str, Any] = {"shape": (8, 64, 112, 112), "reduced": (1, 16, 112, 112),
                         "quick": (1, 4, 16, 16), "reference_target": 100.0,
                         "batch1": (1, 64, 56, 56), "tiny": _TINY}
_UP: dict[str, Any] = {"shape": (8, 64, 56, 56), "reduced": (1, 64, 56, 56), "quick": (1, 4, 8, 8),
                       "batch1": (1, 3, 224, 224), "tiny": _TINY}
_SMALL: dict[str, Any] = {"batch1_target": 0.5, "tiny_target": 0.5}   # 0.5x onnxruntime
# GridSample: a [N,224,224,2] grid over a 224x224 image, at batch 8 and batch 1
_GRID: dict[str, Any] = {"shape": (8, 3, 224, 224), "reduced": (1, 3, 16, 16),
                         "quick": (1, 3, 16, 16), "batch1": (1, 3, 224, 224), "tiny": _TINY,
                         "onnxruntime_target": 0.5, "reference_target": 100.0,
                         "shaped_inputs": _grid}
_AVERAGE: dict[str, Any] = {"onnxruntime_target": 0.5, **_SMALL}
# MaxPool: 0.3x onnxruntime and 1x PyTorch at batch 1; 0.5x onnxruntime at batch 8 (set before)
_MAX: dict[str, Any] = {"onnxruntime_target": 0.5, "batch1_target": 0.3, "torch_target": 1.0}

# PyTorch equivalents: count_include_pad=0 is ONNX's default; lp_pool2d has no padding, so the
# zeros are padded in (p=2 is even, so x^p = |x|^p); bilinear with align_corners=False is
# half_pixel; for 2x, half_pixel + round_prefer_floor picks the same pixels as nearest-exact;
# Upsample's nearest (x = y / s, rounded down) is PyTorch's nearest, its linear (x = y / s) no
# PyTorch mode; max_unpool2d takes MaxUnpool's indices made per plane.
CASES: tuple[Case, ...] = (
    Case("AveragePool 3x3 s2 p1", "AveragePool", _P3, **_POOL, **_AVERAGE,
         torch=lambda t, x: t.nn.functional.avg_pool2d(x, 3, 2, 1, count_include_pad=False)),
    Case("AveragePool 2x2 s2", "AveragePool", _P2, **_POOL, **_AVERAGE,
         torch=lambda t, x: t.nn.functional.avg_pool2d(x, 2, 2)),
    Case("LpPool p=2 3x3 s2 p1", "LpPool", {**_P3, "p": 2}, **_POOL, onnxruntime_target=1.0,
         **_SMALL,
         torch=lambda t, x: t.nn.functional.lp_pool2d(t.nn.functional.pad(x, (1, 1, 1, 1)),
                                                      2, 3, 2)),
    Case("LpPool p=2 2x2 s2", "LpPool", {**_P2, "p": 2}, **_POOL, onnxruntime_target=1.0,
         **_SMALL, torch=lambda t, x: t.nn.functional.lp_pool2d(x, 2, 2, 2)),
    Case("MaxPool 3x3 s2 p1", "MaxPool", _P3, **_POOL, **_MAX,
         torch=lambda t, x: t.nn.functional.max_pool2d(x, 3, 2, 1)),
    Case("MaxPool 2x2 s2", "MaxPool", _P2, **_POOL, **_MAX,
         torch=lambda t, x: t.nn.functional.max_pool2d(x, 2, 2)),
    # onnx.reference's global pooling is one NumPy mean (no loop per output): no target against it
    Case("GlobalAveragePool", "GlobalAveragePool", {}, **{**_POOL, "reference_target": None},
         onnxruntime_target=0.5,
         torch=lambda t, x: t.nn.functional.adaptive_avg_pool2d(x, 1)),
    Case("Hardmax axis=-1", "Hardmax", {"axis": -1}, (4096, 1000), (512, 1000), (64, 100),
         onnxruntime_target=1.0, torch=_torch_hardmax(-1), batch1=(1, 1000), tiny=(1, 10)),
    Case("Hardmax axis=1 (middle)", "Hardmax", {"axis": 1}, (32, 1000, 128), (4, 1000, 128),
         (4, 100, 8), onnxruntime_target=1.0, torch=_torch_hardmax(1), batch1=(1, 1000, 128),
         tiny=(1, 10, 4)),
    Case("Resize linear 2x half_pixel", "Resize", {"mode": "linear"}, **_UP,
         onnxruntime_target=0.5, **_SMALL, inputs=_scales(2.0),
         torch=lambda t, x: t.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear",
                                                        align_corners=False, antialias=False)),
    Case("Resize nearest 2x", "Resize", {"mode": "nearest"}, **_UP, onnxruntime_target=0.5,
         inputs=_scales(2.0),
         torch=lambda t, x: t.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest-exact")),
    Case("Resize cubic antialias 0.5x", "Resize", {"mode": "cubic", "antialias": 1},
         (8, 3, 512, 512), (1, 3, 512, 512), (1, 3, 32, 32), onnxruntime_target=0.5,
         inputs=_scales(0.5), batch1=(1, 3, 224, 224), tiny=(1, 3, 16, 16),
         torch=lambda t, x: t.nn.functional.interpolate(x, scale_factor=0.5, mode="bicubic",
                                                        align_corners=False, antialias=True)),
    Case("Upsample nearest 2x", "Upsample", {"mode": "nearest"}, **_UP, onnxruntime_target=0.5,
         inputs=_scales(2.0), opset=UPSAMPLE_OPSET,
         torch=lambda t, x: t.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")),
    Case("Upsample linear 2x", "Upsample", {"mode": "linear"}, **_UP, onnxruntime_target=0.5,
         inputs=_scales(2.0), opset=UPSAMPLE_OPSET),
    Case("MaxUnpool 2x2 s2", "MaxUnpool", _P2, **_UP, onnxruntime_target=0.5,
         shaped_inputs=_pooled_indices, torch=_torch_unpool),
    # PyTorch's bilinear/nearest with zeros and align_corners=False: ONNX's defaults
    Case("GridSample linear", "GridSample", {"mode": "linear"}, **_GRID,
         torch=_torch_grid_sample("bilinear")),
    Case("GridSample nearest", "GridSample", {"mode": "nearest"}, **_GRID,
         torch=_torch_grid_sample("nearest")),
    # a detection head: 1000 boxes pooled from a stride-16 map (RoiAlign-16: onnxruntime's)
    Case("RoiAlign 1000 boxes 7x7 s2", "RoiAlign", {
        "output_height": 7, "output_width": 7, "sampling_ratio": 2, "spatial_scale": 1 / 16,
        "coordinate_transformation_mode": "output_half_pixel"}, (1, 256, 50, 68), (1, 1, 50, 68),
        (1, 4, 12, 16), onnxruntime_target=0.5, shaped_inputs=_boxes, opset=16,
        torch=_torch_roi_align, batch1=(1, 256, 25, 34), tiny=_TINY),
)
OPS = tuple(dict.fromkeys(c.op for c in CASES))


class NotApplicable(Exception):
    """The peer has no equivalent of this case."""


Runner = Callable[[Any], Any]
# (case, dtype, input shape, output shape) -> (run(X) -> Y, details for the report row)
Setup = Callable[[Case, str, tuple[int, ...], tuple[int, ...]], tuple[Runner, dict[str, Any]]]


@dataclass(frozen=True)
class Peer:
    """A library to compare against, and how it is configured (for the report)."""

    name: str
    setup: Setup
    settings: dict[str, Any]
    on_device: bool = False   # takes the backend's (CuPy) arrays; else host NumPy arrays
    slow: bool = False        # timed once on the reduced shape, compared by throughput


# ---------------------------------------------------------------- peers

MODEL = ("one node at opset 22 (Upsample: 9), X and Y declared with their shapes as exporters "
         "write them, the inputs after X (Resize's and Upsample's scales, MaxUnpool's indices, "
         "GridSample's grid) as initializers, NCHW in and out")


def _module(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _model(case: Case, dtype: str, shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """A one-node model as an exporter writes it: graph input X and output Y with their shapes,
    the case's other inputs as initializers (optional inputs not given are left empty, "", up to
    the last given one)."""
    from onnx import defs, helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = case.inputs_for(shape, dtype)
    formal = [i.name for i in defs.get_schema(case.op, case.opset).inputs]   # the first is X
    used = max((formal.index(n) for n in inputs), default=0) + 1
    names = ["X"] + [n if n in inputs else "" for n in formal[1:used]]
    node = helper.make_node(case.op, names, ["Y"], **case.attrs)
    graph = helper.make_graph(
        [node], "bench", [helper.make_tensor_value_info("X", elem, list(shape))],
        [helper.make_tensor_value_info("Y", elem, list(out_shape))],
        initializer=[numpy_helper.from_array(v, n) for n, v in inputs.items()])
    return helper.make_model_gen_version(graph,
                                         opset_imports=[helper.make_opsetid("", case.opset)])


def _ort_options() -> Any:
    """onnxruntime configured for a 1-thread comparison, every graph optimization on."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3   # the optimized-model dump warns that NCHWc nodes are host-specific
    return opts


def _ort_settings(provider: str) -> dict[str, Any]:
    import onnxruntime as ort

    opts = _ort_options()
    found = {k: getattr(opts, k) for k in ("intra_op_num_threads", "inter_op_num_threads",
                                             "execution_mode", "graph_optimization_level")}
    return {"version": ort.__version__, "provider": provider,
            **{k: getattr(v, "name", v) for k, v in found.items()}, "model": MODEL}


def _session(case: Case, dtype: str, shape: tuple[int, ...], out_shape: tuple[int, ...],
             provider: str, **config: str) -> tuple[Any, dict[str, Any]]:
    """The session, and the nodes of the graph it runs after optimization (domain:op)."""
    import onnx
    import onnxruntime as ort

    opts = _ort_options()
    for key, value in config.items():
        opts.add_session_config_entry(key, value)
    with tempfile.TemporaryDirectory() as tmp:
        opts.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        sess = ort.InferenceSession(_model(case, dtype, shape, out_shape).SerializeToString(),
                                    opts, providers=[provider])
        nodes = onnx.load(opts.optimized_model_filepath).graph.node
    return sess, {"graph": [f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in nodes]}


def _onnxruntime(case: Case, dtype: str, shape: tuple[int, ...],
                 out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    sess, details = _session(case, dtype, shape, out_shape, "CPUExecutionProvider")
    return lambda x: sess.run(None, {"X": x})[0], details


def _onnxruntime_cuda(case: Case, dtype: str, shape: tuple[int, ...],
                      out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    # no CPU fallback: an operator without a CUDA kernel makes the session fail (n/a)
    sess, details = _session(case, dtype, shape, out_shape, "CUDAExecutionProvider",
                             **{"session.disable_cpu_ep_fallback": "1"})

    def run(x: Any) -> Any:
        binding = sess.io_binding()
        binding.bind_input("X", "cuda", x.device.id, x.dtype.type, x.shape, x.data.ptr)
        binding.bind_output("Y", "cuda", x.device.id)
        sess.run_with_iobinding(binding)
        return binding.get_outputs()[0]
    return run, details


def _torch(device: str) -> Setup:
    import torch

    wrap = torch.from_dlpack if device == "cuda" else torch.from_numpy

    def setup(case: Case, dtype: str, shape: tuple[int, ...],
              out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
        if case.torch is None:
            raise NotApplicable("no PyTorch equivalent")
        return lambda x: case.torch(torch, wrap(x)), {}
    return setup


def _reference(case: Case, dtype: str, shape: tuple[int, ...],
               out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(_model(case, dtype, shape, out_shape))
    return lambda x: next(iter(ev.run(None, {"X": x}))), {}


def peers(backend: str) -> tuple[list[Peer], list[str]]:
    """The peers installed for `backend`, and a note for each one left out (PyTorch on the CPU
    is set to 1 thread)."""
    found: list[Peer] = []
    notes: list[str] = []
    ort, onnx, torch = _module("onnxruntime"), _module("onnx"), _module("torch")
    if ort is None or onnx is None:
        notes.append("onnxruntime: not installed (needs onnx and onnxruntime)")
    else:
        found.append(Peer("onnxruntime", _onnxruntime, _ort_settings("CPUExecutionProvider")))
        if backend == "cupy":
            if "CUDAExecutionProvider" in ort.get_available_providers():
                found.append(Peer("onnxruntime-cuda", _onnxruntime_cuda,
                                  _ort_settings("CUDAExecutionProvider"), on_device=True))
            else:
                notes.append("onnxruntime-cuda: the CUDA execution provider is not available")
    if torch is None:
        notes.append("torch: not installed")
    elif backend == "cupy":
        if torch.cuda.is_available():
            found.append(Peer("torch-cuda", _torch("cuda"),
                              {"version": torch.__version__, "device": "cuda"}, on_device=True))
        else:
            notes.append("torch-cuda: this PyTorch build sees no GPU")
    else:
        torch.set_num_threads(1)
        found.append(Peer("torch", _torch("cpu"), {"version": torch.__version__, "device": "cpu",
                                                   "num_threads": torch.get_num_threads()}))
    if onnx is None:
        notes.append("onnx.reference: onnx is not installed")
    else:
        found.append(Peer("onnx.reference", _reference,
                          {"version": onnx.__version__, "model": MODEL,
                           "timing": "one call on the reduced shape"}, slow=True))
    return found, notes


# ---------------------------------------------------------------- measurement

class _CpuClock:
    def start(self) -> None:
        self.t0 = time.perf_counter()

    def stop(self) -> float:
        return time.perf_counter() - self.t0


class _GpuClock:
    """CUDA events on CuPy's current stream."""

    def __init__(self) -> None:
        self.cp = execution.cupy_module()
        self.begin, self.end = self.cp.cuda.Event(), self.cp.cuda.Event()

    def start(self) -> None:
        self.begin.record()

    def stop(self) -> float:
        self.end.record()
        self.end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(self.begin, self.end)) * 1e-3


@dataclass
class _Timed:
    """One contender of a row: its function, the inputs it cycles through and its clock; collects
    the times and last output of its calls, or the exception that stopped it."""

    fn: Runner
    xs: Sequence[Any]
    clock: Any
    warmup: int
    repeats: int
    times: list[float] = field(default_factory=list)
    y: Any = None
    error: Exception | None = None

    def call(self, i: int) -> None:
        """Call number i: a warm-up below `warmup`, then timed; none past the last."""
        if self.error is not None or i >= self.warmup + self.repeats:
            return
        try:
            self.clock.start()
            self.y = self.fn(self.xs[i % len(self.xs)])
            seconds = self.clock.stop()
        except Exception as e:  # noqa: BLE001 - a peer lacking this operator, attribute or dtype
            self.error = e
            return
        if i >= self.warmup:
            self.times.append(seconds)

    @property
    def seconds(self) -> float:
        """Median time of the timed calls."""
        return statistics.median(self.times)

    def spread(self) -> dict[str, float]:
        """The interquartile range of the times in ms (a noise gauge), where there are several."""
        if len(self.times) < 2:
            return {}
        q1, _, q3 = statistics.quantiles(self.times, n=4)
        return {"ms_iqr": (q3 - q1) * 1e3}


def _in_turns(timed: Sequence[_Timed]) -> None:
    """Call the contenders in turns (a, b, a, b, ...) until each has had its warm-ups and timed
    calls, so that a change in machine load affects all alike."""
    for i in range(max(t.warmup + t.repeats for t in timed)):
        for t in timed:
            t.call(i)


def _rotating(x: Any) -> Any:
    """Copies of the device array `x` stacked along a new first axis, more than twice the GPU's
    L2 cache in total, so that an input is no longer cached when its turn comes again."""
    cp = execution.cupy_module()
    rt = cp.cuda.runtime
    l2 = rt.deviceGetAttribute(rt.cudaDevAttrL2CacheSize, x.device.id)
    pool = cp.empty((2 * l2 // max(x.nbytes, 1) + 2, *x.shape), dtype=x.dtype)
    pool[...] = x
    return pool


def _host(y: Any) -> np.ndarray:
    """A NumPy copy of an output: NumPy, CuPy, torch.Tensor or onnxruntime OrtValue."""
    if isinstance(y, np.ndarray) or execution.is_cupy_array(y):
        return np.asarray(execution.to_host(y))
    if hasattr(y, "detach"):
        return np.asarray(y.detach().cpu().numpy())
    return np.asarray(y.numpy())


def _max_abs_diff(got: np.ndarray, expected: np.ndarray) -> float:
    if got.shape != expected.shape:
        return math.inf
    return float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64)), initial=0.0))


def _agrees(diff: float, expected: np.ndarray, dtype: str) -> bool:
    return diff <= TOLERANCE[dtype] * max(1.0, float(np.max(np.abs(expected), initial=0.0)))


def _elements_per_second(x: Any, y: Any, seconds: float) -> float:
    return float(x.size + y.size) / seconds


def _peak_ratio(fn: Callable[[Any], Any], x: np.ndarray) -> float:
    """Peak bytes allocated during one call (the output included) over the bytes of X and Y."""
    tracemalloc.start()
    try:
        y = fn(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return float(peak / (x.nbytes + y.nbytes))


@dataclass
class _Run:
    backend: str
    quick: bool
    peers: list[Peer]

    @property
    def gpu(self) -> bool:
        return self.backend == "cupy"

    @property
    def judged(self) -> bool:
        """Targets apply to the NumPy fallback at the canonical shapes."""
        return self.backend == "numpy" and not self.quick

    def timed(self, fn: Runner, xs: Sequence[Any], on_device: bool,
              call_seconds: float = 0.0) -> _Timed:
        """`fn` as a contender: CUDA events for device calls on the GPU, else perf_counter; on
        the CPU, as many calls as REPEATS and WARM_SECONDS/TIMED_SECONDS of ours (a call of
        ours taking `call_seconds`) ask for."""
        kind = "gpu" if self.gpu and on_device else "cpu"
        warmup, repeats = REPEATS[kind, self.quick]
        if kind == "cpu" and not self.quick and call_seconds > 0:
            warmup = max(warmup, min(MOST_CALLS, math.ceil(WARM_SECONDS / call_seconds)))
            repeats = max(repeats, min(MOST_CALLS, math.ceil(TIMED_SECONDS / call_seconds)))
        return _Timed(fn, xs, _GpuClock() if kind == "gpu" else _CpuClock(), warmup, repeats)

    def ours(self, case: Case) -> Callable[[Any], Any]:
        fn = FUNCTIONS[case.op]
        moved: dict[tuple[Any, ...], dict[str, Any]] = {}   # shaped inputs on X's path, once

        def run(x: Any) -> Any:
            inputs: dict[str, Any] = case.inputs
            if case.shaped_inputs is not None:
                key = (x.shape, x.dtype)   # both hashable as they are: no string per call
                found = moved.get(key)
                if found is None:
                    found = moved[key] = {k: self.device(v) for k, v in
                                          case.inputs_for(tuple(x.shape), str(x.dtype)).items()}
                inputs = found
            if self.backend != "emulated":   # the path X's array type picks, as a user calls
                return fn(x, **inputs, **case.attrs, opset=case.opset)
            with execution.backend(self.backend):
                return fn(x, **inputs, **case.attrs, opset=case.opset)
        return run

    def device(self, x: np.ndarray) -> Any:
        return execution.cupy_module().asarray(x) if self.gpu else x


def _na(e: Exception) -> dict[str, Any]:
    """Why a peer is n/a: its own reason, or the first line of the error it raised."""
    if isinstance(e, NotApplicable):
        return {"na": str(e)}
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return {"na": f"{type(e).__name__}: {first}"}


def _result(peer: Peer, t: _Timed, x: np.ndarray, expected: np.ndarray, case: Case, dtype: str,
            size: str, run: _Run, ours_rate: float) -> dict[str, Any]:
    """A peer's entry in a row: its time, ratio and agreement with `expected` (our output for
    `x`), or why it is n/a."""
    if t.error is not None:
        return _na(t.error)
    y = _host(t.y)
    diff = _max_abs_diff(y, expected)
    if not _agrees(diff, expected, dtype):
        return {"na": f"outputs differ from ours (max abs diff {diff:.3g})", "max_abs_diff": diff}
    rate = _elements_per_second(x, y, t.seconds)
    result: dict[str, Any] = {"shape": list(x.shape), "ms": t.seconds * 1e3, **t.spread(),
                              "melem_s": rate / 1e6, "ratio": ours_rate / rate,
                              "max_abs_diff": diff}
    if run.judged and peer.name in case.targets(dtype, size):
        result["target"] = case.targets(dtype, size)[peer.name]
        result["met"] = result["ratio"] >= result["target"]
    return result


def _copy_seconds(nbytes: int, run: _Run) -> float:
    """Median time of a device-to-device copy moving `nbytes` (read + write), from rotating
    sources."""
    cp = execution.cupy_module()
    half = max(nbytes // 2, 1)
    dst = cp.empty(half, dtype=cp.uint8)
    t = run.timed(lambda src: dst.data.copy_from_device_async(src.data, half),
                  _rotating(cp.empty(half, dtype=cp.uint8)), True)
    _in_turns([t])
    return t.seconds


def _contender(peer: Peer, case: Case, dtype: str, x: np.ndarray, xs: Sequence[Any],
               y: np.ndarray, run: _Run, call_seconds: float = 0.0
               ) -> tuple[_Timed | None, dict[str, Any]]:
    """The peer set up for input `x` (`xs` on the device) and output `y`, with the details it
    reports, timed as many times as ours (a call of ours taking `call_seconds`); or None and
    why it is n/a."""
    try:
        fn, details = peer.setup(case, dtype, x.shape, y.shape)
    except Exception as e:  # noqa: BLE001 - the peer lacks this operator, attribute or dtype
        return None, _na(e)
    if peer.slow:
        return _Timed(fn, [x], _CpuClock(), 0, 1), details
    return run.timed(fn, xs if peer.on_device else [x], peer.on_device, call_seconds), details


def measure(case: Case, dtype: str, run: _Run, size: str = "canonical") -> dict[str, Any]:
    """One report row: `case` at `dtype` and `size` on the run's backend and each peer, timed
    in turns (onnx.reference: once, on the reduced shape, for the canonical size only)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case.shapes(run.quick)[size]).astype(dtype)
    ours = run.ours(case)
    xs = _rotating(run.device(x)) if run.gpu else [x]
    y = _host(ours(xs[0]))
    took = 0.0   # on the GPU a call returns before its kernels end: the fewest calls there
    if not run.gpu:
        start = time.perf_counter()
        ours(xs[0])   # a prepared call: how long ours takes, for the number of calls
        took = time.perf_counter() - start
    mine = run.timed(ours, xs, True, took)
    fast = {p.name: _contender(p, case, dtype, x, xs, y, run, took) for p in run.peers
            if not p.slow}
    slow = [p for p in run.peers if p.slow and size == "canonical"]
    _in_turns([mine, *(t for t, _ in fast.values() if t is not None)])
    if mine.error is not None:
        raise mine.error
    seconds = mine.seconds
    rate = _elements_per_second(x, y, seconds)
    results: dict[str, dict[str, Any]] = {}
    for peer in [p for p in run.peers if not p.slow] + slow:
        if peer.slow:
            xp = rng.standard_normal(case.quick if run.quick else case.reduced).astype(dtype)
            expected = _host(ours(run.device(xp)))
            t, details = _contender(peer, case, dtype, xp, [], expected, run)
            if t is not None:
                _in_turns([t])
        else:
            (t, details), xp, expected = fast[peer.name], x, y
        results[peer.name] = details if t is None else {
            **_result(peer, t, xp, expected, case, dtype, size, run, rate), **details}
    row: dict[str, Any] = {
        "case": case.name, "op": case.op, "attrs": case.attrs,
        "inputs": {k: v.tolist() if v.size <= 16 else f"{v.dtype}{list(v.shape)}"
                   for k, v in case.inputs_for(x.shape, dtype).items()}, "dtype": dtype,
        "size": size,
        "shape": list(x.shape), "out_shape": list(y.shape), "ms": seconds * 1e3,
        **mine.spread(), "melem_s": rate / 1e6, "peers": results,
    }
    if run.judged and size == "tiny" and dtype == "float32":
        # a call of a few microseconds runs from caches that the peers' calls in between
        # evict (theirs too take longer in turns): its own time is taken alone, with as many
        # calls
        alone = run.timed(ours, xs, True, took)
        _in_turns([alone])
        row["ms_alone"] = alone.seconds * 1e3
        row["ms_target"] = TINY_TARGET_US / 1e3
        row["ms_met"] = row["ms_alone"] <= row["ms_target"]
    ort = row["peers"].get("onnxruntime", {})
    row["max_abs_diff_vs_onnxruntime"] = ort.get("max_abs_diff")
    row["correct"] = None if "max_abs_diff" not in ort else "na" not in ort
    if run.backend == "numpy":
        row["peak_memory_ratio"] = _peak_ratio(ours, x)
        if run.judged and x.nbytes + y.nbytes >= MEMORY_JUDGED_BYTES:
            row["peak_memory_met"] = row["peak_memory_ratio"] <= MEMORY_TARGET
    if run.gpu:
        moved = x.nbytes + y.nbytes
        row["gb_s"] = moved / seconds / 1e9
        row["copy_gb_s"] = moved / _copy_seconds(moved, run) / 1e9
        row["share_of_copy"] = row["gb_s"] / row["copy_gb_s"]
    return row


# ---------------------------------------------------------------- progress, header, report

def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_header() -> dict[str, Any]:
    cp = execution.cupy_module()
    rt = cp.cuda.runtime
    dev = rt.getDevice()
    props = rt.getDeviceProperties(dev)
    return {"device": props["name"].decode(),
            "compute_capability": f"{props['major']}.{props['minor']}", "cupy": cp.__version__,
            "cuda_runtime": rt.runtimeGetVersion(), "driver": rt.driverGetVersion(),
            "l2_bytes": rt.deviceGetAttribute(rt.cudaDevAttrL2CacheSize, dev)}


def _load() -> float | None:
    """The 1-minute load average, where the OS reports one (other processes' share of the CPU)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def _header(backend: str, quick: bool, load: tuple[float | None, float | None]) -> dict[str, Any]:
    versions: dict[str, str | None] = {"onnx-cupy": __version__,
                                       "python": platform.python_version()}
    for name in ("numpy", "onnx", "onnxruntime", "torch"):   # those this run imported
        module = sys.modules.get(name)
        versions[name] = getattr(module, "__version__", None) if module else None
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "cpu": _cpu_name(), "cpu_count": os.cpu_count(),
            "backend": backend, "quick": quick, "opset": OPSET,
            "upsample_opset": UPSAMPLE_OPSET, "versions": versions,
            "load_average": {"start": load[0], "end": load[1]},
            "gpu": _gpu_header() if backend == "cupy" else None}


def run(backend: str, ops: Sequence[str] | None = None, quick: bool = False,
        repeat: int = 1, host_section: bool = True) -> dict[str, Any]:
    """Measure every case of `ops` (all when empty) at each size and dtype on `backend`
    ('numpy', 'emulated' or 'cupy'), `repeat` times over (all rows, then all rows again, ...);
    returns the report (header, peers, notes, rows, and with `host_section` the host time per
    call on the stand-in: onnx_cupy.tools.host), each row giving the median and range over the
    runs."""
    if repeat < 1:
        raise ValueError(f"bench: repeat must be >= 1, got {repeat}")
    found, notes = peers(backend)
    state = _Run(backend, quick, found)
    tasks = [(c, d, size) for c in CASES if not ops or c.op in ops for size in c.shapes(quick)
             for d in (DTYPES if size == "canonical" else DTYPES[:1])]
    runs: list[list[dict[str, Any]]] = [[] for _ in tasks]
    start = _load()
    with Progress(repeat * len(tasks)) as bar:
        for n in range(repeat):
            for (case, dtype, size), measured in zip(tasks, runs):
                bar.step(f"run {n + 1}/{repeat}: {case.name} {size} {dtype}")
                measured.append(measure(case, dtype, state, size))
    rows = [merge(measured, state) for measured in runs]
    report: dict[str, Any] = {}
    if host_section:
        report["host"] = host.measure(*((3, 20) if quick else (max(15, 5 * repeat),)))
    header = {**_header(backend, quick, (start, _load())), "repeat": repeat}
    return {"header": header, "peers": [p.name for p in found],
            "peer_settings": {p.name: p.settings for p in found}, "notes": notes,
            "targets": _targets(rows), "rows": rows, **report}


def _median_and_range(values: Sequence[float]) -> tuple[float, list[float]]:
    return statistics.median(values), [min(values), max(values)]


def merge(measured: Sequence[dict[str, Any]], run: _Run) -> dict[str, Any]:
    """One row from the rows of repeated runs of a case: times, throughputs and ratios as their
    median with the range (`*_range`: [min, max]) over the runs, targets judged on the median;
    the largest difference and peak memory; a peer n/a in any run is n/a."""
    first = measured[0]
    row = {**first, "runs": len(measured)}
    for key in ("ms", "ms_alone", "melem_s", "gb_s", "share_of_copy"):
        if key in first:
            row[key], row[f"{key}_range"] = _median_and_range([r[key] for r in measured])
    if "ms_target" in row:
        row["ms_met"] = row["ms_alone"] <= row["ms_target"]
    row["peers"] = {}
    for name, result in first["peers"].items():
        results = [r["peers"][name] for r in measured]
        na = next((res for res in results if "ratio" not in res), None)
        if na is not None:
            row["peers"][name] = na
            continue
        merged = {**result}
        for key in ("ms", "melem_s", "ratio"):
            merged[key], merged[f"{key}_range"] = _median_and_range([r[key] for r in results])
        merged["max_abs_diff"] = max(r["max_abs_diff"] for r in results)
        if "target" in merged:
            merged["met"] = merged["ratio"] >= merged["target"]
        row["peers"][name] = merged
    ort = row["peers"].get("onnxruntime", {})
    row["max_abs_diff_vs_onnxruntime"] = ort.get("max_abs_diff")
    row["correct"] = None if "max_abs_diff" not in ort else "na" not in ort
    if "peak_memory_ratio" in first:
        row["peak_memory_ratio"] = max(r["peak_memory_ratio"] for r in measured)
        if "peak_memory_met" in first:
            row["peak_memory_met"] = row["peak_memory_ratio"] <= MEMORY_TARGET
    return row


def _targets(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many targets the rows met, and each one missed (peer ratios and peak memory)."""
    checked, missed = 0, []
    for r in rows:
        for name, res in r["peers"].items():
            if "target" in res:
                checked += 1
                if not res["met"]:
                    missed.append(f"{_label(r)}: x {name} {_number(res['ratio'])} "
                                  f"< {_number(res['target'])}")
        if "peak_memory_met" in r:
            checked += 1
            if not r["peak_memory_met"]:
                missed.append(f"{_label(r)}: peak memory "
                              f"{r['peak_memory_ratio']:.2f} > {MEMORY_TARGET:g}")
        if "ms_met" in r:
            checked += 1
            if not r["ms_met"]:
                missed.append(f"{_label(r)}: {r['ms_alone'] * 1e3:.1f} us alone > "
                              f"{r['ms_target'] * 1e3:g} us")
    return {"checked": checked, "met": checked - len(missed), "missed": missed}


def _label(r: dict[str, Any]) -> str:
    """A row's name in the list of missed targets: case, size (where not canonical), dtype."""
    size = r.get("size", "canonical")
    return f"{r['case']}{'' if size == 'canonical' else ' ' + size} {r['dtype']}"


def _number(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _with_range(value: float, spread: Sequence[float] | None) -> str:
    """`1.52 (1.48-1.7)`: a median with its range over repeated runs, where they differ."""
    if not spread or spread[0] == spread[1]:
        return _number(value)
    return f"{_number(value)} ({_number(spread[0])}-{_number(spread[1])})"


def _peer_cell(result: dict[str, Any]) -> str:
    if "ratio" not in result:
        return "n/a"
    cell = _with_range(result["ratio"], result.get("ratio_range"))
    if "target" in result:
        cell += f" >={_number(result['target'])} {'ok' if result['met'] else 'MISS'}"
    return cell


def _peer_column(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: _peer_cell(r["peers"][name]) if name in r["peers"] else "-"


def _ms_cell(r: dict[str, Any]) -> str:
    """The time in turns; for a tiny row also alone, which its target judges."""
    cell = _with_range(r["ms"], r.get("ms_range"))
    if "ms_target" in r:
        cell += (f", alone {_with_range(r['ms_alone'], r.get('ms_alone_range'))}"
                 f" <={_number(r['ms_target'])} {'ok' if r['ms_met'] else 'MISS'}")
    return cell


def _columns(report: dict[str, Any]) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    backend = report["header"]["backend"]
    cols: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("case", lambda r: r["case"]), ("dtype", lambda r: r["dtype"]),
        ("size", lambda r: r.get("size", "canonical")),
        ("shape", lambda r: "x".join(map(str, r["shape"]))),
        ("ms", _ms_cell),
        ("Melem/s", lambda r: _number(r["melem_s"]))]
    cols += [(f"x {name}", _peer_column(name)) for name in report["peers"]]
    cols.append(("max abs diff vs onnxruntime", lambda r: "-" if r["correct"] is None else
                 f"{r['max_abs_diff_vs_onnxruntime']:.1e}{'' if r['correct'] else ' WRONG'}"))
    if backend == "numpy":
        cols.append(("peak mem / (X+Y)", lambda r: f"{r['peak_memory_ratio']:.2f}" + (
            f" <={MEMORY_TARGET:g} {'ok' if r['peak_memory_met'] else 'MISS'}"
            if "peak_memory_met" in r else "")))
    if backend == "cupy":
        cols += [("GB/s", lambda r: _number(r["gb_s"])),
                 ("copy GB/s", lambda r: _number(r["copy_gb_s"])),
                 ("share of copy", lambda r: f"{r['share_of_copy']:.0%}")]
    return cols


def table(report: dict[str, Any]) -> str:
    """The rows as a Markdown table, padded to line up in a terminal."""
    cols = _columns(report)
    cells = [[name for name, _ in cols]] + [[fmt(r) for _, fmt in cols] for r in report["rows"]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cols))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def summary(report: dict[str, Any]) -> str:
    """The Markdown a page includes: when, where and with what the run measured, the table, the
    targets and how the figures were taken (the full report adds the peers' settings)."""
    h = report["header"]
    versions = ", ".join(f"{k} {v}" for k, v in h["versions"].items() if v)
    quick = " (--quick: reduced shapes and repeats)" if h["quick"] else ""
    repeat = h.get("repeat", 1)
    lines = [f"- date: {h['date']}",
             f"- host: {h['host']}, CPU: {h['cpu']} ({h['cpu_count']} logical cores)",
             (f"- backend: {h['backend']}{quick}, ONNX opset {h['opset']} (Upsample: "
              f"{h.get('upsample_opset', UPSAMPLE_OPSET)})"),
             (f"- 1-minute load average at start / end: {_loads(h['load_average'])} on "
              f"{h['cpu_count']} logical cores (this run counts about 1; more means other "
              "processes shared the CPU)"),
             f"- versions: {versions}"]
    if h.get("note"):
        lines.append(f"- note: {h['note']}")
    busy = [v for v in h["load_average"].values() if v is not None and v > 0.75 * h["cpu_count"]]
    if busy:
        lines.append(f"- the load was high: other processes held about {max(busy) - 1:.1f} of "
                     f"the {h['cpu_count']} cores during the run, so every time (ours and the "
                     "peers', taken in turns) is longer than on an idle machine; see the ranges")
    if h["gpu"]:
        g = h["gpu"]
        lines.append(f"- GPU: {g['device']} (compute capability {g['compute_capability']}, "
                     f"L2 {g['l2_bytes'] // 2**20} MiB), CuPy {g['cupy']}, CUDA runtime "
                     f"{g['cuda_runtime']}, driver {g['driver']}")
    if repeat > 1:
        lines.append(f"- {repeat} runs of every row in one invocation: each time, throughput and "
                     "ratio is the median over the runs, with the range (lowest-highest) in "
                     "parentheses where they differ; targets are judged on the median")
    warmup, repeats = REPEATS["cpu", h["quick"]]
    more = "" if h["quick"] else (
        f" (more where calls are short: as many as fill {WARM_SECONDS * 1e3:g} ms and "
        f"{TIMED_SECONDS * 1e3:g} ms of ours, at most {MOST_CALLS:,} each)")
    lines += ["", table(report), "", _target_line(report["targets"]), "",
              ("Throughput: elements of X and Y per second. Ours and the peers are called in turns "
               f"(ours, peer, ..., ours, peer, ...), {warmup} warm-up and {repeats} timed calls "
               f"each on the CPU{more}, and each one's median time is taken (on the GPU: CUDA "
               "events, "
               f"{' and '.join(map(str, REPEATS['gpu', h['quick']]))} calls, inputs rotated "
               "through more than the L2 cache). `x PEER`: our throughput over the peer's. "
               "onnx.reference is timed once on the reduced shapes (see JSON), for the canonical "
               "size only. Sizes: canonical (batch 8 for the pools and Resize), batch 1 (Resize: "
               "224x224) and tiny, the last two in float32 only. Targets (float32) are checked "
               "for the NumPy backend (not under --quick): onnxruntime's at every size, "
               "PyTorch's (CPU, 1 thread) at batch 1 and canonical where PyTorch is installed, "
               "onnx.reference's at canonical, a tiny call's time (ours called alone, as many "
               "times: in turns, the peers' calls evict the caches a call of a few "
               "microseconds runs from, and every contender's tiny call takes longer; the cell "
               "shows both times), and the peak memory "
               f"(tracemalloc, the output included) of every row whose X and Y hold at least "
               f"{MEMORY_JUDGED_BYTES // 1024} KiB: tracemalloc also counts a call's Python "
               "objects (its key, views: a few KiB), which the tiny rows' data cannot hold twice "
               "over.")]
    if "host" in report:
        hs = report["host"]
        lines += ["", ("Host time per call of the CuPy path, on the stand-in for CuPy "
                       "(onnx_cupy.tools.standin: the library's work per call in full; CuPy's "
                       "allocation and argument packing as a Python model of them, without the "
                       "stand-in's records; no driver launch): median and range over "
                       f"{hs['samples']} samples of "
                       f"{hs['calls_per_sample']} repeated calls each, the rows in turns."), "",
                  host.table(hs)]
    return "\n".join(lines) + "\n"


def markdown(report: dict[str, Any], drawn: str | None = None) -> str:
    """The report as Markdown: title, summary, peers' settings, notes, and the plot: `drawn` is
    its file name or why it was skipped."""
    lines = ["# onnx-cupy benchmark", "", summary(report), "Peers:", *_peer_lines(report)]
    na = [f"{_label(r)}, {name}: {res['na']}" for r in report["rows"]
          for name, res in r["peers"].items() if "na" in res]
    notes = report["notes"] + [f"n/a: {line}" for line in na]
    if drawn:
        notes.append(f"plot: {drawn}")
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    if drawn and not drawn.startswith("skipped"):
        lines += ["", f"![ratios]({drawn})"]
    return "\n".join(lines) + "\n"


def _loads(load: dict[str, float | None]) -> str:
    return " / ".join("n/a" if v is None else f"{v:.2f}" for v in (load["start"], load["end"]))


def _target_line(targets: dict[str, Any]) -> str:
    if not targets["checked"]:
        return "Targets: none checked in this run."
    missed = "".join(f"\n- MISSED: {m}" for m in targets["missed"])
    return f"Targets: {targets['met']} of {targets['checked']} met.{missed}"


def _peer_lines(report: dict[str, Any]) -> list[str]:
    """Each peer's settings, and the graphs onnxruntime ran after optimization with their rows."""
    lines = [f"- {name}: " + "; ".join(f"{k}: {v}" for k, v in settings.items())
             for name, settings in report["peer_settings"].items()]
    for name in report["peers"]:
        graphs: dict[str, list[str]] = {}
        for r in report["rows"]:
            if "graph" in r["peers"].get(name, {}):
                graph = " > ".join(r["peers"][name]["graph"])
                graphs.setdefault(graph, []).append(_label(r))
        lines += [f"- {name} ran `{g}` for: {', '.join(rows)}" for g, rows in graphs.items()]
    return lines


def plot(report: dict[str, Any], path: Path) -> str:
    """Draw the peer ratios (and on a GPU the share of copy bandwidth) to `path`; returns the file
    name, or why no plot was drawn."""
    figure = _module("matplotlib.figure")
    if figure is None:
        return "skipped (matplotlib is not installed)"
    rows, names, h = report["rows"], report["peers"], report["header"]
    gpu = h["backend"] == "cupy"
    fig = figure.Figure(figsize=(11 if gpu else 8, 1.5 + 0.2 * len(rows) * max(1, len(names))))
    ax = fig.add_subplot(1, 2 if gpu else 1, 1)
    ypos = np.arange(len(rows))
    height = 0.8 / max(1, len(names))
    marks: dict[bool, list[tuple[float, float]]] = {True: [], False: []}   # met -> (target, y)
    for k, name in enumerate(names):
        shift = (k - (len(names) - 1) / 2) * height
        pts = [(i, r["peers"][name]["ratio"], r["peers"][name].get("ratio_range"))
               for i, r in enumerate(rows) if "ratio" in r["peers"].get(name, {})]
        if pts:
            at, v, spread = zip(*pts)
            low, high = zip(*(s or (m, m) for m, s in zip(v, spread)))
            ax.barh(np.array(at) + shift, v, height, label=name,
                    xerr=[np.subtract(v, low), np.subtract(high, v)], capsize=2)
        for i, r in enumerate(rows):
            if "target" in r["peers"].get(name, {}):
                marks[r["peers"][name]["met"]].append((r["peers"][name]["target"], i + shift))
    for met, style in ((True, "k|"), (False, "rx")):
        if marks[met]:
            t, y = zip(*marks[met])
            ax.plot(t, y, style, markersize=9, label="target " + ("met" if met else "MISSED"))
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(ypos, [_label(r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{h['backend']} throughput / peer's (log)")
    if names:
        ax.legend(fontsize=8)
    if gpu:
        ax2 = fig.add_subplot(1, 2, 2, sharey=ax)
        ax2.barh(ypos, [r["share_of_copy"] for r in rows])
        ax2.set_xlabel("share of device-to-device copy bandwidth")
        ax2.tick_params(labelleft=False)
    fig.suptitle(f"onnx-cupy {h['backend']} - {h['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path.name


def write(report: dict[str, Any], out: Path) -> tuple[str, list[Path]]:
    """Write <backend>[-quick].json, .md and .png to `out`; returns the Markdown and the paths."""
    out.mkdir(parents=True, exist_ok=True)
    stem = report["header"]["backend"] + ("-quick" if report["header"]["quick"] else "")
    png = out / f"{stem}.png"
    drawn = plot(report, png)
    text = markdown(report, drawn)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    paths[0].write_text(json.dumps(report, indent=1) + "\n")
    paths[1].write_text(text, encoding="utf-8")
    return text, paths + ([png] if drawn == png.name else [])
