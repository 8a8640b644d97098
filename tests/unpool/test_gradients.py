"""MaxUnpool's gradient (unpool.api.gradient, PyTorch's: dX[e] = dY at the position I[e] names)
against its definition written here element by element, in both index spaces (ONNX's unpooled
shape U, output_shape or not; PyTorch's per-plane indices), ranks 1-5, every dtype, repeated
indices: the same bytes on every path (a gather moves the elements' bits, NaN payloads
included); an index outside the space (refused on host arrays, 0 from the kernel on device
ones), views, byte offsets under the kernel checker, out=, empty tensors, 64-bit offsets, bad
input."""
from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.unpool_differential import unpooled, window_attributes
from helpers.util import (
    FLOAT_DTYPES,
    at_byte_offset,
    forbid_work,
    random,
    replan,
    to_backend,
    to_numpy,
)

import onnx_cupy as oc
from onnx_cupy.core import checker, execution, launcher
from onnx_cupy.unpool import api, kernel

GPU = execution.gpu_available()


def gradient(backend: str, x: Any, indices: Any, dy: Any, output_shape: Any = None,
             space: str = "unpooled", out: Any = None, **attrs: Any) -> Any:
    with oc.backend(backend):
        return api.gradient(*(to_backend(a, backend) for a in (x, indices, dy)), output_shape,
                            22, attrs, index_space=space, out=out)


def definition(x: np.ndarray, indices: np.ndarray, dy: np.ndarray, u: tuple[int, ...],
               space: str) -> np.ndarray:
    """dX element by element: dY at the coordinates I[e] names in U (U's block at the start
    of Y), or at I[e] within e's own (n, c) plane of Y."""
    dx = np.empty_like(x)
    plane = math.prod(x.shape[2:])
    for e in range(x.size):
        i = int(indices.reshape(-1)[e])
        if space == "plane":
            dx.reshape(-1)[e] = dy.reshape(dy.shape[0] * dy.shape[1], -1)[e // plane, i]
        else:
            dx.reshape(-1)[e] = dy[np.unravel_index(i, u)]
    return dx


def configurations() -> list[Any]:
    """(rank, whether output_shape grows U, index space) with a seed each: ranks 1-5."""
    found = []
    for rank in (1, 2, 3, 4, 5):
        for space in ("unpooled", "plane"):
            for grow in (False, True):
                found.append(pytest.param(rank, grow, space,
                                          id=f"{rank}d-{space}{'-output_shape' * grow}"))
    return found


def draw(rng: np.random.Generator, rank: int, grow: bool, space: str, dtype: Any
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...], tuple[int, ...] | None,
                    dict[str, Any]]:
    """(X, I, dY, U, output_shape, attributes): indices anywhere in the space, repeats
    included, X and dY with NaN, infinities and -0.0."""
    shape = (int(rng.integers(1, 3)), int(rng.integers(1, 4)),
             *(int(v) for v in rng.integers(1, 4 if rank > 3 else 6, rank)))
    k, s, p = window_attributes(rng, shape, least=2)
    u = unpooled(shape, k, s, p)
    out = (*u[:2], *(n + int(g) for n, g in zip(u[2:], rng.integers(0, 3, rank)))) if grow \
        else u
    space_size = math.prod(out[2:]) if space == "plane" else math.prod(u)
    x = random(rng, shape, dtype)
    indices = rng.integers(0, space_size, shape)
    indices.reshape(-1)[1::3] = indices.reshape(-1)[0]   # repeats
    dy = random(rng, out, dtype, -3.0, 3.0)
    for a in (x, dy):
        a.reshape(-1)[::7], a.reshape(-1)[2::9], a.reshape(-1)[5::11] = np.nan, -np.inf, -0.0
    return x, indices, dy, u, out if grow else None, {"kernel_shape": k, "strides": s,
                                                      "pads": p}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("rank, grow, space", configurations())
def test_against_the_definition(backend, rng, rank, grow, space, dtype):
    """Every path gives the definition's bytes; X, I and dY unchanged."""
    x, indices, dy, u, out_shape, attrs = draw(rng, rank, grow, space, dtype)
    kept = [a.copy() for a in (x, indices, dy)]
    got = to_numpy(gradient(backend, x, indices, dy, out_shape, space, **attrs))
    want = definition(x, indices, dy, u, space)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert got.tobytes() == want.tobytes()
    assert all(a.tobytes() == b.tobytes() for a, b in zip(kept, (x, indices, dy)))


