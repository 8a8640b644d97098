"""The emulator's checking mode finds each kind of error it claims to, in deliberately broken
kernels (tests/core/kernels/broken.cu), with the message and fields that name it, stops before
the faulty access and leaves the caller's arrays as they were; the correct twins, the
cooperative test kernels and the families' kernels run clean and give the unchecked results."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.util import build_file

import onnx_cupy as oc
from onnx_cupy.core import checker, emulator, loader
from onnx_cupy.core.checker import KernelCheckError

HERE = Path(__file__).parent / "kernels"
ROOT = Path(__file__).resolve().parents[2]


def instantiations(*kernels: tuple[str, str | None]) -> dict[str, str]:
    """Name expression -> kernel of each (kernel, template argument or None)."""
    return {kernel if arg is None else f"{kernel}<{arg}>": kernel for kernel, arg in kernels}


BROKEN = instantiations(
    ("copy_until", "0"), ("copy_until", "1"), ("neighbour", "true"), ("neighbour", "false"),
    ("half_filled", None), ("branch_barrier", "0"), ("branch_barrier", "1"),
    ("plane_sums", "true"), ("plane_sums", "false"), ("warp_exchange", "0"),
    ("warp_exchange", "1"), ("warp_exchange", "2"), ("shared_count", "false"),
    ("shared_count", "true"), ("vector_copy", "false"), ("vector_copy", "true"),
    ("gather", None))
COOPERATIVE = instantiations(("block_sum", "true"), ("warp_ops", None), ("atomics", None),
                             ("vectors", None), ("exited_lanes", None))
SEEDS = range(3)


@pytest.fixture(scope="module")
def broken() -> emulator.Module:
    return build_file(HERE / "broken.cu", BROKEN, checked=True)


def line_of(text: str) -> int:
    """The line of broken.cu that holds `text`."""
    lines = (HERE / "broken.cu").read_text().splitlines()
    (found,) = [n for n, line in enumerate(lines, start=1) if text in line]
    return found


def caught(call) -> KernelCheckError:
    with pytest.raises(KernelCheckError) as info:
        call()
    return info.value


# ------------------------------------------------------------------ the four required checks

@pytest.mark.parametrize("n,grid,block", [(100, 1, 128), (37, 1, 64), (250, 4, 64),
                                          (129, 3, 64)])
def test_read_past_the_end(broken, rng, n, grid, block):
    """copy_until<1> reads x[n]: memcheck names the load, block, thread, x and offset 4n; the
    store that follows never lands, and y keeps what it held before the launch."""
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, -7.0, np.float32)
    before = x.copy()
    e = caught(lambda: broken.launch("copy_until<1>", (grid, 1, 1), (block, 1, 1),
                                     (x, y, np.int32(n))))
    assert isinstance(e, RuntimeError)
    assert (e.check, e.kind, e.kernel, e.access, e.size) == ("memcheck", "out of bounds",
                                                             "copy_until<1>", "load", 4)
    assert (e.array, e.offset) == ("x", 4 * n)
    assert e.block == (n // block, 0, 0) and e.thread == (n % block, 0, 0)
    assert e.location == f"broken.cu:{line_of('if (i < n + Bound)')}"
    assert re.search(rf"copy_until<1>, block \({n // block}, 0, 0\), thread \({n % block}, 0, "
                     rf"0\): load of 4 bytes at 0x[0-9a-f]+ at broken\.cu:\d+: outside every "
                     rf"array of the launch: offset {4 * n} of x, 4 bytes past its last byte",
                     str(e)), str(e)
    assert np.array_equal(y, np.full(n, -7.0, np.float32)) and np.array_equal(x, before)
    broken.launch("copy_until<0>", (grid, 1, 1), (block, 1, 1), (x, y, np.int32(n)))
    assert np.array_equal(y, x)


@pytest.mark.parametrize("seed", SEEDS)
def test_missing_barrier_before_a_shared_read(broken, rng, seed):
    """neighbour<false> reads its neighbour's slot in the interval the neighbour writes it:
    racecheck names both threads and the shared variable, whichever ran first."""
    x = rng.integers(-100, 100, 128).astype(np.int32)
    y = np.zeros(128, np.int32)
    e = caught(lambda: broken.launch("neighbour<false>", (1, 1, 1), (128, 1, 1), (x, y),
                                     cooperative=True, seed=seed))
    assert (e.check, e.kind, e.array) == ("racecheck", "race", "__shared__ slot")
    assert e.offset % 4 == 0 and e.other_thread is not None
    ends = {e.thread[0], e.other_thread[0]}
    assert ends == {e.offset // 4, (e.offset // 4 - 1) % 128}, (e.thread, e.other_thread)
    assert re.search(r"offset \d+ of __shared__ slot races with a (load|store) by thread "
                     r"\(\d+, 0, 0\) since the last barrier", str(e)), str(e)
    assert not y.any()
    broken.launch("neighbour<true>", (1, 1, 1), (128, 1, 1), (x, y), cooperative=True, seed=seed)
    assert np.array_equal(y, np.roll(x + 1, -1))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("threads", [64, 128, 96])
def test_shared_read_before_any_write(broken, seed, threads):
    """half_filled: the upper half reads slots no thread wrote: initcheck names the thread and
    the slot it read."""
    y = np.zeros(threads, np.int32)
    e = caught(lambda: broken.launch("half_filled", (1, 1, 1), (threads, 1, 1), (y,),
                                     cooperative=True, seed=seed))
    assert (e.check, e.kind, e.array, e.access) == ("initcheck", "uninitialized shared memory",
                                                    "__shared__ slot", "load")
    assert e.thread[0] >= threads // 2 and e.offset == 4 * e.thread[0]
    assert "which no thread of the block has written" in str(e)


@pytest.mark.parametrize("seed", SEEDS)
def test_barrier_that_only_some_threads_reach(broken, seed):
    """branch_barrier<0>: threads below 16 wait at a barrier the others exit without reaching;
    branch_barrier<1>: even and odd threads wait at different barriers. synccheck names a
    waiting thread, the other one and the barriers' lines."""
    x = np.arange(64, dtype=np.int32)
    y = np.zeros(64, np.int32)
    e = caught(lambda: broken.launch("branch_barrier<0>", (1, 1, 1), (64, 1, 1), (x, y),
                                     cooperative=True, seed=seed))
    start = line_of("__global__ void branch_barrier")
    lines = [n for n, line in enumerate((HERE / "broken.cu").read_text().splitlines(), 1)
             if "__syncthreads();" in line and start < n < start + 20]
    assert (e.check, e.kind) == ("synccheck", "barrier with exited threads")
    assert e.thread[0] < 16 <= e.other_thread[0]
    assert re.search(rf"waits at the barrier at broken\.cu:{lines[0]} while thread "
                     rf"\({e.other_thread[0]}, 0, 0\) has exited", str(e)), str(e)
    e = caught(lambda: broken.launch("branch_barrier<1>", (1, 1, 1), (64, 1, 1), (x, y),
                                     cooperative=True, seed=seed))
    assert (e.check, e.kind) == ("synccheck", "barriers at different call sites")
    assert {e.thread[0] % 2, e.other_thread[0] % 2} == {0, 1}
    sites = re.findall(r"broken\.cu:(\d+)", str(e))
    assert {int(s) for s in sites} == {lines[1], lines[2]}, str(e)
    assert not y.any()


