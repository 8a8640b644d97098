"""Kernel launch for kernels/pool.cu: the PoolGeom parameter block and the instantiation of a
pooling plan (see onnx_cupy.plans.pool for the semantics)."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import arrays, dtypes, launch, loader
from ..plans.pool import MAX_SPATIAL, PoolPlan

FAMILY = "pool"

_GEOM = np.dtype(
    [(f, "<i8") for f in ("nd", "total", "channels", "stride_n", "stride_c", "lp")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in ("in_shape", "in_stride", "out_shape", "kernel", "step",
                                             "dilation", "pad_begin", "cnt_lo", "cnt_hi")]
    + [("p", "<f8")]
)


def _expression(dtype_name: str, bits: int) -> str:
    storage, acc, _ = dtypes.FLOAT_TYPES[dtype_name]
    return f"pool<{storage}, {acc}, {dtypes.INDEX_TYPES[bits]}>"


loader.register(FAMILY,
                [_expression(t, b) for t in dtypes.FLOAT_TYPES for b in dtypes.INDEX_TYPES],
                {"PoolGeom": _GEOM})


@functools.lru_cache(maxsize=512)
def geometry(pl: PoolPlan, x_strides: tuple[int, ...]) -> np.ndarray:
    """The kernel's PoolGeom parameter block for an input with these element strides."""
    return launch.parameter_block(
        _GEOM, nd=pl.nd, total=math.prod(pl.out_shape), channels=pl.in_shape[1],
        stride_n=x_strides[0], stride_c=x_strides[1], lp=pl.lp, p=pl.p,
        in_shape=pl.in_shape[2:], in_stride=x_strides[2:], out_shape=pl.out_shape[2:],
        kernel=pl.kernel, step=pl.strides, dilation=pl.dilations, pad_begin=pl.pads_begin,
        cnt_lo=pl.cnt_lo, cnt_hi=pl.cnt_hi)


@functools.lru_cache(maxsize=512)
def kernel_args(pl: PoolPlan, dtype: np.dtype, x_strides: tuple[int, ...]
                ) -> tuple[str, np.ndarray]:
    """(instantiation, PoolGeom block) for an input of `dtype` with these element strides."""
    bits = launch.index_bits(math.prod(pl.out_shape), pl.reach(x_strides))
    return _expression(dtypes.float_name(dtype), bits), geometry(pl, x_strides)



def run(pl: PoolPlan, X: Any, Y: Any, backend: str) -> None:
    """Launch the pooling kernel of plan `pl` on X into the C-contiguous Y ('cupy' or 'emulated')."""
    X, strides = arrays.element_strides(X)
    expression, g = kernel_args(pl, X.dtype, strides)
    launch.launch(backend, FAMILY, expression, Y.size, (X, Y, g))
