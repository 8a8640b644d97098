"""AveragePool, LpPool, MaxPool, the global pools, MaxUnpool, Hardmax, Resize, Upsample,
GridSample, AffineGrid, RoiAlign and MaxRoiPool on
dask arrays, block by block.

Each function takes a `dask.array.Array` and the keywords of the eager function of the same
name (`out=` excepted: dask arrays are immutable) and returns a lazy dask array. The operator
maps over the chunks of the axes it leaves unchanged and sees every other axis whole:

  AveragePool, LpPool,  batch and channel keep their chunks; every spatial axis is one chunk
  MaxPool, Global*Pool  (MaxPool's Indices: offset by the planes of the blocks before)
  Hardmax-13            every axis but `axis` keeps its chunks; `axis` is one chunk
  Hardmax-1, -11        the axes before `axis` (rows of the coerced 2-D view) keep their chunks;
                        `axis` and the axes after it are one chunk
  Resize, Upsample      an axis the plan maps onto itself (same length, identity transform: no
                        (index, weight) table) keeps its chunks; every other axis is one chunk
                        (on every path: the NumPy path's bits do not depend on the batch).
  MaxUnpool             batch and channel keep their chunks (X and I chunked alike); every
                        spatial axis is one chunk. I holds flat indices over the whole unpooled
                        tensor, planes included: a block takes those into its own (n, c) planes
                        (as MaxPool writes them) and makes them its own; an index into a plane
                        of another block is an error on NumPy chunks and skipped on CuPy chunks
                        (as an index out of range on the GPU path). Rechunk N and C whole to
                        unpool such indices.
  GridSample            X's batch and channel chunks and the grid's output axes keep their
                        chunks (the grid's batch chunks follow X's); X's spatial axes (a
                        position may sample anywhere in its image) and the grid's last axis (one
                        position's coordinates) are one chunk
  AffineGrid            theta's batch chunks are the grid's; every other axis is one chunk
  RoiAlign, MaxRoiPool  X's channels keep their chunks; its batch and spatial axes (a region
                        may lie anywhere in any image) and the regions (never split) are one
                        chunk each

An axis that must be whole is rechunked only when it has several chunks. Each block runs the eager
function, so it is computed exactly as the eager call computes that part of the output.

Validation runs when the graph is built: the operator's plan on the full shape and dtype raises
the eager function's errors and gives the declared chunks and dtype; nothing is computed until
the result is. Resize reads roi, scales and sizes on the host then. Per block, resized axes get
the given scales, sizes and roi; an axis kept as is gets scale 1, its block's length as size and
roi (0, 1), which Resize maps onto itself. With `sizes` and keep_aspect_ratio_policy 'not_larger'
or 'not_smaller', one scale derives from every axis in `axes`, so all of those axes are whole.

Blocks run on the backend the eager call picks for the chunk type, under any
`onnx_cupy.backend(...)` in force when the graph is built (scheduler threads and workers do not
inherit that context): NumPy chunks run the NumPy path; CuPy chunks (a dask array whose meta is a
cupy.ndarray) run the CUDA kernels on the GPU current where the block is computed, which under
dask-cuda is each worker's own GPU.

    import cupy as cp, dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client
    import onnx_cupy.dask as ocd

    client = Client(LocalCUDACluster())       # one worker per visible GPU
    x = da.from_array(host_x, chunks=(8, 3, -1, -1)).map_blocks(cp.asarray)  # cupy meta
    y = ocd.average_pool(x, kernel_shape=[3, 3], strides=[2, 2])  # lazy; chunks (8, 3, H', W')
    y.compute()                                # a cupy.ndarray
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar, overload

import numpy as np

from ..core import execution, extras

try:
    import dask.array as da
    from dask.array.utils import meta_from_array
except ImportError as exc:
    raise extras.missing("onnx_cupy.dask", "dask", exc) from exc
from ..grid import api as grid_api
from ..grid import plan as grid_plan
from ..hardmax import api as hardmax_api
from ..hardmax import plan as hardmax_plan
from ..pool import api as pool_api
from ..pool import plan as pool_plan
from ..resize import api as resize_api
from ..resize import plan as resize_plan
from ..roi import api as roi_api
from ..roi import plan as roi_plan
from ..unpool import api as unpool_api
from ..unpool import plan as unpool_plan

__all__ = ["affine_grid", "average_pool", "global_average_pool", "global_lp_pool",
           "global_max_pool", "grid_sample", "hardmax", "lp_pool", "max_pool", "max_roi_pool",
           "max_unpool", "resize", "roi_align", "upsample"]

Chunks = tuple[tuple[int, ...], ...]
_F = TypeVar("_F", bound=Callable[..., Any])


def _backend(X: Any, op: str) -> str:
    """Validate X as a dask array of known shape with NumPy or CuPy chunks; the backend its
    blocks run on (the one the eager call picks for the chunk type, under any forced now)."""
    if not isinstance(X, da.Array):
        raise TypeError(f"{op}: X must be a dask.array.Array, got "
                        f"{type(X).__module__}.{type(X).__name__}")
    if any(math.isnan(n) for n in X.shape):
        raise ValueError(f"{op}: X has unknown chunk sizes (shape {X.shape}); call "
                         f"X.compute_chunk_sizes() first")
    return execution.select(meta_from_array(X), op)[1]


def _keywords(eager: Callable[..., Any], op: str, X: Any, args: tuple[Any, ...],
              attrs: dict[str, Any]) -> dict[str, Any]:
    """Every keyword of the eager function, defaults filled in (TypeError for unknown ones)."""
    try:
        bound = inspect.signature(eager).bind(X, *args, **attrs)
    except TypeError as exc:
        raise TypeError(f"{op}: {exc}") from None
    bound.apply_defaults()
    kw = dict(bound.arguments)
    del kw[next(iter(bound.signature.parameters))]   # X (theta for AffineGrid)
    if kw.pop("out") is not None:
        raise TypeError(f"{op}: out= is not supported on dask arrays (they are immutable); "
                        f"use the returned array")
    return kw


def _apply(x: Any, eager: Callable[..., Any], backend: str, kw: dict[str, Any]) -> Any:
    """One block: the eager function on the backend chosen when the graph was built."""
    with execution.backend(backend):
        return eager(x, **kw)


def _map(block: Callable[[Any], Any], X: da.Array, chunks: Chunks, token: str) -> da.Array:
    """`block` on every block of X, output chunks and dtype declared (the graph stays lazy)."""
    return da.map_blocks(block, X, chunks=chunks, dtype=X.dtype, meta=meta_from_array(X),
                         token=token)


def _whole(X: da.Array, axes: Iterable[int]) -> da.Array:
    """X with each of `axes` in one chunk (unchanged where it already is)."""
    return X.rechunk({d: -1 for d in axes})


# ---------------------------------------------------------------- pooling

def _pool(op: str, eager: Callable[..., Any], X: da.Array, attrs: dict[str, Any]) -> Any:
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, (), attrs)
    indices = kw.pop("return_indices", False)
    if op in pool_plan.GLOBAL_OPS:
        out_shape = pool_plan.make_global(op, kw["opset"], tuple(X.shape), X.dtype,
                                          kw.get("p")).out_shape
    else:
        pool_api.check_return_indices(op, kw["opset"], indices)
        out_shape = pool_plan.make(op, tuple(X.shape), X.dtype, **kw).out_shape
    X = _whole(X, range(2, X.ndim))
    chunks = X.chunks[:2] + tuple((m,) for m in out_shape[2:])
    Y = _map(functools.partial(_apply, eager=eager, backend=backend, kw=kw), X, chunks,
             eager.__name__)
    if not indices:
        return Y
    pool_api.check_return_indices(op, kw["opset"], True)   # the eager call's error, now
    channels, plane = X.shape[1], math.prod(X.shape[2:])
    block = functools.partial(_max_indices, backend=backend, kw=kw, channels=channels,
                              plane=plane)
    I = da.map_blocks(block, X, chunks=chunks, dtype="int64", token="max_pool_indices",
                      meta=meta_from_array(X).astype("int64"))
    return Y, I


def _max_indices(x: Any, backend: str, kw: dict[str, Any], channels: int, plane: int,
                 block_info: Any = None) -> Any:
    """A block's MaxPool Indices, made global: the block's (n, c) planes start at (n0, c0) of
    the whole array (N, `channels`), whose planes hold `plane` elements."""
    with execution.backend(backend):
        _, local = pool_api.max_pool(x, return_indices=True, **kw)
    (n0, _), (c0, _) = block_info[0]["array-location"][:2]
    xp = execution.cupy_module() if backend == "cupy" else np
    n = xp.arange(x.shape[0]).reshape((-1, 1) + (1,) * (x.ndim - 2))
    c = xp.arange(x.shape[1]).reshape((1, -1) + (1,) * (x.ndim - 2))
    shift = (((n + n0) * channels + c + c0) - (n * x.shape[1] + c)) * plane
    return xp.where(local < 0, local, local + shift)


_DOC = """ONNX {op} on a dask array, lazily: `onnx_cupy.{name}` on every block.

    {chunks}

    Parameters
    ----------
    X : dask.array.Array
        NumPy chunks (NumPy path) or CuPy chunks (GPU path, e.g. under dask-cuda).
    **attrs
        The keywords of `onnx_cupy.{name}` (opset included), except `out`.

    Returns
    -------
    dask.array.Array
        The lazy result, its chunks and dtype declared; nothing is computed until it is.

    Raises
    ------
    ValueError, TypeError
        The eager function's errors, raised when the graph is built.

    Examples
    --------
    >>> import dask.array as da, numpy as np, onnx_cupy.dask as ocd
    {example}
    """


def _doc(**parts: str) -> Callable[[_F], _F]:
    """Give a wrapper the shared docstring, filled with its own parts (its signature kept)."""
    def apply(fn: _F) -> _F:
        fn.__doc__ = _DOC.format(name=fn.__name__, **parts)
        return fn
    return apply


_POOL_EXAMPLE = """>>> x = da.ones((4, 3, 8, 8), chunks=(2, 3, 4, 4), dtype=np.float32)
    >>> y = ocd.{name}(x, kernel_shape=[2, 2], strides=[2, 2])
    >>> y.chunks
    ((2, 2), (3,), (4,), (4,))"""
_POOL_CHUNKS = "Batch and channel keep their chunks; the spatial axes are merged into one chunk."


@_doc(op="AveragePool", chunks=_POOL_CHUNKS, example=_POOL_EXAMPLE.format(name="average_pool"))
def average_pool(X: da.Array, **attrs: Any) -> da.Array:
    return _pool("AveragePool", pool_api.average_pool, X, attrs)


@_doc(op="LpPool", chunks=_POOL_CHUNKS, example=_POOL_EXAMPLE.format(name="lp_pool"))
def lp_pool(X: da.Array, **attrs: Any) -> da.Array:
    return _pool("LpPool", pool_api.lp_pool, X, attrs)


@overload
def max_pool(X: da.Array, *, return_indices: Literal[False] = ..., **attrs: Any) -> da.Array: ...


@overload
def max_pool(X: da.Array, *, return_indices: Literal[True], **attrs: Any
             ) -> tuple[da.Array, da.Array]: ...


@overload
def max_pool(X: da.Array, *, return_indices: bool = ..., **attrs: Any
             ) -> da.Array | tuple[da.Array, da.Array]: ...


@_doc(op="MaxPool", chunks=_POOL_CHUNKS + """ With return_indices=True, returns (Y, Indices),
    Indices computed in their own pass and offset by the (n, c) planes of the blocks before.""",
      example=_POOL_EXAMPLE.format(name="max_pool"))
def max_pool(X: da.Array, **attrs: Any) -> da.Array | tuple[da.Array, da.Array]:
    return _pool("MaxPool", pool_api.max_pool, X, attrs)


_GLOBAL_EXAMPLE = """>>> x = da.ones((4, 3, 8, 8), chunks=(2, 3, 4, 4), dtype=np.float32)
    >>> ocd.{name}(x).chunks
    ((2, 2), (3,), (1,), (1,))"""


@_doc(op="GlobalAveragePool", chunks=_POOL_CHUNKS,
      example=_GLOBAL_EXAMPLE.format(name="global_average_pool"))
def global_average_pool(X: da.Array, **attrs: Any) -> da.Array:
    return _pool("GlobalAveragePool", pool_api.global_average_pool, X, attrs)


@_doc(op="GlobalMaxPool", chunks=_POOL_CHUNKS,
      example=_GLOBAL_EXAMPLE.format(name="global_max_pool"))
def global_max_pool(X: da.Array, **attrs: Any) -> da.Array:
    return _pool("GlobalMaxPool", pool_api.global_max_pool, X, attrs)


@_doc(op="GlobalLpPool", chunks=_POOL_CHUNKS,
      example=_GLOBAL_EXAMPLE.format(name="global_lp_pool"))
def global_lp_pool(X: da.Array, **attrs: Any) -> da.Array:
    return _pool("GlobalLpPool", pool_api.global_lp_pool, X, attrs)


# ---------------------------------------------------------------- Hardmax

@_doc(op="Hardmax",
      chunks="""The reduced axes are one chunk (`axis` at opset 13; `axis` and the axes after it at
    opsets 1 and 11); the others keep their chunks.""",
      example=""">>> x = da.from_array(np.array([[1.0, 3.0], [2.0, 0.0]], dtype=np.float32),
    ...                    chunks=1)
    >>> ocd.hardmax(x, axis=-1).compute()
    array([[0., 1.],
           [1., 0.]], dtype=float32)""")
def hardmax(X: da.Array, **attrs: Any) -> da.Array:
    op, eager = hardmax_plan.OP, hardmax_api.hardmax
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, (), attrs)
    pl = hardmax_plan.make(tuple(X.shape), X.dtype, kw["axis"], kw["opset"])
    X = _whole(X, range(pl.axis, pl.stop))
    return _map(functools.partial(_apply, eager=eager, backend=backend, kw=kw), X, X.chunks,
                eager.__name__)


# ---------------------------------------------------------------- Resize

def _resize_block(x: Any, backend: str, listed: tuple[int, ...],
                  sizes: tuple[int | None, ...] | None, kw: dict[str, Any]) -> Any:
    """One Resize block; a None in `sizes` (one entry per axis in `listed`) is the block's length
    along that axis."""
    if sizes is not None:
        sizes = tuple(x.shape[a] if m is None else m for a, m in zip(listed, sizes))
    return _apply(x, resize_api.resize, backend, {**kw, "sizes": sizes})


def _resize_whole(pl: resize_plan.ResizePlan, at: resize_plan.Attributes, listed: tuple[int, ...],
                  by_sizes: bool) -> set[int]:
    """The axes a Resize block must see whole (see the module docstring)."""
    whole = {t.axis for t in pl.tables}
    whole.update(d for d, (n, m) in enumerate(zip(pl.in_shape, pl.out_shape)) if n != m)
    if by_sizes and at.keep_aspect_ratio_policy != "stretch":
        whole.update(listed)
    return whole


@_doc(op="Resize",
      chunks="""The axes it changes are one chunk; an axis it maps onto itself keeps its chunks and
    gets scale 1 (or its block's length as size) and roi (0, 1) per block. roi, scales and sizes
    are read on the host when the graph is built.""",
      example=""">>> x = da.ones((4, 3, 8, 8), chunks=(1, 3, 8, 8), dtype=np.float32)
    >>> ocd.resize(x, scales=[1, 1, 2, 2], mode="linear").chunks
    ((1, 1, 1, 1), (3,), (16,), (16,))""")
def resize(X: da.Array, roi: Any = None, scales: Any = None, sizes: Any = None,
           **attrs: Any) -> da.Array:
    op, eager = resize_plan.OP, resize_api.resize
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, (roi, scales, sizes), attrs)
    pl, at, (roi, scales, sizes) = resize_plan.make(
        tuple(X.shape), X.dtype, kw.pop("roi"), kw.pop("scales"), kw.pop("sizes"), kw["opset"],
        **{k: kw[k] for k in resize_plan.DEFAULTS})
    listed = resize_plan.resized_axes(at.axes, X.ndim)
    whole = _resize_whole(pl, at, listed, bool(sizes))
    X = _whole(X, sorted(whole))
    chunks = tuple((m,) if d in whole else c
                   for d, (c, m) in enumerate(zip(X.chunks, pl.out_shape)))
    kept = [a not in whole for a in listed]
    if roi:
        k = len(listed)
        kw["roi"] = (tuple(0.0 if keep else r for keep, r in zip(kept, roi[:k]))
                     + tuple(1.0 if keep else r for keep, r in zip(kept, roi[k:])))
    if scales:
        kw["scales"] = tuple(1.0 if keep else s for keep, s in zip(kept, scales))
    block_sizes = tuple(None if keep else m for keep, m in zip(kept, sizes)) if sizes else None
    return _map(functools.partial(_resize_block, backend=backend, listed=listed,
                                  sizes=block_sizes, kw=kw), X, chunks, eager.__name__)


@_doc(op="Upsample",
      chunks="""The axes it enlarges are one chunk; an axis of scale 1 keeps its chunks. scales are
    read on the host when the graph is built.""",
      example=""">>> x = da.ones((4, 3, 8, 8), chunks=(1, 3, 8, 8), dtype=np.float32)
    >>> ocd.upsample(x, [1, 1, 2, 2], mode="linear").chunks
    ((1, 1, 1, 1), (3,), (16,), (16,))""")
def upsample(X: da.Array, scales: Any = None, **attrs: Any) -> da.Array:
    op, eager = resize_plan.UPSAMPLE, resize_api.upsample
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, (scales,), attrs)
    scales = resize_plan.upsample_scales(tuple(X.shape), X.dtype, kw.pop("scales"), kw["mode"],
                                         kw["opset"])
    pl, at, _ = resize_plan.make(tuple(X.shape), X.dtype, None, scales, None,
                                    resize_plan.UPSAMPLE_AS, op=op, mode=kw["mode"])
    whole = _resize_whole(pl, at, tuple(range(X.ndim)), False)
    X = _whole(X, sorted(whole))
    chunks = tuple((m,) if d in whole else c
                   for d, (c, m) in enumerate(zip(X.chunks, pl.out_shape)))
    kw["scales"] = tuple(s if d in whole else 1.0 for d, s in enumerate(scales))
    return _map(functools.partial(_apply, eager=eager, backend=backend, kw=kw), X, chunks,
                eager.__name__)


# ---------------------------------------------------------------- MaxUnpool

def _unpool_block(x: Any, indices: Any, backend: str, kw: dict[str, Any], channels: int,
                  plane: int, spatial: tuple[int, ...], block_info: Any = None) -> Any:
    """One MaxUnpool block: its indices (flat over the whole unpooled tensor, whose (n, c)
    planes hold `plane` elements, C = `channels`) made its own, then the eager call. An index
    into a plane outside the block becomes -1 (an error on NumPy chunks, skipped on CuPy
    ones)."""
    (n0, n1), (c0, c1) = block_info[0]["array-location"][:2]
    xp = execution.cupy_module() if backend == "cupy" else np
    at, rest = xp.divmod(indices, plane)
    n, c = xp.divmod(at, channels)
    inside = (n >= n0) & (n < n1) & (c >= c0) & (c < c1) & (indices >= 0)
    beyond = (indices < 0) | (n >= block_info[0]["shape"][0])   # outside the whole tensor
    if backend != "cupy" and not inside.all():   # host chunks: say why (an index beyond the
        first = xp.unravel_index(int(xp.argmin(inside)), inside.shape)   # tensor: eager's error)
        if not beyond[first]:
            raise ValueError(f"{unpool_plan.OP}: input 'I' holds {int(indices[first])}, an "
                             f"index into the (n, c) plane ({int(n[first])}, {int(c[first])}), "
                             f"outside the planes of its block (n in [{n0}, {n1}), c in "
                             f"[{c0}, {c1})): rechunk N and C whole to unpool across planes")
    local = xp.where(inside, ((n - n0) * (c1 - c0) + (c - c0)) * plane + rest,
                     xp.where(beyond, indices, -1))
    if kw.get("output_shape") is not None:
        kw = {**kw, "output_shape": (n1 - n0, c1 - c0, *spatial)}
    with execution.backend(backend):
        return unpool_api.max_unpool(x, local, **kw)


@_doc(op="MaxUnpool",
      chunks="""Batch and channel keep their chunks (I chunked as X); the spatial axes are one
    chunk. I's indices, flat over the whole unpooled tensor, must fall in their block's (n, c)
    planes (as MaxPool's do): another block's plane is an error on NumPy chunks and skipped on
    CuPy ones. output_shape is read on the host when the graph is built.""",
      example=""">>> x = da.ones((4, 3, 2, 2), chunks=(1, 3, 2, 2), dtype=np.float32)
    >>> i = da.from_array(np.arange(48).reshape(4, 3, 2, 2) * 4, chunks=(1, 3, 2, 2))
    >>> ocd.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2]).chunks
    ((1, 1, 1, 1), (3,), (4,), (4,))""")
def max_unpool(X: da.Array, I: Any, output_shape: Any = None,
               **attrs: Any) -> da.Array:
    op, eager = unpool_plan.OP, unpool_api.max_unpool
    backend = _backend(X, op)
    if not isinstance(I, da.Array):
        raise TypeError(f"{op}: I must be a dask.array.Array like X, got "
                        f"{type(I).__module__}.{type(I).__name__}")
    kw = _keywords(eager, op, X, (I, output_shape), attrs)
    kw.pop("I")
    pl = unpool_plan.make(tuple(X.shape), X.dtype, tuple(I.shape), I.dtype,
                             kw["output_shape"], kw["opset"],
                             **{k: kw[k] for k in ("kernel_shape", "strides", "pads")})
    X = _whole(X, range(2, X.ndim))
    I = I.rechunk(X.chunks)
    kw["output_shape"] = None if kw["output_shape"] is None else pl.out_shape
    block = functools.partial(_unpool_block, backend=backend, kw=kw, channels=X.shape[1],
                              plane=math.prod(pl.index_shape[2:]), spatial=pl.out_shape[2:])
    chunks = X.chunks[:2] + tuple((m,) for m in pl.out_shape[2:])
    return da.map_blocks(block, X, I, chunks=chunks, dtype=X.dtype, meta=meta_from_array(X),
                         token="max_unpool")


# ---------------------------------------------------------------- GridSample, AffineGrid

def _sample_block(x: Any, g: Any, backend: str, kw: dict[str, Any]) -> Any:
    with execution.backend(backend):
        return grid_api.grid_sample(x, g, **kw)


@_doc(op="GridSample",
      chunks="""X's batch and channel chunks and the grid's output axes keep their chunks (the
    grid's batch axis takes X's chunks); X's spatial axes and the grid's last axis are one chunk:
    a position may sample anywhere in its image, and its coordinates belong together. grid may
    also be a NumPy or CuPy array.""",
      example=""">>> x = da.ones((4, 3, 8, 8), chunks=(2, 1, 4, 4), dtype=np.float32)
    >>> grid = da.zeros((4, 5, 6, 2), chunks=(1, 5, 3, 2), dtype=np.float32)
    >>> ocd.grid_sample(x, grid).chunks
    ((2, 2), (1, 1, 1), (5,), (3, 3))""")
def grid_sample(X: da.Array, grid: Any, **attrs: Any) -> da.Array:
    op, eager = grid_plan.SAMPLE, grid_api.grid_sample
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, (grid,), attrs)
    g = kw.pop("grid")
    g = g if isinstance(g, da.Array) else da.from_array(g, chunks=-1, asarray=False)
    grid_plan.make_sample(tuple(X.shape), X.dtype, tuple(g.shape), g.dtype, kw["opset"],
                             mode=kw["mode"], padding_mode=kw["padding_mode"],
                             align_corners=kw["align_corners"])
    rank = X.ndim - 2
    X = _whole(X, range(2, X.ndim))
    g = g.rechunk({0: X.chunks[0], rank + 1: -1})
    out = ("n", "c", *(f"o{d}" for d in range(rank)))
    return da.blockwise(functools.partial(_sample_block, backend=backend, kw=kw), out,
                        X, ("n", "c", *(f"s{d}" for d in range(rank))),
                        g, ("n", *out[2:], "k"), dtype=X.dtype, meta=meta_from_array(X),
                        concatenate=True, token=eager.__name__)


def _affine_block(t: Any, size: tuple[int, ...], backend: str, kw: dict[str, Any]) -> Any:
    with execution.backend(backend):
        return grid_api.affine_grid(t, (t.shape[0], *size[1:]), **kw)


@_doc(op="AffineGrid",
      chunks="""The grid's batch axis takes theta's chunks; every other axis is one chunk. size is
    read on the host when the graph is built.""",
      example=""">>> theta = da.zeros((4, 2, 3), chunks=(2, 2, 3), dtype=np.float32)
    >>> ocd.affine_grid(theta, [4, 1, 5, 6]).chunks
    ((2, 2), (5,), (6,), (2,))""")
def affine_grid(theta: da.Array, size: Any, **attrs: Any) -> da.Array:
    op, eager = grid_plan.AFFINE, grid_api.affine_grid
    backend = _backend(theta, op)
    kw = _keywords(eager, op, theta, (size,), attrs)
    pl = grid_plan.make_affine(tuple(theta.shape), theta.dtype, kw.pop("size"), kw["opset"],
                                  align_corners=kw["align_corners"])
    out = ("n", *(f"o{d}" for d in range(pl.rank)), "k")
    return da.blockwise(
        functools.partial(_affine_block, size=(pl.out_shape[0], 1, *pl.lengths),
                          backend=backend, kw=kw), out, _whole(theta, (1, 2)), ("n", "i", "j"),
        new_axes=dict(zip(out[1:], pl.out_shape[1:])), dtype=theta.dtype,
        meta=meta_from_array(theta), concatenate=True, token=eager.__name__)


# ---------------------------------------------------------------- RoiAlign, MaxRoiPool

def _roi(op: str, eager: Callable[..., Any], X: da.Array, inputs: tuple[Any, ...],
         attrs: dict[str, Any]) -> da.Array:
    """`eager` on each channel block of X with every region (the boxes whole)."""
    backend = _backend(X, op)
    kw = _keywords(eager, op, X, inputs, attrs)
    parts = [kw.pop(name) for name in ("rois", "batch_indices") if name in kw]
    parts = [p if isinstance(p, da.Array) else da.from_array(p, chunks=-1, asarray=False)
             for p in parts]
    opset, given = kw["opset"], {k: v for k, v in kw.items() if k != "opset"}
    pl = roi_plan.make_align(X, parts[0], parts[1], opset, given) \
        if op == roi_plan.ROI_ALIGN else roi_plan.make_pool(X, parts[0], opset, given)
    X = _whole(X, (0, 2, 3))
    names = [("k", "j"), ("k",)][:len(parts)]
    pairs = [a for part, index in zip(parts, names) for a in (part.rechunk(-1), index)]
    return da.blockwise(functools.partial(_roi_block, eager=eager, backend=backend, kw=kw),
                        ("k", "c", "h", "w"), X, ("n", "c", "y", "x"), *pairs,
                        new_axes={"h": pl.pooled[0], "w": pl.pooled[1]}, dtype=X.dtype,
                        meta=meta_from_array(X), concatenate=True, token=eager.__name__)


def _roi_block(x: Any, *parts: Any, eager: Callable[..., Any], backend: str,
               kw: dict[str, Any]) -> Any:
    with execution.backend(backend):
        return eager(x, *parts, **kw)


_ROI_CHUNKS = """X's channels keep their chunks; its batch and spatial axes are one chunk, and
    every block pools every region (rois{and} whole: NumPy, CuPy or dask arrays)."""


@_doc(op="RoiAlign", chunks=_ROI_CHUNKS.format(**{"and": " and batch_indices"}),
      example=""">>> x = da.ones((2, 6, 8, 8), chunks=(1, 4, 8, 8), dtype=np.float32)
    >>> rois = np.array([[0, 0, 4, 4], [2, 2, 6, 7]], np.float32)
    >>> y = ocd.roi_align(x, rois, np.array([0, 1]), output_height=3, output_width=2)
    >>> y.chunks
    ((2,), (4, 2), (3,), (2,))""")
def roi_align(X: da.Array, rois: Any, batch_indices: Any, **attrs: Any) -> da.Array:
    return _roi(roi_plan.ROI_ALIGN, roi_api.roi_align, X, (rois, batch_indices), attrs)


@_doc(op="MaxRoiPool", chunks=_ROI_CHUNKS.format(**{"and": ""}),
      example=""">>> x = da.ones((2, 6, 8, 8), chunks=(1, 4, 8, 8), dtype=np.float32)
    >>> rois = np.array([[0, 0, 0, 4, 4], [1, 2, 2, 6, 7]], np.float32)
    >>> ocd.max_roi_pool(x, rois, pooled_shape=[2, 2]).chunks
    ((2,), (4, 2), (2,), (2,))""")
def max_roi_pool(X: da.Array, rois: Any, **attrs: Any) -> da.Array:
    return _roi(roi_plan.MAX_ROI_POOL, roi_api.max_roi_pool, X, (rois,), attrs)
