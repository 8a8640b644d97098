"""onnx_cupy.warmup: the instantiations it picks per operator and dtype (from the families'
registrations) cover what calls launch; on the CuPy path (a fake cupy) it creates their modules
and a later first call compiles nothing; on the emulated path it fills ONNX_CUPY_CACHE so that a
later process's first call builds nothing."""
from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.util import FLOAT_DTYPES, assert_close, forget_libraries, random, record_builds

import onnx_cupy as oc
from onnx_cupy.core import dtypes, execution, loader
from onnx_cupy.core import warmup as warmup_module
from onnx_cupy.pool.api import adaptive_pool

RESIZE_DTYPES = [*FLOAT_DTYPES, *map(np.dtype, ("int8", "uint8", "int16", "uint16", "int32",
                                                "uint32", "int64", "uint64", "bool",
                                                "complex64", "complex128"))]


def _resize(scales, mode="nearest"):
    return lambda x: oc.resize(x, scales=np.array(scales, np.float32), mode=mode)


def _unpool(kernel, output_shape=None):
    """MaxUnpool of x with distinct indices spread over the unpooled shape (kernel = strides)."""
    def call(x):
        spread = np.arange(x.size).reshape(x.shape) * int(np.prod(kernel))
        indices = spread
        if execution.is_cupy_array(x):
            with x.device:   # on x's device
                indices = execution.cupy_module().asarray(spread)
        return oc.max_unpool(x, indices, output_shape, kernel_shape=kernel, strides=kernel)
    return call


def _grid_sample(out, **attrs):
    """GridSample of x at positions of the output shape `out`: a grid of x's dtype (float32 for
    other inputs), on x's path."""
    def call(x):
        dtype = x.dtype if x.dtype.name in dtypes.FLOAT_TYPES else np.dtype(np.float32)
        grid = np.random.default_rng(0).uniform(-1.2, 1.2, (x.shape[0], *out, x.ndim - 2))
        if not execution.is_cupy_array(x):
            return oc.grid_sample(x, grid.astype(dtype), **attrs)
        with x.device:   # on x's device
            return oc.grid_sample(x, execution.to_path(grid.astype(dtype), "cupy"), **attrs)
    return call


def _roi(op, **attrs):
    """RoiAlign or MaxRoiPool of x over boxes of x's dtype, on x's path."""
    def call(x):
        boxes = np.array([[0, 1, 1, 4, 5], [1, 0, 0, 3, 2]], np.float64)
        args = [boxes[:, 1:], boxes[:, 0].astype(np.int64)] if op == "RoiAlign" else [boxes]
        args = [a.astype(x.dtype) if a.dtype.kind == "f" else a for a in args]
        if execution.is_cupy_array(x):
            with x.device:   # on x's device
                args = [execution.to_path(a, "cupy") for a in args]
        fn = oc.roi_align if op == "RoiAlign" else oc.max_roi_pool
        return fn(x, *args, **attrs)
    return call


