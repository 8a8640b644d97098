"""Resize fast kernels (1-3 resized axes, trailing or followed by unresized axes that merge into
one, as NHWC resized along H and W): which path the host picks, and that the fast path gives the
generic kernel's bits on the emulated backend and the NumPy fallback's values within the usual
tolerances, every dtype, up and down, odd sizes, extrapolation, strided inputs, 32-bit and 64-bit
offsets; the generic kernel at the boundaries of the fast path; the kernel report's static
targets (no local memory in any instantiation, the 64-bit fast paths' budget)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from helpers.util import BF16, TOL, replan

from onnx_cupy import resize
from onnx_cupy.core import execution, loader, records
from onnx_cupy.resize import kernel as resize_kernel
from onnx_cupy.resize import plan as resize_op
from onnx_cupy.tools import kernel_report

RESIZED, KEPT = resize_kernel.RESIZED, resize_kernel.KEPT

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FLOATS = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INTS = [np.dtype(t) for t in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
                              "uint64")]


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Fresh random values, spread over most of an integer dtype's range (some saturate)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return rng.uniform(-2.0, 3.0, size=shape).astype(dtype)


def emulated(x: np.ndarray, monkeypatch=None, **kw) -> np.ndarray:
    """Resize on the emulated backend; the generic kernel when `monkeypatch` is given."""
    with monkeypatch.context() if monkeypatch else _null() as m:
        if m is not None:
            m.setattr(resize_kernel, "fast_args", lambda *a: None)
            replan()
        try:
            with execution.backend("emulated"):
                return resize(x, **kw)
        finally:
            if m is not None:
                replan()


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def check(x: np.ndarray, launches: list, monkeypatch, fast: bool = True, walk: str | None = None,
          bits: int | None = None, **kw) -> None:
    """Fast path taken (or not; walking `walk` where given); bitwise equal to the generic kernel;
    close to NumPy; both kernels indexed with `bits`-bit offsets where given."""
    launches.clear()
    got = emulated(x, **kw)
    assert len(launches) == 1
    kernel, shape = launches[0]
    assert kernel.fast == fast and (shape is not None) == fast, kernel
    assert not fast or walk is None or kernel["walk"] == walk.removeprefix("rsz::"), kernel
    generic = emulated(x, monkeypatch, **kw)
    assert not launches[-1][0].fast
    if bits is not None:
        assert all(k.index_bits == bits for k, _ in launches), launches
    assert got.dtype == generic.dtype == x.dtype and got.shape == generic.shape
    assert got.tobytes() == generic.tobytes(), (kernel, kw)
    expected = resize(x, **kw)
    if kw.get("mode", "nearest") == "nearest":
        assert got.tobytes() == expected.tobytes()
    else:
        rtol, atol = TOL.get(x.dtype.name, (0, 1))
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=str(kw))


# (input shape, scales): 1, 2 and 3 trailing resized axes, up and down, odd lengths, rows that
# the outputs per thread do not divide, a batch of several leading axes or none
CASES = [((3, 7), [1, 2.0]), ((2, 3, 5), [1, 1, 0.6]), ((5, 9), [1, 3.4]),
         ((2, 3, 5, 7), [1, 1, 1.7, 0.75]), ((9, 4), [0.5, 2.5]), ((1, 4, 3, 5), [1, 1, 2, 3]),
         ((2, 3, 4, 5), [1, 1.5, 0.5, 1.4]), ((3, 2, 5, 4), [1, 2, 1.6, 0.8])]


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_fast_equals_generic(dtype, mode, launches, monkeypatch):
    rng = np.random.default_rng(zlib.crc32(repr((dtype.name, mode)).encode()))
    for shape, scales in CASES:
        ranks = sum(s != 1 for s in scales)
        x = sample(rng, shape, dtype)
        check(x, launches, monkeypatch, fast=not (mode == "cubic" and ranks == 3),
              walk=RESIZED, scales=scales, mode=mode)


# (input shape, scales, walked dim): NHWC 2x up and 0.5x down with C = 3, 4, 64 and C = 1 (a
# length-1 axis: the trailing path), NCHW along H only, one and three resized axes, several
# trailing unresized axes merged, odd lengths
KEPT_CASES = [((2, 5, 7, 3), [1, 2, 2, 1], KEPT), ((1, 8, 6, 4), [1, 0.5, 0.5, 1], KEPT),
              ((1, 3, 5, 64), [1, 2, 2, 1], KEPT), ((1, 7, 9, 64), [1, 0.5, 0.5, 1], KEPT),
              ((2, 5, 7, 1), [1, 2, 2, 1], RESIZED), ((2, 3, 9, 5), [1, 1, 1.6, 1], KEPT),
              ((3, 7, 5), [1, 2.5, 1], KEPT), ((2, 5, 3, 4), [1, 1.4, 1, 1], KEPT),
              ((2, 3, 4, 5, 3), [1, 1.5, 0.7, 2, 1], KEPT)]


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_kept_inner_axes_equal_generic(dtype, mode, launches, monkeypatch):
    """Resized axes followed by unresized ones: the fast path walks the unresized axes."""
    rng = np.random.default_rng(zlib.crc32(repr((dtype.name, mode, "kept")).encode()))
    small = dtype.name in ("float16", "bfloat16", "float32")
    for shape, scales, walk in KEPT_CASES:
        ranks = sum(s != 1 for s in scales)
        x = sample(rng, shape, dtype)
        # cubic: 4 tap combinations per thread, 16 where float sums walk the kept axes
        fast = mode != "cubic" or ranks == 1 or (ranks == 2 and (walk == RESIZED or small))
        check(x, launches, monkeypatch, fast=fast, walk=walk, scales=scales, mode=mode)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.bool_, np.complex64, np.complex128)],
                         ids=lambda d: d.name)
def test_fast_nearest_any_dtype(dtype, bits, launches, monkeypatch, index_width):
    """Nearest moves elements as words of their size (1 to 16 bytes), whatever the dtype, with
    32-bit and 64-bit offsets."""
    index_width(bits)
    rng = np.random.default_rng(dtype.itemsize)
    v = rng.standard_normal((2, 5, 7))
    x = v > 0 if dtype.kind == "b" else (v + 1j * rng.standard_normal(v.shape)).astype(dtype)
    for scales in ([1, 1, 2.0], [1, 0.6, 1.7], [1.5, 2.5, 0.5]):
        check(x, launches, monkeypatch, bits=bits, scales=scales, mode="nearest")


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16, np.dtype(np.uint8)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_fast_attributes(dtype, mode, bits, launches, monkeypatch, index_width):
    """Coordinate modes, exclude_outside, sizes, and tf_crop_and_resize extrapolating along the
    outer and the innermost resized axis (extrapolation_value stored as the generic kernel
    stores it), with 32-bit and 64-bit offsets."""
    index_width(bits)
    rng = np.random.default_rng(3)
    x = sample(rng, (2, 5, 7), dtype)
    for kw in [{"coordinate_transformation_mode": "align_corners", "sizes": [2, 9, 4]},
               {"coordinate_transformation_mode": "asymmetric", "scales": [1, 1.3, 2.2]},
               {"exclude_outside": 1, "scales": [1, 0.8, 1.9]},
               {"coordinate_transformation_mode": "tf_crop_and_resize",
                "roi": [0, -0.4, 0.2, 1, 1.3, 1.1], "scales": [1, 1.6, 1.5],
                "extrapolation_value": -7.25},
               {"coordinate_transformation_mode": "tf_crop_and_resize", "roi": [0.8, 1.2],
                "scales": [2.5], "axes": [2], "extrapolation_value": 300.0}]:
        if mode != "nearest" and "exclude_outside" not in kw:
            kw["cubic_coeff_a"] = -0.5
        check(x, launches, monkeypatch, bits=bits, mode=mode, **kw)


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float64), np.dtype(np.int16)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_kept_attributes(dtype, mode, bits, launches, monkeypatch, index_width):
    """NHWC: coordinate modes, exclude_outside, sizes, and tf_crop_and_resize extrapolating along
    either resized axis (the whole row of channels takes extrapolation_value), with 32-bit and
    64-bit offsets."""
    index_width(bits)
    rng = np.random.default_rng(4)
    x = sample(rng, (2, 5, 7, 3), dtype)
    for kw in [{"coordinate_transformation_mode": "align_corners", "sizes": [2, 9, 4, 3]},
               {"coordinate_transformation_mode": "asymmetric", "scales": [1, 1.3, 2.2, 1]},
               {"exclude_outside": 1, "scales": [1, 0.8, 1.9, 1]},
               {"coordinate_transformation_mode": "tf_crop_and_resize",
                "roi": [0, -0.4, 0.2, 0, 1, 1.3, 1.1, 1], "scales": [1, 1.6, 1.5, 1],
                "extrapolation_value": -7.25},
               {"coordinate_transformation_mode": "tf_crop_and_resize", "roi": [0.8, 1.2],
                "scales": [2.5], "axes": [1], "extrapolation_value": 300.0}]:
        if mode != "nearest" and "exclude_outside" not in kw:
            kw["cubic_coeff_a"] = -0.5
        ranks = sum(s != 1 for s in kw.get("scales", [1, 2, 2, 1])) if "axes" not in kw else 1
        fast = mode != "cubic" or ranks == 1 or (dtype == np.float16 and bits == 32)
        check(x, launches, monkeypatch, bits=bits, fast=fast, walk=KEPT, mode=mode, **kw)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_kept_strided_inputs(mode, launches, monkeypatch):
    """NHWC views of NCHW data (channels at a stride), sliced and reversed channels, and a
    batch of merged leading axes: the walked axis' stride reaches the kernel as it is."""
    rng = np.random.default_rng(6)
    nchw = sample(rng, (2, 5, 6, 7), np.dtype(np.float32))
    for x in [nchw.transpose(0, 2, 3, 1), nchw[:, :, :, ::2], nchw[:, ::-1, :, 1:],
              nchw.transpose(0, 2, 3, 1)[:, :, :, ::-2]]:
        check(x, launches, monkeypatch, walk=KEPT, scales=[1, 1.5, 2.0, 1], mode=mode)
    check(nchw.reshape(2, 5, 6, 7, 1)[:, :, ::2], launches, monkeypatch, walk=KEPT,
          scales=[1, 1, 1.7, 1, 1], mode=mode)