# ------------------------------------------------------------------ more of what it checks

@pytest.mark.parametrize("planes", [2, 5])
def test_race_between_grid_stride_iterations(broken, rng, planes):
    """plane_sums<false> reuses its shared partials for the next plane without a barrier: clean
    while each block has one plane, a race once one block serves several."""
    x = rng.standard_normal((planes, 300)).astype(np.float32)
    y = np.zeros(planes, np.float32)
    args = (x, y, np.int32(planes), np.int32(300))
    broken.launch("plane_sums<false>", (planes, 1, 1), (128, 1, 1), args, cooperative=True)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-4)
    e = caught(lambda: broken.launch("plane_sums<false>", (1, 1, 1), (128, 1, 1), args,
                                     cooperative=True))
    assert (e.check, e.array) == ("racecheck", "__shared__ partial")
    y[...] = 0
    broken.launch("plane_sums<true>", (1, 1, 1), (128, 1, 1), args, cooperative=True)
    np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("seed", SEEDS)
def test_warp_lanes_are_ordered_only_by_syncwarp(broken, rng, seed):
    """Lanes exchanging values through shared memory: clean with __syncwarp between the write
    and the read; a race without it, and with a shuffle there instead (it orders no memory)."""
    x = rng.integers(-9, 9, 32).astype(np.int32)
    y = np.zeros(32, np.int32)
    broken.launch("warp_exchange<1>", (1, 1, 1), (32, 1, 1), (x, y), cooperative=True,
                  seed=seed)
    assert np.array_equal(y, x[np.arange(32) ^ 1])
    for variant in ("warp_exchange<0>", "warp_exchange<2>"):
        e = caught(lambda v=variant: broken.launch(v, (1, 1, 1), (32, 1, 1), (x, y),
                                                   cooperative=True, seed=seed))
        assert (e.check, e.array) == ("racecheck", "__shared__ slot"), variant


