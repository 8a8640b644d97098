"""onnx_cupy.nn.functional: PyTorch's `torch.nn.functional` pooling and interpolation (and the
one-hot argmax idiom) on CuPy and NumPy arrays, with PyTorch's arguments and results. The
functions are defined in onnx_cupy.interop.functional, whose docstring this module shares."""
from ..interop import functional as _implementation
from ..interop.functional import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    interpolate,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
    one_hot_argmax,
)

__doc__ = _implementation.__doc__
__all__ = ["avg_pool1d", "avg_pool2d", "avg_pool3d", "interpolate", "lp_pool1d", "lp_pool2d",
           "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "one_hot_argmax"]
