"""The pooling fast path (`pool_fast` in kernels/pool.cu, chosen in onnx_cupy.pool.kernel): which
plans take it, and that it gives exactly the generic kernel's values (the same taps summed in the
same order, the same divisor), both within tolerance of the NumPy fallback, on the emulator; with
32-bit offsets and, for inputs whose offsets pass 2**31 - 1, with 64-bit ones."""
from __future__ import annotations

import mmap
from collections import Counter

import numpy as np
import pytest
from helpers.util import FLOAT_DTYPES, assert_close, random, replan

import onnx_cupy
from onnx_cupy import average_pool, lp_pool
from onnx_cupy.core import dtypes, launcher, loader
from onnx_cupy.pool import kernel as kernel_pool
from onnx_cupy.pool import plan as pool_plans

OPS = {"AveragePool": average_pool, "LpPool": lp_pool}
SPATIAL = {1: (29,), 2: (11, 13), 3: (5, 7, 9)}
MODES = [("AveragePool", {"count_include_pad": 0}, 0), ("AveragePool", {"count_include_pad": 1}, 0),
         ("LpPool", {"p": 1}, 1), ("LpPool", {"p": 2}, 2)]  # op, attributes, the kernel's Mode


def run(op, x, backend, **attrs):
    with onnx_cupy.backend(backend):
        return OPS[op](x, **attrs)


def run_generic(monkeypatch, op, x, **attrs):
    """`op` on the emulator with the fast path switched off: the generic kernel."""
    with monkeypatch.context() as m:
        m.setattr(kernel_pool, "fast_kernel_args", lambda *args: None)
        replan()
        try:
            return run(op, x, "emulated", **attrs)
        finally:
            replan()


def assert_same_bits(got, expected):
    assert got.dtype == expected.dtype and got.shape == expected.shape
    bits = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got.view(bits), expected.view(bits))


FAST_MODES = {0: "average", 1: "l1", 2: "l2", 3: "max"}  # pool_fast's mode by p; 3: MaxPool
MAX_INTS = ("int8", "uint8")  # MaxPool's integer dtypes, in float


def fast_fields(dtype, mode, rank, window=None, bits=32):
    """The fields of the pool_fast record these arguments select; `window` (taps, step) for a
    fixed last-axis window."""
    return ("pool_fast", np.dtype(dtype).name, FAST_MODES[mode], rank, window, bits)


def generic_fields(dtype, rank, bits=32):
    return ("pool", np.dtype(dtype).name, None, rank, None, bits)


def fields(k):
    """(template, storage dtype, fast mode, rank, fixed window, offset bits) of a pool record."""
    fast = k.template == "pool_fast"
    return (k.template, k["storage"], k["mode"] if fast else None, k["rank"],
            k["window"] if fast else None, k.index_bits)


COMPILED = {(2, 2), (3, 1), (3, 2)}  # last-axis (kernel size, stride) compiled in, 2-D only


def compiled_window(attrs, nd=2):
    """The last-axis window compiled into the fast kernel for these attributes of a contiguous
    input: for 2-D pooling, one of COMPILED with dilation 1; else None (the runtime window)."""
    window = (attrs["kernel_shape"][-1], attrs.get("strides", [1] * nd)[-1])
    dilation = attrs.get("dilations", [1] * nd)[-1]
    return window if nd == 2 and window in COMPILED and dilation == 1 else None


def random_attrs(rng, op, spatial, reached):
    """Random explicit-padding attributes (pads < kernel) for these sizes; counts in `reached`
    the features the configuration exercises."""
    nd = len(spatial)
    kernel = [int(rng.integers(1, 5)) for _ in spatial]
    dil = [int(rng.integers(1, 3)) for _ in spatial]
    kernel = [k if (k - 1) * d < n else 1 for k, d, n in zip(kernel, dil, spatial)]
    pads = [int(rng.integers(0, k)) for k in kernel * 2]
    attrs = {"kernel_shape": kernel, "strides": rng.integers(1, 4, nd).tolist(),
             "dilations": dil, "pads": pads, "ceil_mode": int(rng.integers(2))}
    if op == "AveragePool":
        attrs["count_include_pad"] = int(rng.integers(2))
        reached["count_include_pad"] += attrs["count_include_pad"]
    else:
        attrs["p"] = int(rng.integers(1, 4))
        reached[f"p={attrs['p']}"] += 1
    reached["ceil_mode"] += attrs["ceil_mode"]
    reached["dilation>1"] += max(dil) > 1
    reached["pads"] += max(pads) > 0
    reached["stride>1"] += max(attrs["strides"]) > 1
    return attrs


