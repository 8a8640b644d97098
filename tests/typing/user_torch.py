"""A user's script on PyTorch tensors, for a type checker: every function of
onnx_cupy.nn.functional gives a torch.Tensor for a tensor (max pooling with return_indices a
pair of them), and a NumPy array keeps its type, with int64 indices. tests/test_typing.py runs
mypy on it (with a small torch stub where torch is absent), compares each revealed type with the
comment `# reveals: ...` at the end of its line and checks that every name of the module's
`__all__` is revealed; it also runs as is where torch is installed."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_cupy.nn import functional as F

if not TYPE_CHECKING:   # mypy knows reveal_type; at run time it only prints the type
    def reveal_type(value: Any) -> Any:
        print(type(value).__name__)
        return value

t = torch.rand(1, 2, 6, 6)
t1 = torch.rand(1, 2, 7)
t3 = torch.rand(1, 2, 4, 4, 4)
theta = torch.rand(1, 2, 3)
grid = torch.rand(1, 5, 5, 2)   # positions in [0, 1]: the lower right quarter
x = np.zeros((1, 2, 6, 6), dtype=np.float32)
line = np.zeros((1, 2, 6), dtype=np.float64)

reveal_type(F.avg_pool1d(t1, 3))  # reveals: torch.Tensor
reveal_type(F.avg_pool2d(t, 2))  # reveals: torch.Tensor
reveal_type(F.avg_pool3d(t3, 2))  # reveals: torch.Tensor
reveal_type(F.lp_pool1d(t1, 2, 3))  # reveals: torch.Tensor
reveal_type(F.lp_pool2d(t, 2, 2))  # reveals: torch.Tensor
reveal_type(F.lp_pool3d(t3, 2, 2))  # reveals: torch.Tensor
reveal_type(F.interpolate(t, scale_factor=2.0, mode="bilinear"))  # reveals: torch.Tensor
reveal_type(F.one_hot_argmax(t, dim=1))  # reveals: torch.Tensor
reveal_type(F.adaptive_avg_pool1d(t1, 3))  # reveals: torch.Tensor
reveal_type(F.adaptive_avg_pool2d(t, 3))  # reveals: torch.Tensor
reveal_type(F.adaptive_avg_pool3d(t3, 3))  # reveals: torch.Tensor
reveal_type(F.max_pool1d(t1, 2))  # reveals: torch.Tensor
reveal_type(F.max_pool2d(t, 2))  # reveals: torch.Tensor
reveal_type(F.max_pool2d(t, 2, return_indices=True))  # reveals: tuple[torch.Tensor, torch.Tensor]
reveal_type(F.max_pool3d(t3, 2, return_indices=True))  # reveals: tuple[torch.Tensor, torch.Tensor]
reveal_type(F.adaptive_max_pool1d(t1, 3))  # reveals: torch.Tensor
reveal_type(F.adaptive_max_pool2d(t, 3, return_indices=True))  # reveals: tuple[torch.Tensor, torch.Tensor]
reveal_type(F.adaptive_max_pool3d(t3, 3, return_indices=True))  # reveals: tuple[torch.Tensor, torch.Tensor]
reveal_type(F.max_unpool1d(*F.max_pool1d(t1, 2, return_indices=True), 2))  # reveals: torch.Tensor
reveal_type(F.max_unpool2d(*F.max_pool2d(t, 2, return_indices=True), 2))  # reveals: torch.Tensor
reveal_type(F.max_unpool3d(*F.max_pool3d(t3, 2, return_indices=True), 2))  # reveals: torch.Tensor
reveal_type(F.affine_grid(theta, [1, 2, 5, 5], align_corners=False))  # reveals: torch.Tensor
reveal_type(F.grid_sample(t, grid, align_corners=False))  # reveals: torch.Tensor
# a NumPy array keeps its type beside the tensors, with int64 indices
reveal_type(F.max_pool2d(x, 2, return_indices=True))  # reveals: tuple[ndarray[float32], ndarray[int64]]
reveal_type(F.adaptive_max_pool1d(line, 3, return_indices=True))  # reveals: tuple[ndarray[float64], ndarray[int64]]
