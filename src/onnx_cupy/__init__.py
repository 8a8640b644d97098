"""onnx-cupy: exact ONNX AveragePool, LpPool, Hardmax and Resize for CuPy arrays (own CUDA
kernels) with a NumPy fallback of the same semantics."""
from __future__ import annotations

from .backends import backend, default_backend
from .node import run_node
from .operators import average_pool, hardmax, lp_pool, resize

__version__ = "0.1.0"
__all__ = ["__version__", "average_pool", "backend", "default_backend", "hardmax", "lp_pool",
           "resize", "run_node"]