@pytest.mark.parametrize("seed", SEEDS)
def test_shared_atomics_race_only_with_plain_accesses(broken, seed):
    y = np.zeros(65, np.int32)
    broken.launch("shared_count<false>", (1, 1, 1), (64, 1, 1), (y,), cooperative=True,
                  seed=seed)
    assert y[0] == 64
    e = caught(lambda: broken.launch("shared_count<true>", (1, 1, 1), (64, 1, 1), (y,),
                                     cooperative=True, seed=seed))
    assert (e.check, e.array, e.offset) == ("racecheck", "__shared__ count", 0)


@pytest.mark.parametrize("first", [1, 2, 3])
def test_vector_loads_must_be_aligned(broken, rng, first):
    """A 16-byte load at an address that 16 does not divide is an error on the GPU."""
    x = rng.standard_normal(4 * 64 + 3).astype(np.float32)
    y = np.zeros(4 * 64, np.float32)
    e = caught(lambda: broken.launch("vector_copy<false>", (1, 1, 1), (64, 1, 1),
                                     (x, y, np.int32(first))))
    assert (e.check, e.kind, e.size, e.array, e.offset) == ("memcheck", "misaligned", 16, "x",
                                                            4 * first)
    assert f"offset {4 * first} of x is not aligned to 16 bytes" in str(e)


@pytest.mark.parametrize("short", [0, 1, 3, 4])
def test_vector_loads_at_the_end_of_an_array(broken, rng, short):
    """The last 16-byte load of x ends exactly at its end (clean) or passes it by the missing
    elements (an error naming how far, even where part of the load is inside)."""
    x = rng.standard_normal(4 * 48 - short).astype(np.float32)
    y = np.zeros(4 * 48, np.float32)
    def call():
        broken.launch("vector_copy<false>", (3, 1, 1), (16, 1, 1), (x, y, np.int32(0)))

    if short == 0:
        call()
        assert np.array_equal(y, x)
        return
    e = caught(call)
    assert (e.kind, e.array, e.offset, e.thread, e.block) == ("out of bounds", "x",
                                                              16 * 47, (15, 0, 0), (2, 0, 0))
    assert f"{4 * short} bytes past its last byte" in str(e)


def test_store_through_a_pointer_to_const(broken, rng):
    x = rng.standard_normal(64).astype(np.float32)
    before = x.copy()
    e = caught(lambda: broken.launch("vector_copy<true>", (1, 1, 1), (16, 1, 1),
                                     (x, np.zeros(64, np.float32), np.int32(0))))
    assert (e.check, e.kind, e.access, e.array, e.offset) == (
        "memcheck", "store to a const parameter", "store", "x", 0)
    assert np.array_equal(x, before)