def test_fast_paths_registered():
    fast = [k for k in loader.instantiations("pool") if k.fast]
    expected = {fast_fields(t, m, r, w, b)
                for t in (*dtypes.FLOAT_TYPES, *MAX_INTS)
                for m in (range(4) if t in dtypes.FLOAT_TYPES else (3,))
                for r in (1, 2, 3) for w in [None, *(COMPILED if r == 2 else ())]
                for b in dtypes.INDEX_TYPES}
    assert sorted(map(fields, fast), key=str) == sorted(expected, key=str)
    assert {k.outputs for k in fast} == {kernel_pool.OUTPUTS}
    # MaxPool's fast kernels write no Indices: its gradient never launches them; LpPool's
    # gradient launches LpPool's for the Y it reads
    assert {k.ops for k in fast if k["mode"] == "max"} == {("MaxPool",)}
    assert {k.ops for k in fast if k["mode"] in ("l1", "l2")} == {("LpPool", "LpPool gradient")}
    assert kernel_pool.FAST["float16", 64, kernel_pool.FastMode.max, 2, (3, 2)].expression == (
        "pool_fast<oc::half_t, float, long long, oc::PoolMode::max, 2, oc::FixedWindow<3, 2>>")
    assert kernel_pool.GENERIC["uint8", 32, 5].expression == "pool<unsigned char, float, int, 5>"


@pytest.mark.parametrize("nd", SPATIAL)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_fast_equals_generic_equals_numpy(nd, dtype, monkeypatch, launches, rng):
    reached = Counter()
    for i in range(12):
        op = "AveragePool" if i % 2 else "LpPool"
        x = random(rng, (2, 3, *SPATIAL[nd]), dtype)
        attrs = random_attrs(rng, op, SPATIAL[nd], reached)
        fast = run(op, x, "emulated", **attrs)
        kernel, shape = launches[-1]
        generic = run_generic(monkeypatch, op, x, **attrs)
        if op == "LpPool" and attrs["p"] == 3:
            assert kernel.template == "pool" and shape is None
        else:
            mode = 0 if op == "AveragePool" else attrs["p"]
            window = compiled_window(attrs, nd)
            assert fields(kernel) == fast_fields(dtype, mode, nd, window) and shape is not None
            reached["fast"] += 1
            reached["row not a multiple of 4"] += fast.shape[-1] % kernel_pool.OUTPUTS != 0
        assert_same_bits(fast, generic)
        assert_close(fast, run(op, x, "numpy", **attrs).astype(np.float64), dtype)
    assert reached["fast"] >= 6 and reached["row not a multiple of 4"] >= 1
    assert all(reached[k] >= 1 for k in ("ceil_mode", "dilation>1", "pads", "stride>1"))


@pytest.mark.parametrize("op, extra, mode", MODES)
@pytest.mark.parametrize("nd", SPATIAL)
def test_edges_of_every_mode(op, extra, mode, nd, monkeypatch, launches, rng):
    """Windows clipped at both ends of every axis, ceil_mode overhang, dilation and stride,
    and rows of 1 to 6 outputs (outputs per thread 4: partial groups and groups of one)."""
    for length in (1, 2, 3, 5, 6):
        spatial = (*SPATIAL[nd][:-1], 3 * length)
        x = random(rng, (1, 2, *spatial), np.float32)
        attrs = {"kernel_shape": [3] * nd, "strides": [3] * nd, "dilations": [1] * (nd - 1) + [2],
                 "pads": [2] * nd + [1] * nd, "ceil_mode": 1, **extra}
        fast = run(op, x, "emulated", **attrs)
        assert fields(launches[-1][0]) == fast_fields(np.float32, mode, nd)
        assert fast.shape[-1] == length + 1
        assert_same_bits(fast, run_generic(monkeypatch, op, x, **attrs))
        assert_close(fast, run(op, x, "numpy", **attrs).astype(np.float64), np.float32)


