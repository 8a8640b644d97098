"""AveragePool, LpPool and MaxPool, every opset version.

  AveragePool: Y[n,c,o] = sum_{w in W(o), w inside X} X[n,c,w] / |W(o) ∩ counted region|
  LpPool:      Y[n,c,o] = (sum_{w in W(o), w inside X} |X[n,c,w]|^p)^(1/p)
with W(o)_i = {o_i*strides_i - pads_begin_i + j*dilations_i : 0 <= j < kernel_shape_i}. The counted
region is X itself (count_include_pad=0, and always at AveragePool-1) or X plus its explicit/auto
pads (count_include_pad=1); positions past the padded end (ceil_mode overhang) never count. A
window with nothing counted gives NaN (0/0); an LpPool window with no element of X gives 0.
  MaxPool:     Y[n,c,o] = max_{w in W(o), w inside X} X[n,c,w]   (pads never win)
MaxPool's first element of X in window order (axis 0 outermost, taps ascending) that is greater
than every earlier one wins, a NaN always (a NaN propagates; the last NaN wins, as in PyTorch); a
window with no element of X gives -inf (the dtype's minimum for integers) and index -1. Indices
flatten (n, c, spatial position) row-major, the spatial position column-major with
storage_order=1.

Output length per spatial axis, every version (dk = (kernel - 1) * dilation + 1, s = stride):
  NOTSET ("" too)  floor((n + b + e - dk) / s) + 1, or ceil(...) + 1 with ceil_mode; with
                   ceil_mode a last window that would start in the right padding is dropped
  VALID            floor((n - dk) / s) + 1, no pads
  SAME_UPPER/LOWER ceil(n / s), pad total max(0, (out - 1) * s + dk - n), the odd one at the
                   end (UPPER) or the beginning (LOWER)
`pads` given next to an auto_pad other than NOTSET are ignored, and ceil_mode does not change
auto_pad lengths (its ceil forms equal the floor forms above). A length of 0 gives an empty
output. onnxruntime and onnx.reference give these shapes and values wherever they agree; the
docs/semantics.md lists where they and the version texts differ.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import arrays, attributes, dtypes, numerics, opsets

OPS = ("AveragePool", "LpPool", "MaxPool")
GLOBAL_OPS = ("GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool")
# PyTorch's adaptive pooling, which no ONNX operator has (its one version: 1)
ADAPTIVE_OPS = ("AdaptiveAveragePool", "AdaptiveMaxPool")
ADAPTIVE_SPATIAL = 3   # most spatial axes of an adaptive pooling (PyTorch's 1-D, 2-D and 3-D)
# Per operator, the version that brought each input dtype (read by core.dtypes.check)
_FLOATS = {**dtypes.since(1, *dtypes.FLOATS), **dtypes.since(22, "bfloat16")}
DTYPES: dict[str, dict[str, int]] = {
    **dict.fromkeys(("AveragePool", "LpPool", *GLOBAL_OPS), _FLOATS),
    "MaxPool": {**_FLOATS, **dtypes.since(12, "int8", "uint8")},
    **dict.fromkeys(ADAPTIVE_OPS, dtypes.since(1, *dtypes.FLOATS, "bfloat16")),
}
INDICES_FROM = 8  # MaxPool's second output, Indices, exists from this version
# Sums, on every path (see accumulate_dtype and kernels/pool.cu): an AveragePool or LpPool window
# (or PyTorch's adaptive average) of more than WIDE_SUMS terms, or counted positions, sums in
# float64 whatever the storage (float's 24 bits hold every count up to it, and a float sum of
# more terms drifts); a global pool sums segments of SEGMENT consecutive terms of a lane
# (POOL_SEGMENT) in the accumulation type and everything after in float64: as accurate as
# NumPy's pairwise float sums (16 terms an accumulator) whatever the plane's length, while the
# NumPy path sums a float32 X without converting every element (every term in float64 took 3.5
# times the float32 sum's time on (1, 64, 224, 224)) and a GPU with little FP64 throughput
# does one double addition per 16 elements.
WIDE_SUMS = 1 << 24
SEGMENT = 16
MAX_SPATIAL = 8  # most spatial axes (the kernels' parameter structs hold this many: POOL_MAXD)
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "")  # "" means NOTSET


@dataclass(frozen=True)
class Shapes:
    """The operator, its version in force, and the input and output shapes of a pooling."""

    op: str
    version: int
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]


@dataclass(frozen=True)
class PoolPlan(Shapes):
    """Everything both execution paths need, computed once on the host."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    cnt_lo: tuple[int, ...]
    cnt_hi: tuple[int, ...]
    lp: bool
    p: float
    storage_order: int = 0  # MaxPool's index order: 0 row-major, 1 column-major spatial dims

    @property
    def nd(self) -> int:
        return len(self.kernel)

    @property
    def index_strides(self) -> tuple[int, ...]:
        """MaxPool's index step per spatial axis: row-major (storage_order 0) or column-major
        (1) over the input's spatial dims."""
        dims, step, steps = self.in_shape[2:], 1, []
        for n in (dims if self.storage_order else reversed(dims)):
            steps.append(step)
            step *= n
        return tuple(steps if self.storage_order else reversed(steps))


