"""The pooling family's gradients (pool.api.gradient) against their definition, written here as
loops: every output, in row-major order, adds its share to the elements of its window, from +0
in the accumulation type (float32, float64 for float64), each term rounded to it, the sum
rounded once to X's dtype. The NumPy path gives the loops' bits; the emulated and cupy paths
(the kernels) give the same bits given the same forward output (Y or Indices), except that
LpPool's powers are each path's `pow` (NumPy's own, the C library's on the emulator, CUDA's on a
GPU): the definition takes the path's."""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import functools
import itertools
import math
from typing import Any

import numpy as np
import pytest
from helpers.util import BF16, FLOAT_DTYPES, forbid_work, random, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.pool import api, plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
GPU = execution.gpu_available()


def accumulation(dtype: Any) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def assert_same_bits(got: Any, want: Any) -> None:
    """One shape and dtype, the same bits everywhere but at NaNs, which must be NaNs in both
    (a NaN's payload is the hardware's)."""
    got, want = to_numpy(got), to_numpy(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                  want.shape, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), "NaNs differ"
    words = np.dtype(f"u{got.dtype.itemsize}")
    differ = (got.view(words) != want.view(words)) & ~nan
    assert not differ.any(), (f"{differ.sum()} of {got.size} elements differ, first at "
                              f"{np.argwhere(differ)[0]}: {g[differ][:4]} != {w[differ][:4]}")


def gradient(backend: str, op: str, x: Any, dy: Any, parts: tuple[Any, ...], saved: Any = None,
             out: Any = None) -> Any:
    """dX on `backend` (cupy: the arrays put on the device first)."""
    with oc.backend(backend):
        return api.gradient(op, to_backend(x, backend), to_backend(dy, backend), parts,
                            saved=None if saved is None else to_backend(saved, backend),
                            out=out)


# ------------------------------------------------------------------------------------ powers

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.powf.restype, _LIBM.powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
_LIBM.pow.restype, _LIBM.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]


def c_power(base: np.ndarray, exponent: Any) -> np.ndarray:
    """base ** exponent by the C library's powf (float32) or pow (float64), element by element:
    the kernels' `pow` on the emulator (g++ calls the same functions)."""
    fn = _LIBM.powf if base.dtype == np.float32 else _LIBM.pow
    flat = [fn(float(b), float(exponent)) for b in base.reshape(-1)]
    return np.array(flat, base.dtype).reshape(base.shape)


def power_of(backend: str) -> Any:
    """The `pow` a path's LpPool gradient takes (None: none of the CPU's, a GPU's)."""
    if backend == "numpy":
        return np.power
    return None if backend == "cupy" and GPU else c_power


def lp_terms(dy: np.ndarray, y: np.ndarray, x: np.ndarray, p: float, power: Any
             ) -> tuple[np.ndarray, np.ndarray]:
    """(g, f) in the accumulation type: each output's share g = dY / Y^(p-1) (0 where Y = 0)
    and each element's factor f = sign(x) |x|^(p-1) (x itself for p = 2, 0 at x = 0), p
    rounded to the accumulation type first, as the forward's power takes it."""
    acc = accumulation(x.dtype)
    pa, one = acc.type(p), acc.type(1)
    d, yy, xx = dy.astype(acc), y.astype(acc), x.astype(acc)
    with np.errstate(all="ignore"):
        g = d.copy() if pa == one else d / yy if pa == 2 else d / power(yy, pa - one)
        g[yy == 0] = 0
        if pa == 2:
            f = xx.copy()
        else:
            f = np.sign(xx) if pa == one else np.sign(xx) * power(np.abs(xx), pa - one)
            f[xx == 0] = 0
    return g, f


# --------------------------------------------------------------------------- the definition

