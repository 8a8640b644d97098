"""The pooling family's gradients (pool.api.gradient) against their definition, written here as
loops: every output, in row-major order, adds its share to the elements of its window, from +0
in the accumulation type (float32, float64 for float64), each term rounded to it, the sum
rounded once to X's dtype. The NumPy path gives the loops' bits; the emulated and cupy paths
(the kernels) give the same bits given the same forward output (Y or Indices), except that
LpPool's powers are each path's `pow` (NumPy's own, the C library's on the emulator, CUDA's on a
GPU): the definition takes the path's. Then, independently of the windows' geometry in plan.py,
the gradients are the adjoints of the forward functions (float64) and LpPool's the limit of
finite differences; the saved output given or computed; views, negative strides and byte
offsets (the kernel checker on); out=; empty tensors; 64-bit offsets; bad input."""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import functools
import itertools
import math
from typing import Any

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import (
    BF16,
    FLOAT_DTYPES,
    assert_same_bits,
    at_byte_offset,
    forbid_work,
    random,
    replan,
    to_backend,
    to_numpy,
)

import onnx_cupy as oc
from onnx_cupy.core import checker, execution, launcher
from onnx_cupy.pool import api, kernel_grad, plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
GPU = execution.gpu_available()


def accumulation(dtype: Any) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


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


# ------------------------------------------------- the forward's adjoint, finite differences

def _float64(c: Config) -> Config:
    return dataclasses.replace(c, dtype=np.dtype(np.float64), values="uniform")