@pytest.mark.parametrize("window", sorted(COMPILED), ids=str)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_compiled_windows(window, dtype, monkeypatch, launches, rng):
    """Each compiled last-axis window in every mode: rows from shorter than the columns a thread
    spans (clipped at both ends) to several groups, with pads, ceil_mode and odd lengths; the
    first axis's window random (dilation too). Identical bits to the generic kernel."""
    assert set(kernel_pool.WINDOWS) == COMPILED
    k, s = window
    reached = Counter()
    for op, extra, mode in MODES:
        for length in (3, 5, 13, 22):
            x = random(rng, (2, 3, int(rng.integers(5, 9)), length), dtype)
            pads = [int(rng.integers(0, 3)), int(rng.integers(0, k))]
            attrs = {"kernel_shape": [int(rng.integers(1, 4)), k],
                     "strides": [int(rng.integers(1, 3)), s],
                     "dilations": [int(rng.integers(1, 3)), 1], "pads": pads + pads[::-1],
                     "ceil_mode": int(rng.integers(2)), **extra}
            fast = run(op, x, "emulated", **attrs)
            assert fields(launches[-1][0]) == fast_fields(dtype, mode, 2, window)
            reached["clipped"] += length < (kernel_pool.OUTPUTS - 1) * s + k or pads[-1] > 0
            reached["partial group"] += fast.shape[-1] % kernel_pool.OUTPUTS != 0
            reached["several groups"] += fast.shape[-1] > kernel_pool.OUTPUTS
            assert_same_bits(fast, run_generic(monkeypatch, op, x, **attrs))
            assert_close(fast, run(op, x, "numpy", **attrs).astype(np.float64), dtype)
    assert min(reached.values()) >= 4 and len(reached) == 3


@pytest.mark.parametrize("op, extra, mode", MODES)
def test_compiled_window_signed_zeros(op, extra, mode, monkeypatch, launches, rng):
    """Signed zeros and clipped columns: a clipped tap adds -0.0, which leaves every sum as the
    generic kernel's (a window of -0.0 taps sums to +0.0 in both)."""
    x = random(rng, (2, 2, 6, 11), np.float32)
    x[:, :, ::2] = -0.0
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 2, 1, 2], **extra}
    fast = run(op, x, "emulated", **attrs)
    assert fields(launches[-1][0]) == fast_fields(np.float32, mode, 2, (3, 2))
    assert_same_bits(fast, run_generic(monkeypatch, op, x, **attrs))


def test_compiled_window_needs_2d_unit_stride_and_dilation(launches, rng):
    """The compiled windows serve 2-D pooling over unit-stride columns with dilation 1; other
    last axes and ranks take the runtime window."""
    x = random(rng, (2, 3, 7, 12), np.float32)
    for view, dilation, window in ((x, 1, (3, 2)), (x, 2, None), (x[..., ::-1], 1, None),
                                   (x[..., ::2], 1, None), (x.transpose(1, 0, 2, 3), 1, (3, 2))):
        run("AveragePool", view, "emulated", kernel_shape=[3, 3], strides=[1, 2],
            dilations=[1, dilation])
        assert fields(launches[-1][0]) == fast_fields(np.float32, 0, 2, window)
    for nd in (1, 3):
        run("AveragePool", random(rng, (2, 3, *SPATIAL[nd]), np.float32), "emulated",
            kernel_shape=[3] * nd, strides=[2] * nd)
        assert fields(launches[-1][0]) == fast_fields(np.float32, 0, nd)


