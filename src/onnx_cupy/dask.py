"""onnx_cupy.dask: the operators on dask arrays, block by block, lazily (extra `dask`). The
functions are defined in onnx_cupy.interop.dask, whose docstring this module shares: it tells
which axes keep their chunks for each operator."""
from .interop import dask as _implementation
from .interop.dask import (
    average_pool,
    global_average_pool,
    global_lp_pool,
    global_max_pool,
    hardmax,
    lp_pool,
    max_pool,
    resize,
)

__doc__ = _implementation.__doc__
__all__ = ["average_pool", "global_average_pool", "global_lp_pool", "global_max_pool", "hardmax",
           "lp_pool", "max_pool", "resize"]