def jacobian_product(c: Config, x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """J v of the linear pools at X (float64), by their forward functions: the average pools'
    outputs of v, the maxima's v at the Indices the forward gives for X (0 where -1)."""
    a = c.attributes
    if c.op == "AveragePool":
        return oc.average_pool(v, opset=c.opset, **a)
    if c.op == "GlobalAveragePool":
        return oc.global_average_pool(v, opset=c.opset)
    indices, plane = saved_of(c, x), math.prod(c.shape[2:])
    if c.attributes.get("storage_order"):   # column-major within the plane: to row-major
        within = np.unravel_index(indices % plane, c.shape[2:], order="F")
        indices = indices // plane * plane + np.ravel_multi_index(within, c.shape[2:])
    return np.where(indices >= 0, v.reshape(-1)[np.maximum(indices, 0)], 0.0)


ADJOINT = [i for i in range(COUNT) if configuration(i).op in (
    "AveragePool", "MaxPool", "GlobalAveragePool", "GlobalMaxPool")
    and configuration(i).divisor_override is None]
LP = [i for i in range(COUNT) if configuration(i).op in ("LpPool", "GlobalLpPool")]


@pytest.mark.parametrize("index", ADJOINT, ids=lambda i: configuration(i).name)
def test_adjoint_of_the_forward(backend, index):
    """<dX, v> = <dY, J v> for random v, J v by the forward functions (float64): the
    gradients' windows, divisors and indices are the forward's, whatever plan.py computes."""
    c = _float64(configuration(index))
    rng = np.random.default_rng([SEED, index, 2])
    x = rng.permutation(np.linspace(-3, 3, math.prod(c.shape))).reshape(c.shape)  # no ties
    dy, v = (rng.uniform(-2, 2, s) for s in (c.plan.out_shape, c.shape))
    dx = to_numpy(gradient(backend, c.op, x, dy, c.parts))
    assert np.isfinite(dx).all()
    jv = jacobian_product(c, x, v)
    counted = ~np.isnan(jv)   # an average over no element of X: NaN, and no gradient
    lhs, rhs = np.vdot(dx, v), np.vdot(dy[counted], jv[counted])
    assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("index", LP, ids=lambda i: configuration(i).name)
def test_lp_pool_is_the_limit_of_finite_differences(backend, index):
    """LpPool's and GlobalLpPool's dX against central differences of <dY, Y(X + t v)> (float64,
    X away from 0, where |x|^p is smooth): every p, pads, ceil_mode, float p at opset 1."""
    c = _float64(configuration(index))
    rng = np.random.default_rng([SEED, index, 3])
    x = rng.choice([-1.0, 1.0], c.shape) * rng.uniform(0.5, 2.0, c.shape)
    dy, v = rng.uniform(-2, 2, c.plan.out_shape), rng.uniform(-1, 1, c.shape)
    fn = oc.lp_pool if c.op == "LpPool" else oc.global_lp_pool
    h = 1e-6

    def f(t: float) -> float:
        return float(np.vdot(dy, fn(x + t * v, opset=c.opset, **c.attributes)))

    dx = to_numpy(gradient(backend, c.op, x, dy, c.parts))
    assert np.vdot(dx, v) == pytest.approx((f(h) - f(-h)) / (2 * h), rel=1e-6, abs=1e-8)


def test_lp_pool_zero_windows_give_zero(backend):
    """A window of zeros (Y = 0) gives +0 to its elements, not NaN, whatever its cotangent
    (infinities included), for every p; an element that is 0 gets 0 from finite shares."""
    x = np.zeros((1, 2, 6), np.float32)
    x[0, 1, 3:] = [1.5, -2.0, 0.5]
    dy = np.array([[[np.inf, 2.0, -3.0], [1.0, -4.0, 2.0]]], np.float32)
    for p in (1, 2, 3):
        parts = (22, {"kernel_shape": [2], "strides": [2], "p": p})
        dx = to_numpy(gradient(backend, "LpPool", x, dy, parts))
        assert not np.isnan(dx[0, 0]).any() and (dx[0, 0].view(np.uint32) == 0).all()
        assert dx[0, 1, 2] == 0 and (dx[0, 1, 3:] != 0).all()
        g = to_numpy(gradient(backend, "GlobalLpPool", np.zeros_like(x), dy[..., :1],
                              (22, {"p": p})))
        assert (g.view(np.uint32) == 0).all()


# --------------------------------------------------------------------- the saved output

SAVING = [i for i in range(COUNT) if configuration(i).op in (
    "MaxPool", "LpPool", "GlobalMaxPool", "GlobalLpPool")][:16]


@pytest.mark.parametrize("index", SAVING, ids=lambda i: configuration(i).name)
def test_saved_output_given_or_computed(backend, index):
    """Without Y or Indices a call computes them by the forward on its own path: the bits of
    the call given that forward's output."""
    c = configuration(index)
    x, dy = inputs(c)
    with oc.backend(backend):
        saved = saved_of(c, to_backend(x, backend))
    given = gradient(backend, c.op, x, dy, c.parts, to_numpy(saved))
    assert_same_bits(gradient(backend, c.op, x, dy, c.parts), given)


@pytest.mark.parametrize("seed", range(3))
def test_indices_outside_their_plane_win_nothing(backend, seed):
    """Given Indices that name another (n, c) plane, -1 or a position past X: those outputs'
    dY reach no element; the others' are summed as ever (the bits of the gradient with those
    outputs' dY set to 0)."""
    rng = np.random.default_rng([SEED, seed, 7])
    shape = (2, 3, 7, 6)
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal((2, 3, 4, 3)).astype(np.float32)
    parts = (22, {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 0]})
    indices = oc.max_pool(x, **parts[1], opset=22, return_indices=True)[1]
    bad = rng.random(indices.shape) < 0.3
    plane = 7 * 6
    choices = np.stack([np.full_like(indices, -1), np.full_like(indices, math.prod(shape)),
                        indices + plane, indices - plane])   # none, past X, the next, previous
    given = np.where(bad, np.take_along_axis(
        choices, rng.integers(0, 4, (1, *indices.shape)), 0)[0], indices)
    zeroed = np.where(bad, np.float32(0), dy)
    want = gradient("numpy", "MaxPool", x, zeroed, parts, indices)
    assert bad.any() and (~bad).any() and not np.array_equal(want, gradient(
        "numpy", "MaxPool", x, dy, parts, indices))
    assert_same_bits(gradient(backend, "MaxPool", x, dy, parts, given), want)


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


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("shape, sizes", ADAPTIVE, ids=str)
@pytest.mark.parametrize("op", ["AdaptiveAveragePool", "AdaptiveMaxPool"])
def test_adaptive_against_the_definition(backend, rng, op, shape, sizes, dtype):
    """1-3 spatial axes, shrinking and growing (windows that start together and overlap),
    every dtype, NaN and infinities in X and dY: every element takes its terms in row-major
    output order on every path; without Indices, the maximum's computed ones'."""
    x, dy = random(rng, shape, dtype), random(rng, (*shape[:2], *sizes), dtype, -3.0, 3.0)
    x.reshape(-1)[::9], x.reshape(-1)[4::11] = np.nan, -np.inf
    dy.reshape(-1)[::7], dy.reshape(-1)[3::10] = np.nan, np.inf
    _, indices = api.adaptive_pool("AdaptiveMaxPool", x, sizes, return_indices=True)
    saved = indices if op == "AdaptiveMaxPool" else None
    want = adaptive_definition(op, x, dy, indices, sizes)
    assert_same_bits(gradient(backend, op, x, dy, (sizes,), saved), want)
    if op == "AdaptiveMaxPool":
        assert_same_bits(gradient(backend, op, x, dy, (sizes,)), want)


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


