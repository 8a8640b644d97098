"""A seeded fuzz of the public functions, run_node and nn.functional with a new user's mistakes:
wrong types, dtypes, ranks, layouts, attribute values, huge sizes and out= arrays. `vjp` is
fuzzed as the gradient of a pooling function or of max_unpool, its mistakes those of X and of
the forward's attributes.

`draw(seed, i)` makes call i of a seed's sequence (the same call in every process): a valid call
of one function, then at most one mistake, with the names an error must mention. `judge` runs
it on one path and returns the problems found: an exception other than TypeError/ValueError (or
the NotImplementedError/RuntimeError that PyTorch raises, for nn.functional), a message naming
none of the offending argument's names, an input changed, or an accepted call whose result
differs from the NumPy path's on native contiguous copies of the inputs.

`python -m helpers.fuzz PATH SEED I...` runs the calls in a worker process and prints a JSON
line as each starts and as each ends, so that the parent (`run`) can tell which call crashed
the worker or hung, and start a new worker for the rest.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import select
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

PATHS = ("numpy", "emulated", "cupy")   # cupy: on the executing stand-in where no GPU is seen
CALL_SECONDS = 60.0   # a call still running after this long hangs (first compiles included)
ADDRESS_SPACE = 8 << 30   # a worker's virtual memory: a runaway allocation fails, never the machine
MEMORY = 256 << 20   # the memory a worker's library takes the machine to have (see `main`)
# the mistakes (one per call, or none), as the `kind` of a call
KINDS = ("valid", "layout", "type", "dtype", "rank", "value", "attr_type", "huge", "out", "node")
# layouts of a valid X: (name, whether the kernel path reads it as the NumPy path does today)
LAYOUTS = ("contiguous", "sliced", "reversed", "fortran", "broadcast", "memmap", "subclass",
           "unaligned", "big_endian", "readonly")
# layouts the random fuzz keeps to the NumPy path: none (the kernel path reads every layout)
KERNEL_POLICY_LAYOUTS: frozenset[str] = frozenset()


@dataclass
class Call:
    """One call: `fn` (a name in FUNCTIONS) with `args` and `kwargs`; `names`, where the call
    holds a mistake, the words one of which an error message must hold (lower case), and the
    arrays among the arguments (by position or keyword) that it must leave unchanged.
    `function`: what runs in place of the library's function of that name (a stand-in with a
    bug that the judge must find), in the call and in its reference run alike."""

    fn: str
    args: list[Any]
    kwargs: dict[str, Any]
    kind: str = "valid"
    what: str = ""
    names: tuple[str, ...] = ()
    torch: bool = False   # an nn.functional call: PyTorch's error types are allowed too
    layout: str = "contiguous"
    keep: list[Any] = field(default_factory=list)
    function: Callable[..., Any] | None = None
    of: str = ""   # vjp: the name of the function differentiated (args: its inputs)

    def describe(self) -> str:
        name = f"{self.fn}({self.of})" if self.of else self.fn
        return f"{name} [{self.kind}: {self.what or self.layout}]"


def _x(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    dtype = np.dtype(dtype or rng.choice(["float32", "float32", "float32", "float64", "float16"]))
    x = rng.standard_normal(shape).astype(dtype)
    if x.size and rng.random() < 0.15:   # a NaN or an inf somewhere
        x.flat[rng.integers(x.size)] = rng.choice([np.nan, np.inf, -np.inf])
    return x


def _spatial(rng: np.random.Generator, k: int, low: int = 1, high: int = 7) -> tuple[int, ...]:
    return tuple(int(v) for v in rng.integers(low, high + 1, k))


def _window(rng: np.random.Generator, sp: tuple[int, ...]) -> tuple[list[int], list[int],
                                                                   list[int]]:
    """kernel, strides and begin/end pads that give every axis an output of length >= 1."""
    kernel = [int(rng.integers(1, n + 1)) if n > 1 else 1 for n in sp]
    strides = [int(rng.integers(1, 3)) for _ in sp]
    pads = [int(rng.integers(0, (k + 1) // 2)) for k in kernel for _ in range(1)]
    return kernel, strides, pads + pads


# ---------------------------------------------------------------- valid calls, per function

Maker = Callable[[np.random.Generator], Call]


def _pool(op: str) -> Maker:
    def make(rng: np.random.Generator) -> Call:
        k = int(rng.integers(1, 4))
        x = _x(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *_spatial(rng, k)))
        kernel, strides, pads = _window(rng, x.shape[2:])
        kw: dict[str, Any] = {"kernel_shape": kernel, "strides": strides, "pads": pads}
        if op == "lp_pool":
            kw["p"] = int(rng.integers(1, 4))
        if op == "average_pool":
            kw["count_include_pad"] = int(rng.integers(0, 2))
        if op == "max_pool":
            kw["storage_order"] = int(rng.integers(0, 2))
            kw["return_indices"] = bool(rng.integers(0, 2))
        return Call(op, [x], kw)
    return make


def _global(op: str) -> Maker:
    def make(rng: np.random.Generator) -> Call:
        x = _x(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                     *_spatial(rng, int(rng.integers(1, 4)))))
        return Call(op, [x], {"p": int(rng.integers(1, 4))} if op == "global_lp_pool" else {})
    return make


def _hardmax(rng: np.random.Generator) -> Call:
    x = _x(rng, _spatial(rng, int(rng.integers(1, 5)), 1, 5))
    return Call("hardmax", [x], {"axis": int(rng.integers(-x.ndim, x.ndim))})


def _resize(rng: np.random.Generator) -> Call:
    x = _x(rng, (1, int(rng.integers(1, 3)), *_spatial(rng, 2, 2, 6)))
    mode = str(rng.choice(["nearest", "linear", "cubic"]))
    if rng.random() < 0.5:
        scales = np.array([1, 1, *rng.choice([0.5, 1.5, 2.0, 3.0], 2)], np.float32)
        return Call("resize", [x], {"scales": scales, "mode": mode})
    sizes = np.array([*x.shape[:2], *rng.integers(1, 9, 2)], np.int64)
    return Call("resize", [x], {"sizes": sizes, "mode": mode})


def _upsample(rng: np.random.Generator) -> Call:
    x = _x(rng, (1, int(rng.integers(1, 3)), *_spatial(rng, 2, 2, 5)))
    return Call("upsample", [x, np.array([1, 1, 2, 3], np.float32)],
                {"mode": str(rng.choice(["nearest", "linear"]))})


def _grid_sample(rng: np.random.Generator) -> Call:
    n = int(rng.integers(1, 3))
    x = _x(rng, (n, int(rng.integers(1, 3)), *_spatial(rng, 2, 2, 6)))
    grid = rng.uniform(-1.2, 1.2, (n, *_spatial(rng, 2, 1, 4), 2)).astype(x.dtype)
    return Call("grid_sample", [x, grid], {"mode": str(rng.choice(["linear", "nearest",
                                                                    "cubic"]))})


def _affine_grid(rng: np.random.Generator) -> Call:
    n = int(rng.integers(1, 3))
    theta = rng.uniform(-1, 1, (n, 2, 3)).astype(np.float32)
    return Call("affine_grid", [theta, [n, 1, *_spatial(rng, 2, 1, 5)]],
                {"align_corners": int(rng.integers(0, 2))})


def _unpool_inputs(rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray,
                                                                 list[int]]:
    """X, I (a window-2 stride-2 MaxPool's indices into U, per plane where `k` > 0 marks
    PyTorch's index space) and U's spatial lengths."""
    sp = _spatial(rng, max(k, 1), 1, 4)
    x = _x(rng, (1, int(rng.integers(1, 3)), *sp))
    u = [2 * n for n in sp]
    pos = np.zeros(x.shape, np.int64)
    for d, n in enumerate(sp):   # row-major position within the plane of U
        coord = 2 * np.arange(n) + rng.integers(0, 2, n)
        pos += coord.reshape((-1,) + (1,) * (len(sp) - 1 - d)) * math.prod(u[d + 1:])
    return x, pos, u


def _max_unpool(rng: np.random.Generator) -> Call:
    x, pos, u = _unpool_inputs(rng, 0)
    planes = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * (x.ndim - 2))
    i = pos + planes * math.prod(u)
    nd = x.ndim - 2
    return Call("max_unpool", [x, i], {"kernel_shape": [2] * nd, "strides": [2] * nd})


def _regions(rng: np.random.Generator, x: np.ndarray) -> np.ndarray:
    """0 to 4 boxes (x1, y1, x2, y2) of X's dtype, some reaching past X's image."""
    h, w = x.shape[2:]
    corner = rng.uniform(-1, [w, h], (int(rng.integers(0, 5)), 2))
    return np.concatenate([corner, corner + rng.uniform(0, 4, corner.shape)], 1).astype(x.dtype)


def _roi_align(rng: np.random.Generator) -> Call:
    x = _x(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *_spatial(rng, 2, 1, 8)))
    boxes = _regions(rng, x)
    return Call("roi_align", [x, boxes, rng.integers(0, x.shape[0], len(boxes))],
                {"output_height": int(rng.integers(1, 4)), "output_width": int(rng.integers(1, 4)),
                 "sampling_ratio": int(rng.integers(0, 3)), "mode": str(rng.choice(["avg", "max"])),
                 "spatial_scale": float(rng.choice([1.0, 0.5]))})


def _max_roi_pool(rng: np.random.Generator) -> Call:
    x = _x(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *_spatial(rng, 2, 1, 8)))
    boxes = _regions(rng, x)
    batch = rng.integers(0, x.shape[0], (len(boxes), 1)).astype(x.dtype)
    return Call("max_roi_pool", [x, np.concatenate([batch, boxes], 1)],
                {"pooled_shape": [int(rng.integers(1, 4)), int(rng.integers(1, 4))]})


def _run_node(rng: np.random.Generator) -> Call:
    from onnx import helper

    op = str(rng.choice(["AveragePool", "LpPool", "MaxPool", "Hardmax", "GlobalMaxPool"]))
    x = _x(rng, (1, 2, *_spatial(rng, 2, 2, 5)))
    attrs: dict[str, Any] = {"kernel_shape": [2, 2]} if "Pool" in op and "Global" not in op \
        else {}
    if op == "LpPool":
        attrs["p"] = 2
    node = helper.make_node(op, ["X"], ["Y"], **attrs)
    return Call("run_node", [node, [x]], {"opset": 22})


def _f_pool(name: str, k: int) -> Maker:
    def make(rng: np.random.Generator) -> Call:
        x = _x(rng, (int(rng.integers(1, 3)), int(rng.integers(1, 3)), *_spatial(rng, k, 2, 6)))
        kernel = [int(rng.integers(1, min(x.shape[2:]) + 1))] * k
        kw: dict[str, Any] = {"kernel_size": kernel, "stride": [int(rng.integers(1, 3))] * k}
        args: list[Any] = [x]
        if name.startswith("lp"):
            args.append(int(rng.integers(1, 4)))
        elif name.startswith(("avg", "max")):
            kw["padding"] = [int(rng.integers(0, kernel[0] // 2 + 1))] * k
            kw["ceil_mode"] = bool(rng.integers(0, 2))
        return Call(f"F.{name}", args, kw, torch=True)
    return make


def _f_adaptive(name: str, k: int) -> Maker:
    def make(rng: np.random.Generator) -> Call:
        x = _x(rng, (1, int(rng.integers(1, 3)), *_spatial(rng, k, 1, 7)))
        return Call(f"F.{name}", [x, [int(v) for v in rng.integers(1, 5, k)]], {}, torch=True)
    return make


def _f_interpolate(rng: np.random.Generator) -> Call:
    x = _x(rng, (1, int(rng.integers(1, 3)), *_spatial(rng, 2, 2, 6)))
    mode = str(rng.choice(["nearest", "bilinear", "bicubic", "area", "nearest-exact"]))
    kw: dict[str, Any] = {"mode": mode, "size": [int(v) for v in rng.integers(1, 9, 2)]}
    if mode in ("bilinear", "bicubic"):
        kw["align_corners"] = bool(rng.integers(0, 2))
    return Call("F.interpolate", [x], kw, torch=True)


def _f_grid_sample(rng: np.random.Generator) -> Call:
    call = _grid_sample(rng)
    return Call("F.grid_sample", call.args, {"align_corners": False}, torch=True)


def _f_affine_grid(rng: np.random.Generator) -> Call:
    call = _affine_grid(rng)
    return Call("F.affine_grid", call.args, {"align_corners": False}, torch=True)


def _f_max_unpool(name: str, k: int) -> Maker:
    def make(rng: np.random.Generator) -> Call:
        x, pos, _ = _unpool_inputs(rng, k)
        return Call(f"F.{name}", [x, pos, 2], {}, torch=True)
    return make


def _f_one_hot(rng: np.random.Generator) -> Call:
    x = _x(rng, _spatial(rng, int(rng.integers(1, 4)), 1, 5))
    return Call("F.one_hot_argmax", [x], {"dim": int(rng.integers(-x.ndim, x.ndim))},
                torch=True)


# the functions whose gradient `vjp` gives, with their makers
GRADIENTS: dict[str, Maker] = {
    **{op: _pool(op) for op in ("average_pool", "lp_pool", "max_pool")},
    **{op: _global(op) for op in ("global_average_pool", "global_lp_pool", "global_max_pool")},
    "max_unpool": _max_unpool,
}


def _vjp(rng: np.random.Generator) -> Call:
    """vjp of one of GRADIENTS at a valid call, with a cotangent of its output's shape and dtype
    (NaN and inf included, as in X)."""
    import onnx_cupy

    of = list(GRADIENTS)[int(rng.integers(len(GRADIENTS)))]
    call = GRADIENTS[of](rng)
    call.kwargs.pop("return_indices", None)
    with _path("numpy"), np.errstate(all="ignore"):
        y = getattr(onnx_cupy, of)(*call.args, **call.kwargs)
    dy = _x(rng, y.shape, call.args[0].dtype)
    return Call("vjp", call.args, {**call.kwargs, "cotangent": dy}, of=of)


FUNCTIONS: dict[str, Maker] = {
    **{op: _pool(op) for op in ("average_pool", "lp_pool", "max_pool")},
    **{op: _global(op) for op in ("global_average_pool", "global_lp_pool", "global_max_pool")},
    "hardmax": _hardmax, "resize": _resize, "upsample": _upsample,
    "grid_sample": _grid_sample, "affine_grid": _affine_grid, "max_unpool": _max_unpool,
    "roi_align": _roi_align, "max_roi_pool": _max_roi_pool, "run_node": _run_node,
    **{f"F.{kind}_pool{k}d": _f_pool(f"{kind}_pool{k}d", k) for kind in ("avg", "max", "lp")
       for k in (1, 2, 3)},
    **{f"F.adaptive_{kind}_pool{k}d": _f_adaptive(f"adaptive_{kind}_pool{k}d", k)
       for kind in ("avg", "max") for k in (1, 2, 3)},
    **{f"F.max_unpool{k}d": _f_max_unpool(f"max_unpool{k}d", k) for k in (1, 2, 3)},
    "F.interpolate": _f_interpolate, "F.grid_sample": _f_grid_sample,
    "F.affine_grid": _f_affine_grid, "F.one_hot_argmax": _f_one_hot, "vjp": _vjp,
}

# what an error about each argument may call it (the ONNX and PyTorch names of one thing)
ALIASES: dict[str, tuple[str, ...]] = {
    "x": ("'x'", " x ", "x must", "x has", "x is", "input", "x of", "dtype", "rank", "shape",
          "theta", "node"),
    "kernel_shape": ("kernel",), "kernel_size": ("kernel",), "strides": ("stride",),
    "stride": ("stride",), "pads": ("pad",), "padding": ("pad",), "p": ("'p'", "norm"),
    "norm_type": ("norm",), "sizes": ("size",), "scales": ("scale",), "size": ("size",),
    "output_size": ("size",), "axis": ("axis",), "dim": ("dim",), "mode": ("mode",),
    "grid": ("grid",), "indices": ("indices", "'i'"), "i": ("'i'", "indices"),
    "align_corners": ("align_corners",), "out": ("out",), "opset": ("opset",),
}


def _names(arg: str) -> tuple[str, ...]:
    return (arg.lower(), *ALIASES.get(arg.lower(), ()))


# ---------------------------------------------------------------- mistakes

BAD_INTS = [-1, 0, 2**31, 2**62, 2**63, 2**64, -2**63, 10**6]
BAD_TYPES: list[Any] = ["abc", 1.5, [1.5], {"a": 1}, b"\xff", object()]   # None: a default


def _layout(rng: np.random.Generator, x: np.ndarray, name: str, folder: str) -> Any:
    """`x`'s values in the layout `name` (shape and dtype kept, byte order aside)."""
    if name == "sliced":
        big = np.empty(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        big[..., ::2] = x
        return big[..., ::2]
    if name == "reversed":
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    if name == "fortran":
        return np.asfortranarray(x)
    if name == "broadcast" and x.ndim and x.size:
        return np.broadcast_to(x[:1], x.shape) if x.shape[0] > 1 else \
            np.broadcast_to(x[..., :1], x.shape)
    if name == "memmap":
        m = np.memmap(tempfile.mktemp(dir=folder), x.dtype, "w+", shape=x.shape)
        m[...] = x
        return np.memmap(m.filename, x.dtype, "r", shape=x.shape) if x.size else m
    if name == "subclass":
        return x.view(_Sub)
    if name == "unaligned" and x.dtype.itemsize > 1:
        u = np.empty(x.nbytes + 1, np.uint8)[1:].view(x.dtype).reshape(x.shape)
        u[...] = x
        return u
    if name == "big_endian":
        return x.astype(x.dtype.newbyteorder(">"))
    if name == "readonly":
        r = x.copy()
        r.flags.writeable = False
        return r
    return x


class _Sub(np.ndarray):
    """A user's subclass whose ufuncs and reductions would lie if the library used them."""

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return NotImplemented

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a subclass's own sum was called")


def _array_positions(call: Call) -> list[tuple[str, Any]]:
    """(argument name, key) of the call's array arguments: X first."""
    names = {"grid_sample": ["x", "grid"], "max_unpool": ["x", "i"], "upsample": ["x", "scales"],
             "roi_align": ["x", "rois", "batch_indices"], "max_roi_pool": ["x", "rois"],
             "affine_grid": ["theta", "size"], "F.grid_sample": ["input", "grid"],
             "F.affine_grid": ["theta", "size"]}
    if call.fn.startswith("F.max_unpool"):
        return [("input", 0), ("indices", 1)]
    got = names.get(call.fn, ["input" if call.torch else "x"])
    return [(n, i) for i, n in enumerate(got) if i < len(call.args)]


def _mutate(rng: np.random.Generator, call: Call, kind: str, folder: str, path: str) -> Call:
    """`call` with one mistake of `kind` (or, for "layout", X in another layout)."""
    x_name = _array_positions(call)[0][0]
    x_at: Any = 0
    if call.fn == "run_node":
        x_name, x_at = "x", None
    if kind == "layout" and call.fn != "run_node":
        layouts = [n for n in LAYOUTS if path == "numpy" or n not in KERNEL_POLICY_LAYOUTS]
        call.layout = str(rng.choice(layouts))
        if call.fn.startswith("F.max_unpool") and call.layout == "broadcast":
            call.layout = "sliced"   # repeated values with distinct indices: ties
        if call.fn in ("affine_grid", "F.affine_grid") or not isinstance(call.args[0],
                                                                            np.ndarray):
            return call
        call.args[0] = _layout(rng, call.args[0], call.layout, folder)
        return call
    if kind in ("valid", "layout"):
        return call
    call.kind = kind
    if kind == "type":
        value = [Ellipsis, "abc", [[1.0, 2.0]], None, 3, {"a": 1}][int(rng.integers(6))]
        target = x_name
        if call.fn == "run_node":
            call.args[1] = [value]
        elif call.fn in ("affine_grid", "F.affine_grid"):
            call.args[0] = value
            target = "theta"
        else:
            call.args[0] = value
        call.what, call.names = f"{target} = {value!r}", _names(target) + ("array", "tensor")
        return call
    if kind == "dtype":
        dtype = str(rng.choice(["int32", "int64", "bool", "complex64", "uint16", "int8",
                                "U3", "O"]))
        if x_at is None:
            with np.errstate(invalid="ignore"):
                call.args[1] = [call.args[1][0].astype(dtype)]
        else:
            with np.errstate(invalid="ignore"):
                call.args[0] = np.asarray(call.args[0]).astype(dtype)
        call.what, call.names = f"X of dtype {dtype}", ("dtype", "type", *_names(x_name))
        return call
    if kind == "rank":
        a = call.args[1][0] if x_at is None else np.asarray(call.args[0])
        a = a[None] if rng.random() < 0.5 or a.ndim < 2 else a[0]
        if rng.random() < 0.2:
            a = np.asarray(np.float32(1.0))   # rank 0
        if x_at is None:
            call.args[1] = [a]
        else:
            call.args[0] = a
        call.what = f"X of shape {a.shape}"
        call.names = ("rank", "shape", "dimension", "spatial", "axis", "dim", "size", "expected",
                      *_names(x_name), *(n for k in call.kwargs for n in _names(k)))
        return call
    if kind == "out":
        return _out_mistake(rng, call, folder)
    if kind == "node":
        return _node_mistake(rng, call) if call.fn == "run_node" else call
    if kind == "huge":
        return _huge(rng, call)
    attrs = [k for k, v in call.kwargs.items() if k not in ("return_indices", "opset")
             and not isinstance(v, np.ndarray)]
    if call.fn == "run_node" or not attrs:
        return _node_mistake(rng, call) if call.fn == "run_node" else call
    name = str(rng.choice(attrs))
    old = call.kwargs[name]
    if kind == "value":
        if isinstance(old, list) and old and isinstance(old[0], int):
            new: Any = list(old)
            if rng.random() < 0.3:
                new = new + [1]   # one value too many
            else:
                new[int(rng.integers(len(new)))] = int(rng.choice(BAD_INTS))
        elif isinstance(old, bool):
            new = int(rng.choice([2, -1]))
        elif isinstance(old, int):
            new = int(rng.choice(BAD_INTS))
        elif isinstance(old, str):
            new = str(rng.choice(["", "NEAREST", "linear ", "bogus", "\u00e9"]))
        else:
            new = [0, -1.0, np.nan, np.inf][int(rng.integers(4))]
    else:
        new = BAD_TYPES[int(rng.integers(len(BAD_TYPES)))]
    call.kwargs[name] = new
    call.what, call.names = f"{name} = {new!r}", _names(name)
    return call


def _huge(rng: np.random.Generator, call: Call) -> Call:
    """A size past int64's offsets or the machine: pads, kernels, strides, output sizes."""
    big = int(rng.choice([2**40, 2**62, 2**63, 2**64, 10**6 * 10**6]))
    kw = call.kwargs
    for name in ("sizes", "output_size", "pads", "padding", "kernel_shape", "strides", "stride"):
        if name in kw and kw[name] is not None:
            old = kw[name]
            n = len(old) if hasattr(old, "__len__") else 1
            if name == "sizes":
                kw[name] = np.array([*old[:2]] + [10**6] * (n - 2), np.int64) if big < 2**62 \
                    else np.array([*old[:2], 2**62, *old[3:]], np.int64)
            else:
                kw[name] = [big] * n
            call.kind, call.what, call.names = "huge", f"{name} = {big}", _names(name)
            if name in ("pads", "padding", "kernel_shape", "kernel_size"):
                call.names += ("kernel", "pad")   # a window past the input names either
            return call
    if call.fn.startswith("F.adaptive"):
        call.args[1] = [10**6] * len(call.args[1])
        call.kind, call.what, call.names = "huge", "output_size = 10**6 per axis", ("size",)
        return call
    if call.fn in ("affine_grid", "F.affine_grid"):
        call.args[1] = [*call.args[1][:2], 10**6, 10**6]
        call.kind, call.what, call.names = "huge", "size = 10**6 per axis", ("size",)
        return call
    if call.fn.startswith("F.max_unpool"):
        call.args[2] = big
        call.kind, call.what, call.names = "huge", f"kernel_size = {big}", ("kernel", "size")
    return call


def _out_mistake(rng: np.random.Generator, call: Call, folder: str) -> Call:
    """An out= array, right or wrong (only functions that take out=)."""
    if call.fn.startswith(("F.", "run_node")) or call.kwargs.get("return_indices"):
        return call
    with _path("numpy"):
        want = _run(Call(call.fn, list(call.args), dict(call.kwargs), function=call.function,
                         of=call.of))
    if call.fn == "vjp":   # out= receives the first gradient
        want = want[0]
    if isinstance(want, tuple):
        return call
    choice = str(rng.choice(["right", "readonly_memmap", "readonly", "dtype", "big_endian",
                             "strided", "shape", "masked", "list"]))
    out: Any = np.empty_like(want)
    if choice == "readonly_memmap":
        np.zeros(max(want.size, 1), want.dtype).tofile(fn := tempfile.mktemp(dir=folder))
        out = np.memmap(fn, want.dtype, "r", shape=want.shape)
    elif choice == "readonly":
        out.flags.writeable = False
    elif choice == "dtype":
        out = np.empty(want.shape, np.float64 if want.dtype != np.float64 else np.float32)
    elif choice == "big_endian":
        out = np.empty(want.shape, want.dtype.newbyteorder(">"))
    elif choice == "strided":
        out = np.empty(want.shape[:-1] + (2 * want.shape[-1],), want.dtype)[..., ::2] \
            if want.ndim and want.shape[-1] > 1 else np.empty_like(want)
        choice = choice if out.flags.c_contiguous is False else "right"
    elif choice == "shape":
        out = np.empty(want.shape + (1,), want.dtype)
    elif choice == "masked":
        out = np.ma.masked_array(np.empty_like(want))
    elif choice == "list":
        out = want.tolist()
    call.kwargs["out"] = out
    if choice != "right":
        call.kind, call.what, call.names = "out", f"out: {choice}", ("out",)
    else:
        call.what = "out: right"
    return call


def _node_mistake(rng: np.random.Generator, call: Call) -> Call:
    """A malformed node, as onnx.checker would refuse it."""
    from onnx import AttributeProto, helper

    node = call.args[0]
    choice = str(rng.choice(["duplicate", "undefined", "no_output", "three_outputs",
                             "not_utf8", "float_p"]))
    if choice == "duplicate" and node.attribute:
        node.attribute.extend([node.attribute[0]])
        names: tuple[str, ...] = (node.attribute[0].name,)
    elif choice == "undefined" or (choice == "duplicate"):
        a = node.attribute.add()
        a.name = "kernel_shape" if node.op_type.endswith("Pool") else "axis"
        names = (a.name,)
    elif choice == "no_output":
        del node.output[:]
        names = ("output",)
    elif choice == "three_outputs":
        node.output.extend(["a", "b"])
        names = ("output",)
    elif choice == "not_utf8":
        a = node.attribute.add()
        a.name, a.type, a.s = "auto_pad", AttributeProto.STRING, b"\xff\xfeSAME"
        names = ("auto_pad",)
    else:
        node = helper.make_node("LpPool", ["X"], ["Y"], kernel_shape=[2, 2], p=2.0)
        call.args[0] = node
        names = ("'p'",)
    call.kind, call.what, call.names = "node", choice, names
    return call


def draw(seed: int, i: int, path: str, folder: str) -> Call:
    """Call `i` of seed `seed`'s sequence for `path` (its arrays made fresh)."""
    rng = np.random.default_rng([seed, i])
    fn = list(FUNCTIONS)[int(rng.integers(len(FUNCTIONS)))]
    call = FUNCTIONS[fn](rng)
    kind = str(rng.choice(KINDS, p=[0.12, 0.22, 0.08, 0.08, 0.08, 0.14, 0.08, 0.07, 0.09, 0.04]))
    if kind == "node" and fn != "run_node":
        kind = "value"
    call = _mutate(rng, call, kind, folder, path)
    if call.kind not in ("valid", "layout") and not call.names:   # no mistake applied
        call.kind = "valid"
    if call.of and call.kind in ("value", "attr_type", "huge"):
        # an attribute that still makes a valid forward changes Y's shape: the cotangent drawn
        # for the valid call no longer fits, and an error may name it instead
        call.names += ("dy", "cotangent")
    return call


# ---------------------------------------------------------------- running and judging

@contextlib.contextmanager
def _path(path: str) -> Iterator[None]:
    import onnx_cupy

    with onnx_cupy.backend(path):
        yield


def _device() -> Any:
    """The cupy module the library runs on (the stand-in the worker installed, or a GPU's)."""
    from onnx_cupy.core import execution

    return execution.cupy_module()


def _to_device(a: Any, cp: Any, out: bool = False) -> Any:
    """An array argument as a CuPy user holds it: a NumPy array's values on the device in its
    layout (the stand-in keeps strides and the address modulo 256: sliced, reversed, broadcast,
    unaligned views stay such views), in native byte order as CuPy's arrays are; strings and
    objects (which CuPy cannot hold) stay on the host. `out`: only a plain, writeable, native
    array has a device twin; a read-only, memory-mapped, masked or non-native one stays a NumPy
    array, a CuPy call's mistake."""
    if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
        return [_to_device(v, cp) for v in a]
    if not isinstance(a, np.ndarray) or a.dtype.kind in "OUSV":
        return a
    if out and (type(a) is not np.ndarray or not a.flags.writeable or not a.dtype.isnative):
        return a
    plain = a.data if isinstance(a, np.ma.MaskedArray) else a.view(np.ndarray)
    if hasattr(cp, "mirror"):   # the stand-in: the same layout
        return cp.mirror(plain)
    # a GPU: the bytes the view spans, uploaded, and the view over them at the same place
    # (strides and address modulo 256 kept)
    plain = plain.astype(plain.dtype.newbyteorder("="), copy=False)
    low = sum((n - 1) * st for n, st in zip(plain.shape, plain.strides) if st < 0 and n)
    high = sum((n - 1) * st for n, st in zip(plain.shape, plain.strides) if st > 0 and n)
    span = high - low + plain.itemsize if plain.size else 0
    skew = (plain.ctypes.data + low) % 256
    host = np.zeros(skew + span, np.uint8)
    if span:
        np.ndarray(plain.shape, plain.dtype, host, skew - low, plain.strides)[...] = plain
    device = cp.asarray(host)
    return cp.ndarray(plain.shape, plain.dtype, device.data + (skew - low if span else 0),
                      plain.strides)


def _on_device(call: Call) -> Call:
    """`call` with its arrays on the device (see `_to_device`)."""
    cp = _device()
    return Call(call.fn, [_to_device(a, cp) for a in call.args],
                {k: _to_device(v, cp, out=k == "out") for k, v in call.kwargs.items()},
                call.kind, call.what, call.names, call.torch, call.layout,
                function=call.function, of=call.of)


def _host(a: Any) -> Any:
    """A device array's values as a NumPy array (others unchanged)."""
    if isinstance(a, tuple):
        return tuple(_host(v) for v in a)
    cp = _device()
    return a.get() if cp is not None and isinstance(a, cp.ndarray) else a


def _run(call: Call) -> Any:
    import onnx_cupy
    import onnx_cupy.nn.functional as F

    fn = call.function or (getattr(F, call.fn[2:]) if call.fn.startswith("F.")
                           else getattr(onnx_cupy, call.fn))
    if call.of:   # vjp: the function differentiated first
        result = fn(getattr(onnx_cupy, call.of), *call.args, **call.kwargs)
    else:
        result = fn(*call.args, **call.kwargs)
    return tuple(result) if isinstance(result, (tuple, list)) else result


def _native(a: Any) -> Any:
    """An array argument as a native, C-contiguous, plain NumPy copy (others unchanged)."""
    if isinstance(a, np.ndarray):
        a = np.asarray(a.view(np.ndarray) if not isinstance(a, np.ma.MaskedArray) else a.data)
        return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("=")))
    if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
        return [_native(v) for v in a]
    return a


