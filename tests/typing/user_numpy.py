"""A user's script on NumPy arrays, for a type checker: it calls every public function of
onnx_cupy, onnx_cupy.nn.functional, onnx_cupy.ops, onnx_cupy.dask and onnx_cupy.onnx_backend,
and reveals each result's type. tests/test_typing.py runs `mypy --strict` on it and compares each
revealed type with the comment `# reveals: ...` at the end of its line (`ndarray[float32]` for a
NumPy array of that dtype); it also checks that every exported name is revealed here. It runs as
is, too.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
import onnx
from onnx import TensorProto, helper

import onnx_cupy as oc
import onnx_cupy.dask as ocd
import onnx_cupy.onnx_backend as ob
import onnx_cupy.ops as oco
from onnx_cupy.nn import functional as F

if not TYPE_CHECKING:   # mypy knows reveal_type; at run time it only prints the type
    def reveal_type(value: Any) -> Any:
        print(type(value).__name__)
        return value

rng = np.random.default_rng(0)
x = rng.standard_normal((1, 2, 6, 6)).astype(np.float32)
x64 = rng.standard_normal((1, 2, 6, 6))
x16 = x.astype(np.float16)
x8 = rng.integers(0, 255, (1, 2, 6, 6), dtype=np.uint8)
line = rng.standard_normal((1, 2, 7))
volume = rng.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
out = np.empty((1, 2, 3, 3), dtype=np.float32)
theta = np.array([[[0.8, -0.3, 0.1], [0.3, 0.8, 0.0]]], dtype=np.float32)
grid = rng.uniform(-1, 1, (1, 5, 5, 2)).astype(np.float32)

# onnx_cupy: a NumPy array in, a NumPy array of its dtype out
reveal_type(oc.__version__)  # reveals: str
reveal_type(oc.average_pool(x, kernel_shape=[2, 2], strides=[2, 2]))  # reveals: ndarray[float32]
reveal_type(oc.lp_pool(x, kernel_shape=[2, 2], strides=[2, 2], p=2, out=out))  # reveals: ndarray[float32]
reveal_type(oc.max_pool(x8, kernel_shape=[2, 2], strides=[2, 2]))  # reveals: ndarray[uint8]
m, idx = oc.max_pool(x, kernel_shape=[2, 2], return_indices=True)
reveal_type(m)  # reveals: ndarray[float32]
reveal_type(idx)  # reveals: ndarray[int64]
reveal_type(oc.max_pool(x16, kernel_shape=[3, 3], return_indices=True))  # reveals: tuple[ndarray[float16], ndarray[int64]]
reveal_type(oc.max_pool(x, kernel_shape=[2, 2], return_indices=bool(m.size)))  # reveals: ndarray[float32] | tuple[ndarray[float32], Any]
reveal_type(oc.max_unpool(m, idx, kernel_shape=[2, 2]))  # reveals: ndarray[float32]
boxes = np.array([[0.5, 1.0, 4.0, 5.5]], dtype=np.float32)
reveal_type(oc.roi_align(x, boxes, np.zeros(1, np.int64), output_height=2))  # reveals: ndarray[float32]
reveal_type(oc.max_roi_pool(x64, np.zeros((1, 5)), pooled_shape=[2, 2]))  # reveals: ndarray[float64]
reveal_type(oco.roi_align(x, [boxes], 2, aligned=True))  # reveals: ndarray[float32]
reveal_type(oco.roi_pool(x16, [boxes.astype(np.float16)], (2, 3)))  # reveals: ndarray[float16]
reveal_type(oc.global_average_pool(x64))  # reveals: ndarray[float64]
reveal_type(oc.global_max_pool(x16))  # reveals: ndarray[float16]
reveal_type(oc.global_lp_pool(x, p=3))  # reveals: ndarray[float32]
reveal_type(oc.hardmax(x64, axis=1))  # reveals: ndarray[float64]
reveal_type(oc.resize(x, scales=[1, 1, 2, 2], mode="linear"))  # reveals: ndarray[float32]
reveal_type(oc.upsample(x16, scales=[1, 1, 2, 2], opset=9))  # reveals: ndarray[float16]
reveal_type(oc.affine_grid(theta, [1, 2, 5, 5]))  # reveals: ndarray[float32]
reveal_type(oc.grid_sample(x64, grid, mode="cubic"))  # reveals: ndarray[float64]
reveal_type(oc.run_node(helper.make_node("Hardmax", ["X"], ["Y"]), [x]))  # reveals: list[Any]
reveal_type(oc.backend("emulated"))  # reveals: contextlib._GeneratorContextManager[None, None, None]
with oc.backend("numpy"):
    reveal_type(oc.average_pool(x, kernel_shape=[3, 3], opset=11))  # reveals: ndarray[float32]
reveal_type(oc.default_backend())  # reveals: str
reveal_type(oc.release_workspaces())  # reveals: int
reveal_type(oc.warmup("MaxPool", "float32", "emulated", dry_run=True))  # reveals: list[Warmed]
reveal_type(oc.vjp(oc.max_pool, x, cotangent=m, kernel_shape=[2, 2]))  # reveals: tuple[ndarray[float32]]
reveal_type(oc.vjp(oc.max_unpool, m, idx, cotangent=x, kernel_shape=[2, 2]))  # reveals: tuple[ndarray[float32], None]

# onnx_cupy.nn.functional: PyTorch's arguments, the array type kept (int64 indices)
reveal_type(F.avg_pool1d(line, 3))  # reveals: ndarray[float64]
reveal_type(F.avg_pool2d(x, 2))  # reveals: ndarray[float32]
reveal_type(F.avg_pool3d(volume, 2))  # reveals: ndarray[float32]
reveal_type(F.lp_pool1d(line, 2, 3))  # reveals: ndarray[float64]
reveal_type(F.lp_pool2d(x, 2, 2))  # reveals: ndarray[float32]
reveal_type(F.lp_pool3d(volume, 2, 2))  # reveals: ndarray[float32]
reveal_type(F.max_pool1d(line, 3))  # reveals: ndarray[float64]
reveal_type(F.max_pool2d(x, 2, return_indices=True))  # reveals: tuple[ndarray[float32], ndarray[int64]]
reveal_type(F.max_pool3d(volume, 2))  # reveals: ndarray[float32]
pooled, where = F.max_pool3d(volume, 2, return_indices=True)
reveal_type(where)  # reveals: ndarray[int64]
reveal_type(F.max_unpool1d(*F.max_pool1d(line, 2, return_indices=True), 2))  # reveals: ndarray[float64]
reveal_type(F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2))  # reveals: ndarray[float32]
reveal_type(F.max_unpool3d(pooled, where, 2))  # reveals: ndarray[float32]
reveal_type(F.adaptive_avg_pool1d(line, 3))  # reveals: ndarray[float64]
reveal_type(F.adaptive_avg_pool2d(x16, 4))  # reveals: ndarray[float16]
reveal_type(F.adaptive_avg_pool3d(volume, 3))  # reveals: ndarray[float32]
reveal_type(F.adaptive_max_pool1d(line, 3, return_indices=True))  # reveals: tuple[ndarray[float64], ndarray[int64]]
reveal_type(F.adaptive_max_pool2d(x, 4))  # reveals: ndarray[float32]
reveal_type(F.adaptive_max_pool3d(volume, 3, return_indices=True))  # reveals: tuple[ndarray[float32], ndarray[int64]]
reveal_type(F.interpolate(x, scale_factor=2.0, mode="bilinear"))  # reveals: ndarray[float32]
reveal_type(F.interpolate(x64, size=(4, 4), mode="area"))  # reveals: ndarray[float64]
reveal_type(F.one_hot_argmax(x, dim=1))  # reveals: ndarray[float32]
reveal_type(F.affine_grid(theta, [1, 2, 5, 5], align_corners=False))  # reveals: ndarray[float32]
reveal_type(F.grid_sample(x, grid, align_corners=False))  # reveals: ndarray[float32]

# onnx_cupy.dask: a dask array in, a lazy dask array out
lazy = da.from_array(x, chunks=(1, 1, 6, 6))
reveal_type(ocd.average_pool(lazy, kernel_shape=[2, 2]))  # reveals: dask.array.core.Array
reveal_type(ocd.lp_pool(lazy, kernel_shape=[2, 2], p=1))  # reveals: dask.array.core.Array
reveal_type(ocd.max_pool(lazy, kernel_shape=[2, 2]))  # reveals: dask.array.core.Array
lazy_m, lazy_idx = ocd.max_pool(lazy, kernel_shape=[2, 2], strides=[2, 2], return_indices=True)
reveal_type(lazy_idx)  # reveals: dask.array.core.Array
reveal_type(ocd.max_unpool(lazy_m, lazy_idx, kernel_shape=[2, 2], strides=[2, 2]))  # reveals: dask.array.core.Array
reveal_type(ocd.roi_align(lazy, boxes, np.zeros(1, np.int64)))  # reveals: dask.array.core.Array
reveal_type(ocd.max_roi_pool(lazy, np.zeros((1, 5), np.float32), pooled_shape=[1, 1]))  # reveals: dask.array.core.Array
reveal_type(ocd.global_average_pool(lazy))  # reveals: dask.array.core.Array
reveal_type(ocd.global_max_pool(lazy))  # reveals: dask.array.core.Array
reveal_type(ocd.global_lp_pool(lazy, p=2))  # reveals: dask.array.core.Array
reveal_type(ocd.hardmax(lazy, axis=-1))  # reveals: dask.array.core.Array
reveal_type(ocd.resize(lazy, scales=[1, 1, 2, 2]))  # reveals: dask.array.core.Array
reveal_type(ocd.upsample(lazy, scales=[1, 1, 2, 2]))  # reveals: dask.array.core.Array
reveal_type(ocd.affine_grid(da.from_array(theta), [1, 2, 5, 5]))  # reveals: dask.array.core.Array
reveal_type(ocd.grid_sample(lazy, da.from_array(grid)))  # reveals: dask.array.core.Array

# onnx_cupy.onnx_backend: models of these operators through onnx.backend
node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2])
model = helper.make_model(helper.make_graph(
    [node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 3])],
    [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1, 2])]),
    opset_imports=[helper.make_opsetid("", 19)])
feeds = [np.array([[[1, 2, 4]]], np.float32)]
reveal_type(ob.SUPPORTED)  # reveals: tuple[str, ...]
reveal_type(ob.supports_device("CPU"))  # reveals: bool
reveal_type(ob.is_compatible(model))  # reveals: bool
rep = ob.prepare(model, "CPU")
reveal_type(ob.prepare(model, device="CPU"))  # reveals: onnx_cupy.interop.onnx_backend.OnnxCupyRep
reveal_type(rep)  # reveals: onnx_cupy.interop.onnx_backend.OnnxCupyRep
reveal_type(rep.run(feeds))  # reveals: tuple[ndarray[Any], ...]
reveal_type(ob.run_model(model, feeds))  # reveals: tuple[ndarray[Any], ...]
reveal_type(ob.run_node(node, feeds))  # reveals: tuple[ndarray[Any], ...]
reveal_type(ob.OnnxCupyBackend.prepare(model))  # reveals: onnx_cupy.interop.onnx_backend.OnnxCupyRep
reveal_type(ob.OnnxCupyRep([node], ["X"], ["Y"], {}, 19, "CPU").run_single(feeds))  # reveals: tuple[ndarray[Any], ...]
assert isinstance(model, onnx.ModelProto)
