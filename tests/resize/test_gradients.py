"""Resize's gradient (resize.api.gradient, onnx_cupy.vjp of resize and upsample) against its
definition: with a single resized axis, a loop over the forward plan's table, every output
coordinate in ascending order adding weight * dY to the element each tap reads, from +0 in the
accumulation type, rounded once to X's dtype (the NumPy path's bits); on any configuration, the
kernels (emulated, cupy) give the NumPy path's bits, the same at every run; independently of the
tables, the gradient is the adjoint of the forward (J' dY, J's columns the forward of unit
inputs). Then vjp's inputs and outputs, views, byte offsets under the kernel checker, out=,
empty tensors, 64-bit offsets and bad input."""
from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import (
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
from onnx_cupy.resize import api, kernel_grad, plan, plan_grad

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
GPU = execution.gpu_available()
COUNT = 72
SCALES = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 3.2)


@dataclasses.dataclass(frozen=True)
class Configuration:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    opset: int
    attrs: dict[str, Any]
    roi: list[float] | None
    scales: list[float] | None
    sizes: list[int] | None
    special: bool   # NaN and infinities in dY

    @property
    def parts(self) -> tuple[Any, ...]:
        return (self.opset, None, {**plan.DEFAULTS, **self.attrs})

    @property
    def vectors(self) -> tuple[Any, ...]:
        return (self.roi, self.scales, self.sizes)


def _draw(rng: np.random.Generator, index: int) -> Configuration:
    rank = 1 + index % 5
    shape = tuple(int(n) for n in rng.integers(1, 8 if rank < 4 else 5, rank))
    dtype = FLOAT_DTYPES[index // 5 % 4]
    mode = ("nearest", "linear", "cubic")[index % 3]
    opset = int(rng.choice([11, 13, 18, 19])) if mode != "nearest" or index % 4 or \
        dtype.name == "bfloat16" else 10
    attrs: dict[str, Any] = {"mode": mode}
    if opset > 10:   # Resize-10: asymmetric, its own rounding
        attrs["coordinate_transformation_mode"] = str(rng.choice(plan.COORDINATE_MODES[opset]))
        attrs["nearest_mode"] = str(rng.choice(plan.NEAREST_MODES))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5]))
    if mode != "nearest" and opset > 10:
        attrs["exclude_outside"] = int(rng.integers(0, 2))
    if mode != "nearest" and opset >= 18:
        attrs["antialias"] = int(rng.integers(0, 2))
    axes = list(range(rank))
    if opset >= 18 and rank > 1 and index % 2:
        axes = sorted(int(a) for a in rng.choice(rank, int(rng.integers(1, rank)), False))
        attrs["axes"] = axes
    roi = scales = sizes = None
    ctm = attrs.get("coordinate_transformation_mode", "asymmetric")
    if ctm == "tf_crop_and_resize":
        starts = rng.uniform(-0.3, 0.6, len(axes))
        roi = [float(v) for v in (*starts, *(starts + rng.uniform(0.2, 0.9, len(axes))))]
        attrs["extrapolation_value"] = float(rng.uniform(-2, 2))
    if index % 3 == 1 and opset > 10:
        sizes = [int(m) for m in rng.integers(1, [2 * shape[a] + 3 for a in axes])]
    else:
        scales = [float(rng.choice(SCALES)) for _ in axes]
        if opset == 10:
            roi = None
    name = (f"{index}-{mode}-{ctm}-r{rank}-"
            f"{dtype.name}-opset{opset}{'-aa' if attrs.get('antialias') else ''}")
    return Configuration(name, shape, dtype, opset, attrs, roi, scales, sizes, index % 4 == 3)


def configuration(index: int) -> Configuration:
    """Configuration `index`: a seeded draw, drawn again until the forward takes it (some
    combinations are refused by the plan: an output length of 0 stays, it tests empty dY)."""
    rng = np.random.default_rng(9000 + index)
    for _ in range(100):
        c = _draw(rng, index)
        try:
            plan.make(c.shape, c.dtype, c.roi, c.scales, c.sizes, c.opset, None, plan.OP,
                      **c.parts[2])
        except (ValueError, TypeError):
            continue
        return c
    raise AssertionError(f"configuration {index}: no draw the forward takes")


