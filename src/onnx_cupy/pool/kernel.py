"""The kernel path of AveragePool, LpPool, MaxPool and the global pools: parameter structs,
instantiation and grid of kernels/pool.cu for a plan (onnx_cupy.pool.plan), launched on the GPU or
the emulator.

Plans with 1-3 spatial axes whose coordinates and per-plane sizes fit an int, AveragePool, LpPool
with p = 1 or 2 or MaxPool without indices, run the fast kernel `pool_fast` (rank and mode as
template parameters, OUTPUTS outputs per thread along the last axis, the N*C planes on grid y,
runtime divisions as host-computed multiply-shifts). 2-D plans whose last axis has one of the
WINDOWS (kernel size, stride), dilation 1 and unit input stride take its fixed-window instantiation:
a row's loads unrolled and shared between overlapping windows. Every other plan runs the generic
kernel `pool`, instantiated per spatial rank. Both take 32-bit offsets where every input offset and
output index fits, else 64-bit ones. All visit a window's taps in the same order (summing and
dividing by the same count, or taking the maximum), so they give identical results. MaxPool's
indices come from the generic kernel. The global pools run `pool_global` (prepare_global): a block
per (n, c) plane reducing it by warp shuffles and shared memory, in the fixed order that the NumPy
path repeats (segments of plan.SEGMENT terms in the accumulation type, double after them: see
kernels/pool.cu), so that both give the same bits. PyTorch's adaptive pooling runs
`pool_adaptive` (prepare_adaptive): one thread per output, its window bounds from the output
coordinate by host-computed multiply-shifts. AveragePool, LpPool and adaptive average windows of
more than plan.WIDE_SUMS terms sum in double (WIDE, ADAPTIVE_WIDE), as the NumPy path sums them
in float64."""
from __future__ import annotations

import enum
import functools
import math
from typing import Any

import numpy as np

from ..core import arrays, dtypes, kernel_call, launcher, loader, numerics, records
from . import plan
from .plan import GLOBAL_OPS, MAX_SPATIAL, OPS, GlobalPlan, PoolPlan

FAMILY = "pool"
RANKS = tuple(range(1, MAX_SPATIAL + 1))  # spatial ranks of the generic kernel
# the generic kernel's PoolGeom::mode per operator (POOL_AVERAGE, POOL_LP, POOL_MAX)
GENERIC_MODES = {"AveragePool": 0, "LpPool": 1, "MaxPool": 2}
# every dtype a pooling operator takes, floats first (MaxPool's int8/uint8 accumulate in float,
# which holds every value exactly)
DTYPES = tuple(t for t in (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)
               if any(t in plan.DTYPES[op] for op in OPS))
BUDGET = 150         # instructions per output of a float16/bfloat16/float32 fast path

_GEOM = np.dtype(
    [(f, "<i8") for f in ("total", "channels", "stride_n", "stride_c", "mode", "indices",
                          "plane_size")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in ("in_shape", "in_stride", "out_shape", "kernel", "step",
                                             "dilation", "pad_begin", "count_begin", "count_end",
                                             "index_stride")]
    + [("p", "<f8"), ("by_channels", "<u4", (2,))]
    + [(f, "<u4", (MAX_SPATIAL, 2)) for f in ("by_out_shape", "by_dilation")],
    align=True,
)

OUTPUTS = 4          # outputs per thread of pool_fast (POOL_OUTPUTS)
MIN_BLOCKS = 4       # blocks of launcher.BLOCK threads resident per SM that pool_fast is compiled
                     # for (POOL_MIN_BLOCKS, its __launch_bounds__): 50 % occupancy
THREADS = 1 << 19    # beyond about this many threads (3 waves of an H100), planes loop: each
                     # thread's window set-up then serves several planes
