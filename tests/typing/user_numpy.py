"""A user's script on NumPy arrays, for a type checker: each operator returns numpy.ndarray.
tests/test_typing.py runs mypy on it and reads the revealed types; it also runs as is."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import onnx_cupy as oc
from onnx_cupy.nn.functional import avg_pool2d

if not TYPE_CHECKING:   # mypy knows reveal_type; at run time it only prints the type
    def reveal_type(value: Any) -> Any:
        print(type(value).__name__)
        return value

x = np.random.default_rng(0).standard_normal((1, 2, 6, 6)).astype(np.float32)
out = np.empty((1, 2, 3, 3), dtype=np.float32)

reveal_type(oc.average_pool(x, kernel_shape=[2, 2], strides=[2, 2]))
reveal_type(oc.lp_pool(x, kernel_shape=[2, 2], strides=[2, 2], p=2, out=out))
reveal_type(oc.max_pool(x, kernel_shape=[2, 2], strides=[2, 2]))
reveal_type(oc.max_pool(x, kernel_shape=[2, 2], return_indices=True)[0])
reveal_type(oc.global_average_pool(x))
reveal_type(oc.hardmax(x, axis=1))
reveal_type(oc.resize(x, scales=[1, 1, 2, 2], mode="linear"))
with oc.backend("emulated"):
    reveal_type(oc.average_pool(x, kernel_shape=[3, 3], opset=11))
reveal_type(oc.default_backend())
pooled = avg_pool2d(x, 2)   # the PyTorch-style functions take and give any array