def _arrays(call: Call) -> list[Any]:
    """The call's arrays, NumPy or device."""
    cp = _device()
    kinds = (np.ndarray,) if cp is None else (np.ndarray, cp.ndarray)
    found = [a for a in [*call.args, *call.kwargs.values()] if isinstance(a, kinds)]
    for a in call.args:
        if isinstance(a, list):
            found += [v for v in a if isinstance(v, kinds)]
    return found


def _snapshot(a: Any) -> tuple[Any, ...]:
    host = a.view(np.ndarray) if isinstance(a, np.ndarray) and not isinstance(
        a, np.ma.MaskedArray) else a.data if isinstance(a, np.ndarray) else a.get()
    return (a.dtype, a.shape, a.strides, np.array(host, copy=True).tobytes())


def _close(got: Any, want: Any) -> str | None:
    """Why `got` differs from `want` (None where they agree)."""
    if want is None:   # vjp's entry for an input without a gradient
        return None if got is None else f"None expected, got {type(got).__name__}"
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"{len(want)} outputs expected, got {type(got).__name__}"
        for g, w in zip(got, want):
            why = _close(g, w)
            if why:
                return why
        return None
    if type(got) is not np.ndarray and not isinstance(got, np.memmap):
        return f"a {type(got).__name__} returned, a numpy.ndarray expected"
    if got.shape != want.shape or got.dtype.newbyteorder("=") != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype}, expected {want.shape} {want.dtype}"
    g = got.astype(np.float64) if got.dtype.kind == "f" or got.dtype.name == "bfloat16" else got
    w = want.astype(np.float64) if want.dtype.kind == "f" or want.dtype.name == "bfloat16" \
        else want
    if g.dtype.kind == "O":   # objects (Resize takes them): equal, or both NaN
        def nan(v: Any) -> bool:
            return isinstance(v, float) and math.isnan(v)
        same = all(a == b or (nan(a) and nan(b)) for a, b in zip(g.flat, w.flat))
        return None if same else "object results differ"
    if g.dtype.kind != "f":   # exact: integers, bools, complex (NaN where NaN)
        same = np.array_equal(g, w, equal_nan=g.dtype.kind == "c")
        return None if same else "results differ"
    rtol = {2: 2e-2, 4: 2e-4, 8: 1e-9}.get(want.dtype.itemsize, 1e-3)
    with np.errstate(invalid="ignore"):
        bad = ~np.isclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
    if bad.any():
        at = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} values differ from the NumPy path's, e.g. at {tuple(at)}: "
                f"{g[tuple(at)]} against {w[tuple(at)]}")
    return None