# ----------------------------------------------------------------- layouts, out=, empty

# name -> (op, X's shape, parts)
LAYOUT = {
    "AveragePool-2d": ("AveragePool", (2, 4, 9, 8), (22, {
        "kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1],
        "count_include_pad": 1})),
    "LpPool-3d": ("LpPool", (2, 4, 5, 4, 6), (22, {"kernel_shape": [2, 2, 3], "p": 3})),
    "MaxPool-1d": ("MaxPool", (3, 4, 17), (22, {"kernel_shape": [3], "strides": [2],
                                                "dilations": [2], "ceil_mode": 1})),
    "GlobalLpPool-2d": ("GlobalLpPool", (2, 4, 5, 7), (22, {"p": 2})),
    "GlobalMaxPool-2d": ("GlobalMaxPool", (2, 4, 5, 7), (22, {})),
    "AdaptiveAveragePool-2d": ("AdaptiveAveragePool", (2, 4, 5, 7), ((7, 3),)),
    "AdaptiveMaxPool-3d": ("AdaptiveMaxPool", (2, 4, 3, 5, 4), ((2, 6, 3),)),
}


def forward_of(op: str, x: Any, parts: tuple[Any, ...]) -> Any:
    """The saved output of `op` at X (on X's path), None for the average pools."""
    if op == "MaxPool":
        return oc.max_pool(x, opset=parts[0], return_indices=True, **parts[1])[1]
    if op == "GlobalMaxPool":
        return oc.max_pool(x, kernel_shape=list(x.shape[2:]), return_indices=True)[1]
    if op == "LpPool":
        return oc.lp_pool(x, opset=parts[0], **parts[1])
    if op == "GlobalLpPool":
        return oc.global_lp_pool(x, opset=parts[0], **parts[1])
    if op == "AdaptiveMaxPool":
        return api.adaptive_pool(op, x, parts[0], return_indices=True)[1]
    return None


def layout_inputs(rng: np.random.Generator, name: str, dtype: Any = np.float32
                  ) -> tuple[str, np.ndarray, np.ndarray, Any, tuple[Any, ...]]:
    """(op, X, dY, the saved output, parts) of the LAYOUT case `name`, X of `dtype`."""
    op, shape, parts = LAYOUT[name]
    x = random(rng, shape, dtype)
    if op.startswith("Adaptive"):
        y_shape = api.adaptive_pool(op, x, parts[0]).shape
    elif op.startswith("Global"):
        y_shape = (*shape[:2], *(1,) * (len(shape) - 2))
    else:
        y_shape = api.run(op, x, *parts).shape
    return op, x, random(rng, y_shape, dtype, -3.0, 3.0), forward_of(op, x, parts), parts


def as_view(a: np.ndarray, view: str, backend: str, rng: np.random.Generator) -> Any:
    """`a`'s values in a non-contiguous view on `backend`: its last axis read backwards from a
    reversed copy (negative strides), N and C swapped in memory, or every other element of C
    and of the last axis of a larger array holding other values between them."""
    if view == "reversed":
        return to_backend(np.ascontiguousarray(a[..., ::-1]), backend)[..., ::-1]
    if view == "transposed":
        axes = (1, 0, *range(2, a.ndim))
        return to_backend(np.ascontiguousarray(a.transpose(axes)), backend).transpose(axes)
    shape = (a.shape[0], 2 * a.shape[1], *a.shape[2:-1], 2 * a.shape[-1])
    base = random(rng, shape, a.dtype) if a.dtype.kind == "f" else np.full(shape, 10**6,
                                                                             a.dtype)
    base[:, 1::2][..., ::2] = a
    return to_backend(base, backend)[:, 1::2][..., ::2]


@pytest.mark.parametrize("view", ["reversed", "transposed", "stepped"])
@pytest.mark.parametrize("name", LAYOUT)
def test_non_contiguous_inputs(backend, rng, name, view):
    """X, dY and the saved output as strided, reversed (negative strides) or transposed views
    give the contiguous inputs' bits, and stay unchanged."""
    op, x, dy, saved, parts = layout_inputs(rng, name)
    want = gradient(backend, op, x, dy, parts, saved)
    views = [None if a is None else as_view(a, view, backend, rng) for a in (x, dy, saved)]
    assert not views[0].flags.c_contiguous
    assert not views[1].flags.c_contiguous or view == "reversed" and dy.shape[-1] == 1
    got = gradient(backend, op, *views[:2], parts, views[2])
    assert_same_bits(got, want)
    for v, a in zip(views, (x, dy, saved)):
        if a is not None:
            np.testing.assert_array_equal(to_numpy(v), a)


