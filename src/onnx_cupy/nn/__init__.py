"""onnx_cupy.nn: PyTorch-style functions (onnx_cupy.nn.functional mirrors torch.nn.functional)."""
from . import functional

__all__ = ["functional"]
