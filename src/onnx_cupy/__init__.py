"""onnx-cupy: exact ONNX pooling (AveragePool, LpPool, MaxPool and the global pools), MaxUnpool,
Hardmax, Resize, Upsample, GridSample, AffineGrid, RoiAlign and MaxRoiPool for CuPy arrays (own
CUDA kernels) with a NumPy path of the same
semantics."""
from __future__ import annotations

from .core.execution import backend, default_backend
from .core.warmup import warmup
from .core.workspaces import release_workspaces
from .elementwise import kernel as _elementwise  # noqa: F401 (registers its kernels)
from .grid.api import affine_grid, grid_sample
from .hardmax.api import hardmax
from .interop.nodes import run_node
from .interop.vjp import vjp
from .pool.api import (
    average_pool,
    global_average_pool,
    global_lp_pool,
    global_max_pool,
    lp_pool,
    max_pool,
)
from .resize.api import resize, upsample
from .roi.api import max_roi_pool, roi_align
from .unpool.api import max_unpool

__version__ = "0.1.0"
__all__ = ["__version__", "affine_grid", "average_pool", "backend", "default_backend",
           "global_average_pool", "global_lp_pool", "global_max_pool", "grid_sample", "hardmax",
           "lp_pool", "max_pool", "max_roi_pool", "max_unpool", "release_workspaces", "resize",
           "roi_align", "run_node", "upsample", "vjp", "warmup"]