# op -> calls that take different paths (fast, windowed, generic, 1-D, rows, columns, scan):
# (input shape, call, whether it interpolates: bool and complex inputs take nearest only)
CALLS = {
    "AveragePool": [((2, 3, 9, 11), lambda x: oc.average_pool(x, kernel_shape=[3, 3],
                                                              strides=[2, 2]), True),
                    ((2, 3, 9, 11), lambda x: oc.average_pool(x, kernel_shape=[2, 4]), True),
                    ((2, 3, 13), lambda x: oc.average_pool(x, kernel_shape=[4], strides=[3]),
                     True),
                    ((1, 2, 5, 4, 3, 6), lambda x: oc.average_pool(x, kernel_shape=[2, 2, 2, 3]),
                     True)],
    "LpPool": [((2, 2, 7, 8), lambda x: oc.lp_pool(x, kernel_shape=[3, 3], p=1), True),
               ((2, 2, 5, 7, 8), lambda x: oc.lp_pool(x, kernel_shape=[2, 3, 2], p=2), True),
               ((2, 2, 7, 8), lambda x: oc.lp_pool(x, kernel_shape=[2, 3], p=3), True)],
    "MaxPool": [((2, 3, 9, 11), lambda x: oc.max_pool(x, kernel_shape=[3, 3], strides=[2, 2]),
                 True),
                ((2, 3, 9, 11), lambda x: oc.max_pool(x, kernel_shape=[2, 2],
                                                      return_indices=True)[0], True),
                ((1, 2, 5, 4, 3, 6), lambda x: oc.max_pool(x, kernel_shape=[2, 2, 2, 3]), True)],
    "GlobalAveragePool": [((2, 3, 9, 11), lambda x: oc.global_average_pool(x), True)],
    "AdaptiveAveragePool": [((2, 3, 9, 11), lambda x: adaptive_pool("AdaptiveAveragePool", x,
                                                                    (4, 5)), True),
                            ((2, 3, 9), lambda x: adaptive_pool("AdaptiveAveragePool", x, (4,)),
                             True)],
    "AdaptiveMaxPool": [((2, 3, 5, 4, 3), lambda x: adaptive_pool("AdaptiveMaxPool", x, (2, 3, 2),
                                                                  True)[0], True)],
    "GlobalMaxPool": [((2, 3, 5, 4, 3), lambda x: oc.global_max_pool(x), True)],
    "GlobalLpPool": [((2, 3, 17), lambda x: oc.global_lp_pool(x, p=3), True)],
    "Hardmax": [((4, 37), lambda x: oc.hardmax(x), True),
                ((4, 64), lambda x: oc.hardmax(x), True),
                ((3, 5, 7), lambda x: oc.hardmax(x, axis=1), True),
                ((2, 4096, 3), lambda x: oc.hardmax(x, axis=1, opset=13), True)],
    "Resize": [((1, 2, 5, 7), _resize([1, 1, 2, 2]), False),
               ((3, 4, 5, 2, 3), _resize([1, 2, 1, 2, 1]), False),
               ((1, 5, 7, 3), _resize([1, 2, 2, 1], "linear"), True),
               ((2, 3, 6, 5), _resize([1, 1, 2, 2], "cubic"), True),
               ((3, 4, 5, 2, 3), _resize([1, 2, 1, 2, 1], "linear"), True)],
    "Upsample": [((1, 2, 5, 7), lambda x: oc.upsample(x, np.float32([1, 1, 2, 2])), False),
                 ((3, 4, 5, 2, 3), lambda x: oc.upsample(x, np.float32([1, 2, 1, 2, 1])), False),
                 ((1, 5, 7, 3), lambda x: oc.upsample(x, np.float32([1, 2, 2, 1]), mode="linear"),
                  True)],
    "MaxUnpool": [((2, 3, 4, 5), _unpool([2, 2]), True),
                  ((2, 3, 4, 5), _unpool([2, 2], [2, 3, 9, 11]), True),
                  ((1, 2, 3, 2, 2, 3), _unpool([2, 1, 1, 2]), True)],
    "GridSample": [((2, 3, 5, 7), _grid_sample((4, 6)), True),
                   ((2, 3, 5, 7), _grid_sample((4, 6), mode="nearest"), False),
                   ((2, 3, 5, 7), _grid_sample((4, 6), mode="cubic"), True),
                   ((1, 2, 3, 4, 5), _grid_sample((2, 3, 4), padding_mode="border"), True),
                   ((1, 2, 3, 4, 5), _grid_sample((2, 3, 4), mode="nearest"), False)],
    "AffineGrid": [((2, 2, 3), lambda t: oc.affine_grid(t, [2, 1, 5, 7]), True),
                   ((2, 3, 4), lambda t: oc.affine_grid(t, [2, 1, 3, 4, 5]), True)],
    "RoiAlign": [((2, 3, 6, 7), _roi("RoiAlign", output_height=2), True),
                 ((2, 3, 6, 7), _roi("RoiAlign", mode="max"), True)],
    "MaxRoiPool": [((2, 3, 6, 7), _roi("MaxRoiPool", pooled_shape=[2, 2]), True)],
}