FAST_RANKS = (1, 2, 3)   # spatial ranks of pool_fast; its parameter struct holds max(FAST_RANKS)
# Last-axis windows (kernel size, stride) compiled in, for 2-D pooling: the image models' 2x2 s2
# and 3x3 s1/s2; any other window is read from PoolFastGeom (oc::RuntimeWindow).
WINDOWS = ((2, 2), (3, 1), (3, 2))
WINDOW_RANKS = (2,)


class FastMode(enum.Enum):
    """What a pool_fast instantiation computes (oc::PoolMode, spelled as the value): AveragePool,
    LpPool with p = 1 or p = 2, or MaxPool."""

    average = "oc::PoolMode::average"
    l1 = "oc::PoolMode::l1"
    l2 = "oc::PoolMode::l2"
    max = "oc::PoolMode::max"

    @property
    def op(self) -> str:
        """The operator it serves."""
        return {"average": "AveragePool", "max": "MaxPool"}.get(self.name, "LpPool")


_FAST_GEOM = np.dtype(
    [(f, "<i8") for f in ("stride_n", "stride_c")] + [("in_stride", "<i8", (max(FAST_RANKS),))]
    + [(f, "<i4") for f in ("planes", "channels", "work", "groups", "out_plane")]
    + [(f, "<u4", (2,)) for f in ("by_channels", "by_groups", "by_mid")]
    + [(f, "<i4", (max(FAST_RANKS),)) for f in ("in_len", "out_len", "kernel", "step", "dilation",
                                                 "pad_begin", "count_begin", "count_end")]
    + [("by_dilation", "<u4", (max(FAST_RANKS), 2))],
    align=True,  # as the C struct: padded to a multiple of its 8-byte fields
)

_GLOBAL_GEOM = np.dtype(
    [(f, "<i8") for f in ("planes", "channels", "stride_n", "stride_c", "length", "step", "mode")]
    + [("p", "<f8")], align=True)
GLOBAL_MODES = {"GlobalAveragePool": "AveragePool", "GlobalLpPool": "LpPool",
                "GlobalMaxPool": "MaxPool"}  # the generic kernel's mode each one shares

_ADAPTIVE_GEOM = np.dtype(
    [(f, "<i8") for f in ("total", "channels", "stride_n", "stride_c", "max", "indices")]
    + [(f, "<i8", (MAX_SPATIAL,)) for f in ("in_shape", "in_stride", "out_shape")]
    + [("by_channels", "<u4", (2,)), ("by_out_shape", "<u4", (MAX_SPATIAL, 2))],
    align=True)
ADAPTIVE_RANKS = tuple(range(1, plan.ADAPTIVE_SPATIAL + 1))  # spatial ranks of pool_adaptive


def _typed(dtype_name: str, bits: int, acc: str | None = None) -> tuple[records.Argument, ...]:
    """The storage, accumulate and offset arguments every pool kernel starts with (accumulate:
    `acc`, or the dtype table's; float for MaxPool's integers)."""
    if acc is None:
        acc = dtypes.FLOAT_TYPES[dtype_name][1] if dtype_name in dtypes.FLOAT_TYPES else "float"
    return (records.storage(dtype_name), records.argument("accumulate", acc),
            records.index(bits))


def _taking(ops: tuple[str, ...], dtype_name: str) -> tuple[str, ...]:
    """Those of `ops` that take `dtype_name` at some version (pool.plan.DTYPES)."""
    return tuple(op for op in ops if dtype_name in plan.DTYPES[op])


# the gradients that launch a forward kernel for the output they read where the caller does not
# give it (kernel_grad._forward): MaxPool's Indices by the generic kernel (GlobalMaxPool's too,
# as one window per plane), LpPool's and GlobalLpPool's Y by their own kernels, an adaptive
# maximum's indices; a record lists them among its operators, so that warming a gradient warms
# what its first call launches
READ_BY_GRADIENTS = {"MaxPool": ("MaxPool gradient", "GlobalMaxPool gradient"),
                     "LpPool": ("LpPool gradient",), "GlobalLpPool": ("GlobalLpPool gradient",),
                     "AdaptiveMaxPool": ("AdaptiveMaxPool gradient",)}


