"""The CuPy path run for real on the executing stand-in (tests/helpers/standin.py): what a launch
reads is owned by the prepared call that launches it, every input address is read as the
kernels can, workspaces are bounded and released. The emulated backend is the same path (the
CuPy path's host code over the emulated device), so each test runs on 'emulated' and 'cupy'."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import to_numpy

import onnx_cupy as oc
from onnx_cupy.core import checker, execution, workspaces
from onnx_cupy.core.emulated_device import ALIGN
from onnx_cupy.nn import functional as F


def moved(a: np.ndarray, path: str):
    """`a` on the kernel path: on the GPU in a C-contiguous view whose first element has the
    same address modulo ALIGN (a byte offset stays one)."""
    if path != "cupy":
        return a
    cp = execution.cupy_module()
    skew = a.ctypes.data % ALIGN
    raw = cp.empty(a.nbytes + skew, np.uint8)
    view = raw[skew:].view(a.dtype).reshape(a.shape)
    view[...] = cp.asarray(np.ascontiguousarray(a))
    return view


def run(path: str, fn, *inputs):
    """`fn` on the kernel path: inputs moved to it, outputs back to NumPy."""
    with execution.backend(path):
        got = fn(*(moved(a, path) for a in inputs))
    return tuple(map(to_numpy, got)) if isinstance(got, tuple) else to_numpy(got)


def on_numpy(fn, *inputs):
    with execution.backend("numpy"):
        return fn(*inputs)


def test_global_pool_reuse_reads_its_own_struct(kernel_path, rng):
    """A repeated global pooling call launches with its own parameter struct: another shape's
    call in between (whose struct a freed one's memory would hold) changes nothing."""
    a = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    b = rng.standard_normal((5, 7, 4, 4)).astype(np.float32)
    for op in (oc.global_average_pool, oc.global_max_pool):
        first = run(kernel_path, op, a)
        run(kernel_path, op, b)
        np.testing.assert_array_equal(run(kernel_path, op, a), first)
        np.testing.assert_allclose(first, on_numpy(op, a), rtol=1e-6, atol=1e-7)


# family -> (the inputs of shape i, the call): SHAPES + 1 shapes of each family's own
def _floats(*shapes):
    return lambda rng, i: [rng.uniform(-1, 1, s(i)).astype(np.float32) for s in shapes]


def _unpooled(rng, i):
    x = rng.uniform(-1, 1, (1, 1, 1 + i % 30, 1 + i // 30)).astype(np.float32)
    return [x, np.arange(x.size, dtype=np.int64).reshape(x.shape) * 4 % (4 * x.size)]


FAMILIES = {
    "average_pool": (_floats(lambda i: (1, 1, 3 + i % 40, 2 + i // 40)),
                     lambda x: oc.average_pool(x, kernel_shape=[2, 2], pads=[1, 0, 1, 1])),
    "max_pool-indices": (_floats(lambda i: (1, 1, 3 + i % 40, 2 + i // 40)),
                         lambda x: oc.max_pool(x, kernel_shape=[2, 2], return_indices=True)),
    "global_average_pool": (_floats(lambda i: (1, 1, 1 + i % 40, 1 + i // 40)),
                            oc.global_average_pool),
    "adaptive_avg_pool2d": (_floats(lambda i: (1, 1, 3 + i % 40, 2 + i // 40)),
                            lambda x: F.adaptive_avg_pool2d(x, 2)),
    "hardmax": (_floats(lambda i: (1 + i % 30, 2 + i // 30)), oc.hardmax),
    "resize": (_floats(lambda i: (1, 1, 2 + i % 40, 2 + i // 40)),
               lambda x: oc.resize(x, scales=[1, 1, 1.5, 2], mode="linear")),
    "grid_sample": (_floats(lambda i: (1, 1, 3, 4), lambda i: (1, 1 + i % 30, 1 + i // 30, 2)),
                    oc.grid_sample),
    "affine_grid": (_floats(lambda i: (1 + i, 2, 3)),
                    lambda t: oc.affine_grid(t, np.array([len(t), 1, 3, 4]))),
    "max_unpool": (_unpooled,
                   lambda x, i: oc.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2])),
    "roi_align": (lambda rng, i: [rng.uniform(-1, 1, (1, 1, 2 + i % 30, 2 + i // 30)).astype(
        np.float32), _BOXES.astype(np.float32), np.zeros(3, np.int64)],
        lambda x, b, n: oc.roi_align(x, b, n, output_height=2, output_width=2)),
}
SHAPES = 600


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_prepared_call_survives_other_shapes(family, rng):
    """The first shape's prepared call, used now and then among SHAPES others (so that the
    family's least-recently-used cache keeps it, while every cache below it turns over), still
    reads its own structs and tables: its results never change."""
    make, fn = FAMILIES[family]
    first = make(rng, 0)
    expected = on_numpy(fn, *first)
    with StandIn().installed():
        for i in range(1, SHAPES + 1):
            run("cupy", fn, *make(rng, i))
            if i % 100 == 0:
                got = run("cupy", fn, *first)
                for g, e in zip(*((got, expected) if isinstance(got, tuple)
                                  else ((got,), (expected,)))):
                    np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-7)


def _view_at(a: np.ndarray, offset: int) -> np.ndarray:
    """`a`'s values in a view whose first element lies `offset` bytes past an aligned address."""
    raw = np.empty(a.nbytes + ALIGN + offset, np.uint8)
    start = -raw.ctypes.data % ALIGN + offset
    view = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    return view


def _unpool_inputs(rng):
    x = rng.uniform(-1, 1, (2, 3, 4, 4)).astype(np.float32)
    y, i = oc.max_pool(np.repeat(np.repeat(x, 2, 2), 2, 3), kernel_shape=[2, 2], strides=[2, 2],
                       return_indices=True)
    return [y, i]


_BOXES = np.array([[0.5, 1.0, 6.0, 7.5], [2.0, 0.0, 8.5, 4.0], [3.0, 3.0, 3.5, 9.0]])
# operator -> (its inputs, the call, which inputs are moved to a byte offset)
UNALIGNED = {
    "average_pool-fast": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))],
                          lambda x: oc.average_pool(x, kernel_shape=[3, 3], strides=[2, 2])),
    "average_pool-generic": (lambda r: [r.uniform(-1, 1, (1, 2, 3, 4, 5, 6))],
                             lambda x: oc.average_pool(x, kernel_shape=[2, 2, 2, 2])),
    "lp_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))],
                lambda x: oc.lp_pool(x, kernel_shape=[2, 2], p=3)),
    "max_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))],
                 lambda x: oc.max_pool(x, kernel_shape=[3, 3], strides=[2, 2])),
    "max_pool-indices": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))],
                         lambda x: oc.max_pool(x, kernel_shape=[3, 3], return_indices=True)),
    "global_average_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))], oc.global_average_pool),
    "global_max_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))], oc.global_max_pool),
    "global_lp_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))], oc.global_lp_pool),
    "adaptive_max_pool2d": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9))],
                            lambda x: F.adaptive_max_pool2d(x, 4)),
    "hardmax": (lambda r: [r.uniform(-1, 1, (4, 64))], oc.hardmax),
    "resize": (lambda r: [r.uniform(-1, 1, (1, 3, 8, 8))],
               lambda x: oc.resize(x, scales=[1, 1, 2, 2], mode="linear")),
    "upsample": (lambda r: [r.uniform(-1, 1, (1, 3, 8, 8))],
                 lambda x: oc.upsample(x, [1.0, 1.0, 2.0, 3.0])),
    "grid_sample": (lambda r: [r.uniform(-1, 1, (2, 3, 5, 7)), r.uniform(-1, 1, (2, 4, 6, 2))],
                    oc.grid_sample),
    "affine_grid": (lambda r: [r.uniform(-1, 1, (2, 2, 3))],
                    lambda t: oc.affine_grid(t, np.array([2, 1, 5, 7]))),
    "max_unpool": (_unpool_inputs,
                   lambda x, i: oc.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2])),
    "roi_align": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9)), _BOXES, np.array([1, 0, 1])],
                  lambda x, b, i: oc.roi_align(x, b, i, output_height=2, output_width=3)),
    "max_roi_pool": (lambda r: [r.uniform(-1, 1, (2, 3, 9, 9)),
                                np.concatenate([[[1.0], [0.0], [1.0]], _BOXES], 1)],
                     lambda x, b: oc.max_roi_pool(x, b, pooled_shape=[2, 3])),
}