def test_reads_between_the_elements_of_a_strided_view(broken, rng):
    """gather reads x[i * step]: with x a view of every other element, step 1 lands between
    them; step 2 is right."""
    base = rng.standard_normal(40).astype(np.float32)
    x, y = base[::2], np.zeros(20, np.float32)
    e = caught(lambda: broken.launch("gather", (1, 1, 1), (32, 1, 1),
                                     (x, y, np.int32(20), np.int32(1))))
    assert (e.kind, e.array, e.offset, e.thread) == ("between elements", "x", 4, (1, 0, 0))
    assert "strides (8,)" in str(e)
    broken.launch("gather", (1, 1, 1), (32, 1, 1), (x, y, np.int32(20), np.int32(2)))
    assert np.array_equal(y, x)


def test_collective_with_exited_lanes():
    module = build_file(HERE / "cooperative.cu", COOPERATIVE, checked=True)
    e = caught(lambda: module.launch("exited_lanes", (1, 1, 1), (32, 1, 1),
                                     (np.zeros(32, np.int32),), cooperative=True))
    assert (e.check, e.kind) == ("synccheck", "warp collective naming an exited lane")
    assert e.location.startswith("cooperative.cu:")


# ------------------------------------------------------------------ no false errors

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("grid,block", [((1, 1, 1), (256, 1, 1)), ((3, 1, 1), (64, 1, 1)),
                                        ((2, 3, 1), (16, 8, 1)), ((2, 1, 2), (4, 4, 8))])
def test_correct_cooperative_kernels_run_clean(rng, seed, grid, block):
    """The emulator's own test kernels (a barrier tree in shared memory, every warp collective
    with partial masks, atomics, vector types) give their results and no error."""
    module = build_file(HERE / "cooperative.cu", COOPERATIVE, checked=True)
    x = rng.integers(-1000, 1000, size=int(np.prod(grid) * np.prod(block))).astype(np.int32)
    out = np.zeros(int(np.prod(grid)), np.int32)
    with checker.checking() as session:
        module.launch("block_sum<true>", grid, block, (x, out), cooperative=True, seed=seed)
        for mask, arg, width in [(0xFFFFFFFF, 3, 32), (0xF0F0F0F0, 1, 4), (0x0000FFFF, 2, 8)]:
            module.launch("warp_ops", (1, 1, 1), (64, 1, 1),
                          (x[:64].copy(), np.ones(64), np.zeros((64, 7), np.int32), np.zeros(64),
                           np.uint32(mask), np.int32(arg), np.int32(width)),
                          cooperative=True, seed=seed)
        module.launch("atomics", (3, 1, 1), (40, 1, 1),
                      (x[:120].copy(), np.array([5, 9, -9, 0], np.int32),
                       np.zeros(3, np.uint32)), cooperative=True, seed=seed)
    np.testing.assert_array_equal(out, x.reshape(len(out), -1).sum(axis=1))
    assert session.launches == 5 and session.accesses > x.size


def test_families_checked_and_unchecked_give_the_same_bits(rng):
    """The same instantiations, unchecked then checked in one process (each library keeps its
    own __shared__ variables), on the host's grid and with grid-stride axes narrowed."""
    x = rng.standard_normal((3, 4, 13, 11)).astype(np.float32)
    calls = [lambda: oc.global_average_pool(x), lambda: oc.hardmax(x, axis=1),
             lambda: oc.hardmax(x.reshape(12, -1), axis=-1),
             lambda: oc.max_pool(x, kernel_shape=[3, 2], return_indices=True)[1],
             lambda: oc.average_pool(x, kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4),
             lambda: oc.resize(x, scales=[1, 1, 1.5, 0.5], mode="cubic")]
    with oc.backend("emulated"):
        expected = [call() for call in calls]
        for stride_blocks in (None, 1):
            with checker.checking(stride_blocks) as session:
                got = [call() for call in calls]
            assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(expected, got))
            assert session.launches >= len(calls) and session.accesses > 10 * x.size
    assert any(k.family == "pool" and checked for k, checked in emulator._libraries)


