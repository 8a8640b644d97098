"""onnx_cupy.onnx_backend: an onnx.backend.base.Backend running ONNX models made of the supported
operators (extra `onnx`). Defined in onnx_cupy.interop.onnx_backend, whose docstring this module
shares."""
from .interop import onnx_backend as _implementation
from .interop.onnx_backend import *  # every name of its __all__

__all__ = _implementation.__all__
__doc__ = _implementation.__doc__