@pytest.mark.parametrize("op", OPS)
def test_windows_entirely_in_padding(op, monkeypatch, rng):
    """Pads as large as the kernel: some windows hold no input position at all (AveragePool
    without count_include_pad divides 0 by 0, as the generic kernel and the fallback do)."""
    x = random(rng, (2, 3, 7, 6), np.float16)
    attrs = {"kernel_shape": [2, 3], "pads": [2, 3, 3, 4], "strides": [1, 2]}
    with np.errstate(invalid="ignore"):
        fast = run(op, x, "emulated", **attrs)
        expected = run(op, x, "numpy", **attrs)
    assert_same_bits(fast, run_generic(monkeypatch, op, x, **attrs))
    assert_close(fast, expected.astype(np.float64), np.float16)
    assert np.isnan(fast).any() == (op == "AveragePool")


def views(base):
    return {"transposed": base.transpose(0, 1, 3, 2), "channels_first": base.transpose(1, 0, 2, 3),
            "negative_strides": base[:, ::-1, ::-1, ::-2], "sliced": base[1:, ::2, 1:-1, 2:13:3],
            "rows_sliced": base[1:, ::-1, 1:-1:2, 1:],  # unit stride along the last axis only
            "broadcast": np.broadcast_to(base[..., :1], base.shape)}  # last-axis stride 0


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", ["transposed", "channels_first", "negative_strides", "sliced",
                                  "rows_sliced", "broadcast"])
@pytest.mark.parametrize("kernel, strides", [([3, 2], [2, 1]), ([2, 3], [1, 2])])
def test_non_contiguous_inputs(op, view, kernel, strides, monkeypatch, launches, rng):
    """Any strides; a compiled last-axis window (3 taps at stride 2 here) where the last axis has
    unit stride, the runtime one elsewhere."""
    x = views(random(rng, (3, 4, 10, 14), np.float32))[view]
    assert not x.flags.c_contiguous
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": [1, 1, 2, 0]}
    if op == "LpPool":
        attrs["p"] = 2
    fast = run(op, x, "emulated", **attrs)
    unit = x.strides[-1] == x.itemsize
    window = compiled_window(attrs) if unit else None
    assert fields(launches[-1][0]) == fast_fields(np.float32, 2 if op == "LpPool" else 0, 2, window)
    assert_same_bits(fast, run_generic(monkeypatch, op, x, **attrs))
    assert_same_bits(fast, run(op, np.ascontiguousarray(x), "emulated", **attrs))
    assert_close(fast, run(op, x, "numpy", **attrs).astype(np.float64), np.float32)


@pytest.mark.parametrize("limits", [{"MAX_GRID_YZ": 2}, {"THREADS": 64}])
def test_planes_loop_past_the_grid(limits, monkeypatch, launch_limits, launches, rng):
    """More N*C planes than grid y covers: each thread loops over planes (forced here by a
    lower grid-y limit or thread target; 65535 and 2**19 in production). N and C swapped in
    memory: a plane's offset needs both n and c."""
    if "THREADS" in limits:   # the pool kernel's own thread target
        monkeypatch.setattr(kernel_pool, "THREADS", limits["THREADS"])
    launch_limits(**{k: v for k, v in limits.items() if k != "THREADS"})   # and replans
    try:
        x = random(rng, (151, 7, 3, 9), np.float32).transpose(1, 0, 2, 3)
        attrs = {"kernel_shape": [2, 3], "strides": [1, 2], "pads": [1, 1, 0, 1]}
        fast = run("AveragePool", x, "emulated", **attrs)
        (grid, block) = launches[-1][1]
        assert grid[1] * block[1] < 7 * 151
    finally:
        replan(kernel_pool.fast_kernel_args)
    assert_same_bits(fast, run_generic(monkeypatch, "AveragePool", x, **attrs))
    assert_close(fast, run("AveragePool", x, "numpy", **attrs).astype(np.float64), np.float32)