def _vjp(function, y_shape, *inputs, **attrs):
    """onnx_cupy.vjp of `function` at x (and `inputs`, made from x) with a cotangent of Y's
    shape `y_shape(x.shape)`, on x's path: dX."""
    def call(x):
        dy = np.ones(y_shape(x.shape), x.dtype)
        more = [make(x) for make in inputs]
        if execution.is_cupy_array(x):
            with x.device:   # on x's device
                dy, more = (execution.cupy_module().asarray(a) for a in (dy, *more)), more
                dy, *more = dy
        return oc.vjp(function, x, *more, cotangent=dy, **attrs)[0]
    return call


def _window_indices(x):
    """MaxUnpool's indices for x: its elements spread over the unpooled shape, 2 x 2 windows."""
    return np.arange(x.size).reshape(x.shape) * 4


def _halved(shape):
    return (*shape[:2], *(n // 2 for n in shape[2:]))


# the gradients: each also launches the forward's kernel of the output it reads (MaxPool's
# Indices, LpPool's Y) where the call does not give it
CALLS.update({
    "AveragePool gradient": [((2, 3, 8, 10), _vjp(oc.average_pool, _halved, kernel_shape=[2, 2],
                                                  strides=[2, 2]), True)],
    "LpPool gradient": [((2, 3, 8, 10), _vjp(oc.lp_pool, _halved, kernel_shape=[2, 2],
                                             strides=[2, 2], p=2), True),
                        ((2, 3, 8, 10), _vjp(oc.lp_pool, _halved, kernel_shape=[2, 2],
                                             strides=[2, 2], p=3), True)],
    "MaxPool gradient": [((2, 3, 8, 10), _vjp(oc.max_pool, _halved, kernel_shape=[2, 2],
                                              strides=[2, 2]), True),
                         ((2, 3, 8), _vjp(oc.max_pool, _halved, kernel_shape=[2],
                                          strides=[2]), True)],
    "GlobalAveragePool gradient": [((2, 3, 5, 7), _vjp(oc.global_average_pool,
                                                       lambda s: (*s[:2], 1, 1)), True)],
    "GlobalLpPool gradient": [((2, 3, 5, 7), _vjp(oc.global_lp_pool,
                                                  lambda s: (*s[:2], 1, 1), p=3), True)],
    "GlobalMaxPool gradient": [((2, 3, 5, 7), _vjp(oc.global_max_pool,
                                                   lambda s: (*s[:2], 1, 1)), True)],
    "MaxUnpool gradient": [((2, 3, 4, 5), _vjp(oc.max_unpool, lambda s: (*s[:2], 8, 10),
                                               _window_indices, kernel_shape=[2, 2],
                                               strides=[2, 2]), True)],
})
UPSAMPLE_DTYPES = [d for d in RESIZE_DTYPES if d.name != "bfloat16"]   # Upsample has none
OP_DTYPES = [(op, d) for op in CALLS
             for d in {"Resize": RESIZE_DTYPES, "GridSample": RESIZE_DTYPES,
                       "Upsample": UPSAMPLE_DTYPES}.get(op, FLOAT_DTYPES)]


def _values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(0, 100, shape).astype(dtype)
    return random(rng, shape, np.float64).astype(dtype)


def _sizes(kernel):
    """The element sizes of the dtypes an instantiation serves."""
    return {(dtypes.BFLOAT16 if d == "bfloat16" else np.dtype(d)).itemsize for d in kernel.dtypes}


def _calls(op, dtype):
    """(shape, call) of the calls of `op` that take `dtype`."""
    numeric = np.dtype(dtype).name in (*dtypes.FLOAT_TYPES, *dtypes.INT_TYPES)
    return [(shape, call) for shape, call, interpolates in CALLS[op] if numeric or not interpolates]


def test_every_registered_instantiation_is_warmed_once():
    chosen = oc.warmup(backend="cupy", dry_run=True)
    assert [w.kernel for w in chosen] == list(loader.instantiations())
    assert all(w.ops and w.dtypes and w.seconds is None for w in chosen)
    assert all(w.ops == tuple(sorted(w.kernel.ops)) for w in chosen)


@pytest.mark.parametrize("op,dtype", OP_DTYPES, ids=lambda v: str(v))
def test_calls_launch_only_warmed_instantiations(request, rng, op, dtype):
    fake = fake_cupy.install(request)
    for shape, call in _calls(op, dtype):
        call(fake.asarray(_values(rng, shape, dtype)))
    launched = {launch.expression for launch in fake.launches
                if launch.grid}   # CuPy's own kernels (a fill) are recorded without a grid
    warmed = {k.expression for k in oc.warmup(op, dtype, "cupy", dry_run=True)}
    assert launched and launched <= warmed
    other_sizes = {k.expression for o, d in OP_DTYPES if o == op and d.itemsize != dtype.itemsize
                   for k in oc.warmup(o, d, "cupy", dry_run=True) if len(_sizes(k.kernel)) == 1}
    assert not warmed & other_sizes   # what one dtype warms, no dtype of another size launches
    # (but a kernel that serves dtypes of every size, as MaxUnpool's scatter of the indices)


@pytest.mark.parametrize("op", list(CALLS))
def test_warmup_creates_the_modules_and_a_first_call_compiles_nothing(request, rng, op):
    fake = fake_cupy.install(request)
    with fake.cuda.Device(1):
        warmed = oc.warmup(op, "float32", "cupy", jobs=3)
    expected = sorted(k.expression for k in warmed)
    assert fake.compiled() and sorted(fake.compiled()) == expected
    assert sorted(fake.loaded(1)) == expected and fake.loaded(0) == []
    assert all(len(m.name_expressions) == 1 and m.functions for m in fake.modules)
    assert all(k.seconds is not None and k.seconds >= 0 for k in warmed)
    modules, compiles = len(fake.modules), len(fake.compiles)
    for shape, call, _ in CALLS[op]:
        with fake.cuda.Device(1):
            x = fake.asarray(_values(rng, shape, np.float32))
        call(x)
    assert (len(fake.modules), len(fake.compiles)) == (modules, compiles)
    assert {launch.device for launch in fake.launches} == {1}


TESTS = Path(__file__).resolve().parents[1]
_PROCESS = """
import json, sys
sys.path.insert(0, sys.argv[2])   # the tests folder, for helpers
import numpy as np
import onnx_cupy as oc
from helpers.standin import StandIn

fake = StandIn(executing=False)   # the compiles and loads are what is counted
with fake.installed():
    if sys.argv[1] == "warm":
        oc.warmup("AveragePool", "float32", "cupy", jobs=2)
    else:
        oc.average_pool(fake.asarray(np.ones((1, 2, 9, 9), np.float32)), kernel_shape=[3, 3])
        oc.average_pool(fake.asarray(np.ones((1, 2, 5, 4, 3, 2), np.float32)),
                        kernel_shape=[2, 2, 2, 2])
print(json.dumps([len(fake.compiled()), len(fake.loaded())]))
"""


def test_a_process_after_warmup_compiles_nothing(monkeypatch):
    """The disk cache serves a later process: after `warmup` in one process, another one's
    first calls load every kernel and compile none (the stand-in records NVRTC's compiles)."""
    root = fake_cupy.fresh_kernel_cache(monkeypatch)

    def run(what):
        done = subprocess.run([sys.executable, "-c", _PROCESS, what, str(TESTS)],
                              capture_output=True, text=True, check=False,
                              env={**os.environ, "ONNX_CUPY_CACHE": root})
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert run("call")[0] == 2                       # a cold process compiles what it launches
    for entry in (Path(root) / "nvrtc").iterdir():
        entry.unlink()
    compiled, loaded = run("warm")
    assert compiled == loaded == len(oc.warmup("AveragePool", "float32", "cupy", dry_run=True))
    assert run("call") == [0, 2]                     # after the warm-up: loaded, not compiled


def test_dry_run_compiles_nothing(request):
    fake = fake_cupy.install(request)
    assert oc.warmup(backend="cupy", dry_run=True)
    assert not fake.modules
    assert oc.warmup(backend="numpy") == []
    assert not fake.modules


def test_emulated_warmup_fills_the_cache(monkeypatch, tmp_path, rng):
    builds = record_builds(monkeypatch, tmp_path)
    warmed = oc.warmup("Hardmax", "float64", "emulated", jobs=2)
    libraries = [cmd for cmd in builds if cmd[-1].endswith(".so")]
    assert len(libraries) == len(warmed) == 10
    assert list(tmp_path.glob("emulator/shim-*/host_shim.h.gch"))  # shared by the builds
    assert all("-include" in cmd and ".gch" not in cmd[cmd.index("-include") + 1]
               and "shim-" in cmd[cmd.index("-include") + 1] for cmd in libraries)
    assert len(list((tmp_path / "emulator").glob("hardmax-*.so"))) == len(warmed)
    libraries = forget_libraries(monkeypatch)   # a later process: the disk cache only
    builds.clear()
    for shape, call, _ in CALLS["Hardmax"]:
        x = random(rng, shape, np.float64)
        with oc.backend("emulated"):
            got = call(x)
        assert_close(got, call(x))
    assert builds == []
    assert len(libraries) >= 3


@pytest.mark.parametrize("kwargs,message", [
    ({"ops": "Conv"}, (r"warmup: ops='Conv' is not one of AdaptiveAveragePool, "
                       r"AdaptiveAveragePool gradient, AdaptiveMaxPool, AdaptiveMaxPool gradient, "
                       r"AffineGrid, AveragePool, AveragePool gradient, GlobalAveragePool, "
                       r"GlobalAveragePool gradient, GlobalLpPool, GlobalLpPool gradient, "
                       r"GlobalMaxPool, GlobalMaxPool gradient, GridSample, Hardmax, LpPool, "
                       r"LpPool gradient, MaxPool, MaxPool gradient, MaxRoiPool, MaxUnpool, "
                       r"MaxUnpool gradient, Resize, Resize gradient, RoiAlign, Upsample, "
                       r"Upsample gradient$")),
    ({"ops": []}, r"warmup: ops is empty"),
    ({"dtypes": "float8"}, r"warmup: dtypes='float8' is not one of float16, "),
    ({"ops": "Hardmax", "dtypes": ["float32", "int8"]},
     r"warmup: no kernel of Hardmax takes dtype int8"),
    ({"backend": "gpu"},
     r"warmup: backend must be one of \('numpy', 'emulated', 'cupy'\), got 'gpu'"),
])
def test_bad_selection_is_a_clear_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        oc.warmup(**{"backend": "emulated", "dry_run": True, **kwargs})


def test_cupy_without_a_gpu_names_the_drivers_error(no_gpu):
    with pytest.raises(RuntimeError) as info:
        oc.warmup("Hardmax", backend="cupy")
    assert str(info.value) == (f"warmup: backend 'cupy' cannot run here: no usable GPU: "
                               f"{no_gpu} (backend='emulated' warms the host compiler's "
                               f"libraries)")


def test_cupy_without_cupy_says_what_to_install():
    with execution.cupy_substitute(None), pytest.raises(
            RuntimeError, match=r"warmup: backend 'cupy' cannot run here: CuPy is not "
                                r"installed: pip install .*\.\[cuda12\]"):
        oc.warmup("Hardmax", backend="cupy")


@pytest.mark.parametrize("spelling", ["average_pool", "averagepool", "AVERAGEPOOL"])
def test_operator_spellings(spelling):
    assert oc.warmup(spelling, np.float16, "emulated", dry_run=True) == oc.warmup(
        "AveragePool", "float16", "emulated", dry_run=True)


def test_docstring_runs_and_has_numpy_sections():
    result = doctest.testmod(warmup_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
    assert all(s in oc.warmup.__doc__ for s in ("Parameters\n", "Returns\n", "Raises\n",
                                                "Examples\n"))


def test_import_stays_light():
    code = ("import sys, onnx_cupy; assert onnx_cupy.warmup; "
            "print(sorted(m for m in sys.modules if m.startswith('onnx_cupy.tools') "
            "or m == 'onnx_cupy.core.emulator'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