def test_rows_past_the_grid_y_limit(monkeypatch, launches, launch_limits):
    """Rows spread over grid y and z, blocks of rows straddling batch items: each thread finds
    its batch item and row."""
    rng = np.random.default_rng(12)
    launch_limits(MAX_GRID_YZ=2)
    for shape, scales, walk in [((2, 9, 11, 3), [1, 2, 2, 1], KEPT),
                                ((61, 3, 9), [1, 1.9, 0.6], RESIZED)]:
        for mode in ("nearest", "linear"):
            check(sample(rng, shape, np.dtype(np.float32)), launches, monkeypatch,
                  walk=walk, scales=scales, mode=mode)
            grid = launches[0][1][0]
            assert grid[1] == 2 and grid[2] > 1, grid


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_fast_strided_inputs(mode, bits, launches, monkeypatch, index_width):
    """Reversed, transposed and sliced inputs: strides (negative ones too) reach the fast kernel
    as they are, with 32-bit and 64-bit offsets."""
    index_width(bits)
    rng = np.random.default_rng(5)
    base = sample(rng, (4, 6, 9, 8), np.dtype(np.float32))
    for x in [base[:, :, ::-1, ::2], base.transpose(0, 1, 3, 2), base[1:3, :, :7, 1:]]:
        check(x, launches, monkeypatch, bits=bits, scales=[1, 1, 1.5, 2.0], mode=mode)
    # leading axes that do not merge into one batch axis: the generic kernel
    check(base[:, ::2, :, :].transpose(1, 0, 2, 3), launches, monkeypatch, fast=False, bits=bits,
          scales=[1, 1, 1.5, 2.0], mode=mode)


