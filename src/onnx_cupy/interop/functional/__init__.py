"""PyTorch-style functions on CuPy and NumPy arrays and PyTorch tensors: `torch.nn.functional`'s
pooling (adaptive pooling included) and interpolation (and the one-hot argmax idiom) with
PyTorch's argument names, order, defaults, errors and results, built on the ONNX operators'
plans and the pool family's adaptive pooling; public as `onnx_cupy.nn.functional`.

Arrays are channels-first, (N, C, *spatial) (or (C, *spatial) where PyTorch takes an unbatched
input). A PyTorch tensor in gives tensors out on its device, zero-copy through DLPack (a CPU tensor
runs the NumPy path, a CUDA tensor the CuPy path; interop/tensors.py); a tensor that requires grad
records a graph node through the pooling functions and interpolate (interop/autograd.py), and is a
TypeError naming the function for the others. Each function names the ONNX attributes it runs with
and PyTorch's quirks it reproduces; docs/pytorch.md maps every call to what an exporter writes.
"""
from __future__ import annotations

from . import gradients  # noqa: F401  (enters the functions' gradients)
from .adaptive import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
)
from .argmax import one_hot_argmax
from .grid import affine_grid, grid_sample
from .interpolation import interpolate
from .pooling import (
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from .unpool import max_unpool1d, max_unpool2d, max_unpool3d

__all__ = ["affine_grid", "avg_pool1d", "avg_pool2d", "avg_pool3d", "grid_sample", "interpolate",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "one_hot_argmax",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"]

# The public functions are this module's, wherever they are defined: their reprs, pickles, the
# API pages and doctest.testmod of this module name and find them here.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