def definition(op: str, x: np.ndarray, dy: np.ndarray, saved: np.ndarray | None,
               pl: plan.PoolPlan, attrs: dict[str, Any], divisor_override: int | None = None,
               power: Any = np.power) -> np.ndarray:
    """dX by loops over the outputs, row-major, each adding its share to the elements of X in
    its window (a global pool: one window, the plane): AveragePool dY / D with D the window's
    positions inside the counted region (X, or X and its pads with count_include_pad), or
    divisor_override; LpPool g (lp_terms), the sum then times f; MaxPool dY to the element
    whose flat index Indices names. The windows' positions come from the plan's pads."""
    acc = accumulation(x.dtype).type
    spatial = x.shape[2:]
    plane = math.prod(spatial)
    order = "F" if attrs.get("storage_order") else "C"
    kind = plan.GLOBAL_OPS_AS.get(op, op)
    include = bool(attrs.get("count_include_pad")) and pl.version >= 7 and kind == "AveragePool"
    lo = [-b if include else 0 for b in pl.pads_begin]
    hi = [n + e if include else n for n, e in zip(spatial, pl.pads_end)]
    if kind == "LpPool":
        shares, factors = lp_terms(dy, saved, x, pl.p, power)
    sums = np.zeros(x.shape, acc)
    for nc in itertools.product(*map(range, x.shape[:2])):
        base = (nc[0] * x.shape[1] + nc[1]) * plane
        for o in itertools.product(*map(range, dy.shape[2:])):
            window = list(itertools.product(*(
                [oi * s - b + j * d for j in range(k)] for oi, s, b, d, k in zip(
                    o, pl.strides, pl.pads_begin, pl.dilations, pl.kernel))))
            inside = [w for w in window if all(0 <= v < n for v, n in zip(w, spatial))]
            if kind == "AveragePool":
                count = divisor_override or sum(
                    all(a <= v < b for v, a, b in zip(w, lo, hi)) for w in window)
                term = acc(acc(dy[nc + o]) / acc(count))
            elif kind == "LpPool":
                term = shares[nc + o]
            else:
                term = acc(dy[nc + o])
                inside = [w for w in inside if base + np.ravel_multi_index(
                    w, spatial, order=order) == saved[nc + o]]
            for w in inside:
                sums[nc + w] = acc(sums[nc + w] + term)
    if kind == "LpPool":
        sums = sums * factors
    return sums.astype(x.dtype)


# ------------------------------------------------------------------------ configurations

OPS = (*plan.OPS, *plan.GLOBAL_OPS)
COUNT = 96
SEED = 20261207
LONGEST = {1: 11, 2: 7, 3: 5, 4: 4, 5: 3}   # spatial lengths drawn, per rank


@dataclasses.dataclass(frozen=True)
class Config:
    """Configuration `index`: the operator, X's dtype and shape, the opset and attributes, an
    AveragePool's divisor_override (PyTorch's, through parts), the values: "uniform",
    "specials" (NaN and infinities in X and dY), "ties" (X of few distinct values, -inf
    among them; MaxPool) or "zeros" (X with zeros and all-zero windows; LpPool)."""

    index: int
    op: str
    dtype: np.dtype
    shape: tuple[int, ...]
    opset: int
    attrs: tuple[tuple[str, Any], ...]
    divisor_override: int | None
    values: str

    @property
    def attributes(self) -> dict[str, Any]:
        return dict(self.attrs)

    @property
    def parts(self) -> tuple[Any, ...]:
        parts = (self.opset, self.attributes)
        return parts if self.divisor_override is None else (*parts, self.divisor_override)

    @property
    def plan(self) -> plan.PoolPlan:
        if self.op in plan.GLOBAL_OPS:
            return plan.window_of(plan.make_global(self.op, self.opset, self.shape, self.dtype,
                                                   self.attributes.get("p")))
        return plan.make(self.op, self.shape, self.dtype, self.opset, **self.attributes)

    @property
    def name(self) -> str:
        a = self.attributes
        words = [f"{self.index:03d}", self.op, self.dtype.name, f"opset{self.opset}",
                 "x".join(map(str, self.shape))]
        if "kernel_shape" in a:
            words.append("k" + "x".join(map(str, a["kernel_shape"])))
        for key, short in (("strides", "s"), ("dilations", "d"), ("pads", "pad")):
            if a.get(key) is not None and any(v != (0 if key == "pads" else 1) for v in a[key]):
                words.append(short + "x".join(map(str, a[key])))
        if a.get("auto_pad", "NOTSET") != "NOTSET":
            words.append(a["auto_pad"])
        words += [flag for flag in ("ceil_mode", "count_include_pad", "storage_order")
                  if a.get(flag)]
        if "p" in a:
            words.append(f"p{a['p']:g}")
        if self.divisor_override is not None:
            words.append(f"divisor{self.divisor_override}")
        return "-".join([*words, *([self.values] if self.values != "uniform" else [])])


