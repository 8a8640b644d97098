"""A seeded fuzz of a new user's mistakes (helpers/fuzz.py) on every path (numpy, emulated,
and cupy: the CuPy path's host code on the executing stand-in where no GPU is seen, its arrays
device arrays in the layouts of the NumPy calls): no crash, no hang, inputs unchanged, every
error a TypeError or ValueError (or PyTorch's own types, for nn.functional) naming the
offending argument, every accepted call equal to the NumPy path's result on native contiguous
copies. Each call runs in a worker process, so that a crash fails the batch that holds it and
names the call."""
from __future__ import annotations

import collections
import inspect

import numpy as np
import pytest
from helpers import fuzz

import onnx_cupy
import onnx_cupy.nn.functional as F

SEED, SLOW_SEED = 35, 3535
BATCH = 450            # calls per worker run (a test id)
QUICK_BATCHES = 8      # 3,600 calls per path in the quick subset
SLOW_BATCHES = 24      # 10,800 more per path, marked slow


def _report(outcome: fuzz.Outcome, seed: int) -> str:
    head = (f"{len(outcome.failures)} of the calls failed (seed {seed}; rerun one with "
            f"helpers.fuzz.draw(seed, i, path, folder) and helpers.fuzz.judge):")
    lines = [head]
    for i, (what, problems) in sorted(outcome.failures.items()):
        lines.append(f"  call {i} {what}: {' | '.join(p[:400] for p in problems)}")
    return "\n".join(lines)


def _run_batch(path: str, seed: int, batch: int) -> None:
    indices = list(range(batch * BATCH, (batch + 1) * BATCH))
    outcome = fuzz.run(path, seed, indices, fuzz.worker_env())
    assert not outcome.failures, _report(outcome, seed)
    assert outcome.judged == len(indices)


@pytest.mark.parametrize("batch", range(QUICK_BATCHES))
@pytest.mark.parametrize("path", fuzz.PATHS)
def test_fuzz(path, batch):
    _run_batch(path, SEED, batch)


@pytest.mark.slow
@pytest.mark.parametrize("batch", range(SLOW_BATCHES))
@pytest.mark.parametrize("path", fuzz.PATHS)
def test_fuzz_more(path, batch):
    _run_batch(path, SLOW_SEED, batch)


def test_fuzz_reaches_every_function_and_mistake(tmp_path):
    """The quick subset's calls cover every public operator, run_node and every nn.functional
    function, each valid and with several kinds of mistake; and out= on every function that
    takes it."""
    public = {n for n in onnx_cupy.__all__ if n not in ("__version__", "backend",
                                                        "default_backend", "release_workspaces",
                                                        "warmup")}
    assert set(fuzz.FUNCTIONS) == public | {f"F.{n}" for n in F.__all__}
    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for i in range(QUICK_BATCHES * BATCH):
        call = fuzz.draw(SEED, i, "numpy", str(tmp_path))
        kinds[call.fn][call.kind] += 1
    assert set(kinds) == set(fuzz.FUNCTIONS)
    for fn, seen in kinds.items():
        assert seen["valid"] + seen["layout"] >= 5, (fn, seen)
        assert len(set(seen) - {"valid", "layout"}) >= 3, (fn, seen)
    takes_out = [fn for fn in public if "out" in inspect.signature(getattr(onnx_cupy, fn)
                                                                   ).parameters]
    assert takes_out and all(kinds[fn]["out"] for fn in takes_out), {f: kinds[f] for f in
                                                                     takes_out}


def test_judge_finds_each_kind_of_problem():
    """The judge is live: an error naming none of the offender's names, an error of another
    type, a changed input, a result that differs and a refused valid call are each reported."""
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 8)
    assert fuzz.judge(fuzz.Call("average_pool", [x], {"kernel_shape": [2]}), "numpy") == []
    wrong = fuzz.Call("average_pool", [x], {"kernel_shape": [2],
                                            "out": np.empty((1, 1, 6), np.float32)})
    wrong.kind, wrong.names = "out", ("nothing-like-this",)
    assert any("names none" in p for p in fuzz.judge(wrong, "numpy"))

    def broken(x, mode):
        if mode == "raise":
            raise KeyError("X")
        if mode == "refuse":
            raise ValueError("X is wrong")
        x[...] = 0 if mode == "write" else x
        # "differ": a strided X (the call's) gives another result than its contiguous copy
        return x + (not x.flags.c_contiguous) if mode == "differ" else np.zeros(1)
    found = {mode: fuzz.judge(fuzz.Call("hardmax", [np.repeat(x, 2, axis=2)[..., ::2]],
                                        {"mode": mode}, function=broken), "numpy")
             for mode in ("raise", "refuse", "write", "differ")}
    assert "KeyError (not TypeError/ValueError)" in found["raise"][0]
    assert found["refuse"][0].startswith("a valid call refused")
    assert "an input was changed" in found["write"]
    assert any("differ" in p for p in found["differ"])


