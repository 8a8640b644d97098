"""RoiAlign (opset versions 10, 16, 22) and MaxRoiPool (1, 22): pooling of regions of a feature
map X of shape (N, C, H, W) into outputs of shape (K, C, PH, PW), one (C, PH, PW) block per
region. Everything below is computed per region on the path that runs it (the boxes are data),
in the accumulate type A (float for float16, bfloat16 and float32; double for float64), operation
by operation in the order written (as onnxruntime and onnx.reference):

RoiAlign, region k = rois[k] = (x1, y1, x2, y2) of image batch_indices[k], s = spatial_scale,
d = 0.5 under coordinate_transformation_mode half_pixel (the default from version 16) and 0
under output_half_pixel (the only rule of version 10):
  x0 = x1 * s - d,  y0 = y1 * s - d,  w = (x2 * s - d) - x0,  h = (y2 * s - d) - y0
  (output_half_pixel: w = max(w, 1), h = max(h, 1)),  bh = h / PH,  bw = w / PW
  gh = sampling_ratio if > 0 else ceil(bh), gw likewise (at most MAX_GRID), count = max(gh gw, 1)
  sample (iy, ix) of bin (ph, pw): y = (y0 + ph bh) + (iy + 0.5) bh / gh, x likewise;
  a sample with y < -1, y > H, x < -1 or x > W is 0 * X[., ., 0, 0] at each corner; else
  y = max(y, 0) (y <= 0 -> 0), y_lo = trunc(y), y_hi = y_lo + 1, or both H - 1 and y = H - 1
  where y_lo >= H - 1; ly = y - y_lo, hy = 1 - ly (x likewise), and the sample's four terms
  are (hy hx) X[y_lo, x_lo], (hy lx) X[y_lo, x_hi], (ly hx) X[y_hi, x_lo], (ly lx) X[y_hi, x_hi].
  avg: Y = (sum over samples, in (iy, ix) order, of ((t1 + t2) + t3) + t4) / count;
  max: Y = the running max (std::max) over samples of max(max(max(t1, t2), t3), t4) (the
  weighted corners, not the interpolated value: onnxruntime, onnx.reference and ONNX's node
  test roialign_mode_max); a region whose grid is empty (gh <= 0 or gw <= 0) gives 0.

MaxRoiPool, region k = rois[k] = (b, x1, y1, x2, y2), b truncated to an integer:
  x0 = round(x1 * s) (half away from zero), y0, x2', y2' likewise (clamped to +-CORNER_LIMIT),
  h = max(y2' - y0 + 1, 1), w likewise,  bh = h / PH,  bw = w / PW  (in A)
  bin (ph, pw): rows [clip(floor(ph bh) + y0), clip(ceil((ph + 1) bh) + y0)), clip to [0, H];
  columns likewise; Y = 0 for an empty bin, else the fold acc = (v < acc) ? acc : v over the
  bin in row-major order from acc = -FLT_MAX (onnxruntime's std::max: a NaN is kept until the
  next element replaces it).

A box coordinate that is not finite and a batch index outside [0, N) are ValueErrors on host
arrays (as onnxruntime's RoiAlign); the GPU path, which would have to synchronize to check,
gives NaN in every output of a region with a coordinate that is not finite after scaling, and
zeros for a region of a batch index outside the batch. An image without pixels (H or W 0) gives
zeros.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import attributes, dtypes, opsets

ROI_ALIGN = "RoiAlign"
MAX_ROI_POOL = "MaxRoiPool"
DTYPES: dict[str, dict[str, int]] = {
    ROI_ALIGN: {**dtypes.since(10, *dtypes.FLOATS), **dtypes.since(22, "bfloat16")},
    MAX_ROI_POOL: {**dtypes.since(1, *dtypes.FLOATS), **dtypes.since(22, "bfloat16")},
}
INDEX_DTYPE = np.dtype(np.int64)   # RoiAlign's batch_indices
MODES = ("avg", "max")
COORDINATE_MODES = ("half_pixel", "output_half_pixel")
# shared with kernels/roi.cu (ROI_MAX_GRID, ROI_CORNER_LIMIT): the most samples per axis of an
# adaptive grid, and the bound of MaxRoiPool's rounded corners (so that their sums fit an int)
MAX_GRID = 4096
CORNER_LIMIT = 1 << 29
COLUMNS = {ROI_ALIGN: 4, MAX_ROI_POOL: 5}   # rois: (x1, y1, x2, y2), MaxRoiPool's with b first


@dataclass(frozen=True)
class RoiPlan:
    """What both execution paths need of a call, validated once (the boxes are read per call).

    `mode`: "avg" or "max" for RoiAlign, "pool" for MaxRoiPool; `offset`: d above (RoiAlign)."""

    op: str
    version: int
    shape: tuple[int, int, int, int]   # X: (N, C, H, W)
    regions: int                       # K
    pooled: tuple[int, int]            # (PH, PW)
    spatial_scale: float               # a float32 value
    mode: str
    sampling_ratio: int = 0
    offset: float = 0.0

    @property
    def out_shape(self) -> tuple[int, int, int, int]:
        return (self.regions, self.shape[1], *self.pooled)

    @property
    def half_pixel(self) -> bool:
        return self.offset != 0.0


def _check_inputs(op: str, version: int, opset: int, shape: tuple[int, ...], dtype: np.dtype,
                  rois_shape: tuple[int, ...], rois_dtype: np.dtype) -> None:
    dtypes.check(op, DTYPES[op], dtype, version, opset, input="X")
    if len(shape) != 4:
        raise ValueError(f"{op}: X must have rank 4 (N, C, H, W), got shape {shape}")
    columns = COLUMNS[op]
    if len(rois_shape) != 2 or rois_shape[1] != columns:
        what = "(num_rois, 4): x1, y1, x2, y2" if columns == 4 else \
            "(num_rois, 5): batch_index, x1, y1, x2, y2"
        raise ValueError(f"{op}: input 'rois' must have shape {what}, got {rois_shape}")
    if rois_dtype.newbyteorder("=") != dtype.newbyteorder("="):   # either byte order
        raise TypeError(f"{op}: input 'rois' must have X's dtype {dtype}, got {rois_dtype}")


def _fits(op: str, dtype: np.dtype, regions: int, channels: int, pooled: tuple[int, int],
          names: str) -> None:
    """ValueError where the output (regions, C, pooled) would not fit (attributes.fits)."""
    attributes.fits(op, (max(regions, 1), max(channels, 1), *pooled), dtype,   # NumPy refuses
                    f"attribute {names} = {pooled}")   # a too big shape with a zero in it too


def _choice(op: str, name: str, value: Any, allowed: tuple[str, ...], opset: int) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{op}: attribute '{name}' must be one of {', '.join(allowed)}, got "
                         f"{value!r} ({opsets.in_force(op, opset)})")
    return value


def _size(op: str, name: str, value: Any) -> int:
    if not attributes.is_int(value):
        raise TypeError(f"{op}: attribute '{name}' must be an int, got {value!r}")
    if value < 0:
        raise ValueError(f"{op}: attribute '{name}' must be >= 0 (0: an empty output), got "
                         f"{value}")
    attributes.extent(op, int(value), f"attribute '{name}'", f"{name}={value}")
    return int(value)


def _scale(op: str, value: Any, as_float32: bool) -> float:
    """spatial_scale: rounded to float32 as ONNX's FLOAT attribute (`as_float32`), or as given
    (torchvision's double, which its float64 kernels use unrounded)."""
    if as_float32 or not attributes.is_real(value):
        return attributes.float32(op, "spatial_scale", value)
    return float(value)


@functools.lru_cache(maxsize=512, typed=True)
def align_plan(opset: int, shape: tuple[int, ...], dtype: np.dtype, rois_shape: tuple[int, ...],
               rois_dtype: np.dtype, index_shape: tuple[int, ...], index_dtype: np.dtype,
               mode: Any, output_height: Any, output_width: Any, sampling_ratio: Any,
               spatial_scale: Any, coordinate_transformation_mode: Any,
               scale_as_float32: bool = True) -> RoiPlan:
    """Validate a RoiAlign call for the version in force at `opset` (see the module docstring)."""
    op = ROI_ALIGN
    version = opsets.version(op, opset)
    opsets.check_given(op, opset, {
        "coordinate_transformation_mode": coordinate_transformation_mode is not None})
    _check_inputs(op, version, opset, shape, dtype, rois_shape, rois_dtype)
    if index_dtype.newbyteorder("=") != INDEX_DTYPE:
        raise TypeError(f"{op}: input 'batch_indices' must be int64, got dtype {index_dtype}")
    if len(index_shape) != 1 or index_shape[0] != rois_shape[0]:
        raise ValueError(f"{op}: input 'batch_indices' must have shape (num_rois,) = "
                         f"({rois_shape[0]},) as rois, got {index_shape}")
    chosen = _choice(op, "mode", mode, MODES, opset)
    pooled = (_size(op, "output_height", output_height), _size(op, "output_width", output_width))
    if not attributes.is_int(sampling_ratio):
        raise TypeError(f"{op}: attribute 'sampling_ratio' must be an int, got {sampling_ratio!r}")
    if sampling_ratio < 0:
        raise ValueError(f"{op}: attribute 'sampling_ratio' must be >= 0 (0: adaptive), got "
                         f"{sampling_ratio}")
    if sampling_ratio > MAX_GRID:   # samples per bin and axis: the adaptive grid's bound too
        raise ValueError(f"{op}: attribute 'sampling_ratio' must be at most {MAX_GRID} samples "
                         f"per bin and axis, got {sampling_ratio}")
    _fits(op, dtype, rois_shape[0], shape[1], pooled, "output_height, output_width")
    if coordinate_transformation_mode is None:
        transform = "half_pixel" if version >= 16 else "output_half_pixel"
    else:
        transform = _choice(op, "coordinate_transformation_mode",
                            coordinate_transformation_mode, COORDINATE_MODES, opset)
    return RoiPlan(op, version, (shape[0], shape[1], shape[2], shape[3]), rois_shape[0], pooled,
                   _scale(op, spatial_scale, scale_as_float32), chosen, int(sampling_ratio),
                   0.5 if transform == "half_pixel" else 0.0)


@functools.lru_cache(maxsize=512, typed=True)
def pool_plan(opset: int, shape: tuple[int, ...], dtype: np.dtype, rois_shape: tuple[int, ...],
              rois_dtype: np.dtype, pooled_shape: Any, spatial_scale: Any,
              scale_as_float32: bool = True) -> RoiPlan:
    """Validate a MaxRoiPool call for the version in force at `opset`."""
    op = MAX_ROI_POOL
    version = opsets.version(op, opset)
    _check_inputs(op, version, opset, shape, dtype, rois_shape, rois_dtype)
    if pooled_shape is None:
        raise ValueError(f"{op}: attribute 'pooled_shape' is required")
    ph, pw = attributes.ints(op, "pooled_shape", pooled_shape, 2, 1, "(height, width)")
    for v in (ph, pw):
        attributes.extent(op, v, "attribute 'pooled_shape'", f"pooled_shape={[ph, pw]}")
    _fits(op, dtype, rois_shape[0], shape[1], (ph, pw), "pooled_shape")
    return RoiPlan(op, version, (shape[0], shape[1], shape[2], shape[3]), rois_shape[0], (ph, pw),
                   _scale(op, spatial_scale, scale_as_float32), "pool")


def _pooled(value: Any) -> Any:
    """pooled_shape checked as INTS of 2 values >= 1 (before the cache, whose keys would take
    (1.0, 1) for (1, 1)), or None where missing."""
    if value is None:
        return None
    return attributes.ints(MAX_ROI_POOL, "pooled_shape", value, 2, 1, "(height, width)")


def make_align(x: Any, rois: Any, batch_indices: Any, opset: int, attrs: dict[str, Any],
                  scale_as_float32: bool = True) -> RoiPlan:
    """The RoiAlign plan of these arrays' shapes and dtypes and the attributes `attrs`
    (`scale_as_float32`: spatial_scale rounded to float32, as ONNX stores it)."""
    return attributes.cached(
        align_plan, opset, tuple(x.shape), np.dtype(x.dtype), tuple(rois.shape),
        np.dtype(rois.dtype), tuple(batch_indices.shape), np.dtype(batch_indices.dtype),
        attrs["mode"], attrs["output_height"], attrs["output_width"], attrs["sampling_ratio"],
        attrs["spatial_scale"], attrs["coordinate_transformation_mode"], scale_as_float32)


def make_pool(x: Any, rois: Any, opset: int, attrs: dict[str, Any],
                 scale_as_float32: bool = True) -> RoiPlan:
    """The MaxRoiPool plan of these arrays' shapes and dtypes and the attributes `attrs`."""
    return attributes.cached(pool_plan, opset, tuple(x.shape), np.dtype(x.dtype),
                             tuple(rois.shape), np.dtype(rois.dtype),
                             _pooled(attrs["pooled_shape"]), attrs["spatial_scale"],
                             scale_as_float32)


def check_boxes(pl: RoiPlan, rois: np.ndarray) -> None:
    """ValueError for a box coordinate of a host array that is not finite, naming the first
    (as onnxruntime's RoiAlign: "All 'rois' values must be finite")."""
    if not rois.size:
        return
    corners = rois[:, -4:].astype(np.float64)
    finite = np.isfinite(corners)
    if not finite.all():
        k, i = (int(v) for v in np.unravel_index(int(np.argmin(finite)), finite.shape))
        raise ValueError(f"{pl.op}: input 'rois' holds {corners[k, i]} in region {k}: every box "
                         f"coordinate must be finite")


def check_batches(pl: RoiPlan, batch: np.ndarray) -> None:
    """ValueError for a batch index of a host array outside [0, N), naming the first (RoiAlign's
    batch_indices, or MaxRoiPool's first column, truncated; a NaN is outside)."""
    if not batch.size:
        return
    n = pl.shape[0]
    with np.errstate(invalid="ignore"):
        bad = ~((batch >= 0) & (batch < n)) if batch.dtype.kind != "f" else \
            ~((np.trunc(batch) >= 0) & (np.trunc(batch) < n))
    if bad.any():
        k = int(np.argmax(bad))
        name = "batch_indices" if pl.op == ROI_ALIGN else "rois[:, 0] (batch_index)"
        raise ValueError(f"{pl.op}: input '{name}' holds {batch[k].item()!r} for region {k}, "
                         f"outside the batch [0, {n})")