def judge(call: Call, path: str) -> list[str]:
    """The problems of `call` on `path` (empty: none). On the cupy path the call's arrays are
    first put on the device (`_on_device`), and no backend is forced: the array types choose,
    as in a CuPy user's program; an accepted call must return device arrays where X is one."""
    if path == "cupy" and _device() is None:   # no GPU: an executing stand-in for the call
        from helpers.standin import StandIn

        with StandIn(recording=False).installed():
            return judge(call, path)
    host_call = call
    if path == "cupy":
        call = _on_device(call)
    arrays = _arrays(call)
    before = [_snapshot(a) for a in arrays]
    out = call.kwargs.get("out")
    allowed: tuple[type, ...] = (TypeError, ValueError)
    if call.torch:
        allowed += (NotImplementedError, RuntimeError)
    problems = []
    try:
        with _path(path) if path != "cupy" else contextlib.nullcontext(), \
                np.errstate(all="ignore"):
            got = _run(call)
    except allowed as exc:
        message = str(exc).lower()
        if call.kind in ("valid", "layout"):
            problems.append(f"a valid call refused: {type(exc).__name__}: {exc}")
        elif call.names and not any(n in message for n in call.names):
            problems.append(f"the message names none of {list(call.names)}: "
                            f"{type(exc).__name__}: {exc}")
        got = None
    except Exception as exc:   # noqa: BLE001 (what this fuzz looks for)
        problems.append(f"{type(exc).__name__} (not TypeError/ValueError): {exc}")
        got = None
    for a, b in zip(arrays, before):
        if a is not out and _snapshot(a) != b:
            problems.append("an input was changed")
    if got is not None:
        first = got[0] if call.fn == "vjp" else got   # vjp: out= receives the first gradient
        if out is not None and first is not out:
            problems.append("out= given, another array returned")
        if path == "cupy":
            problems += _device_results(call, got)
            got = _host(got)
        native = Call(host_call.fn, [_native(a) for a in host_call.args],
                      {k: _native(v) for k, v in host_call.kwargs.items() if k != "out"},
                      function=host_call.function, of=host_call.of)
        try:
            with _path("numpy"), np.errstate(all="ignore"):
                want = _run(native)
        except Exception as exc:   # noqa: BLE001
            problems.append(f"accepted, but refused on native contiguous copies: {exc}")
        else:
            why = _close(got, want)
            if why:
                problems.append(why)
    return problems


