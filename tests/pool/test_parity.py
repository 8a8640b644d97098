"""Backend parity (NumPy fallback vs the CUDA kernels run by the emulator), strided and
non-contiguous inputs, input immutability, empty tensors, `out=`, and the 64-bit index path."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.util import FLOAT_DTYPES, assert_close, random, to_backend, to_numpy

import onnx_cupy
from onnx_cupy import average_pool, lp_pool
from onnx_cupy.core import calls, dtypes, launcher
from onnx_cupy.pool import numpy as numpy_pool

OPS = {"AveragePool": average_pool, "LpPool": lp_pool}


def run(op, x, backend, **attrs):
    """`op` on `x` through `backend` (NumPy inputs stay NumPy arrays on numpy/emulated)."""
    with onnx_cupy.backend(backend):
        return OPS[op](to_backend(x, backend), **attrs)


def random_attrs(rng, op, spatial):
    """Random explicit-padding attributes valid for these spatial sizes (at the latest opset)."""
    nd = len(spatial)
    kernel = [int(rng.integers(1, min(n, 3) + 1)) for n in spatial]
    dilations = [int(rng.integers(1, 3)) if 2 * k - 1 <= n else 1 for k, n in zip(kernel, spatial)]
    attrs = {"kernel_shape": kernel, "strides": rng.integers(1, 3, nd).tolist(),
             "dilations": dilations, "pads": rng.integers(0, 3, 2 * nd).tolist(),
             "ceil_mode": int(rng.integers(2))}
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.integers(2))
    else:
        attrs["p"] = int(rng.integers(1, 4))
    return attrs


SPATIAL = {1: (37,), 2: (11, 9), 3: (7, 5, 9), 4: (5, 3, 7, 3), 5: (3, 4, 3, 5, 3),
           6: (3, 2, 4, 3, 2, 3), 7: (2, 3, 2, 3, 2, 2, 3), 8: (3, 2, 2, 3, 2, 2, 2, 3)}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("nd", SPATIAL)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_numpy_matches_emulated(op, nd, dtype, rng):
    for _ in range(4):
        x = random(rng, (2, 3, *SPATIAL[nd]), dtype)
        attrs = random_attrs(rng, op, SPATIAL[nd])
        expected = run(op, x, "numpy", **attrs)
        assert expected.size > 0
        assert_close(run(op, x, "emulated", **attrs), expected.astype(np.float64), dtype)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_numpy_row_blocks_keep_results(op, dtype, monkeypatch, rng):
    """Blocks of 2 of the 15 N*C rows (the last one ragged) give the bits of one whole block."""
    for spatial in SPATIAL.values():
        x = random(rng, (3, 5, *spatial), dtype)
        attrs = random_attrs(rng, op, spatial)
        whole = run(op, x, "numpy", **attrs)
        row = int(np.prod(spatial)) * dtypes.accumulate_dtype(x.dtype).itemsize
        with monkeypatch.context() as m:
            m.setattr(numpy_pool, "CHUNK_BYTES", 2 * row)
            calls.clear()    # prepared again, in chunks
            got = run(op, x, "numpy", **attrs)
        calls.clear()
        np.testing.assert_array_equal(got.view(np.uint8), whole.view(np.uint8))   # NaNs too


def with_specials(rng, x):
    """`x` with about a fifth of its elements NaN, +-inf, -0.0 or +0.0."""
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0]).astype(x.dtype)
    where = rng.random(x.shape) < 0.2
    return np.where(where, special[rng.integers(0, len(special), x.shape)], x)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("nd", SPATIAL)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("values", ["specials", "signed zeros"])
@pytest.mark.parametrize("seed", range(3))
def test_numpy_gathered_sums_keep_the_passes_bits(op, nd, dtype, values, seed, pool_gather):
    """A small call's sums from one gather give the window passes' bits (signed zeros and
    NaNs included), whatever the padding, dilations and ceil_mode."""
    rng = np.random.default_rng([nd, seed, FLOAT_DTYPES.index(dtype), len(values)])
    spatial = tuple(max(1, n // 2) for n in SPATIAL[nd])
    x = random(rng, (2, 3, *spatial), dtype)
    if values == "specials":
        x = with_specials(rng, x)
    else:   # every sum is a zero, its sign decided by the order of the additions
        x = np.where(x < 0, -0.0, 0.0).astype(dtype)
    attrs = random_attrs(rng, op, spatial)
    pool_gather(1 << 40)
    gathered = run(op, x, "numpy", **attrs)
    pool_gather(0)
    passes = run(op, x, "numpy", **attrs)
    assert gathered.size > 0
    np.testing.assert_array_equal(gathered.view(np.uint8), passes.view(np.uint8))


def test_numpy_float16_widening_keeps_every_bit_pattern():
    """The table look-up gives astype's bits for all 65536 float16 values (NaNs, infinities,
    subnormals, -0.0), contiguous or not."""
    x = np.arange(1 << 16, dtype=np.uint16).view(np.float16).reshape(256, 256)
    for src in (x, x[:, ::-3]):
        got = numpy_pool.widen(src, np.dtype(np.float32))
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got.view(np.uint32), src.astype(np.float32).view(np.uint32))


def views(base):
    """Non-contiguous (N, C, H, W) views of a (2, 3, 9, 10) base, by name."""
    packed = np.zeros(base.shape, dtype=[("v", base.dtype), ("pad", "u1")])
    packed["v"] = base   # a field view: byte strides that are no multiple of the item size
    return {
        "transposed": base.transpose(0, 1, 3, 2),
        "channels_first": base.transpose(1, 0, 2, 3),
        "negative_strides": base[:, ::-1, :, ::-2],
        "sliced": base[1:, ::2, 1:-1, 2:9:3],
        "struct_field": packed["v"],
    }


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", ["transposed", "channels_first", "negative_strides", "sliced",
                                  "struct_field"])
def test_strided_input_matches_contiguous(op, view, cpu_backend, rng):
    base = random(rng, (2, 3, 9, 10), np.float32)
    x = views(base)[view]
    assert not x.flags.c_contiguous
    attrs = random_attrs(rng, op, x.shape[2:])
    before = x.copy()
    got = run(op, x, cpu_backend, **attrs)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(got, run(op, np.ascontiguousarray(x), cpu_backend, **attrs))


@pytest.mark.parametrize("op", OPS)
def test_strided_input_on_device(op, backend, rng):
    """Negative strides and a sliced view on every backend (cupy included where visible)."""
    base = to_backend(random(rng, (2, 4, 9, 10), np.float64), backend)
    attrs = random_attrs(rng, op, (3, 3))
    for x in (base[:, ::-1, ::2, ::-3], base[:, 1:3, 2:, 1:9]):
        before = to_numpy(x).copy()
        got = run(op, x, backend, **attrs)
        np.testing.assert_array_equal(to_numpy(x), before)
        assert_close(got, to_numpy(run(op, x.copy(), backend, **attrs)))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_input_not_modified(op, dtype, backend, rng):
    x = to_backend(random(rng, (2, 3, 7, 6), dtype), backend)
    before = to_numpy(x).copy()
    run(op, x, backend, kernel_shape=[3, 2], pads=[1, 0, 2, 1], strides=[2, 1])
    np.testing.assert_array_equal(to_numpy(x), before)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape, out_shape", [((0, 3, 7, 5), (0, 3, 3, 4)),
                                              ((2, 0, 7, 5), (2, 0, 3, 4))])
def test_empty_batch_or_channels(op, shape, out_shape, backend):
    x = to_backend(np.empty(shape, np.float16), backend)
    y = run(op, x, backend, kernel_shape=[3, 2], strides=[2, 1])
    assert y.shape == out_shape and y.dtype == np.float16 and type(y) is type(x)


@pytest.mark.parametrize("op", OPS)
def test_out_is_filled_and_returned(op, backend, rng):
    x = to_backend(random(rng, (2, 3, 8, 7), np.float32), backend)
    attrs = {"kernel_shape": [2, 3], "strides": [2, 2], "pads": [0, 1, 1, 0]}
    expected = to_numpy(run(op, x, backend, **attrs))
    out = to_backend(np.full(expected.shape, np.nan, np.float32), backend)
    assert run(op, x, backend, out=out, **attrs) is out
    np.testing.assert_array_equal(to_numpy(out), expected)


@pytest.mark.parametrize("op", OPS)
def test_bad_out_raises(op, backend, rng):
    x = to_backend(random(rng, (1, 2, 8), np.float32), backend)
    attrs = {"kernel_shape": [2], "strides": [2]}  # output (1, 2, 4)

    def empty(shape, dtype=np.float32):
        return to_backend(np.empty(shape, dtype), backend)

    cases = [
        (ValueError, r"out has shape \(1, 2, 3\), expected \(1, 2, 4\)", empty((1, 2, 3))),
        (TypeError, r"out has dtype float64, expected float32", empty((1, 2, 4), np.float64)),
        (ValueError, r"out must be C-contiguous", empty((1, 2, 8))[..., ::2]),
        (ValueError, r"out overlaps the input X", x.reshape(-1)[:8].reshape(1, 2, 4)),
        (TypeError, r"out must be a ", [[[0.0] * 4] * 2]),
    ]
    for exc, message, out in cases:
        with pytest.raises(exc, match=message):
            run(op, x, backend, out=out, **attrs)


def expressions(launches):
    """The name expressions of the kernels launched (the `launches` fixture's records)."""
    return [k.expression for k, _ in launches]


def test_small_input_uses_32_bit_indices(launches, rng):
    """The generic kernel (4 spatial axes: no fast path) with 32-bit indices."""
    run("AveragePool", random(rng, (2, 3, 5, 4, 3, 3), np.float16), "emulated",
        kernel_shape=[3, 2, 1, 3])
    assert expressions(launches) == ["pool<oc::half_t, float, int, 4>"]


@pytest.mark.parametrize("reverse", [False, True])
def test_offsets_beyond_int32_use_64_bit_indices(reverse):
    """2**31 + 5 float16 elements of X allocated on the executing stand-in and never touched
    but for the 6 the windows read (its pages stay virtual: a few MB resident, not 4 GB).
    Kernel 2 with dilation 2**31: window o reads positions 2o and 2o + 2**31."""
    n, d = 2**31 + 5, 2**31
    fake = fake_cupy.StandIn(executing=True)
    with fake.installed():
        x = fake.empty((1, 1, n), np.float16)
        values = {}
        for o in range(3):
            for pos, value in ((2 * o, 0.5 + o), (2 * o + d, -1.25 * (o + 1))):
                x.host[0, 0, pos if not reverse else n - 1 - pos] = values[pos] = value
        if reverse:
            x = x[..., ::-1]
        attrs = {"kernel_shape": [2], "dilations": [d], "strides": [2]}  # 3 outputs
        avg, lp = (to_numpy(f(x, **attrs)) for f in (average_pool,
                                                     lambda x, **a: lp_pool(x, p=1, **a)))
        expressions = [k.expression for k in fake.launches]
    pairs = np.array([[values[2 * o], values[2 * o + d]] for o in range(3)])
    assert_close(avg, pairs.mean(1)[None, None], np.float16)
    assert_close(lp, np.abs(pairs).sum(1)[None, None], np.float16)
    assert expressions == ["pool<oc::half_t, float, long long, 1>"] * 2


def test_kernel_one_with_huge_dilation(cpu_backend, rng):
    """A single tap makes the dilation irrelevant; the tap-range arithmetic still adds it."""
    x = random(rng, (1, 2, 7), np.float32)
    attrs = {"kernel_shape": [1], "dilations": [2**31 - 1]}
    assert_close(run("AveragePool", x, cpu_backend, **attrs), x)
    assert_close(run("LpPool", x, cpu_backend, p=1, **attrs), np.abs(x))


def test_huge_output_grid_stride_uses_64_bit_indices():
    """A grid-stride loop index passes the output size by up to one grid of threads
    (launcher.MAX_BLOCKS * launcher.BLOCK): near 2**31 outputs, that no longer fits an int even
    though every offset does. Four spatial axes: the generic kernel. Virtual memory only: the
    CuPy path on a stand-in that records its launches and runs none."""
    fake = fake_cupy.StandIn(executing=False)
    with fake.installed():
        for total, bits in ((2**31 - 1 - launcher.MAX_BLOCKS * launcher.BLOCK, "int"),
                            (2**31 - launcher.MAX_BLOCKS * launcher.BLOCK, "long long")):
            shape = (total, 1, 1, 1, 1, 1)
            y = onnx_cupy.average_pool(fake.empty(shape, np.float16), kernel_shape=[1] * 4)
            assert y.shape == shape
            assert fake.launches[-1].expression == f"pool<oc::half_t, float, {bits}, 4>"


# windows whose last axis runs as one flat sequence on EVEN sizes (an input row is the
# stride times an output row), with borders to redo, fused pairs or neither
FLAT_WINDOWS = {"random": None, "k3s2p1": (3, 2, 1), "k2s2": (2, 2, 0), "k3s1p1": (3, 1, 1),
                "k4s2p2": (4, 2, 2)}
EVEN = {1: (36,), 2: (12, 10), 3: (6, 4, 8)}


VALUES = ("plain", "specials", "signed zeros")
POOLS = (*OPS, "MaxPool")


# (op, dtype, values): every pool on floats; MaxPool on integers too, of plain values
WHOLE_ROW_CASES = [(op, dtype, values) for op in POOLS for dtype in FLOAT_DTYPES
                   for values in VALUES] + [("MaxPool", np.dtype(t), "plain")
                                            for t in (np.int8, np.uint8)]


@pytest.mark.parametrize(("op", "dtype", "values"), WHOLE_ROW_CASES, ids=str)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("window", FLAT_WINDOWS)
def test_numpy_whole_row_passes_keep_the_row_passes_bits(op, nd, dtype, values, window,
                                                         pool_gather, pool_whole_rows):
    """Passes over whole rows (adjacent pairs of the whole axis, the last axis as one flat
    sequence with its borders redone, a strided maximum run densely) give the bits of the
    passes row by row: values, and MaxPool's Indices (asked for where X holds specials or
    signed zeros; plain values take the maxima as the passes leave them). A NaN's sign aside:
    where a sum meets two NaNs (one made by inf - inf), which one it keeps depends on the
    operand order of NumPy's loop for the layout."""
    integer = np.dtype(dtype).kind in "iu"
    rng = np.random.default_rng([nd, WHOLE_ROW_CASES.index((op, dtype, values)),
                                 list(FLAT_WINDOWS).index(window)])
    spatial = SPATIAL[nd] if FLAT_WINDOWS[window] is None else EVEN[nd]
    if integer:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (2, 3, *spatial), endpoint=True).astype(dtype)
    else:
        x = random(rng, (2, 3, *spatial), dtype)
    if values == "specials":
        x = with_specials(rng, x)
    elif values == "signed zeros":
        x = np.where(x < 0, -0.0, 0.0).astype(dtype)
    attrs = random_attrs(rng, "AveragePool" if op == "MaxPool" else op, spatial)
    if FLAT_WINDOWS[window] is not None:
        k, s, p = FLAT_WINDOWS[window]
        attrs.update(kernel_shape=[k] * nd, strides=[s] * nd, pads=[p] * (2 * nd),
                     dilations=[1] * nd, ceil_mode=0)
    if op == "MaxPool":
        del attrs["count_include_pad"]
        attrs["storage_order"] = int(rng.integers(2)) if nd == 2 else 0

    def pooled():
        calls.clear()
        if op == "MaxPool" and values == "plain":
            return (onnx_cupy.max_pool(x, **attrs),)
        if op == "MaxPool":
            return onnx_cupy.max_pool(x, **attrs, return_indices=True)
        return (OPS[op](x, **attrs),)

    pool_gather(0)
    pool_whole_rows(0)
    whole = pooled()
    pool_whole_rows(1 << 62)
    rows = pooled()
    calls.clear()
    assert whole[0].size > 0
    for a, b in zip(whole, rows):
        nan = np.isnan(a.astype(np.float64))   # bfloat16 included; Indices have none
        np.testing.assert_array_equal(nan, np.isnan(b.astype(np.float64)))
        np.testing.assert_array_equal(a[~nan].view(np.uint8), b[~nan].view(np.uint8))


@pytest.mark.parametrize("op", POOLS)
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [1, 2], "pads": [1, 0, 1, 0]},
    {"kernel_shape": [2, 3], "pads": [2, 1, 2, 1], "strides": [1, 2]},
], ids=["k1x2-p1", "k2x3-p2"])
def test_numpy_empty_axis_padded_to_outputs(op, attrs, pool_gather):
    """An input axis of length 0 that the padding gives outputs: every window empty (MaxPool
    -inf, AveragePool NaN or 0, LpPool 0), the large calls' passes as the small calls' gather."""
    x = np.zeros((4, 8, 0, 300), np.float32)

    def pooled(entries):
        pool_gather(entries)
        fn = onnx_cupy.max_pool if op == "MaxPool" else OPS[op]
        return fn(x, **attrs)

    passes, gathered = pooled(0), pooled(1 << 40)
    calls.clear()
    assert passes.shape[2] > 0 and passes.size > 0
    np.testing.assert_array_equal(passes.view(np.uint8), gathered.view(np.uint8))
    expected = {"MaxPool": -np.inf, "AveragePool": np.nan, "LpPool": 0.0}[op]
    np.testing.assert_array_equal(passes, np.full(passes.shape, expected, np.float32))

