"""MaxUnpool, opset versions 9, 11 and 22.

  Y = 0;  Y[position of I[e] in U] = X[e]   for every element e of X,
where U, the unpooled shape, is (N, C, U1, ..., Uk) with
  Ui = (Di - 1) * strides_i - (pads_begin_i + pads_end_i) + kernel_shape_i
(MaxPool's output length solved for its input length), and I holds flat row-major indices into
U, as MaxPool's Indices output writes them. Y has the shape U, or the `output_shape` input, which
must hold U on every spatial axis and keep N and C: Y is then U's block at the start of each
axis, zeros after it (ONNX's node test maxunpool_export_with_output_shape and onnx.reference;
onnxruntime reads the indices in output_shape instead: docs/semantics.md). Where several elements
of X name one position, the last in X's row-major order wins (onnxruntime and onnx.reference
write in that order). An index outside [0, prod(U)) is an error on host arrays, as in
onnxruntime; the GPU path, which could only check by synchronizing, skips it. A length Ui of 0
gives an empty output, a negative one a ValueError. Pads may be negative (both runtimes take
them: the output grows).

I's flat indices address one of two index spaces (`index_space`):
  "unpooled"  ONNX's: U, as above;
  "plane"     PyTorch's (max_unpool1d/2d/3d): each index counts positions within its own (n, c)
              plane of Y, i.e. the flat index into Y of element e of X is
                I[e] + (e // prod(X.shape[2:])) * prod(Y.shape[2:]),
              valid where 0 <= I[e] < prod(Y.shape[2:]) (the kernels add the plane's start
              themselves); an output without elements reads no index, as PyTorch.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import arrays, attributes, dtypes, opsets
from ..pool.plan import MAX_SPATIAL  # MaxUnpool inverts MaxPool: as many spatial axes

OP = "MaxUnpool"
# the version that brought each dtype of X (read by core.dtypes.check); I is int64 at every one
DTYPES = {**dtypes.since(9, *dtypes.FLOATS), **dtypes.since(22, "bfloat16")}
INDEX_DTYPE = np.dtype(np.int64)
# what I's flat indices address: ONNX's unpooled shape U, the output's shape, or (PyTorch) one
# (n, c) plane of the output (see the module docstring)
INDEX_SPACES = ("unpooled", "plane")


@dataclass(frozen=True, eq=False)
class UnpoolPlan:
    """Everything both execution paths need, computed once on the host (hashed by identity).

    `remap` turns a flat index into `index_shape` (U, Y's shape, or one plane of Y's) into an
    element offset of Y (of its plane, in the "plane" space): the axes of the index shape,
    merged where the output keeps their length (from the second axis on), each as (extent,
    element stride in Y); with no axis whose length differs it is one axis of stride 1."""

    version: int
    in_shape: tuple[int, ...]      # X's and I's
    out_shape: tuple[int, ...]
    index_shape: tuple[int, ...]   # the shape I's flat indices address (per plane: spatial)
    remap: tuple[tuple[int, int], ...]
    index_space: str = "unpooled"  # one of INDEX_SPACES
    op = OP                        # the operator served (not a field)

    @property
    def per_plane(self) -> bool:
        """The indices count positions within their own (n, c) plane of Y ("plane")."""
        return self.index_space == "plane"

    @property
    def index_total(self) -> int:
        """Valid indices are [0, index_total)."""
        return math.prod(self.index_shape)


def unpooled_length(n: int, k: int, s: int, b: int, e: int) -> int:
    """The unpooled length of a spatial axis of length `n` (kernel `k`, stride `s`, pads `b`,
    `e`): (n - 1) * s - (b + e) + k."""
    return (n - 1) * s - (b + e) + k


def remap(index_shape: tuple[int, ...], out_shape: tuple[int, ...]
          ) -> tuple[tuple[int, int], ...]:
    """(extent, element stride in Y) per merged axis of `index_shape` (see UnpoolPlan)."""
    merged: list[tuple[int, int]] = []
    for n, m, stride in zip(index_shape, out_shape, arrays.c_strides(out_shape)):
        if merged and n == m:  # c * n + c' addresses Y as c * (m * stride) + c' * stride
            merged[-1] = (merged[-1][0] * n, stride)
        else:
            merged.append((n, stride))
    return tuple(merged)


def _output_shape(value: Any) -> tuple[int, ...] | None:
    """The optional output_shape input read on the host: a 1-D sequence or array of ints."""
    a = arrays.host_vector(OP, "output_shape", value, integers=True)
    return None if a is None else tuple(int(v) for v in a.tolist())


@functools.lru_cache(maxsize=512, typed=True)
def plan(opset: int, shape: tuple[int, ...], dtype: np.dtype, index_dtype: np.dtype,
         index_shape: tuple[int, ...], output_shape: tuple[int, ...] | None, kernel_shape: Any,
         strides: Any, pads: Any, index_space: str = "unpooled") -> UnpoolPlan:
    """Validate MaxUnpool's inputs and attributes for the version in force at `opset`; the
    output shape and the index remap (see the module docstring)."""
    version = opsets.version(OP, opset)
    if len(shape) < 3:
        raise ValueError(f"{OP}: X must have rank >= 3 ([N, C, D1, ...]), got shape {shape}")
    k = len(shape) - 2
    if k > MAX_SPATIAL:
        raise ValueError(f"{OP}: at most {MAX_SPATIAL} spatial dimensions are supported, got {k}")
    dtypes.check(OP, DTYPES, dtype, version, opset)
    if np.dtype(index_dtype).newbyteorder("=") != INDEX_DTYPE:   # either byte order
        raise TypeError(f"{OP}: input 'I' must be int64 (tensor(int64)), got dtype {index_dtype}")
    if index_shape != shape:
        raise ValueError(f"{OP}: input 'I' must have X's shape {shape}, got {index_shape}")
    if index_space not in INDEX_SPACES:
        raise ValueError(f"{OP}: index_space must be one of {INDEX_SPACES}, got {index_space!r}")
    if kernel_shape is None:
        raise ValueError(f"{OP}: attribute 'kernel_shape' is required")
    per = f"for an input with {k} spatial dimensions"
    kernel = attributes.ints(OP, "kernel_shape", kernel_shape, k, 1, per)
    steps = (1,) * k if strides is None else attributes.ints(OP, "strides", strides, k, 1, per)
    pad = (0,) * (2 * k) if pads is None else attributes.ints(OP, "pads", pads, 2 * k, None, per)
    for i, (n, kk, s) in enumerate(zip(shape[2:], kernel, steps)):
        b, e = pad[i], pad[k + i]
        name, values = max((kk, "kernel_shape", kernel), ((n - 1) * s, "strides", steps),
                           (abs(b) + abs(e), "pads", pad))[1:]
        attributes.extent(OP, (n - 1) * s + abs(b) + abs(e) + kk,
                          f"positions along spatial axis {i} up to",
                          f"attribute '{name}' = {list(values)} (input length {n})")
    unpooled = [unpooled_length(n, kk, s, pad[i], pad[k + i])
                for i, (n, kk, s) in enumerate(zip(shape[2:], kernel, steps))]
    bad = next((i for i, u in enumerate(unpooled) if u < 0), None)
    if bad is not None and (index_space == "unpooled" or output_shape is None):
        raise ValueError(
            f"{OP}: the unpooled length along spatial axis {bad} is {unpooled[bad]} < 0 (input "
            f"{shape[2 + bad]}, kernel {kernel[bad]}, stride {steps[bad]}, pads "
            f"{pad[bad]}+{pad[k + bad]}: (n - 1) * stride - pads + kernel)")
    u = (*shape[:2], *(max(n, 0) for n in unpooled))   # (negative only with indices elsewhere)
    out = u if output_shape is None else _checked_output(output_shape, u, shape, index_space)
    # the output, and the kernel path's winners (up to 8 bytes per output element) beside it
    attributes.fits(OP, out, np.dtype(f"V{dtype.itemsize + 8}"), f"input shape {shape}, "
                    f"kernel_shape {list(kernel)}, strides {list(steps)}, pads {list(pad)}"
                    f"{'' if output_shape is None else f' and output_shape {list(out)}'}",
                    "the output and its workspace")
    if index_space == "plane":   # one plane of Y, offsets within it
        return UnpoolPlan(version, shape, out, out[2:], remap(out[2:], out[2:]), index_space)
    return UnpoolPlan(version, shape, out, u, remap(u, out), index_space)


def _checked_output(output_shape: tuple[int, ...], unpooled: tuple[int, ...],
                    shape: tuple[int, ...], index_space: str) -> tuple[int, ...]:
    """output_shape validated: X's rank, N and C, lengths >= 0, and (indices into U) U's length
    at least on every spatial axis."""
    if len(output_shape) != len(shape):
        raise ValueError(f"{OP}: input 'output_shape' has {len(output_shape)} values, expected "
                         f"{len(shape)} (the rank of X): {list(output_shape)}")
    if output_shape[:2] != shape[:2]:
        raise ValueError(f"{OP}: input 'output_shape' {list(output_shape)} must keep X's batch "
                         f"and channel dimensions {list(shape[:2])}")
    if any(m < 0 for m in output_shape):
        raise ValueError(f"{OP}: input 'output_shape' values must be >= 0, got "
                         f"{list(output_shape)}")
    short = [i for i, (m, n) in enumerate(zip(output_shape[2:], unpooled[2:])) if m < n]
    if index_space == "unpooled" and short:
        raise ValueError(
            f"{OP}: input 'output_shape' {list(output_shape)} is smaller than the unpooled shape "
            f"{list(unpooled)} (from kernel_shape, strides and pads) along spatial axis "
            f"{short[0]}: the indices address the unpooled shape, which must fit in the output")
    return output_shape


def make(shape: tuple[int, ...], dtype: Any, index_shape: tuple[int, ...], index_dtype: Any,
            output_shape: Any, opset: int, *, kernel_shape: Any = None, strides: Any = None,
            pads: Any = None, index_space: str = "unpooled") -> UnpoolPlan:
    """The plan of a MaxUnpool call: X's shape and dtype, I's shape and dtype, the output_shape
    input (read on the host; None: not given), the attributes."""
    kernel, steps, pad = (None if v is None else attributes.ints(OP, name, v) for name, v in (
        ("kernel_shape", kernel_shape), ("strides", strides), ("pads", pads)))
    return attributes.cached(plan, opset, tuple(shape), np.dtype(dtype), np.dtype(index_dtype),
                             tuple(index_shape), _output_shape(output_shape), kernel, steps, pad,
                             index_space)