def test_generic_at_the_boundaries(launches, monkeypatch):
    """An unresized axis between resized ones, trailing unresized axes that do not merge,
    antialias with many taps, 3-D cubic, and 2-D cubic before unresized axes summed in double
    (16 tap combinations per thread): the generic kernel."""
    rng = np.random.default_rng(9)
    x = sample(rng, (4, 6, 5), np.dtype(np.float32))
    check(x, launches, monkeypatch, fast=False, scales=[2, 1, 1.5], mode="linear")
    check(x, launches, monkeypatch, fast=False, scales=[1.5, 1, 1.5], mode="nearest")
    check(x, launches, monkeypatch, fast=False, scales=[1, 0.4, 0.3], mode="cubic", antialias=1)
    check(x, launches, monkeypatch, fast=False, scales=[1, 0.4, 1], mode="linear", antialias=1)
    check(x, launches, monkeypatch, fast=False, scales=[1.5, 1.5, 2], mode="cubic")
    check(x.astype(np.float64), launches, monkeypatch, fast=False, scales=[1.5, 1.5, 1],
          mode="cubic")
    check(x, launches, monkeypatch, walk=KEPT, scales=[1.5, 1.5, 1], mode="cubic")
    y = sample(rng, (3, 4, 5, 2), np.dtype(np.float32)).transpose(0, 1, 3, 2)
    check(y, launches, monkeypatch, fast=False, scales=[1, 2, 1, 1], mode="linear")
    # antialias that upsamples keeps 2 or 4 taps: still the fast kernel
    check(x, launches, monkeypatch, scales=[1, 1.5, 2], mode="linear", antialias=1)