def _device_results(call: Call, got: Any) -> list[str]:
    """On the cupy path: a call whose X is a device array returns device arrays."""
    cp = _device()
    first = call.args[1][0] if call.fn == "run_node" else call.args[0] if call.args else None
    if not isinstance(first, cp.ndarray):
        return []
    results = got if isinstance(got, tuple) else (got,)
    wrong = [type(r).__name__ for r in results if r is not None and not isinstance(r, cp.ndarray)]
    return [f"a device X gave a {wrong[0]} result"] if wrong else []


def main(argv: list[str]) -> None:
    """Worker: run calls argv[2:] of seed argv[1] on path argv[0], a JSON line per event."""
    import resource

    path, seed, indices = argv[0], int(argv[1]), [int(i) for i in argv[2:]]
    from onnx_cupy.core import attributes, execution

    gpu = path == "cupy" and execution.gpu_available()
    if not gpu:   # (a CUDA context reserves more address space than this)
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    # a machine of MEMORY bytes: a call whose output passes it is refused (and named) before
    # it allocates, within the worker's address space
    attributes.memory_limit = lambda: MEMORY
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        if path == "cupy" and not gpu:   # the executing stand-in, keeping no records
            from helpers.standin import StandIn

            stack.enter_context(StandIn(recording=False).installed())
        for i in indices:
            print(json.dumps({"start": i}), flush=True)
            try:
                call = draw(seed, i, path, folder)
                problems = judge(call, path)
                what = call.describe()
            except Exception as exc:   # noqa: BLE001 (a broken draw is the fuzz's own bug)
                problems, what = [f"the fuzz itself failed: {type(exc).__name__}: {exc}"], "?"
            print(json.dumps({"done": i, "call": what, "problems": problems}), flush=True)


