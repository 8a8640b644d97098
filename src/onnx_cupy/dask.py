"""onnx_cupy.dask: the operators on dask arrays, block by block, lazily (extra `dask`). The
functions are defined in onnx_cupy.interop.dask, whose docstring this module shares: it tells
which axes keep their chunks for each operator."""
from .interop import dask as _implementation
from .interop.dask import *  # every name of its __all__

__all__ = _implementation.__all__
__doc__ = _implementation.__doc__