def plan(shape, scales, **attrs):
    return resize_op.make(shape, np.float32, None, scales, None, 19,
                             **{**resize_op.DEFAULTS, "mode": "linear", **attrs})[0]


def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))


def test_fast_args_limits(launch_limits):
    """Offsets past 32 bits take the 64-bit fast kernel (records of int64 offsets); the launch
    shape, with the rows of every batch item on grid y and, past its limit, z; grids past the z
    limit take the generic kernel."""
    pl = plan((3, 40, 50), [1, 2, 2])
    f32 = np.dtype(np.float32)
    fast, table = resize_kernel.fast_args(pl, f32, contiguous(pl.in_shape))
    assert fast.kernel.expression == ("resize_weighted_fast<float, float, float, 2, 2, 4, "
                                      "rsz::RESIZED, int>")
    assert fast.shape == ((1, 30, 1), (32, 8, 1))  # 3 x 80 rows of 100 outputs
    assert table.weight == np.float32 and table.strides == (50, 1) and table.inner == 80 * 16
    assert table.bits == 32
    wide, wide_table = resize_kernel.fast_args(pl, f32, (2**30, 50, 1))
    assert wide.kernel is resize_kernel.FAST["float32", 2, 2, RESIZED, 64]
    assert wide_table.bits == 64 and wide.shape == fast.shape and wide_table.inner == 80 * 24
    nhwc = plan((2, 5, 7, 3), [1, 2, 2, 1])
    fast, _ = resize_kernel.fast_args(nhwc, f32, contiguous(nhwc.in_shape))
    assert fast.kernel is resize_kernel.FAST["float32", 2, 2, KEPT, 32]
    assert fast.shape == ((1, 2, 1), (1, 256, 1))  # 2 x 140 rows of 3 outputs
    (geom,) = fast.constants
    assert geom["walk"] == 3 and geom["walk_stride"] == 1 and geom["rows"] == 140
    wide, _ = resize_kernel.fast_args(nhwc, f32, (105, 21, 3, 2**30))
    assert wide.kernel is resize_kernel.FAST["float32", 2, 2, KEPT, 64]
    assert wide.constants[0]["walk_stride"] == 2**30
    launch_limits(MAX_GRID_YZ=9)
    assert resize_kernel.fast_args(pl, f32, contiguous(pl.in_shape))[0].shape[0] == (1, 9, 4)
    launch_limits(MAX_GRID_YZ=5)
    assert resize_kernel.fast_args(pl, f32, contiguous(pl.in_shape)) is None  # z: 6 > 5