@dataclass
class Outcome:
    """What a run found: per call index, its description and problems (failed calls only), and
    how many calls ran and were judged."""

    failures: dict[int, tuple[str, list[str]]] = field(default_factory=dict)
    judged: int = 0
    described: dict[int, str] = field(default_factory=dict)


def run(path: str, seed: int, indices: list[int], env: dict[str, str] | None = None
        ) -> Outcome:
    """Calls `indices` of seed `seed` on `path`, in worker processes: a crash or a hang fails
    the call that was running, and a new worker takes the rest."""
    outcome = Outcome()
    todo = list(indices)
    while todo:
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen([sys.executable, "-m", "helpers.fuzz", path, str(seed),
                                     *map(str, todo)], stdout=subprocess.PIPE, stderr=errors,
                                    bufsize=0, env=env)
            _follow(proc, todo, outcome, errors)
        todo = [i for i in todo if i not in outcome.failures]
    return outcome


def _lines(proc: subprocess.Popen[bytes]) -> Iterator[str | None]:
    """The worker's output lines as they come (None: none within CALL_SECONDS), read
    unbuffered so that select sees every line not yet taken."""
    assert proc.stdout is not None
    fd, pending = proc.stdout.fileno(), b""
    while True:
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode()
        ready, _, _ = select.select([fd], [], [], CALL_SECONDS)
        if not ready:
            yield None
            return
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return
        pending += chunk