@pytest.mark.parametrize("offset", [1, 2, 4, 8])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("op", list(UNALIGNED))
def test_unaligned_inputs_are_read_as_the_kernels_can(op, dtype, offset, kernel_path, rng):
    """Inputs at a byte offset of 1, 2, 4 or 8 from an aligned address (every offset a view of
    the dtype allows) give the aligned inputs' results, and the kernel checker finds no
    misaligned (or any other) access."""
    make, fn = UNALIGNED[op]
    inputs = [a if a.dtype.kind in "iu" else a.astype(dtype) for a in make(rng)]
    expected = on_numpy(fn, *inputs)
    moved = [_view_at(a, offset) for a in inputs]
    with checker.checking() as session:
        got = run(kernel_path, fn, *moved)
    assert session.launches > 0
    pairs = zip(got, expected) if isinstance(got, tuple) else [(got, expected)]
    for g, e in pairs:
        np.testing.assert_allclose(g.astype(np.float64), np.asarray(e).astype(np.float64),
                                   rtol=2e-3 if dtype == np.float16 else 1e-5, atol=1e-6)
    for a, b in zip(moved, inputs):
        np.testing.assert_array_equal(a, b)   # inputs unchanged


def test_unaligned_out_is_refused_by_name(kernel_path, rng):
    x = rng.uniform(-1, 1, (2, 3, 9, 9)).astype(np.float32)
    out = _view_at(np.zeros((2, 3, 4, 4), np.float32), 2)
    with pytest.raises(ValueError, match="AveragePool: out must be aligned to 4 bytes"):
        run(kernel_path, lambda v, o: oc.average_pool(v, kernel_shape=[3, 3], strides=[2, 2],
                                                      out=o), x, out)


