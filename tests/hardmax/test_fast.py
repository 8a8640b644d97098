"""Hardmax fast paths (hardmax_rows: a thread group per contiguous row, hardmax_cols: a thread
per column) on the emulated backend against the NumPy fallback, exactly: every dtype, NaN, ties,
-inf, subnormals, row lengths around a warp and a pack, rows wide enough for a block, inner > 1,
3-D grids, empty and non-contiguous inputs, 64-bit indices, many cooperative thread orders; and
the generic passes where the fast ones do not apply."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from helpers.hardmax_cases import rule_rows, sample
from helpers.util import FLOAT_DTYPES, schedule
from numpy.lib.stride_tricks import as_strided

from onnx_cupy import hardmax
from onnx_cupy.core import dtypes, execution, launcher, loader
from onnx_cupy.hardmax import kernel as ops
from onnx_cupy.hardmax import plan as hardmax_plans

DTYPE_IDS = [d.name for d in FLOAT_DTYPES]


def both(x, **kw):
    """(emulated, NumPy) results."""
    with execution.backend("emulated"):
        got = hardmax(x, **kw)
    with execution.backend("numpy"):
        expected = hardmax(x, **kw)
    return got, expected


def assert_exact(x, **kw):
    got, expected = both(x, **kw)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [1, 2, 7, 31, 32, 33, 64, 100, 1000, 1030, 4096])
def test_rows(dtype, n, rng, launches):
    x = sample(rng, (5 if n > 1000 else 37, n), dtype)
    assert_exact(x)
    ((kernel, (grid, block)),) = launches
    pack = 16 // dtype.itemsize
    vector = pack if n % pack == 0 else 1
    assert (kernel.template, kernel["storage"], kernel["vector"], kernel.index_bits) == (
        "hardmax_rows", dtype.name, vector, 32)
    group = block[0]
    assert group & (group - 1) == 0 and (block[1] == 1 or group * block[1] == launcher.BLOCK)
    assert grid[0] * block[1] >= x.shape[0]


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n", [3, 33, 1000, 4096])
def test_rows_tie_nan_inf_subnormal_rules(dtype, n, launches):
    rows, idx = rule_rows(n, float(ml_dtypes.finfo(dtype).smallest_subnormal))
    x = rows.astype(dtype)
    expected = np.zeros_like(x)
    expected[np.arange(len(idx)), idx] = 1
    with execution.backend("emulated"):
        np.testing.assert_array_equal(hardmax(x).view(np.uint8), expected.view(np.uint8))
        xt = np.ascontiguousarray(x.T)
        np.testing.assert_array_equal(hardmax(xt, axis=0).view(np.uint8),
                                      np.ascontiguousarray(expected.T).view(np.uint8))
    lanes = ops.lanes(hardmax_plans.plan(13, xt.shape, xt.dtype, 0))
    assert launches[0][0].template == "hardmax_rows"
    assert launches[1][0].template == ("hardmax_cols" if lanes == 1 else "hardmax_scan")


def test_block_per_row_under_many_thread_orders(rng, launches):
    """Rows wide enough for a block per row (shared memory and a barrier) give the same answer
    whatever the order of the block's threads between synchronization points."""
    x = sample(rng, (3, 2 * ops.MAX_ROW_GROUP * ops.PACKS_PER_THREAD + 5), np.float32)
    x[1, 7::300] = np.nan
    expected = both(x)[1]
    for seed in range(6):
        with execution.backend("emulated"), schedule(seed):
            np.testing.assert_array_equal(hardmax(x), expected)
    (_, (grid, block)), *_ = launches
    assert block == (ops.MAX_ROW_GROUP, 1, 1) and grid == (3, 1, 1)
    assert all(k.cooperative for k, _ in launches)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_warp_groups_under_thread_orders(seed, rng):
    x = sample(rng, (70, 45), ml_dtypes.bfloat16)
    expected = both(x)[1]
    with execution.backend("emulated"), schedule(seed):
        np.testing.assert_array_equal(hardmax(x).view(np.uint16), expected.view(np.uint16))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,axis", [((300, 5, 7), 1), ((64, 3, 2, 33), 1), ((6, 3000), 0),
                                        ((40, 1, 3), 1), ((5, 2, 3), 0)])
def test_columns(dtype, shape, axis, rng, launches):
    x = sample(rng, shape, dtype)
    assert_exact(x, axis=axis)
    ((kernel, (grid, block)),) = launches
    assert kernel.template == "hardmax_cols" and kernel.index_bits == 32
    inner = int(np.prod(shape[axis + 1:]))
    assert grid[0] * block[0] >= inner and grid[1] * grid[2] * block[1] >= np.prod(shape[:axis])