@pytest.mark.parametrize("space", ["unpooled", "plane"])
def test_adjoint_of_the_forward(backend, rng, space):
    """Without repeated indices the gradient is the forward's adjoint: <dX, v> = <dY,
    max_unpool(v, I)> (float64)."""
    shape, attrs = (2, 3, 4, 5), {"kernel_shape": [2, 2], "strides": [2, 2]}
    u = unpooled(shape, [2, 2], [2, 2], [0, 0, 0, 0])
    plane = math.prod(u[2:])
    if space == "plane":
        indices = np.stack([rng.permutation(plane)[:20] for _ in range(6)]).reshape(shape)
    else:
        indices = rng.permutation(math.prod(u))[:math.prod(shape)].reshape(shape)
    x, dy, v = (rng.uniform(-2, 2, s) for s in (shape, u, shape))
    dx = to_numpy(gradient(backend, x, indices, dy, None, space, **attrs))
    with oc.backend("numpy"):
        y = api.run(v, indices, None, 22, attrs, index_space=space)
    assert np.vdot(dx, v) == pytest.approx(np.vdot(dy, y), rel=1e-12)


def test_indices_outside_the_space(backend, rng):
    """An index outside [0, prod(U)): a ValueError naming it on host arrays (as the forward),
    0 for its element from the kernel on device arrays (which it cannot check without a
    synchronization)."""
    x = random(rng, (1, 2, 3), np.float32)
    indices = np.array([[[0, 5, 13], [2, -1, 3]]])
    dy = random(rng, (1, 2, 6), np.float32)
    attrs = {"kernel_shape": [2], "strides": [2]}
    if backend != "cupy":
        with pytest.raises(ValueError, match="MaxUnpool"):
            gradient(backend, x, indices, dy, **attrs)
        return
    got = to_numpy(gradient(backend, x, indices, dy, **attrs))
    assert got[0, 0, 2] == 0 and got[0, 1, 1] == 0
    assert got[0, 0, 0] == dy[0, 0, 0] and got[0, 1, 2] == dy[0, 0, 3]


def _layout(rng: np.random.Generator, dtype: Any = np.float32):
    x, indices, dy, u, out_shape, attrs = draw(rng, 2, True, "unpooled", dtype)
    return x, indices, dy, out_shape, attrs


def test_non_contiguous_inputs(backend, rng):
    """Reversed and stepped views of X, I and dY give the contiguous arrays' bytes."""
    x, indices, dy, out_shape, attrs = _layout(rng)
    want = to_numpy(gradient(backend, x, indices, dy, out_shape, **attrs)).tobytes()

    def stepped(a: np.ndarray) -> Any:
        base = np.zeros((*a.shape[:-1], 2 * a.shape[-1]), a.dtype)
        base[..., ::2] = a
        return to_backend(base, backend)[..., ::2]

    def reversed_(a: np.ndarray) -> Any:
        return to_backend(np.ascontiguousarray(a[..., ::-1]), backend)[..., ::-1]

    for view in (stepped, reversed_):
        got = gradient(backend, *(view(a) for a in (x, indices, dy)), out_shape, **attrs)
        assert to_numpy(got).tobytes() == want


@pytest.mark.parametrize("which", ["X", "I", "dY", "every"])
def test_non_native_byte_order(cpu_backend, rng, which):
    """X, I and dY in non-native byte order are read as the values they hold: the native
    arrays' gradient (a dY of X's dtype in the other byte order was refused as of another
    dtype)."""
    x, indices, dy, out_shape, attrs = _layout(rng)
    want = to_numpy(gradient(cpu_backend, x, indices, dy, out_shape, **attrs))
    inputs = [a.astype(a.dtype.newbyteorder("S")) if which in (n, "every") else a
              for n, a in zip(("X", "I", "dY"), (x, indices, dy))]
    got = to_numpy(gradient(cpu_backend, *inputs, out_shape, **attrs))
    assert got.astype(got.dtype.newbyteorder("=")).tobytes() == want.tobytes()


@pytest.mark.parametrize("offset", [1, 2, 4])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("path", ["emulated", "cupy"])
def test_inputs_at_byte_offsets(path, rng, dtype, offset):
    """X, I and dY at byte offsets: the aligned inputs' bytes, the kernel checker clean."""
    x, indices, dy, out_shape, attrs = _layout(rng, dtype)
    want = to_numpy(gradient("numpy", x, indices, dy, out_shape, **attrs)).tobytes()
    with StandIn().installed() if path == "cupy" and not GPU else contextlib.nullcontext():
        moved = [at_byte_offset(a, offset, path) for a in (x, indices, dy)]
        with checker.checking() as session, oc.backend(path):
            got = api.gradient(*moved, out_shape, 22, attrs)
        assert session.launches == 1
        assert to_numpy(got).tobytes() == want