def test_narrowing_takes_the_registered_grid_stride_axes(monkeypatch, rng, launches):
    grids = []
    real = emulator.Module.run
    monkeypatch.setattr(emulator.Module, "run", lambda self, e, grid, *a: (
        grids.append((e, grid)), real(self, e, grid, *a))[1])
    x = rng.standard_normal((2, 5, 7, 9)).astype(np.float32)
    with oc.backend("emulated"), checker.checking(stride_blocks=1):
        oc.global_max_pool(x)                               # planes on x
        oc.average_pool(x, kernel_shape=[2, 2])             # planes on y (the fast kernel)
    assert [g for _, g in grids] == [(1, 1, 1), (1, 1, 1)]
    assert [k.grid_stride for k, _ in launches] == ["x", "y"]
    assert checker.narrowed((7, 9, 3), "xz") == (7, 9, 3)   # no session: the host's grid
    with checker.checking(stride_blocks=2):
        assert checker.narrowed((7, 9, 3), "xz") == (2, 9, 2)
    with (pytest.raises(ValueError, match="stride_blocks must be at least 1, got 0"),
          checker.checking(stride_blocks=0)):
        pass


def test_environment_variable_turns_checking_on(tmp_path):
    """A process started with ONNX_CUPY_CHECK=1 checks every emulated launch (and one started
    with 0 does not)."""
    script = ("import numpy as np, onnx_cupy as oc\n"
              "from onnx_cupy.core import emulator\n"
              "x = np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32)\n"
              "with oc.backend('emulated'):\n"
              "    y = oc.global_lp_pool(x, p=2)\n"
              "assert np.allclose(y[..., 0], np.sqrt((x.astype(np.float64) ** 2).sum(-1)))\n"
              "print([checked for *_, checked in emulator._libraries])\n")
    for value, checked in (("1", True), ("0", False)):
        env = {**os.environ, checker.ENVIRONMENT: value,
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=600, check=False)
        assert res.returncode == 0, res.stderr
        assert res.stdout.split() == [f"[{checked}]"]


def test_checked_libraries_are_cached_apart():
    source = HERE / "cooperative.cu"
    plain = build_file(source, {"vectors": "vectors"})
    checked = build_file(source, {"vectors": "vectors"}, checked=True)
    assert plain.path != checked.path and "-checked-" in checked.path.name
    assert not plain.checked and checked.checked


@pytest.mark.parametrize("signature,expected", [
    ("__global__ void k(const float* __restrict__ x, float* y, const G g) {}",
     [("x", True, True, ("const", "float", "__restrict__")), ("y", False, True, ("float",)),
      ("g", False, False, ("const", "G"))]),
    (("template <typename T, int V>\n__global__ void __launch_bounds__(256, f<T, V>())\n"
      "k(const typename oc::bits<T>::K* /* keys */ part, T* const out, // output\n"
      " const rsz::record<W, 4, I>* __restrict__ table, int n = 3, float w[2]) {}"),
     [("part", True, True, ("const", "typename", "oc", "bits", "T", "K")),
      ("out", False, True, ("T", "const")),
      ("table", True, True, ("const", "rsz", "record", "W", "I", "__restrict__")),
      ("n", False, False, ("int",)), ("w", False, False, ("float",))]),
    ("void k(int* a);  // a host function of the same name\n__global__ void k(void) {}", []),
])
def test_kernel_parameters_from_the_source(signature, expected):
    """Each parameter's name, whether it points to const, whether it is a pointer, and the words
    of its type (where the stand-in finds a by-value struct's type)."""
    assert [tuple(p) for p in loader.kernel_parameters(signature, "k")] == expected


def test_every_registered_kernel_names_its_parameters():
    for k in loader.instantiations():
        names = [p.name for p in loader.kernel_parameters(loader.source(k.family), k.template)]
        assert names and len(set(names)) == len(names), k
