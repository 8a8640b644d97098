"""GridSample's small calls on the NumPy path (onnx_cupy.grid.numpy: one chunk, its scratch
kept, every channel's taps gathered at once and the weights spread over the values they weigh)
against the chunked path that larger calls take, bit for bit (a NaN matching any NaN: see
`assert_same`), on 240 seeded configurations: every mode x padding mode x align_corners x rank
1, 2, 3, batch 1 to 3, X of float16, bfloat16, float32, float64, int8, uint8, int32 (strings in
nearest) with NaN and infinities, grids of float16, bfloat16, float32 or float64 with positions
outside [-1, 1], exact ties, NaN, infinities and huge values. Each configuration is a test of
its own (`-k small-0042`), and runs the small call twice with fresh X and grid values, the
second time on the scratch the first left, as a repeated call does."""
from __future__ import annotations

import dataclasses
import math
import threading

import numpy as np
import pytest
from helpers.util import BF16

from onnx_cupy.core import calls, execution
from onnx_cupy.grid import api as grid_api
from onnx_cupy.grid import numpy as numpy_path
from onnx_cupy.grid import plan as grid_plan

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

COUNT = 240
MODES = ("linear", "nearest", "cubic")
PADDING = ("zeros", "border", "reflection")
X_TYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64),
           np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int32))
GRID_TYPES = (np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64))


@dataclasses.dataclass(frozen=True)
class Config:
    mode: str
    padding: str
    align_corners: int
    x_shape: tuple[int, ...]
    out: tuple[int, ...]   # the grid's output positions
    dtype: np.dtype
    grid_dtype: np.dtype


