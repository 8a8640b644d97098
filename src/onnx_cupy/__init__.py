"""onnx-cupy: exact ONNX AveragePool, LpPool, Hardmax and Resize for CuPy arrays (own CUDA
kernels) with a NumPy fallback of the same semantics."""
from __future__ import annotations

from .backends import backend, default_backend
from .node import run_node
from .operators import average_pool, hardmax, lp_pool, resize

__version__ = "0.1.0"
__all__ = ["average_pool", "lp_pool", "hardmax", "resize", "run_node", "backend",
           "default_backend", "__version__"]