def _serving(ops: tuple[str, ...], dtype_name: str, indices: bool = True) -> tuple[str, ...]:
    """Those of `ops` that take `dtype_name` (`_taking`), then the gradients that launch their
    kernel for a float dtype (READ_BY_GRADIENTS; MaxPool's only where the kernel writes
    `indices`)."""
    taken = _taking(ops, dtype_name)
    if dtype_name not in dtypes.FLOAT_TYPES:   # gradients: floating dtypes only
        return taken
    return (*taken, *(g for op in taken if indices or op != "MaxPool"
                      for g in READ_BY_GRADIENTS.get(op, ())))


def _window(window: tuple[int, int] | None) -> records.Argument:
    """pool_fast's Window argument: oc::FixedWindow<taps, step>, or oc::RuntimeWindow (None)."""
    if window is None:
        return records.argument("window", None, "oc::RuntimeWindow")
    return records.argument("window", window, f"oc::FixedWindow<{window[0]}, {window[1]}>")


# the generic kernel by (dtype, bits, rank): AveragePool, LpPool, MaxPool; outputs on grid x
GENERIC = {(t, b, r): records.Instantiation(
    FAMILY, "pool", (*_typed(t, b), records.argument("rank", r)), _serving(OPS, t), (t,),
    grid_stride="x", variant="per spatial rank", rank=r)
    for t in DTYPES for b in dtypes.INDEX_TYPES for r in RANKS}
# AveragePool and LpPool windows of more than plan.WIDE_SUMS terms, float16, bfloat16 or float32,
# by (dtype, rank): the generic kernel summing in double (64-bit offsets: such windows are rare,
# so one offset width serves them); float64's own instantiations already sum in double
WIDE_DTYPES = tuple(t for t in DTYPES if t in dtypes.FLOAT_TYPES
                    and dtypes.FLOAT_TYPES[t][1] != "double")
WIDE = {(t, r): records.Instantiation(
    FAMILY, "pool", (*_typed(t, 64, "double"), records.argument("rank", r)),
    _serving(("AveragePool", "LpPool"), t), (t,), grid_stride="x",
    variant="per spatial rank, double sums", rank=r)
    for t in WIDE_DTYPES for r in RANKS}
# the global kernel by (dtype, bits); planes on grid x
GLOBAL = {(t, b): records.Instantiation(
    FAMILY, "pool_global", _typed(t, b), _serving(GLOBAL_OPS, t), (t,), cooperative=True,
    grid_stride="x")
    for t in DTYPES if _taking(GLOBAL_OPS, t) for b in dtypes.INDEX_TYPES}
# the adaptive kernel by (dtype, bits, rank): PyTorch's adaptive average and max pooling
ADAPTIVE = {(t, b, r): records.Instantiation(
    FAMILY, "pool_adaptive", (*_typed(t, b), records.argument("rank", r)),
    _serving(plan.ADAPTIVE_OPS, t), (t,), grid_stride="x", variant="per spatial rank",
    rank=r)   # outputs on grid x
    for t in DTYPES if _taking(plan.ADAPTIVE_OPS, t) for b in dtypes.INDEX_TYPES
    for r in ADAPTIVE_RANKS}
# adaptive average windows of more than plan.WIDE_SUMS elements by (dtype, rank), as WIDE
ADAPTIVE_WIDE = {(t, r): records.Instantiation(
    FAMILY, "pool_adaptive", (*_typed(t, 64, "double"), records.argument("rank", r)),
    ("AdaptiveAveragePool",), (t,), grid_stride="x", variant="per spatial rank, double sums",
    rank=r)
    for t in WIDE_DTYPES if "AdaptiveAveragePool" in _taking(plan.ADAPTIVE_OPS, t)
    for r in ADAPTIVE_RANKS}
