"""Bad MaxUnpool inputs: attribute values past int64 offsets, outputs and workspaces past the
machine's memory, and PyTorch-style calls whose messages blame the right argument; each a
ValueError or TypeError raised before anything is allocated."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.util import forbid_work

import onnx_cupy as oc
import onnx_cupy.nn.functional as F
from onnx_cupy.core import attributes

X = np.ones((1, 1, 4), np.float32)
I = np.array([[[0, 3, 5, 6]]])


@pytest.fixture
def no_work(monkeypatch):
    forbid_work(monkeypatch)


def test_kernel_2_31_workspace_refused_before_allocation(cpu_backend, no_work, monkeypatch):
    """kernel_shape=[2**31] asks for an output of 2**31 + 3 elements and the kernel path's
    winners beside it (12 bytes per element for float32): past a 16 GiB machine, a ValueError
    naming the attribute, the elements and the bytes, on every path."""
    monkeypatch.setattr(attributes, "memory_limit", lambda: 16 << 30)
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=r"MaxUnpool: the output and its workspace would have the shape "
                              r"\(1, 1, 2147483651\) \(from input shape \(1, 1, 4\), "
                              r"kernel_shape \[2147483648\], strides \[1\], pads \[0, 0\]\): "
                              r"2147483651 elements, 25769803812 bytes"):
        oc.max_unpool(X, I, kernel_shape=[2**31])


@pytest.mark.parametrize("kwargs, pattern", [
    ({"kernel_shape": [2**62]}, r"'kernel_shape' = \[4611686018427387904\]"),
    ({"kernel_shape": [2], "strides": [2**62]}, r"'strides' = \[4611686018427387904\]"),
    ({"kernel_shape": [2], "pads": [-2**62, -2**62]}, r"'pads' = \[-4611686018427387904, "),
    ({"kernel_shape": [2**64]}, r"'kernel_shape' values must fit in int64"),
])
def test_values_past_int64_offsets(cpu_backend, no_work, kwargs, pattern):
    with oc.backend(cpu_backend), pytest.raises(ValueError, match=pattern):
        oc.max_unpool(X, I, **kwargs)


def test_output_shape_past_memory(cpu_backend, no_work):
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=r"output_shape \[1, 1, 1099511627776\]\): 1099511627776 elements"):
        oc.max_unpool(X, I, np.array([1, 1, 2**40]), kernel_shape=[2], strides=[2])


def test_functional_names_indices(cpu_backend, no_work):
    """F.max_unpool3d(x, [[0]], 1): the indices are wrong, not X."""
    with oc.backend(cpu_backend), pytest.raises(
            TypeError, match=r"max_unpool3d: argument 'indices' must be an array like input, "
                             r"got builtins.list"):
        F.max_unpool3d(np.ones((1, 1, 1, 1, 1), np.float32), [[0]], 1)


def test_functional_names_kernel_size(cpu_backend, no_work):
    """F.max_unpool1d(x, i, 0): a kernel size of 0, not a stride (which defaults to it)."""
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=r"max_unpool1d: kernel_size must be greater than zero, but got "
                              r"kernel_size: \[0\]"):
        F.max_unpool1d(X, I, 0)


@pytest.mark.parametrize("kernel_size", [2**62, 2**64])
def test_functional_output_past_int64(cpu_backend, no_work, kernel_size):
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=rf"max_unpool1d: kernel_size \[{kernel_size}\], stride "
                              rf"\[{kernel_size}\] and padding \[0\] give the output lengths"):
        F.max_unpool1d(X, I, kernel_size)