def test_columns_on_a_3d_grid(rng, launch_limits, launches):
    launch_limits(MAX_GRID_YZ=4)
    x = sample(rng, (200, 4, 9), np.float16)
    assert_exact(x, axis=1)
    ((kernel, (grid, block)),) = launches
    assert kernel.template == "hardmax_cols" and grid == (1, 4, 4) and block == (16, 16, 1)


def test_few_long_columns_take_the_generic_passes(rng, launches):
    x = sample(rng, (2, 400, 3), np.float32)
    assert_exact(x, axis=1)
    assert [k.template for k, _ in launches] == ["hardmax_scan", "hardmax_merge"]


@pytest.mark.parametrize("shape,axis,opset", [((0, 5), -1, 13), ((4, 0), -1, 13),
                                              ((3, 0, 2), 1, 13), ((2, 0, 3), 1, 11)])
def test_empty(shape, axis, opset, launches):
    x = np.empty(shape, np.float32)
    got, expected = both(x, axis=axis, opset=opset)
    assert got.shape == expected.shape == shape and not launches


@pytest.mark.parametrize("shape,view,axis,kernel", [
    ((120, 64), lambda a: a[::-1], -1, "hardmax_rows"),            # negative row stride
    ((3000, 12), lambda a: a[:, ::2], -1, "hardmax_cols"),         # strided rows: a thread each
    ((3000, 12), lambda a: a.T, 0, "hardmax_cols"),                # strided columns
    ((121, 64), lambda a: a.reshape(-1)[1:-63].reshape(120, 64), -1, "hardmax_rows"),  # unaligned
    ((50, 4, 30), lambda a: a[:, :, ::3], 1, "hardmax_cols"),
])
def test_non_contiguous_and_unaligned(shape, view, axis, kernel, rng, launches):
    x = view(sample(rng, shape, np.float16))
    assert_exact(x, axis=axis)
    ((launched, _),) = launches
    assert launched.template == kernel
    if kernel == "hardmax_rows":
        assert (launched["vector"] == 8) == (x.ctypes.data % 16 == 0)


def test_coerced_rows_of_the_old_opsets(rng, launches):
    x = sample(rng, (6, 4, 5, 3), np.float32)
    assert_exact(x, axis=1, opset=11)
    assert launches[0][0] is ops.ROWS["float32", 32, 4]


@pytest.fixture
def index64(index_width):
    """Every size counts as past the 32-bit range: the long long instantiations run."""
    index_width(64)


@pytest.mark.parametrize("shape,axis,kernel", [((9, 300), -1, "hardmax_rows"),
                                               ((9, 4, 5), 1, "hardmax_cols"),
                                               ((2, 300, 3), 1, "hardmax_scan")])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=DTYPE_IDS)
def test_64bit_indices(index64, shape, axis, kernel, dtype, rng, launches):
    assert_exact(sample(rng, shape, dtype), axis=axis)
    assert launches[0][0].template == kernel
    assert all(k.index_bits == 64 for k, _ in launches)


def test_64bit_offsets_of_a_column_view(launches):
    """A column view reaching past 2**31 elements runs hardmax_cols with 64-bit offsets."""
    buf = np.zeros(2**31 + 64, dtype=np.float32)
    x = as_strided(buf, shape=(3, 4, 2), strides=(2**30 * 4, 8, 4))
    x[...] = np.arange(24, dtype=np.float32).reshape(3, 4, 2) % 5
    x[1, 2, 0] = np.nan
    assert_exact(x, axis=1)
    ((kernel, _),) = launches
    assert (kernel.template, kernel["storage"], kernel.index_bits) == (
        "hardmax_cols", "float32", 64)
    np.testing.assert_array_equal(both(np.ascontiguousarray(x), axis=1)[0], both(x, axis=1)[1])


def test_fast_paths_registered():
    fast = {(k.template, k["storage"], k["vector"] if k.template == "hardmax_rows"
             else None, k.index_bits): k for k in loader.instantiations("hardmax") if k.fast}
    for t in ("float16", "bfloat16", "float32", "float64"):
        for bits in (32, 64):
            assert fast["hardmax_cols", t, None, bits].outputs == 1
            assert fast["hardmax_rows", t, 1, bits].outputs == 1
            pack = 16 // (2 if t in ("float16", "bfloat16") else np.dtype(t).itemsize)
            assert fast["hardmax_rows", t, pack, bits].outputs == pack
            assert fast["hardmax_rows", t, pack, bits].expression == (
                f"hardmax_rows<{dtypes.storage_type(t)}, {pack}, {dtypes.INDEX_TYPES[bits]}>")
    assert all(k.cooperative == (k.template == "hardmax_rows") for k in fast.values())
    assert len(fast) == 4 * 2 * 3
