"""Long sums: global pools over planes past 2**24 and 2**31 elements and AveragePool, LpPool and
adaptive average windows past 2**24 terms give the exact value of a constant input on every path;
the global pools' sums follow pool_global's order on the NumPy path too (an explicit-loop oracle
of that order, and numpy = emulated bit for bit on random planes of every float dtype); the
NumPy behaviour the NumPy path relies on; double results rounded once to 16-bit types."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.util import BF16, FLOAT_DTYPES, random, to_numpy

import onnx_cupy
from onnx_cupy.core import execution, numerics
from onnx_cupy.pool import kernel as pool_kernel
from onnx_cupy.pool import numpy_global, plan
from onnx_cupy.pool.api import adaptive_pool

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def constant(backend: str, value: np.generic, shape: tuple[int, ...]):
    """A broadcast view of `value` (no copy: stride 0 on every axis) on the backend's device."""
    if backend == "cupy":
        xp = execution.cupy_module()
        return xp.broadcast_to(xp.asarray(value), shape)
    return np.broadcast_to(value, shape)


def pooled(backend: str, fn, x, **kw) -> np.ndarray:
    with onnx_cupy.backend(backend):
        return to_numpy(fn(x, **kw))


# ------------------------------------------------------------------ planes past 2**24 elements

def test_broadcast_plane_past_2_31_elements_averages_exactly(backend):
    """2**31 + 7 elements of 1.5 (a float lane of 2**23 of them drifts 11 % high): 1.5."""
    x = constant(backend, np.float32(1.5), (1, 1, 2**31 + 7))
    y = pooled(backend, onnx_cupy.global_average_pool, x)
    assert y.shape == (1, 1, 1) and y.dtype == np.float32
    assert y.tobytes() == np.full((1, 1, 1), 1.5, np.float32).tobytes()


def test_broadcast_plane_past_2_24_elements_sums_exactly(backend):
    """2**25 + 3 elements of 1 + 2**-20 (float sums of them round): their mean exactly, and
    (LpPool, p = 1) their exact sum rounded once."""
    c, n = np.float32(1 + 2**-20), 2**25 + 3
    x = constant(backend, c, (1, 1, n))
    mean = pooled(backend, onnx_cupy.global_average_pool, x)
    total = pooled(backend, onnx_cupy.global_lp_pool, x, p=1)
    assert mean.ravel().tolist() == [c]
    assert total.ravel().tolist() == [np.float32(n * float(c))]   # n * c: exact in float64


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_long_windows_sum_in_double(backend, dtype, launches):
    """AveragePool, LpPool (p = 1) and adaptive average windows of 4097 x 4097 > 2**24 terms
    of a constant: its value, and the exact sum rounded once, on every path; the kernels that
    run are the double-summing ones. (The constant has float32's 24 bits at most: float64 sums
    of 4097 x 4097 of them are exact.)"""
    c = np.dtype(dtype).type(np.float32(1.1))
    x = constant(backend, c, (1, 1, 4097, 4097))
    terms = 4097 * 4097
    assert terms > plan.WIDE_SUMS
    mean = pooled(backend, onnx_cupy.average_pool, x, kernel_shape=[4097, 4097])
    total = pooled(backend, onnx_cupy.lp_pool, x, kernel_shape=[4097, 4097], p=1)
    with onnx_cupy.backend(backend):
        adaptive = to_numpy(adaptive_pool("AdaptiveAveragePool", x, (1, 1)))
    assert mean.dtype == total.dtype == adaptive.dtype == dtype
    assert mean.tobytes() == adaptive.tobytes() == np.full((1, 1, 1, 1), c).tobytes()
    want = numerics.narrow(np.array([terms * float(c)]), dtype)   # exact in float64
    assert total.tobytes() == want.reshape(1, 1, 1, 1).tobytes()
    if backend != "numpy":
        wide = {k.template: k["accumulate"] for k, _ in launches}
        assert wide == {"pool": "double", "pool_adaptive": "double"}