def _p_value(op: str, opset: int, p: Any) -> float:
    if not attributes.is_real(p):
        raise TypeError(f"{op}: attribute 'p' must be a number, got {p!r}")
    if opsets.version(op, opset) >= 2 and not float(p).is_integer():
        raise ValueError(f"{op}: attribute 'p' must be an integer at {opsets.in_force(op, opset)} "
                         f"(a float p exists only in {op}-1), got {p!r}")
    if not math.isfinite(float(p)) or p <= 0:
        raise ValueError(f"{op}: attribute 'p' must be > 0, got {p!r}")
    return float(p)


def _check_extent(op: str, axis: int, n: int, k: int, s: int, d: int, b: int, e: int,
                  *given: tuple[int, ...]) -> None:
    """ValueError where the positions a window reaches along `axis` (from -b to about
    n + e + (k - 1) * d + s) pass attributes.EXTENT_LIMIT, naming the attribute that weighs
    most and its values (`given`: kernel_shape, strides, dilations, pads)."""
    span = n + b + e + (k - 1) * d + s
    if abs(span) <= attributes.EXTENT_LIMIT:
        return
    weights = {"pads": b + e, "kernel_shape" if k >= d else "dilations": (k - 1) * d,
               "strides": s}
    name = max(weights, key=weights.__getitem__)
    values = given[("kernel_shape", "strides", "dilations", "pads").index(name)]
    attributes.extent(op, span, f"window positions along spatial axis {axis} up to",
                      f"attribute '{name}' = {list(values)} (input length {n})")


