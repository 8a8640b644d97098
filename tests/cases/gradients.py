"""The gradients of the pooling family, MaxUnpool, Resize and Upsample (pool.api.gradient,
unpool.api.gradient, onnx_cupy.vjp of resize and upsample; the kernels pool_grad,
pool_adaptive_grad, unpool_grad and resize_grad), for the kernel checker: the forward families'
configurations (pool, maxpool, global_pool, adaptive, unpool, resize and upsample in floating
dtypes), each run forward on
the current backend, then backward with a seeded cotangent of Y's shape and dtype (stream 2 of
the configuration's generator). The saved output (LpPool's Y, MaxPool's Indices) is given to
every other configuration and left to the gradient's own forward in the rest; every fourth
AveragePool takes a divisor_override. An operator `op` is named `{op}Grad` (as onnxruntime's
training kernels are). EVERY: which forward configurations are taken; the quick subset is a few
float32 ones of each operator (few kernel instantiations to build)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_cupy as oc
from onnx_cupy import max_pool
from onnx_cupy.pool import api as pool_api
from onnx_cupy.unpool import api as unpool_api

from . import adaptive, global_pool, maxpool, pool, resize, unpool, upsample
from .common import Case, seeded, wanted_ops

SEED = 20261210
FORWARD = ("AveragePool", "LpPool", "MaxPool", "GlobalAveragePool", "GlobalLpPool",
           "GlobalMaxPool", "AdaptiveAveragePool", "AdaptiveMaxPool", "MaxUnpool", "Resize",
           "Upsample")
OPS = tuple(f"{op}Grad" for op in FORWARD)
# every EVERY[family]-th forward configuration is taken
EVERY = {"pool": 5, "maxpool": 2, "global_pool": 1, "adaptive": 1, "unpool": 4, "resize": 6,
         "upsample": 6}
FLOATS = ("float16", "bfloat16", "float32", "float64")   # the dtypes with gradients
QUICK = 4   # float32 cases of each operator in the quick subset


def cotangent(shape: tuple[int, ...], dtype: np.dtype, op: str, index: int) -> np.ndarray:
    """Configuration `index`'s cotangent of Y's shape and X's dtype: uniform in [-3, 3)."""
    rng = seeded(SEED, FORWARD.index(op) * 1_000_000 + index, 2)
    return rng.uniform(-3, 3, shape).astype(dtype)


def _pool(op: str, index: int) -> Any:
    c = pool.configuration(op, index)
    x = pool.sample(c)
    y = pool.run(c, x)
    override = (3 if index % 8 else -2,) if op == "AveragePool" and index % 4 == 0 else ()
    saved = y if op == "LpPool" and index % 2 else None
    dy = cotangent(y.shape, y.dtype, op, index)
    return pool_api.gradient(op, x, dy, (c.opset, c.attrs, *override), saved=saved)


def _maxpool(index: int) -> Any:
    c = maxpool.configs()[index]
    x = maxpool.input_values(c, index)
    y = max_pool(x, opset=c.opset, **c.attrs)
    saved = None
    if c.opset >= 8 and index % 2:
        saved = max_pool(x, opset=c.opset, return_indices=True, **c.attrs)[1]
    dy = cotangent(y.shape, y.dtype, "MaxPool", index)
    return pool_api.gradient("MaxPool", x, dy, (c.opset, c.attrs), saved=saved)


def _global(index: int) -> Any:
    c = global_pool.configurations()[index]
    x = global_pool.input_values(index)
    y = global_pool.run(c, x)
    saved = y if c.op == "GlobalLpPool" and index % 2 else None
    dy = cotangent(y.shape, y.dtype, c.op, index)
    return pool_api.gradient(c.op, x, dy, (c.version, {} if c.p is None else {"p": c.p}),
                             saved=saved)


def _adaptive(index: int) -> Any:
    c = adaptive.configuration(index)
    x = adaptive.sample(c)
    with np.errstate(invalid="ignore"):
        out = pool_api.adaptive_pool(c.op, x, c.sizes, return_indices=c.op == "AdaptiveMaxPool")
    y, saved = (out[0], out[1] if index % 2 else None) if isinstance(out, tuple) else (out, None)
    dy = cotangent(y.shape, y.dtype, c.op, index)
    return pool_api.gradient(c.op, x, dy, (c.sizes,), saved=saved)


def _unpool(index: int) -> Any:
    c = unpool.configuration(index)
    x, indices = unpool.sample(unpool.generator(index, 1), c)
    y = unpool.run(c, x, indices)
    dy = cotangent(y.shape, y.dtype, "MaxUnpool", index)
    return unpool_api.gradient(x, indices, dy, c.output_shape, c.opset, c.attrs)


