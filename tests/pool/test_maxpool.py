"""MaxPool: ONNX's node tests, the randomized differential against the loop oracle, onnxruntime
and onnx.reference (helpers/maxpool_differential.py), the NaN/tie/empty-window rules, numpy =
emulated bit for bit (values and indices, every dtype, ranks 1-5), the fast kernel = the generic
one bit for bit, empty tensors, `out=` and input immutability."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import maxpool_differential as diff
from helpers import node_tests
from helpers.differential import parameters, totals
from helpers.maxpool_oracle import max_pool as oracle
from helpers.util import BF16, FLOAT_DTYPES, random, to_backend, to_numpy

import onnx_cupy
from onnx_cupy import max_pool

ALL_DTYPES = [*FLOAT_DTYPES, np.dtype(np.int8), np.dtype(np.uint8)]


def run(x, backend, **attrs):
    with onnx_cupy.backend(backend):
        return max_pool(to_backend(x, backend), **attrs)


def values(rng, shape, dtype):
    """Fresh random values with frequent ties (integers: their whole range)."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, int(info.max) + 1, shape).astype(dtype)
    return (rng.integers(-8, 9, shape) * 0.25).astype(dtype)


def test_every_node_test_of_the_operator_runs():
    node_tests.check_every_node_test_runs("MaxPool")
    assert len(node_tests.names("MaxPool")) == 19


@pytest.mark.parametrize("name", node_tests.names("MaxPool"))
def test_node_case(name, backend):
    node_tests.check_node_case("MaxPool", name, backend)


# ------------------------------------------------------------------------- differential

@pytest.mark.parametrize("index", parameters(
    range(diff.CONFIGS), diff.name, lambda i: i % diff.EMULATED_EVERY == 0))
def test_configuration(index):
    """Oracle bit for bit (or the rejection of a negative length), each runtime that accepts the
    configuration unless a listed case puts it off."""
    record = diff.evaluate(index)
    assert not record.failures, record.report()


@pytest.mark.slow
def test_checks_reached():
    """How many configurations reached each check (printed with -s), none failing, every listed
    case met."""
    n = totals(diff.evaluate(i) for i in range(diff.CONFIGS))
    print(f"\nMaxPool: {dict(sorted(n.items()))}")
    assert not [k for k in n if k.startswith("failed:")], dict(n)
    assert n["oracle"] + n["negative length"] == diff.CONFIGS
    assert n["rejects negative length"] == n["negative length"] > 0
    assert n["emulated"] >= diff.CONFIGS // diff.EMULATED_EVERY
    assert n["indices"] >= diff.CONFIGS * 0.3 and n["storage_order"] >= diff.CONFIGS * 0.1
    assert n["onnxruntime"] - n["tolerated:onnxruntime"] >= diff.CONFIGS * 0.3
    assert n["onnx.reference"] - n["tolerated:onnx.reference"] >= diff.CONFIGS * 0.3
    for dtype in ALL_DTYPES:
        assert n[f"dtype {dtype}"] >= 3, dtype
    for case, (runtimes, _) in diff.CASES.items():
        assert sum(n[f"{r} off: {case}"] for r in runtimes) >= 2, case