def test_out(backend, rng):
    """out= receives dX and is returned; a wrong one is refused by name."""
    x, indices, dy, out_shape, attrs = _layout(rng)
    want = to_numpy(gradient(backend, x, indices, dy, out_shape, **attrs)).tobytes()
    out = to_backend(np.full(x.shape, np.nan, x.dtype), backend)
    assert gradient(backend, x, indices, dy, out_shape, out=out, **attrs) is out
    assert to_numpy(out).tobytes() == want
    wide = to_backend(np.zeros((*x.shape[:-1], 2 * x.shape[-1]), x.dtype), backend)
    for bad, pattern in ((to_backend(np.zeros(x.shape), backend), "out has dtype float64"),
                         (to_backend(np.zeros(x.shape[1:], x.dtype), backend), "out has shape"),
                         (wide[..., ::2], "out must be C-contiguous")):
        with pytest.raises((TypeError, ValueError), match=f"MaxUnpool gradient: {pattern}"):
            gradient(backend, x, indices, dy, out_shape, out=bad, **attrs)


@pytest.mark.parametrize("space", ["unpooled", "plane"])
def test_empty_tensors(backend, rng, space):
    """An empty X gives an empty dX (out= too); an empty output reads no index per plane."""
    x, indices = np.zeros((0, 2, 3), np.float32), np.zeros((0, 2, 3), np.int64)
    dy = np.zeros((0, 2, 6), np.float32)
    attrs = {"kernel_shape": [2], "strides": [2]}
    dx = gradient(backend, x, indices, dy, None, space, **attrs)
    assert dx.shape == x.shape and dx.dtype == x.dtype
    out = to_backend(np.zeros(x.shape, x.dtype), backend)
    assert gradient(backend, x, indices, dy, None, space, out=out, **attrs) is out


def test_64_bit_offsets(rng, monkeypatch, launches):
    """Forced 64-bit offsets: unpool_grad's 64-bit instantiation gives the 32-bit one's bytes,
    in both index spaces."""
    for space in ("unpooled", "plane"):
        x, indices, dy, u, out_shape, attrs = draw(rng, 3, True, space, np.float32)
        narrow = to_numpy(gradient("emulated", x, indices, dy, out_shape, space, **attrs))
        with monkeypatch.context() as m:
            m.setattr(launcher, "grid_offset_bits", lambda *extents: 64)
            replan(kernel.geometry, kernel.kernel_args)
            launches.clear()
            wide = to_numpy(gradient("emulated", x, indices, dy, out_shape, space, **attrs))
            ((k, _),) = launches
        replan(kernel.geometry, kernel.kernel_args)
        assert k.template == "unpool_grad" and k.index_bits == 64 and k.rank >= 1
        assert wide.tobytes() == narrow.tobytes()


X = np.ones((1, 2, 3), np.float32)
I = np.array([[[0, 2, 5], [1, 3, 4]]])
DY = np.ones((1, 2, 6), np.float32)
ATTRS = {"kernel_shape": [2], "strides": [2]}


@pytest.mark.parametrize("args, exc, pattern", [
    ((X, I, DY[..., :5]), ValueError, r"MaxUnpool gradient: dY has shape \(1, 2, 5\), expected "
     r"Y's shape \(1, 2, 6\)"),
    ((X, I, DY.astype(np.float64)), TypeError, "MaxUnpool gradient: dY has dtype float64, "
     "expected float32"),
    ((X, I.astype(np.int32), DY), TypeError, "MaxUnpool: input 'I' must be int64"),
    ((X.astype(np.int32), I, DY.astype(np.int32)), TypeError, "MaxUnpool.*int32"),
    ((X, I[..., :2], DY), ValueError, "MaxUnpool.*I"),
], ids=["dY_shape", "dY_dtype", "I_dtype", "integer_X", "I_shape"])
def test_bad_input(backend, monkeypatch, args, exc, pattern):
    forbid_work(monkeypatch)
    with pytest.raises(exc, match=pattern):
        gradient(backend, *args, **ATTRS)


def test_dy_on_another_device_is_refused():
    if GPU:
        pytest.skip("the stand-in's second device: no GPU may be visible")
    with StandIn().installed():
        cp = execution.cupy_module()
        with cp.cuda.Device(1):
            dy = cp.asarray(DY)
        with pytest.raises(ValueError, match="MaxUnpool gradient: input 'dY' is on device 1"):
            api.gradient(cp.asarray(X), cp.asarray(I), dy, None, 22, ATTRS)