def test_wide_plans_and_their_kernels():
    """More than WIDE_SUMS terms (or counted positions) take float64 sums and the generic
    kernel's double instantiation, never the fast kernel; WIDE_SUMS terms or fewer, the
    storage's accumulation type."""
    f32 = np.dtype(np.float32)
    for kernel, wide in [([4096, 4096], False), ([4097, 4096], True), ([2**24 + 1], True)]:
        shape = (1, 2, *(k + 2 for k in kernel))
        pl = plan.make("AveragePool", shape, f32, 22, kernel_shape=kernel)
        assert plan.wide(pl) is wide
        assert plan.accumulate_dtype(pl, f32) == (np.float64 if wide else np.float32)
        k = pool_kernel.kernel_args(pl, f32, (1, 1, *(1,) * len(kernel))).kernel
        assert (k["accumulate"], pool_kernel.fast_kernel_args(pl, f32, (0,) * len(shape))
                is None) == (("double", True) if wide else ("float", False))
    pl = plan.make("AveragePool", (1, 1, 5000, 5000), f32, 22, kernel_shape=[4097, 4097],
                   pads=[4000, 0, 0, 0], count_include_pad=1)
    assert plan.wide(pl)   # 4097 x 4097 counted positions, fewer in X
    assert not plan.wide(plan.make("MaxPool", (1, 1, 5000, 5000), f32, 22,
                                   kernel_shape=[4097, 4097]))
    adaptive = plan.make_adaptive("AdaptiveAveragePool", (1, 1, 4097, 4097), f32, (1, 2))
    assert plan.sum_terms(adaptive) == 4097 * 2049 and not plan.wide(adaptive)
    assert plan.wide(plan.make_adaptive("AdaptiveAveragePool", (1, 1, 4097, 4097), f32, (1, 1)))


# ------------------------------------------------------------- pool_global's order, every path

def kernel_order(terms: np.ndarray, acc: type) -> float:
    """One plane's sum as pool_global adds it (kernels/pool.cu), by explicit loops: lane t of
    256 takes the terms t, t + 256, ... in segments of 16 summed in `acc` from +0, each added
    to the lane's float64 in order; each warp's lanes by xor shuffles of distance 1, 2, ... 16;
    the 8 warps' results in order."""
    lanes = []
    for t in range(256):
        lane = 0.0
        mine = terms[t::256]
        for s in range(0, len(mine), 16):
            segment = acc(0)
            for v in mine[s:s + 16]:
                segment = acc(segment + acc(v))
            lane = lane + float(segment)
        lanes.append(lane)
    for d in (1, 2, 4, 8, 16):
        lanes = [lanes[i] + lanes[i ^ d] for i in range(256)]
    total = lanes[0]
    for w in range(1, 8):
        total = total + lanes[32 * w]
    return total


@pytest.mark.parametrize("length", [1, 5, 32, 49, 256, 300, 4096, 4097, 8200, 12545])
def test_numpy_path_follows_the_kernel_order(length, rng):
    """The NumPy path's GlobalAveragePool and GlobalLpPool (p = 2) of planes of mixed
    magnitudes and signed zeros equal the explicit-loop oracle of pool_global's order, bit for
    bit (float32: segments in float32; float64)."""
    for dtype, acc in ((np.float32, np.float32), (np.float64, float)):
        x = (rng.standard_normal((2, 1, length)) * 2.0 ** rng.integers(-20, 20, length))
        x = x.astype(dtype)
        x[0, 0, ::7] = -0.0
        mean = pooled("numpy", onnx_cupy.global_average_pool, x).ravel()
        norm = pooled("numpy", onnx_cupy.global_lp_pool, x, p=2).ravel()
        for plane in range(2):
            v = x[plane, 0]
            want_mean = numerics.narrow(np.array([kernel_order(v, acc) / length]), dtype)
            squares = np.square(v)   # the kernel's term, in the accumulation type
            want_norm = numerics.narrow(np.sqrt([kernel_order(squares, acc)]), dtype)
            assert mean[plane].tobytes() == want_mean.tobytes(), (dtype, plane)
            assert norm[plane].tobytes() == want_norm.tobytes(), (dtype, plane)


def configurations():
    """Random planes: every float dtype, odd lengths (one lane each, a lane-row and one more,
    a segment of every lane and one more, many segments) as 1-3 spatial axes, a few batch and
    channel counts; GlobalAveragePool and GlobalLpPool with p = 1, 2 (equal bits) and 3 (pow:
    a few ulps)."""
    spatial = {1: (1,), 7: (7,), 49: (7, 7), 255: (255,), 257: (257,), 4097: (17, 241),
               65537: (65537,), 12545: (5, 13, 193)}
    for dtype in FLOAT_DTYPES:
        for length, axes in spatial.items():
            for nc in ((1, 1), (2, 3)) if length > 4097 else ((1, 1), (2, 3), (3, 17)):
                for op, p in (("average", None), ("lp1", 1), ("lp2", 2), ("lp3", 3)):
                    yield pytest.param(dtype, (*nc, *axes), p,
                                       id=f"{np.dtype(dtype).name}-{length}-{nc[0]}x{nc[1]}-{op}")


