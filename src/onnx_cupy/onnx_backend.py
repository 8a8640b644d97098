"""onnx_cupy.onnx_backend: an onnx.backend.base.Backend running ONNX models made of the supported
operators (extra `onnx`). Defined in onnx_cupy.interop.onnx_backend, whose docstring this module
shares."""
from .interop import onnx_backend as _implementation
from .interop.onnx_backend import (
    SUPPORTED,
    OnnxCupyBackend,
    OnnxCupyRep,
    is_compatible,
    prepare,
    run_model,
    run_node,
    supports_device,
)

__doc__ = _implementation.__doc__
__all__ = ["SUPPORTED", "OnnxCupyBackend", "OnnxCupyRep", "is_compatible", "prepare", "run_model",
           "run_node", "supports_device"]