@pytest.mark.parametrize("call", ["max_unpool", "hardmax-scan", "unaligned-copy"])
def test_release_workspaces_frees_the_memory(call, rng):
    """release_workspaces() gives the workspaces' memory back: the allocations a prepared
    call's scratch held are no longer in use (the stand-in's live allocations), though the
    prepared call, which still holds its Scratch, stays cached; its next call allocates anew."""
    x = rng.uniform(-1, 1, (2, 4000, 3)).astype(np.float32)
    fake = StandIn()
    with fake.installed():
        if call == "max_unpool":
            v = fake.asarray(x.reshape(1, 1, 8000, 3)[:, :, :4000])
            i = fake.asarray(np.arange(12000, dtype=np.int64).reshape(1, 1, 4000, 3) * 4)
            run = lambda: oc.max_unpool(v, i, kernel_shape=[4, 1], strides=[4, 1])  # noqa: E731
        elif call == "hardmax-scan":
            v = fake.asarray(x)
            run = lambda: oc.hardmax(v, axis=1)   # noqa: E731 (the scan's candidates)
        else:
            raw = fake.empty(x.nbytes + 2, np.uint8)
            v = raw[2:].view(np.float32).reshape(x.shape)   # copied to an aligned workspace
            v[...] = fake.asarray(x)
            run = lambda: oc.average_pool(v, kernel_shape=[3])   # noqa: E731
        y = run()
        gc.collect()
        held = fake.live_bytes()   # the inputs, y and the workspace
        assert oc.release_workspaces() >= 1
        gc.collect()
        freed = held - fake.live_bytes()
        assert freed > 0, f"{held} bytes still in use after release_workspaces()"
        again = run()
        np.testing.assert_array_equal(to_numpy(again), to_numpy(y))
        assert fake.live_bytes() > held - freed   # the call took a workspace again


