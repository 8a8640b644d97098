"""Kernel launch for kernels/hardmax.cu: scan, merge and write over a Hardmax plan's
[outer, n, inner] view (see onnx_cupy.plans.hardmax for the semantics)."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import arrays, dtypes, launch, loader
from ..plans.hardmax import HardmaxPlan

FAMILY = "hardmax"
KERNELS = ("hardmax_scan", "hardmax_merge", "hardmax_write")

_GEOM = np.dtype([(f, "<i8") for f in (
    "outer", "n", "inner", "lanes", "stride_outer", "stride_n", "stride_inner")])


def _expression(kernel: str, dtype_name: str, bits: int) -> str:
    storage, acc, _ = dtypes.FLOAT_TYPES[dtype_name]
    return f"{kernel}<{storage}, {acc}, {dtypes.INDEX_TYPES[bits]}>"


loader.register(FAMILY, [_expression(k, t, b) for k in KERNELS for t in dtypes.FLOAT_TYPES
                         for b in dtypes.INDEX_TYPES],
                {"HardmaxGeom": _GEOM})



@functools.lru_cache(maxsize=512)
def geometry(pl: HardmaxPlan, view: tuple[int, int, int]) -> np.ndarray:
    """The kernels' HardmaxGeom parameter block for view strides `view`."""
    return launch.parameter_block(_GEOM, **dict(zip(_GEOM.names, (pl.outer, pl.n, pl.inner,
                                                                   pl.lanes, *view))))


@functools.lru_cache(maxsize=512)
def kernel_args(pl: HardmaxPlan, dtype: np.dtype, x_strides: tuple[int, ...]
                ) -> tuple[tuple[str, str, str], np.dtype, np.ndarray] | None:
    """((scan, merge, write) instantiations, index dtype, HardmaxGeom block) for an input of
    `dtype` with these element strides, or None where they do not form the [outer, n, inner]
    view."""
    view = pl.view_strides(x_strides)
    if view is None:
        return None
    bits = launch.index_bits(math.prod(pl.shape), arrays.max_offset(pl.shape, x_strides))
    name = dtypes.float_name(dtype)
    return (tuple(_expression(k, name, bits) for k in KERNELS), dtypes.INDEX_DTYPES[bits],
            geometry(pl, view))


def run(pl: HardmaxPlan, X: Any, Y: Any, backend: str) -> None:
    """Launch scan, merge (when a row has several scan lanes) and write for plan `pl` on X into the
    C-contiguous Y ('cupy' or 'emulated')."""
    xp = arrays.module_of(backend)
    X, strides = arrays.element_strides(X)
    args = kernel_args(pl, X.dtype, strides)
    if args is None:
        X, strides = arrays.element_strides(xp.ascontiguousarray(X))
        args = kernel_args(pl, X.dtype, strides)
    (scan, merge, write), index_dtype, g = args
    part = xp.empty(pl.outer * pl.lanes * pl.inner, dtype=index_dtype)
    launch.launch(backend, FAMILY, scan, part.size, (X, part, g))
    arg = part
    if pl.lanes > 1:
        arg = xp.empty(pl.outer * pl.inner, dtype=index_dtype)
        launch.launch(backend, FAMILY, merge, arg.size, (X, part, arg, g))
    launch.launch(backend, FAMILY, write, Y.size, (arg, Y, g))