def swapped(a: np.ndarray) -> np.ndarray:
    """`a`'s values in the other byte order (as NumPy reads a file written on another machine)."""
    return a.astype(a.dtype.newbyteorder("S"))


@pytest.mark.parametrize("name, which", [
    (name, which) for name, (op, _, _) in LAYOUT.items()
    for which in ("X", "dY", *(("saved",) if "Average" not in op else ()), "every")])
def test_non_native_byte_order(cpu_backend, rng, name, which):
    """X, dY and the saved output in non-native byte order, alone or together, are read as the
    values they hold: the native arrays' gradient (a dY of X's dtype in the other byte order
    was refused as of another dtype)."""
    op, x, dy, saved, parts = layout_inputs(rng, name)
    want = gradient(cpu_backend, op, x, dy, parts, saved)
    inputs = [None if a is None else swapped(a) if which in (n, "every") else a
              for n, a in zip(("X", "dY", "saved"), (x, dy, saved))]
    assert any(a is not None and not a.dtype.isnative for a in inputs)
    got = gradient(cpu_backend, op, *inputs[:2], parts, inputs[2])
    assert_same_bits(got.astype(got.dtype.newbyteorder("=")), want)
    for a, b in zip(inputs, (x, dy, saved)):
        if a is not None:
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("offset", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["AveragePool-2d", "MaxPool-1d", "LpPool-3d",
                                  "AdaptiveMaxPool-3d", "GlobalLpPool-2d"])
@pytest.mark.parametrize("path", ["emulated", "cupy"])
def test_inputs_at_byte_offsets(path, rng, name, dtype, offset):
    """X, dY and the saved output at a byte offset of 1, 2 or 4 from an aligned address (read
    where the kernels can, copied where not) give the aligned inputs' bits, with the kernel
    checker finding no access out of bounds or misaligned."""
    op, x, dy, saved, parts = layout_inputs(rng, name, dtype)
    want = gradient("numpy", op, x, dy, parts, saved)
    with StandIn().installed() if path == "cupy" and not GPU else contextlib.nullcontext():
        moved = [None if a is None else at_byte_offset(a, offset, path) for a in (x, dy, saved)]
        assert all(a is None or _address(a) % 256 == offset % 256 for a in moved)
        with checker.checking() as session:
            got = to_numpy(gradient(path, op, *moved[:2], parts, moved[2]))
        assert session.launches > 0
    if op.startswith(("LpPool", "GlobalLpPool")):   # the C library's pow against NumPy's
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)
    else:
        assert_same_bits(got, want)


def _address(a: Any) -> int:
    return int(a.data.ptr) if hasattr(a.data, "ptr") else a.ctypes.data


@pytest.mark.parametrize("name", LAYOUT)
def test_out(backend, rng, name):
    """out= receives dX (the array itself returned), the bits of a call without it; a wrong
    out is refused by name: another shape, dtype, a non-contiguous view, one overlapping X or
    dY, another array type."""
    op, x, dy, saved, parts = layout_inputs(rng, name)
    want = gradient(backend, op, x, dy, parts, saved)
    xs, dys = to_backend(x, backend), to_backend(dy, backend)
    out = to_backend(np.full(x.shape, np.nan, x.dtype), backend)
    assert gradient(backend, op, xs, dys, parts, saved, out=out) is out
    assert_same_bits(out, want)
    wide = to_backend(np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype), backend)
    wrong = {"out has shape": to_backend(np.zeros(x.shape[:-1], x.dtype), backend),
             "out has dtype float64": to_backend(np.zeros(x.shape), backend),
             "out must be C-contiguous": wide[..., ::2],
             "out overlaps the input X": xs}
    if dy.shape == x.shape:
        wrong["out overlaps the input dY"] = dys
    if backend == "cupy":
        wrong["out must be a ndarray like X, got ndarray"] = np.zeros(x.shape, x.dtype)
    for message, bad_out in wrong.items():
        pattern = "out must be a .*ndarray like X" if "like X" in message else message
        with pytest.raises((TypeError, ValueError), match=f"{op} gradient: {pattern}"):
            gradient(backend, op, xs, dys, parts, saved, out=bad_out)
    np.testing.assert_array_equal(to_numpy(xs), x)