def forward_plan(c: Configuration) -> plan.ResizePlan:
    return plan.make(c.shape, c.dtype, c.roi, c.scales, c.sizes, c.opset, None, plan.OP,
                     **c.parts[2])[0]


def inputs(c: Configuration) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7000 + int(c.name.split("-")[0]))
    x = random(rng, c.shape, c.dtype)
    dy = random(rng, forward_plan(c).out_shape, c.dtype, -3.0, 3.0)
    if c.special and dy.size:
        flat = dy.reshape(-1)
        flat[rng.integers(0, flat.size, 3)] = [np.nan, np.inf, -np.inf]
    return x, dy


def gradient(backend: str, x: Any, dy: Any, c: Configuration, out: Any = None) -> Any:
    with oc.backend(backend):
        return api.gradient(to_backend(x, backend), to_backend(dy, backend), c.parts,
                            c.vectors, out=out)


def accumulation(dtype: Any) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


@pytest.mark.parametrize("index", range(COUNT), ids=lambda i: configuration(i).name)
def test_every_path_gives_the_numpy_bits(backend, index):
    """Ranks 1-5, every dtype, mode, coordinate transformation, antialias, exclude_outside,
    axes, scales and sizes shrinking and growing, tf_crop_and_resize, NaN and infinities in
    dY: the NumPy path's bits on every path, the same at a second call; X and dY unchanged."""
    c = configuration(index)
    x, dy = inputs(c)
    kept = (x.copy(), dy.copy())
    want = gradient("numpy", x, dy, c)
    got = gradient(backend, x, dy, c)
    assert_same_bits(got, want)
    assert_same_bits(gradient(backend, x, dy, c), got)
    assert_same_bits(x, kept[0])
    assert_same_bits(dy, kept[1])


def test_configurations_reach_every_case():
    cs = [configuration(i) for i in range(COUNT)]
    assert {len(c.shape) for c in cs} == {1, 2, 3, 4, 5}
    assert {c.dtype for c in cs} == set(FLOAT_DTYPES)
    assert {c.attrs["mode"] for c in cs} == {"nearest", "linear", "cubic"}
    assert {c.attrs.get("coordinate_transformation_mode") for c in cs} >= set(
        plan.COORDINATE_MODES[19]) | {"tf_half_pixel_for_nn"}
    assert sum(bool(c.attrs.get("antialias")) for c in cs) >= 5
    assert sum(bool(c.attrs.get("exclude_outside")) for c in cs) >= 5
    assert sum("axes" in c.attrs for c in cs) >= 5
    plans = [forward_plan(c) for c in cs]
    assert sum(len(p.tables) > 1 for p in plans) >= 20
    ratios = [m / n for p in plans for m, n in zip(p.out_shape, p.in_shape) if n]
    assert min(ratios) < 0.5 and max(ratios) > 2
    assert sum(c.special for c in cs) >= 10