def configuration(i: int) -> Config:
    """Every mode x padding x align_corners x rank 1, 2, 3 (54) in turn; the rest drawn from
    seed i, the output then narrowed (its longest axis first, then the channels) until the call
    is small."""
    rng = np.random.default_rng(1000 + i)
    mode, padding, align = MODES[i % 3], PADDING[i // 3 % 3], i // 9 % 2
    rank = 1 + i // 18 % 3
    x_shape = [int(rng.integers(1, 4)), int(rng.integers(1, 5)),
               *(int(rng.integers(1, 7)) for _ in range(rank))]
    out = [int(rng.integers(1, 6)) for _ in range(rank)]
    if mode == "nearest" and i % 15 == 0:
        dtype = np.dtype("U3")
    else:
        dtype = X_TYPES[int(rng.integers(len(X_TYPES)))]
    grid_dtype = GRID_TYPES[int(rng.integers(len(GRID_TYPES)))]
    while True:
        pl = grid_plan.make_sample(tuple(x_shape), dtype, (x_shape[0], *out, rank),
                                      grid_dtype, 22, mode=mode, padding_mode=padding,
                                      align_corners=align)
        store = np.dtype(dtype if mode == "nearest" else numpy_path.accumulate_dtype(dtype))
        if numpy_path._small_bytes(pl, store, x_shape[1], x_shape[0] * math.prod(out)) \
                <= numpy_path.SMALL_BYTES:
            break
        if max(out) > 1:
            out[out.index(max(out))] -= 1
        else:
            x_shape[1] -= 1
    return Config(mode, padding, align, tuple(x_shape), tuple(out), dtype, grid_dtype)


def name(i: int) -> str:
    c = configuration(i)
    return (f"small-{i:04d}-{c.mode}-{c.padding}-ac{c.align_corners}-{len(c.out)}d-"
            f"{c.dtype.name}-grid_{c.grid_dtype.name}")


def inputs(c: Config, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """X (floats: a few NaN and infinities) and a grid: positions in [-1.6, 1.6], a quarter on
    a lattice of 1/8 (exact ties), and NaN, infinities and huge values."""
    if c.dtype.kind == "U":
        x = rng.integers(0, 1000, c.x_shape).astype(c.dtype)
    elif c.dtype.kind in "iu":
        info = np.iinfo(c.dtype)
        x = rng.integers(max(info.min, -300), min(info.max, 300), c.x_shape,
                         endpoint=True).astype(c.dtype)
    else:
        values = rng.uniform(-2.0, 3.0, c.x_shape)
        values.flat[rng.integers(0, values.size, 2)] = [np.nan, np.inf][: min(2, values.size)]
        x = values.astype(c.dtype)
    g = rng.uniform(-1.6, 1.6, (c.x_shape[0], *c.out, len(c.out)))
    flat = g.reshape(-1)
    lattice = rng.random(flat.size) < 0.25
    flat[lattice] = np.round(flat[lattice] * 8) / 8
    special = rng.permutation(flat.size)[: max(1, flat.size // 6)]
    flat[special] = rng.choice([np.nan, np.inf, -np.inf, 1e30, -1e30, 40.0], special.size)
    return x, g.astype(c.grid_dtype)


def sample(c: Config, x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, bool]:
    """(GridSample on the NumPy path, whether its prepared call is small)."""
    attrs = {"mode": c.mode, "padding_mode": c.padding, "align_corners": c.align_corners}
    with execution.backend("numpy"):
        y = grid_api.run_sample(x, g, 22, attrs)
    sampler = grid_api.SAMPLE.numpy(grid_api.SAMPLE.plan(x, g, 22, 0, 0, attrs), x, g)
    return y, sampler.small


def assert_same(got: np.ndarray, expected: np.ndarray) -> None:
    """The same dtype, shape and elements' bit patterns (strings: the same strings), where a
    NaN matches any NaN: which NaN's sign and payload survive where two NaNs meet (one of X, one
    that 0 * inf or inf - inf makes) NumPy's loops leave open (its vectorized body and its
    remainder loop pass on different operands'), so it follows where an element falls in an
    operation and differs between the NumPy path and the emulated kernels too."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if got.dtype.kind in "Uiub":
        np.testing.assert_array_equal(got, expected)
        return
    nan = np.isnan(got.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(expected.astype(np.float64)))
    bits = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(bits)[~nan], expected.view(bits)[~nan])


@pytest.mark.parametrize("index", range(COUNT), ids=name)
def test_small_call_equals_chunked(index, monkeypatch):
    c = configuration(index)
    rng = np.random.default_rng(index)
    first, second = inputs(c, rng), inputs(c, rng)
    calls.clear()
    small = []
    for x, g in (first, second):   # the second call reuses the first's scratch
        y, is_small = sample(c, x, g)
        assert is_small
        small.append(y)
    monkeypatch.setattr(numpy_path, "SMALL_BYTES", 0)   # the chunked path
    calls.clear()
    for (x, g), y in zip((first, second), small):
        chunked, is_small = sample(c, x, g)
        assert not is_small
        assert_same(y, chunked)


@pytest.mark.parametrize("mode", MODES)
def test_benchmark_tiny_call_is_small(mode):
    """The benchmark's tiny call, (1, 3, 8, 8) on an (1, 8, 8, 2) grid, takes the small path
    (so that the configurations above test the path it runs)."""
    c = Config(mode, "zeros", 0, (1, 3, 8, 8), (8, 8), np.dtype(np.float32),
               np.dtype(np.float32))
    assert sample(c, *inputs(c, np.random.default_rng(0)))[1]


def test_small_call_outputs_vary_with_the_grid():
    """Each call's positions come from its own grid: a kept scratch holds nothing of the last."""
    c = Config("linear", "zeros", 0, (1, 3, 8, 8), (8, 8), np.dtype(np.float32),
               np.dtype(np.float32))
    rng = np.random.default_rng(5)
    x, g = inputs(c, rng)
    y1 = sample(c, x, g)[0]
    y2 = sample(c, x, -g)[0]
    y3 = sample(c, x, g)[0]
    assert not np.array_equal(y1, y2, equal_nan=True)
    assert_same(y1, y3)


def test_small_calls_in_threads():
    """Threads running one prepared small call at once each use a scratch of their own."""
    c = Config("linear", "zeros", 0, (2, 3, 8, 8), (8, 8), np.dtype(np.float32),
               np.dtype(np.float32))
    rng = np.random.default_rng(9)
    cases = [inputs(c, rng) for _ in range(4)]
    expected = [sample(c, x, g)[0] for x, g in cases]
    start, got = threading.Barrier(len(cases)), {}

    def work(i: int) -> None:
        start.wait()
        got[i] = [sample(c, *cases[i])[0] for _ in range(200)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, ys in got.items():
        for y in ys:
            assert_same(y, expected[i])
    assert len(got) == len(cases)