def _follow(proc: subprocess.Popen[bytes], todo: list[int], outcome: Outcome,
            errors: Any) -> None:
    """Read one worker's events into `outcome` until it ends, crashes or hangs; the calls it
    judged leave `todo`."""
    running = None
    try:
        for line in _lines(proc):
            if line is None:   # a hang: the call that started last
                outcome.failures[running if running is not None else todo[0]] = (
                    "?", [f"still running after {CALL_SECONDS:.0f} s"])
                return
            event = json.loads(line)
            if "start" in event:
                running = event["start"]
                continue
            running = None
            outcome.judged += 1
            outcome.described[event["done"]] = event["call"]
            if event["problems"]:
                outcome.failures[event["done"]] = (event["call"], event["problems"])
            todo.remove(event["done"])
    finally:
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    if running is None and todo and todo[0] not in outcome.described:   # died at start
        running = todo[0]
    if running is not None and running not in outcome.failures:   # it died in `running`
        errors.seek(0)
        tail = errors.read()[-1500:].decode(errors="replace")
        outcome.failures[running] = ("?", [f"the worker died (exit code {code}): {tail}"])


def worker_env() -> dict[str, str]:
    """The environment of a worker: this process's import path (the tests and the sources)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    return env


if __name__ == "__main__":
    main(sys.argv[1:])