def test_grid_stride_loop(monkeypatch, launches, launch_limits):
    """Rows longer than the grid covers: each thread runs several iterations."""
    rng = np.random.default_rng(11)
    x = sample(rng, (2, 3, 1500), np.dtype(np.float32))
    launch_limits(MAX_BLOCKS=1)
    for mode in ("nearest", "linear"):
        check(x, launches, monkeypatch, walk=RESIZED, scales=[1, 1.5, 1.9], mode=mode)
        assert launches[0][1][0][0] == 1  # one block along the rows of 2850 outputs
        check(x, launches, monkeypatch, walk=KEPT, scales=[1, 1.5, 1], mode=mode)
        assert launches[0][1][0][0] == 1  # one block along the rows of 1500 outputs


def test_empty_output_launches_nothing(launches):
    x = np.ones((0, 3, 4), np.float32)
    with execution.backend("emulated"):
        y = resize(x, scales=[1, 2, 2], mode="linear")
    assert y.shape == (0, 6, 8) and launches == []


def test_fast_records_round_weights_like_the_generic_kernel():
    """float32 records hold the plan's float64 weights rounded to nearest, the conversion the
    generic kernel makes per tap; offsets (index times stride) as int32, OUTSIDE first where
    extrapolated."""
    pl = resize_op.make((3, 11), np.float32, [0, -0.2, 1, 1.3], [1, 1.7], None, 19,
                           **{**resize_op.DEFAULTS, "mode": "cubic",
                              "coordinate_transformation_mode": "tf_crop_and_resize"})[0]
    table, first, size = resize_kernel.fast_table(pl, np.dtype(np.float32), (3,))
    assert table.ctypes.data % resize_kernel.TABLE_ALIGN == 0 and size == 32 and first == (0,)
    records = table.view(np.dtype([("w", "<f4", (4,)), ("i", "<i4", (4,))]))
    t = pl.tables[0]
    np.testing.assert_array_equal(records["w"], t.weight.astype(np.float32))
    expected = t.index * 3
    expected[t.outside, 0] = -2**31
    assert t.outside.any() and np.array_equal(records["i"], expected)


# ------------------------------------------------------------------------------ 64-bit offsets

@pytest.fixture
def wide(index_width):
    """Every launch indexes with 64-bit offsets, whatever the sizes."""
    index_width(64)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_wide_offsets_every_dtype(dtype, mode, launches, monkeypatch, wide):
    """64-bit offsets, every dtype: the fast kernel (two trailing axes) equals the generic one
    bit for bit and the NumPy path within the tolerances."""
    rng = np.random.default_rng(zlib.crc32(repr((dtype.name, mode, "wide")).encode()))
    check(sample(rng, (2, 3, 5, 7), dtype), launches, monkeypatch, bits=64,
          scales=[1, 1, 1.7, 0.75], mode=mode)


# (input shape, scales, modes the fast kernel takes with 64-bit offsets) of ranks 1 to 5: one to
# three resized axes, trailing (RESIZED) or followed by unresized ones (KEPT: 2-D and 3-D cubic
# hold too many tap combinations), and an unresized axis between resized ones (generic only)
ALL, NOT_CUBIC = ("nearest", "linear", "cubic"), ("nearest", "linear")
RANK_CASES = [((9,), [2.3], ALL), ((5, 9), [1, 0.6], ALL), ((3, 7, 5), [1, 2.5, 1], ALL),
              ((2, 5, 7, 3), [1, 2, 0.6, 1], NOT_CUBIC),
              ((2, 3, 4, 5, 3), [1, 1.5, 0.7, 2, 1], NOT_CUBIC),
              ((3, 4, 5, 2, 3), [1, 1.5, 1, 0.5, 2], ())]


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.int16)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("case", range(len(RANK_CASES)),
                         ids=[f"rank{len(c[0])}-{'x'.join(map(str, c[1]))}" for c in RANK_CASES])
def test_wide_offsets_ranks(dtype, mode, case, launches, monkeypatch, wide):
    """64-bit offsets, ranks 1 to 5: fast and generic kernels (of every rank they take) agree."""
    shape, scales, fast = RANK_CASES[case]
    rng = np.random.default_rng(zlib.crc32(repr((dtype.name, mode, case)).encode()))
    check(sample(rng, shape, dtype), launches, monkeypatch, fast=mode in fast, bits=64,
          scales=scales, mode=mode)