# ------------------------------------------------------------------------- semantics

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_nan_propagates_last_nan_wins(dtype, cpu_backend):
    """NaN wins against every number and the last NaN of a window wins (PyTorch's rule); the first
    of equal values wins."""
    nan = np.nan
    x = np.array([[[1, nan, 3, 2, 2, nan, nan, 5, 3, 3]]]).astype(dtype)
    y, i = run(x, cpu_backend, kernel_shape=[2], return_indices=True)
    expected = np.array([nan, nan, 3, 2, nan, nan, nan, 5, 3])
    np.testing.assert_array_equal(to_numpy(y)[0, 0].astype(np.float64), expected)
    np.testing.assert_array_equal(to_numpy(i)[0, 0], [1, 1, 2, 3, 5, 6, 6, 7, 8])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_empty_window_and_pads_never_win(dtype, cpu_backend):
    """Pads never win (an all-minimum row keeps its own index), a window with no element of X
    gives -inf (the integer minimum) and -1."""
    low = np.iinfo(dtype).min if np.dtype(dtype).kind in "iu" else -np.inf
    x = np.full((1, 1, 1, 2), low).astype(dtype)
    y, i = run(x, cpu_backend, kernel_shape=[1, 2], dilations=[1, 3], pads=[0, 1, 0, 1],
               return_indices=True)
    assert to_numpy(y).tolist() == [[[[low]]]] and to_numpy(i).tolist() == [[[[-1]]]]
    y, i = run(x, cpu_backend, kernel_shape=[1, 2], pads=[0, 1, 0, 1], return_indices=True)
    assert to_numpy(i).tolist() == [[[[0, 0, 1]]]]
    assert to_numpy(y).astype(np.float64).tolist() == [[[[low] * 3]]]


