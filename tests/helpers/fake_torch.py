"""A stand-in for PyTorch's tensors, for testing the PyTorch layer's tensor intake
(onnx_cupy.interop.tensors) where torch is not installed: a `Tensor` over a NumPy array that
speaks DLPack as torch.Tensor does (a CPU tensor exports its buffer; a bfloat16 one cannot be
read by NumPy's DLPack reader; one that requires grad refuses with BufferError; a CUDA one
says so in `__dlpack_device__`), `view(dtype)`, and this module's `from_dlpack`, `int16` and
`bfloat16`, where the layer looks for them (the module that defines the tensor's type)."""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

int16 = np.dtype(np.int16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
_CPU, _CUDA = 1, 2
received: list[Any] = []   # what from_dlpack was given, in order


class Tensor:
    """A tensor over `data` (a NumPy array: the CPU memory it exports, or, for a CUDA tensor,
    the host image of its device memory)."""

    def __init__(self, data: np.ndarray, requires_grad: bool = False, cuda: bool = False) -> None:
        self.data, self.requires_grad, self.cuda = data, requires_grad, cuda

    dtype = property(lambda self: self.data.dtype)
    shape = property(lambda self: self.data.shape)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_CUDA if self.cuda else _CPU, 0)

    def __dlpack__(self, **kwargs: Any) -> Any:
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self.cuda:
            raise BufferError("a CUDA tensor's capsule is read by CuPy only")
        if self.data.dtype == bfloat16:
            raise RuntimeError("Unsupported dtype in DLTensor.")   # as NumPy reads torch's
        return self.data.__dlpack__(**kwargs)

    def view(self, dtype: np.dtype) -> Tensor:
        return Tensor(self.data.view(dtype), self.requires_grad, self.cuda)


def from_dlpack(array: Any) -> Tensor:
    """A tensor over a NumPy array's memory (zero-copy), or a CUDA tensor over a (stand-in)
    CuPy array's."""
    received.append(array)
    if isinstance(array, np.ndarray):
        return Tensor(np.from_dlpack(array))
    return Tensor(array.host, cuda=True)