@pytest.mark.parametrize("dtype", [np.dtype(np.uint8), np.dtype(np.float32)],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_strided_view_past_2_31(dtype, mode, launches, monkeypatch):
    """A [3, 5, 7] view whose batch stride is 2^30 + 3 elements (virtual memory: only the viewed
    elements are written): its offsets pass 2^31, so the fast and the generic kernel index with
    long long, and agree."""
    n = 2 * (2**30 + 3) + 35
    big = np.empty(n, dtype)
    x = np.lib.stride_tricks.as_strided(big, (3, 5, 7), ((2**30 + 3) * big.itemsize,
                                                          7 * big.itemsize, big.itemsize))
    seed = zlib.crc32(repr((dtype.name, mode)).encode())
    x[...] = sample(np.random.default_rng(seed), x.shape, dtype)
    check(x, launches, monkeypatch, walk=RESIZED, scales=[1, 1.6, 1.4], mode=mode)
    assert launches[0][0]["walk"] == "RESIZED" and launches[0][0].index_bits == 64, launches
    assert launches[1][0].family == "resize" and launches[1][0].index_bits == 64


def test_generic_ranks_pad_to_an_instantiated_rank():
    """Dims left after merging run on the least instantiated rank that holds them, the rest
    leading length-1 dims."""
    for dims in range(1, resize_op.MAX_DIMS + 1):
        shape = (2, 3) * dims  # alternate resized and unresized axes: nothing merges
        shape = shape[:dims]
        pl = plan(shape, [1.5 if d % 2 == 0 else 1 for d in range(dims)])
        spec = resize_kernel.kernel_args(pl, np.dtype(np.float32), contiguous(shape))
        kernel, (g,) = spec.kernel, spec.constants
        rank = min(r for r in resize_kernel.GENERIC_RANKS if r >= dims)
        assert kernel is resize_kernel.WEIGHTED["float32", rank, 32] and kernel.rank == rank
        pad = rank - dims
        assert list(g["out_shape"][0][:pad]) == [1] * pad and not g["taps"][0][:pad].any()
        assert list(g["out_shape"][0][pad:rank]) == list(pl.out_shape)
        assert int(g["total"][0]) == int(np.prod(pl.out_shape))


# ------------------------------------------------------------------------- static targets

@pytest.fixture(scope="module")
def report():
    pytest.importorskip("cuda.bindings.nvrtc",
                        reason="cuda.bindings (cuda-python) is not installed")
    if kernel_report.nvdisasm() is None:
        pytest.skip(f"{kernel_report.NVDISASM_WHEEL} is not installed")
    return {k.expression: k for k in kernel_report.family_report("resize", "sm_90")}


@pytest.mark.slow   # NVRTC or g++ builds of whole families
def test_no_instantiation_uses_local_memory(report):
    """No stack frame, spills or LDL/STL in any Resize instantiation, generic or fast, 32-bit or
    64-bit offsets."""
    assert list(report) == [k.expression for k in loader.instantiations("resize")]
    assert [e for e, k in report.items() if kernel_report.uses_local_memory(k)] == []


@pytest.mark.slow   # NVRTC or g++ builds of whole families
def test_wide_fast_paths_within_their_budget(report):
    """Every budgeted fast path (nearest, linear on 1-2 axes) has a 64-bit twin, and every 64-bit
    fast path of float16/bfloat16/float32 meets the static targets with 1.5x the budget."""
    fast = {key: k for key, k in resize_kernel.FAST.items()}
    for (*shape, bits), k in fast.items():
        if bits == 32 and k.budget is not None:
            assert (*shape, 64) in fast, k
    wide = [k for (*_, bits), k in fast.items() if bits == 64 and k.held]
    assert wide
    for k in wide:
        assert k.budget in (None, records.WIDE_INDEX_BUDGET * resize_kernel.BUDGET)
        assert kernel_report.check(report[k.expression], k.budget) == [], report[k.expression]
