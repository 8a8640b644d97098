"""GridSample's fast kernel (2-D linear and nearest, X and grid of one float dtype, the grid's
output positions walked by one stride): which calls the host sends to it, and that it gives the
generic kernels' bits on the emulated backend for every float dtype, mode, padding mode and
align_corners, with 32-bit and 64-bit offsets, strided inputs, NaN and positions far outside;
the generic kernels at the fast path's boundaries; its static targets in the kernel report."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.util import BF16

from onnx_cupy.core import calls, execution, records
from onnx_cupy.grid import api as grid_api
from onnx_cupy.grid import kernel as grid_kernel
from onnx_cupy.tools import kernel_report

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]


def emulated(x, grid, monkeypatch=None, pad_first=False, **attrs) -> np.ndarray:
    """GridSample on the emulated backend; the generic kernels when `monkeypatch` is given."""
    attrs = {"mode": "linear", "padding_mode": "zeros", "align_corners": 0, **attrs}
    with execution.backend("emulated"):
        if monkeypatch is None:
            return grid_api.run_sample(x, grid, 22, attrs, pad_before_rounding=pad_first)
        with monkeypatch.context() as m:
            m.setattr(grid_kernel, "_fast_kernel", lambda *a: None)
            grid_kernel.sample_args.cache_clear()
            calls.clear()   # prepared calls of the fast kernels
            try:
                return grid_api.run_sample(x, grid, 22, attrs, pad_before_rounding=pad_first)
            finally:
                grid_kernel.sample_args.cache_clear()
                calls.clear()


def pattern(a: np.ndarray) -> np.ndarray:
    """The elements' bit patterns (NaN compares equal to the same NaN)."""
    return a.view(f"u{a.dtype.itemsize}")


def data(rng, dtype, shape=(2, 3, 7, 9), out=(5, 6)):
    """X and a grid of its dtype: positions outside [-1, 1] and a few NaN."""
    x = rng.uniform(-2, 3, shape).astype(dtype)
    g = rng.uniform(-1.7, 1.7, (shape[0], *out, 2)).astype(dtype)
    g.flat[::17] = np.nan
    return x, g


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("padding", list(grid_kernel.PADDING))
@pytest.mark.parametrize("mode", grid_kernel.FAST_MODES)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_fast_equals_generic(rng, launches, monkeypatch, index_width, dtype, mode, padding,
                             align_corners, bits):
    index_width(bits)
    x, g = data(rng, dtype)
    launches.clear()
    got = emulated(x, g, mode=mode, padding_mode=padding, align_corners=align_corners)
    ((kernel, _),) = launches
    assert kernel is grid_kernel.FAST[dtype.name, mode, padding, bits]
    generic = emulated(x, g, monkeypatch, mode=mode, padding_mode=padding,
                       align_corners=align_corners)
    assert not launches[-1][0].fast and launches[-1][0].index_bits == bits
    np.testing.assert_array_equal(pattern(got), pattern(generic))
    np.testing.assert_array_equal(pattern(got), pattern(grid_api.run_sample(
        x, g, 22, {"mode": mode, "padding_mode": padding, "align_corners": align_corners})))


@pytest.mark.parametrize("mode", grid_kernel.FAST_MODES)
def test_fast_strided_inputs(rng, launches, monkeypatch, mode):
    """X of any strides; a grid whose output axes merge into one stride (a slice of rows)."""
    base, gbase = data(rng, np.float32, shape=(4, 6, 8, 10), out=(9, 7))
    x = base[::2, ::2, ::-1, 1::2]
    g = gbase[1::2, 2:7]
    launches.clear()
    got = emulated(x, g, mode=mode, padding_mode="border")
    assert launches[0][0].fast
    np.testing.assert_array_equal(pattern(got), pattern(emulated(x, g, monkeypatch, mode=mode,
                                                          padding_mode="border")))


