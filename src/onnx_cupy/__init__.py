"""onnx-cupy: exact ONNX AveragePool, LpPool, Hardmax and Resize for CuPy arrays (own CUDA
kernels) with a NumPy path of the same semantics."""
from __future__ import annotations

from .core.execution import backend, default_backend
from .core.warmup import warmup
from .hardmax.api import hardmax
from .interop.nodes import run_node
from .pool.api import average_pool, lp_pool
from .resize.api import resize

__version__ = "0.1.0"
__all__ = ["__version__", "average_pool", "backend", "default_backend", "hardmax", "lp_pool",
           "resize", "run_node", "warmup"]