def test_short_lived_streams_leave_a_bounded_workspace(rng):
    """Calls on 200 short-lived streams keep at most MAX_STREAMS workspaces (the least
    recently used go); release_workspaces frees them all; a thread's go when it ends."""
    x = rng.uniform(-1, 1, (2, 4000, 3)).astype(np.float32)   # Hardmax's scan: scratch
    fake = StandIn()
    with fake.installed():
        xd = fake.asarray(x)
        expected = on_numpy(lambda v: oc.hardmax(v, axis=1), x)
        for _ in range(200):
            with fake.cuda.Stream():
                np.testing.assert_array_equal(to_numpy(oc.hardmax(xd, axis=1)), expected)
        assert 1 <= len(workspaces._workspaces) <= workspaces.MAX_STREAMS
        kept = len(workspaces._workspaces)
        assert oc.release_workspaces() == kept and len(workspaces._workspaces) == 0
        np.testing.assert_array_equal(to_numpy(oc.hardmax(xd, axis=1)), expected)
        assert len(workspaces._workspaces) == 1

        def in_a_thread() -> None:
            with fake.cuda.Stream():
                oc.hardmax(xd, axis=1)
        worker = threading.Thread(target=in_a_thread)
        worker.start()
        worker.join()
        assert len(workspaces._workspaces) == 1   # the ended thread's workspace is gone


def test_device_memory_is_its_own_at_the_callers_alignment(rng):
    """The stand-in copies a host array into an allocation of its own (never a view of the
    caller's memory), with its strides and its address modulo ALIGN."""
    fake = StandIn()
    base = rng.uniform(-1, 1, (6, 10)).astype(np.float32)
    for view in (base, base[:, 1:], base[::2, ::-3], np.broadcast_to(base[:1], (4, 6, 10)),
                 _view_at(base, 2)):
        d = fake.mirror(view)
        assert d.strides == view.strides and d.address() % ALIGN == view.ctypes.data % ALIGN
        assert not np.shares_memory(d.host, view)
        np.testing.assert_array_equal(d.get(), view)
    assert fake.empty((3,), np.float32).address() % ALIGN == 0


# operator -> a call on a broadcast view of more than 2**31 elements spanning a few bytes
BROADCAST = {
    "global_average_pool": (lambda: np.broadcast_to(np.float32(1), (1, 1, 2**31 + 7)),
                            oc.global_average_pool),
    "global_max_pool": (lambda: np.broadcast_to(np.float32(1), (1, 1, 46341, 46341)),
                        oc.global_max_pool),
    "average_pool": (lambda: np.broadcast_to(np.float32(1), (1, 1, 3, 2**31 + 7)),
                     lambda x: oc.average_pool(x, kernel_shape=[3, 1 << 20],
                                               strides=[1, 1 << 30])),
    "resize": (lambda: np.broadcast_to(np.float32(1), (2**31 + 7, 2)),
               lambda x: oc.resize(x, sizes=np.array([2, 2]), mode="nearest")),
}


@pytest.mark.parametrize("op", list(BROADCAST))
def test_broadcast_views_past_int32_take_64_bit_offsets(op):
    """A stride-0 view addressing more than 2**31 elements in a few bytes is read with 64-bit
    offsets (its element count, not the bytes it spans, decides): every instantiation its call
    launches has 64-bit indices (recorded, not run: they would loop over 2**31 elements)."""
    make, fn = BROADCAST[op]
    with execution.backend("emulated"), checker.checking(record_only=True) as session:
        fn(make())
    assert session.instantiations
    assert all(k.index_bits == 64 for k in session.instantiations)


@pytest.mark.slow
def test_broadcast_global_pools_past_int32():
    """Run for real: the mean and the maximum of 2**31 + 7 broadcast ones are one."""
    x = BROADCAST["global_average_pool"][0]()
    with execution.backend("emulated"):
        assert oc.global_average_pool(x).item() == 1.0
        assert oc.global_max_pool(x).item() == 1.0