# the fast kernel by (dtype, bits, mode, rank, window)
FAST = {(t, b, m, r, w): records.Instantiation(
    FAMILY, "pool_fast",
    (*_typed(t, b), records.argument("mode", m.name, m.value), records.argument("rank", r),
     _window(w)),
    _serving((m.op,), t, indices=False), (t,), grid_stride="y", outputs=OUTPUTS,
    fast=True,  # planes on grid y
    budget=records.fast_budget(BUDGET, b),
    variant=f"{r}-D, " + (f"{w[0]}x{w[0]} s{w[1]}" if w else "runtime window"))
    for t in DTYPES for b in dtypes.INDEX_TYPES
    for m in FastMode if m.op in _taking(OPS, t)
    for r in FAST_RANKS
    for w in (None, *(WINDOWS if r in WINDOW_RANKS else ()))}

loader.register(FAMILY, [*GENERIC.values(), *WIDE.values(), *GLOBAL.values(), *FAST.values(),
                         *ADAPTIVE.values(), *ADAPTIVE_WIDE.values()],
                {"PoolGeom": _GEOM, "PoolFastGeom": _FAST_GEOM, "PoolGlobalGeom": _GLOBAL_GEOM,
                 "PoolAdaptiveGeom": _ADAPTIVE_GEOM},
                defines={"POOL_MAXD": MAX_SPATIAL, "POOL_OUTPUTS": OUTPUTS,
                         "POOL_FAST_MAXD": max(FAST_RANKS), "POOL_MIN_BLOCKS": MIN_BLOCKS,
                         "POOL_SEGMENT": plan.SEGMENT,
                         **{f"POOL_{k}": v for k, v in zip(("AVERAGE", "LP", "MAX"),
                                                           GENERIC_MODES.values())}})


def coordinate_reach(pl: PoolPlan) -> int:
    """Largest |value| the kernels' window coordinates reach (a tap range's ceiling division adds
    dilation - 1 to a coordinate difference)."""
    return max((o - 1) * s + k * d + b + e + n + 1 for o, s, k, d, b, e, n in zip(
        pl.out_shape[2:], pl.strides, pl.kernel, pl.dilations, pl.pads_begin, pl.pads_end,
        pl.in_shape[2:]))


def offset_reach(pl: PoolPlan, strides: tuple[int, ...]) -> int:
    """Largest index the kernels form in an input with element `strides` (|offset|, or the
    element count where stride-0 axes make that larger), with the one-dilation step past a
    window's last tap."""
    past = sum(d * abs(st) for d, st in zip(pl.dilations, strides[2:]))
    return arrays.index_reach(pl.in_shape, strides) + past


def reach(pl: PoolPlan, strides: tuple[int, ...]) -> int:
    """Largest |value| the kernels' index math forms for an input with element `strides`:
    window coordinates and input offsets."""
    return max(coordinate_reach(pl), offset_reach(pl, strides))


@functools.lru_cache(maxsize=512)
def geometry(pl: PoolPlan, x_strides: tuple[int, ...], bits: int, indices: bool = False
             ) -> np.ndarray:
    """The generic kernel's PoolGeom parameter struct for an input with these element strides and
    `bits`-bit indices (the multiply-shift divisors serve 32-bit ones); `indices`: MaxPool writes
    its winners' indices."""
    dividers = {}
    if bits == 32:
        unused = (1,) * (MAX_SPATIAL - pl.nd)
        dividers = {"by_channels": launcher.divider(pl.in_shape[1]),
                    "by_out_shape": [launcher.divider(n) for n in (*pl.out_shape[2:], *unused)],
                    "by_dilation": [launcher.divider(d) for d in (*pl.dilations, *unused)]}
    return launcher.parameter_struct(
        _GEOM, total=math.prod(pl.out_shape), channels=pl.in_shape[1],
        stride_n=x_strides[0], stride_c=x_strides[1], mode=GENERIC_MODES[pl.op],
        indices=indices, plane_size=math.prod(pl.in_shape[2:]), index_stride=pl.index_strides,
        p=pl.p,
        in_shape=pl.in_shape[2:], in_stride=x_strides[2:], out_shape=pl.out_shape[2:],
        kernel=pl.kernel, step=pl.strides, dilation=pl.dilations, pad_begin=pl.pads_begin,
        count_begin=pl.cnt_lo, count_end=pl.cnt_hi, **dividers)