def test_launch_shape_for_small_and_large_planes():
    """Block x covers a plane's threads (rounded up to a power of two, at most 256), block y the
    planes; 256 threads a block either way."""
    for shape, kernel, block in (((2, 3, 9), [3], (2, 128, 1)),      # 7 outputs: 2 threads
                                 ((1, 2, 50, 50), [1, 1], (256, 1, 1))):  # 50 rows x 13 groups
        pl = pool_plans.make("AveragePool", shape, np.float32, 22, kernel_shape=kernel)
        strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        spec = kernel_pool.fast_kernel_args(pl, np.dtype(np.float32), strides)
        launched, (grid, blk) = spec.kernel, spec.shape
        assert fields(launched) == fast_fields(
            np.float32, 0, len(kernel), compiled_window({"kernel_shape": kernel}, len(kernel)))
        assert blk == block
        work = int(np.prod(pl.out_shape[2:-1])) * -(-pl.out_shape[-1] // kernel_pool.OUTPUTS)
        assert grid[0] * blk[0] >= work > (grid[0] - 1) * blk[0]
        assert grid[1] * blk[1] >= shape[0] * shape[1]


def test_generic_path_at_the_boundaries(launches, rng):
    """Four spatial axes and LpPool with p = 3 take the generic kernel; offsets past 2**31 - 1
    the fast kernel's 64-bit instantiation, window coordinates past it the generic kernel."""
    x = random(rng, (1, 2, 4, 3, 5, 3), np.float64)
    run("AveragePool", x, "emulated", kernel_shape=[2, 2, 2, 2])
    run("LpPool", x[..., 0], "emulated", kernel_shape=[2, 2, 2], p=3)
    assert [fields(k) for k, _ in launches] == [generic_fields(np.float64, 4),
                                                generic_fields(np.float64, 3)]
    assert all(shape is None for _, shape in launches)
    # reach (largest offset plus a dilation step) exactly at and just past 2**31 - 1
    pl = pool_plans.make("AveragePool", (2, 1, 5), np.float16, 22, kernel_shape=[2])
    limit = dtypes.INT32_LIMIT - 5
    assert kernel_pool.reach(pl, (limit, 5, 1)) == dtypes.INT32_LIMIT
    for strides, bits in (((limit, 5, 1), 32), ((limit + 1, 5, 1), 64)):
        launched = kernel_pool.fast_kernel_args(pl, np.dtype(np.float16), strides).kernel
        assert fields(launched) == fast_fields(np.float16, 0, 1, bits=bits)
    # a window coordinate (the tap-range division's numerator) just past 2**31 - 1
    widest = (dtypes.INT32_LIMIT - 10) // 3
    for dilation, fast in ((widest, True), (widest + 1, False)):
        pl = pool_plans.make("AveragePool", (1, 1, 5), np.float16, 22, kernel_shape=[2],
                                dilations=[dilation], pads=[0, dilation])
        assert pl.out_shape == (1, 1, 5)
        assert (kernel_pool.coordinate_reach(pl) <= dtypes.INT32_LIMIT) == fast
        assert (kernel_pool.fast_kernel_args(pl, np.dtype(np.float16), (5, 5, 1)) is not None) \
            == fast
        assert fields(kernel_pool.kernel_args(pl, np.dtype(np.float16), (5, 5, 1))[0]) == \
            generic_fields(np.float16, 1, 32 if fast else 64)


def test_divider_is_exact():
    """oc::fast_div's arithmetic, in 32-bit unsigned words: (mulhi(n, mul) + n) >> shift
    equals n // d for 0 <= n < 2**31 (no carry out of 32 bits)."""
    rng = np.random.default_rng(5)
    divisors = [1, 2, 3, 5, 7, 255, 256, 257, 65535, 65536, 65537, 2**30 - 1, 2**30, 2**30 + 1,
                2**31 - 2, 2**31 - 1, *rng.integers(1, 2**31, 200).tolist()]
    for d in divisors:
        mul, shift = launcher.divider(d)
        assert 0 < mul < 2**32 and 0 <= shift <= 31
        for n in [0, 1, d - 1, d, d + 1, 2 * d - 1, 2**31 - 1,
                  *rng.integers(0, 2**31, 50).tolist()]:
            if 0 <= n < 2**31:
                t = (n * mul) >> 32
                assert t + n < 2**32 and (t + n) >> shift == n // d, (n, d)
    for bad in (0, 2**31):
        with pytest.raises(ValueError, match=f"divisor {bad}"):
            launcher.divider(bad)


WIDE = 2**31  # elements: an axis this long in memory puts offsets past 2**31 - 1
NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)  # Linux's value (named in Python >= 3.13)
WIDE_SPATIAL = {1: (29,), 2: (7, 13), 3: (4, 5, 9), 4: (3, 4, 3, 5), 5: (3, 2, 3, 4, 5)}


