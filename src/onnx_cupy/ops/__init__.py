"""onnx_cupy.ops: torchvision.ops' region pooling (`roi_align`, `roi_pool`) on CuPy and NumPy
arrays and PyTorch tensors, with torchvision's arguments and results. The functions are defined
in onnx_cupy.interop.ops, whose docstring this module shares."""
from ..interop import ops as _implementation
from ..interop.ops import *  # every name of its __all__

__all__ = _implementation.__all__
__doc__ = _implementation.__doc__
