"""A user's script on PyTorch tensors, for a type checker: each function of
onnx_cupy.nn.functional gives a torch.Tensor for a tensor (max pooling with return_indices a
pair of them), and a NumPy array keeps its type, with int64 indices. tests/test_typing.py runs
mypy on it (with a small torch stub where torch is absent) and reads the revealed types; it also
runs as is where torch is installed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_cupy.nn import functional as F

if not TYPE_CHECKING:   # mypy knows reveal_type; at run time it only prints the type
    def reveal_type(value: Any) -> Any:
        print(type(value).__name__)
        return value

t = torch.zeros(1, 2, 6, 6)
x = np.zeros((1, 2, 6, 6), dtype=np.float32)
line = np.zeros((1, 2, 6), dtype=np.float64)

reveal_type(F.avg_pool2d(t, 2))
reveal_type(F.interpolate(t, scale_factor=2.0, mode="bilinear"))
reveal_type(F.adaptive_avg_pool2d(t, 3))
reveal_type(F.max_pool2d(t, 2))
reveal_type(F.max_pool2d(t, 2, return_indices=True))
reveal_type(F.adaptive_max_pool2d(t, 3, return_indices=True))
reveal_type(F.max_pool2d(x, 2, return_indices=True))
reveal_type(F.adaptive_max_pool1d(line, 3, return_indices=True))
