"""The emulator runs blocks whose threads synchronize as the GPU does: shared memory and barriers,
warp collectives (with partial masks and widths), atomics, vector types, several blocks, 2-D and
3-D blocks, and a seeded random thread order under which a missing barrier shows."""
from __future__ import annotations

import struct
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers.util import build_file, schedule

from onnx_cupy.core import emulator, loader, records

SOURCE = Path(__file__).parent / "kernels" / "cooperative.cu"
# name expression -> the kernel it instantiates
EXPRESSIONS = {"block_sum<true>": "block_sum", "block_sum<false>": "block_sum",
               "warp_ops": "warp_ops", "atomics": "atomics", "vectors": "vectors",
               "exited_lanes": "exited_lanes"}


@pytest.fixture(scope="module")
def module() -> emulator.Module:
    return build_file(SOURCE, EXPRESSIONS)


def block_sum(module, x, grid, block, barriers=True, seed=0, cooperative=True):
    out = np.zeros(int(np.prod(grid)), np.int32)
    module.launch(f"block_sum<{'true' if barriers else 'false'}>", grid, block, (x, out),
                  cooperative=cooperative, seed=seed)
    return out


@pytest.mark.parametrize("grid,block", [((1, 1, 1), (256, 1, 1)), ((3, 1, 1), (64, 1, 1)),
                                        ((2, 3, 1), (16, 8, 1)), ((2, 1, 2), (4, 4, 8))])
def test_block_reduction_is_exact(module, rng, grid, block):
    x = rng.integers(-1000, 1000, size=int(np.prod(grid) * np.prod(block))).astype(np.int32)
    expected = x.reshape(int(np.prod(grid)), -1).sum(axis=1)
    for seed in range(4):
        np.testing.assert_array_equal(block_sum(module, x, grid, block, seed=seed), expected)


def test_missing_barrier_is_caught_deterministically(module, rng):
    x = rng.integers(1, 1000, size=128).astype(np.int32)
    results = [block_sum(module, x, (1, 1, 1), (128, 1, 1), False, seed)[0] for seed in range(8)]
    assert any(r != x.sum() for r in results)
    assert len(set(results)) > 1
    assert results == [block_sum(module, x, (1, 1, 1), (128, 1, 1), False, s)[0] for s in range(8)]


def warp_reference(x, d, mask, arg, width):
    """CUDA's results of warp_ops, lane by lane."""
    out = np.full((x.size, 7), -1, np.int32)
    dout = np.full(x.size, -1.0)
    for t in range(x.size):
        base, lane = t - t % 32, t % 32
        if not (mask >> lane) & 1:
            continue
        warp = range(base, min(base + 32, x.size))
        members = [u for u in warp if (mask >> (u - base)) & 1]
        seg = lane & ~(width - 1)
        up = lane - arg if lane - arg >= seg else lane
        down = lane + arg if lane + arg < seg + width else lane
        xor = lane ^ arg if (lane ^ arg) < seg + width else lane
        ballot = sum(1 << (u - base) for u in members if x[u] > 0)
        out[t] = [x[base + seg + arg % width], x[base + up], x[base + down], x[base + xor],
                  np.uint32(ballot).view(np.int32), any(x[u] > 100 for u in members),
                  all(x[u] > -100 for u in members)]
        dout[t] = d[base + xor]
    return out, dout


@pytest.mark.parametrize("threads,mask,arg,width", [
    (64, 0xFFFFFFFF, 3, 32), (48, 0xFFFFFFFF, 1, 16), (32, 0x0000FFFF, 2, 8),
    (96, 0xF0F0F0F0, 1, 4), (40, 0xFFFFFFFF, 5, 8), (64, 0xFFFF0000, 5, 16)])
