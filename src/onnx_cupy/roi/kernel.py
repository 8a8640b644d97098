"""The kernel path of RoiAlign and MaxRoiPool: kernels/roi.cu over a plan (onnx_cupy.roi.plan),
launched on the GPU or the emulator. One thread per output element in a 1-D grid-stride loop;
the kernels read the boxes themselves (they are data), so the host passes only the shapes, the
attributes and the divisors of the output's trailing extents in a RoiGeom struct; int offsets
where X, the rois and Y fit them, else long long."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..core import dtypes, kernel_call, launcher, loader, records
from .plan import COLUMNS, CORNER_LIMIT, MAX_GRID, MAX_ROI_POOL, ROI_ALIGN, RoiPlan

FAMILY = "roi"
DTYPES = tuple(dtypes.FLOAT_TYPES)
# instructions per output the 32-bit-offset kernels of float16, bfloat16 and float32 are held to
# in the kernel report, counting their sample (or pixel) loops once: the region's set-up (its box
# read, scaled and checked; its bin and grid), then one bilinear sample of four weighted corners
# (RoiAlign) or one pixel of the bin (MaxRoiPool). A bin of g x g samples adds g * g - 1 more
# samples' worth, each of four loads: bandwidth-bound like the other families' fast paths.
ALIGN_BUDGET = 345
POOL_BUDGET = 225

_GEOM = np.dtype(
    [(f, "<i8") for f in ("batch", "channels", "height", "width", "pooled_h", "pooled_w", "total",
                          "sampling_ratio")]
    + [("scale_f", "<f4"), ("offset_f", "<f4"), ("scale_d", "<f8"), ("offset_d", "<f8")]
    + [(f, "<u4", (2,)) for f in ("by_pw", "by_ph", "by_c")], align=True)


def _record(template: str, dtype_name: str, bits: int, *extra: records.Argument, op: str,
            budget: float, variant: str = "") -> records.Instantiation:
    """An instantiation of `template`<T, I, ...>: with int offsets a fast path held to `budget`
    (with long long ones its index divisions are real divisions: reported, not held)."""
    return records.Instantiation(FAMILY, template, (records.storage(dtype_name),
                                                    records.index(bits), *extra),
                                 (op,), (dtype_name,), grid_stride="x", variant=variant,
                                 fast=bits == 32, budget=budget if bits == 32 else None)


# roi_align by (dtype, bits, mode), max_roi_pool by (dtype, bits)
ALIGN = {(t, b, m): _record("roi_align", t, b, records.argument(
    "max", m == "max", "true" if m == "max" else "false"), op=ROI_ALIGN, budget=ALIGN_BUDGET,
    variant=f"mode {m}")
    for t in DTYPES for b in dtypes.INDEX_TYPES for m in ("avg", "max")}
POOL = {(t, b): _record("max_roi_pool", t, b, op=MAX_ROI_POOL, budget=POOL_BUDGET)
        for t in DTYPES for b in dtypes.INDEX_TYPES}
loader.register(FAMILY, [*ALIGN.values(), *POOL.values()], {"RoiGeom": _GEOM},
                defines={"ROI_MAX_GRID": MAX_GRID, "ROI_CORNER_LIMIT": CORNER_LIMIT})


@functools.lru_cache(maxsize=512)
def kernel_args(pl: RoiPlan, dtype: np.dtype) -> launcher.LaunchSpec:
    """The launch of a plan for X of `dtype`: one thread per output, grid-stride."""
    n, c, h, w = pl.shape
    total = math.prod(pl.out_shape)
    bits = launcher.grid_offset_bits(total, n * c * h * w, pl.regions * COLUMNS[pl.op])
    dividers = {"by_pw": launcher.divider(pl.pooled[1]), "by_ph": launcher.divider(pl.pooled[0]),
                "by_c": launcher.divider(max(c, 1))} if bits == 32 else {}
    g = launcher.parameter_struct(
        _GEOM, batch=n, channels=c, height=h, width=w, pooled_h=pl.pooled[0],
        pooled_w=pl.pooled[1], total=total, sampling_ratio=pl.sampling_ratio,
        scale_f=pl.spatial_scale, offset_f=pl.offset, scale_d=pl.spatial_scale,
        offset_d=pl.offset, **dividers)
    k = ALIGN[dtype.name, bits, pl.mode] if pl.op == ROI_ALIGN else POOL[dtype.name, bits]
    return launcher.LaunchSpec(k, None, total, (g,))


def prepare(pl: RoiPlan, device: Any, x: Any, rois: Any, batch: Any = None
            ) -> kernel_call.Body:
    """The body of plan `pl` on `device` for C-contiguous device arrays laid out as `x`, `rois`
    and (RoiAlign) `batch`: body(X, rois, [batch_indices,] out) -> Y."""
    size = math.prod(pl.out_shape)
    empty, dtype = device.empty, x.dtype   # X's dtype: the key holds it
    if not size:
        return lambda *args: empty(pl.out_shape, dtype) if args[-1] is None else args[-1]
    launch = launcher.Launch(device, kernel_args(pl, np.dtype(x.dtype)))

    def body(*args: Any) -> Any:
        *inputs, out = args
        Y = empty(pl.out_shape, dtype) if out is None else out
        launch(*inputs, Y)
        return Y
    return body
