"""The benchmark's cases: the operators' calls at their canonical, batch-1 and tiny shapes, the
inputs they take and the targets each is held to."""
from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import onnx_cupy as oc

from ...pool import api as pool_api
from ...resize import api as resize_api
from ...resize import plan as resize_plan
from ...unpool import api as unpool_api

OPSET = 22                 # model opset: pools' version 22, Hardmax-13, Resize-19, GridSample-22
UPSAMPLE_OPSET = 9         # Upsample's (deprecated from opset 10: onnxruntime rejects it there)
DTYPES = ("float32", "float16")

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "AveragePool": oc.average_pool, "LpPool": oc.lp_pool, "MaxPool": oc.max_pool,
    "GlobalAveragePool": oc.global_average_pool, "Hardmax": oc.hardmax, "Resize": oc.resize,
    "Upsample": oc.upsample, "MaxUnpool": oc.max_unpool, "GridSample": oc.grid_sample,
    "RoiAlign": oc.roi_align}

SIZES = ("tiny", "batch 1", "canonical")   # the shapes a case runs at (--quick: its quick one)
TINY_TARGET_US = 25.0      # NumPy fallback: most microseconds of a tiny call (float32)


class NotApplicable(Exception):
    """A peer has no equivalent of a case (raised by its runner)."""


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
    # the gradient: dX for the cotangent dY of Y (`gradient`), against PyTorch's backward
    backward: bool = False


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

    def dtypes(self, size: str) -> tuple[str, ...]:
        """The dtypes the case runs in at `size`: float32 and float16 at the canonical size,
        float32 at the others; a backward row in float32 only."""
        return DTYPES if size == "canonical" and not self.backward else DTYPES[:1]

    def targets(self, dtype: str, size: str = "canonical") -> dict[str, float]:
        """The required ratios per peer at a size; targets are set for float32, the canonical
        dtype: onnxruntime's at each size (where the case sets one), PyTorch's at batch 1 and
        canonical, onnx.reference's at canonical (where it runs); none for a backward row,
        which is reported."""
        if dtype != "float32" or self.backward:
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
    try:
        ops = importlib.import_module("torchvision.ops")
    except ImportError:
        raise NotApplicable("torchvision is not installed") from None
    b = _shaped(_boxes, tuple(x.shape), str(x.dtype).removeprefix("torch."))
    rois = np.concatenate([b["batch_indices"][:, None].astype(b["rois"].dtype), b["rois"]], 1)
    return ops.roi_align(x, torch.from_numpy(rois).to(x.device), 7, 1 / 16, 2, aligned=False)


def _torch_hardmax(axis: int) -> Callable[[Any, Any], Any]:
    return lambda torch, x: torch.zeros_like(x).scatter_(axis, x.argmax(axis, keepdim=True), 1)


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
FORWARD: tuple[Case, ...] = (
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
# The gradients timed: each pooling and Resize case's as a row of its own, "<case> backward",
# in float32
GRADIENT_OPS = ("AveragePool", "LpPool", "MaxPool", "GlobalAveragePool", "MaxUnpool", "Resize")
BACKWARD: tuple[Case, ...] = tuple(
    dataclasses.replace(c, name=f"{c.name} backward", backward=True, reference_target=None,
                        batch1_target=None, tiny_target=None, torch_target=None)
    for c in FORWARD if c.op in GRADIENT_OPS)
CASES: tuple[Case, ...] = FORWARD + BACKWARD
OPS = tuple(dict.fromkeys(c.op for c in CASES))
DIRECTIONS = ("forward", "backward")


def direction(case: Case) -> str:
    return "backward" if case.backward else "forward"


@functools.lru_cache(maxsize=16)
def cotangent(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The cotangent dY of a backward row whose forward output has `shape` and `dtype` (the
    same for ours and the peers): standard normal, seeded."""
    return np.random.default_rng(3).standard_normal(shape).astype(dtype)


def gradient_inputs(case: Case, x: np.ndarray) -> dict[str, Any]:
    """What a backward row's gradient call takes beside X, made on the host from X once: the
    cotangent dY and the forward output the gradient reads (MaxPool's Indices and LpPool's Y,
    saved as an autograd framework saves them; MaxUnpool's indices; Resize's scales stay with
    the case, read on the host)."""
    inputs = case.inputs_for(tuple(x.shape), str(x.dtype))
    if case.op == "MaxPool":
        y, saved = oc.max_pool(x, **case.attrs, opset=case.opset, return_indices=True)
    else:
        y = FUNCTIONS[case.op](x, **inputs, **case.attrs, opset=case.opset)
        saved = y if case.op == "LpPool" else None
    if case.op == "Resize":
        inputs = {}
    return {"dY": cotangent(tuple(y.shape), str(x.dtype)), "saved": saved, **inputs}


def gradient(case: Case, x: Any, dY: Any, saved: Any = None, I: Any = None) -> Any:  # noqa: N803
    """A backward row's call: dX, the gradient of `case`'s operator at X for the cotangent dY,
    through the family's gradient entry point (onnx_cupy.vjp's, given the saved output)."""
    if case.op == "Resize":
        scales = case.inputs_for(tuple(x.shape), str(x.dtype))["scales"]
        return resize_api.gradient(x, dY, (case.opset, None, {**resize_plan.DEFAULTS,
                                                              **case.attrs}), (None, scales, None))
    if case.op == "MaxUnpool":
        return unpool_api.gradient(x, I, dY, None, case.opset, case.attrs)
    attrs = {} if case.op == "GlobalAveragePool" else case.attrs
    return pool_api.gradient(case.op, x, dY, (case.opset, attrs), saved=saved)
