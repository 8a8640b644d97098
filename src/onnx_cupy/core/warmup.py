"""Ahead-of-time compilation: the kernel instantiations that the operators' first calls compile,
compiled before any call (on the CuPy path by NVRTC into the library's image cache, in memory
and on disk under ONNX_CUPY_CACHE/nvrtc; on the emulated path by the host compiler into
ONNX_CUPY_CACHE/emulator). Which instantiations serve which
operator and dtype is read from the records the families registered (their `ops` and `dtypes`
fields); this module knows no family."""
from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import os
import time
from collections.abc import Iterable
from typing import Any, NamedTuple, cast

import numpy as np

from . import dtypes as dtype_table
from . import execution, loader
from .records import Instantiation


class Warmed(NamedTuple):
    """One kernel instantiation a warm-up compiles: the operators and dtypes (of those selected)
    whose calls may launch it, and the seconds spent compiling or loading it (None: dry run)."""

    kernel: Instantiation
    ops: tuple[str, ...]
    dtypes: tuple[str, ...]
    seconds: float | None = None

    @property
    def family(self) -> str:
        return self.kernel.family

    @property
    def expression(self) -> str:
        return self.kernel.expression


def operators() -> tuple[str, ...]:
    """The operators that run kernels, by ONNX name."""
    return tuple(sorted({op for k in loader.instantiations() for op in k.ops}))


@functools.cache
def _dtype_order() -> dict[str, int]:
    return {name: i for i, name in enumerate((*dtype_table.FLOAT_TYPES, *dtype_table.INT_TYPES))}


def dtype_names() -> tuple[str, ...]:
    """Every input dtype some kernel serves, by NumPy name (bfloat16 where ml_dtypes is
    installed): floats, integers, then the rest."""
    seen = dict.fromkeys(d for k in loader.instantiations() for d in k.dtypes
                         if d != "bfloat16" or dtype_table.BFLOAT16 is not None)
    order = _dtype_order()
    return tuple(sorted(seen, key=lambda n: order.get(n, len(order))))  # stable: first seen


def _choose(given: Any, known: tuple[str, ...], what: str, name: Any) -> tuple[str, ...]:
    """The selection `given` (None: all, one item or several) validated against `known`."""
    if given is None:
        return known
    items = [given] if isinstance(given, str) or not isinstance(given, Iterable) else list(given)
    chosen = []
    for item in items:
        key = name(item)
        if key not in known:
            raise ValueError(f"warmup: {what}={item!r} is not one of {', '.join(known)}")
        chosen.append(key)
    if not chosen:
        raise ValueError(f"warmup: {what} is empty (None selects all)")
    return tuple(dict.fromkeys(chosen))


def _op_name(op: Any) -> str:
    by_lower = {o.lower(): o for o in operators()}
    return by_lower.get(str(op).lower().replace("_", ""), str(op))


def _dtype_name(dtype: Any) -> str:
    if isinstance(dtype, str) and dtype in dtype_names():
        return dtype
    try:  # cast: NumPy's stubs type dtype.name as typing.LiteralString, absent from Python 3.10
        return cast(str, np.dtype(dtype).name)
    except TypeError:
        return str(dtype)


def instantiations(ops: Any = None, dtypes: Any = None) -> list[Warmed]:
    """The registered instantiations that calls of `ops` on inputs of `dtypes` may launch (None:
    all), each once, family by family in registration order (see `warmup`)."""
    chosen_ops = _choose(ops, operators(), "ops", _op_name)
    chosen_dtypes = _choose(dtypes, dtype_names(), "dtypes", _dtype_name)
    found: list[Warmed] = []
    served: set[str] = set()
    for k in loader.instantiations():
        mine_ops = tuple(op for op in sorted(k.ops) if op in chosen_ops)
        mine_dtypes = tuple(d for d in dtype_names() if d in k.dtypes and d in chosen_dtypes)
        if mine_ops and mine_dtypes:
            found.append(Warmed(k, mine_ops, mine_dtypes))
            served.update(mine_dtypes)
    unserved = [d for d in chosen_dtypes if d not in served]
    if dtypes is not None and unserved:
        raise ValueError(f"warmup: no kernel of {', '.join(chosen_ops)} takes dtype "
                         f"{', '.join(unserved)}")
    return found