def test_generic_at_the_boundaries(rng, launches):
    """3-D, cubic, mixed dtypes, integers, a grid whose output positions take two strides, and
    PyTorch's nearest order under reflection take the generic kernels."""
    x, g = data(rng, np.float32)
    x3 = rng.uniform(size=(1, 2, 3, 4, 5)).astype(np.float32)
    g3 = rng.uniform(-1, 1, (1, 2, 2, 2, 3)).astype(np.float32)
    calls = [(x3, g3, {}), (x, g, {"mode": "cubic"}), (x, g.astype(np.float64), {}),
             (x.astype(np.int16), g, {}), (x, g[:, ::2, :5], {}),
             (x, g.transpose(0, 2, 1, 3), {"mode": "nearest"})]
    for xi, gi, attrs in calls:
        launches.clear()
        emulated(xi, gi, **attrs)
        assert not launches[0][0].fast, attrs
    launches.clear()
    emulated(x, g, pad_first=True, mode="nearest", padding_mode="reflection")
    assert not launches[0][0].fast
    launches.clear()
    emulated(x, g, pad_first=True, mode="nearest", padding_mode="border")
    assert launches[0][0].fast   # the orders differ under reflection only


def test_grid_stride_loop_and_chunks(rng, launches, launch_limits):
    """More positions than the grid's threads (the grid-stride loop), and channels split."""
    launch_limits(MAX_BLOCKS=2)
    x, g = data(rng, np.float32, shape=(1, 2, 5, 6), out=(30, 40))
    got = emulated(x, g)
    (grid, block) = launches[0][1]
    assert grid[0] * block[0] < 30 * 40
    np.testing.assert_array_equal(pattern(got), pattern(grid_api.run_sample(x, g, 22, {})))
    x, g = data(rng, np.float32, shape=(1, 300, 3, 4), out=(1, 2))
    launches.clear()
    got = emulated(x, g, mode="nearest")
    assert launches[0][1][0][1] > 1   # channel chunks on grid y
    np.testing.assert_array_equal(pattern(got), pattern(grid_api.run_sample(x, g, 22,
                                                                      {"mode": "nearest"})))


def test_empty_output_launches_nothing(launches):
    got = emulated(np.ones((1, 2, 3, 4), np.float32), np.zeros((1, 0, 3, 2), np.float32))
    assert got.shape == (1, 2, 0, 3) and launches == []


def test_budgets():
    """The fast kernels with float16/bfloat16/float32 storage are held to BUDGET (1.5x with
    64-bit offsets), except reflection's (its exact fold costs more: reported, not budgeted)."""
    for (name, mode, padding, bits), k in grid_kernel.FAST.items():
        assert k.fast and k.outputs == 1
        assert k.held == (name in records.HELD_DTYPES)
        want = None if padding == "reflection" else records.fast_budget(grid_kernel.BUDGET, bits)
        assert k.budget == want, k
    assert kernel_report.budgets()["grid"] == grid_kernel.BUDGET


@pytest.fixture(scope="module")
def report():
    pytest.importorskip("cuda.bindings.nvrtc", reason="cuda.bindings is not installed")
    return {k.instantiation: k for k in kernel_report.family_report("grid", "sm_90")}


@pytest.mark.slow
def test_no_instantiation_uses_local_memory(report):
    using = [k.expression for k in report.values() if kernel_report.uses_local_memory(k)]
    assert report and using == []


@pytest.mark.slow
@pytest.mark.skipif(kernel_report.nvdisasm() is None, reason="no SASS counts")
def test_fast_paths_within_their_budget(report):
    """Every budgeted fast kernel, 32-bit and 64-bit offsets, within its budget; the generic
    kernels and reflection are reported with their counts."""
    budgeted = [k for k in grid_kernel.FAST.values() if k.budget is not None and k.held]
    assert len(budgeted) == 2 * 3 * 2 * 2   # modes, dtypes, paddings, index widths
    for k in budgeted:
        assert kernel_report.check(report[k], k.budget) == [], report[k]
    for (name, mode, padding, bits), k in grid_kernel.FAST.items():
        if k.held and padding != "reflection":
            reflected = grid_kernel.FAST[name, mode, "reflection", bits]
            assert report[reflected].per_output > report[k].per_output
    assert all(report[k].per_output is not None for k in itertools.chain(
        grid_kernel.NEAREST.values(), grid_kernel.WEIGHTED.values()))