def test_judge_on_the_cupy_path():
    """On the cupy path the judge gives the function device arrays in the call's layout and
    reports a host result for a device X, and a result that differs."""
    from helpers.standin import StandIn

    x = np.arange(16, dtype=np.float32).reshape(1, 2, 8)[..., ::2]   # a strided view
    seen = []

    def broken(x, mode):   # the reference run (NumPy, on a contiguous copy) is right
        if isinstance(x, np.ndarray):
            return x + 0
        seen.append((type(x).__name__, x.strides))
        y = x + 0
        return y.get() if mode == "host" else y + 1 if mode == "differ" else y
    with StandIn().installed() as cp:
        found = {mode: fuzz.judge(fuzz.Call("hardmax", [x], {"mode": mode}, function=broken),
                                  "cupy")
                 for mode in ("host", "differ", "right")}
    assert seen[0] == ("ndarray", x.strides) and cp.ndarray.__module__ != "numpy"
    assert found["host"] == ["a device X gave a ndarray result"], found
    assert any("differ" in p for p in found["differ"]) and found["right"] == [], found


# ------------------------------------------------------- the kernel path's input policy
# Inputs the kernel path reads as native, aligned, 32-bit-offset layouts today: big-endian X
# (and I), and broadcast views of more than 2**31 elements. The emulated path returns wrong
# values for them until the kernel-call builder copies such inputs or reads them with 64-bit
# offsets; the NumPy path is right.

def _big_endian(x: np.ndarray) -> np.ndarray:
    return x.astype(x.dtype.newbyteorder(">"))


_X = np.random.default_rng(35).standard_normal((1, 2, 5, 6)).astype(np.float32)
_POLICY = {
    "average_pool": lambda x: onnx_cupy.average_pool(x, kernel_shape=[2, 2]),
    "lp_pool": lambda x: onnx_cupy.lp_pool(x, kernel_shape=[2, 2]),
    "max_pool": lambda x: onnx_cupy.max_pool(x, kernel_shape=[2, 2]),
    "global_average_pool": onnx_cupy.global_average_pool,
    "global_max_pool": onnx_cupy.global_max_pool,
    "global_lp_pool": onnx_cupy.global_lp_pool,
    "hardmax": onnx_cupy.hardmax,
    "grid_sample": lambda x: onnx_cupy.grid_sample(x, np.full((1, 3, 3, 2), 0.3, x.dtype)),
}
@pytest.mark.parametrize("op", list(_POLICY))
def test_big_endian_input(cpu_backend, op):
    """A big-endian X is read by its values: on the kernel path it reaches the device in native
    byte order (as CuPy's arrays are)."""
    with onnx_cupy.backend("numpy"):
        want = _POLICY[op](_X)
    with onnx_cupy.backend(cpu_backend):
        got = _POLICY[op](_big_endian(_X))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_big_endian_unpool_indices(cpu_backend):
    x = np.ones((1, 1, 3), np.float32)
    i = np.array([[[0, 3, 5]]])
    with onnx_cupy.backend("numpy"):
        want = onnx_cupy.max_unpool(x, i, kernel_shape=[2], strides=[2])
    with onnx_cupy.backend(cpu_backend):
        got = onnx_cupy.max_unpool(x, _big_endian(i), kernel_shape=[2], strides=[2])
    np.testing.assert_array_equal(got, want)


@pytest.mark.slow
@pytest.mark.parametrize("op, view, want", [
    ("global_average_pool", lambda: np.broadcast_to(np.float32(1), (1, 1, 2**31 + 7)), 1.0),
    ("global_max_pool", lambda: np.broadcast_to(np.float32(1), (1, 1, 46341, 46341)), 1.0),
])
def test_broadcast_past_2_31_elements(cpu_backend, op, view, want):
    """A few-byte broadcast view that addresses more than 2**31 elements: read in place on the
    NumPy path (no copy of X), with 64-bit offsets on the kernel path, right on both."""
    with onnx_cupy.backend(cpu_backend):
        got = getattr(onnx_cupy, op)(view())
    assert got.shape == (1, 1) + (1,) * (view().ndim - 2) and float(got.ravel()[0]) == want