def test_warp_collectives(module, rng, threads, mask, arg, width):
    x = rng.integers(-150, 150, size=threads).astype(np.int32)
    d = rng.standard_normal(threads)
    expected, dexpected = warp_reference(x, d, mask, arg, width)
    for seed in (0, 1):
        out = np.zeros((threads, 7), np.int32)
        dout = np.zeros(threads)
        module.launch("warp_ops", (1, 1, 1), (threads, 1, 1),
                      (x, d, out, dout, np.uint32(mask), np.int32(arg), np.int32(width)),
                      cooperative=True, seed=seed)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(dout, dexpected)


@pytest.mark.parametrize("cooperative", [False, True])
def test_atomics(module, rng, cooperative):
    x = rng.integers(-(2**20), 2**20, size=3 * 40).astype(np.int32)
    ints = np.array([5, 2**31 - 1, -(2**31), 0], np.int32)
    uints = np.array([0, 0, 2**32 - 1], np.uint32)
    module.launch("atomics", (3, 1, 1), (40, 1, 1), (x, ints, uints), cooperative=cooperative,
                  seed=3)
    np.testing.assert_array_equal(ints, [5 + x.sum(), x.min(), x.max(), x.size])
    u = x.view(np.uint32)
    np.testing.assert_array_equal(uints, [(u & 0xFF).sum(), u.max(), u.min()])


def test_vector_types(module, rng):
    x = rng.standard_normal((70, 4)).astype(np.float32)
    y = np.zeros_like(x)
    z = np.zeros((70, 4), np.int32)
    module.launch("vectors", (2, 1, 1), (35, 1, 1), (x, y, z))
    np.testing.assert_array_equal(y, np.stack([x[:, 3], x[:, 2] * 2, x[:, 1], x[:, 0]], axis=1))
    t = np.arange(70)
    np.testing.assert_array_equal(z, np.stack([t, -t, x[:, 0].astype(np.int32), 0 * t + 7], 1))


def test_collective_with_exited_lanes_is_an_error(module):
    with pytest.raises(RuntimeError, match="names a lane that has exited"):
        module.launch("exited_lanes", (1, 1, 1), (32, 1, 1), (np.zeros(32, np.int32),),
                      cooperative=True)


def test_barrier_in_a_sequential_launch_is_an_error(module, rng):
    x = rng.integers(-9, 9, size=64).astype(np.int32)
    with pytest.raises(RuntimeError, match="launched sequentially"):
        block_sum(module, x, (1, 1, 1), (64, 1, 1), barriers=True, cooperative=False)
    np.testing.assert_array_equal(block_sum(module, x, (1, 1, 1), (64, 1, 1)), [x.sum()])


def test_schedule_sets_the_seed_of_registered_kernels(monkeypatch):
    seen = []
    monkeypatch.setattr(emulator, "library", lambda k: type(
        "M", (), {"launch": lambda self, *a: seen.append(a[-2:])})())
    one, two = (records.Instantiation("fake", "k", (records.argument("n", n),), ("Fake",),
                                      ("float32",), (), cooperative=n == 1) for n in (1, 2))
    emulator.launch(one, (1, 1, 1), (1, 1, 1), ())
    with schedule(7):
        emulator.launch(one, (1, 1, 1), (1, 1, 1), ())
        emulator.launch(two, (1, 1, 1), (1, 1, 1), ())
    assert seen == [(True, 0), (True, 7), (False, 7)]


def test_nvrtc_compiles_the_same_source():
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(SOURCE.read_bytes(), b"cooperative.cu", 0, [], [])
    assert err == ok
    try:
        for e in EXPRESSIONS:
            assert nvrtc.nvrtcAddNameExpression(prog, e.encode())[0] == ok
        options = [b"-std=c++17", b"--gpu-architecture=compute_90"]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        if err != ok:
            size = nvrtc.nvrtcGetProgramLogSize(prog)[1]
            log = bytearray(size)
            nvrtc.nvrtcGetProgramLog(prog, log)
            pytest.fail(log.decode(errors="replace"))
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


# ---------------------------------------------------------------- the precompiled shim header