def _attributes(rng: np.random.Generator, op: str, spatial: tuple[int, ...], opset: int
                ) -> dict[str, Any]:
    nd = len(spatial)
    kernel = [int(rng.integers(1, min(n, 3) + 2)) for n in spatial]
    a: dict[str, Any] = {"kernel_shape": kernel,
                         "strides": [int(v) for v in rng.integers(1, 4, nd)]}
    pad = rng.random()
    if pad < 0.15:
        a["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
    elif pad < 0.85:   # beyond the kernel now and then (a window all padding)
        a["pads"] = [int(rng.integers(0, k + 2 if rng.random() < 0.3 else k))
                     for k in kernel * 2]
    if opset >= 10 and not (op == "AveragePool" and opset < 19) and rng.random() < 0.5:
        a["dilations"] = [int(v) for v in rng.integers(1, 3, nd)]
    if opset >= 10 and rng.random() < 0.4:
        a["ceil_mode"] = 1
    if op == "AveragePool":
        a["count_include_pad"] = int(rng.integers(2))
    elif op == "MaxPool":
        a["storage_order"] = int(rng.random() < 0.3)
    return a


@functools.cache
def configuration(index: int) -> Config:
    """Configuration `index`: its operator, rank and dtype cycle, the rest drawn (drawn again
    until the plan accepts it)."""
    op, k = OPS[index % len(OPS)], index // len(OPS)
    rank, dtype = 1 + k % 5, FLOAT_DTYPES[(k + k // 5) % len(FLOAT_DTYPES)]
    rng = np.random.default_rng([SEED, index])
    while True:
        spatial = tuple(int(v) for v in rng.integers(1, LONGEST[rank] + 1, rank))
        shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)), *spatial)
        opset, override = 22, None
        values = str(rng.choice(["uniform", "uniform", "specials"]))
        if op in plan.GLOBAL_OPS:
            a: dict[str, Any] = {}
            if op == "GlobalLpPool":
                a["p"] = int(rng.integers(1, 4))
        else:
            if op == "LpPool" and dtype != BF16 and rng.random() < 0.3:
                opset = 1   # LpPool-1: a float p, no dilations or ceil_mode
            a = _attributes(rng, op, spatial, opset)
            if op == "LpPool":
                a["p"] = float(rng.choice([0.7, 1.3, 2.5, 3.25])) if opset == 1 else \
                    int(rng.integers(1, 4))
            if op == "AveragePool" and rng.random() < 0.4:
                override = (3, -2, 1, 7)[k % 4]
        if op in ("MaxPool", "GlobalMaxPool") and rng.random() < 0.3:
            values = "ties"
        if op in ("LpPool", "GlobalLpPool") and rng.random() < 0.3:
            values = "zeros"
        c = Config(index, op, np.dtype(dtype), shape, opset, tuple(sorted(a.items())),
                   override, values)
        try:
            _ = c.plan
        except ValueError:
            continue
        return c