EMPTY = {   # name -> (op, X's shape, parts): zero batch, zero channels, a zero-length output
    "AveragePool-zero-batch": ("AveragePool", (0, 3, 5, 5), (22, {"kernel_shape": [2, 2]})),
    "MaxPool-zero-channels": ("MaxPool", (2, 0, 5), (22, {"kernel_shape": [2]})),
    "LpPool-zero-length-output": ("LpPool", (2, 3, 2, 4), (22, {
        "kernel_shape": [3, 2], "strides": [3, 1], "auto_pad": "VALID", "p": 2})),
    "AveragePool-zero-length-output": ("AveragePool", (1, 2, 4, 1), (22, {
        "kernel_shape": [2, 3], "strides": [1, 4], "auto_pad": "VALID"})),
    "MaxPool-zero-length-output": ("MaxPool", (1, 2, 1, 3), (22, {
        "kernel_shape": [2, 1], "strides": [2, 1], "auto_pad": "VALID"})),
    "GlobalAveragePool-zero-batch": ("GlobalAveragePool", (0, 2, 3), (22, {})),
    "AdaptiveAveragePool-zero-sizes": ("AdaptiveAveragePool", (2, 3, 4, 5), ((0, 3),)),
    "AdaptiveMaxPool-zero-batch": ("AdaptiveMaxPool", (0, 3, 4), ((2,),)),
}


@pytest.mark.parametrize("name", EMPTY)
def test_empty_tensors(backend, rng, name):
    """An empty X gives an empty dX; an X whose output is empty (a zero-length output axis)
    gives zeros of X's shape (+0; LpPool's the empty sum times each element's factor); out=
    is returned, written."""
    op, shape, parts = EMPTY[name]
    x = random(rng, shape, np.float32)
    if op.startswith("Adaptive"):
        y = api.adaptive_pool(op, x, parts[0]) if x.size else np.zeros((
            *shape[:2], *parts[0]), x.dtype)
    elif op.startswith("Global"):
        y = np.zeros((*shape[:2], *(1,) * (len(shape) - 2)), x.dtype)
    else:
        y = api.run(op, x, *parts)
    assert y.size == 0
    dy = y.astype(np.float32)
    dx = gradient(backend, op, x, dy, parts)
    out = to_backend(np.full(shape, np.nan, np.float32), backend)
    assert gradient(backend, op, x, dy, parts, out=out) is out
    for got in (dx, out):
        got = to_numpy(got)
        assert got.shape == x.shape and got.dtype == x.dtype
        if op == "LpPool":   # +0 times each element's factor sign(x) |x|^(p-1)
            assert (got == 0).all() and (np.signbit(got) == (x < 0)).all()
        else:
            assert (got.view(np.uint32) == 0).all()


@pytest.mark.parametrize("name", LAYOUT)
def test_64_bit_offsets(rng, monkeypatch, launches, name):
    """With 64-bit offsets (forced: every launch's index width), the gradient kernels give the
    32-bit instantiations' bits."""
    op, x, dy, saved, parts = layout_inputs(rng, name)
    narrow = gradient("emulated", op, x, dy, parts, saved)
    assert {k.index_bits for k, _ in launches} == {32}
    launches.clear()
    monkeypatch.setattr(launcher, "grid_offset_bits", lambda *extents: 64)
    replan(kernel_grad.gradient_args, kernel_grad.adaptive_gradient_args)
    wide = gradient("emulated", op, x, dy, parts, saved)
    replan(kernel_grad.gradient_args, kernel_grad.adaptive_gradient_args)
    ((k, _),) = launches
    assert k.template in ("pool_grad", "pool_adaptive_grad") and k.index_bits == 64
    assert_same_bits(wide, narrow)


def test_inputs_on_another_device_are_refused():
    """dY, the saved output or out on another device than X: a ValueError naming it (the
    stand-in's second device)."""
    if GPU:
        pytest.skip("the stand-in's second device: no GPU may be visible")
    rng = np.random.default_rng(3)
    op, x, dy, saved, parts = layout_inputs(rng, "MaxPool-1d")
    with StandIn().installed():
        cp = execution.cupy_module()
        xs, dys, ss = cp.asarray(x), cp.asarray(dy), cp.asarray(saved)
        with cp.cuda.Device(1):
            dy1, s1, out1 = cp.asarray(dy), cp.asarray(saved), cp.empty(x.shape, x.dtype)
        for args, out, pattern in (((xs, dy1, ss), None, "input 'dY' is on device 1"),
                                   ((xs, dys, s1), None, "input 'Indices' is on device 1"),
                                   ((xs, dys, ss), out1, "out is on device 1")):
            with pytest.raises(ValueError, match=f"MaxPool gradient: {pattern}, X on device 0"):
                api.gradient(op, args[0], args[1], parts, saved=args[2], out=out)