def warmup(ops: Any = None, dtypes: Any = None, backend: str | None = None, *,
           dry_run: bool = False, jobs: int | None = None) -> list[Warmed]:
    """Compile ahead of time the kernels that first calls would compile.

    A call compiles, on first use per device, the one kernel instantiation it launches (two for
    Hardmax's scan-and-merge path and for MaxUnpool's scatter and gather); `warmup` compiles
    every instantiation that calls of `ops` on inputs of `dtypes` may launch, so that no later
    call waits for a compiler. On the ``cupy`` path they are compiled for the current device's
    architecture and loaded on it, and kept in memory and on disk (``ONNX_CUPY_CACHE``'s
    ``nvrtc/``, read by later processes on a GPU of the same architecture, whatever their
    CuPy); on the ``emulated`` path into the host libraries under ``ONNX_CUPY_CACHE``'s
    ``emulator/``.

    Parameters
    ----------
    ops : str or sequence of str, optional
        ONNX operator names (``"AveragePool"``, ``"LpPool"``, ``"Hardmax"``, ``"Resize"``; case
        and underscores ignored). None: all.
    dtypes : dtype-like or sequence of dtype-like, optional
        Input dtypes (``"float32"``, ``np.float16``, ``"bfloat16"``, ...). None: every dtype the
        operators take.
    backend : {"cupy", "emulated", "numpy"}, optional
        The path to warm. None: the default path (``cupy`` where it can run, else ``numpy``,
        which compiles nothing and returns an empty list).
    dry_run : bool, default False
        List what would be compiled, compile nothing (no GPU or compiler needed). The command
        ``onnx-cupy warmup --dry-run`` also times each with NVRTC.
    jobs : int, optional
        Instantiations compiled at a time (default: the CPU count).

    Returns
    -------
    list of Warmed
        Each instantiation once: its record (``kernel``; ``family`` and ``expression`` read
        from it), the operators and dtypes (of those selected) it serves, and the seconds spent
        compiling or loading it (next to none where this process had it already; None on a dry
        run).

    Raises
    ------
    ValueError
        An unknown operator, dtype or backend, or a dtype that none of `ops` takes.
    RuntimeError
        Backend ``cupy`` where it cannot run: the message says why (the CUDA driver's error
        where no GPU is usable, or what CuPy lacks and how to install it).

    Examples
    --------
    >>> import onnx_cupy as oc
    >>> kernels = oc.warmup(ops="Hardmax", dtypes="float32", backend="cupy", dry_run=True)
    >>> len(kernels), kernels[0].expression, kernels[0].ops, kernels[0].dtypes
    (10, 'hardmax_scan<float, int>', ('Hardmax',), ('float32',))
    >>> sorted({k.family for k in oc.warmup(ops=["AveragePool", "Resize"], dry_run=True,
    ...                                     backend="emulated")})
    ['elementwise', 'pool', 'resize']
    """
    backend = execution.default_backend() if backend is None else backend
    if backend not in execution.BACKENDS:
        raise ValueError(f"warmup: backend must be one of {execution.BACKENDS}, got {backend!r}")
    chosen = instantiations(ops, dtypes)
    if dry_run or backend == "numpy":
        return chosen if backend != "numpy" else []
    reason = execution.cupy_unusable() if backend == "cupy" else None
    if reason is not None:
        raise RuntimeError(f"warmup: backend 'cupy' cannot run here: {reason} "
                           f"(backend='emulated' warms the host compiler's libraries)")
    on_device: Any = contextlib.nullcontext
    if backend == "cupy":
        compile_one = loader.cuda_function
        cupy: Any = execution.cupy_module()
        current = cupy.cuda.runtime.getDevice()  # each worker thread makes it its own
        on_device = functools.partial(cupy.cuda.Device, current)
    else:
        from . import emulator  # only the emulated path needs the host compiler

        emulator.shim_header(wait=True)  # precompiled once, for the builds that follow
        compile_one = emulator.library   # type: ignore[assignment]

    def timed(w: Warmed) -> Warmed:
        start = time.perf_counter()
        with on_device():
            compile_one(w.kernel)
        return w._replace(seconds=time.perf_counter() - start)

    workers = max(1, jobs or os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        return list(pool.map(timed, chosen))
