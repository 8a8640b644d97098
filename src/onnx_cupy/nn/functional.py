"""onnx_cupy.nn.functional: PyTorch's `torch.nn.functional` pooling and interpolation (and the
one-hot argmax idiom) on CuPy and NumPy arrays, with PyTorch's arguments and results. The
functions are defined in onnx_cupy.interop.functional, whose docstring this module shares."""
from ..interop import functional as _implementation
from ..interop.functional import *  # every name of its __all__

__all__ = _implementation.__all__
__doc__ = _implementation.__doc__