def spatial_axis(n: int, k: int, s: int, d: int, b: int, e: int, auto_pad: str, ceil: int
                 ) -> tuple[int, int, int]:
    """(output length, begin pad, end pad) of one spatial axis of length `n` with kernel `k`,
    stride `s`, dilation `d`, explicit pads `b` and `e`; see the module docstring."""
    dk = (k - 1) * d + 1
    if auto_pad == "VALID":
        return (n - dk) // s + 1, 0, 0
    if auto_pad != "NOTSET":
        length = numerics.cdiv(n, s)
        total = max(0, (length - 1) * s + dk - n)
        b = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        return length, b, total - b
    span = n + b + e - dk
    length = (numerics.cdiv(span, s) if ceil else span // s) + 1
    if ceil and (length - 1) * s >= n + b:   # the last window would start in the right padding
        length -= 1
    return length, b, e


@functools.lru_cache(maxsize=512, typed=True)  # typed: 1.0 must not hit 1's plan
def plan(op: str, opset: int, shape: tuple[int, ...], dtype: np.dtype, kernel_shape: Any,
         auto_pad: Any, ceil_mode: Any, count_include_pad: Any, dilations: Any, pads: Any,
         strides: Any, p: Any, storage_order: Any = 0) -> PoolPlan:
    """Validate attributes for the opset version in force and compute the pooling plan."""
    version = opsets.version(op, opset)
    opsets.check_given(op, opset, {   # a flag of 0 or None is not given
        "count_include_pad": count_include_pad is not None and attributes.differs(
            count_include_pad, 0),
        "ceil_mode": ceil_mode is not None and attributes.differs(ceil_mode, 0),
        "dilations": dilations is not None,
        "storage_order": storage_order is not None and attributes.differs(storage_order, 0),
    })
    if len(shape) < 3:
        raise ValueError(f"{op}: X must have rank >= 3 ([N, C, D1, ...]), got shape {shape}")
    nd = len(shape) - 2
    if nd > MAX_SPATIAL:
        raise ValueError(f"{op}: at most {MAX_SPATIAL} spatial dimensions are supported, got {nd}")
    dtypes.check(op, DTYPES[op], dtype, version, opset)
    if kernel_shape is None:
        raise ValueError(f"{op}: attribute 'kernel_shape' is required")
    per = f"for an input with {nd} spatial dimensions"
    kernel = attributes.ints(op, "kernel_shape", kernel_shape, nd, 1, per)
    steps = attributes.ints(op, "strides", strides, nd, 1, per) if strides is not None \
        else (1,) * nd
    dil = attributes.ints(op, "dilations", dilations, nd, 1, per) if dilations is not None \
        else (1,) * nd
    if not isinstance(auto_pad, str) or auto_pad not in AUTO_PADS:
        raise ValueError(f"{op}: attribute 'auto_pad' must be one of {AUTO_PADS}, got {auto_pad!r}")
    pad = attributes.ints(op, "pads", pads, 2 * nd, 0, per) if pads is not None \
        else (0,) * (2 * nd)
    auto_pad = auto_pad or "NOTSET"
    ceil = attributes.flag(op, "ceil_mode", ceil_mode)
    include = attributes.flag(op, "count_include_pad", count_include_pad)
    order = attributes.flag(op, "storage_order", 0 if storage_order is None else storage_order)
    lp = op == "LpPool"
    p_value = _p_value(op, opset, p) if lp else 1.0

    out, begin, end = [], [], []
    for i, (n, k, s, d) in enumerate(zip(shape[2:], kernel, steps, dil)):
        _check_extent(op, i, n, k, s, d, pad[i], pad[nd + i], kernel, steps, dil, pad)
        length, b, e = spatial_axis(n, k, s, d, pad[i], pad[nd + i], auto_pad, ceil)
        if length < 0:
            raise ValueError(
                f"{op}: output spatial size {length} < 0 along spatial axis {i} (input {n}, "
                f"kernel {k}, dilation {d}, stride {s}, pads {b}+{e}, auto_pad {auto_pad})"
            )
        out.append(length)
        begin.append(b)
        end.append(e)
    attributes.fits(op, (*shape[:2], *out), dtype, f"input shape {shape}, kernel_shape "
                    f"{list(kernel)}, strides {list(steps)}, dilations {list(dil)} and pads "
                    f"{list(pad)}")
    cnt_lo = tuple(-b if include else 0 for b in begin)
    cnt_hi = tuple(n + e if include else n for n, e in zip(shape[2:], end))
    return PoolPlan(op, version, shape, (*shape[:2], *out), kernel, steps, dil, tuple(begin),
                    tuple(end), cnt_lo, cnt_hi, lp, p_value, order)


def make(op: str, shape: tuple[int, ...], dtype: Any, opset: int, *, kernel_shape: Any = None,
            auto_pad: Any = "NOTSET", ceil_mode: Any = 0, count_include_pad: Any = 0,
            dilations: Any = None, pads: Any = None, strides: Any = None, p: Any = None,
            storage_order: Any = 0) -> PoolPlan:
    """The plan of `op` (AveragePool, LpPool or MaxPool) for an input of `shape` and `dtype`."""
    kernel, dil, pad, steps = (None if v is None else attributes.ints(op, name, v) for name, v in (
        ("kernel_shape", kernel_shape), ("dilations", dilations), ("pads", pads),
        ("strides", strides)))
    return attributes.cached(plan, op, opset, shape, np.dtype(dtype), kernel, auto_pad, ceil_mode,
                             count_include_pad, dil, pad, steps, p, storage_order)


def window_counts(n_out: int, k: int, s: int, d: int, b: int, lo: int, hi: int) -> np.ndarray:
    """Per output index of an axis: the number of its window's taps (positions o*s - b + j*d,
    0 <= j < k) that lie in [lo, hi)."""
    start = np.arange(n_out, dtype=np.int64) * s - b
    j0 = np.maximum(0, -((start - lo) // d))
    j1 = np.minimum(k, -((start - hi) // d))
    taps: np.ndarray = np.maximum(j1 - j0, 0)
    return taps


def divisor(pl: PoolPlan, acc: np.dtype) -> np.ndarray:
    """AveragePool's divisor: the product over axes of the counted taps of each window
    ([cnt_lo, cnt_hi)), shaped like the output's spatial dims, in `acc`."""
    total: np.ndarray = np.ones((), dtype=acc)
    for i, args in enumerate(zip(pl.out_shape[2:], pl.kernel, pl.strides, pl.dilations,
                                 pl.pads_begin, pl.cnt_lo, pl.cnt_hi)):
        c = window_counts(*args).astype(acc)
        total = np.multiply.outer(total, c) if i else c
    return total


def sum_terms(pl: PoolPlan | AdaptivePlan) -> int:
    """The most terms a window of `pl` sums, or positions its divisor counts (a bound: per axis
    the kernel's taps, or the counted span's positions it reaches, whichever is fewer); 0 for
    MaxPool, which sums nothing."""
    if isinstance(pl, AdaptivePlan):
        return 0 if pl.op == "AdaptiveMaxPool" else _adaptive_terms(pl)
    if pl.op == "MaxPool":
        return 0
    return math.prod(min(k, numerics.cdiv(hi - lo, d)) for k, d, lo, hi in zip(
        pl.kernel, pl.dilations, pl.cnt_lo, pl.cnt_hi))


@functools.lru_cache(maxsize=512)
def _adaptive_terms(pl: AdaptivePlan) -> int:
    """The most elements an adaptive window holds: the product over axes of the longest."""
    longest = []
    for axis in range(pl.nd):
        start, end = pl.bounds(axis)
        longest.append(int((end - start).max(initial=0)))
    return math.prod(longest)


def wide(pl: PoolPlan | AdaptivePlan) -> bool:
    """Whether `pl`'s sums take float64 whatever the storage (more than WIDE_SUMS terms)."""
    return sum_terms(pl) > WIDE_SUMS


def accumulate_dtype(pl: PoolPlan | AdaptivePlan, dtype: Any) -> np.dtype:
    """The dtype `pl`'s window sums accumulate in on every path: float64 for a wide plan, else
    the storage's (core.dtypes.accumulate_dtype: float32 for 16- and 32-bit floats)."""
    return np.dtype(np.float64) if wide(pl) else dtypes.accumulate_dtype(dtype)


@dataclass(frozen=True)
class GlobalPlan(Shapes):
    """A global pooling: Y[n, c, 1, ..., 1] reduces X[n, c] over every spatial axis."""

    p: float

    @property
    def length(self) -> int:
        """Elements per (n, c) plane."""
        return math.prod(self.in_shape[2:])


def make_global(op: str, opset: int, shape: tuple[int, ...], dtype: Any, p: Any) -> GlobalPlan:
    """Validate a global pooling for the opset version in force and compute its plan."""
    return attributes.cached(_global_plan, op, opset, shape, np.dtype(dtype), p)


@functools.lru_cache(maxsize=512, typed=True)
def _global_plan(op: str, opset: int, shape: tuple[int, ...], dtype: np.dtype, p: Any
                 ) -> GlobalPlan:
    version = opsets.version(op, opset)
    if len(shape) < 3:
        raise ValueError(f"{op}: X must have rank >= 3 ([N, C, D1, ...]), got shape {shape}")
    dtypes.check(op, DTYPES[op], dtype, version, opset)
    p_value = 1.0
    if op == "GlobalLpPool":
        p_value = _p_value(op, opset, 2 if p is None else p)
    return GlobalPlan(op, version, shape, (*shape[:2], *(1,) * (len(shape) - 2)), p_value)


@dataclass(frozen=True)
class AdaptivePlan:
    """PyTorch's adaptive pooling (`op` one of ADAPTIVE_OPS): output o of a spatial axis of
    input length n and output length m reduces the window [floor(o n / m), ceil((o + 1) n / m))
    of that axis (the mean, or the maximum as MaxPool takes it)."""

    op: str
    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]

    @property
    def nd(self) -> int:
        return len(self.in_shape) - 2

    def bounds(self, axis: int) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of every output's window along spatial axis `axis`, int64."""
        n, m = self.in_shape[2 + axis], self.out_shape[2 + axis]
        o = np.arange(m, dtype=np.int64)
        return o * n // m, -(-(o + 1) * n // m)


def make_adaptive(op: str, shape: tuple[int, ...], dtype: Any, sizes: Any) -> AdaptivePlan:
    """Validate an adaptive pooling of an input (N, C, *spatial), 1-3 spatial axes of length
    >= 1, to the spatial lengths `sizes` (ints >= 0)."""
    return attributes.cached(_adaptive_plan, op, shape, np.dtype(dtype),
                             attributes.ints(op, "sizes", sizes, minimum=0))


@functools.lru_cache(maxsize=512)
def _adaptive_plan(op: str, shape: tuple[int, ...], dtype: np.dtype, sizes: tuple[int, ...]
                   ) -> AdaptivePlan:
    nd = len(shape) - 2
    if not 1 <= nd <= ADAPTIVE_SPATIAL:
        raise ValueError(f"{op}: X must have 1 to {ADAPTIVE_SPATIAL} spatial axes "
                         f"(N, C, D1, ...), got shape {shape}")
    dtypes.check(op, DTYPES[op], dtype, 1)
    if len(sizes) != nd:
        raise ValueError(f"{op}: 'sizes' has {len(sizes)} values, expected {nd} (one per "
                         f"spatial axis): {list(sizes)}")
    if 0 in shape[2:]:
        raise ValueError(f"{op}: X must have non-empty spatial axes, got shape {shape}")
    attributes.fits(op, (*shape[:2], *sizes), dtype, f"'sizes' = {list(sizes)}")
    return AdaptivePlan(op, shape, (*shape[:2], *sizes))


@dataclass(frozen=True)
class GradientPlan:
    """The gradient of a pooling `op`: `forward` is the plan its sums run over (a global pool's
    as the window of the whole plane), `source` the forward's own plan where that differs (a
    global pool's GlobalPlan, which computes Y), `divisor_override` PyTorch's divisor of an
    average pooling (None: the forward's)."""

    op: str
    forward: PoolPlan | AdaptivePlan
    source: GlobalPlan | None = None
    divisor_override: int | None = None

    @property
    def saved(self) -> str:
        """The forward output the gradient reads: Indices (the maxima) or Y (LpPool), else
        nothing ("")."""
        kind = self.forward.op
        return "Indices" if kind in ("MaxPool", "AdaptiveMaxPool") else \
            "Y" if kind == "LpPool" else ""


def saved_name(op: str) -> str:
    """The name of the forward output `op`'s gradient reads (GradientPlan.saved), for any op."""
    return "Indices" if op in ("MaxPool", "GlobalMaxPool", "AdaptiveMaxPool") else "Y"


def window_of(pl: GlobalPlan) -> PoolPlan:
    """A global pool as the windowed pool of one window per plane (its gradient's sums)."""
    sp = pl.in_shape[2:]
    nd = len(sp)
    return PoolPlan(GLOBAL_OPS_AS[pl.op], pl.version, pl.in_shape, pl.out_shape, sp, (1,) * nd,
                    (1,) * nd, (0,) * nd, (0,) * nd, (0,) * nd, sp, pl.op == "GlobalLpPool",
                    pl.p)


GLOBAL_OPS_AS = dict(zip(GLOBAL_OPS, OPS))


def gradient(op: str, forward: PoolPlan | GlobalPlan | AdaptivePlan, dtype: Any, dy: Any,
             saved: Any, divisor_override: Any = None) -> GradientPlan:
    """Validate a gradient of `op` on the forward's plan: X of a floating `dtype`, the
    cotangent dY (an array) of Y's shape and X's dtype, the saved output (Y, or int64
    Indices; None: computed) of Y's shape, PyTorch's divisor_override a nonzero int64."""
    name = f"{op} gradient"
    dtype = np.dtype(dtype)
    shape = tuple(forward.out_shape)
    arrays.check_cotangent(name, dtype, dy, shape)
    kept = saved_name(op)
    if saved is not None:
        arrays.check_like(name, kept, saved, shape,
                          np.dtype(np.int64) if kept == "Indices" else dtype, "Y's")
    if divisor_override is not None:
        if op != "AveragePool" or not attributes.is_int(divisor_override):
            raise TypeError(f"{name}: divisor_override must be an int (AveragePool only), got "
                            f"{divisor_override!r}")
        if divisor_override == 0:
            raise ValueError(f"{name}: divisor_override must not be 0")
        if not attributes.INT64_MIN <= divisor_override <= attributes.INT64_MAX:
            raise ValueError(f"{name}: divisor_override must fit int64 (PyTorch's), got "
                             f"{divisor_override}")
        divisor_override = int(divisor_override)
    if isinstance(forward, GlobalPlan):
        return GradientPlan(op, window_of(forward), forward)
    return GradientPlan(op, forward, None, divisor_override)