@pytest.fixture
def failing_gcc(tmp_path, monkeypatch):
    """A GCC (by its --version) that fails every compile, each compile's arguments appended to
    the file beside it with the suffix .log; an empty cache and a fresh process's state of the
    shim header build."""
    cxx = tmp_path / "failing-g++"
    cxx.write_text("#!/bin/sh\n"
                   'if [ "$1" = --version ]; then echo "g++ (fake) 1.0"; '
                   'echo "Copyright (C) Free Software Foundation, Inc."; exit 0; fi\n'
                   f'echo "$@" >> "{cxx.with_suffix(".log")}"\n'
                   'echo "host_shim.h:1: error: out of coffee" >&2; exit 3\n')
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    monkeypatch.setenv("ONNX_CUPY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(emulator, "_shim_threads", {})
    monkeypatch.setattr(emulator, "_shim_warned", False)
    return cxx


def test_a_failed_shim_header_build_warns_once_and_is_recorded(failing_gcc, capsys):
    from onnx_cupy.tools import cli

    assert emulator.shim_status().startswith("not built yet")
    with pytest.warns(RuntimeWarning, match=r"precompiling the emulator's host_shim.h failed, "
                                            r"so emulated builds parse it each time .*"
                                            r"exited with 3: host_shim.h:1: error: out of "
                                            r"coffee"):
        header = emulator.shim_header(wait=True)
    assert header == loader.KERNEL_DIR / "host_shim.h"   # builds go on, parsing the header
    (thread,) = emulator._shim_threads.values()
    assert thread.daemon and not thread.is_alive()       # never holds the interpreter's exit
    status = emulator.shim_status()
    assert status.startswith("failed (") and status.endswith("RuntimeError: "
                                                             f"{failing_gcc} exited with 3: "
                                                             "host_shim.h:1: error: out of coffee")
    emulator._shim_threads.clear()                       # a second build in this process
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # warned once per process
        emulator.shim_header(wait=True)
    assert cli.main(["info"]) == 0
    assert f"precompiled shim header: {status}" in capsys.readouterr().out


def test_an_exception_in_the_shim_header_build_is_recorded(failing_gcc, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(emulator.tempfile, "TemporaryDirectory", no_space)
    with pytest.warns(RuntimeWarning, match=r"OSError: \[Errno 28\] No space left on device"):
        emulator.shim_header(wait=True)
    assert emulator.shim_status().endswith("OSError: [Errno 28] No space left on device")


# ---------------------------------------------------------------- the platform

@pytest.mark.parametrize("platform, byteorder, pointer", [
    ("win32", "little", 8), ("darwin", "little", 8), ("linux", "big", 8), ("linux", "little", 4)])
def test_the_emulated_backend_needs_linux(platform, byteorder, pointer, failing_gcc,
                                          monkeypatch, capsys):
    """Where ELF shared libraries built by g++ cannot be loaded, entering the emulated backend
    (or building a kernel) says so, before any build (the compiler records each one);
    onnx-cupy info reports it."""
    import onnx_cupy
    from onnx_cupy.tools import cli

    real = struct.calcsize
    monkeypatch.setattr(sys, "platform", platform)
    monkeypatch.setattr(sys, "byteorder", byteorder)
    monkeypatch.setattr(struct, "calcsize", lambda f: pointer if f == "P" else real(f))
    message = (rf"the emulated backend needs Linux on a 64-bit little-endian machine .*; this is "
               rf"{platform} on .*, {pointer * 8}-bit {byteorder}-endian: use the numpy path")
    with pytest.raises(RuntimeError, match=message), onnx_cupy.backend("emulated"):
        pass
    with pytest.raises(RuntimeError, match=message):
        build_file(SOURCE, {"block_sum<true>": "block_sum"})
    assert cli.main(["info"]) == 0
    assert "emulated path: unavailable: the emulated backend needs Linux" in capsys.readouterr().out
    assert not failing_gcc.with_suffix(".log").exists()   # no build started