def wide_input(rng, shape, dtype, axis):
    """Random values of `shape` in a view of virtual memory (only the pages the values touch are
    backed) in which `axis` is outermost, its last index WIDE elements or more in: offsets past
    2**31 - 1. The other axes lie packed in C order within one step of `axis`."""
    strides, step = [0] * len(shape), 1
    for a in reversed([a for a in range(len(shape)) if a != axis]):
        strides[a], step = step, step * shape[a]
    strides[axis] = max(step, -(-WIDE // (shape[axis] - 1)))
    itemsize = np.dtype(dtype).itemsize
    size = (strides[axis] * (shape[axis] - 1) + step) * itemsize
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | NORESERVE)
    x = np.lib.stride_tricks.as_strided(np.frombuffer(memory, np.dtype(dtype)), shape,
                                        [s * itemsize for s in strides])
    x[...] = random(rng, shape, dtype)
    return x


@pytest.mark.parametrize("layout", ["batch", "rows", "reversed"])
@pytest.mark.parametrize("nd", WIDE_SPATIAL)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_offsets_past_int32(dtype, nd, layout, monkeypatch, launches, rng):
    """Inputs whose offsets pass 2**31 - 1, between batch items (N outermost; `reversed`: N, C
    and the last axis at negative strides) or along the first spatial axis (outermost): the fast
    kernel's 64-bit instantiation for 1-3 spatial axes (a fixed window where the last axis
    allows), the generic kernel's 64-bit one for 4-5, in every mode; the fast kernel gives the
    generic kernel's bits, both within tolerance of the NumPy path."""
    spatial = WIDE_SPATIAL[nd]
    x = wide_input(rng, (2, 3, *spatial), dtype, 2 if layout == "rows" else 0)
    if layout == "reversed":
        x = x[::-1, ::-1, ..., ::-1]
    unit = x.strides[-1] == x.itemsize
    reached = Counter()
    for i, (op, extra, mode) in enumerate(MODES):
        attrs = {**random_attrs(rng, op, spatial, reached), **extra}
        if nd == 2 and i < len(COMPILED):  # a fixed last-axis window, where the stride allows
            (attrs["kernel_shape"][-1], attrs["strides"][-1]), attrs["dilations"][-1] = \
                sorted(COMPILED)[i], 1
            attrs["pads"][nd - 1::nd] = [min(p, attrs["kernel_shape"][-1] - 1)
                                         for p in attrs["pads"][nd - 1::nd]]
        got = run(op, x, "emulated", **attrs)
        if nd <= 3:
            window = compiled_window(attrs, nd) if unit else None
            assert fields(launches[-1][0]) == fast_fields(dtype, mode, nd, window, bits=64)
            reached["fixed window"] += window is not None
            assert_same_bits(got, run_generic(monkeypatch, op, x, **attrs))
        assert fields(launches[-1][0]) == generic_fields(dtype, nd, 64)
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = run(op, x, "numpy", **attrs)
        assert_close(got, expected.astype(np.float64), dtype)
    assert reached["fixed window"] >= (3 if nd == 2 and unit else 0)


def test_outputs_past_int32_take_the_wide_fast_kernel():
    """More than 2**31 - 1 outputs, each plane small: the fast kernel's 64-bit instantiation."""
    for shape, bits in (((2**13, 2**9, 2**8), 32), ((2**15, 2**9, 2**8), 64)):
        pl = pool_plans.make("AveragePool", shape, np.float16, 22, kernel_shape=[1])
        strides = (shape[1] * shape[2], shape[2], 1)
        launched = kernel_pool.fast_kernel_args(pl, np.dtype(np.float16), strides).kernel
        assert fields(launched) == fast_fields(np.float16, 0, 1, bits=bits)