@pytest.mark.parametrize("dtype, shape, p", list(configurations()))
def test_numpy_and_emulated_give_equal_bits(dtype, shape, p, rng):
    x = (random(rng, shape, np.float64) * 8).astype(dtype)
    if p is None:
        mine = pooled("numpy", onnx_cupy.global_average_pool, x)
        kernel = pooled("emulated", onnx_cupy.global_average_pool, x)
    else:
        mine = pooled("numpy", onnx_cupy.global_lp_pool, x, p=p)
        kernel = pooled("emulated", onnx_cupy.global_lp_pool, x, p=p)
    assert mine.dtype == kernel.dtype == dtype and mine.shape == kernel.shape
    if p in (None, 1, 2):
        assert mine.tobytes() == kernel.tobytes()
    else:   # pow: the one documented exception, within a few ulps
        wide = mine.astype(np.float64)
        ulp = np.spacing(np.abs(wide).astype(dtype)).astype(np.float64)
        assert (np.abs(wide - kernel.astype(np.float64)) <= 4 * ulp).all()


@pytest.mark.parametrize("op", ["global_average_pool", "global_lp_pool"])
def test_zero_planes_give_positive_zero(op, cpu_backend):
    """Planes of -0.0 sum to +0 on every path (the kernel's sums start from +0)."""
    for length in (1, 3, 40, 300, 5000):
        y = pooled(cpu_backend, getattr(onnx_cupy, op), np.full((2, 2, length), -0.0, np.float32))
        assert y.tobytes() == np.zeros(y.shape, np.float32).tobytes(), length


@pytest.mark.parametrize("dtype, values, want", [
    (np.float16, [2, 1 + 2**-9, 1, 2**-24], 1 + 2**-10),
    (BF16, [2, 1 + 2**-6, 1, 2**-28], 1 + 2**-7)], ids=["float16", "bfloat16"])
def test_double_means_round_once(dtype, values, want, backend):
    """A mean just past a tie of the 16-bit type but on a tie of float32 (1 + 2**-11 + 2**-26,
    1 + 2**-8 + 2**-30): rounded once from double, not through float32 (which would give 1)."""
    x = np.array(values, dtype).reshape(1, 1, 4)
    if backend == "cupy":
        x = execution.cupy_module().asarray(x)
    y = pooled(backend, onnx_cupy.global_average_pool, x)
    assert y.astype(np.float64).ravel().tolist() == [want]


def test_narrow_rounds_once(rng):
    """numerics.narrow: float16 as NumPy's direct float64 conversion (single rounding), also
    near ties, infinities, NaN and subnormals; float32 and float64 by astype."""
    halves = rng.integers(0, 0x7C00, 20000).astype(np.uint16).view(np.float16).astype(np.float64)
    nudge = np.spacing(halves) * rng.choice([-1, 1], halves.size) * rng.integers(0, 3, halves.size)
    v = np.concatenate([halves + np.spacing(np.float16(halves)).astype(np.float64) / 2 + nudge,
                        -halves, [np.inf, -np.inf, 1e300, -1e-300, 0.0, -0.0]])
    assert numerics.narrow(v, np.float16).tobytes() == v.astype(np.float16).tobytes()
    assert np.isnan(numerics.narrow(np.array([np.nan]), BF16)[0])
    assert numerics.narrow(v, np.float32).tobytes() == v.astype(np.float32).tobytes()


# --------------------------------------------------- the NumPy behaviour the NumPy path rests on

@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_numpy_reduces_outer_axes_in_order(dtype, rng):
    """np.add.reduce over an axis that is not the innermost (segments of a lane, then the
    segments; a cast to the accumulation type buffered or not; a strided view) adds the
    elements in order, from +0 or from the first one: an explicit loop's bits. (NumPy's own
    pairwise summation is for the innermost axis only.) _PlaneSums relies on it."""
    acc = np.float64 if dtype == np.float64 else np.float32
    v = (rng.standard_normal((3, 40, 16, 64)) * 2.0 ** rng.integers(-30, 30, (3, 40, 16, 64)))
    x = v.astype(dtype)
    for view in (x, x[:, ::-3, :, ::2], np.broadcast_to(x[:, :1], x.shape)):
        got = np.add.reduce(view, axis=2, dtype=acc)
        want = np.zeros(view.shape[:2] + view.shape[3:], acc)
        for j in range(view.shape[2]):
            want = (want + view[:, :, j].astype(acc)).astype(acc)
        assert (got + acc(0)).tobytes() == want.tobytes()
        lanes = np.add.reduce(got, axis=1, dtype=np.float64)
        want = np.zeros(got.shape[:1] + got.shape[2:])
        for j in range(got.shape[1]):
            want = want + got[:, j].astype(np.float64)
        assert (lanes + 0.0).tobytes() == want.tobytes()


def test_short_planes_leave_out_only_zero_lanes():
    """_PlaneSums of short planes splits the last warp into runs of a power of two lanes."""
    for length, runs in [(1, [(0, 1)]), (9, [(0, 8), (8, 1)]), (49, [(32, 16), (48, 1)]),
                         (64, []), (95, [(64, 16), (80, 8), (88, 4), (92, 2), (94, 1)])]:
        sums = numpy_global._PlaneSums(4, length, np.dtype(np.float32), None, True, True)
        assert sums.runs == runs and sums.full == length // 32