@pytest.mark.parametrize("order", [0, 1])
def test_indices_cover_n_and_c(order, cpu_backend, rng):
    """Indices count whole (n, c) planes before the spatial index, row- or column-major."""
    x = random(rng, (2, 3, 4, 5), np.float32)
    y, i = run(x, cpu_backend, kernel_shape=[2, 2], strides=[2, 2], storage_order=order,
               return_indices=True)
    i = to_numpy(i)
    for n in range(2):
        for c in range(3):
            plane = i[n, c] - (n * 3 + c) * 20
            h, w = (plane % 4, plane // 4) if order else (plane // 5, plane % 5)
            np.testing.assert_array_equal(x[n, c][h, w], to_numpy(y)[n, c])


# ------------------------------------------------------------------------- parity

SPATIAL = {1: (23,), 2: (9, 7), 3: (5, 4, 6), 4: (4, 3, 5, 3), 5: (3, 4, 3, 4, 3)}


def random_attrs(rng, spatial):
    nd = len(spatial)
    kernel = [int(rng.integers(1, min(n, 3) + 1)) for n in spatial]
    return {"kernel_shape": kernel, "strides": rng.integers(1, 3, nd).tolist(),
            "dilations": [int(rng.integers(1, 3)) if 2 * k - 1 <= n else 1
                          for k, n in zip(kernel, spatial)],
            "pads": [int(rng.integers(0, k + 2)) for k in kernel * 2],
            "ceil_mode": int(rng.integers(2)), "storage_order": int(rng.integers(2))}


@pytest.mark.parametrize("nd", SPATIAL)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_numpy_matches_emulated_bitwise(nd, dtype, rng):
    """Values and indices, NaN included, bit for bit; the oracle agrees."""
    for _ in range(3):
        x = values(rng, (2, 3, *SPATIAL[nd]), dtype)
        if x.dtype.kind == "f":
            x.flat[rng.integers(0, x.size, 3)] = np.nan
        attrs = random_attrs(rng, SPATIAL[nd])
        y, i = run(x, "numpy", return_indices=True, **attrs)
        ye, ie = run(x, "emulated", return_indices=True, **attrs)
        assert y.size > 0 and y.dtype == x.dtype and i.dtype == np.int64
        assert ye.tobytes() == y.tobytes() and np.array_equal(ie, i)
        yo, io = oracle(x, attrs)
        assert yo.tobytes() == y.tobytes() and np.array_equal(io, i)


@pytest.mark.parametrize("nd", SPATIAL)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("indices", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_numpy_gathered_windows_keep_the_passes_bits(nd, dtype, indices, seed, pool_gather):
    """A small call's windows from one gather give the passes' values and indices bit for bit:
    NaNs (the last wins), signed zeros (the first wins), infinities, ties, windows in the
    padding, every storage_order, with and without Indices."""
    rng = np.random.default_rng([nd, ALL_DTYPES.index(dtype), seed, indices])
    spatial = tuple(max(1, n // 2) for n in SPATIAL[nd])
    x = values(rng, (2, 3, *spatial), dtype)
    if x.dtype.kind == "f":
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, -0.0, 0.0]).astype(dtype)
        pick = rng.random(x.shape) < 0.3
        x[pick] = special[rng.integers(0, len(special), int(pick.sum()))]
    attrs = random_attrs(rng, spatial)
    pool_gather(1 << 40)
    gathered = run(x, "numpy", return_indices=indices, **attrs)
    pool_gather(0)
    passes = run(x, "numpy", return_indices=indices, **attrs)
    for a, b in zip(*(r if indices else (r,) for r in (gathered, passes))):
        assert a.size > 0 and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("window", [(2, 2), (3, 1), (3, 2), (4, 3)], ids=str)
def test_fast_matches_generic_bitwise(nd, dtype, window, rng, launches):
    """Without indices the fast kernel (fixed and runtime windows) runs; its values are the
    generic kernel's (which writes indices) bit for bit, and numpy's."""
    spatial = SPATIAL[nd][:-1] + (13,)
    x = values(rng, (2, 3, *spatial), dtype)
    if x.dtype.kind == "f":
        x.flat[rng.integers(0, x.size, 4)] = np.nan
    attrs = {"kernel_shape": [2] * (nd - 1) + [window[0]],
             "strides": [1] * (nd - 1) + [window[1]], "pads": [1] * (2 * nd)}
    fast = run(x, "emulated", **attrs)
    assert launches[-1][0].template == "pool_fast" and launches[-1][0]["mode"] == "max"
    generic, _ = run(x, "emulated", return_indices=True, **attrs)
    assert launches[-1][0].template == "pool"
    assert fast.tobytes() == generic.tobytes() == run(x, "numpy", **attrs).tobytes()


@pytest.mark.parametrize("shape", [(0, 3, 5), (2, 0, 4, 4), (1, 2, 0, 3)], ids=str)
def test_empty_tensors(shape, cpu_backend):
    x = np.empty(shape, np.float32)
    nd = len(shape) - 2
    y, i = run(x, cpu_backend, kernel_shape=[1] * nd, return_indices=True)
    assert y.shape == shape and i.shape == shape and i.dtype == np.int64


def test_out_and_input_unchanged(cpu_backend, rng):
    x = random(rng, (2, 2, 6, 6), np.float32)
    before = x.copy()
    out = np.empty((2, 2, 3, 3), np.float32)
    y, i = run(x, cpu_backend, kernel_shape=[2, 2], strides=[2, 2], out=out, return_indices=True)
    assert y is out and np.array_equal(x, before) and i.shape == out.shape
    np.testing.assert_array_equal(out, x.reshape(2, 2, 3, 2, 3, 2).max(axis=(3, 5)))


def test_strided_input(cpu_backend, rng):
    """A non-contiguous view gives the result of its contiguous copy (indices are logical)."""
    base = random(rng, (2, 3, 8, 10), np.float32)
    view = base[:, ::-1, 1::2, ::3]
    attrs = {"kernel_shape": [2, 2], "pads": [1, 0, 0, 1], "storage_order": 1}
    got = run(view, cpu_backend, return_indices=True, **attrs)
    want = run(np.ascontiguousarray(view), "numpy", return_indices=True, **attrs)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_bfloat16_and_int_versions(cpu_backend, rng):
    x = random(rng, (1, 2, 5), BF16)
    assert run(x, cpu_backend, kernel_shape=[2]).dtype == BF16
    xi = values(rng, (1, 2, 5), np.uint8)
    y = run(xi, cpu_backend, kernel_shape=[2], opset=12)
    np.testing.assert_array_equal(y, np.maximum(xi[..., 1:], xi[..., :-1]))