def definition(c: Configuration, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """A single resized axis' gradient as loops: every output coordinate o in ascending order,
    each tap t in order, adds weight[o, t] * dY[..., o, ...] to dX[..., index[o, t], ...]."""
    pl = forward_plan(c)
    acc = accumulation(c.dtype)
    dx = np.zeros(c.shape, acc)
    if pl.tables and dy.size:
        (t,) = pl.tables
        move = lambda a: np.moveaxis(a, t.axis, 0)   # noqa: E731
        d, g = move(dx), move(dy.astype(acc))
        for o in range(t.index.shape[0]):
            if t.outside[o]:
                continue
            for tap in range(t.taps):
                with np.errstate(invalid="ignore", over="ignore"):
                    d[t.index[o, tap]] += acc.type(t.weight[o, tap]) * g[o]
    elif not pl.tables:
        dx[...] = dy
    return dx.astype(c.dtype)


SINGLE = [i for i in range(COUNT) if len(forward_plan(configuration(i)).tables) == 1]


@pytest.mark.parametrize("index", SINGLE, ids=lambda i: configuration(i).name)
def test_against_the_definition(index):
    c = configuration(index)
    x, dy = inputs(c)
    assert_same_bits(gradient("numpy", x, dy, c), definition(c, x, dy))


ADJOINT = [i for i in range(COUNT) if configuration(i).dtype == np.float64
           and not configuration(i).special and math.prod(configuration(i).shape) <= 400]


@pytest.mark.parametrize("index", ADJOINT, ids=lambda i: configuration(i).name)
def test_adjoint_of_the_forward(index):
    """<dY, R(X) - R(0)> = <dX, X> for every X, so dX = J' dY with column i of J the forward
    of the unit input e_i less the forward of 0 (tf_crop_and_resize's extrapolated constant)."""
    c = configuration(index)
    x, dy = inputs(c)

    def forward(a: np.ndarray) -> np.ndarray:
        return oc.resize(a, *c.vectors, opset=c.opset, **c.attrs).astype(np.float64)
    zero = forward(np.zeros(c.shape))
    columns = []
    for i in range(x.size):
        unit = np.zeros(x.size)
        unit[i] = 1.0
        columns.append((forward(unit.reshape(c.shape)) - zero).ravel())
    want = (np.array(columns) @ dy.ravel()).reshape(c.shape) if columns else np.zeros(0)
    got = gradient("numpy", x, dy, c)
    np.testing.assert_allclose(got, want.reshape(c.shape), rtol=1e-12, atol=1e-12)


def test_plan_order_and_tables():
    """The passes run shrinking first; each coordinate's terms keep (o, t) order; outside
    coordinates give no term."""
    x = np.zeros((3, 4, 10), np.float32)
    pl = plan.make(x.shape, x.dtype, [0, 0, 0.2, 1, 1, 1.5], None, [3, 12, 5], 11, None,
                   plan.OP, **{**plan.DEFAULTS, "mode": "linear",
                               "coordinate_transformation_mode": "tf_crop_and_resize"})[0]
    gp = plan_grad.gradient(pl, x.dtype, np.zeros(pl.out_shape, np.float32), plan.OP)
    assert [p.axis for p in gp.passes] == [1, 2] and gp.shapes == ((3, 4, 5), (3, 4, 10))
    for p, t in zip(gp.passes, sorted(pl.tables, key=lambda t: -t.index.shape[0])):
        assert p.start[-1] == (~t.outside).sum() * t.taps
        for i in range(p.n):
            terms = p.source[p.start[i]:p.start[i + 1]]
            assert list(terms) == sorted(terms)
    assert gp.passes[1].start[-1] < 5 * 2   # extrapolated outputs of the last axis: no term


# --------------------------------------------------------------------------------- vjp

def test_vjp_of_resize_and_upsample(backend, rng):
    """oc.vjp(oc.resize, X[, roi, scales, sizes]) gives (dX, None per further input), the
    entry point's dX; oc.vjp(oc.upsample, X, scales) (dX, None), Resize-10's gradient."""
    x = random(rng, (2, 3, 5, 4), np.float32)
    y = oc.resize(x, None, None, [2, 3, 9, 7], mode="cubic")
    dy = random(rng, y.shape, np.float32)
    xs, dys = to_backend(x, backend), to_backend(dy, backend)
    with oc.backend(backend):
        got = oc.vjp(oc.resize, xs, None, None, [2, 3, 9, 7], cotangent=dys, mode="cubic")
        assert len(got) == 4 and got[1:] == (None, None, None)
        scaled = oc.vjp(oc.resize, xs, None, [1.0, 1.0, 2.0, 0.5], cotangent=to_backend(
            random(rng, (2, 3, 10, 2), np.float32), backend), mode="linear", opset=13)
        assert len(scaled) == 3 and scaled[1:] == (None, None)
        up = oc.vjp(oc.upsample, xs, [1.0, 1.0, 2.0, 3.0],
                    cotangent=to_backend(random(rng, (2, 3, 10, 12), np.float32), backend),
                    mode="linear")
        assert len(up) == 2 and up[1] is None and to_numpy(up[0]).shape == x.shape
    want = api.gradient(x, dy, (19, None, {**plan.DEFAULTS, "mode": "cubic"}),
                        (None, None, [2, 3, 9, 7]))
    assert_same_bits(got[0], want)
    # upsample's gradient: Resize-10's (asymmetric, linear), as its forward
    dz = random(rng, (2, 3, 10, 12), np.float32)
    with oc.backend(backend):
        a = oc.vjp(oc.upsample, xs, [1.0, 1.0, 2.0, 3.0], cotangent=to_backend(dz, backend),
                   mode="linear")[0]
        b = oc.vjp(oc.resize, xs, None, [1.0, 1.0, 2.0, 3.0], cotangent=to_backend(dz, backend),
                   mode="linear", opset=10)[0]
    assert_same_bits(a, b)


def test_vjp_refuses_what_the_forward_refuses():
    x = np.ones((1, 1, 4, 4), np.float32)
    dy = np.ones((1, 1, 8, 8), np.float32)
    with pytest.raises(TypeError, match="resize takes 1 to 4 inputs, got 5"):
        oc.vjp(oc.resize, x, None, None, None, None, cotangent=dy)
    with pytest.raises(TypeError, match="upsample takes 2 to 2 inputs, got 1"):
        oc.vjp(oc.upsample, x, cotangent=dy)
    with pytest.raises(ValueError, match="antialias.*opset 13"):
        oc.vjp(oc.resize, x, None, [1, 1, 2, 2], cotangent=dy, antialias=1, opset=13)
    with pytest.raises(ValueError, match="Resize: unknown attribute 'kernel_shape'"):
        oc.vjp(oc.resize, x, None, [1, 1, 2, 2], cotangent=dy, kernel_shape=[2])


# -------------------------------------------------------------------------- bad input

LINEAR = (19, None, {**plan.DEFAULTS, "mode": "linear"})
BAD = [
    pytest.param(ValueError, r"Resize gradient: dY has shape \(1, 2, 4, 4\), expected Y's "
                 r"shape \(1, 2, 8, 8\)", np.float32, (1, 2, 4, 4), np.float32, id="dY_shape"),
    pytest.param(TypeError, "Resize gradient: dY has dtype float64, expected float32",
                 np.float32, (1, 2, 8, 8), np.float64, id="dY_dtype"),
    pytest.param(TypeError, "Resize gradient: X has dtype int32; gradients are defined for "
                 "floating dtypes only", np.int32, (1, 2, 8, 8), np.int32, id="integer_X"),
]


@pytest.mark.parametrize("exc, pattern, x_dtype, dy_shape, dy_dtype", BAD)
def test_bad_input(backend, monkeypatch, exc, pattern, x_dtype, dy_shape, dy_dtype):
    """Refused with the input named, before anything is allocated or launched."""
    x = np.ones((1, 2, 4, 4), x_dtype)
    dy = np.ones(dy_shape, dy_dtype)
    forbid_work(monkeypatch)
    with oc.backend(backend), pytest.raises(exc, match=pattern):
        api.gradient(to_backend(x, backend), to_backend(dy, backend), LINEAR,
                     (None, [1, 1, 2, 2], None))


def test_bad_attribute_is_the_forwards_error():
    x = np.ones((1, 2, 4, 4), np.float32)
    with pytest.raises(ValueError, match="coordinate_transformation_mode"):
        api.gradient(x, np.ones((1, 2, 8, 8), np.float32),
                     (19, None, {**plan.DEFAULTS, "coordinate_transformation_mode": "bad"}),
                     (None, [1, 1, 2, 2], None))


# ----------------------------------------------------------------- layouts, out=, empty

CASE = Configuration("layout", (2, 3, 6, 5), np.dtype(np.float32), 19,
                     {"mode": "cubic", "antialias": 1}, None, None, [2, 3, 4, 9], False)


def _views(a: np.ndarray, backend: str) -> dict[str, Any]:
    reversed_ = to_backend(np.ascontiguousarray(a[..., ::-1]), backend)[..., ::-1]
    axes = (1, 0, *range(2, a.ndim))
    transposed = to_backend(np.ascontiguousarray(a.transpose(axes)), backend).transpose(axes)
    wide = np.full((*a.shape[:-1], 2 * a.shape[-1]), 7.0, a.dtype)
    wide[..., ::2] = a
    return {"reversed": reversed_, "transposed": transposed,
            "stepped": to_backend(wide, backend)[..., ::2]}


@pytest.mark.parametrize("view", ["reversed", "transposed", "stepped"])
def test_non_contiguous_inputs(backend, rng, view):
    x = random(rng, CASE.shape, CASE.dtype)
    dy = random(rng, (2, 3, 4, 9), CASE.dtype)
    want = gradient("numpy", x, dy, CASE)
    xv, dyv = _views(x, backend)[view], _views(dy, backend)[view]
    assert not dyv.flags.c_contiguous
    assert_same_bits(gradient(backend, xv, dyv, CASE), want)
    np.testing.assert_array_equal(to_numpy(dyv), dy)


@pytest.mark.parametrize("offset", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("path", ["emulated", "cupy"])
def test_inputs_at_byte_offsets(path, rng, dtype, offset):
    """X and dY at byte offsets (copied where misaligned) give the aligned inputs' bits, the
    kernel checker finding no access out of bounds or misaligned."""
    c = dataclasses.replace(CASE, dtype=np.dtype(dtype))
    x = random(rng, c.shape, dtype)
    dy = random(rng, (2, 3, 4, 9), dtype)
    want = gradient("numpy", x, dy, c)
    with StandIn().installed() if path == "cupy" and not GPU else contextlib.nullcontext():
        xs, dys = at_byte_offset(x, offset, path), at_byte_offset(dy, offset, path)
        with checker.checking() as session:
            got = to_numpy(gradient(path, xs, dys, c))
        assert session.launches >= 2
    assert_same_bits(got, want)


def test_out(backend, rng):
    x = random(rng, CASE.shape, CASE.dtype)
    dy = random(rng, (2, 3, 4, 9), CASE.dtype)
    want = gradient("numpy", x, dy, CASE)
    xs, dys = to_backend(x, backend), to_backend(dy, backend)
    out = to_backend(np.full(x.shape, np.nan, x.dtype), backend)
    assert gradient(backend, xs, dys, CASE, out=out) is out
    assert_same_bits(out, want)
    for message, bad in {"out has shape": to_backend(np.zeros(x.shape[:-1], x.dtype), backend),
                         "out has dtype float64": to_backend(np.zeros(x.shape), backend),
                         "out overlaps the input X": xs}.items():
        with pytest.raises((TypeError, ValueError), match=f"Resize gradient: {message}"):
            gradient(backend, xs, dys, CASE, out=bad)


@pytest.mark.parametrize("shape, sizes", [((0, 3, 4), [0, 3, 8]), ((2, 3, 4), [2, 3, 0]),
                                          ((2, 0, 4), [2, 0, 9])], ids=str)
def test_empty_tensors(backend, shape, sizes):
    """An empty X gives an empty dX; an empty output gives +0 of X's shape."""
    c = Configuration("empty", shape, np.dtype(np.float32), 19, {"mode": "linear"}, None, None,
                      sizes, False)
    x = np.ones(shape, np.float32)
    dy = np.ones(sizes, np.float32)
    got = to_numpy(gradient(backend, x, dy, c))
    assert got.shape == shape and (got.view(np.uint32) == 0).all()


def test_identity_plan_copies_dy(backend, rng):
    x = random(rng, (2, 3, 4), np.float64)
    dy = random(rng, (2, 3, 4), np.float64)
    c = Configuration("same", x.shape, x.dtype, 19, {"mode": "linear"}, None, [1.0] * 3,
                      None, False)
    assert_same_bits(gradient(backend, x, dy, c), dy)


def test_64_bit_offsets(rng, monkeypatch, launches):
    """With 64-bit offsets forced, resize_grad gives the 32-bit instantiations' bits."""
    x = random(rng, CASE.shape, CASE.dtype)
    dy = random(rng, (2, 3, 4, 9), CASE.dtype)
    narrow = gradient("emulated", x, dy, CASE)
    assert {k.index_bits for k, _ in launches} == {32} and len(launches) == 2
    launches.clear()
    monkeypatch.setattr(launcher, "grid_offset_bits", lambda *extents: 64)
    replan(kernel_grad.pass_args)
    wide = gradient("emulated", x, dy, CASE)
    replan(kernel_grad.pass_args)
    assert [(k.template, k.index_bits) for k, _ in launches] == [("resize_grad", 64)] * 2
    assert_same_bits(wide, narrow)


def test_inputs_on_another_device_are_refused():
    if GPU:
        pytest.skip("the stand-in's second device: no GPU may be visible")
    x = np.ones((1, 2, 4, 4), np.float32)
    with StandIn().installed():
        cp = execution.cupy_module()
        xs = cp.asarray(x)
        with cp.cuda.Device(1):
            dy1 = cp.ones((1, 2, 8, 8), np.float32)
        with pytest.raises(ValueError, match="Resize gradient: input 'dY' is on device 1, X on "
                                             "device 0"):
            api.gradient(xs, dy1, LINEAR, (None, [1, 1, 2, 2], None))