def _plane(index: int) -> Any:
    c = unpool.plane_configuration(index)
    x, indices = unpool.plane_sample(c)
    k = len(c.kernel)
    if x.ndim == k + 1:   # unbatched: PyTorch's (C, *spatial)
        x, indices = x[None], indices[None]
    dy = cotangent(c.out_shape, x.dtype, "MaxUnpool", 500_000 + index)
    attrs = {"kernel_shape": list(c.kernel), "strides": list(c.stride),
             "pads": list(c.padding) * 2}
    return unpool_api.gradient(x, indices, dy, c.out_shape, 22, attrs, index_space="plane")


def _resize(index: int) -> Any:
    c = resize.configuration(index)
    x = resize.sample(resize.generator(index, 1), c)
    y = resize.run(c, x)
    dy = cotangent(y.shape, y.dtype, "Resize", index)
    vectors = [c.inputs.get(name) for name in ("roi", "scales", "sizes")]
    return oc.vjp(oc.resize, x, *vectors, cotangent=dy, opset=c.opset, **c.attrs)


def _upsample(index: int) -> Any:
    c = upsample.configuration(index)
    x = upsample.sample(upsample.generator(index, 1), c)
    y = upsample.run(c, x)
    dy = cotangent(y.shape, y.dtype, "Upsample", index)
    return oc.vjp(oc.upsample, x, np.array(c.scales, np.float32), cotangent=dy, mode=c.mode,
                  opset=c.opset)


Drawn = tuple[str, str, Callable[[], Any], np.dtype, int]


def _drawn() -> list[Drawn]:
    """(operator, name, call, X's dtype, spatial rank (0: a Resize or Upsample, any rank)) of
    every case, in order."""
    found: list[Drawn] = []
    for op in ("AveragePool", "LpPool"):
        for i in range(0, pool.CONFIGS, EVERY["pool"]):
            c = pool.configuration(op, i)
            found.append((op, c.name, functools.partial(_pool, op, i), c.dtype,
                          len(c.shape) - 2))
    for i in range(0, maxpool.CONFIGS, EVERY["maxpool"]):
        m = maxpool.configs()[i]
        if m.dtype.kind == "f":
            found.append(("MaxPool", maxpool.name(i), functools.partial(_maxpool, i), m.dtype,
                          len(m.shape) - 2))
    for i, g in enumerate(global_pool.configurations()):
        if i % EVERY["global_pool"] == 0:
            found.append((g.op, g.name, functools.partial(_global, i), g.dtype,
                          len(g.shape) - 2))
    for i in range(0, adaptive.COUNT + len(adaptive.EXTRAS), EVERY["adaptive"]):
        a = adaptive.configuration(i)
        found.append((a.op, a.name, functools.partial(_adaptive, i), a.dtype,
                      len(a.shape) - 2))
    for i in range(0, unpool.CONFIGS, EVERY["unpool"]):
        u = unpool.configuration(i)
        found.append(("MaxUnpool", u.name, functools.partial(_unpool, i), u.dtype,
                      len(u.shape) - 2))
    for i in range(0, resize.COUNT, EVERY["resize"]):
        r = resize.configuration(i)
        if r.dtype.name in FLOATS:
            found.append(("Resize", resize.name(i), functools.partial(_resize, i), r.dtype, 0))
    for i in range(0, upsample.CONFIGS, EVERY["upsample"]):
        u2 = upsample.configuration(i)
        if u2.dtype.name in FLOATS:
            found.append(("Upsample", u2.name, functools.partial(_upsample, i), u2.dtype, 0))
    for i in range(unpool.PLANE_CONFIGS):
        p = unpool.plane_configuration(i)
        if not p.invalid:   # indices outside their plane: refused on host arrays
            found.append(("MaxUnpool", p.name, functools.partial(_plane, i), p.dtype,
                          len(p.kernel)))
    return found


def cases(ops: set[str] | None = None) -> list[Case]:
    """The cases of the operators in `ops`; the quick ones: per operator the first QUICK
    float32 cases whose spatial ranks take 1, 2, 3 in turn (MaxUnpool's, Resize's and
    Upsample's first ones, whatever their rank)."""
    wanted = set(wanted_ops(OPS, ops))
    out, taken = [], dict.fromkeys(OPS, 0)
    for op, name, call, dtype, rank in _drawn():
        grad = f"{op}Grad"
        if grad not in wanted:
            continue
        quick = dtype == np.float32 and taken[grad] < QUICK and (
            op == "MaxUnpool" or rank in (0, taken[grad] % 3 + 1))
        taken[grad] += quick
        out.append(Case(grad, name, call, quick))
    return out