def inputs(c: Config) -> tuple[np.ndarray, np.ndarray]:
    """(X, dY) of configuration `c`: fresh random values (never all zero), exactly
    representable in the dtype, with its special values."""
    rng = np.random.default_rng([SEED, c.index, 1])
    x = random(rng, c.shape, c.dtype)
    out = c.plan.out_shape
    dy = random(rng, out, c.dtype, -3.0, 3.0)
    if c.values == "specials":
        for a in (x, dy):
            flat = a.reshape(-1)
            flat[rng.random(flat.size) < 0.1] = np.nan
            flat[rng.random(flat.size) < 0.05] = np.inf
            flat[rng.random(flat.size) < 0.05] = -np.inf
    elif c.values == "ties":
        x = rng.choice(np.array([-np.inf, -1.0, 0.0, 2.0]), c.shape).astype(c.dtype)
    elif c.values == "zeros":
        x[..., : max(1, c.shape[-1] // 2)] = 0   # runs of zeros: windows of zeros only
        x.reshape(-1)[::5] = 0
    return x, dy


def saved_of(c: Config, x: Any) -> Any:
    """The forward output the gradient reads (Y, or MaxPool's Indices; None for the average
    pools), by the forward function on X's path."""
    a = c.attributes
    if c.op == "MaxPool":
        return oc.max_pool(x, opset=c.opset, return_indices=True, **a)[1]
    if c.op == "GlobalMaxPool":
        return oc.max_pool(x, kernel_shape=list(c.shape[2:]), opset=c.opset,
                           return_indices=True)[1]
    if c.op == "LpPool":
        return oc.lp_pool(x, opset=c.opset, **a)
    if c.op == "GlobalLpPool":
        return oc.global_lp_pool(x, opset=c.opset, **a)
    return None


@functools.cache
def expected(index: int, power: Any) -> np.ndarray:
    """The definition's dX of configuration `index` with the powers `power`, given the NumPy
    forward's output."""
    c = configuration(index)
    x, dy = inputs(c)
    return definition(c.op, x, dy, saved_of(c, x), c.plan, c.attributes, c.divisor_override,
                      power)


@pytest.mark.parametrize("index", range(COUNT), ids=lambda i: configuration(i).name)
def test_against_the_definition(backend, index):
    """Every path gives the definition's bits given the NumPy forward's Y or Indices: ranks
    1-5, every dtype, pads (past the kernel too), auto_pad, ceil_mode, dilations,
    count_include_pad, divisor_override, storage_order, p (a float at opset 1), NaN and
    infinities, ties, zeros; X, dY and the saved output unchanged."""
    c = configuration(index)
    x, dy = inputs(c)
    saved = saved_of(c, x)
    kept = [a.copy() for a in (x, dy, saved) if a is not None]
    got = gradient(backend, c.op, x, dy, c.parts, saved)
    power = power_of(backend)
    if power is None:   # CUDA's pow: within a few ulps of the C library's, sums included
        np.testing.assert_allclose(to_numpy(got).astype(np.float64),
                                   expected(index, c_power).astype(np.float64), rtol=1e-4)
    else:
        assert_same_bits(got, expected(index, power))
    assert all(np.array_equal(a, b, equal_nan=True)
               for a, b in zip(kept, (a for a in (x, dy, saved) if a is not None)))


def test_configurations_reach_every_case():
    """The drawn configurations cover what the definition test promises."""
    found = [configuration(i) for i in range(COUNT)]
    assert {(c.op, len(c.shape) - 2) for c in found} == {(op, r) for op in OPS
                                                          for r in range(1, 6)}
    assert {(c.op, c.dtype.name) for c in found} == {(op, d.name) for op in OPS
                                                     for d in FLOAT_DTYPES}
    a = [c.attributes for c in found]
    assert {x.get("auto_pad") for x in a} >= {"SAME_UPPER", "SAME_LOWER", "VALID", None}
    assert any(x.get("ceil_mode") for x in a) and any(x.get("dilations") for x in a)
    assert any(x.get("count_include_pad") for x in a) and any(x.get("storage_order") for x in a)
    wide = [c for c in found if "pads" in c.attributes and any(
        p >= k for p, k in zip(c.attributes["pads"], 2 * c.attributes["kernel_shape"]))]
    assert wide
    assert {c.attributes.get("p") for c in found if c.op == "LpPool"} >= {1, 2, 3}
    assert any(c.opset == 1 for c in found)
    assert {c.divisor_override for c in found} >= {None, 1, 3, 7, -2}
    assert {c.values for c in found} == {"uniform", "specials", "ties", "zeros"}
    assert any(0 in c.plan.out_shape for c in found)


# ------------------------------------------------------------------------- adaptive pools

def adaptive_windows(n: int, m: int) -> list[range]:
    """The input positions output o of an axis (input n, output m) reduces."""
    return [range(o * n // m, -(-(o + 1) * n // m)) for o in range(m)]


def adaptive_definition(op: str, x: np.ndarray, dy: np.ndarray, indices: np.ndarray | None,
                        sizes: tuple[int, ...]) -> np.ndarray:
    """dX by loops: each output o, row-major, adds dY[o] / len_1(o) / ... (the mean) to every
    element of its window, or dY[o] to the element its index (within the plane) names."""
    acc = accumulation(x.dtype).type
    spatial = x.shape[2:]
    sums = np.zeros(x.shape, acc)
    windows = [adaptive_windows(n, m) for n, m in zip(spatial, sizes)]
    for nc in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*map(range, sizes)):
            window = list(itertools.product(*(w[i] for w, i in zip(windows, o))))
            term = acc(dy[nc + o])
            if op == "AdaptiveAveragePool":
                for w, i in zip(windows, o):
                    term = acc(term / acc(len(w[i])))
                for p in window:
                    sums[nc + p] = acc(sums[nc + p] + term)
            else:
                p = np.unravel_index(int(indices[nc + o]), spatial)
                if p in window:
                    sums[nc + p] = acc(sums[nc + p] + term)
    return sums.astype(x.dtype)


ADAPTIVE = [((2, 3, 7), (3,)), ((1, 2, 5), (13,)), ((2, 2, 2, 3), (5, 7)),
            ((1, 3, 3, 5), (7, 4)), ((2, 1, 7, 5), (3, 2)), ((1, 2, 2, 2, 3), (5, 3, 7)),
            ((1, 1, 4, 3, 5), (2, 6, 2))]


@pytest.mark.parametrize("shape, sizes", ADAPTIVE, ids=str)
@pytest.mark.parametrize("op", ["AdaptiveAveragePool", "AdaptiveMaxPool"])
def test_adaptive_against_the_definition(backend, rng, op, shape, sizes):
    """Growing axes (windows that start together and overlap) included: every element takes
    its terms in row-major output order on every path."""
    x = random(rng, shape, np.float32)
    _, indices = api.adaptive_pool("AdaptiveMaxPool", x, sizes, return_indices=True)
    dy = random(rng, indices.shape, np.float32)
    saved = indices if op == "AdaptiveMaxPool" else None
    want = adaptive_definition(op, x, dy, indices, sizes)
    assert_same_bits(gradient(backend, op, x, dy, (sizes,), saved), want)


# ------------------------------------------------------------------------------- bad input

X = np.random.default_rng(7).uniform(-2, 3, (1, 2, 5, 5)).astype(np.float32)
DY = np.random.default_rng(8).uniform(-2, 3, (1, 2, 4, 4)).astype(np.float32)
K = {"kernel_shape": [2, 2]}


def bad(name, exc, pattern, op="AveragePool", x=X, dy=DY, parts=(22, K), saved=None):
    return pytest.param(exc, pattern, op, x, dy, parts, saved, id=name)


BAD = [
    bad("dY_shape", ValueError, r"AveragePool gradient: dY has shape \(1, 2, 4, 3\), expected "
        r"Y's shape \(1, 2, 4, 4\)", dy=DY[..., :3]),
    bad("dY_dtype", TypeError, "AveragePool gradient: dY has dtype float64, expected float32",
        dy=DY.astype(np.float64)),
    bad("dY_list", TypeError, r"input 'dY' must be a (numpy|cupy)\.ndarray like X, got "
        "builtins.list",
        dy=DY.tolist()),
    bad("integer_X", TypeError, "MaxPool gradient: X has dtype int8; gradients are defined for "
        "floating dtypes only", "MaxPool", x=X.astype(np.int8), dy=DY.astype(np.int8)),
    bad("integer_X_average", TypeError, "AveragePool: input dtype int32 is not supported",
        x=X.astype(np.int32), dy=DY.astype(np.int32)),
    bad("indices_dtype", TypeError, "MaxPool gradient: Indices has dtype int32, expected int64",
        "MaxPool", saved=np.zeros(DY.shape, np.int32)),
    bad("indices_shape", ValueError, r"MaxPool gradient: Indices has shape \(1, 2, 4\), "
        r"expected Y's shape", "MaxPool", saved=np.zeros(DY.shape[:3], np.int64)),
    bad("Y_dtype", TypeError, "LpPool gradient: Y has dtype float64, expected float32",
        "LpPool", parts=(22, {**K, "p": 3}), saved=DY.astype(np.float64)),
    bad("divisor_zero", ValueError, "AveragePool gradient: divisor_override must not be 0",
        parts=(22, K, 0)),
    bad("divisor_float", TypeError, "divisor_override must be an int .AveragePool only., got "
        "1.5", parts=(22, K, 1.5)),
    bad("divisor_bool", TypeError, "divisor_override must be an int", parts=(22, K, True)),
    bad("divisor_on_maxpool", TypeError, "MaxPool gradient: divisor_override must be an int "
        r"\(AveragePool only\)", "MaxPool", parts=(22, K, 2)),
    bad("divisor_past_int64", ValueError, "AveragePool gradient: divisor_override must fit "
        "int64", parts=(22, K, 2**63)),
    bad("divisor_below_int64", ValueError, "divisor_override must fit int64",
        parts=(22, K, -2**63 - 1)),
    bad("attribute_of_another_version", ValueError, "attribute 'dilations' is not defined at "
        "opset 11", parts=(11, {**K, "dilations": [1, 1]})),
    bad("float_p_past_LpPool_1", ValueError, "'p' must be an integer at opset 18", "LpPool",
        parts=(18, {**K, "p": 2.5})),
    bad("adaptive_sizes", ValueError, "AdaptiveAveragePool: 'sizes' has 3 values, expected 2",
        "AdaptiveAveragePool", parts=((4, 4, 1),)),
    bad("adaptive_dY", ValueError, r"AdaptiveMaxPool gradient: dY has shape \(1, 2, 4, 4\), "
        r"expected Y's shape \(1, 2, 4, 3\)", "AdaptiveMaxPool", parts=((4, 3),)),
    bad("global_dY", ValueError, r"GlobalAveragePool gradient: dY has shape \(1, 2, 4, 4\), "
        r"expected Y's shape \(1, 2, 1, 1\)", "GlobalAveragePool", parts=(22, {})),
]


@pytest.mark.parametrize("exc, pattern, op, x, dy, parts, saved", BAD)
def test_bad_input(backend, monkeypatch, exc, pattern, op, x, dy, parts, saved):
    """Each refused with its type and a message naming the input or attribute, before
    anything is allocated or launched, on every path."""
    forbid_work(monkeypatch)
    with pytest.raises(exc, match=pattern):
        gradient(backend, op, x, dy, parts, saved)