@functools.lru_cache(maxsize=512)
def kernel_args(pl: PoolPlan, dtype: np.dtype, x_strides: tuple[int, ...], indices: bool = False
                ) -> launcher.LaunchSpec:
    """The generic kernel's launch for an input of `dtype` with these element strides
    (`indices`: MaxPool writes its winners' indices): one thread per output, grid-stride; its
    double-summing instantiation (WIDE) for a window of more than plan.WIDE_SUMS terms."""
    name, size = np.dtype(dtype).name, math.prod(pl.out_shape)
    if _double_sums(pl, dtype):
        return launcher.LaunchSpec(WIDE[name, pl.nd], None, size,
                                   (geometry(pl, x_strides, 64, indices),))
    bits = launcher.grid_offset_bits(size, reach(pl, x_strides))
    return launcher.LaunchSpec(GENERIC[name, bits, pl.nd], None, size,
                               (geometry(pl, x_strides, bits, indices),))


def _double_sums(pl: PoolPlan | plan.AdaptivePlan, dtype: np.dtype) -> bool:
    """Whether `pl`'s sums take the double-summing instantiations (WIDE, ADAPTIVE_WIDE): a wide
    plan (no MaxPool: it sums nothing) of a storage that accumulates in float."""
    return plan.wide(pl) and dtypes.accumulate_dtype(dtype) != np.float64


def fast_mode(pl: PoolPlan) -> FastMode | None:
    """The fast kernel's mode for this plan, or None (LpPool with p other than 1 and 2)."""
    if pl.op == "MaxPool":
        return FastMode.max
    if not pl.lp:
        return FastMode.average
    return {1.0: FastMode.l1, 2.0: FastMode.l2}.get(pl.p)


def fast_window(pl: PoolPlan, x_strides: tuple[int, ...]) -> tuple[int, int] | None:
    """The fast kernel's fixed last-axis window (kernel size, stride): one of WINDOWS for a rank
    in WINDOW_RANKS whose last axis has dilation 1 and unit input stride, else None (the runtime
    window)."""
    window = (pl.kernel[-1], pl.strides[-1])
    if (window in WINDOWS and pl.nd in WINDOW_RANKS and pl.dilations[-1] == 1
            and x_strides[-1] == 1):
        return window
    return None


@functools.lru_cache(maxsize=512)
def fast_kernel_args(pl: PoolPlan, dtype: np.dtype, x_strides: tuple[int, ...]
                     ) -> launcher.LaunchSpec | None:
    """The fast kernel's launch (its PoolFastGeom struct the constant), or None where the
    plan needs the generic one (rank > 3, LpPool p not in {1, 2}, a window summing in double
    (plan.wide), or a coordinate, per-plane size or thread index past 2**31 - 1). Offsets and
    output indices past 2**31 - 1 take its 64-bit
    instantiation."""
    mode = fast_mode(pl)
    if mode is None or pl.nd not in FAST_RANKS or plan.wide(pl):
        return None
    planes, out = pl.in_shape[0] * pl.in_shape[1], pl.out_shape[2:]
    groups = numerics.cdiv(out[-1], OUTPUTS)
    work = math.prod(out[:-1]) * groups
    bx, by = launcher.block_rows(work)
    gx = numerics.cdiv(work, bx)
    grid = (gx, max(1, min(numerics.cdiv(planes, by), launcher.MAX_GRID_YZ,
                           THREADS // (gx * bx * by))), 1)
    if dtypes.offset_bits(coordinate_reach(pl), math.prod(out), grid[0] * bx,
                         planes + grid[1] * by, out[-1] + OUTPUTS) != 32:
        return None
    bits = dtypes.offset_bits(math.prod(pl.out_shape), offset_reach(pl, x_strides))
    rank = pl.nd
    g = launcher.parameter_struct(
        _FAST_GEOM, planes=planes, channels=pl.in_shape[1], stride_n=x_strides[0],
        stride_c=x_strides[1], work=work, groups=groups, out_plane=math.prod(out),
        by_channels=launcher.divider(pl.in_shape[1]), by_groups=launcher.divider(groups),
        by_mid=launcher.divider(out[1] if rank == 3 else 1),
        in_len=pl.in_shape[2:], in_stride=x_strides[2:], out_len=out, kernel=pl.kernel,
        step=pl.strides, dilation=pl.dilations, pad_begin=pl.pads_begin, count_begin=pl.cnt_lo,
        count_end=pl.cnt_hi,
        by_dilation=[launcher.divider(d) for d in (*pl.dilations, 1, 1)[:max(FAST_RANKS)]])
    k = FAST[np.dtype(dtype).name, bits, mode, rank, fast_window(pl, x_strides)]
    return launcher.LaunchSpec(k, (grid, (bx, by, 1)), math.prod(pl.out_shape), (g,))


def prepare(pl: PoolPlan, device: Any, x: Any, indices: bool = False) -> kernel_call.Body:
    """The body of plan `pl` on `device` for X laid out as `x` (whole-element strides):
    body(X, out) -> Y, or (Y, Indices) with `indices` (int64, MaxPool's winners' indices: the
    generic kernel). The fast kernel runs where the plan allows it, else the generic one."""
    strides = arrays.whole_element_strides(x)
    assert strides is not None   # kernel_call's default walks
    size = math.prod(pl.out_shape)
    fast = None if indices or not size else fast_kernel_args(pl, x.dtype, strides)
    int64, dtype, empty = np.dtype(np.int64), x.dtype, device.empty   # X's: the key holds it
    if not size:
        return lambda X, out: _outputs(empty, pl.out_shape, dtype, out, indices)
    step = launcher.Launch(device, fast if fast is not None else
                           kernel_args(pl, x.dtype, strides, indices))
    if fast is not None:
        def run_fast(X: Any, out: Any) -> Any:
            Y = empty(pl.out_shape, dtype) if out is None else out
            step(X, Y)          # (x, y, fast)
            return Y
        return run_fast

    def run(X: Any, out: Any) -> Any:
        Y = empty(pl.out_shape, dtype) if out is None else out
        where = empty(pl.out_shape, int64) if indices else None
        step(X, Y, where)   # (x, y, indices, geom): None, no indices
        return Y if where is None else (Y, where)
    return run


def _outputs(empty: Any, shape: tuple[int, ...], dtype: np.dtype, out: Any, indices: bool
             ) -> Any:
    """Y (and MaxPool's int64 Indices, with `indices`) of an output with nothing to launch."""
    Y = empty(shape, dtype) if out is None else out
    return (Y, empty(shape, np.dtype(np.int64))) if indices else Y


def walks_global(pl: GlobalPlan, index: int, x: Any) -> bool:
    """Whether pool_global reads X laid out as `x`: one element stride walks each plane's
    spatial axes."""
    strides = arrays.whole_element_strides(x)
    return strides is not None and arrays.merged_stride(pl.in_shape[2:], strides[2:]) is not None


def prepare_global(pl: GlobalPlan, device: Any, x: Any) -> kernel_call.Body:
    """The body of a global pooling `pl` on `device` for X laid out as `x` (`walks_global`):
    body(X, out) -> Y, by pool_global, a block per (n, c) plane."""
    strides = arrays.whole_element_strides(x)
    assert strides is not None   # walks_global
    walk = arrays.merged_stride(pl.in_shape[2:], strides[2:])
    assert walk is not None
    planes = pl.in_shape[0] * pl.in_shape[1]
    empty, dtype = device.empty, x.dtype   # X's dtype: the key holds it
    if not planes:
        return lambda X, out: empty(pl.out_shape, dtype) if out is None else out
    bits = dtypes.offset_bits(arrays.index_reach(pl.in_shape, strides) + loader.BLOCK
                             * max(1, abs(walk[1])), planes + launcher.MAX_BLOCKS)
    g = launcher.parameter_struct(
        _GLOBAL_GEOM, planes=planes, channels=pl.in_shape[1], stride_n=strides[0],
        stride_c=strides[1], length=pl.length, step=walk[1],
        mode=GENERIC_MODES[GLOBAL_MODES[pl.op]], p=pl.p)
    shape = ((min(planes, launcher.MAX_BLOCKS), 1, 1), (loader.BLOCK, 1, 1))
    step = launcher.Launch(device, launcher.LaunchSpec(
        GLOBAL[np.dtype(x.dtype).name, bits], shape, planes, (g,)))

    def body(X: Any, out: Any) -> Any:   # Y is not empty: there are planes
        Y = empty(pl.out_shape, dtype) if out is None else out
        step(X, Y)
        return Y
    return body


@functools.lru_cache(maxsize=512)
def adaptive_args(pl: plan.AdaptivePlan, dtype: np.dtype, x_strides: tuple[int, ...],
                  indices: bool) -> launcher.LaunchSpec:
    """The adaptive kernel's launch for an input of `dtype` with these element strides
    (`indices`: the maximum's index within its plane); 32-bit indices where every offset,
    output index and window bound numerator ((o + 1) * n + m - 1) fits an int; an average of
    windows of more than plan.WIDE_SUMS elements sums in double (ADAPTIVE_WIDE, 64-bit
    indices)."""
    total, ins, outs = math.prod(pl.out_shape), pl.in_shape[2:], pl.out_shape[2:]
    wide = _double_sums(pl, dtype)
    bits = 64 if wide else launcher.grid_offset_bits(
        total, arrays.index_reach(pl.in_shape, x_strides),
        *((m + 1) * n + m for n, m in zip(ins, outs)))
    dividers = {}
    if bits == 32:
        dividers = {"by_channels": launcher.divider(pl.in_shape[1]),
                    "by_out_shape": [launcher.divider(max(m, 1))
                                     for m in (*outs, *(1,) * (MAX_SPATIAL - pl.nd))]}
    g = launcher.parameter_struct(
        _ADAPTIVE_GEOM, total=total, channels=pl.in_shape[1], stride_n=x_strides[0],
        stride_c=x_strides[1], max=pl.op == "AdaptiveMaxPool", indices=indices, in_shape=ins,
        in_stride=x_strides[2:], out_shape=outs, **dividers)
    name = np.dtype(dtype).name
    k = ADAPTIVE_WIDE[name, pl.nd] if wide else ADAPTIVE[name, bits, pl.nd]
    return launcher.LaunchSpec(k, None, total, (g,))


def prepare_adaptive(pl: plan.AdaptivePlan, device: Any, x: Any, indices: bool = False
                     ) -> kernel_call.Body:
    """The body of the adaptive plan `pl` on `device` for X laid out as `x` (whole-element
    strides): body(X, out) -> Y, or (Y, Indices) with `indices` (int64, the maximum's index
    within each (n, c) plane), by pool_adaptive, one thread per output."""
    strides = arrays.whole_element_strides(x)
    assert strides is not None   # kernel_call's default walks
    int64, dtype, empty = np.dtype(np.int64), x.dtype, device.empty   # X's: the key holds it
    if not math.prod(pl.out_shape):
        return lambda X, out: _outputs(empty, pl.out_shape, dtype, out, indices)
    step = launcher.Launch(device, adaptive_args(pl, x.dtype, strides, indices))

    def body(X: Any, out: Any) -> Any:
        Y = empty(pl.out_shape, dtype) if out is None else out
        where = empty(pl.out_shape, int64) if indices else None
        step(X, Y, where)
        return Y if where is None else (Y, where)
    return body
